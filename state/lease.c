/*
 * The leader lease object (state/lease.h): acquire with ifGenerationMatch=0
 * or on the expired generation, renew on my generation, expiry judged by
 * local monotonic time only.
 */
#include "state/lease.h"
#include "state/objstore.h"
#include "state/state_priv.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A lease is a few hundred bytes; anything far larger is not one. */
#define LEASE_MAX ((size_t)1 << 16)

struct tpf_lease {
	pthread_mutex_t mu;
	struct tpf_objstore *store; /* beside the state: ".tfleader", ".tfstate" */
	char *where;
	double ttl;            /* seconds: mine */
	char id[37];           /* random: tells two watches on one host apart */
	char host[256];
	long pid;
	char acquired[40];     /* RFC 3339, when I last acquired it */
	char *lock_id;         /* the state lock I hold, or NULL */
	int leading;
	long long gen;         /* the generation I last wrote */
	double valid_until;    /* monotonic: sent time of my last write + ttl */
	double last_write;     /* monotonic: sent time of my last write */
	/* What a standby watches: a generation and when it was first seen. */
	long long seen_gen;    /* 0: no lease object */
	double seen_at;
	double seen_ttl;
	char seen_id[37];
	char seen_holder[320];
	char seen_lock[37];
};

#define LEASE_OBJ ".tfleader"
#define STATE_OBJ ".tfstate"

int tpf_lease_open(struct tpf_lease **out, const struct tpf_backend_gcs_config *c, double ttl,
		   struct tpf_diags *d)
{
	struct tpf_objstore *store = NULL;
	*out = NULL;
	if (tpf_objstore_open_beside(&store, NULL, c, "", d))
		return TPF_ERROR;
	return tpf_lease_open_store(out, store, ttl, d);
}

int tpf_lease_open_store(struct tpf_lease **out, struct tpf_objstore *store, double ttl,
			 struct tpf_diags *d)
{
	*out = NULL;
	if (!(ttl > 0)) {
		tpf_objstore_free(store);
		return tpf_errorx(d, NULL, "Give a positive duration, e.g. -lease-ttl=30s.",
				  "the lease TTL must be positive, not %g s", ttl);
	}
	struct tpf_lease *l = xcalloc(1, sizeof(*l));
	pthread_mutex_init(&l->mu, NULL);
	l->store = store;
	l->where = tpf_objstore_where(store, LEASE_OBJ);
	l->ttl = ttl;
	tpf_uuid4(l->id);
	if (gethostname(l->host, sizeof(l->host) - 1))
		snprintf(l->host, sizeof(l->host), "unknown-host");
	l->pid = (long)getpid();
	*out = l;
	return 0;
}

void tpf_lease_free(struct tpf_lease *l)
{
	if (!l)
		return;
	tpf_objstore_free(l->store);
	free(l->where);
	free(l->lock_id);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

const char *tpf_lease_where(const struct tpf_lease *l)
{
	return l->where;
}

static void describe(char *out, size_t n, const char *host, long pid, const char *id)
{
	snprintf(out, n, "%s pid %ld (id %.8s)", host, pid, id);
}

/* Write my lease with ifGenerationMatch=if_gen (call with mu held). */
static int write_lease(struct tpf_lease *l, long long if_gen, struct tpf_diags *d)
{
	char now[40];
	tpf_rfc3339(tpf_now_wall(), now, sizeof(now));
	if (if_gen != l->gen || !l->leading)
		snprintf(l->acquired, sizeof(l->acquired), "%s", now);
	json_t *doc = json_pack("{s:{s:s,s:s,s:I},s:s,s:s,s:f,s:s*,s:s}", "holder", "id", l->id,
				"host", l->host, "pid", (json_int_t)l->pid, "acquired", l->acquired,
				"renewed", now, "ttl_seconds", l->ttl, "state_lock_id", l->lock_id,
				"tpuform_version", TPF_VERSION);
	char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(doc);
	/* Sent now: the write lands no earlier, so no standby can see this
	 * generation before, and its expiry comes after sent + ttl. */
	double sent = tpf_now_mono();
	long long gen = 0;
	int rc = tpf_objstore_put(l->store, LEASE_OBJ, text, strlen(text), "application/json",
				  if_gen, &gen, d);
	free(text);
	if (rc)
		return rc;
	l->gen = gen;
	l->leading = 1;
	l->last_write = sent;
	l->valid_until = sent + l->ttl;
	return 0;
}

/* Read the lease object and note a new generation (call with mu held). */
static int observe(struct tpf_lease *l, struct tpf_diags *d)
{
	struct tpf_buf raw = TPF_BUF_INIT;
	long long gen = 0;
	int rc = tpf_objstore_get(l->store, LEASE_OBJ, LEASE_MAX, "lease", &raw, &gen, d);
	if (rc == TPF_ENOTFOUND) {
		rc = 0;
		gen = 0;
	}
	if (!rc && gen != l->seen_gen) {
		l->seen_gen = gen;
		l->seen_at = tpf_now_mono();
		l->seen_ttl = l->ttl;
		l->seen_id[0] = l->seen_holder[0] = l->seen_lock[0] = 0;
		json_t *doc = gen ? json_loadb(raw.buf, raw.len, 0, NULL) : NULL;
		json_t *h = json_object_get(doc, "holder");
		const char *id = json_string_value(json_object_get(h, "id"));
		const char *host = json_string_value(json_object_get(h, "host"));
		const char *lock = json_string_value(json_object_get(doc, "state_lock_id"));
		double ttl = json_number_value(json_object_get(doc, "ttl_seconds"));
		/* The holder's own promise; an unreadable lease is treated as
		 * one written with my TTL, so it still expires. */
		if (ttl > 0)
			l->seen_ttl = ttl;
		snprintf(l->seen_id, sizeof(l->seen_id), "%s", id ? id : "");
		snprintf(l->seen_lock, sizeof(l->seen_lock), "%s", lock ? lock : "");
		if (gen)
			describe(l->seen_holder, sizeof(l->seen_holder), host ? host : "?",
				 (long)json_integer_value(json_object_get(h, "pid")), id ? id : "?");
		json_decref(doc);
	}
	tpf_buf_release(&raw);
	return rc;
}

/* A standby's step (mu held): take the lease when absent or expired. */
static int standby_step(struct tpf_lease *l, struct tpf_lease_view *v, struct tpf_diags *d)
{
	int rc = observe(l, d);
	if (rc)
		return rc;
	double now = tpf_now_mono();
	/* Mine and untouched since I wrote it: nobody led in between. */
	int own = l->seen_gen && l->seen_gen == l->gen && !strcmp(l->seen_id, l->id);
	int expired = l->seen_gen && now >= l->seen_at + l->seen_ttl;
	v->expires_in = l->seen_gen && !expired ? l->seen_at + l->seen_ttl - now : 0;
	if (l->seen_gen && !expired && !own)
		return 0;
	char previous_lock[37];
	snprintf(previous_lock, sizeof(previous_lock), "%s", own ? "" : l->seen_lock);
	rc = write_lease(l, l->seen_gen, d);
	if (rc == TPF_ESTALE)
		return 0; /* another standby was quicker: watch its lease next time */
	if (rc)
		return rc;
	snprintf(v->previous_lock_id, sizeof(v->previous_lock_id), "%s", previous_lock);
	return 0;
}

int tpf_lease_step(struct tpf_lease *l, struct tpf_lease_view *v, struct tpf_diags *d)
{
	memset(v, 0, sizeof(*v));
	pthread_mutex_lock(&l->mu);
	int was = l->leading, rc = 0;
	if (l->leading && tpf_now_mono() >= l->valid_until)
		l->leading = 0; /* renewals failed for a whole TTL: a standby may lead */
	if (l->leading) {
		rc = write_lease(l, l->gen, d);
		if (rc == TPF_ESTALE) {
			l->leading = 0; /* taken over */
			rc = 0;
		} else if (rc && tpf_now_mono() >= l->valid_until) {
			l->leading = 0;
		}
	}
	if (!l->leading && !rc)
		rc = standby_step(l, v, d);
	v->leading = l->leading;
	v->changed = was != l->leading;
	v->generation = l->leading ? l->gen : l->seen_gen;
	if (l->leading)
		describe(v->holder, sizeof(v->holder), l->host, l->pid, l->id);
	else
		snprintf(v->holder, sizeof(v->holder), "%s", l->seen_holder);
	pthread_mutex_unlock(&l->mu);
	return rc;
}

double tpf_lease_next_step(struct tpf_lease *l, double interval)
{
	pthread_mutex_lock(&l->mu);
	double now = tpf_now_mono(), at = now + interval;
	double due = l->leading ? l->last_write + l->ttl / 3
		   : l->seen_gen ? l->seen_at + l->seen_ttl : now;
	pthread_mutex_unlock(&l->mu);
	return due < at ? due : at;
}

int tpf_lease_held(struct tpf_lease *l, struct tpf_diags *d)
{
	pthread_mutex_lock(&l->mu);
	int rc = 0;
	if (!l->leading || tpf_now_mono() >= l->valid_until) {
		l->leading = 0;
		rc = tpf_errorx(d, NULL, "Another watch leads now; this one stands by.",
				"this watch does not hold the leader lease %s (lost, or not renewed "
				"within its TTL of %.0f s): the state write was refused",
				l->where, l->ttl);
		goto out;
	}
	struct tpf_diags io = TPF_DIAGS_INIT;
	long long gen = 0;
	int st = tpf_objstore_stat(l->store, LEASE_OBJ, &gen, &io);
	/* Cannot ask: the lease is still mine until valid_until (no standby
	 * can take it before), and the state's own generation check holds. */
	if (st == 0 ? gen != l->gen : st == TPF_ENOTFOUND) {
		l->leading = 0;
		rc = tpf_errorx(d, NULL, "Another watch (or a person) took the lease; this one "
				"stands by.",
				"this watch lost the leader lease %s (generation %lld is not the %lld "
				"it wrote): the state write was refused",
				l->where, st == 0 ? gen : 0LL, l->gen);
	}
	tpf_diags_release(&io);
out:
	pthread_mutex_unlock(&l->mu);
	return rc ? TPF_ESTALE : 0;
}

int tpf_lease_note_lock(struct tpf_lease *l, const char *lock_id, int renew_now,
			struct tpf_diags *d)
{
	pthread_mutex_lock(&l->mu);
	xstrset(&l->lock_id, lock_id);
	int rc = 0;
	if (renew_now) {
		rc = l->leading ? write_lease(l, l->gen, d) : TPF_ESTALE;
		if (rc == TPF_ESTALE) {
			l->leading = 0;
			tpf_errorx(d, NULL, "Another watch leads now; this one stands by.",
				   "this watch lost the leader lease %s", l->where);
		}
	}
	pthread_mutex_unlock(&l->mu);
	return rc;
}

int tpf_lease_fence_state(struct tpf_lease *l, struct tpf_diags *d)
{
	struct tpf_buf raw = TPF_BUF_INIT;
	int rc = TPF_ESTALE;
	pthread_mutex_lock(&l->mu);
	for (int tries = 0; tries < 5 && rc == TPF_ESTALE; tries++) {
		long long gen = 0;
		tpf_buf_reset(&raw);
		rc = tpf_objstore_get(l->store, STATE_OBJ, TPF_STATE_FILE_MAX, "state", &raw, &gen, d);
		if (rc == TPF_ENOTFOUND) {
			rc = 0; /* no state yet: the first write is a create (ifGenerationMatch=0) */
			break;
		}
		if (!rc)
			rc = tpf_objstore_put(l->store, STATE_OBJ, raw.buf, raw.len,
					      "application/json", gen, NULL, d);
	}
	pthread_mutex_unlock(&l->mu);
	if (rc == TPF_ESTALE) {
		char *where = tpf_objstore_where(l->store, STATE_OBJ);
		rc = tpf_error(d, "%s kept changing while the new leader rewrote it", where);
		free(where);
	}
	tpf_buf_release(&raw);
	return rc;
}

void tpf_lease_release(struct tpf_lease *l)
{
	pthread_mutex_lock(&l->mu);
	if (l->leading) {
		struct tpf_diags ignore = TPF_DIAGS_INIT;
		tpf_objstore_delete(l->store, LEASE_OBJ, l->gen, &ignore);
		tpf_diags_release(&ignore);
		l->leading = 0;
	}
	pthread_mutex_unlock(&l->mu);
}
