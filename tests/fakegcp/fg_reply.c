/*
 * Building answers: JSON bodies, AIP-193 error bodies, google.rpc.Status,
 * timestamps, and sleeps that end when the server stops.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/fakegcp/fakegcp.h"
#include "tests/fakegcp/fg_compute.h"
#include "util/xalloc.h"

/* Compute Engine's answers: its error shape, and the type from "kind". */
static int is_compute(const struct fg_req *r)
{
	return !strncmp(r->path, "/compute/", 9) || !strncmp(r->path, "/batch/compute/", 15);
}

static void bad_selection(struct fg_req *r, const char *msg)
{
	if (is_compute(r))
		ce_error(r, 400, "invalidParameter", "%s", msg);
	else
		fg_bad_request(r, "fields", msg);
}

int fg_fields_filter(struct fg_req *r, json_t **v)
{
	const char *f = r->args ? json_string_value(json_object_get(r->args, "fields"))
				: MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "fields");
	char err[512], bad[256];
	/* Cloud TPU (a discovery method with a response) and Compute only:
	 * Cloud Storage, Monitoring and the token endpoints ignore it here. */
	if (!f || r->fields_done || !(r->fields_type || is_compute(r)))
		return 0;
	r->fields_done = 1; /* the error answered below is not filtered */
	json_t *m = fg_fields_parse(f, err, sizeof(err));
	if (!m) {
		bad_selection(r, err);
		return -1;
	}
	int compute = is_compute(r);
	char *type = compute ? ce_kind_type(json_string_value(json_object_get(*v, "kind")))
			     : (r->fields_type ? xstrdup(r->fields_type) : NULL);
	int rc = fg_fields_check(m, type, compute ? ce_field_type : fg_schema_field_type, bad,
				 sizeof(bad));
	free(type);
	if (rc < 0) {
		snprintf(err, sizeof(err), "Invalid field selection %s", bad);
		json_decref(m);
		bad_selection(r, err);
		return -1;
	}
	json_t *out = fg_fields_apply(m, *v);
	json_decref(m);
	json_decref(*v);
	*v = out;
	return 0;
}

static void set_body(struct fg_req *r, unsigned status, const char *ctype, char *out, size_t len)
{
	free(r->out);
	json_decref(r->pending);
	r->pending = NULL;
	r->status = status;
	r->ctype = ctype;
	r->out = out;
	r->out_len = len;
}

static void write_json(struct fg_req *r, unsigned status, json_t *v)
{
	size_t flags = JSON_PRESERVE_ORDER | (r->pretty ? JSON_INDENT(2) : JSON_COMPACT);
	char *s = json_dumps(v, flags);

	json_decref(v);
	if (!s)
		s = xstrdup("{}");
	/* The real API ends bodies with a newline; some clients log them raw. */
	size_t len = strlen(s);
	char *out = xmalloc(len + 2);
	memcpy(out, s, len);
	out[len] = '\n';
	out[len + 1] = '\0';
	free(s);
	set_body(r, status, "application/json; charset=UTF-8", out, len + 1);
}

void fg_reply_json(struct fg_req *r, unsigned status, json_t *v)
{
	if (status < 300 && fg_fields_filter(r, &v) < 0) {
		json_decref(v);
		return;
	}
	if (r->fields_done) {
		/* A partial response is a tree of its own (fg_fields_apply
		 * copies what it keeps): it is serialized once the handler has
		 * let the lock go (fg_reply_flush), so that 8 zones' pages are
		 * not written out one after another. */
		set_body(r, status, "application/json; charset=UTF-8", NULL, 0);
		r->pending = v;
		return;
	}
	write_json(r, status, v);
}

void fg_reply_flush(struct fg_req *r)
{
	json_t *v = r->pending;
	if (!v)
		return;
	r->pending = NULL;
	write_json(r, r->status, v);
}

void fg_reply_bytes(struct fg_req *r, unsigned status, const char *ctype, const void *data,
		    size_t len)
{
	char *out = xmalloc(len + 1);

	if (len)
		memcpy(out, data, len);
	out[len] = '\0';
	set_body(r, status, ctype, out, len);
}

void fg_reply_text(struct fg_req *r, unsigned status, const char *ctype, const char *text)
{
	set_body(r, status, ctype, xstrdup(text), strlen(text));
}

void fg_reply_header(struct fg_req *r, const char *name, const char *value)
{
	if (r->nhdr >= FG_MAX_HDR)
		return;
	r->hdr_name[r->nhdr] = xstrdup(name);
	r->hdr_value[r->nhdr] = xstrdup(value);
	r->nhdr++;
}

void fg_reply_error(struct fg_req *r, unsigned http, const char *status, json_t *details,
		    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	json_t *err = json_pack("{s:i, s:s, s:s}", "code", (int)http, "message", msg,
				"status", status);
	if (details)
		json_object_set_new(err, "details", details);
	free(msg);
	fg_reply_json(r, http, json_pack("{s:o}", "error", err));
}

void fg_bad_request(struct fg_req *r, const char *field, const char *msg)
{
	json_t *v = json_pack("{s:s, s:s}", "field", field, "description", msg);

	fg_reply_error(r, 400, "INVALID_ARGUMENT",
		       json_pack("[{s:s, s:[o]}]", "@type", "type.googleapis.com/google.rpc.BadRequest",
				 "fieldViolations", v),
		       "%s", msg);
}

json_t *fg_status_new(int code, const char *message)
{
	return json_pack("{s:i, s:s}", "code", code, "message", message);
}

json_t *fg_resource_info(const char *name)
{
	return json_pack("{s:s, s:s}", "@type", "type.googleapis.com/google.rpc.ResourceInfo",
			 "resourceName", name);
}

void fg_timestamp(char out[40])
{
	struct timespec ts;
	struct tm tm;
	char base[24];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 40, "%s.%09ldZ", base, (long)ts.tv_nsec);
}

double fg_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static pthread_mutex_t sleep_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sleep_cv;
static pthread_once_t sleep_once = PTHREAD_ONCE_INIT;
static int stopping;

static void sleep_init(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&sleep_cv, &a);
	pthread_condattr_destroy(&a);
}

void fg_sleep(double seconds)
{
	struct timespec until;

	if (seconds <= 0)
		return;
	pthread_once(&sleep_once, sleep_init);
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)seconds;
	until.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&sleep_mu);
	while (!stopping) {
		if (pthread_cond_timedwait(&sleep_cv, &sleep_mu, &until) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&sleep_mu);
}

void fg_stop_sleepers(void)
{
	pthread_once(&sleep_once, sleep_init);
	pthread_mutex_lock(&sleep_mu);
	stopping = 1;
	pthread_cond_broadcast(&sleep_cv);
	pthread_mutex_unlock(&sleep_mu);
}
