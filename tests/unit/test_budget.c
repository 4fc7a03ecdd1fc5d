/*
 * Budgets (docs/ledger.md "Budgets"): the period arithmetic and the
 * deferral rule (plan/budget.c), the spend measured from ledger lines with
 * report's arithmetic and prices (engine/ledger/budget_spend.c), and the fleet file's
 * budget, on_budget and prices keys with their FILE:LINE:COL errors
 * (config/config_budget.c).
 */
#include "tests/unit/unit.h"
#include "config/config.h"
#include "engine/ledger/budget_spend.h"
#include "engine/ledger/ledger_writer.h"
#include "engine/ledger/report.h"
#include "plan/budget.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T(s) tpf_parse_rfc3339(s)

static void test_budget__periods(void)
{
	double s, e;
	/* Wednesday 2026-11-25 10:00 UTC. */
	double now = T("2026-11-25T10:00:00Z");
	tpf_budget_period(now, TPF_BUDGET_DAY, &s, &e);
	CHECK(s == T("2026-11-25T00:00:00Z") && e == T("2026-11-26T00:00:00Z"));
	tpf_budget_period(now, TPF_BUDGET_WEEK, &s, &e);
	CHECK(s == T("2026-11-23T00:00:00Z") && e == T("2026-11-30T00:00:00Z"));
	tpf_budget_period(now, TPF_BUDGET_MONTH, &s, &e);
	CHECK(s == T("2026-11-01T00:00:00Z") && e == T("2026-12-01T00:00:00Z"));
	/* A Monday is its own week's first day; a Sunday the last of the week before. */
	tpf_budget_period(T("2026-11-23T00:00:00Z"), TPF_BUDGET_WEEK, &s, &e);
	CHECK(s == T("2026-11-23T00:00:00Z"));
	tpf_budget_period(T("2026-11-29T23:59:59Z"), TPF_BUDGET_WEEK, &s, &e);
	CHECK(s == T("2026-11-23T00:00:00Z"));
	/* A week across a new year: 2027-01-01 is a Friday. */
	tpf_budget_period(T("2027-01-01T12:00:00Z"), TPF_BUDGET_WEEK, &s, &e);
	CHECK(s == T("2026-12-28T00:00:00Z") && e == T("2027-01-04T00:00:00Z"));
	/* December's month ends in January; February of a leap year has 29 days. */
	tpf_budget_period(T("2026-12-31T23:59:59Z"), TPF_BUDGET_MONTH, &s, &e);
	CHECK(s == T("2026-12-01T00:00:00Z") && e == T("2027-01-01T00:00:00Z"));
	tpf_budget_period(T("2028-02-15T00:00:00Z"), TPF_BUDGET_MONTH, &s, &e);
	CHECK(s == T("2028-02-01T00:00:00Z") && e == T("2028-03-01T00:00:00Z"));
	/* The last second of a day is still that day. */
	tpf_budget_period(T("2026-11-25T23:59:59Z"), TPF_BUDGET_DAY, &s, &e);
	CHECK(s == T("2026-11-25T00:00:00Z"));
}

#define HEAD "fleet: f\nprovider: { local: {} }\nrun: train\n"
#define GROUPS                                                                          \
	"groups:\n"                                                                      \
	"  - { name: a, accelerator_type: v2-8, runtime_version: tpu-vm-base, "          \
	"zones: [us-central1-f], count: 2, budget: { chip_hours: 12.5, per: week }, "    \
	"on_budget: delete }\n"                                                          \
	"  - { name: b, accelerator_type: v2-8, runtime_version: tpu-vm-base, "          \
	"zones: [us-central1-f], count: 1 }\n"

static int parse(struct tpf_fleet *f, const char *top, struct tpf_diags *d)
{
	char text[2048];
	snprintf(text, sizeof(text), HEAD "%s" GROUPS, top);
	return tpf_fleet_parse(f, "fleet.yaml", text, strlen(text), d);
}

static void test_budget__config_accepted(void)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(parse(&f,
			"budget: { usd: 500, per: month }\n"
			"prices:\n"
			"  - { accelerator: v6e, class: spot, usd_per_chip_hour: 1.1 }\n"
			"  - { accelerator: v6e, class: spot, region: europe-west4, "
			"usd_per_chip_hour: 1.3 }\n",
			&d),
		  0);
	CHECK(f.budget.unit == TPF_BUDGET_USD && f.budget.amount == 500 &&
	      f.budget.per == TPF_BUDGET_MONTH);
	CHECK(f.on_budget == TPF_ON_BUDGET_STOP);
	CHECK(f.ngroups == 2);
	CHECK(f.groups[0].budget.unit == TPF_BUDGET_CHIP_HOURS && f.groups[0].budget.amount == 12.5 &&
	      f.groups[0].budget.per == TPF_BUDGET_WEEK);
	CHECK(f.groups[0].on_budget == TPF_ON_BUDGET_DELETE);
	CHECK(f.groups[1].budget.unit == TPF_BUDGET_NONE);
	CHECK(f.groups[1].on_budget == TPF_ON_BUDGET_STOP); /* the fleet's */
	CHECK(f.nprices == 2);
	CHECK_STR(f.prices[1].region, "europe-west4");
	CHECK(f.prices[0].region == NULL && f.prices[0].usd_per_chip_hour == 1.1);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

static void test_budget__config_refused(void)
{
	static const struct {
		const char *yaml;
		const char *first;
	} bad[] = {
		{ "budget: { chip_hours: 10, usd: 5, per: day }\n",
		  "fleet.yaml:4:32: 'budget' takes exactly one of 'chip_hours' and 'usd', got both" },
		{ "budget: { per: day }\n", "fleet.yaml:4:9: 'budget' needs one of 'chip_hours' and 'usd'" },
		{ "budget: { chip_hours: 0, per: day }\n",
		  "fleet.yaml:4:23: 'chip_hours' must be a number of chip-hours > 0 such as 100 or "
		  "12.5, got '0' (at most 1e+07)" },
		{ "budget: { chip_hours: -5, per: day }\n",
		  "fleet.yaml:4:23: 'chip_hours' must be a number of chip-hours > 0 such as 100 or "
		  "12.5, got '-5'" },
		{ "budget: { usd: 1e12, per: day }\n",
		  "fleet.yaml:4:16: 'usd' must be a number of US dollars > 0 such as 500, got '1e12'" },
		{ "budget: { usd: 2000000000, per: day }\n",
		  "fleet.yaml:4:16: 'usd' must be a number of US dollars > 0 such as 500, got "
		  "'2000000000' (at most 1e+09)" },
		{ "budget: { usd: 5 }\n", "fleet.yaml:4:9: budget of the fleet is missing required key 'per'" },
		{ "budget: { usd: 5, per: weak }\n",
		  "fleet.yaml:4:24: 'per' must be one of day, week or month, got 'weak'; did you mean "
		  "'week'?" },
		{ "budget: { usd: 5, per: day, every: 2 }\n",
		  "fleet.yaml:4:29: unknown key 'every' in budget of the fleet" },
		{ "on_budget: remove\n",
		  "fleet.yaml:4:12: 'on_budget' must be one of stop (create nothing more: the default) or "
		  "delete, got 'remove'" },
		{ "prices: [{ accelerator: tpu7, class: spot, usd_per_chip_hour: 1 }]\n",
		  "fleet.yaml:4:25: 'accelerator' must be a chip generation: v2, v3, v4, v5e, v5p, v6e or "
		  "tpu7x, got 'tpu7'; did you mean 'tpu7x'?" },
		{ "prices: [{ accelerator: v6e, class: spot, region: us-central1-a, usd_per_chip_hour: 1 }]\n",
		  "fleet.yaml:4:51: 'region' must be a region such as 'us-central1' (a zone's region: no "
		  "zone letter), got 'us-central1-a'" },
		{ "prices: [{ accelerator: v6e, class: spot }]\n",
		  "fleet.yaml:4:10: price is missing required key 'usd_per_chip_hour'" },
		{ "prices:\n  - { accelerator: v6e, class: spot, usd_per_chip_hour: 1 }\n"
		  "  - { accelerator: v6e, class: spot, usd_per_chip_hour: 2 }\n",
		  "fleet.yaml:6:5: the price of v6e spot is already given at line 5" },
		{ "prices: [{ accelerator: v6e, class: spot, usd_per_chip_hour: 5000 }]\n",
		  "fleet.yaml:4:62: 'usd_per_chip_hour' must be US dollars per chip-hour >= 0 such as "
		  "2.7, got '5000' (at most 1000)" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tpf_fleet f;
		struct tpf_diags d = TPF_DIAGS_INIT;
		CHECKF(parse(&f, bad[i].yaml, &d) == TPF_ERROR, "case %zu fails", i);
		CHECKF(d.n && !strncmp(d.items[0].summary, bad[i].first, strlen(bad[i].first)),
		       "case %zu: %s", i, d.n ? d.items[0].summary : "(no error)");
		tpf_fleet_release(&f);
		tpf_diags_release(&d);
	}
}

/* One ledger line of node `node` of group g (v6e, 4 chips, on-demand, us-central1-a). */
static void line(json_t *a, const char *ts, const char *event, const char *node, const char *g,
		 long seq)
{
	json_array_append_new(a, json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:i,s:s,s:s,s:i}",
					   "v", 1, "ts", ts, "event", event, "node", node, "group",
					   g, "zone", "us-central1-a", "chip", "v6e", "chips", 4,
					   "vms", 1, "class", "on-demand", "writer", "w", "seq",
					   seq));
}

static void test_budget__spend_from_the_ledger(void)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(parse(&f,
			"budget: { usd: 100, per: week }\n"
			"prices: [{ accelerator: v6e, class: on-demand, region: us-central1, "
			"usd_per_chip_hour: 2 }]\n",
			&d),
		  0);
	json_t *a = json_array();
	/* a-0: up from Sunday 23:00 to Monday 01:00: 1 h of it this week. */
	line(a, "2026-11-22T23:00:00.000Z", "creating", "f-a-0", "a", 1);
	line(a, "2026-11-22T23:00:00.000Z", "ready", "f-a-0", "a", 2);
	line(a, "2026-11-23T01:00:00.000Z", "deleted", "f-a-0", "a", 3);
	/* b-0: up since Wednesday 08:00, still up at 10:00: 2 h. */
	line(a, "2026-11-25T08:00:00.000Z", "creating", "f-b-0", "b", 4);
	line(a, "2026-11-25T08:00:00.000Z", "ready", "f-b-0", "b", 5);
	double now = T("2026-11-25T10:00:00Z");
	struct tpf_budget_status *v = NULL;
	size_t n = tpf_budget_scopes(&f, now, &v);
	CHECK_INT((long)n, 2);
	CHECK(v[0].group == NULL && v[1].group && !strcmp(v[1].group, "a"));
	tpf_budget_spend(&f, a, now, v, n);
	/* Fleet: (1 h + 2 h) x 4 chips = 12 chip-hours at the fleet file's $2. */
	CHECKF(v[0].spent > 23.999 && v[0].spent < 24.001, "fleet spent $%f", v[0].spent);
	CHECK(!tpf_budget_reached(&v[0]));
	/* Group a: 4 chip-hours of its 12.5. */
	CHECKF(v[1].spent > 3.999 && v[1].spent < 4.001, "a spent %f", v[1].spent);
	CHECK(!v[1].reported);
	/* A budget_reached line of a in this week; the fleet's is last week's. */
	json_array_append_new(a, json_pack("{s:i,s:s,s:s,s:s}", "v", 1, "ts",
					   "2026-11-24T00:00:00.000Z", "event", "budget_reached",
					   "group", "a"));
	json_array_append_new(a, json_pack("{s:i,s:s,s:s}", "v", 1, "ts",
					   "2026-11-20T00:00:00.000Z", "event", "budget_reached"));
	tpf_budget_spend(&f, a, now, v, n);
	CHECK(v[1].reported && !v[0].reported);
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_budget_describe(&v[1], f.name, &b);
	CHECK_STR(b.buf, "group 'a': 4.00 of 12.5 chip-hours this week (32%)");
	tpf_buf_reset(&b);
	tpf_budget_describe(&v[0], f.name, &b);
	CHECK_STR(b.buf, "fleet 'f': $24.00 of $100.00 this week (24%)");
	tpf_buf_release(&b);
	free(v);
	json_decref(a);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

static void test_budget__prices_override(void)
{
	struct tpf_price over[] = {
		{ "v6e", "spot", 1.0, "the fleet file", NULL, NULL, 1, 0, 0, NULL },
		{ "v6e", "spot", 1.5, "the fleet file", NULL, "europe-west4", 1, 0, 0, NULL },
	};
	struct tpf_prices p = { .over = over, .nover = 2 };
	CHECK(tpf_prices_find(&p, "v6e", "spot", "europe-west4-a")->usd_per_chip_hour == 1.5);
	CHECK(tpf_prices_find(&p, "v6e", "spot", "us-east5-b")->usd_per_chip_hour == 1.0);
	CHECK(tpf_prices_find(&p, "v6e", "spot", NULL)->usd_per_chip_hour == 1.0);
	const struct tpf_price *builtin = tpf_prices_find(&p, "v6e", "on-demand", "us-east5-b");
	CHECK(builtin && !builtin->from_fleet);
	CHECK(tpf_prices_find(NULL, "v6e", "spot", "us-east5-b") == NULL); /* no built-in spot */
	/* Each built-in row says whether a source confirmed it. */
	CHECK(!tpf_price_find("v4", "on-demand")->unverified);
	CHECK(tpf_price_find("v6e", "on-demand")->unverified);
}

static void test_budget__defer(void)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(parse(&f, "", &d), 0);
	struct tpf_state st;
	memset(&st, 0, sizeof(st));
	struct tpf_desired_set ds;
	CHECK_INT(tpf_desired_compute(&ds, &f, NULL, &st, &d), 0);
	CHECK_INT((long)ds.n, 3);
	struct tpf_budget_status v[1] = { { .group = "a", .budget = &f.groups[0].budget,
					    .on_budget = TPF_ON_BUDGET_STOP } };
	tpf_budget_period(T("2026-11-25T10:00:00Z"), TPF_BUDGET_WEEK, &v[0].period_start,
			  &v[0].period_end);
	v[0].spent = 12.4; /* below 12.5: nothing deferred */
	CHECK_INT((long)tpf_budget_defer(&ds, v, 1, f.name, &d), 0);
	CHECK(!ds.nodes[0].deferred && !d.n);
	v[0].spent = 12.5; /* reached */
	CHECK_INT((long)tpf_budget_defer(&ds, v, 1, f.name, &d), 2);
	for (size_t i = 0; i < ds.n; i++) {
		int in_a = !strcmp(ds.nodes[i].group, "a");
		CHECKF(ds.nodes[i].deferred == in_a, "%s", ds.nodes[i].name);
		CHECK(ds.nodes[i].over_budget == (in_a ? TPF_OVER_BUDGET_STOP : 0));
		if (in_a)
			CHECK_STR(ds.nodes[i].waiting,
				  "budget reached: group 'a': 12.50 of 12.5 chip-hours this week (100%)");
	}
	CHECK(d.n == 1 && d.items[0].severity == TPF_SEV_WARNING &&
	      strstr(d.items[0].summary, "until 2026-11-30 00:00 UTC"));
	v[0].on_budget = TPF_ON_BUDGET_DELETE;
	tpf_budget_defer(&ds, v, 1, f.name, &d);
	CHECK(ds.nodes[0].over_budget == TPF_OVER_BUDGET_DELETE);
	tpf_desired_release(&ds);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

/* watch's cache: the ledger is read again only after `every` seconds, or
 * at once when the scopes change. */
static void test_budget__cache(void)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(parse(&f, "", &d), 0);
	char dir[] = "/tmp/tpf-budget-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char state[256], ledger[300];
	snprintf(state, sizeof(state), "%s/tpuform.state.json", dir);
	snprintf(ledger, sizeof(ledger), "%s.ledger.jsonl", state);
	free(f.state_path);
	f.state_path = strdup(state);
	double now = tpf_now_wall();
	char t0[40], t1[40];
	tpf_ledger_time(now - 3600, t0, sizeof(t0));
	tpf_ledger_time(now - 1800, t1, sizeof(t1));
	json_t *a = json_array();
	line(a, t0, "creating", "f-a-0", "a", 1);
	line(a, t0, "ready", "f-a-0", "a", 2);
	line(a, t1, "deleted", "f-a-0", "a", 3);
	FILE *fp = fopen(ledger, "w");
	size_t i;
	json_t *o;
	json_array_foreach(a, i, o) {
		json_dumpf(o, fp, JSON_COMPACT);
		fputc('\n', fp);
	}
	fclose(fp);
	struct tpf_budget_cache c = { 0 };
	struct tpf_budget_status *v = NULL;
	size_t n = 0;
	CHECK_INT(tpf_budget_measure_cached(&f, now, 100, 60, &c, &v, &n, &d), 0);
	CHECK(n == 1 && v[0].spent > 1.99 && v[0].spent < 2.01); /* half an hour, 4 chips */
	free(v);
	unlink(ledger); /* spent nothing now, but the cache is 10 s old */
	CHECK_INT(tpf_budget_measure_cached(&f, now, 110, 60, &c, &v, &n, &d), 0);
	CHECK(n == 1 && v[0].spent > 1.99);
	free(v);
	CHECK_INT(tpf_budget_measure_cached(&f, now, 161, 60, &c, &v, &n, &d), 0);
	CHECK(n == 1 && v[0].spent == 0); /* 61 s: read again */
	free(v);
	tpf_budget_cache_release(&c);
	rmdir(dir);
	json_decref(a);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

#define MINE "0f1e2d3c-4b5a-4697-8877-665544332211"

static void live_node(struct tpf_live_set *live, const char *name, const char *state,
		      const char *lineage)
{
	struct tpf_live_node *ln = tpf_live_set_add(live);
	ln->name = xstrdup(name);
	ln->id = xstrdup("1");
	ln->state = xstrdup(state);
	ln->recipe.zone = xstrdup("us-central1-f");
	ln->recipe.accelerator_type = xstrdup("v2-8");
	ln->recipe.runtime_version = xstrdup("tpu-vm-base");
	tpf_kvlist_set(&ln->recipe.labels, TPF_LABEL_FLEET, "f");
	char lin[TPF_LINEAGE_LABEL_LEN + 1];
	if (tpf_lineage_label(lineage, lin))
		tpf_kvlist_set(&ln->recipe.labels, TPF_LABEL_LINEAGE, lin);
}

static const struct tpf_action *action_of(const struct tpf_plan *p, const char *node)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->actions[i].node, node))
			return &p->actions[i];
	return NULL;
}

/* Over budget, the diff creates nothing (a dead node is not replaced);
 * with on_budget: delete it deletes the scope's nodes this state made,
 * and only those. */
static void test_budget__diff(void)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(parse(&f, "", &d), 0);
	struct tpf_state st;
	tpf_state_init(&st);
	xstrset(&st.lineage, MINE);
	st.serial = 1;
	const char *names[] = { "f-a-0", "f-a-1", "f-b-0" };
	for (int i = 0; i < 3; i++) {
		struct tpf_state_node *sn = tpf_state_add(&st, names[i]);
		sn->status = TPF_NODE_CREATED;
		xstrset(&sn->group, i < 2 ? "a" : "b");
		xstrset(&sn->recipe.zone, "us-central1-f");
	}
	struct tpf_live_set live = { 0 };
	live_node(&live, "f-a-0", "PREEMPTED", MINE); /* dead: a replace would create */
	live_node(&live, "f-a-1", "READY", NULL);     /* an earlier tpuform's: no lineage label */
	live_node(&live, "f-b-0", "PREEMPTED", MINE); /* b has no budget */
	struct tpf_desired_set ds;
	CHECK_INT(tpf_desired_compute(&ds, &f, NULL, &st, &d), 0);
	struct tpf_budget_status v[1] = { { .group = "a", .budget = &f.groups[0].budget,
					    .on_budget = TPF_ON_BUDGET_STOP, .spent = 13 } };
	tpf_budget_defer(&ds, v, 1, f.name, &d);
	struct tpf_diff_input in = { .fleet = &f, .desired = &ds, .state = &st, .live = &live };
	struct tpf_plan p;
	CHECK_INT(tpf_diff(&p, &in, &d), 0);
	CHECK(action_of(&p, "f-a-0") == NULL); /* not replaced */
	CHECK(action_of(&p, "f-b-0") && action_of(&p, "f-b-0")->kind == TPF_ACT_REPLACE);
	CHECK(p.deferred >= 1);
	tpf_plan_release(&p);
	tpf_desired_release(&ds);

	CHECK_INT(tpf_desired_compute(&ds, &f, NULL, &st, &d), 0);
	v[0].on_budget = TPF_ON_BUDGET_DELETE;
	tpf_budget_defer(&ds, v, 1, f.name, &d);
	CHECK_INT(tpf_diff(&p, &in, &d), 0);
	const struct tpf_action *a = action_of(&p, "f-a-0");
	CHECK(a && a->kind == TPF_ACT_DELETE && a->reason_code && !strcmp(a->reason_code, "budget"));
	CHECK(a && tpf_action_is_healing(a)); /* watch does it */
	a = action_of(&p, "f-a-1");
	CHECK(!a || a->kind != TPF_ACT_DELETE); /* no lineage label: never deleted for a budget */
	tpf_plan_release(&p);
	tpf_desired_release(&ds);
	tpf_live_set_release(&live);
	tpf_state_release(&st);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

int main(void)
{
	RUN(test_budget__periods);
	RUN(test_budget__config_accepted);
	RUN(test_budget__config_refused);
	RUN(test_budget__spend_from_the_ledger);
	RUN(test_budget__prices_override);
	RUN(test_budget__defer);
	RUN(test_budget__cache);
	RUN(test_budget__diff);
	return unit_done();
}
