/*
 * The report as JSON (engine/ledger/report.h tpf_report_to_json); the text form
 * is cmd/cmd_report.c's, from the same object.
 */
#include "engine/ledger/ledger_writer.h"
#include "engine/ledger/report.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* x rounded to `scale` (1e6: micro), without libm. */
static double rounded(double x, double scale)
{
	return (double)(long long)(x * scale + (x >= 0 ? 0.5 : -0.5)) / scale;
}

/* Chip-hours rounded to 1e-6, so the JSON is stable and readable. */
static json_t *hours(double h)
{
	return json_real(rounded(h, 1e6));
}

static double billed_of(const struct tpf_report_row *row)
{
	return tpf_report_row_billed(row);
}

static json_t *row_json(const struct tpf_report_row *row)
{
	json_t *o = json_object();
	json_object_set_new(o, "group", row->group ? json_string(row->group) : json_null());
	json_object_set_new(o, "zone", row->zone ? json_string(row->zone) : json_null());
	json_object_set_new(o, "class", row->cls ? json_string(row->cls) : json_null());
	json_object_set_new(o, "chip", row->chip ? json_string(row->chip) : json_null());
	double billed = billed_of(row);
	json_object_set_new(o, "billed_chip_hours", hours(billed));
	json_t *by = json_object();
	for (int b = 0; b < TPF_RB_N; b++)
		if (b != TPF_RB_WAITING_CAPACITY || row->chip_hours[b] > 0)
			json_object_set_new(by, tpf_report_bucket_name(b), hours(row->chip_hours[b]));
	json_object_set_new(o, "chip_hours", by);
	json_object_set_new(o, "goodput", billed > 0 ? json_real(row->chip_hours[TPF_RB_GOODPUT] / billed)
						    : json_null());
	json_object_set_new(o, "preemptions", json_integer(row->preemptions));
	json_object_set_new(o, "restarts", json_integer(row->restarts));
	json_object_set_new(o, "preflight_failures", json_integer(row->preflight_failures));
	json_object_set_new(o, "bad_hosts", json_integer(row->bad_hosts));
	if (row->price) {
		json_object_set_new(o, "usd_per_chip_hour", json_real(row->price->usd_per_chip_hour));
		json_object_set_new(o, "cost_usd_estimate",
				    json_real(rounded(billed * row->price->usd_per_chip_hour, 100)));
		char src[48];
		json_object_set_new(o, "price_source",
				    json_string(tpf_price_source(row->price, src, sizeof(src))));
		if (row->price->sku)
			json_object_set_new(o, "price_sku", json_string(row->price->sku));
	} else {
		json_object_set_new(o, "usd_per_chip_hour", json_null());
		json_object_set_new(o, "cost_usd_estimate", json_null());
		json_object_set_new(o, "price_source", json_string("missing"));
	}
	return o;
}

struct totals {
	double by[TPF_RB_N], billed, node_hours, usd;
	long preemptions, restarts, unpriced, preflight_failures, bad_hosts;
};

static void add_up(const struct tpf_report *r, struct totals *t)
{
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < r->nrows; i++) {
		const struct tpf_report_row *row = &r->rows[i];
		for (int b = 0; b < TPF_RB_N; b++)
			t->by[b] += row->chip_hours[b];
		t->node_hours += row->node_hours;
		t->preemptions += row->preemptions;
		t->restarts += row->restarts;
		t->preflight_failures += row->preflight_failures;
		t->bad_hosts += row->bad_hosts;
	}
	tpf_report_spend(r, &t->billed, &t->usd, &t->unpriced);
}

/* The prices the rows used that came from the fleet file, and the
 * built-in ones no source confirmed, each once. */
static json_t *prices_json(const struct tpf_report *r)
{
	const struct tpf_prices *in_use = r->prices;
	json_t *cat = in_use ? in_use->catalog_doc : NULL;
	json_t *o = json_pack("{s:s,s:s,s:s}", "date", cat ? in_use->catalog_date : tpf_prices_date(),
			      "source",
			      cat ? json_string_value(json_object_get(cat, "source"))
				  : "https://cloud.google.com/tpu/pricing",
			      "note", "an estimate from list prices, not a bill");
	if (cat)
		json_object_set(o, "catalog_fetched", json_object_get(cat, "fetched"));
	json_t *fleet = json_array(), *unverified = json_array();
	for (size_t i = 0; i < r->nrows; i++) {
		const struct tpf_price *p = r->rows[i].price;
		int seen = 0;
		for (size_t j = 0; p && j < i; j++)
			seen |= r->rows[j].price == p;
		if (!p || seen || (!p->from_fleet && !p->unverified))
			continue;
		json_t *e = json_pack("{s:s,s:s,s:f}", "chip", p->chip, "class", p->class,
				      "usd_per_chip_hour", p->usd_per_chip_hour);
		if (p->from_fleet)
			json_object_set_new(e, "region", p->region ? json_string(p->region) : json_null());
		json_array_append_new(p->from_fleet ? fleet : unverified, e);
	}
	json_object_set_new(o, "from_fleet_file", fleet);
	json_object_set_new(o, "unverified", unverified);
	return o;
}

static json_t *totals_json(const struct tpf_report *r, const struct totals *t)
{
	json_t *o = json_object();
	json_object_set_new(o, "billed_chip_hours", hours(t->billed));
	json_object_set_new(o, "goodput_chip_hours", hours(t->by[TPF_RB_GOODPUT]));
	json_object_set_new(o, "goodput", t->billed > 0 ? json_real(t->by[TPF_RB_GOODPUT] / t->billed)
						       : json_null());
	json_t *bad = json_object();
	double badsum = 0;
	for (int b = TPF_RB_GOODPUT + 1; b < TPF_RB_N; b++) {
		if (b == TPF_RB_WAITING_CAPACITY && t->by[b] <= 0)
			continue; /* elastic only */
		json_object_set_new(bad, tpf_report_bucket_name(b), hours(t->by[b]));
		badsum += t->by[b];
	}
	json_object_set_new(o, "badput", bad);
	json_object_set_new(o, "badput_chip_hours", hours(badsum));
	json_object_set_new(o, "ml_goodput", tpf_report_ml_json(r, NULL));
	json_object_set_new(o, "preemptions", json_integer(t->preemptions));
	json_object_set_new(o, "restarts", json_integer(t->restarts));
	json_object_set_new(o, "preflight_failures", json_integer(t->preflight_failures));
	json_object_set_new(o, "bad_hosts", json_integer(t->bad_hosts));
	double node_days = t->node_hours / 24;
	json_object_set_new(o, "node_days", json_real(node_days));
	json_object_set_new(o, "preemptions_per_node_day",
			    node_days > 0 ? json_real(t->preemptions / node_days) : json_null());
	json_object_set_new(o, "mean_hours_between_preemptions",
			    t->preemptions ? json_real(t->node_hours / t->preemptions) : json_null());
	double *rec = r->nrecoveries ? xmalloc(r->nrecoveries * sizeof(double)) : NULL;
	if (rec)
		memcpy(rec, r->recoveries, r->nrecoveries * sizeof(double));
	json_t *recov = json_object();
	json_object_set_new(recov, "n", json_integer((json_int_t)r->nrecoveries));
	json_object_set_new(recov, "p50", rec ? json_real(tpf_report_percentile(rec, r->nrecoveries, 50)) : json_null());
	json_object_set_new(recov, "p99", rec ? json_real(tpf_report_percentile(rec, r->nrecoveries, 99)) : json_null());
	free(rec);
	json_object_set_new(o, "preemption_to_running_seconds", recov);
	json_object_set_new(o, "cost_usd_estimate", json_real(rounded(t->usd, 100)));
	json_object_set_new(o, "rows_without_price", json_integer(t->unpriced));
	/* Rows billed without a price are left out of the sum: it is then
	 * only a lower bound of the cost (issue 29 item 2). */
	json_object_set_new(o, "cost_usd_estimate_lower_bound", json_boolean(t->unpriced > 0));
	return o;
}

static json_t *when(double t)
{
	if (t < 0)
		return json_null();
	char ts[40];
	tpf_ledger_time(t, ts, sizeof(ts));
	return json_string(ts);
}

json_t *tpf_report_to_json(const struct tpf_report *r)
{
	struct totals t;
	add_up(r, &t);
	json_t *o = json_object();
	json_object_set_new(o, "since", when(r->since));
	json_object_set_new(o, "until", when(r->until));
	json_object_set_new(o, "first_event", when(r->first));
	json_object_set_new(o, "last_event", when(r->last));
	json_object_set_new(o, "events", json_integer(r->events));
	json_object_set_new(o, "skipped_lines", json_integer(r->skipped));
	json_object_set_new(o, "totals", totals_json(r, &t));
	json_t *rows = json_array();
	for (size_t i = 0; i < r->nrows; i++) {
		json_t *row = row_json(&r->rows[i]), *ml = tpf_report_ml_json(r, &r->rows[i]);
		json_object_set(row, "ml_badput_chip_hours", json_object_get(ml, "badput_chip_hours"));
		json_decref(ml);
		json_array_append_new(rows, row);
	}
	json_object_set_new(o, "rows", rows);
	json_object_set_new(o, "prices", prices_json(r));
	return o;
}
