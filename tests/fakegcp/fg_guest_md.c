/*
 * A metadata server per worker VM (issue 21): what a job on a Cloud TPU or
 * Compute Engine VM reads from http://metadata.google.internal to learn
 * that its VM is about to go. The harness's sshd workers share one
 * loopback network, so the emulator tells them apart by a path prefix:
 * worker IP's server is
 *
 *   GET /__worker/IP/computeMetadata/v1/KEY
 *
 * (the workers get it as TPUFORM_METADATA_URL, tests/e2e/gcp_workers.sh).
 * KEY: instance/preempted (FALSE, or TRUE once a spot or preemptible VM is
 * being preempted), instance/maintenance-event (NONE, or e.g.
 * TERMINATE_ON_HOST_MAINTENANCE before a host maintenance event) and
 * instance/id. As Google's server does
 * (https://cloud.google.com/compute/docs/metadata/querying-metadata,
 * "Wait for change"; docs/recovery.md):
 *   - "Metadata-Flavor: Google" is required (403 without) and echoed;
 *   - every answer has an ETag, which changes when the value does;
 *   - wait_for_change=true holds the answer until the value changes, or
 *     until timeout_sec (default and most 300 s here) pass, then returns
 *     the value as it is; with last_etag=E it returns at once when the
 *     current ETag is not E (nothing is missed between two requests).
 * A test sets a value with
 *
 *   POST /__admin/guest-metadata?worker=IP&key=KEY&value=V
 *
 * which wakes every request waiting on that worker's key. At most
 * MD_MAX values (worker x key) are kept; values are at most 255 bytes.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#define WORKER_PREFIX "/__worker/"
#define MD_PATH "/computeMetadata/v1/"
#define MD_MAX 1024
#define VALUE_MAX 256
#define WAIT_MAX 300

struct md_value {
	char worker[64];
	char key[64];
	char value[VALUE_MAX];
	unsigned long version; /* the ETag's tail: one more per change */
};

static pthread_mutex_t md_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t md_changed = PTHREAD_COND_INITIALIZER;
static struct md_value md_values[MD_MAX];
static size_t md_n;
static int md_stopping; /* fg_guest_md_stop: no more waiting */

/* The keys served, with the value a fresh VM has. */
static const char *default_value(const char *key)
{
	if (!strcmp(key, "instance/preempted"))
		return "FALSE";
	if (!strcmp(key, "instance/maintenance-event"))
		return "NONE";
	return NULL;
}

/* The entry of worker/key (md_mu held), made with its default when
 * `make`; NULL when not kept and not made (or the table is full). */
static struct md_value *md_find(const char *worker, const char *key, int make)
{
	for (size_t i = 0; i < md_n; i++)
		if (!strcmp(md_values[i].worker, worker) && !strcmp(md_values[i].key, key))
			return &md_values[i];
	if (!make || md_n >= MD_MAX || strlen(worker) >= sizeof(md_values[0].worker) ||
	    strlen(key) >= sizeof(md_values[0].key))
		return NULL;
	struct md_value *v = &md_values[md_n++];
	snprintf(v->worker, sizeof(v->worker), "%s", worker);
	snprintf(v->key, sizeof(v->key), "%s", key);
	const char *def = default_value(key);
	snprintf(v->value, sizeof(v->value), "%s", def ? def : "");
	v->version = 1;
	return v;
}

/* An ETag for v (md_mu held): 16 hex digits, unique per worker, key and
 * version (FNV-1a of the names, then the version). */
static void md_etag(const struct md_value *v, char out[32])
{
	unsigned long h = 2166136261u;
	for (const char *p = v->worker; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (const char *p = v->key; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	snprintf(out, 32, "%08lx%08lx", h & 0xffffffffUL, v->version & 0xffffffffUL);
}

static const char *arg(struct fg_req *r, const char *key)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

/* Wait on md_changed until `until` (monotonic seconds); md_mu held. */
static void md_wait(double until)
{
	double left = until - tpf_now_mono();
	if (left <= 0)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	double end = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + left;
	ts.tv_sec = (time_t)end;
	ts.tv_nsec = (long)((end - (double)ts.tv_sec) * 1e9);
	pthread_cond_timedwait(&md_changed, &md_mu, &ts);
}

/* GET KEY of `worker`, waiting as the query asks. */
static void md_get(struct fg_req *r, const char *worker, const char *key)
{
	const char *wait = arg(r, "wait_for_change");
	const char *last = arg(r, "last_etag");
	const char *tmo = arg(r, "timeout_sec");
	int waiting = wait && !strcmp(wait, "true");
	double timeout = tmo ? atof(tmo) : WAIT_MAX;
	if (timeout <= 0 || timeout > WAIT_MAX)
		timeout = WAIT_MAX;
	char etag[32], body[VALUE_MAX];
	pthread_mutex_lock(&md_mu);
	struct md_value *v = md_find(worker, key, 1);
	if (!v) {
		pthread_mutex_unlock(&md_mu);
		fg_reply_text(r, 503, "text/plain; charset=utf-8", "metadata table full\n");
		return;
	}
	md_etag(v, etag);
	/* Without last_etag, a wait is for a change from the value as it is
	 * now; with one, for a value other than the one that ETag names. */
	char want[32];
	snprintf(want, sizeof(want), "%s", last ? last : etag);
	double until = tpf_now_mono() + timeout;
	while (waiting && !md_stopping && !strcmp(etag, want) && tpf_now_mono() < until) {
		md_wait(until);
		md_etag(v, etag);
	}
	snprintf(body, sizeof(body), "%s", v->value);
	pthread_mutex_unlock(&md_mu);
	fg_reply_header(r, "ETag", etag);
	fg_reply_text(r, 200, "application/text", body);
}

int fg_guest_md_serve(struct fg_req *r)
{
	if (strncmp(r->path, WORKER_PREFIX, strlen(WORKER_PREFIX)))
		return 0;
	const char *ip = r->path + strlen(WORKER_PREFIX);
	const char *slash = strchr(ip, '/');
	fg_reply_header(r, "Metadata-Flavor", "Google");
	const char *flavor = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
							 "Metadata-Flavor");
	if (!flavor || strcmp(flavor, "Google")) {
		fg_reply_text(r, 403, "text/plain; charset=utf-8",
			      "Missing Metadata-Flavor:Google header.\n");
		return 1;
	}
	if (!slash || slash == ip || (size_t)(slash - ip) >= 64 ||
	    strncmp(slash, MD_PATH, strlen(MD_PATH))) {
		fg_reply_text(r, 404, "text/html; charset=UTF-8", "Not Found\n");
		return 1;
	}
	if (strcmp(r->method, "GET")) {
		fg_reply_text(r, 405, "text/plain; charset=utf-8", "Method not allowed.\n");
		return 1;
	}
	char *worker = xstrndup(ip, (size_t)(slash - ip));
	const char *key = slash + strlen(MD_PATH);
	if (!strcmp(key, "instance/id")) {
		/* A stable number per worker, as each VM has its own. */
		unsigned long h = 5381;
		for (const char *p = worker; *p; p++)
			h = h * 33 + (unsigned char)*p;
		char id[32];
		snprintf(id, sizeof(id), "%lu", 1000000000000UL + h % 1000000000000UL);
		fg_reply_text(r, 200, "application/text", id);
	} else if (default_value(key)) {
		md_get(r, worker, key);
	} else {
		fg_reply_text(r, 404, "text/html; charset=UTF-8", "Not Found\n");
	}
	free(worker);
	return 1;
}

void fg_guest_md_admin(struct fg_req *r)
{
	const char *worker = arg(r, "worker"), *key = arg(r, "key"), *value = arg(r, "value");
	if (!worker || !key || !value || !default_value(key) || strlen(value) >= VALUE_MAX) {
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
			       "guest-metadata wants worker=IP, key=instance/preempted or "
			       "instance/maintenance-event and value=V (under %d bytes)", VALUE_MAX);
		return;
	}
	pthread_mutex_lock(&md_mu);
	struct md_value *v = md_find(worker, key, 1);
	if (v && strcmp(v->value, value)) {
		snprintf(v->value, sizeof(v->value), "%s", value);
		v->version++;
		pthread_cond_broadcast(&md_changed);
	}
	pthread_mutex_unlock(&md_mu);
	if (!v) {
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "the metadata table is full");
		return;
	}
	fg_reply_json(r, 200, json_pack("{s:b}", "ok", 1));
}

void fg_guest_md_stop(void)
{
	pthread_mutex_lock(&md_mu);
	md_stopping = 1;
	pthread_cond_broadcast(&md_changed);
	pthread_mutex_unlock(&md_mu);
}
