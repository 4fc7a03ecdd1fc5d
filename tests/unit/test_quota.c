/*
 * The quota rule (plan/quota.h), table-driven: rules, nodes that already
 * exist, then nodes placed one by one with zone fallback in the group's
 * order; each case lists the zone every placed node got ("-": none had
 * room). Then the two callers' views: the executor's (every state node but
 * the one being placed) and desired placement (tpf_desired_compute).
 */
#include "plan/plan.h"
#include "plan/quota.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* A cap of N means N; X means "not declared" (-1). */
#define X -1

struct rule_desc {
	const char *zone, *type;
	int preemptible, spot, on_demand;
};

/* "ZONE TYPE SCHED" with SCHED one of pre, spot, od (zone ignored when placing). */
struct node_desc {
	const char *zone, *type, *sched;
};

struct qcase {
	const char *title;
	struct rule_desc rules[4];    /* zone NULL ends */
	struct node_desc existing[6]; /* type NULL ends */
	const char *zones[4];         /* the group's zones, in fallback order */
	struct node_desc place[6];    /* type NULL ends */
	const char *want;             /* zone of each placed node, "-" for none */
};

static const struct qcase cases[] = {
	/* Mixed scheduling classes: each class has its own cap. */
	{ "caps are per class: 2 preemptible and 1 spot all fit",
	  { { "a", "v2-8", 2, 1, X } }, { { 0 } }, { "a" },
	  { { 0, "v2-8", "pre" }, { 0, "v2-8", "pre" }, { 0, "v2-8", "spot" } }, "a a a" },
	{ "per class: the third preemptible and second spot do not fit",
	  { { "a", "v2-8", 2, 1, X } }, { { 0 } }, { "a" },
	  { { 0, "v2-8", "spot" }, { 0, "v2-8", "pre" }, { 0, "v2-8", "spot" },
	    { 0, "v2-8", "pre" }, { 0, "v2-8", "pre" } },
	  "a a - a -" },
	{ "a class the rule does not declare is not capped",
	  { { "a", "v2-8", X, 0, X } }, { { 0 } }, { "a" },
	  { { 0, "v2-8", "od" }, { 0, "v2-8", "od" }, { 0, "v2-8", "pre" }, { 0, "v2-8", "spot" } },
	  "a a a -" },
	{ "a cap of 0 sends the node to the next zone",
	  { { "a", "v2-8", X, X, 0 } }, { { 0 } }, { "a", "b" },
	  { { 0, "v2-8", "od" }, { 0, "v2-8", "pre" } }, "b a" },
	/* Accelerator types and wildcards. */
	{ "a rule for another type does not apply",
	  { { "a", "v4-8", 0, 0, 0 } }, { { 0 } }, { "a" },
	  { { 0, "v2-8", "pre" }, { 0, "v4-8", "pre" } }, "a -" },
	{ "a '*' rule caps every type of its zone together",
	  { { "a", "*", X, 2, X } }, { { 0 } }, { "a" },
	  { { 0, "v2-8", "spot" }, { 0, "v4-8", "spot" }, { 0, "v5litepod-4", "spot" },
	    { 0, "v4-8", "pre" } },
	  "a a - a" },
	{ "a rule for another zone does not apply",
	  { { "b", "*", 0, 0, 0 } }, { { 0 } }, { "a", "b" },
	  { { 0, "v2-8", "pre" }, { 0, "v2-8", "od" } }, "a a" },
	/* Several rules match a node: it needs room under each. */
	{ "several rules: the tighter '*' rule binds",
	  { { "a", "v2-8", 5, X, X }, { "a", "*", 2, X, X } }, { { 0 } }, { "a" },
	  { { 0, "v2-8", "pre" }, { 0, "v2-8", "pre" }, { 0, "v2-8", "pre" } }, "a a -" },
	{ "several rules: the tighter type rule binds its type only",
	  { { "a", "v2-8", 1, X, X }, { "a", "*", 3, X, X } }, { { 0 } }, { "a" },
	  { { 0, "v2-8", "pre" }, { 0, "v2-8", "pre" }, { 0, "v4-8", "pre" }, { 0, "v4-8", "pre" },
	    { 0, "v4-8", "pre" } },
	  "a - a a -" },
	{ "several rules: a node counts against each, in its own class",
	  { { "a", "v2-8", 1, 1, X }, { "a", "*", 1, 2, X } }, { { 0 } }, { "a" },
	  { { 0, "v2-8", "spot" }, { 0, "v4-8", "spot" }, { 0, "v4-8", "spot" }, { 0, "v4-8", "pre" },
	    { 0, "v2-8", "pre" } },
	  "a a - a -" },
	/* Existing nodes are counted first, in their own zone and class. */
	{ "existing nodes count in their zone and class",
	  { { "a", "v2-8", 2, 1, X } },
	  { { "a", "v2-8", "pre" }, { "a", "v2-8", "spot" }, { "b", "v2-8", "pre" },
	    { "a", "v4-8", "pre" } },
	  { "a" },
	  { { 0, "v2-8", "pre" }, { 0, "v2-8", "spot" }, { 0, "v2-8", "pre" } }, "a - -" },
	{ "existing nodes over the cap leave no room (and are not undone)",
	  { { "a", "*", 1, X, X } }, { { "a", "v2-8", "pre" }, { "a", "v4-8", "pre" } }, { "a", "b" },
	  { { 0, "v2-8", "pre" } }, "b" },
	/* Zone fallback follows the group's order. */
	{ "zone fallback in the group's order",
	  { { "a", "v2-8", 1, X, X }, { "b", "v2-8", 1, X, X } }, { { 0 } }, { "b", "a", "c" },
	  { { 0, "v2-8", "pre" }, { 0, "v2-8", "pre" }, { 0, "v2-8", "pre" }, { 0, "v2-8", "pre" } },
	  "b a c c" },
	{ "zone fallback with existing nodes and mixed classes",
	  { { "a", "v2-8", 1, 1, X }, { "b", "*", 1, 0, X } }, { { "a", "v2-8", "pre" } },
	  { "a", "b" },
	  { { 0, "v2-8", "pre" }, { 0, "v2-8", "spot" }, { 0, "v2-8", "spot" }, { 0, "v2-8", "pre" } },
	  "b a - -" },
	{ "no rules: every node fits in the first zone",
	  { { 0 } }, { { 0 } }, { "a", "b" }, { { 0, "v2-8", "pre" }, { 0, "v4-8", "od" } }, "a a" },
};

static void recipe_of(struct tpf_recipe *r, const struct node_desc *nd)
{
	memset(r, 0, sizeof(*r));
	r->accelerator_type = (char *)nd->type;
	r->preemptible = !strcmp(nd->sched, "pre");
	r->spot = !strcmp(nd->sched, "spot");
}

static size_t rules_of(const struct qcase *c, struct tpf_quota_rule *out)
{
	size_t n = 0;
	for (const struct rule_desc *rd = c->rules; rd->zone; rd++, n++) {
		memset(&out[n], 0, sizeof(out[n]));
		out[n].zone = (char *)rd->zone;
		out[n].accelerator_type = (char *)rd->type;
		out[n].preemptible = rd->preemptible;
		out[n].spot = rd->spot;
		out[n].on_demand = rd->on_demand;
	}
	return n;
}

static void run_case(const struct qcase *c)
{
	unit_begin(c->title);
	struct tpf_quota_rule rules[4];
	size_t nrules = rules_of(c, rules);
	struct tpf_quota q;
	tpf_quota_init(&q, rules, nrules);
	struct tpf_recipe r;
	for (const struct node_desc *nd = c->existing; nd->type; nd++) {
		recipe_of(&r, nd);
		tpf_quota_take(&q, nd->zone, &r);
	}
	char *zones[4];
	size_t nzones = 0;
	while (nzones < 4 && c->zones[nzones]) {
		zones[nzones] = (char *)c->zones[nzones];
		nzones++;
	}
	struct tpf_buf got = TPF_BUF_INIT;
	for (const struct node_desc *nd = c->place; nd->type; nd++) {
		recipe_of(&r, nd);
		const char *zone = tpf_quota_first_zone(&q, zones, nzones, &r);
		if (zone)
			tpf_quota_take(&q, zone, &r);
		tpf_buf_addf(&got, "%s%s", got.len ? " " : "", zone ? zone : "-");
	}
	CHECK_STR(got.buf, c->want);
	tpf_buf_release(&got);
	tpf_quota_release(&q);
}

static void test_quota__table(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
}

static void test_quota__class_of(void)
{
	struct tpf_recipe r = { 0 };
	CHECK_INT(tpf_quota_class_of(&r), TPF_QUOTA_ON_DEMAND);
	r.preemptible = 1;
	CHECK_INT(tpf_quota_class_of(&r), TPF_QUOTA_PREEMPTIBLE);
	r.preemptible = 0;
	r.spot = 1;
	CHECK_INT(tpf_quota_class_of(&r), TPF_QUOTA_SPOT);
}

static void add_state_node(struct tpf_state *st, const char *name, const char *zone,
			   const char *type, int spot, enum tpf_node_status status)
{
	struct tpf_state_node *sn = tpf_state_add(st, name);
	sn->status = status;
	xstrset(&sn->recipe.zone, zone);
	xstrset(&sn->recipe.accelerator_type, type);
	sn->recipe.spot = spot;
}

/* The executor's view: every state node with a zone counts (pending and
 * tainted ones may hold quota), except the node being placed. */
static void test_quota__count_state(void)
{
	struct tpf_quota_rule rules[1] = { { .zone = "a", .accelerator_type = "v2-8",
					     .preemptible = X, .spot = 2, .on_demand = X } };
	struct tpf_state st;
	tpf_state_init(&st);
	add_state_node(&st, "f-sp-0", "a", "v2-8", 1, TPF_NODE_CREATED);
	add_state_node(&st, "f-sp-1", "a", "v2-8", 1, TPF_NODE_PENDING);
	add_state_node(&st, "f-od-0", "a", "v2-8", 0, TPF_NODE_CREATED);
	add_state_node(&st, "f-sp-2", NULL, "v2-8", 1, TPF_NODE_PENDING); /* no zone yet */
	struct tpf_recipe spot = { .accelerator_type = "v2-8", .spot = 1 };

	struct tpf_quota q;
	tpf_quota_init(&q, rules, 1);
	tpf_quota_count_state(&q, &st, "f-sp-2");
	CHECKF(!tpf_quota_room(&q, "a", &spot), "two spot nodes hold the spot cap of 2");
	CHECKF(tpf_quota_room(&q, "b", &spot), "zone b has no rule");
	tpf_quota_release(&q);

	tpf_quota_init(&q, rules, 1);
	tpf_quota_count_state(&q, &st, "f-sp-1");
	CHECKF(tpf_quota_room(&q, "a", &spot), "the node being placed does not count against itself");
	tpf_quota_take(&q, "a", &spot);
	CHECKF(!tpf_quota_room(&q, "a", &spot), "after taking one, the cap is reached");
	tpf_quota_release(&q);

	st.nodes[0].status = TPF_NODE_TAINTED;
	tpf_quota_init(&q, rules, 1);
	tpf_quota_count_state(&q, &st, NULL);
	CHECKF(!tpf_quota_room(&q, "a", &spot), "a tainted node still holds quota");
	tpf_quota_release(&q);
	tpf_state_release(&st);
}

#define FLEET                                                                                  \
	"fleet: f\n"                                                                              \
	"provider:\n  local: { root: /nonexistent }\n"                                            \
	"run: train\n"                                                                            \
	"quota:\n"                                                                                \
	"  - { zone: local-a, accelerator_type: v2-8, preemptible: 2, spot: 1 }\n"                \
	"  - { zone: local-b, accelerator_type: \"*\", spot: 1 }\n"                               \
	"groups:\n"                                                                               \
	"  - { name: pre, accelerator_type: v2-8, runtime_version: rt, zones: [local-a], count: %d, " \
	"preemptible: true }\n"                                                                   \
	"  - { name: sp, accelerator_type: v2-8, runtime_version: rt, zones: [local-a, local-b], "  \
	"count: %d, spot: true }\n"

/* "name@zone" for every desired node, "name@zone!" when deferred. */
static char *placement(int npre, int nsp, const struct tpf_state *st, size_t *warnings)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	char *yaml = xasprintf(FLEET, npre, nsp);
	int rc = tpf_fleet_parse(&f, "fleet.yaml", yaml, strlen(yaml), &d);
	free(yaml);
	CHECK_INT(rc, 0);
	if (rc) {
		tpf_diags_release(&d);
		return xstrdup("(fleet did not parse)");
	}
	struct tpf_desired_set ds = { 0 };
	CHECK_INT(tpf_desired_compute(&ds, &f, NULL, st, &d), 0);
	struct tpf_buf b = TPF_BUF_INIT;
	for (size_t i = 0; i < ds.n; i++)
		tpf_buf_addf(&b, "%s%s@%s%s", i ? " " : "", ds.nodes[i].name, ds.nodes[i].recipe.zone,
			     ds.nodes[i].deferred ? "!" : "");
	*warnings = d.n;
	tpf_desired_release(&ds);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
	return tpf_buf_detach(&b, NULL);
}

/* Desired placement: the reproduction (2 preemptible + 1 spot under one
 * rule with preemptible: 2, spot: 1) plans every node, and spot nodes
 * beyond the cap fall back to the next zone, then wait. */
static void test_quota__desired_placement(void)
{
	size_t warnings = 0;
	char *got = placement(2, 1, NULL, &warnings);
	CHECK_STR(got, "f-pre-0@local-a f-pre-1@local-a f-sp-0@local-a");
	CHECK_INT(warnings, 0);
	free(got);

	got = placement(3, 3, NULL, &warnings);
	CHECK_STR(got, "f-pre-0@local-a f-pre-1@local-a f-pre-2@local-a! "
		       "f-sp-0@local-a f-sp-1@local-b f-sp-2@local-a!");
	CHECK_INT(warnings, 2); /* one per group */
	free(got);

	/* An existing spot node keeps local-b, so a new one takes local-a
	 * and the third waits, whatever the index order. */
	struct tpf_state st;
	tpf_state_init(&st);
	add_state_node(&st, "f-sp-2", "local-b", "v2-8", 1, TPF_NODE_CREATED);
	got = placement(0, 3, &st, &warnings);
	CHECK_STR(got, "f-sp-0@local-a f-sp-1@local-a! f-sp-2@local-b");
	free(got);
	tpf_state_release(&st);
}

int main(void)
{
	RUN(test_quota__table);
	RUN(test_quota__class_of);
	RUN(test_quota__count_state);
	RUN(test_quota__desired_placement);
	return unit_done();
}
