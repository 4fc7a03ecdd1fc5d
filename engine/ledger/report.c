/*
 * The report's arithmetic (engine/ledger/report.h): each node's phases, replayed
 * from its ledger lines, turned into chip-hours per bucket.
 */
#include "engine/events.h"
#include "engine/ledger/report.h"
#include "util/timeutil.h"
#include "util/str.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

enum phase {
	PH_NONE,     /* not billed: absent, deleted, lost */
	PH_WAITING,  /* not billed: waiting for capacity (queued, deferred) */
	PH_PENDING,  /* a create in flight: billed from `pending` once it succeeds */
	PH_PROVISIONING, /* billed from here on: created, not READY yet */
	PH_SETUP,
	PH_RUNNING,
	PH_RESTART,
	PH_STALLED,
	PH_IDLE,
};

static const enum tpf_report_bucket bucket_of[] = {
	[PH_PROVISIONING] = TPF_RB_SETUP,
	[PH_SETUP] = TPF_RB_SETUP,     [PH_RUNNING] = TPF_RB_GOODPUT,
	[PH_RESTART] = TPF_RB_RESTART, [PH_STALLED] = TPF_RB_STALLED,
	[PH_IDLE] = TPF_RB_IDLE,
};

static const enum tpf_report_phase shown_as[] = {
	[PH_WAITING] = TPF_RP_WAITING, [PH_PROVISIONING] = TPF_RP_PROVISIONING,
	[PH_SETUP] = TPF_RP_SETUP,     [PH_RUNNING] = TPF_RP_RUNNING,
	[PH_RESTART] = TPF_RP_RESTART, [PH_STALLED] = TPF_RP_STALLED,
	[PH_IDLE] = TPF_RP_IDLE,
};

struct billed {
	char *name, *group;
	size_t last_span; /* its last span in r->spans, or -1 */
	size_t row;
	int chips, vms;
	enum phase ph;
	double since;   /* start of the phase (billed phases) */
	double pending; /* PH_PENDING: when the create started */
	unsigned char *running; /* per worker: its job runs */
	int have_ckpt;
	double good_since_ckpt; /* goodput chip-hours since the last checkpoint */
	double good_secs_since_ckpt; /* ... and its seconds */
	double lost_at;         /* a preemption not yet running again, or -1 */
	/* Lost and not billed again since: a second preempted line (watch
	 * and apply both saw it) is the same loss, counted once. */
	int lost;
	double last_t;          /* its last line's time: a later read must not go back */
	double missing;         /* elastic: the share of its chips on missing slices */
	/* Some slices lost (a `preempted` line naming them): their share of
	 * the chips, not billed until a create makes them again (`ready`),
	 * and which they are (bit k: slice k), so that the same loss written
	 * twice counts once. */
	double gone;
	unsigned long long gone_slices;
};

struct calc {
	struct tpf_report *r;
	struct billed *nodes;
	size_t nnodes, nalloc;
	size_t ralloc, recalloc, salloc, malloc_;
};

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static long num(json_t *o, const char *k, long dflt)
{
	json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? (long)json_integer_value(v) : dflt;
}

static size_t row_of(struct calc *c, json_t *o)
{
	const char *g = str(o, "group"), *z = str(o, "zone"), *cls = str(o, "class"),
		   *chip = str(o, "chip");
	struct tpf_report *r = c->r;
	for (size_t i = 0; i < r->nrows; i++)
		if (tpf_streq(r->rows[i].group, g) && tpf_streq(r->rows[i].zone, z) &&
		    tpf_streq(r->rows[i].cls, cls) && tpf_streq(r->rows[i].chip, chip))
			return i;
	if (r->nrows == c->ralloc) {
		c->ralloc = c->ralloc ? 2 * c->ralloc : 8;
		r->rows = xrealloc(r->rows, c->ralloc * sizeof(*r->rows));
	}
	struct tpf_report_row *row = &r->rows[r->nrows];
	memset(row, 0, sizeof(*row));
	row->group = g ? xstrdup(g) : NULL;
	row->zone = z ? xstrdup(z) : NULL;
	row->cls = cls ? xstrdup(cls) : NULL;
	row->chip = chip ? xstrdup(chip) : NULL;
	row->price = tpf_prices_find(r->prices, chip, cls, z);
	return r->nrows++;
}

static struct billed *billed_of(struct calc *c, const char *name)
{
	for (size_t i = 0; i < c->nnodes; i++)
		if (!strcmp(c->nodes[i].name, name))
			return &c->nodes[i];
	if (c->nnodes == c->nalloc) {
		c->nalloc = c->nalloc ? 2 * c->nalloc : 16;
		c->nodes = xrealloc(c->nodes, c->nalloc * sizeof(*c->nodes));
	}
	struct billed *u = &c->nodes[c->nnodes++];
	memset(u, 0, sizeof(*u));
	u->name = xstrdup(name);
	u->lost_at = -1;
	u->row = (size_t)-1;
	u->last_span = (size_t)-1;
	return u;
}

static int billed(const struct billed *u)
{
	return u->ph >= PH_PROVISIONING;
}

/* The timeline: [from, to) of u's phase, merged with its last span when
 * they touch. */
static void add_span(struct calc *c, struct billed *u, double from, double to)
{
	struct tpf_report *r = c->r;
	enum tpf_report_phase ph = shown_as[u->ph];
	if (u->last_span != (size_t)-1) {
		struct tpf_report_span *l = &r->spans[u->last_span];
		if (l->phase == ph && l->to >= from - 1e-6) {
			l->to = to;
			return;
		}
	}
	if (r->nspans >= TPF_REPORT_SPANS_MAX) {
		r->spans_dropped++;
		return;
	}
	if (r->nspans == c->salloc) {
		c->salloc = c->salloc ? 2 * c->salloc : 64;
		r->spans = xrealloc(r->spans, c->salloc * sizeof(*r->spans));
	}
	u->last_span = r->nspans;
	r->spans[r->nspans++] = (struct tpf_report_span){ (size_t)(u - c->nodes), ph, from, to };
}

static void add_mark(struct calc *c, const struct billed *u, int kind, double t)
{
	struct tpf_report *r = c->r;
	if (!r->want_spans || t < r->since || t > r->until || r->nmarks >= TPF_REPORT_SPANS_MAX)
		return;
	if (r->nmarks == c->malloc_) {
		c->malloc_ = c->malloc_ ? 2 * c->malloc_ : 64;
		r->marks = xrealloc(r->marks, c->malloc_ * sizeof(*r->marks));
	}
	r->marks[r->nmarks++] = (struct tpf_report_mark){ (size_t)(u - c->nodes), kind, t };
}

/* Google's categories of [from, to) of a billed phase (report_goodput.c);
 * a recovery from a preemption adds its seconds when the job runs again. */
static void ml_accrue(struct tpf_report_row *row, const struct billed *u, double from, double to)
{
	int at_recovery = 0;
	enum tpf_ml_badput m = tpf_ml_badput_of(bucket_of[u->ph], u->lost_at >= 0, &at_recovery);
	if (m == TPF_MB_NONE)
		return;
	row->ml_chip_hours[m] += (to - from) * u->chips * (1 - u->gone) / 3600.0;
	if (!at_recovery)
		row->ml_seconds[m] += to - from;
}

/* Count the node's current phase from u->since to t (clipped to the window). */
static void accrue(struct calc *c, struct billed *u, double t)
{
	double from = u->since > c->r->since ? u->since : c->r->since;
	double to = t < c->r->until ? t : c->r->until;
	if (c->r->want_spans && to > from && (billed(u) || u->ph == PH_WAITING))
		add_span(c, u, from, to);
	if (billed(u) && u->row != (size_t)-1) {
		if (to > from) {
			struct tpf_report_row *row = &c->r->rows[u->row];
			double ch = (to - from) * u->chips * (1 - u->gone) / 3600.0;
			tpf_report_split(row, bucket_of[u->ph], ch, u->missing);
			row->node_hours += (to - from) / 3600.0;
			ml_accrue(row, u, from, to);
			if (u->ph == PH_RUNNING) {
				u->good_since_ckpt += ch * (1 - u->missing);
				u->good_secs_since_ckpt += to - from;
			}
		}
	}
	if (t > u->since)
		u->since = t;
}

static void set_phase(struct billed *u, enum phase ph, double t)
{
	u->ph = ph;
	u->since = t;
}

/* Billing starts (at `from`, provisioning): a new generation, no worker
 * running. */
static void begin_billed(struct billed *u, double from)
{
	set_phase(u, PH_PROVISIONING, from);
	u->lost = 0;
	u->gone = 0;
	u->gone_slices = 0;
	if (u->vms > 0)
		memset(u->running, 0, (size_t)u->vms);
	u->have_ckpt = 0;
	u->good_since_ckpt = 0;
	u->good_secs_since_ckpt = 0;
}

/* ... and the node is READY at t: setup from there. */
static void start_billing(struct calc *c, struct billed *u, double from, double t)
{
	begin_billed(u, from);
	accrue(c, u, t);
	set_phase(u, PH_SETUP, t);
}

static int all_running(const struct billed *u)
{
	for (int i = 0; i < u->vms; i++)
		if (!u->running[i])
			return 0;
	return 1;
}

/* What the line says of the node: chips, VMs, row. */
static void learn(struct calc *c, struct billed *u, json_t *o)
{
	long chips = num(o, "chips", 0), vms = num(o, "vms", 0);
	if (chips > 0)
		u->chips = (int)chips;
	if (vms > 0 && vms <= 65536 && vms != u->vms) {
		u->running = xrealloc(u->running, (size_t)vms);
		memset(u->running, 0, (size_t)vms);
		u->vms = (int)vms;
	}
	if (str(o, "group")) {
		u->row = row_of(c, o);
		if (!u->group)
			u->group = xstrdup(str(o, "group"));
	}
}

/* Some slices of node u were lost at tp (seen at t): only their share of
 * the chips stops being billed; the others wait, as recovery, until
 * every worker runs the job again (the job is one program: every worker
 * restarts; an elastic node's `shrunk` says the job runs again sooner). */
static void slices_lost(struct billed *u, double share, double tp)
{
	u->gone = u->gone + share < 1 ? u->gone + share : 1;
	if (u->vms > 0)
		memset(u->running, 0, (size_t)u->vms);
	if (billed(u) && u->ph != PH_IDLE && u->ph != PH_PROVISIONING)
		set_phase(u, PH_SETUP, tp);
	if (u->lost_at < 0)
		u->lost_at = tp;
}

static void preempted(struct calc *c, struct billed *u, json_t *o, double t)
{
	double share = 0;
	int slices = u->lost ? 0 : tpf_report_slice_loss(o, u->vms, u->chips, &u->gone_slices, &share);
	if (u->lost || slices == 2) /* the same loss, written again */
		return;
	json_t *el = json_object_get(o, "elapsed");
	double tp = t - (json_is_number(el) ? json_number_value(el) : 0);
	if (tp < u->since)
		tp = u->since;
	int was = billed(u);
	accrue(c, u, tp);
	if (was && u->row != (size_t)-1) {
		struct tpf_report_row *row = &c->r->rows[u->row];
		if (u->have_ckpt) { /* the work since the last checkpoint is lost */
			double lost = u->good_since_ckpt < row->chip_hours[TPF_RB_GOODPUT]
					      ? u->good_since_ckpt
					      : row->chip_hours[TPF_RB_GOODPUT];
			row->chip_hours[TPF_RB_GOODPUT] -= lost;
			row->chip_hours[TPF_RB_PREEMPTED] += lost;
			enum tpf_ml_badput m = tpf_ml_badput_of(TPF_RB_PREEMPTED, 0, NULL);
			row->ml_chip_hours[m] += lost;
			if (u->good_since_ckpt > 0)
				row->ml_seconds[m] += u->good_secs_since_ckpt * lost / u->good_since_ckpt;
		}
		u->good_since_ckpt = 0;
		u->good_secs_since_ckpt = 0;
	}
	if (u->row != (size_t)-1 && tp >= c->r->since)
		c->r->rows[u->row].preemptions++;
	add_mark(c, u, TPF_EVENT_PREEMPTED, tp);
	if (slices) {
		slices_lost(u, share, tp);
		return;
	}
	set_phase(u, PH_NONE, t);
	u->lost_at = tp;
	u->lost = 1;
	u->gone = 0;
	u->gone_slices = 0;
}

/* u runs again at t after a preemption: its recovery's seconds, from the
 * loss (the unbilled wait for the replacement included), in the window,
 * and its time back to running. */
static void back_to_running(struct calc *c, struct billed *u, double t)
{
	if (u->lost_at < 0)
		return;
	if (c->r->nrecoveries < 1000000) {
		if (c->r->nrecoveries == c->recalloc) {
			c->recalloc = c->recalloc ? 2 * c->recalloc : 16;
			c->r->recoveries = xrealloc(c->r->recoveries, c->recalloc * sizeof(double));
		}
		c->r->recoveries[c->r->nrecoveries++] = t - u->lost_at;
	}
	double from = u->lost_at > c->r->since ? u->lost_at : c->r->since;
	double to = t < c->r->until ? t : c->r->until;
	u->lost_at = -1;
	if (u->row == (size_t)-1 || to <= from)
		return;
	enum tpf_ml_badput m = tpf_ml_badput_of(TPF_RB_SETUP, 1, NULL);
	c->r->rows[u->row].ml_seconds[m] += to - from;
}

static void worker_job(struct calc *c, struct billed *u, int kind, long w, double t)
{
	if (w < 0 || w >= u->vms)
		return;
	if (kind == TPF_EVENT_JOB_STARTED || kind == TPF_EVENT_JOB_RUNNING) {
		if (u->ph < PH_PROVISIONING) /* the ledger began after the node did */
			start_billing(c, u, t, t);
		u->running[w] = 1;
		if (all_running(u) && (u->ph == PH_SETUP || u->ph == PH_RESTART || u->ph == PH_STALLED)) {
			set_phase(u, PH_RUNNING, t);
			back_to_running(c, u, t);
		}
		return;
	}
	u->running[w] = 0;
	if (kind == TPF_EVENT_JOB_FAILED && u->ph == PH_RUNNING)
		set_phase(u, PH_RESTART, t);
	else if (kind == TPF_EVENT_JOB_SUCCEEDED && billed(u) && u->ph != PH_IDLE)
		set_phase(u, PH_IDLE, t);
}

/* An elastic node's job runs again on some of its slices (`shrunk`), or
 * on all of them (`grown`): every worker that is left runs; the missing
 * slices' share is waiting_for_capacity until it grows. */
static void resized(struct calc *c, struct billed *u, int kind, json_t *o, double t)
{
	u->missing = kind == TPF_EVENT_SHRUNK ? tpf_report_missing_share(num(o, "workers", -1),
									  u->vms) : 0;
	/* the lost slices' chips are the missing share's now (or back) */
	u->gone = 0;
	if (kind == TPF_EVENT_GROWN)
		u->gone_slices = 0;
	if (u->ph < PH_PROVISIONING)
		start_billing(c, u, t, t);
	if (u->vms > 0)
		memset(u->running, 1, (size_t)u->vms);
	if (u->ph != PH_IDLE)
		set_phase(u, PH_RUNNING, t);
	back_to_running(c, u, t);
}

/* One line of the node's life, at time t (accrued up to t first). */
static void replay(struct calc *c, struct billed *u, int kind, json_t *o, double t)
{
	if (kind == TPF_EVENT_PREEMPTED) {
		preempted(c, u, o, t);
		return;
	}
	accrue(c, u, t);
	const char *action = str(o, "action");
	int of_create = action && !strcmp(action, "creating");
	switch (kind) {
	case TPF_EVENT_CREATING:
		if (!billed(u)) {
			set_phase(u, PH_PENDING, t);
			u->pending = t;
		}
		break;
	case TPF_EVENT_ZONE_FALLBACK: /* the refusing zones' time is not billed */
		if (u->ph == PH_PENDING)
			u->pending = t;
		break;
	case TPF_EVENT_READY:
		if (u->ph == PH_PENDING)
			start_billing(c, u, u->pending, t);
		else if (u->ph < PH_PROVISIONING)
			start_billing(c, u, t, t);
		else if (u->ph == PH_PROVISIONING)
			set_phase(u, PH_SETUP, t);
		u->gone = 0; /* lost slices made again: billed from here */
		u->gone_slices = 0;
		break;
	case TPF_EVENT_NOT_READY: /* it exists: billed, provisioning */
		if (u->ph == PH_PENDING) {
			begin_billed(u, u->pending);
			accrue(c, u, t);
		}
		break;
	case TPF_EVENT_QUEUED:
	case TPF_EVENT_DEFERRED:
		if (u->ph == PH_PENDING)
			set_phase(u, PH_WAITING, t);
		break;
	case TPF_EVENT_FAILED:
	case TPF_EVENT_INTERRUPTED:
		if (of_create && u->ph == PH_PENDING)
			set_phase(u, PH_NONE, t);
		break;
	case TPF_EVENT_JOB_STARTED:
	case TPF_EVENT_JOB_RUNNING:
	case TPF_EVENT_JOB_FAILED:
	case TPF_EVENT_JOB_SUCCEEDED:
		worker_job(c, u, kind, num(o, "worker", -1), t);
		break;
	case TPF_EVENT_COMPLETED:
	case TPF_EVENT_DELETING:
		if (billed(u) && u->ph != PH_IDLE)
			set_phase(u, PH_IDLE, t);
		break;
	case TPF_EVENT_RESTARTING:
		if (u->ph == PH_RUNNING)
			set_phase(u, PH_RESTART, t);
		break;
	case TPF_EVENT_STALLED:
		if (billed(u))
			set_phase(u, PH_STALLED, t);
		break;
	case TPF_EVENT_RESTARTED:
		if (u->row != (size_t)-1 && t >= c->r->since)
			c->r->rows[u->row].restarts++;
		add_mark(c, u, TPF_EVENT_RESTARTED, t);
		/* Its jobs started again: those restarted and the others, which
		 * a restart of some workers left running. */
		if (u->vms > 0)
			memset(u->running, 1, (size_t)u->vms);
		if (u->ph == PH_RESTART || u->ph == PH_STALLED)
			set_phase(u, PH_RUNNING, t);
		break;
	case TPF_EVENT_SHRUNK:
	case TPF_EVENT_GROWN:
		resized(c, u, kind, o, t);
		break;
	case TPF_EVENT_PREFLIGHT_FAILED:
		if (u->row != (size_t)-1 && t >= c->r->since)
			c->r->rows[u->row].preflight_failures++;
		break;
	case TPF_EVENT_BAD_HOST:
		if (u->row != (size_t)-1 && t >= c->r->since)
			c->r->rows[u->row].bad_hosts++;
		break;
	case TPF_EVENT_CHECKPOINT:
		u->have_ckpt = 1;
		u->good_since_ckpt = 0;
		u->good_secs_since_ckpt = 0;
		break;
	case TPF_EVENT_DELETED:
		set_phase(u, PH_NONE, t);
		break;
	default:
		break;
	}
}

/* The replay so far (engine/ledger/report.h tpf_report_calc_*). */
struct tpf_report_calc {
	struct tpf_report r; /* rows, counts, spans as replayed; no price */
	struct calc c;       /* c.r is &r */
	char *group;
};

struct tpf_report_calc *tpf_report_calc_new(double since, const char *group, int want_spans)
{
	struct tpf_report_calc *a = xcalloc(1, sizeof(*a));
	a->r.want_spans = want_spans;
	a->r.since = since;
	a->r.until = 1e300; /* lines are fed up to the caller's bound */
	a->r.first = a->r.last = -1;
	a->c.r = &a->r;
	a->group = group ? xstrdup(group) : NULL;
	return a;
}

/* A node of c that has a line later than t: t came too late. */
static int goes_back(struct calc *c, const char *node, double t)
{
	for (size_t i = 0; i < c->nnodes; i++)
		if (!strcmp(c->nodes[i].name, node))
			return t < c->nodes[i].last_t;
	return 0;
}

int tpf_report_calc_feed(struct tpf_report_calc *a, json_t *records, double until)
{
	struct tpf_report *r = &a->r;
	size_t n = 0;
	long skipped = r->skipped;
	struct tpf_report_line *v = tpf_report_lines_sorted(records, &r->skipped, &n);
	for (size_t i = 0; i < n && v[i].t <= until; i++) {
		const char *node = str(v[i].o, "node");
		if (node && goes_back(&a->c, node, v[i].t)) {
			r->skipped = skipped;
			free(v);
			return 1;
		}
	}
	for (size_t i = 0; i < n && v[i].t <= until; i++) {
		json_t *o = v[i].o;
		const char *node = str(o, "node");
		int kind = tpf_event_kind_from_name(str(o, "event"));
		if (kind < 0 || !node || (a->group && !tpf_streq(str(o, "group"), a->group)))
			continue;
		if (r->first < 0)
			r->first = v[i].t;
		r->last = v[i].t;
		r->events++;
		struct billed *u = billed_of(&a->c, node);
		u->last_t = v[i].t;
		/* The old row gets the time until now (a preemption accrues up
		 * to when it was seen, which is earlier). */
		if (kind != TPF_EVENT_PREEMPTED)
			accrue(&a->c, u, v[i].t);
		learn(&a->c, u, o);
		replay(&a->c, u, kind, o, v[i].t);
	}
	free(v);
	return 0;
}

static void *dup_array(const void *p, size_t n, size_t size)
{
	void *q = xmalloc(n ? n * size : 1);
	if (n)
		memcpy(q, p, n * size);
	return q;
}

void tpf_report_calc_result(const struct tpf_report_calc *a, double until,
			    const struct tpf_prices *prices, struct tpf_report *r)
{
	const struct tpf_report *from = &a->r;
	*r = *from;
	r->until = until;
	r->prices = prices;
	r->rows = dup_array(from->rows, from->nrows, sizeof(*r->rows));
	for (size_t i = 0; i < r->nrows; i++) {
		struct tpf_report_row *row = &r->rows[i];
		row->group = row->group ? xstrdup(row->group) : NULL;
		row->zone = row->zone ? xstrdup(row->zone) : NULL;
		row->cls = row->cls ? xstrdup(row->cls) : NULL;
		row->chip = row->chip ? xstrdup(row->chip) : NULL;
		row->price = tpf_prices_find(prices, row->chip, row->cls, row->zone);
	}
	r->recoveries = dup_array(from->recoveries, from->nrecoveries, sizeof(double));
	r->spans = dup_array(from->spans, from->nspans, sizeof(*r->spans));
	r->marks = dup_array(from->marks, from->nmarks, sizeof(*r->marks));
	/* Each node as far as it got, then counted up to `until`. */
	struct calc c = { .r = r, .nnodes = a->c.nnodes, .nalloc = a->c.nnodes,
			  .ralloc = r->nrows, .recalloc = r->nrecoveries, .salloc = r->nspans,
			  .malloc_ = r->nmarks };
	c.nodes = dup_array(a->c.nodes, c.nnodes, sizeof(*c.nodes));
	for (size_t i = 0; i < c.nnodes; i++) {
		struct billed *u = &c.nodes[i];
		u->name = xstrdup(u->name);
		u->group = u->group ? xstrdup(u->group) : NULL;
		u->running = u->vms > 0 ? dup_array(u->running, (size_t)u->vms, 1) : NULL;
	}
	if (r->want_spans)
		r->nodes = xcalloc(c.nnodes ? c.nnodes : 1, sizeof(*r->nodes));
	for (size_t i = 0; i < c.nnodes; i++) {
		accrue(&c, &c.nodes[i], until);
		if (r->want_spans) {
			r->nodes[i].name = c.nodes[i].name;
			r->nodes[i].group = c.nodes[i].group;
		} else {
			free(c.nodes[i].name);
			free(c.nodes[i].group);
		}
		free(c.nodes[i].running);
	}
	r->nnodes = r->want_spans ? c.nnodes : 0;
	free(c.nodes);
}

void tpf_report_calc_free(struct tpf_report_calc *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->c.nnodes; i++) {
		free(a->c.nodes[i].name);
		free(a->c.nodes[i].group);
		free(a->c.nodes[i].running);
	}
	free(a->c.nodes);
	tpf_report_release(&a->r);
	free(a->group);
	free(a);
}

void tpf_report_compute(json_t *records, double since, double until, const char *group,
			struct tpf_report *r)
{
	tpf_report_compute_priced(records, since, until, group, NULL, r);
}

void tpf_report_compute_priced(json_t *records, double since, double until, const char *group,
			       const struct tpf_prices *prices, struct tpf_report *r)
{
	struct tpf_report_calc *a = tpf_report_calc_new(since, group, r->want_spans);
	a->r.until = until;
	tpf_report_calc_feed(a, records, until); /* one feed cannot go back */
	tpf_report_calc_result(a, until, prices, r);
	tpf_report_calc_free(a);
}
