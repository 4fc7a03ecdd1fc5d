/*
 * Budgets: spend per scope and period from the run ledger (engine/ledger/budget_spend.h).
 */
#include "engine/ledger/budget_spend.h"
#include "engine/ledger/ledger_writer.h"
#include "engine/ledger/price_catalog.h"
#include "engine/ledger/report.h"
#include "engine/ledger/report_follow.h"
#include "util/str.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

size_t tpf_budget_scopes(const struct tpf_fleet *f, double now, struct tpf_budget_status **out)
{
	size_t n = 0;
	struct tpf_budget_status *v = xcalloc(f->ngroups + 1, sizeof(*v));
	if (f->budget.unit != TPF_BUDGET_NONE)
		v[n++] = (struct tpf_budget_status){ .budget = &f->budget,
						     .on_budget = f->on_budget };
	for (size_t i = 0; i < f->ngroups; i++)
		if (f->groups[i].budget.unit != TPF_BUDGET_NONE)
			v[n++] = (struct tpf_budget_status){ .group = f->groups[i].name,
							     .budget = &f->groups[i].budget,
							     .on_budget = f->groups[i].on_budget };
	for (size_t i = 0; i < n; i++)
		tpf_budget_period(now, v[i].budget->per, &v[i].period_start, &v[i].period_end);
	*out = v;
	return n;
}

/* A budget_reached line of scope s inside its period. */
static int reported(json_t *records, const struct tpf_budget_status *s)
{
	size_t i;
	json_t *o;
	json_array_foreach(records, i, o) {
		const char *ev = json_string_value(json_object_get(o, "event"));
		if (!ev || strcmp(ev, "budget_reached"))
			continue;
		const char *g = json_string_value(json_object_get(o, "group"));
		if (!tpf_streq(g, s->group))
			continue;
		double t = tpf_parse_rfc3339(json_string_value(json_object_get(o, "ts")));
		if (t >= s->period_start && t < s->period_end)
			return 1;
	}
	return 0;
}

void tpf_budget_spend(const struct tpf_fleet *f, json_t *records, double now,
		      struct tpf_budget_status *v, size_t n)
{
	struct tpf_prices prices;
	tpf_prices_load(f, &prices, NULL);
	for (size_t i = 0; i < n; i++) {
		/* report's own replay, windowed to the period: a node up since
		 * before it counts from its start, one still up counts to now. */
		struct tpf_report r = { .want_spans = 0 };
		tpf_report_compute_priced(records, v[i].period_start, now, v[i].group, &prices, &r);
		double ch = 0, usd = 0;
		long unpriced = 0;
		tpf_report_spend(&r, &ch, &usd, &unpriced);
		v[i].spent = v[i].budget->unit == TPF_BUDGET_USD ? usd : ch;
		v[i].unpriced = v[i].budget->unit == TPF_BUDGET_USD ? unpriced : 0;
		v[i].reported = reported(records, &v[i]);
		tpf_report_release(&r);
	}
	tpf_prices_release(&prices);
}

int tpf_budget_measure(const struct tpf_fleet *f, double now, struct tpf_budget_status **out,
		       size_t *n, struct tpf_diags *d)
{
	*out = NULL;
	*n = 0;
	struct tpf_budget_status *v = NULL;
	size_t k = tpf_budget_scopes(f, now, &v);
	if (!k) {
		free(v);
		return 0;
	}
	const char *off = getenv("TPUFORM_LEDGER");
	if (off && !strcmp(off, "off")) {
		tpf_warn(d, NULL, "budgets are not enforced: the run ledger they are measured from "
				  "is off (TPUFORM_LEDGER=off)");
		free(v);
		return 0;
	}
	struct tpf_ledger_where w;
	struct tpf_backend_gcs_config gcs;
	tpf_fleet_ledger_where(f, &w, &gcs);
	json_t *records = NULL;
	struct tpf_diags rd = TPF_DIAGS_INIT;
	if (!w.gcs && !w.state_path) {
		records = json_array(); /* no state location: nothing recorded yet */
	} else if (tpf_ledger_read(&w, &records, NULL, NULL, &rd)) {
		tpf_warn(d, NULL, "budgets are not enforced this run: the run ledger could not be "
				  "read: %s", rd.n ? rd.items[0].summary : "unknown error");
		tpf_diags_release(&rd);
		free(v);
		return 0;
	}
	tpf_diags_release(&rd);
	tpf_budget_spend(f, records, now, v, k);
	json_decref(records);
	*out = v;
	*n = k;
	return 0;
}

static void cache_forget(struct tpf_budget_cache *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->groups[i]);
	free(c->groups);
	free(c->v);
	free(c->budgets);
	c->groups = NULL;
	c->v = NULL;
	c->budgets = NULL;
	c->n = 0;
	c->at = 0;
}

void tpf_budget_cache_release(struct tpf_budget_cache *c)
{
	cache_forget(c);
	tpf_report_follow_free(c->follow);
	free(c->reported);
	memset(c, 0, sizeof(*c));
}

/* Does c hold the spend of exactly the scopes v[0..n) (its time aside)? */
static int cache_fits(const struct tpf_budget_cache *c, const struct tpf_budget_status *v,
		      size_t n)
{
	if (c->n != n || !c->groups)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct tpf_budget *a = &c->budgets[i], *b = v[i].budget;
		if (strcmp(c->groups[i], v[i].group ? v[i].group : "") || a->unit != b->unit ||
		    a->amount != b->amount || a->per != b->per ||
		    c->v[i].period_start != v[i].period_start)
			return 0;
	}
	return 1;
}

static void cache_store(struct tpf_budget_cache *c, const struct tpf_budget_status *v, size_t n,
			double now_mono)
{
	cache_forget(c);
	c->at = now_mono > 0 ? now_mono : 1e-9;
	c->n = n;
	c->groups = xcalloc(n ? n : 1, sizeof(*c->groups));
	c->v = xcalloc(n ? n : 1, sizeof(*c->v));
	c->budgets = xcalloc(n ? n : 1, sizeof(*c->budgets));
	for (size_t i = 0; i < n; i++) {
		c->groups[i] = xstrdup(v[i].group ? v[i].group : "");
		c->budgets[i] = *v[i].budget;
		c->v[i] = v[i];
		c->v[i].group = NULL;
		c->v[i].budget = NULL;
	}
}

/* The follower of the scopes v[0..k) (a new one when the scopes are not
 * those it follows), brought up to date: only the new lines are read. */
static int follow_measure(const struct tpf_fleet *f, double now, struct tpf_budget_cache *c,
			  struct tpf_budget_status *v, size_t k, struct tpf_diags *d)
{
	if (!cache_fits(c, v, k)) {
		tpf_report_follow_free(c->follow);
		c->follow = NULL;
	}
	struct tpf_ledger_where w;
	struct tpf_backend_gcs_config gcs;
	tpf_fleet_ledger_where(f, &w, &gcs);
	if (!c->follow) {
		struct tpf_report_view *views = xcalloc(k, sizeof(*views));
		for (size_t i = 0; i < k; i++)
			views[i] = (struct tpf_report_view){ v[i].period_start, v[i].group };
		int rc = tpf_report_follow_open(&c->follow, &w, views, k, 0, d);
		free(views);
		free(c->reported);
		c->reported = xcalloc(k, sizeof(*c->reported));
		if (rc)
			return rc;
	}
	json_t *records = NULL;
	int from_start = 0;
	if (tpf_report_follow_update(c->follow, &records, &from_start, d))
		return TPF_ERROR;
	struct tpf_prices prices;
	tpf_prices_load(f, &prices, NULL);
	for (size_t i = 0; i < k; i++) {
		struct tpf_report r;
		tpf_report_follow_result(c->follow, i, now, &prices, &r);
		double ch = 0, usd = 0;
		long unpriced = 0;
		tpf_report_spend(&r, &ch, &usd, &unpriced);
		v[i].spent = v[i].budget->unit == TPF_BUDGET_USD ? usd : ch;
		v[i].unpriced = v[i].budget->unit == TPF_BUDGET_USD ? unpriced : 0;
		c->reported[i] = (from_start ? 0 : c->reported[i]) || reported(records, &v[i]);
		v[i].reported = c->reported[i];
		tpf_report_release(&r);
	}
	tpf_prices_release(&prices);
	json_decref(records);
	return 0;
}

int tpf_budget_measure_cached(const struct tpf_fleet *f, double now, double now_mono,
			      double every, struct tpf_budget_cache *c,
			      struct tpf_budget_status **out, size_t *n, struct tpf_diags *d)
{
	if (!c)
		return tpf_budget_measure(f, now, out, n, d);
	*out = NULL;
	*n = 0;
	struct tpf_budget_status *v = NULL;
	size_t k = tpf_budget_scopes(f, now, &v);
	if (k && c->at && now_mono - c->at < every && cache_fits(c, v, k)) {
		for (size_t i = 0; i < k; i++) {
			v[i].spent = c->v[i].spent;
			v[i].unpriced = c->v[i].unpriced;
			v[i].reported = c->v[i].reported;
		}
		*out = v;
		*n = k;
		return 0;
	}
	struct tpf_ledger_where w;
	struct tpf_backend_gcs_config gcs;
	tpf_fleet_ledger_where(f, &w, &gcs);
	const char *off = getenv("TPUFORM_LEDGER");
	if (!k || (off && !strcmp(off, "off")) || (!w.gcs && !w.state_path)) {
		free(v); /* nothing to follow: as tpf_budget_measure says */
		return tpf_budget_measure(f, now, out, n, d);
	}
	struct tpf_diags rd = TPF_DIAGS_INIT;
	if (follow_measure(f, now, c, v, k, &rd)) {
		tpf_warn(d, NULL, "budgets are not enforced this run: the run ledger could not be "
				  "read: %s", rd.n ? rd.items[0].summary : "unknown error");
		tpf_diags_release(&rd);
		tpf_budget_cache_release(c);
		free(v);
		return 0;
	}
	tpf_diags_release(&rd);
	cache_store(c, v, k, now_mono);
	*out = v;
	*n = k;
	return 0;
}
