/*
 * The fleet's goodput in Cloud Monitoring (engine/telemetry/monitoring_export.h).
 */
#include "engine/telemetry/monitoring_export.h"
#include "engine/ledger/price_catalog.h"
#include "engine/ledger/report_follow.h"
#include "google/monitoring.h"
#include "util/env.h"
#include "util/str.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define METRIC_PREFIX "custom.googleapis.com/tpuform/"
#define EXPORT_EVERY 60.0 /* seconds between writes: at most once a minute */
/* $TPUFORM_MONITORING_INTERVAL (tests only) is raised to this: Cloud
 * Monitoring takes a point of a series at most every 5 seconds. */
#define EXPORT_FLOOR 5.0

struct tpf_monitoring_export {
	struct tpf_monitoring *api;
	char *project;
	struct tpf_report_follow *follow;
	int described; /* the descriptors are created */
	double last;   /* monotonic time of the last write; 0: never */
	/* The end time (wall seconds) of the last points written: the next
	 * ones must end at least EXPORT_FLOOR later (Cloud Monitoring refuses
	 * points of one series written more often than every 5 s). The round's
	 * monotonic start alone is not enough: a slow read of the ledger before
	 * one write and a fast one before the next put their points closer. */
	double last_end;
};

enum metric { M_GOODPUT, M_CHIP_HOURS, M_BADPUT, M_COST, M_N };

static const struct {
	const char *name, *display, *unit, *description;
} metrics[M_N] = {
	[M_GOODPUT] = { "goodput_ratio", "Goodput", "1",
			"Goodput chip-hours over billed chip-hours, from tpuform's run ledger "
			"(docs/ledger.md)" },
	[M_CHIP_HOURS] = { "chip_hours", "Billed chip-hours", "h",
			   "Billed TPU chip-hours in tpuform's run ledger" },
	[M_BADPUT] = { "badput_chip_hours", "Badput chip-hours", "h",
		       "Billed chip-hours that were not goodput, by ml-goodput-measurement "
		       "badput category" },
	[M_COST] = { "cost_usd", "Estimated cost", "{USD}",
		     "Billed chip-hours at list prices, in US dollars (rows without a price "
		     "count 0)" },
};

int tpf_monitoring_export_open(struct tpf_monitoring_export **out, const struct tpf_fleet *f,
			       struct tpf_diags *d)
{
	*out = NULL;
	if (!f->monitoring.project)
		return 0;
	struct tpf_gcp_auth_config auth = {
		.credentials = f->gcp.credentials,
		.impersonate = f->gcp.impersonate_service_account,
		.quota_project = f->gcp.quota_project,
	};
	struct tpf_monitoring_export *e = xcalloc(1, sizeof(*e));
	if (tpf_monitoring_open(&e->api, &auth, d)) {
		free(e);
		return TPF_ERROR;
	}
	e->project = xstrdup(f->monitoring.project);
	*out = e;
	return 0;
}

void tpf_monitoring_export_free(struct tpf_monitoring_export *e)
{
	if (!e)
		return;
	tpf_monitoring_free(e->api);
	tpf_report_follow_free(e->follow);
	free(e->project);
	free(e);
}

static json_t *descriptor(enum metric m)
{
	json_t *labels = json_array();
	static const char *const keys[] = { "fleet", "group", "zone", "category" };
	for (size_t i = 0; i < (m == M_BADPUT ? 4u : 3u); i++)
		json_array_append_new(labels, json_pack("{s:s,s:s}", "key", keys[i], "valueType",
							"STRING"));
	char *type = xasprintf(METRIC_PREFIX "%s", metrics[m].name);
	json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:o}", "type", type, "metricKind", "GAUGE",
			      "valueType", "DOUBLE", "unit", metrics[m].unit, "displayName",
			      metrics[m].display, "description", metrics[m].description, "labels",
			      labels);
	free(type);
	return o;
}

/* One point of metric m for (group, zone[, category]) at time `at`. */
static json_t *series(const char *project, enum metric m, const char *fleet, const char *group,
		      const char *zone, const char *category, const char *at, double v)
{
	json_t *labels = json_pack("{s:s,s:s,s:s}", "fleet", fleet, "group", group ? group : "",
				   "zone", zone ? zone : "");
	if (category)
		json_object_set_new(labels, "category", json_string(category));
	char *type = xasprintf(METRIC_PREFIX "%s", metrics[m].name);
	json_t *o = json_pack("{s:{s:s,s:o},s:{s:s,s:{s:s}},s:s,s:s,s:[{s:{s:s},s:{s:f}}]}",
			      "metric", "type", type, "labels", labels, "resource", "type", "global",
			      "labels", "project_id", project, "metricKind", "GAUGE", "valueType",
			      "DOUBLE", "points", "interval", "endTime", at, "value", "doubleValue", v);
	free(type);
	return o;
}

/* The figures of one group and zone, summed over its rows. */
struct place {
	const char *group, *zone;
	double billed, good, usd, ml[TPF_MB_N];
};

static struct place *places(const struct tpf_report *r, size_t *n)
{
	struct place *p = xcalloc(r->nrows ? r->nrows : 1, sizeof(*p));
	size_t k = 0;
	for (size_t i = 0; i < r->nrows; i++) {
		const struct tpf_report_row *row = &r->rows[i];
		size_t j = 0;
		while (j < k && !(tpf_streq(p[j].group, row->group) && tpf_streq(p[j].zone, row->zone)))
			j++;
		if (j == k) {
			p[k].group = row->group;
			p[k++].zone = row->zone;
		}
		double billed = tpf_report_row_billed(row);
		p[j].billed += billed;
		p[j].good += row->chip_hours[TPF_RB_GOODPUT];
		if (row->price)
			p[j].usd += billed * row->price->usd_per_chip_hour;
		for (int m = 0; m < TPF_MB_N; m++)
			p[j].ml[m] += row->ml_chip_hours[m];
	}
	*n = k;
	return p;
}

/* Every series of r, at `at`. */
static json_t *all_series(const struct tpf_monitoring_export *e, const struct tpf_report *r,
			  const char *fleet, const char *at)
{
	json_t *out = json_array();
	size_t n = 0;
	struct place *p = places(r, &n);
	for (size_t i = 0; i < n; i++) {
		const char *g = p[i].group, *z = p[i].zone;
		if (p[i].billed > 0)
			json_array_append_new(out, series(e->project, M_GOODPUT, fleet, g, z, NULL, at,
							  p[i].good / p[i].billed));
		json_array_append_new(out, series(e->project, M_CHIP_HOURS, fleet, g, z, NULL, at,
						  p[i].billed));
		json_array_append_new(out, series(e->project, M_COST, fleet, g, z, NULL, at, p[i].usd));
		for (int m = 0; m < TPF_MB_N; m++)
			if (tpf_ml_badput_measured(m))
				json_array_append_new(out, series(e->project, M_BADPUT, fleet, g, z,
								  tpf_ml_badput_name(m), at, p[i].ml[m]));
	}
	free(p);
	return out;
}

/* Write series in requests of at most TPF_MONITORING_SERIES_MAX. */
static int write_all(struct tpf_monitoring_export *e, json_t *all, struct tpf_diags *d)
{
	size_t n = json_array_size(all);
	for (size_t from = 0; from < n; from += TPF_MONITORING_SERIES_MAX) {
		json_t *batch = json_array();
		for (size_t i = from; i < n && i < from + TPF_MONITORING_SERIES_MAX; i++)
			json_array_append(batch, json_array_get(all, i));
		int rc = tpf_monitoring_write(e->api, e->project, batch, d);
		json_decref(batch);
		if (rc)
			return rc;
	}
	return 0;
}

static int describe(struct tpf_monitoring_export *e, struct tpf_diags *d)
{
	for (int m = 0; m < M_N; m++) {
		json_t *desc = descriptor(m);
		int rc = tpf_monitoring_create_descriptor(e->api, e->project, desc, d);
		json_decref(desc);
		if (rc)
			return rc;
	}
	e->described = 1;
	return 0;
}

/* Read, compute, describe (once) and write. */
static int export_now(struct tpf_monitoring_export *e, const struct tpf_fleet *f,
		      struct tpf_diags *d)
{
	if (!e->follow && tpf_report_follow_open_fleet(&e->follow, f, 0, d))
		return TPF_ERROR;
	int from_start = 0;
	if (tpf_report_follow_update(e->follow, NULL, &from_start, d))
		return TPF_ERROR;
	if (!e->described && describe(e, d))
		return TPF_ERROR;
	struct tpf_prices prices;
	tpf_prices_load(f, &prices, NULL);
	double now = tpf_now_wall();
	if (e->last_end > 0 && now - e->last_end < EXPORT_FLOOR)
		return 0; /* the next round writes them */
	struct tpf_report r;
	tpf_report_follow_result(e->follow, 0, now, &prices, &r);
	char at[40];
	tpf_rfc3339_fmt(now, 3, 0, at, sizeof(at));
	json_t *all = all_series(e, &r, f->name, at);
	int rc = json_array_size(all) ? write_all(e, all, d) : 0;
	if (!rc && json_array_size(all))
		e->last_end = now;
	json_decref(all);
	tpf_report_release(&r);
	tpf_prices_release(&prices);
	return rc;
}

void tpf_monitoring_export_round(struct tpf_monitoring_export *e, const struct tpf_fleet *f,
				 double now_mono, struct tpf_diags *d)
{
	double every = EXPORT_EVERY;
	if (!e || tpf_env_seconds("TPUFORM_MONITORING_INTERVAL", &every, d))
		return;
	if (every < EXPORT_FLOOR)
		every = EXPORT_FLOOR;
	if (e->last > 0 && now_mono - e->last < every)
		return;
	e->last = now_mono;
	struct tpf_diags ed = TPF_DIAGS_INIT;
	if (export_now(e, f, &ed))
		tpf_warn(d, NULL, "the fleet's goodput was not written to Cloud Monitoring (project "
				  "'%s'): %s; trying again in %.0f s",
			 e->project, ed.n ? ed.items[0].summary : "unknown error", every);
	tpf_diags_release(&ed);
}
