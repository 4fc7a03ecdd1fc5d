/*
 * What the fleet did and what it cost, from the run ledger alone
 * (engine/ledger.h; docs/ledger.md "report" says how each figure is
 * computed). `tpuform report` prints it (cmd/cmd_report.c).
 *
 * The unit is a node (a slice, or a multislice node: every worker of it).
 * Its billed time runs from the create that made it (the last zone tried;
 * refusals and a queued resource's wait for capacity are not billed) to
 * its delete, or to the round that saw it lost (preempted, gone). Each
 * billed second is one of:
 *   goodput      every worker of the unit ran the job (ml-goodput-measurement's
 *                "productive time", measured from the control plane);
 *   setup        created, its workers not all running yet (provisioning,
 *                bootstrap, setup);
 *   restart      a job failed or was restarted: until it runs again
 *                (JobSet KEP-467's restart overhead);
 *   stalled      from the restart of a stalled job until it runs again;
 *   preempted    work lost to a preemption: the goodput since the last
 *                checkpoint the job reported, when it reports them;
 *   idle         after a worker's job finished, until the delete.
 * so goodput + badput = billed, by construction.
 */
#ifndef TPF_ENGINE_REPORT_H
#define TPF_ENGINE_REPORT_H

#include <stddef.h>
#include <jansson.h>
#include "util/diag.h"

enum tpf_report_bucket {
	TPF_RB_GOODPUT,
	TPF_RB_SETUP,
	TPF_RB_RESTART,
	TPF_RB_STALLED,
	TPF_RB_PREEMPTED,
	TPF_RB_IDLE,
	TPF_RB_N
};

/* "goodput", "setup", "restart", "stalled", "preempted", "idle" (static). */
const char *tpf_report_bucket_name(enum tpf_report_bucket b);

/* One price (engine/prices.c): USD per chip-hour of a chip generation in a
 * scheduling class. */
struct tpf_price {
	const char *chip;   /* "v5e", "v6e", ... */
	const char *class;  /* "on-demand", "spot", "preemptible", "flex-start" */
	double usd_per_chip_hour;
	const char *source; /* URL */
	const char *date;   /* when it was read, YYYY-MM-DD */
};

/* The built-in table's price for chip and class, or NULL (static row).
 * "preemptible" falls back to "spot" (Cloud TPU bills both as spot VMs
 * since v4). */
const struct tpf_price *tpf_price_find(const char *chip, const char *cls);
/* The date of the built-in table (its newest row). */
const char *tpf_prices_date(void);

/* Chip-hours of one group, zone, class and chip generation. */
struct tpf_report_row {
	char *group, *zone, *cls, *chip;
	double chip_hours[TPF_RB_N];
	double node_hours;  /* billed node-hours (for preemptions per node-day) */
	long preemptions, restarts;
	const struct tpf_price *price; /* NULL: no price known */
};

struct tpf_report {
	double since, until;  /* the window, wall seconds */
	struct tpf_report_row *rows;
	size_t nrows;
	long events, skipped; /* lines used; lines not understood */
	double first, last;   /* the first and last event's time (-1: none) */
	double *recoveries;   /* seconds from each preemption to running again */
	size_t nrecoveries;
};

/*
 * Compute the report from ledger records (a JSON array of objects, as
 * state/ledger.h tpf_ledger_read gives; sorted here by time, then writer
 * and seq) for the window [since, until] (wall seconds; since < 0: from
 * the start), only group `group` when not NULL. Time before `since` is not
 * counted, but the events before it set each node's phase. Units still
 * billed at `until` are counted up to it. Never fails: records it cannot
 * use are counted in skipped. Release with tpf_report_release.
 */
void tpf_report_compute(json_t *records, double since, double until, const char *group,
			struct tpf_report *r);
void tpf_report_release(struct tpf_report *r);

/*
 * The report as JSON (new reference): window, totals {billed_chip_hours,
 * goodput_chip_hours, goodput (fraction, null with nothing billed), badput
 * {cause: chip_hours}, badput_chip_hours, preemptions, restarts,
 * preemptions_per_node_day, mean_time_between_preemptions_hours,
 * recovery_seconds {p50, p99, n}, cost_usd_estimate}, rows[], prices
 * {date, note}. docs/ledger.md lists every field.
 */
json_t *tpf_report_to_json(const struct tpf_report *r);

/* Nearest-rank percentile p (0..100) of v[0..n) (sorted here); -1 when n 0. */
double tpf_report_percentile(double *v, size_t n, double p);

#endif
