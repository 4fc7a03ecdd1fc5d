/*
 * The run ledger's metric families and page (engine/telemetry/metrics.h
 * tpf_metrics_set_ledger).
 */
#include "config/config.h"
#include "engine/telemetry/metrics_internal.h"
#include "engine/ledger/price_catalog.h"
#include "engine/ledger/report.h"
#include "engine/ledger/report_follow.h"
#include "util/timeutil.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* A label value in the exposition format: \ " and newline escaped. */
static void label(struct tpf_buf *b, const char *name, const char *v)
{
	tpf_buf_addf(b, "%s=\"", name);
	for (v = v ? v : ""; *v; v++) {
		if (*v == '\\' || *v == '"')
			tpf_buf_addch(b, '\\');
		if (*v == '\n')
			tpf_buf_adds(b, "\\n");
		else
			tpf_buf_addch(b, *v);
	}
	tpf_buf_addch(b, '"');
}

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void chip_seconds(struct tpf_buf *b, json_t *rows)
{
	tpf_buf_adds(b, "# HELP tpuform_chip_seconds_total Billed TPU chip-seconds from the run "
			"ledger, by what the node did (docs/ledger.md).\n"
			"# TYPE tpuform_chip_seconds_total counter\n");
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row) {
		const char *k;
		json_t *v;
		json_object_foreach(json_object_get(row, "chip_hours"), k, v) {
			tpf_buf_adds(b, "tpuform_chip_seconds_total{");
			label(b, "group", str(row, "group"));
			tpf_buf_addch(b, ',');
			label(b, "zone", str(row, "zone"));
			tpf_buf_addch(b, ',');
			label(b, "class", str(row, "class"));
			tpf_buf_addch(b, ',');
			label(b, "chip", str(row, "chip"));
			tpf_buf_addch(b, ',');
			label(b, "state", k);
			tpf_buf_addf(b, "} %.3f\n", json_number_value(v) * 3600);
		}
	}
}

struct per_group {
	const char *group;
	double good, billed;
	long preemptions, restarts;
};

static void by_group(struct tpf_buf *b, json_t *rows)
{
	size_t n = json_array_size(rows), ng = 0;
	struct per_group *g = xcalloc(n ? n : 1, sizeof(*g));
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row) {
		const char *name = str(row, "group") ? str(row, "group") : "";
		size_t k = 0;
		while (k < ng && strcmp(g[k].group, name))
			k++;
		if (k == ng)
			g[ng++].group = name;
		g[k].good += json_number_value(json_object_get(json_object_get(row, "chip_hours"), "goodput"));
		g[k].billed += json_number_value(json_object_get(row, "billed_chip_hours"));
		g[k].preemptions += (long)json_integer_value(json_object_get(row, "preemptions"));
		g[k].restarts += (long)json_integer_value(json_object_get(row, "restarts"));
	}
	static const char *const fam[][3] = {
		{ "tpuform_goodput_ratio", "gauge", "Goodput: the fraction of billed chip-seconds in which every worker of a node ran the job." },
		{ "tpuform_ledger_preemptions_total", "counter", "Preemptions in the run ledger (they survive a watch restart)." },
		{ "tpuform_ledger_restarts_total", "counter", "Job restarts in the run ledger (they survive a watch restart)." },
	};
	for (int f = 0; f < 3; f++) {
		tpf_buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", fam[f][0], fam[f][2], fam[f][0], fam[f][1]);
		for (size_t k = 0; k < ng; k++) {
			if (f == 0 && g[k].billed <= 0)
				continue;
			tpf_buf_addf(b, "%s{", fam[f][0]);
			label(b, "group", g[k].group);
			if (f == 0)
				tpf_buf_addf(b, "} %.6f\n", g[k].good / g[k].billed);
			else
				tpf_buf_addf(b, "} %ld\n", f == 1 ? g[k].preemptions : g[k].restarts);
		}
	}
	free(g);
}

void tpf_metrics_set_ledger(struct tpf_metrics *m, json_t *doc, const char *page, size_t len)
{
	struct tpf_buf b = TPF_BUF_INIT;
	json_t *rows = json_object_get(doc, "rows");
	chip_seconds(&b, rows);
	by_group(&b, rows);
	char *text = tpf_buf_detach(&b, NULL);
	char *copy = page ? xmalloc(len + 1) : NULL;
	if (copy) {
		memcpy(copy, page, len);
		copy[len] = '\0';
	}
	pthread_mutex_lock(&m->mu);
	free(m->ledger_text);
	free(m->page);
	m->ledger_text = text;
	m->page = copy;
	m->page_len = copy ? len : 0;
	pthread_mutex_unlock(&m->mu);
}

void tpf_metrics_ledger_refresh(struct tpf_metrics *m, const struct tpf_fleet *f,
				struct tpf_diags *d)
{
	if (!m->ledger_follow && tpf_report_follow_open_fleet(&m->ledger_follow, f, 1, d))
		return;
	int from_start = 0;
	if (tpf_report_follow_update(m->ledger_follow, NULL, &from_start, d))
		return;
	struct tpf_prices prices;
	tpf_prices_load(f, &prices, NULL);
	struct tpf_report r;
	tpf_report_follow_result(m->ledger_follow, 0, tpf_now_wall(), &prices, &r);
	json_t *doc = tpf_report_to_json(&r);
	json_object_set_new(doc, "fleet", json_string(f->name));
	struct tpf_buf page = TPF_BUF_INIT;
	tpf_report_html(&r, doc, f->name, &page);
	tpf_metrics_set_ledger(m, doc, page.buf, page.len);
	tpf_buf_release(&page);
	json_decref(doc);
	tpf_report_release(&r);
	tpf_prices_release(&prices);
}
