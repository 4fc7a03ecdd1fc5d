/*
 * Zone backoff for quota-aware swarms (issue: keep the fleet alive).
 *
 * A zone that answered "no capacity", "quota exceeded" or "cannot use this
 * zone" for a type of node is not asked again for a while: the wait
 * doubles with each refusal (base, 2 base, 4 base ... capped), and a
 * success clears it. Peers hammer a stocked-out zone every poll
 * (docs/design.md section 7); this is what lets `watch` move on to the
 * group's next zone and come back later.
 * Thread-safe: apply's worker threads share one table.
 */
#ifndef TPF_BACKOFF_H
#define TPF_BACKOFF_H

#include "model/recipe.h"

struct tpf_backoff;

/* The cap `watch` uses (seconds): a zone is asked again at least once a
 * minute, so a node a stockout held back is created within about a minute
 * of the zone having capacity again (issue 26: within 2 minutes). */
#define TPF_ZONE_BACKOFF_CAP 60.0

/* Longest type a key holds (bytes, with the NUL); a longer one is cut. */
#define TPF_BACKOFF_TYPE_MAX 64

/*
 * What a zone refused: the kind of node asked for. A Cloud TPU API node is
 * keyed by its accelerator type ("v4-16"), a Compute Engine node by its
 * machine type ("tpu7x-standard-4t": it has no accelerator type); the two
 * APIs never share an entry. The type is held in the key, never a
 * pointer: a recipe without a type (a damaged state) keys as "".
 */
struct tpf_backoff_key {
	enum tpf_api api;
	char type[TPF_BACKOFF_TYPE_MAX];
};

/* The key of a node of recipe r (model/compute.h: r->compute.api). */
struct tpf_backoff_key tpf_backoff_key_of(const struct tpf_recipe *r);

/* base and cap in seconds. Caller frees with tpf_backoff_free. */
struct tpf_backoff *tpf_backoff_new(double base, double cap);
void tpf_backoff_free(struct tpf_backoff *b);

/*
 * 1 if (zone, key) is backed off at monotonic time now. *until (may be
 * NULL) gets when it ends (0: never refused), *why (may be NULL) the
 * refusal's code as given to tpf_backoff_fail (0: never refused). A NULL
 * zone is the zone "".
 */
int tpf_backoff_blocked(struct tpf_backoff *b, const char *zone, const struct tpf_backoff_key *key,
			double now, double *until, int *why);
/* Record a refusal (why: TPF_ECAPACITY, TPF_EQUOTA, TPF_EZONE, util/diag.h)
 * at monotonic time now; returns the new wait in seconds. */
double tpf_backoff_fail(struct tpf_backoff *b, const char *zone, const struct tpf_backoff_key *key,
			double now, int why);
/* Record a success: the zone is open again. */
void tpf_backoff_ok(struct tpf_backoff *b, const char *zone, const struct tpf_backoff_key *key);

#endif
