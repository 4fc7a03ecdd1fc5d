/*
 * Budgets, the measuring half (docs/ledger.md "Budgets"): what each
 * budget of the fleet file has spent in its current period, computed from
 * the run ledger with report's own arithmetic (engine/ledger/report.h
 * tpf_report_compute and tpf_report_spend) and priced with report's price
 * table and the fleet file's prices. The deciding half is plan/budget.h.
 */
#ifndef TPF_ENGINE_BUDGET_SPEND_H
#define TPF_ENGINE_BUDGET_SPEND_H

#include <jansson.h>
#include <stddef.h>
#include "config/config.h"
#include "plan/budget.h"
#include "util/diag.h"

/* The scopes of f's budgets (the fleet's first, then each group's with a
 * budget), in *out (caller frees the array; strings borrowed from f), at
 * wall time now: periods set, nothing spent yet. Returns how many. */
size_t tpf_budget_scopes(const struct tpf_fleet *f, double now, struct tpf_budget_status **out);

/*
 * Fill the spend of v[0..n) from ledger records (a JSON array as
 * state/ledger_store.h tpf_ledger_read gives) up to wall time now, and whether a
 * budget_reached line of each scope already lies in its period. Pure
 * arithmetic over the records; f gives the prices.
 */
void tpf_budget_spend(const struct tpf_fleet *f, json_t *records, double now,
		      struct tpf_budget_status *v, size_t n);

/*
 * Both, reading f's ledger: *out (caller frees) and *n. No budget: 0 and
 * *n 0, without reading anything. The ledger off ($TPUFORM_LEDGER=off) or
 * unreadable: 0, *n 0 and a warning in d saying the budgets are not
 * enforced this run (a budget must never stop a fleet on a guess, nor a
 * broken ledger stop it for good).
 */
int tpf_budget_measure(const struct tpf_fleet *f, double now, struct tpf_budget_status **out,
		       size_t *n, struct tpf_diags *d);

/*
 * What a long-running caller (watch: a new session each round) keeps
 * between measures, so that a quiet round does not read the whole ledger:
 * the spend of each scope, measured at most every `every` seconds
 * ($TPUFORM_BUDGET_REFRESH, default 60 s; docs/ledger.md "Budgets").
 * Between measures the spend is the last one measured (it may lag the
 * fleet's burn by up to `every`). A measure reads only the lines appended
 * since the last one (engine/ledger/report_follow.h: a replay per scope
 * kept from measure to measure); a change of the scopes, their amounts or
 * their period measures again at once, from the whole ledger. Zero it to
 * start; release with tpf_budget_cache_release.
 */
struct tpf_report_follow;
struct tpf_budget_cache {
	struct tpf_report_follow *follow; /* the scopes' replays; NULL: none yet */
	int *reported;                    /* per scope: a budget_reached line seen */
	double at;       /* monotonic seconds of the last measure; 0: never */
	size_t n;
	char **groups;   /* owned copies ("" for the fleet) */
	struct tpf_budget_status *v; /* group and budget pointers not kept */
	struct tpf_budget *budgets;  /* owned copies, to compare */
};
void tpf_budget_cache_release(struct tpf_budget_cache *c);

/* tpf_budget_measure through cache c (NULL: measure now): reuses c's
 * spend when it is younger than `every` seconds (monotonic now_mono) and
 * the scopes are the same. */
int tpf_budget_measure_cached(const struct tpf_fleet *f, double now, double now_mono,
			      double every, struct tpf_budget_cache *c,
			      struct tpf_budget_status **out, size_t *n, struct tpf_diags *d);

#endif
