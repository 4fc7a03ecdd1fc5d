/*
 * Reports kept up to date from a growing ledger (engine/ledger/report_follow.h).
 */
#include "engine/ledger/report_follow.h"
#include "engine/ledger/ledger_writer.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct tpf_report_follow {
	struct tpf_ledger_cursor *cur;
	size_t n;
	double *since;
	char **group;
	struct tpf_report_calc **calc;
	int want_spans;
};

int tpf_report_follow_open(struct tpf_report_follow **out, const struct tpf_ledger_where *w,
			   const struct tpf_report_view *v, size_t n, int want_spans,
			   struct tpf_diags *d)
{
	*out = NULL;
	struct tpf_ledger_cursor *cur = NULL;
	if (tpf_ledger_cursor_open(&cur, w, d))
		return TPF_ERROR;
	struct tpf_report_follow *f = xcalloc(1, sizeof(*f));
	f->cur = cur;
	f->n = n;
	f->want_spans = want_spans;
	f->since = xcalloc(n ? n : 1, sizeof(*f->since));
	f->group = xcalloc(n ? n : 1, sizeof(*f->group));
	f->calc = xcalloc(n ? n : 1, sizeof(*f->calc));
	for (size_t i = 0; i < n; i++) {
		f->since[i] = v[i].since;
		f->group[i] = v[i].group ? xstrdup(v[i].group) : NULL;
	}
	*out = f;
	return 0;
}

int tpf_report_follow_open_fleet(struct tpf_report_follow **out, const struct tpf_fleet *f,
				 int want_spans, struct tpf_diags *d)
{
	struct tpf_ledger_where w;
	struct tpf_backend_gcs_config gcs;
	tpf_fleet_ledger_where(f, &w, &gcs);
	struct tpf_report_view all = { -1, NULL };
	return tpf_report_follow_open(out, &w, &all, 1, want_spans, d);
}

static void views_restart(struct tpf_report_follow *f)
{
	for (size_t i = 0; i < f->n; i++) {
		tpf_report_calc_free(f->calc[i]);
		f->calc[i] = tpf_report_calc_new(f->since[i], f->group[i], f->want_spans);
	}
}

void tpf_report_follow_free(struct tpf_report_follow *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++) {
		tpf_report_calc_free(f->calc[i]);
		free(f->group[i]);
	}
	free(f->calc);
	free(f->group);
	free(f->since);
	tpf_ledger_cursor_free(f->cur);
	free(f);
}

/* Feed every view; 1 when one of them cannot take the lines (a line
 * late for its node). */
static int feed(struct tpf_report_follow *f, json_t *records)
{
	for (size_t i = 0; i < f->n; i++)
		if (tpf_report_calc_feed(f->calc[i], records, 1e300))
			return 1;
	return 0;
}

int tpf_report_follow_update(struct tpf_report_follow *f, json_t **records, int *from_start,
			     struct tpf_diags *d)
{
	json_t *recs = NULL;
	int fresh = 0;
	if (records)
		*records = NULL;
	*from_start = 0;
	for (int pass = 0; pass < 2; pass++) {
		if (tpf_ledger_cursor_read(f->cur, &recs, &fresh, NULL, NULL, d)) {
			views_restart(f); /* the cursor starts over: so do the views */
			return TPF_ERROR;
		}
		if (fresh || !f->calc[0])
			views_restart(f);
		if (!feed(f, recs))
			break;
		/* A line late for its node: replay everything in order. */
		json_decref(recs);
		recs = NULL;
		tpf_ledger_cursor_rewind(f->cur);
		views_restart(f);
		fresh = 1;
	}
	*from_start = fresh;
	if (records)
		*records = recs;
	else
		json_decref(recs);
	return 0;
}

void tpf_report_follow_result(const struct tpf_report_follow *f, size_t i, double until,
			      const struct tpf_prices *prices, struct tpf_report *r)
{
	struct tpf_report_calc *empty = NULL;
	if (!f->calc[i])
		empty = tpf_report_calc_new(f->since[i], f->group[i], f->want_spans);
	tpf_report_calc_result(f->calc[i] ? f->calc[i] : empty, until, prices, r);
	tpf_report_calc_free(empty);
}
