/*
 * tpuform report: what the fleet did and what it cost, from the run ledger
 * (engine/ledger/report.h computes; this file parses flags and prints).
 */
#include "cmd/cmd.h"
#include "engine/ledger/ledger_writer.h"
#include "engine/ledger/price_catalog.h"
#include "engine/ledger/report.h"
#include "util/outfile.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
	const char *since;
	const char *group;
	const char *html;
} report_o;

static const struct tpf_flag report_flags[] = {
	TPF_STR("since", "DURATION|TIME", &report_o.since,
		"count only from DURATION ago (24h, 7d) or from TIME (RFC 3339)"),
	TPF_STR("group", "G", &report_o.group, "only the nodes of group G"),
	TPF_STR("html", "FILE", &report_o.html,
		"also write the report as one self-contained HTML page with a timeline to FILE"),
	TPF_FLAGS_END,
};

/* -since: a duration back from now, or an RFC 3339 time; -1 when absent. */
static int parse_since(const char *v, double now, double *since, struct tpf_diags *d)
{
	*since = -1;
	if (!v)
		return 0;
	/* The one duration grammar (util/timeutil.h), days included; a time
	 * that does not exist (February 30th) is an error, never moved on. */
	double secs = 0;
	int rc = tpf_parse_duration(v, &secs);
	if (rc == 0 && now - secs >= 0) {
		*since = now - secs;
		return 0;
	}
	if (rc == 0 || rc == -2)
		return tpf_errorx(d, NULL, "Give a shorter duration, or a time (2026-01-02T15:04:05Z).",
				  "invalid value \"%s\" for -since: %s", v,
				  rc == -2 ? "longer than 36500d, the longest duration tpuform takes"
					   : "it reaches back before 1970");
	double t = tpf_parse_rfc3339(v);
	if (t >= 0) {
		*since = t;
		return 0;
	}
	return tpf_errorx(d, NULL,
			  "Give " TPF_DURATION_EXAMPLES ", back from now, or a time that exists "
			  "(RFC 3339, such as 2026-01-02T15:04:05Z).",
			  "invalid value \"%s\" for -since", v);
}

/*
 * -group G names a group of the fleet file, or one the ledger holds events
 * of (a group since removed): else an error listing the fleet's groups
 * (issue 26: "no events" for a typo).
 */
static int check_group(const struct tpf_fleet *f, json_t *records, const char *group,
		       struct tpf_diags *d)
{
	if (!group)
		return 0;
	for (size_t i = 0; i < f->ngroups; i++)
		if (!strcmp(f->groups[i].name, group))
			return 0;
	size_t i;
	json_t *r;
	json_array_foreach(records, i, r) {
		const char *g = json_string_value(json_object_get(r, "group"));
		if (g && !strcmp(g, group))
			return 0;
	}
	struct tpf_buf names = TPF_BUF_INIT;
	for (size_t k = 0; k < f->ngroups; k++)
		tpf_buf_addf(&names, "%s'%s'", k ? ", " : "", f->groups[k].name);
	char *hint = xasprintf("the groups of fleet '%s': %s", f->name,
			       f->ngroups ? names.buf : "none");
	int rc = tpf_errorx(d, NULL, hint,
			    "invalid value \"%s\" for -group: no group '%s' in the fleet file %s, "
			    "and the run ledger has no events of one", group, group, f->path);
	free(hint);
	tpf_buf_release(&names);
	return rc;
}

static double num(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static void say_rows(json_t *rows)
{
	tpf_ui_say("%-16s %-14s %-12s %-5s %12s %8s %6s %9s %11s  %s\n", "GROUP", "ZONE", "CLASS",
		   "CHIP", "CHIP-HOURS", "GOODPUT", "LOST", "RESTARTS", "EST. USD", "PRICE");
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r) {
		json_t *g = json_object_get(r, "goodput"), *usd = json_object_get(r, "cost_usd_estimate");
		char gp[16] = "-", cost[24] = "no price";
		if (json_is_number(g))
			snprintf(gp, sizeof(gp), "%.1f%%", 100 * json_number_value(g));
		if (json_is_number(usd))
			snprintf(cost, sizeof(cost), "%.2f", json_number_value(usd));
		const char *grp = json_string_value(json_object_get(r, "group"));
		const char *zone = json_string_value(json_object_get(r, "zone"));
		const char *cls = json_string_value(json_object_get(r, "class"));
		const char *chip = json_string_value(json_object_get(r, "chip"));
		const char *src = json_string_value(json_object_get(r, "price_source"));
		tpf_ui_say("%-16s %-14s %-12s %-5s %12.3f %8s %6lld %9lld %11s  %s\n", grp ? grp : "-",
			   zone ? zone : "-", cls ? cls : "-", chip ? chip : "-",
			   num(r, "billed_chip_hours"), gp,
			   (long long)json_integer_value(json_object_get(r, "preemptions")),
			   (long long)json_integer_value(json_object_get(r, "restarts")), cost,
			   src ? src : "-");
	}
}

/* Which prices came from the fleet file, and which built-in ones no
 * source confirmed (docs/ledger.md "Prices"). */
static void say_price_notes(json_t *prices)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(prices, "from_fleet_file"), i, e) {
		const char *region = json_string_value(json_object_get(e, "region"));
		tpf_ui_say("Price from the fleet file: %s %s%s%s $%g per chip-hour\n",
			   json_string_value(json_object_get(e, "chip")),
			   json_string_value(json_object_get(e, "class")), region ? " in " : "",
			   region ? region : "", num(e, "usd_per_chip_hour"));
	}
	json_array_foreach(json_object_get(prices, "unverified"), i, e)
		tpf_ui_say("Unverified built-in price: %s %s $%g per chip-hour (no source confirmed "
			   "it; give prices: in the fleet file)\n",
			   json_string_value(json_object_get(e, "chip")),
			   json_string_value(json_object_get(e, "class")), num(e, "usd_per_chip_hour"));
}

/* Hosts' faults apart from jobs': failed preflights and bad hosts, with
 * the zones they were in (docs/recovery.md "Preflight"). Nothing when
 * there were none. */
static void say_bad_hosts(json_t *doc)
{
	json_t *t = json_object_get(doc, "totals");
	long long bad = json_integer_value(json_object_get(t, "bad_hosts"));
	long long pf = json_integer_value(json_object_get(t, "preflight_failures"));
	if (!bad && !pf)
		return;
	tpf_ui_say("Bad hosts: %lld replaced; failed preflights: %lld", bad, pf);
	size_t i;
	json_t *r;
	const char *sep = " (";
	json_array_foreach(json_object_get(doc, "rows"), i, r) {
		long long rb = json_integer_value(json_object_get(r, "bad_hosts"));
		long long rp = json_integer_value(json_object_get(r, "preflight_failures"));
		const char *zone = json_string_value(json_object_get(r, "zone"));
		if (!rb && !rp)
			continue;
		tpf_ui_say("%szone %s: %lld bad, %lld failed", sep, zone ? zone : "-", rb, rp);
		sep = "; ";
	}
	tpf_ui_say("%s\n", *sep == ';' ? ")" : "");
}

static void say_totals(json_t *doc)
{
	json_t *t = json_object_get(doc, "totals"), *bad = json_object_get(t, "badput");
	json_t *g = json_object_get(t, "goodput");
	tpf_ui_say("\nBilled: %.3f chip-hours (create to delete; waits for capacity not counted)\n",
		   num(t, "billed_chip_hours"));
	if (json_is_number(g))
		tpf_ui_say("Goodput: %.3f chip-hours, %.1f%% of billed (every worker ran the job)\n",
			   num(t, "goodput_chip_hours"), 100 * json_number_value(g));
	tpf_ui_say("Badput: %.3f chip-hours:", num(t, "badput_chip_hours"));
	const char *k;
	json_t *v;
	json_object_foreach(bad, k, v)
		tpf_ui_say(" %s %.3f", k, json_number_value(v));
	tpf_ui_say("\n");
	json_t *rec = json_object_get(t, "preemption_to_running_seconds");
	tpf_ui_say("Preemptions: %lld", (long long)json_integer_value(json_object_get(t, "preemptions")));
	if (json_is_number(json_object_get(t, "preemptions_per_node_day")))
		tpf_ui_say(", %.2f per node-day, one per %.1f node-hours",
			   num(t, "preemptions_per_node_day"), num(t, "mean_hours_between_preemptions"));
	if (json_is_number(json_object_get(rec, "p50")))
		tpf_ui_say("; back to running after p50 %.0f s, p99 %.0f s", num(rec, "p50"),
			   num(rec, "p99"));
	tpf_ui_say("\nRestarts: %lld\n", (long long)json_integer_value(json_object_get(t, "restarts")));
	say_bad_hosts(doc);
	json_t *prices = json_object_get(doc, "prices");
	int lower = json_is_true(json_object_get(t, "cost_usd_estimate_lower_bound"));
	tpf_ui_say("Estimated cost: %s$%.2f at list prices of %s (%s); an estimate, not a bill.\n",
		   lower ? "at least " : "", num(t, "cost_usd_estimate"), json_string_value(json_object_get(prices, "date")),
		   json_string_value(json_object_get(prices, "source")));
	say_price_notes(prices);
	long long unpriced = json_integer_value(json_object_get(t, "rows_without_price"));
	if (unpriced)
		tpf_ui_say("%lld row%s had no price (spot prices change with supply) and "
			   "%s not in the estimate: the cost is a lower bound.\n",
			   unpriced, unpriced == 1 ? "" : "s", unpriced == 1 ? "is" : "are");
}

static void say_report(const struct tpf_fleet *f, json_t *doc)
{
	json_t *first = json_object_get(doc, "first_event");
	if (!json_is_string(first)) {
		tpf_ui_say("Fleet %s: the run ledger has no events%s.\n", f->name,
			   report_o.since || report_o.group ? " in this window" : "");
		return;
	}
	tpf_ui_say("Fleet %s: %s to %s, %lld events\n\n", f->name, json_string_value(first),
		   json_string_value(json_object_get(doc, "last_event")),
		   (long long)json_integer_value(json_object_get(doc, "events")));
	say_rows(json_object_get(doc, "rows"));
	say_totals(doc);
}

static int run_report(struct tpf_cmd_ctx *ctx)
{
	struct tpf_pipeline *s = &ctx->s;
	double now = tpf_now_wall(), since = -1;
	if (parse_since(report_o.since, now, &since, ctx->d))
		return TPF_EXIT_ERROR;
	struct tpf_ledger_where w;
	struct tpf_backend_gcs_config gcs;
	tpf_fleet_ledger_where(&s->fleet, &w, &gcs);
	json_t *records = NULL;
	size_t skipped = 0, dropped = 0;
	if (tpf_ledger_read(&w, &records, &skipped, &dropped, ctx->d))
		return TPF_EXIT_ERROR;
	if (check_group(&s->fleet, records, report_o.group, ctx->d)) {
		json_decref(records);
		return TPF_EXIT_ERROR;
	}
	if (dropped)
		tpf_warn(ctx->d, NULL,
			 "the run ledger is larger than the report reads (%zu MiB): %zu bytes of "
			 "its oldest segments were left out",
			 TPF_LEDGER_READ_MAX >> 20, dropped);
	struct tpf_prices prices;
	tpf_prices_load(&s->fleet, &prices, ctx->d);
	struct tpf_report r = { .want_spans = report_o.html != NULL };
	tpf_report_compute_priced(records, since, now, report_o.group, &prices, &r);
	r.skipped += (long)skipped;
	json_t *doc = tpf_report_to_json(&r);
	json_object_set_new(doc, "fleet", json_string(s->fleet.name));
	int code = TPF_EXIT_OK;
	if (report_o.html) {
		struct tpf_buf page = TPF_BUF_INIT;
		tpf_report_html(&r, doc, s->fleet.name, &page);
		if (tpf_outfile_write(report_o.html, page.buf, page.len, 0644, ctx->d))
			code = TPF_EXIT_ERROR;
		tpf_buf_release(&page);
	}
	if (ctx->o.json) {
		char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
		printf("%s\n", text);
		free(text);
	} else {
		say_report(&s->fleet, doc);
	}
	if (code == TPF_EXIT_OK && report_o.html && !ctx->o.json)
		tpf_ui_say("\nWrote the report's page to %s\n", report_o.html);
	json_decref(doc);
	tpf_report_release(&r);
	tpf_prices_release(&prices);
	json_decref(records);
	return code;
}

const struct tpf_cmd tpf_cmd_report = {
	.name = "report",
	.summary = "Show what the fleet did and what it cost",
	.description =
		"  Read the fleet's run ledger (every event plan, apply, destroy and watch\n"
		"  recorded beside the state) and show chip-hours billed per group, zone and\n"
		"  class, goodput (the share in which every worker of a node ran the job),\n"
		"  badput by cause, preemptions and restarts, and a cost estimate from list\n"
		"  prices. Reads no cloud API and takes no lock.\n",
	.footer = "The estimate uses Google's list prices as of the date it prints; it is not a bill.\n",
	.flags = report_flags,
	.needs = TPF_CMD_FLEET | TPF_CMD_JSON,
	.signals = TPF_SIG_STOP,
	.run = run_report,
};
