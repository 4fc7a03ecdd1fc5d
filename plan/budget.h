/*
 * Budgets (docs/ledger.md "Budgets"): the period arithmetic and the one
 * deferral rule, next to the quota rule (plan/quota.h). Pure: the engine
 * measures the spend from the run ledger (engine/ledger/budget_spend.h) and hands it
 * here as a number; nothing here reads a clock, a file or the network.
 *
 * The rule: once a scope's spend in the current period reaches its
 * budget, no node of the scope is created (a create is deferred with the
 * reason "budget reached: ..."; nodes that exist keep running), and with
 * on_budget: delete the scope's nodes recorded in this state are deleted
 * through the ordinary delete (plan/diff.c). The fleet's budget scopes
 * every group; a group's budget scopes that group; both may apply.
 */
#ifndef TPF_PLAN_BUDGET_H
#define TPF_PLAN_BUDGET_H

#include <stddef.h>
#include "config/config.h"
#include "plan/plan.h"
#include "util/buf.h"
#include "util/diag.h"

/* A budget and what was spent against it in its current period. */
struct tpf_budget_status {
	const char *group;               /* NULL: the fleet's budget (borrowed) */
	const struct tpf_budget *budget; /* borrowed from the fleet */
	enum tpf_on_budget on_budget;
	double period_start, period_end; /* wall seconds, UTC */
	double spent;   /* chip-hours or US dollars, as budget->unit */
	long unpriced;  /* usd budgets: ledger rows billed but without a price */
	int reported;   /* a budget_reached line of this scope and period is in the ledger */
};

/*
 * The period holding wall time `now` (seconds since the epoch), as
 * [*start, *end): a UTC calendar day; an ISO 8601 week, Monday 00:00 UTC
 * to the next Monday; a UTC calendar month.
 */
void tpf_budget_period(double now, enum tpf_budget_per per, double *start, double *end);

/* "today", "this week", "this month" (static). */
const char *tpf_budget_per_words(enum tpf_budget_per per);

/* 1 when s's spend has reached its amount. */
int tpf_budget_reached(const struct tpf_budget_status *s);

/*
 * For people, appended to out: "group 'a': 41.2 of 100 chip-hours this
 * week (41%)" or "fleet 'f': $12.30 of $100.00 this month (12%)".
 */
void tpf_budget_describe(const struct tpf_budget_status *s, const char *fleet,
			 struct tpf_buf *out);

/*
 * The deferral rule over the desired nodes ds: every node of a scope whose
 * budget is reached (v[0..n)) is deferred with waiting "budget reached:
 * ..." (its create waits; a live node is untouched), and marked
 * over_budget TPF_OVER_BUDGET_DELETE when the scope says on_budget:
 * delete. One warning per reached scope in d. Completed nodes are left
 * alone. Returns how many nodes it deferred.
 */
size_t tpf_budget_defer(struct tpf_desired_set *ds, const struct tpf_budget_status *v, size_t n,
			const char *fleet, struct tpf_diags *d);

#endif
