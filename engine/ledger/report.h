/*
 * What the fleet did and what it cost, from the run ledger alone
 * (engine/ledger/ledger_writer.h; docs/ledger.md "report" says how each figure is
 * computed). `tpuform report` prints it (cmd/cmd_report.c).
 *
 * Each node is billed as one (a slice, or a multislice node: every worker of it),
 * except that a `preempted` line naming some of its slices stops billing
 * their share of its chips until a `ready` (docs/ledger.md "A lost slice").
 * Its billed time runs from the create that made it (the last zone tried;
 * refusals and a queued resource's wait for capacity are not billed) to
 * its delete, or to the round that saw it lost (preempted, gone). Each
 * billed second is one of:
 *   goodput      every worker of the node ran the job (ml-goodput-measurement's
 *                "productive time", measured from the control plane);
 *   setup        created, its workers not all running yet (provisioning,
 *                bootstrap, setup);
 *   restart      a job failed or was restarted: until it runs again
 *                (JobSet KEP-467's restart overhead);
 *   stalled      from the restart of a stalled job until it runs again;
 *   preempted    work lost to a preemption: the goodput since the last
 *                checkpoint the job reported, when it reports them;
 *   idle         after a worker's job finished, until the delete;
 *   waiting_for_capacity  an elastic node's missing slices while its job
 *                runs on the others (a `shrunk` line to its `grown` line:
 *                engine/ledger/report_elastic.c).
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
	/* elastic slices (docs/recovery.md): the chips of a shrunk node's
	 * missing slices while the job runs on the others; in the output only
	 * when not zero, so reports of other fleets read as before */
	TPF_RB_WAITING_CAPACITY,
	TPF_RB_N
};

/* "goodput", "setup", "restart", "stalled", "preempted", "idle",
 * "waiting_for_capacity" (static). */
const char *tpf_report_bucket_name(enum tpf_report_bucket b);

/* One price (engine/ledger/prices.c): USD per chip-hour of a chip generation in a
 * scheduling class. */
struct tpf_price {
	const char *chip;   /* "v5e", "v6e", ... */
	const char *class;  /* "on-demand", "spot", "preemptible", "flex-start" */
	double usd_per_chip_hour;
	const char *source; /* URL, "the fleet file", or the catalog's source */
	const char *date;   /* when it was read, YYYY-MM-DD; NULL for the fleet file's */
	const char *region; /* "us-central1", NULL: every region */
	int from_fleet;     /* 1: the fleet file's `prices:` */
	int unverified;     /* 1: a built-in row no source read confirmed (docs/ledger.md) */
	int from_catalog;   /* 1: the Cloud Billing Catalog (engine/ledger/price_catalog.h) */
	const char *sku;    /* from_catalog: the SKU's skuId */
};

/* The built-in table's price for chip and class, or NULL (static row).
 * "preemptible" falls back to "spot" (Cloud TPU bills both as spot VMs
 * since v4). */
const struct tpf_price *tpf_price_find(const char *chip, const char *cls);
/* The built-in table's i-th row (static), NULL past its end. */
const struct tpf_price *tpf_price_builtin(size_t i);
/* Where p came from, for people, into buf (n bytes; returns buf):
 * "catalog YYYY-MM-DD" (the catalog's fetch date), "fleet file",
 * "built-in" or "built-in, unverified". */
const char *tpf_price_source(const struct tpf_price *p, char *buf, size_t n);
/* The date of the built-in table (its newest row). */
const char *tpf_prices_date(void);

/* The prices in use: the catalog's, the fleet file's, the built-in table. */
struct tpf_prices {
	struct tpf_price *over; /* owned array; strings borrowed from the fleet */
	size_t nover;
	/* The Cloud Billing Catalog's rows (engine/ledger/price_catalog.h
	 * tpf_prices_load), strings borrowed from catalog_doc (owned). */
	struct tpf_price *catalog;
	size_t ncatalog;
	json_t *catalog_doc;
	char catalog_date[11]; /* YYYY-MM-DD of its fetch */
};
struct tpf_fleet;
/* f's `prices:` (config/config.h) into *out (f may be NULL: none); the
 * strings are borrowed from f, which must outlive *out. Release with
 * tpf_prices_release. */
void tpf_prices_from_fleet(const struct tpf_fleet *f, struct tpf_prices *out);
/* Frees what *p owns, the catalog's rows and document included. */
void tpf_prices_release(struct tpf_prices *p);
/*
 * The price of chip and class in zone's region (zone may be NULL): the
 * catalog's for that region ("preemptible" takes the spot SKU's), else the
 * fleet file's for that region, else the fleet file's for every region,
 * else, unless the catalog prices that chip and class in other regions
 * only (then Google lists no price here: NULL), the built-in one
 * (tpf_price_find), else NULL. p may be NULL. Borrowed.
 */
const struct tpf_price *tpf_prices_find(const struct tpf_prices *p, const char *chip,
					const char *cls, const char *zone);

/* A node's phases on the timeline (report -html). */
enum tpf_report_phase {
	TPF_RP_WAITING,      /* not billed: a queued resource or a deferred create waits for capacity */
	TPF_RP_PROVISIONING, /* billed: created, not READY yet */
	TPF_RP_SETUP,        /* READY, its workers' jobs not all started */
	TPF_RP_RUNNING,
	TPF_RP_RESTART,
	TPF_RP_STALLED,
	TPF_RP_IDLE,
	TPF_RP_N
};
/* "waiting", "provisioning", "setup", "running", "restart", "stalled", "idle". */
const char *tpf_report_phase_name(enum tpf_report_phase p);

/* With want_spans: each node's phases and marks, in the window. */
struct tpf_report_span {
	size_t node;  /* index into nodes */
	enum tpf_report_phase phase;
	double from, to; /* wall seconds */
};
struct tpf_report_mark {
	size_t node;
	int kind;     /* TPF_EVENT_PREEMPTED or TPF_EVENT_RESTARTED (engine/events.h) */
	double t;     /* a preemption: when it was seen */
};
struct tpf_report_node {
	char *name, *group;
};

/*
 * Google's badput categories (ml-goodput-measurement, goodput_utils.py
 * `BadputType`; docs/ledger.md "Google's goodput categories" has the
 * table): the ones a control plane can see are filled from tpuform's
 * buckets by tpf_ml_badput_of; the others happen inside the job, which
 * tpuform counts as goodput, and are reported as null.
 */
enum tpf_ml_badput {
	TPF_MB_TPU_INITIALIZATION,
	TPF_MB_TRAINING_PREP,
	TPF_MB_PROGRAM_STARTUP,
	TPF_MB_DATA_LOADING_SYNC,
	TPF_MB_UNPRODUCTIVE_CHECKPOINT_SAVE_TIME,
	TPF_MB_UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME,
	TPF_MB_WASTED_PROGRESS_FROM_DISRUPTION,
	TPF_MB_INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION,
	TPF_MB_OTHER,
	TPF_MB_N,
	TPF_MB_NONE = TPF_MB_N /* goodput: productive time, no badput */
};
/* The category's name as Google spells it ("TPU_INITIALIZATION", ...;
 * static), "" out of range. */
const char *tpf_ml_badput_name(enum tpf_ml_badput m);
/* 1 when tpuform measures the category (it can be seen from outside the
 * job); 0: reported as null. */
int tpf_ml_badput_measured(enum tpf_ml_badput m);
/*
 * The mapping (engine/ledger/report_goodput.c, one table): the category
 * of time in bucket b, after_disruption 1 while a node recovers from a
 * preemption (from the loss until every worker runs the job again).
 * TPF_MB_NONE for goodput. *seconds_at_recovery (may be NULL) is set to 1
 * when the category's seconds are not counted by phase but, as
 * ml-goodput-measurement counts them, once the job runs again (the whole
 * span from the loss, the unbilled part included).
 */
enum tpf_ml_badput tpf_ml_badput_of(enum tpf_report_bucket b, int after_disruption,
				    int *seconds_at_recovery);

/* Chip-hours of one group, zone, class and chip generation. */
struct tpf_report_row {
	char *group, *zone, *cls, *chip;
	double chip_hours[TPF_RB_N];
	/* The same billed chip-hours in Google's categories, and node-seconds
	 * (wall seconds summed over nodes; unbilled ones included, as the
	 * wait for a preempted node's replacement) per category. */
	double ml_chip_hours[TPF_MB_N], ml_seconds[TPF_MB_N];
	double node_hours;  /* billed node-hours (for preemptions per node-day) */
	long preemptions, restarts;
	/* Failed preflights (preflight_failed events) and nodes replaced as
	 * bad hosts (bad_host) in the window: a host's fault, where restarts
	 * count the job's (docs/recovery.md "Preflight"). */
	long preflight_failures, bad_hosts;
	const struct tpf_price *price; /* NULL: no price known */
};

/*
 * Elastic slices (engine/ledger/report_elastic.c):
 * tpf_report_missing_share: the share of a node's chips on missing slices
 * from a `shrunk` line's workers (those that run) and the node's VMs: 1 -
 * workers/vms, 0 when it says nothing usable;
 * tpf_report_split: chip_hours of bucket b into row, `missing` of them in
 * waiting_for_capacity instead (and, of goodput, in Google's OTHER).
 */
double tpf_report_missing_share(long workers, int vms);
/*
 * A `preempted` line o that names the slices lost (`slices`, docs/ledger.md
 * "A lost slice") of a node of vms VMs and chips chips: 0 when it names
 * none (the whole node was lost; *share 0). Else *share is the share of
 * the node's chips on the lost slices (`workers`/vms, else
 * `lost_chips`/chips, else 0: not known), and the result is 2 when every
 * slice named is in *lost already (the same loss, written again by
 * another writer or a later round), else 1 with them added to *lost (bit
 * k: slice k; slices past 63 are never found again).
 */
int tpf_report_slice_loss(json_t *o, int vms, int chips, unsigned long long *lost, double *share);
void tpf_report_split(struct tpf_report_row *row, enum tpf_report_bucket b, double chip_hours,
		      double missing);

struct tpf_report {
	double since, until;  /* the window, wall seconds */
	struct tpf_report_row *rows;
	size_t nrows;
	long events, skipped; /* lines used; lines not understood */
	double first, last;   /* the first and last event's time (-1: none) */
	double *recoveries;   /* seconds from each preemption to running again */
	size_t nrecoveries;
	/* Set want_spans before tpf_report_compute to get these (bounded:
	 * TPF_REPORT_SPANS_MAX spans; later ones are counted in spans_dropped). */
	int want_spans;
	/* The fleet file's prices the rows were priced with (NULL: the
	 * built-in table only); borrowed; set by tpf_report_compute_priced. */
	const struct tpf_prices *prices;
	struct tpf_report_node *nodes;
	size_t nnodes;
	struct tpf_report_span *spans;
	size_t nspans, spans_dropped;
	struct tpf_report_mark *marks;
	size_t nmarks;
};
#define TPF_REPORT_SPANS_MAX ((size_t)4 << 20)

/*
 * Compute the report (r->want_spans is read first; the rest of *r is
 * overwritten) from ledger records (a JSON array of objects, as
 * state/ledger_store.h tpf_ledger_read gives; sorted here by time, then writer
 * and seq) for the window [since, until] (wall seconds; since < 0: from
 * the start), only group `group` when not NULL. Time before `since` is not
 * counted, but the events before it set each node's phase. Units still
 * billed at `until` are counted up to it. Never fails: records it cannot
 * use are counted in skipped. Release with tpf_report_release.
 */
void tpf_report_compute(json_t *records, double since, double until, const char *group,
			struct tpf_report *r);
/* The same, with rows priced from prices (the fleet file's over the
 * built-in table, tpf_prices_find; NULL: built-in only), borrowed until
 * tpf_report_release. */
void tpf_report_compute_priced(json_t *records, double since, double until, const char *group,
			       const struct tpf_prices *prices, struct tpf_report *r);
void tpf_report_release(struct tpf_report *r);

/*
 * The replay kept between reads of a ledger that grows (budgets and
 * `watch`'s metrics read only what was appended: state/ledger_store.h
 * tpf_ledger_cursor_read). New: the window starts at since (< 0: from the
 * start), group as tpf_report_compute's (copied), spans when want_spans.
 * Free with tpf_report_calc_free (NULL ok).
 */
struct tpf_report_calc;
struct tpf_report_calc *tpf_report_calc_new(double since, const char *group, int want_spans);
/*
 * Replay records (lines after those fed before; lines later than until
 * are left out). 0, or 1 when a line goes back before a line already fed
 * for its node (a writer's line arrived late): nothing of records was
 * used, and the caller must start a new calc from the whole ledger.
 */
int tpf_report_calc_feed(struct tpf_report_calc *a, json_t *records, double until);
/* The report as fed so far, nodes still billed counted up to until,
 * rows priced from prices (as tpf_report_compute_priced); a leaves
 * unchanged. Release *r with tpf_report_release. */
void tpf_report_calc_result(const struct tpf_report_calc *a, double until,
			    const struct tpf_prices *prices, struct tpf_report *r);
void tpf_report_calc_free(struct tpf_report_calc *a);

/*
 * The usable lines of records (a JSON array of ledger objects; borrowed
 * by the result), sorted by time, then writer and seq, into a new array
 * of *n (caller frees the array); lines without a version, an event or
 * a time, or that say the impossible, are counted in *skipped
 * (engine/ledger/report_lines.c).
 */
struct tpf_report_line {
	double t; /* wall seconds */
	const char *writer;
	long seq;
	json_t *o;
};
struct tpf_report_line *tpf_report_lines_sorted(json_t *records, long *skipped, size_t *n);

/* Billed chip-hours of a row: every bucket (goodput + badput). */
double tpf_report_row_billed(const struct tpf_report_row *row);
/*
 * What r's window cost: billed chip-hours, and their price in US dollars
 * (rows priced as r->prices said), with *unpriced the rows billed but
 * without a price (left out of *usd). What `report` totals and what
 * budgets count (engine/ledger/budget_spend.h).
 */
void tpf_report_spend(const struct tpf_report *r, double *chip_hours, double *usd, long *unpriced);

/*
 * The report as JSON (new reference): window, totals {billed_chip_hours,
 * goodput_chip_hours, goodput (fraction, null with nothing billed), badput
 * {cause: chip_hours}, badput_chip_hours, preemptions, restarts,
 * preemptions_per_node_day, mean_time_between_preemptions_hours,
 * recovery_seconds {p50, p99, n}, cost_usd_estimate}, rows[], prices
 * {date, note}. docs/ledger.md lists every field.
 */
json_t *tpf_report_to_json(const struct tpf_report *r);

/*
 * The report as one self-contained HTML page (report -html; also what
 * `watch -metrics-addr` could serve): inline CSS and SVG, no script, no
 * network. A timeline with one row per node (one per group past
 * TPF_REPORT_HTML_ROWS nodes: each column shows the group's most common
 * phase), coloured by phase, preemptions and restarts marked, every span
 * and mark with a tooltip giving its exact times; the goodput and badput
 * bar; the table of rows and the totals of doc (tpf_report_to_json's
 * object for r). r must have been computed with want_spans. Appends to
 * out; never fails.
 */
#define TPF_REPORT_HTML_ROWS 200
struct tpf_buf;
void tpf_report_html(const struct tpf_report *r, json_t *doc, const char *fleet,
		     struct tpf_buf *out);

/*
 * Google's categories of r as JSON (new reference; report_goodput.c):
 * {source, badput_chip_hours {CATEGORY: chip-hours or null},
 * badput_seconds {CATEGORY: node-seconds or null}} over every row (row
 * NULL: with the mapping table too, mapping [{bucket, when, category}])
 * or of one row.
 */
json_t *tpf_report_ml_json(const struct tpf_report *r, const struct tpf_report_row *row);

/* Nearest-rank percentile p (0..100) of v[0..n) (sorted here); -1 when n 0. */
double tpf_report_percentile(double *v, size_t n, double p);

#endif
