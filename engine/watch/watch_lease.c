/*
 * Leadership of the watch loop (engine/watch/watch_internal.h): which of several
 * watches of one fleet on Cloud Storage state heals it, over the leader
 * lease of state/lease.h. Local state has no lease: the local lock alone
 * decides, as before.
 *
 * Fencing, so that two leaders never heal at once:
 *  1. A leader renews the lease every round and every TTL/3 while it
 *     sleeps; a renewal answered 412 (taken over) makes it a standby at
 *     once, and it starts no heal after that.
 *  2. Before a heal starts and right before every state write, the lease
 *     is checked (tpf_lease_held: one metadata request); a lost lease
 *     refuses the write, and engine/apply/apply.c creates nothing whose pending
 *     record could not be saved, so heals in flight stop at their next step.
 *  3. A new leader's first act is to rewrite the state object
 *     (tpf_lease_fence_state), bumping its generation. An old leader that
 *     checked its lease just before the takeover and writes just after
 *     still carries the old state generation: its write is refused by the
 *     state's compare-and-swap (state/backend.h). What is left: a write the
 *     old leader sent between the new leader's lease write and its state
 *     rewrite lands (Cloud Storage has no multi-object transactions); the
 *     rewrite then meets a 412, reads again and retries, so the new leader
 *     plans from a state that includes it, and every later write of the old
 *     leader is refused.
 */
#include "engine/state_store.h"
#include "engine/watch/watch_internal.h"
#include "state/lease.h"
#include "state/objstore.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tpf_watch_lease {
	const struct tpf_watch_opts *o;
	struct tpf_lease *lease;
	struct tpf_backend *backend; /* for removing a dead leader's state lock */
	int leading;
	int fenced;         /* the state was rewritten since this watch took over */
	char last_holder[320]; /* the holder last reported (standby) */
};

int tpf_watch_lease_open(struct tpf_watch_lease **out, const struct tpf_watch_opts *o,
			 const struct tpf_fleet *f, struct tpf_diags *d)
{
	*out = NULL;
	struct tpf_objstore *store = NULL;
	if (tpf_fleet_objstore_open(&store, f, "", d))
		return TPF_ERROR;
	if (!tpf_objstore_shared(store)) {
		tpf_objstore_free(store); /* this host's state: its lock alone decides */
		return 0;
	}
	struct tpf_watch_lease *wl = xcalloc(1, sizeof(*wl));
	wl->o = o;
	if (tpf_lease_open_store(&wl->lease, store, o->lease_ttl > 0 ? o->lease_ttl : 30, d) ||
	    tpf_fleet_backend_open(&wl->backend, f, d)) {
		tpf_watch_lease_free(wl);
		return TPF_ERROR;
	}
	*out = wl;
	return 0;
}

void tpf_watch_lease_free(struct tpf_watch_lease *wl)
{
	if (!wl)
		return;
	if (wl->lease)
		tpf_lease_release(wl->lease);
	tpf_lease_free(wl->lease);
	tpf_backend_free(wl->backend);
	free(wl);
}

/* Just took the lease: remove the state lock a dead predecessor named,
 * then fence it out by rewriting the state (file comment, 3). */
static int take_over(struct tpf_watch_lease *wl, const struct tpf_lease_view *v,
		     struct tpf_diags *d)
{
	char msg[768];
	snprintf(msg, sizeof(msg), "leading: this watch holds the leader lease %s (generation %lld)%s%s",
		 tpf_lease_where(wl->lease), v->generation,
		 wl->last_holder[0] ? ", taken over from " : "", wl->last_holder);
	tpf_watch_note(wl->o, TPF_EVENT_LEASE_ACQUIRED, NULL, msg);
	if (v->previous_lock_id[0]) {
		struct tpf_diags ignore = TPF_DIAGS_INIT;
		/* Only a lock with exactly that ID goes: an apply's is kept. */
		if (tpf_backend_force_unlock(wl->backend, v->previous_lock_id, &ignore) == 0) {
			snprintf(msg, sizeof(msg), "removed the state lock %s the previous leader "
				 "held when it stopped", v->previous_lock_id);
			tpf_watch_note(wl->o, TPF_EVENT_LOCK_REMOVED, NULL, msg);
		}
		tpf_diags_release(&ignore);
	}
	if (tpf_lease_fence_state(wl->lease, d))
		return -1;
	wl->fenced = 1;
	wl->last_holder[0] = 0;
	return 0;
}

/* A standby's line, once per holder: who leads, and when it would expire. */
static void say_standby(struct tpf_watch_lease *wl, const struct tpf_lease_view *v)
{
	if (!strcmp(wl->last_holder, v->holder))
		return;
	snprintf(wl->last_holder, sizeof(wl->last_holder), "%s", v->holder);
	char msg[768];
	if (v->holder[0])
		snprintf(msg, sizeof(msg), "standing by: %s leads (lease %s, generation %lld); "
			 "taking over if it is not renewed within %.0f s", v->holder,
			 tpf_lease_where(wl->lease), v->generation, v->expires_in);
	else
		snprintf(msg, sizeof(msg), "standing by: nobody holds the lease %s",
			 tpf_lease_where(wl->lease));
	tpf_watch_note(wl->o, TPF_EVENT_STANDBY, NULL, msg);
}

enum tpf_lead tpf_watch_lease_lead(struct tpf_watch_lease *wl)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_lease_view v;
	int rc = tpf_lease_step(wl->lease, &v, &d);
	int was = wl->leading;
	wl->leading = v.leading;
	if (was && !v.leading) {
		char msg[768];
		snprintf(msg, sizeof(msg), "lost the leader lease %s%s%s: stopped healing (heals in "
			 "flight end at their next step, their state writes refused); standing by",
			 tpf_lease_where(wl->lease), v.holder[0] ? " to " : "", v.holder);
		tpf_watch_note(wl->o, TPF_EVENT_LEASE_LOST, NULL, msg);
		snprintf(wl->last_holder, sizeof(wl->last_holder), "%s", v.holder);
		wl->fenced = 0;
	}
	if (v.leading && v.changed)
		wl->fenced = 0;
	if (v.leading && !wl->fenced && take_over(wl, &v, &d))
		rc = TPF_ERROR;
	if (!v.leading && !rc)
		say_standby(wl, &v);
	tpf_watch_diags(wl->o, &d);
	tpf_diags_release(&d);
	if (rc && !(v.leading && wl->fenced))
		return TPF_LEAD_UNKNOWN;
	return v.leading ? TPF_LEAD_LEADING : TPF_LEAD_STANDBY;
}

int tpf_watch_lease_leading(const struct tpf_watch_lease *wl)
{
	return wl->leading;
}

double tpf_watch_lease_due(struct tpf_watch_lease *wl, double interval)
{
	return tpf_lease_next_step(wl->lease, interval);
}

static int fence(void *ctx, struct tpf_diags *d)
{
	return tpf_lease_held(ctx, d);
}

void tpf_watch_lease_fence(struct tpf_watch_lease *wl, struct tpf_backend *b)
{
	tpf_backend_set_fence(b, fence, wl->lease);
}

int tpf_watch_lease_held(struct tpf_watch_lease *wl, struct tpf_diags *d)
{
	return tpf_lease_held(wl->lease, d);
}

int tpf_watch_lease_note_lock(struct tpf_watch_lease *wl, const char *lock_id, int renew_now,
			      struct tpf_diags *d)
{
	return tpf_lease_note_lock(wl->lease, lock_id, renew_now, d);
}
