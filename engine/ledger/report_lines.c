/*
 * The ledger's lines the report reads, in the order it replays them
 * (engine/ledger/report.h tpf_report_lines_sorted; docs/ledger.md "Lines
 * that are skipped").
 */
#include "engine/ledger/report.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static long num(json_t *o, const char *k, long dflt)
{
	json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? (long)json_integer_value(v) : dflt;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct tpf_report_line *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	int w = strcmp(x->writer, y->writer);
	if (w)
		return w;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/*
 * Bounds past which a line cannot be true (docs/ledger.md "Lines that are
 * skipped"): before Cloud TPU existed (2015), more than a day after the
 * report is read (a wrong clock), more chips or VMs in one node than any
 * slice or multislice has, a preemption seen before it happened or more
 * than a year after it.
 */
#define TPF_LEDGER_EPOCH 1420070400.0 /* 2015-01-01T00:00:00Z */
#define TPF_LEDGER_MAX_CHIPS 1000000L
#define TPF_LEDGER_MAX_VMS 65536L

static int num_out_of(json_t *o, const char *k, double lo, double hi)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return 1;
	double x = json_number_value(v);
	return !(x >= lo && x <= hi);
}

/* 1 when line o (at wall time t, read at wall time now) says the impossible. */
static int implausible(json_t *o, double t, double now)
{
	return t < TPF_LEDGER_EPOCH || t > now + 86400.0 ||
	       num_out_of(o, "chips", 0, (double)TPF_LEDGER_MAX_CHIPS) ||
	       num_out_of(o, "vms", 0, (double)TPF_LEDGER_MAX_VMS) ||
	       num_out_of(o, "lost_chips", 0, (double)TPF_LEDGER_MAX_CHIPS) ||
	       num_out_of(o, "worker", -1, (double)TPF_LEDGER_MAX_VMS) ||
	       num_out_of(o, "elapsed", 0, 366.0 * 86400.0) ||
	       num_out_of(o, "elapsed", 0, t - TPF_LEDGER_EPOCH);
}

struct tpf_report_line *tpf_report_lines_sorted(json_t *records, long *skipped, size_t *n)
{
	size_t cap = json_array_size(records), k = 0;
	struct tpf_report_line *v = xcalloc(cap ? cap : 1, sizeof(*v));
	double now = tpf_now_wall();
	for (size_t i = 0; i < cap; i++) {
		json_t *o = json_array_get(records, i);
		double t = tpf_parse_rfc3339(str(o, "ts"));
		if (t < 0 || num(o, "v", 0) < 1 || !str(o, "event") || implausible(o, t, now)) {
			(*skipped)++;
			continue;
		}
		v[k].t = t;
		v[k].writer = str(o, "writer") ? str(o, "writer") : "";
		v[k].seq = num(o, "seq", 0);
		v[k++].o = o;
	}
	qsort(v, k, sizeof(*v), rec_cmp);
	*n = k;
	return v;
}
