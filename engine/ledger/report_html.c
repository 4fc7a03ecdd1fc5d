/*
 * The report as one self-contained HTML page (engine/ledger/report.h
 * tpf_report_html): inline CSS and SVG, no script, no network.
 */
#include "engine/events.h"
#include "engine/ledger/ledger_writer.h"
#include "engine/ledger/report.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#define WIDTH 1100.0   /* the timeline's drawing width, px */
#define LABEL 220      /* the label column, px */
#define ROW 14         /* px per row */
#define BINS 550       /* columns of an aggregated (per-group) row */

static const char *const colour[TPF_RP_N] = {
	[TPF_RP_WAITING] = "#d0d0d0",  [TPF_RP_PROVISIONING] = "#9ecae1",
	[TPF_RP_SETUP] = "#4292c6",    [TPF_RP_RUNNING] = "#31a354",
	[TPF_RP_RESTART] = "#fd8d3c",  [TPF_RP_STALLED] = "#e6550d",
	[TPF_RP_IDLE] = "#bcbddc",
};

/* Text for HTML, escaped (&, <, >, ", '). */
static void esc(struct tpf_buf *b, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': tpf_buf_adds(b, "&amp;"); break;
		case '<': tpf_buf_adds(b, "&lt;"); break;
		case '>': tpf_buf_adds(b, "&gt;"); break;
		case '"': tpf_buf_adds(b, "&quot;"); break;
		case '\'': tpf_buf_adds(b, "&#39;"); break;
		default: tpf_buf_addch(b, *s);
		}
	}
}

static void when(struct tpf_buf *b, double t)
{
	char ts[40];
	tpf_ledger_time(t, ts, sizeof(ts));
	tpf_buf_adds(b, ts);
}

struct frame {
	double t0, t1; /* the timeline's window */
};

static double xof(const struct frame *f, double t)
{
	double x = (t - f->t0) / (f->t1 - f->t0) * WIDTH;
	return LABEL + (x < 0 ? 0 : x > WIDTH ? WIDTH : x);
}

static void head(struct tpf_buf *b, const char *fleet)
{
	tpf_buf_adds(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
			"<title>tpuform report: ");
	esc(b, fleet);
	tpf_buf_adds(b, "</title><style>\n"
			"body{font:13px system-ui,sans-serif;margin:16px;color:#222}\n"
			"h1{font-size:18px}h2{font-size:15px;margin-top:20px}\n"
			"table{border-collapse:collapse}td,th{padding:2px 8px;border-bottom:1px solid #ddd;"
			"text-align:right}td:first-child,th:first-child{text-align:left}\n"
			"svg{max-width:100%;height:auto}svg text{font:11px system-ui,sans-serif}.legend span{display:inline-block;"
			"width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}\n"
			"</style></head><body>\n<h1>tpuform report: fleet ");
	esc(b, fleet);
	tpf_buf_adds(b, "</h1>\n");
}

static void legend(struct tpf_buf *b)
{
	tpf_buf_adds(b, "<p class=\"legend\">");
	for (int p = 0; p < TPF_RP_N; p++)
		tpf_buf_addf(b, "<span style=\"background:%s\"></span>%s", colour[p],
			     tpf_report_phase_name(p));
	/* The marks are named apart from the phases: "restart" is a phase,
	 * the moment a job was restarted is a mark (one entry per kind). */
	tpf_buf_adds(b, "<span style=\"background:#c00\"></span>preemption mark"
			"<span style=\"background:#000\"></span>restart mark</p>\n");
}

/* An axis label, UTC: "Jan 03 06:00"; "06:00:30" past the first label of
 * a window under an hour, "06:00" under a day (the exact times are in the
 * tooltips). */
static void tick(struct tpf_buf *b, double t, double span, int first)
{
	time_t s = (time_t)t;
	struct tm tm;
	char out[40];
	size_t n = 0;
	if (gmtime_r(&s, &tm))
		n = first || span >= 86400 ? strftime(out, sizeof(out), "%b %d %H:%M", &tm)
		    : span >= 3600	   ? strftime(out, sizeof(out), "%H:%M", &tm)
					   : strftime(out, sizeof(out), "%H:%M:%S", &tm);
	if (!n)
		snprintf(out, sizeof(out), "?");
	tpf_buf_adds(b, out);
}

static void axis(struct tpf_buf *b, const struct frame *f, int rows)
{
	for (int i = 0; i <= 6; i++) {
		double t = f->t0 + (f->t1 - f->t0) * i / 6;
		double x = xof(f, t);
		tpf_buf_addf(b, "<line x1=\"%.1f\" y1=\"14\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>"
				"<text class=\"tick\" x=\"%.1f\" y=\"11\" text-anchor=\"%s\">",
			     x, x, 18 + rows * ROW, x, i == 0 ? "start" : i == 6 ? "end" : "middle");
		tick(b, t, f->t1 - f->t0, i == 0);
		tpf_buf_adds(b, "</text>\n");
	}
}

/* One row per node: each span a rect with its tooltip, each mark a line. */
static void node_rows(struct tpf_buf *b, const struct tpf_report *r, const struct frame *f)
{
	for (size_t u = 0; u < r->nnodes; u++) {
		tpf_buf_addf(b, "<g class=\"row\" data-node=\"");
		esc(b, r->nodes[u].name);
		tpf_buf_addf(b, "\"><text x=\"0\" y=\"%zu\">", 28 + u * ROW);
		esc(b, r->nodes[u].name);
		tpf_buf_adds(b, "</text></g>\n");
	}
	for (size_t i = 0; i < r->nspans; i++) {
		const struct tpf_report_span *s = &r->spans[i];
		double x0 = xof(f, s->from), x1 = xof(f, s->to);
		tpf_buf_addf(b, "<rect class=\"span\" x=\"%.2f\" y=\"%zu\" width=\"%.2f\" height=\"%d\" "
				"fill=\"%s\"><title>",
			     x0, 18 + s->node * ROW, x1 - x0 < 0.5 ? 0.5 : x1 - x0, ROW - 3,
			     colour[s->phase]);
		esc(b, r->nodes[s->node].name);
		tpf_buf_addf(b, " %s ", tpf_report_phase_name(s->phase));
		when(b, s->from);
		tpf_buf_adds(b, " to ");
		when(b, s->to);
		tpf_buf_adds(b, "</title></rect>\n");
	}
	for (size_t i = 0; i < r->nmarks; i++) {
		const struct tpf_report_mark *m = &r->marks[i];
		int pre = m->kind == TPF_EVENT_PREEMPTED;
		double x = xof(f, m->t);
		tpf_buf_addf(b, "<path class=\"%s\" d=\"M%.2f %zu l4 -7 h-8 z\" fill=\"%s\"><title>",
			     pre ? "preemption" : "restart", x, 18 + m->node * ROW + 7,
			     pre ? "#c00" : "#000");
		esc(b, r->nodes[m->node].name);
		tpf_buf_adds(b, pre ? " preempted (seen) at " : " restarted at ");
		when(b, m->t);
		tpf_buf_adds(b, "</title></path>\n");
	}
}

/* The group of node u, as an index into names (added when new). */
static size_t group_index(char ***names, size_t *n, const char *g)
{
	g = g ? g : "(none)";
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*names)[i], g))
			return i;
	*names = xrealloc(*names, (*n + 1) * sizeof(**names));
	(*names)[*n] = xstrdup(g);
	return (*n)++;
}

/* Past TPF_REPORT_HTML_ROWS nodes: one row per group, each of BINS columns
 * coloured by the phase that took most node-time in it. */
static void group_rows(struct tpf_buf *b, const struct tpf_report *r, const struct frame *f,
		       size_t *rows)
{
	char **names = NULL;
	size_t ng = 0;
	size_t *gof = xcalloc(r->nnodes ? r->nnodes : 1, sizeof(*gof));
	for (size_t u = 0; u < r->nnodes; u++)
		gof[u] = group_index(&names, &ng, r->nodes[u].group);
	double *bins = xcalloc(ng * BINS * TPF_RP_N + 1, sizeof(*bins));
	long *pre = xcalloc(ng * BINS + 1, sizeof(*pre));
	double w = (f->t1 - f->t0) / BINS;
	for (size_t i = 0; i < r->nspans; i++) {
		const struct tpf_report_span *s = &r->spans[i];
		size_t g = gof[s->node];
		long k0 = (long)((s->from - f->t0) / w); /* a span before the window: from 0 */
		for (long k = k0 < 0 ? 0 : k0; k < BINS && (double)k * w + f->t0 < s->to; k++) {
			double lo = f->t0 + (double)k * w, hi = lo + w;
			double a = s->from > lo ? s->from : lo, z = s->to < hi ? s->to : hi;
			if (z > a)
				bins[(g * BINS + (size_t)k) * TPF_RP_N + s->phase] += z - a;
		}
	}
	for (size_t i = 0; i < r->nmarks; i++) {
		long k = (long)((r->marks[i].t - f->t0) / w);
		if (r->marks[i].kind == TPF_EVENT_PREEMPTED && k >= 0 && k < BINS)
			pre[gof[r->marks[i].node] * BINS + (size_t)k]++;
	}
	for (size_t g = 0; g < ng; g++) {
		tpf_buf_adds(b, "<g class=\"row\" data-group=\"");
		esc(b, names[g]);
		tpf_buf_addf(b, "\"><text x=\"0\" y=\"%zu\">group ", 28 + g * ROW);
		esc(b, names[g]);
		tpf_buf_adds(b, "</text>");
		for (size_t k = 0; k < BINS; k++) {
			const double *v = &bins[(g * BINS + k) * TPF_RP_N];
			int best = -1;
			for (int p = 0; p < TPF_RP_N; p++)
				if (v[p] > 0 && (best < 0 || v[p] > v[best]))
					best = p;
			if (best >= 0)
				tpf_buf_addf(b, "<rect x=\"%.2f\" y=\"%zu\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>",
					     LABEL + k * WIDTH / BINS, 18 + g * ROW, WIDTH / BINS + 0.05,
					     ROW - 3, colour[best]);
			if (pre[g * BINS + k])
				tpf_buf_addf(b, "<path class=\"preemption\" d=\"M%.2f %zu l4 -7 h-8 z\" "
						"fill=\"#c00\"><title>%ld preemptions</title></path>",
					     LABEL + (k + 0.5) * WIDTH / BINS, 18 + g * ROW + 7,
					     pre[g * BINS + k]);
		}
		tpf_buf_adds(b, "</g>\n");
		free(names[g]);
	}
	*rows = ng;
	free(names);
	free(gof);
	free(bins);
	free(pre);
}

/* Goodput and each cause of badput as one stacked bar. */
static void bar(struct tpf_buf *b, json_t *totals)
{
	double billed = json_number_value(json_object_get(totals, "billed_chip_hours"));
	json_t *bad = json_object_get(totals, "badput");
	static const char *const parts[] = { "goodput", "setup", "restart", "stalled",
					     "preempted", "idle" };
	static const char *const fill[] = { "#31a354", "#4292c6", "#fd8d3c", "#e6550d",
					    "#c00", "#bcbddc" };
	tpf_buf_adds(b, "<h2>Goodput and badput</h2>\n<svg class=\"bar\" width=\"1320\" height=\"40\" "
			"viewBox=\"0 0 1320 40\" preserveAspectRatio=\"none\">");
	double x = 0;
	for (size_t i = 0; i < 6 && billed > 0; i++) {
		double v = i ? json_number_value(json_object_get(bad, parts[i]))
			     : json_number_value(json_object_get(totals, "goodput_chip_hours"));
		double w = v / billed * 1300;
		tpf_buf_addf(b, "<rect x=\"%.2f\" y=\"4\" width=\"%.2f\" height=\"22\" fill=\"%s\">"
				"<title>%s: %.4f chip-hours (%.1f%%)</title></rect>",
			     x, w, fill[i], parts[i], v, 100 * v / billed);
		x += w;
	}
	tpf_buf_adds(b, "</svg>\n");
}

/* A number cell: digits after the point, a scale (100: percent) and a unit. */
static void cell_num(struct tpf_buf *b, json_t *v, int digits, double scale, const char *unit)
{
	if (json_is_integer(v)) /* counts: 1, not 1.0000 */
		tpf_buf_addf(b, "<td>%lld%s</td>", (long long)json_integer_value(v) * (long long)scale,
			     unit);
	else if (json_is_number(v))
		tpf_buf_addf(b, "<td>%.*f%s</td>", digits, json_number_value(v) * scale, unit);
	else
		tpf_buf_adds(b, "<td>-</td>");
}

static void cell_str(struct tpf_buf *b, json_t *o, const char *k)
{
	tpf_buf_adds(b, "<td>");
	esc(b, json_string_value(json_object_get(o, k)));
	tpf_buf_adds(b, "</td>");
}

static void tables(struct tpf_buf *b, json_t *doc)
{
	tpf_buf_adds(b, "<h2>Chip-hours by group, zone and class</h2>\n<table><tr><th>group</th>"
			"<th>zone</th><th>class</th><th>chip</th><th>billed chip-hours</th>"
			"<th>goodput</th><th>preemptions</th><th>restarts</th><th>estimated USD</th>"
			"<th>price source</th></tr>\n");
	size_t i;
	json_t *row;
	json_array_foreach(json_object_get(doc, "rows"), i, row) {
		tpf_buf_adds(b, "<tr>");
		cell_str(b, row, "group");
		cell_str(b, row, "zone");
		cell_str(b, row, "class");
		cell_str(b, row, "chip");
		cell_num(b, json_object_get(row, "billed_chip_hours"), 3, 1, "");
		cell_num(b, json_object_get(row, "goodput"), 1, 100, "%");
		cell_num(b, json_object_get(row, "preemptions"), 0, 1, "");
		cell_num(b, json_object_get(row, "restarts"), 0, 1, "");
		cell_num(b, json_object_get(row, "cost_usd_estimate"), 2, 1, "");
		cell_str(b, row, "price_source");
		tpf_buf_adds(b, "</tr>\n");
	}
	json_t *t = json_object_get(doc, "totals"), *rec = json_object_get(t, "preemption_to_running_seconds");
	tpf_buf_adds(b, "</table>\n<h2>Totals</h2>\n<table>");
	static const char *const keys[] = { "billed_chip_hours", "goodput_chip_hours", "goodput",
					    "badput_chip_hours", "preemptions", "restarts",
					    "preemptions_per_node_day",
					    "mean_hours_between_preemptions", "cost_usd_estimate" };
	json_t *lower = json_object_get(t, "cost_usd_estimate_lower_bound");
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		tpf_buf_addf(b, "<tr><td>%s</td>", keys[k]);
		int usd = !strcmp(keys[k], "cost_usd_estimate");
		cell_num(b, json_object_get(t, keys[k]), usd ? 2 : 4, 1,
			 usd && json_is_true(lower) ? " (a lower bound)" : "");
		tpf_buf_adds(b, "</tr>");
	}
	tpf_buf_adds(b, "<tr><td>preemption to running again</td>");
	cell_num(b, json_object_get(rec, "p50"), 1, 1, " s (p50)");
	cell_num(b, json_object_get(rec, "p99"), 1, 1, " s (p99)");
	json_t *prices = json_object_get(doc, "prices");
	tpf_buf_adds(b, "</tr></table>\n<p>Cost: an estimate at the list prices of ");
	esc(b, json_string_value(json_object_get(prices, "date")));
	tpf_buf_adds(b, " (");
	esc(b, json_string_value(json_object_get(prices, "source")));
	tpf_buf_adds(b, "), not a bill. How each figure is computed: docs/ledger.md.</p>\n");
	long long unpriced = json_integer_value(json_object_get(t, "rows_without_price"));
	if (unpriced)
		tpf_buf_addf(b, "<p class=\"lower-bound\">The cost is a lower bound: %lld row%s "
				"had no price and %s not in it.</p>\n",
			     unpriced, unpriced == 1 ? "" : "s", unpriced == 1 ? "is" : "are");
}

void tpf_report_html(const struct tpf_report *r, json_t *doc, const char *fleet,
		     struct tpf_buf *out)
{
	/* From -since (else the first event) to the end of what happened:
	 * the last event or the last span (a node still up: now). */
	struct frame f = { r->since >= 0 ? r->since : r->first, r->last };
	for (size_t i = 0; i < r->nspans; i++)
		if (r->spans[i].to > f.t1)
			f.t1 = r->spans[i].to;
	if (f.t1 <= f.t0)
		f.t1 = r->until;
	if (f.t0 < 0 || f.t1 <= f.t0)
		f.t0 = f.t1 - 3600;
	head(out, fleet);
	tpf_buf_adds(out, "<p>From ");
	when(out, f.t0);
	tpf_buf_adds(out, " to ");
	when(out, f.t1);
	tpf_buf_adds(out, " (the time axis is UTC)");
	tpf_buf_addf(out, ", %zu node%s.</p>\n<h2>Timeline</h2>\n", r->nnodes,
		     r->nnodes == 1 ? "" : "s");
	legend(out);
	int grouped = r->nnodes > TPF_REPORT_HTML_ROWS;
	size_t rows = grouped ? 0 : r->nnodes;
	struct tpf_buf body = TPF_BUF_INIT;
	if (grouped)
		group_rows(&body, r, &f, &rows);
	else
		node_rows(&body, r, &f);
	/* Drawn at its own width, scaled down to the window's (no
	 * horizontal scroll bar at 1,280 px): the viewBox keeps it whole. */
	tpf_buf_addf(out, "<svg class=\"timeline\" width=\"%.0f\" height=\"%zu\" "
			  "viewBox=\"0 0 %.0f %zu\" xmlns=\"http://www.w3.org/2000/svg\">\n",
		     LABEL + WIDTH + 10, 24 + rows * ROW, LABEL + WIDTH + 10, 24 + rows * ROW);
	axis(out, &f, (int)rows);
	tpf_buf_add(out, body.buf ? body.buf : "", body.len);
	tpf_buf_adds(out, "</svg>\n");
	if (grouped)
		tpf_buf_addf(out, "<p>%zu nodes: one row per group; each column shows the phase most "
				  "of the group's nodes were in.</p>\n", r->nnodes);
	tpf_buf_release(&body);
	bar(out, json_object_get(doc, "totals"));
	tables(out, doc);
	tpf_buf_adds(out, "</body></html>\n");
}
