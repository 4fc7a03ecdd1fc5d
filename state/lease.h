/*
 * The leader lease of `tpuform watch` on Cloud Storage state: which of
 * several watches of one fleet (on other machines, or in other
 * directories) heals it. Cloud Storage is the coordination store: its
 * generation preconditions are the only atomic operation used
 * (https://cloud.google.com/storage/docs/request-preconditions), no
 * home-made consensus.
 *
 * The lease is one object beside the state and lock objects
 * (state/backend.h):
 *     <prefix>/<fleet>.tfleader
 * holding JSON: {"holder": {"id", "host", "pid"}, "acquired", "renewed"
 * (RFC 3339, the holder's clock, for people only), "ttl_seconds",
 * "state_lock_id" (the state lock the leader holds while it heals, or
 * null), "tpuform_version"}.
 *
 *  - Acquire: create it with ifGenerationMatch=0 (only if absent), or take
 *    over an expired one with ifGenerationMatch=<the generation seen
 *    expiring>. Of two standbys racing, one wins; the other gets 412.
 *  - Renew: rewrite it with ifGenerationMatch=<the generation I last
 *    wrote>. A 412 means someone took over: the lease is lost.
 *  - Release (a clean exit): delete it with ifGenerationMatch=<mine>, so a
 *    standby takes over at its next check instead of after the TTL.
 *
 * Expiry is judged WITHOUT comparing clocks of two machines. A standby
 * notes the local monotonic time at which it first saw a generation; the
 * lease has expired when that same generation is still there ttl_seconds
 * (the holder's TTL, from the object) later. Neither the holder's
 * "renewed" time nor the object's `updated` time (the Cloud Storage
 * server's clock) is compared with the local wall clock: a standby whose
 * clock runs minutes ahead would take a live lease (two leaders), one
 * whose clock lags would wait minutes too long. Only clock *rates* matter,
 * and those agree to parts per million. The price: a standby that starts
 * after the leader died waits one full TTL before taking over.
 *
 * The leader, in turn, holds the lease only until (the monotonic time at
 * which it SENT its last successful write) + TTL: a standby saw that
 * generation no earlier than the write landed, so its expiry comes later
 * than the leader's own. A leader whose renewals keep failing (a
 * partition) stops leading at that moment, before any standby can take
 * over.
 *
 * Thread-safe: one mutex; every call (including its requests) holds it,
 * so a fence check never sees a renewal half done.
 */
#ifndef TPF_STATE_LEASE_H
#define TPF_STATE_LEASE_H

#include "state/backend.h"
#include "util/diag.h"

struct tpf_lease;

/* The fencing token a state write carries: see tpf_lease_held. */
struct tpf_lease_view {
	int leading;      /* 1: this process holds the lease */
	int changed;      /* leading changed in this step (acquired, or lost) */
	long long generation; /* of the lease object as last seen (0: none) */
	/* The holder as people should see it: "HOST pid PID (id ID8)", this
	 * process's own when leading; "" when nobody holds it. */
	char holder[320];
	/* Standby: seconds until the lease seen counts as expired (0: now). */
	double expires_in;
	/* Leading, changed: the state lock ID the previous (expired) holder
	 * named, "" when none: it died holding it (tpf_lease_note_lock). */
	char previous_lock_id[37];
};

/*
 * A lease for the fleet c names (c->bucket, c->prefix, c->fleet: the same
 * layout as the state). ttl: seconds (> 0) this process promises to renew
 * within. Opens its own Cloud Storage client (no request yet). *out: free
 * with tpf_lease_free. TPF_ERROR with a diagnostic.
 */
int tpf_lease_open(struct tpf_lease **out, const struct tpf_backend_gcs_config *c, double ttl,
		   struct tpf_diags *d);
/* The same, over the object store beside the state (state/backend.h
 * tpf_objstore_open_beside with suffix ""; a shared one: the lease is the
 * object ".tfleader" and the state ".tfstate"). store is consumed, also on
 * failure. */
struct tpf_objstore;
int tpf_lease_open_store(struct tpf_lease **out, struct tpf_objstore *store, double ttl,
			 struct tpf_diags *d);
/* Free (NULL ok). Does not release a held lease (tpf_lease_release). */
void tpf_lease_free(struct tpf_lease *l);
/* "gs://BUCKET/<prefix>/<fleet>.tfleader", borrowed. */
const char *tpf_lease_where(const struct tpf_lease *l);

/*
 * One step, every round and whenever tpf_lease_next_step says: the leader
 * renews; a standby reads the lease and takes it when absent or expired.
 * Fills *v. Returns 0, or TPF_ERROR / TPF_ETRANSIENT with a diagnostic
 * when Cloud Storage could not be asked (a leader then keeps leading until
 * its own expiry, and *v says whether it still does).
 */
int tpf_lease_step(struct tpf_lease *l, struct tpf_lease_view *v, struct tpf_diags *d);

/* Monotonic seconds at which the next step is due: a leader renews every
 * TTL/3; a standby looks again when the generation it watches would
 * expire. Never later than now + `interval`. */
double tpf_lease_next_step(struct tpf_lease *l, double interval);

/*
 * The fence, called right before every state write and before a heal
 * starts: 0 when this process leads, its own expiry has not passed, and
 * the lease object still has the generation it last wrote (one metadata
 * request). Otherwise TPF_ESTALE with a diagnostic naming the lease, and
 * the lease counts as lost (the next step becomes a standby's).
 */
int tpf_lease_held(struct tpf_lease *l, struct tpf_diags *d);

/*
 * Record the state lock ID this leader now holds (NULL: none), written
 * into the lease so that a successor can remove the lock if this process
 * dies holding it. renew_now: rewrite the lease at once (0, or the error
 * of the renewal: TPF_ESTALE when it was lost).
 */
int tpf_lease_note_lock(struct tpf_lease *l, const char *lock_id, int renew_now,
			struct tpf_diags *d);

/*
 * Bump the state object's generation without changing its bytes (rewrite
 * it with ifGenerationMatch=<the generation read>, retried on a 412). A new
 * leader does this first: a previous leader that loaded the state before
 * (and is paused, or partitioned, not dead) then has a stale generation,
 * and its next write is refused by the state's compare-and-swap. No state
 * object: nothing to do. 0 or an error with a diagnostic.
 */
int tpf_lease_fence_state(struct tpf_lease *l, struct tpf_diags *d);

/* Delete the lease if this process still holds it (a clean exit). Errors
 * are ignored: the lease then expires after its TTL. */
void tpf_lease_release(struct tpf_lease *l);

#endif
