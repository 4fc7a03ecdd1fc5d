/*
 * Declared quota: the one rule, used by desired-node placement
 * (plan/desired.c) and by the executor before every create and during zone
 * fallback (engine/apply/apply.c). Pure: counters only, no I/O.
 *
 * The rule (docs/fleet-file.md, "The fleet file", key quota[]):
 * - A rule {zone, accelerator_type (or "*"), preemptible, spot, on_demand}
 *   caps each scheduling class separately: `preemptible: 2, spot: 1`
 *   allows two preemptible nodes and one spot node at the same time. A
 *   class the rule does not declare (cap -1) is not capped by that rule.
 * - A node counts against a rule when its zone is the rule's zone and its
 *   accelerator type is the rule's, or the rule's type is "*" (or absent).
 *   It counts in the column of its own class only (spot, else preemptible,
 *   else on-demand, as tpf_recipe_scheduling names it).
 * - When several rules match a node (a rule for its type and a "*" rule
 *   for the zone), it counts against each of them, and one more node fits
 *   only if EVERY matching rule that declares a cap for its class has room:
 *   a "*" rule caps all accelerator types of the zone together.
 * - Placement: existing nodes are counted first; a new node takes the
 *   first zone of its group's list with room (zone fallback order).
 * Declared quota is never exceeded; a node that fits nowhere waits.
 */
#ifndef TPF_QUOTA_H
#define TPF_QUOTA_H

#include <stddef.h>
#include "config/config.h"
#include "model/recipe.h"
#include "state/state.h"

/* Scheduling classes, each capped separately by a rule. */
enum tpf_quota_class {
	TPF_QUOTA_ON_DEMAND = 0,
	TPF_QUOTA_PREEMPTIBLE,
	TPF_QUOTA_SPOT,
	TPF_QUOTA_NCLASSES
};

/* Nodes counted so far, per rule and class. Initialise with
 * tpf_quota_init, release with tpf_quota_release. */
struct tpf_quota {
	const struct tpf_quota_rule *rules; /* borrowed (the fleet's quota[]) */
	size_t nrules;
	int (*used)[TPF_QUOTA_NCLASSES];    /* nrules rows; owned */
};

/* The class a recipe's node counts in: spot, else preemptible, else on-demand. */
enum tpf_quota_class tpf_quota_class_of(const struct tpf_recipe *r);

/* Zeroed counters for the given rules (borrowed: they must outlive q). */
void tpf_quota_init(struct tpf_quota *q, const struct tpf_quota_rule *rules, size_t nrules);
void tpf_quota_release(struct tpf_quota *q);

/* 1 if rule `rule` applies to a node of accelerator type `type` in `zone`. */
int tpf_quota_rule_matches(const struct tpf_quota_rule *rule, const char *zone, const char *type);

/*
 * 1 if one more node like r (its accelerator type and class; r->zone is
 * not read) fits in `zone`: every matching rule that caps r's class has
 * room. 1 when no rule matches.
 */
int tpf_quota_room(const struct tpf_quota *q, const char *zone, const struct tpf_recipe *r);

/*
 * Why there is no room: the index in q->rules of the first matching rule
 * whose cap for r's class is reached, with that cap in *cap; -1 when one
 * more node fits (then *cap is untouched). tpf_quota_room is this < 0.
 */
int tpf_quota_blocking_rule(const struct tpf_quota *q, const char *zone,
			    const struct tpf_recipe *r, int *cap);

/* Count one node like r in `zone` against every rule that matches it
 * (whether or not there was room: existing nodes are counted as found). */
void tpf_quota_take(struct tpf_quota *q, const char *zone, const struct tpf_recipe *r);

/*
 * Count every node of the state that has a zone (created, pending or
 * tainted: each may hold quota; not completed ones, which were deleted),
 * by its recorded recipe, except the node named `except` (may be NULL),
 * which is the one being placed.
 */
void tpf_quota_count_state(struct tpf_quota *q, const struct tpf_state *st, const char *except);

/*
 * Zone fallback: the first of zones[0..nzones) (the group's order) with
 * room for one more node like r, or NULL when none has room. Borrowed
 * from zones.
 */
const char *tpf_quota_first_zone(const struct tpf_quota *q, char *const *zones, size_t nzones,
				 const struct tpf_recipe *r);

#endif
