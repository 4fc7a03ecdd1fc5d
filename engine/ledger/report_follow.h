/*
 * Reports kept up to date from a ledger that grows (docs/ledger.md
 * "What the ledger costs"): each update reads only what was appended
 * since the last one (state/ledger_store.h tpf_ledger_cursor_read) and
 * replays it onto the views kept from before (engine/ledger/report.h
 * tpf_report_calc_*), so the cost of an update is the new lines', not the
 * ledger's. What budgets (`watch`'s budget cache) and `watch`'s ledger
 * metrics use.
 */
#ifndef TPF_ENGINE_REPORT_FOLLOW_H
#define TPF_ENGINE_REPORT_FOLLOW_H

#include <jansson.h>
#include <stddef.h>
#include "engine/ledger/report.h"
#include "state/ledger_store.h"
#include "util/diag.h"

/* One window of the report: from since (< 0: the start), of group (NULL:
 * every group). */
struct tpf_report_view {
	double since;
	const char *group;
};

struct tpf_report_follow;

/*
 * Follow the ledger at *w (its store opened here; *w not kept) with
 * views v[0..n) (copied), spans kept when want_spans (report -html).
 * Nothing is read yet. TPF_ERROR with a diagnostic. Free with
 * tpf_report_follow_free (NULL ok).
 */
int tpf_report_follow_open(struct tpf_report_follow **out, const struct tpf_ledger_where *w,
			   const struct tpf_report_view *v, size_t n, int want_spans,
			   struct tpf_diags *d);
void tpf_report_follow_free(struct tpf_report_follow *f);
/* The same for fleet f's ledger (ledger_writer.h tpf_fleet_ledger_where)
 * with one view: the whole ledger, every group. */
struct tpf_fleet;
int tpf_report_follow_open_fleet(struct tpf_report_follow **out, const struct tpf_fleet *f,
				 int want_spans, struct tpf_diags *d);

/*
 * Read what was appended and replay it onto every view. *records (may be
 * NULL): the lines read (a new array: the whole ledger when *from_start
 * is 1: the first update, or a place lost, or a line that arrived late
 * for its node, after which every view was replayed from the start).
 * TPF_ERROR with a diagnostic: the views are as before, and the next
 * update starts over.
 */
int tpf_report_follow_update(struct tpf_report_follow *f, json_t **records, int *from_start,
			     struct tpf_diags *d);

/* View i's report up to until, priced from prices (borrowed, may be
 * NULL); release with tpf_report_release. */
void tpf_report_follow_result(const struct tpf_report_follow *f, size_t i, double until,
			      const struct tpf_prices *prices, struct tpf_report *r);

#endif
