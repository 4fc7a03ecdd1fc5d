/*
 * Zone backoff for quota-aware swarms (issue: keep the fleet alive).
 *
 * A zone that answered "no capacity" or "quota exceeded" for an accelerator
 * type is not asked again for a while: the wait doubles with each refusal
 * (base, 2 base, 4 base ... capped), and a success clears it. Peers hammer
 * a stocked-out zone every poll (docs/design.md section 7); this is what
 * lets `watch` move on to the group's next zone and come back later.
 * Thread-safe: apply's worker threads share one table.
 */
#ifndef TPF_BACKOFF_H
#define TPF_BACKOFF_H

struct tpf_backoff;

/* base and cap in seconds. Caller frees with tpf_backoff_free. */
struct tpf_backoff *tpf_backoff_new(double base, double cap);
void tpf_backoff_free(struct tpf_backoff *b);

/* 1 if (zone, type) is backed off at monotonic time now; *until (may be
 * NULL) gets when it ends. */
int tpf_backoff_blocked(struct tpf_backoff *b, const char *zone, const char *type, double now,
			double *until);
/* Record a refusal at time now; returns the new wait in seconds. */
double tpf_backoff_fail(struct tpf_backoff *b, const char *zone, const char *type, double now);
/* Record a success: the zone is open again. */
void tpf_backoff_ok(struct tpf_backoff *b, const char *zone, const char *type);

#endif
