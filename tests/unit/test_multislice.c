/*
 * Multislice (docs/design.md section 9) without the network: the fleet
 * key, the desired node, the plan, the queuedResources.create body, a
 * multislice QueuedResource parsed, its slice nodes folded into one unit,
 * and the variables each worker's script sets.
 */
#include "config/config.h"
#include "model/recipe.h"
#include "plan/plan.h"
#include "plan/worker_script.h"
#include "providers/gcp/tpu/gcp_multislice.h"
#include "providers/gcp/tpu/gcp_qr.h"
#include "state/state.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define FLEET_HEAD \
	"fleet: ms\nprovider: { gcp: { project: p } }\nrun: train\ngroups:\n" \
	"  - { name: a, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 1"

static int parse(struct tpf_fleet *f, const char *group_tail, struct tpf_diags *d)
{
	char *text = xasprintf("%s%s }\n", FLEET_HEAD, group_tail);
	int rc = tpf_fleet_parse(f, "fleet.yaml", text, strlen(text), d);
	free(text);
	return rc;
}

static void test_multislice__config(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	CHECK_INT(parse(&f, ", slices: 2", &d), 0);
	CHECK_INT(f.groups[0].slices, 2);
	CHECK_INT(f.groups[0].queued, 1); /* implied */
	tpf_fleet_release(&f);
	static const char *const bad[][2] = {
		{ ", slices: 0", "slices" },
		{ ", slices: two", "slices" },
		{ ", slices: 2, queued: false", "queued: false" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tpf_diags e = TPF_DIAGS_INIT;
		CHECK(parse(&f, bad[i][0], &e) != 0);
		CHECK(e.n > 0 && strstr(e.items[0].summary, bad[i][1]));
		tpf_diags_release(&e);
	}
	tpf_diags_release(&d);
}

static const struct tpf_change *change(const struct tpf_action *a, const char *field)
{
	for (size_t i = 0; i < a->nchanges; i++)
		if (!strcmp(a->changes[i].field, field))
			return &a->changes[i];
	return NULL;
}

/* The desired unit, and the plan: a create showing the slices; a live unit
 * of another slice count is replaced, "slices" forcing it. */
static void test_multislice__plan(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	struct tpf_state st;
	struct tpf_desired_set ds = { 0 };
	struct tpf_live_set live = { 0 };
	struct tpf_plan p;
	CHECK_INT(parse(&f, ", slices: 3", &d), 0);
	tpf_state_init(&st);
	CHECK_INT(tpf_desired_compute(&ds, &f, NULL, &st, &d), 0);
	CHECK_INT((int)ds.n, 1);
	const struct tpf_desired_node *dn = &ds.nodes[0];
	CHECK_INT(dn->recipe.slices, 3);
	CHECK_INT(dn->recipe.workers, 6); /* 3 slices of 2 */
	CHECK_INT(dn->recipe.queued, 1);
	struct tpf_diff_input in = { .fleet = &f, .desired = &ds, .state = &st, .live = &live };
	memset(&p, 0, sizeof(p));
	CHECK_INT(tpf_diff(&p, &in, &d), 0);
	CHECK(p.n == 1 && p.actions[0].kind == TPF_ACT_CREATE);
	const struct tpf_change *c = p.n ? change(&p.actions[0], "slices") : NULL;
	CHECK(c && !strcmp(c->after, "3"));
	tpf_plan_release(&p);

	struct tpf_live_node *ln = tpf_live_set_add(&live);
	ln->name = xstrdup(dn->name);
	ln->id = xstrdup("1");
	ln->state = xstrdup("READY");
	tpf_recipe_copy(&ln->recipe, &dn->recipe);
	xstrset(&ln->recipe.zone, "z1");
	ln->recipe.slices = 2;
	ln->recipe.workers = 4;
	memset(&p, 0, sizeof(p));
	CHECK_INT(tpf_diff(&p, &in, &d), 0);
	CHECK(p.n == 1 && p.actions[0].kind == TPF_ACT_REPLACE);
	c = p.n ? change(&p.actions[0], "slices") : NULL;
	CHECK(c && c->forces && !strcmp(c->before, "2") && !strcmp(c->after, "3"));
	tpf_plan_release(&p);
	tpf_live_set_release(&live);
	tpf_desired_release(&ds);
	tpf_state_release(&st);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

static void recipe_fill(struct tpf_recipe *r, int slices)
{
	r->accelerator_type = xstrdup("v4-16");
	r->runtime_version = xstrdup("rt");
	r->zone = xstrdup("z1");
	r->queued = 1;
	r->slices = slices;
	r->workers = 2 * (slices > 1 ? slices : 1);
	tpf_kvlist_set(&r->labels, TPF_LABEL_FLEET, "ms");
}

static void test_multislice__create_body(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_recipe r = { 0 };
	recipe_fill(&r, 2);
	json_t *b = tpf_gcp_qr_body("p", "ms-a-0", &r, 0, NULL, &d);
	json_t *spec = json_array_get(json_object_get(json_object_get(b, "tpu"), "nodeSpec"), 0);
	CHECK(json_object_get(spec, "nodeId") == NULL);
	char *mp = json_dumps(json_object_get(spec, "multisliceParams"), JSON_COMPACT | JSON_SORT_KEYS);
	CHECK_STR(mp, "{\"nodeCount\":2,\"nodeIdPrefix\":\"ms-a-0\"}");
	free(mp);
	json_decref(b);
	tpf_recipe_release(&r);
	recipe_fill(&r, 0); /* one slice: as before */
	b = tpf_gcp_qr_body("p", "ms-a-0", &r, 0, NULL, &d);
	spec = json_array_get(json_object_get(json_object_get(b, "tpu"), "nodeSpec"), 0);
	CHECK_STR(json_string_value(json_object_get(spec, "nodeId")), "ms-a-0");
	CHECK(json_object_get(spec, "multisliceParams") == NULL);
	json_decref(b);
	tpf_recipe_release(&r);
	tpf_diags_release(&d);
}

static json_t *qr_json(const char *prefix_field, const char *state)
{
	json_t *q = json_pack("{s:s, s:{s:s}, s:{s:[{s:s, s:{s:i}, s:{s:s, s:s, s:{s:s}}}]}}",
			      "name", "projects/p/locations/z1/queuedResources/ms-a-0", "state",
			      "state", state, "tpu", "nodeSpec", "parent", "projects/p/locations/z1",
			      "multisliceParams", "nodeCount", 2, "node", "acceleratorType", "v4-16",
			      "runtimeVersion", "rt", "labels", "tpuform-fleet", "ms");
	if (prefix_field) {
		json_t *spec = json_array_get(json_object_get(json_object_get(q, "tpu"), "nodeSpec"), 0);
		json_object_set_new(json_object_get(spec, "multisliceParams"), "nodeIdPrefix",
				    json_string(prefix_field));
	}
	return q;
}

static void test_multislice__parse(void)
{
	struct tpf_gcp_qr q = { 0 };
	json_t *j = qr_json("ms-a-0", "ACTIVE");
	CHECK_INT(tpf_gcp_qr_parse(j, "z1", &q), 0);
	CHECK_STR(q.node_id, "ms-a-0");
	CHECK_INT(q.recipe.slices, 2);
	CHECK_INT(q.recipe.workers, 4);
	json_decref(j);
	/* no nodeIdPrefix: the queued resource's id is the prefix */
	j = qr_json(NULL, "ACTIVE");
	CHECK_INT(tpf_gcp_qr_parse(j, "z1", &q), 0);
	CHECK_STR(q.node_id, "ms-a-0");
	json_decref(j);
	tpf_gcp_qr_release(&q);
}

static void add_slice(struct tpf_live_set *s, const char *name, const char *state, const char *ip0)
{
	struct tpf_live_node *n = tpf_live_set_add(s);
	n->name = xstrdup(name);
	n->id = xasprintf("id-%s", name);
	n->state = xstrdup(state);
	n->recipe.zone = xstrdup("z1");
	n->recipe.workers = 2;
	n->endpoints = xcalloc(2, sizeof(*n->endpoints));
	n->nendpoints = 2;
	n->endpoints[0].ip = xstrdup(ip0);
	n->endpoints[1].ip = xasprintf("%s1", ip0);
}

/* Fold the set's slices with queued resource state qs; the unit's state
 * and its endpoints' first addresses joined, into out. */
static void fold(const char *s0, const char *s1, const char *qs, char *out, size_t len)
{
	struct tpf_gcp_qr q = { 0 };
	json_t *j = qr_json("ms-a-0", qs);
	struct tpf_live_set set = { 0 };
	tpf_gcp_qr_parse(j, "z1", &q);
	add_slice(&set, "other", "READY", "9.9.9.");
	/* slice 1 listed before slice 0: the unit still numbers slice 0 first */
	if (s1)
		add_slice(&set, "ms-a-0-1", s1, "1.1.1.");
	if (s0)
		add_slice(&set, "ms-a-0-0", s0, "0.0.0.");
	tpf_gcp_qr_merge(&set, &q, 1);
	const struct tpf_live_node *u = tpf_live_set_find(&set, "ms-a-0");
	CHECK_INT((int)set.n, 2); /* "other" and the unit */
	CHECK(tpf_live_set_find(&set, "ms-a-0-0") == NULL && tpf_live_set_find(&set, "ms-a-0-1") == NULL);
	snprintf(out, len, "%s", "none");
	if (u) {
		int n = snprintf(out, len, "%s %s %d/%d:", u->state, u->queued_state ? u->queued_state : "-",
				 u->recipe.workers, u->recipe.slices);
		for (size_t i = 0; i < u->nendpoints && n > 0 && (size_t)n < len; i++)
			n += snprintf(out + n, len - (size_t)n, " %s", u->endpoints[i].ip);
	}
	tpf_live_set_release(&set);
	tpf_gcp_qr_release(&q);
	json_decref(j);
}

static void test_multislice__fold(void)
{
	char got[256];
	fold("READY", "READY", "ACTIVE", got, sizeof(got));
	CHECK_STR(got, "READY ACTIVE 4/2: 0.0.0. 0.0.0.1 1.1.1. 1.1.1.1");
	fold("READY", "PREEMPTED", "ACTIVE", got, sizeof(got));
	CHECK_STR(got, "PREEMPTED ACTIVE 4/2: 0.0.0. 0.0.0.1 1.1.1. 1.1.1.1");
	fold("READY", "CREATING", "PROVISIONING", got, sizeof(got));
	CHECK_STR(got, "CREATING PROVISIONING 4/2: 0.0.0. 0.0.0.1 1.1.1. 1.1.1.1");
	/* a slice gone while ACTIVE: the queued resource speaks (re-queued by the diff) */
	fold("READY", NULL, "ACTIVE", got, sizeof(got));
	CHECK_STR(got, "ACTIVE ACTIVE 4/2: 0.0.0. 0.0.0.1");
	/* no slice yet: the queued resource stands for the unit */
	fold(NULL, NULL, "WAITING_FOR_RESOURCES", got, sizeof(got));
	CHECK_STR(got, "WAITING_FOR_RESOURCES WAITING_FOR_RESOURCES 4/2:");
	/* SUSPENDED: its state wins whatever the slices say */
	fold("READY", "READY", "SUSPENDED", got, sizeof(got));
	CHECK_STR(got, "SUSPENDED SUSPENDED 4/2: 0.0.0. 0.0.0.1 1.1.1. 1.1.1.1");
}

/* Worker w's script of a node of 2-worker slices. */
static char *script_of(const struct tpf_fleet *f, int slices, int w)
{
	struct tpf_state_node n = { 0 };
	struct tpf_live_node live = { 0 };
	n.name = xstrdup("ms-a-0");
	recipe_fill(&n.recipe, slices);
	n.job.run = xstrdup("train");
	n.generation = 1;
	live.endpoints = xcalloc(1, sizeof(*live.endpoints));
	live.nendpoints = 1;
	live.endpoints[0].ip = xstrdup("10.0.0.2");
	char *s = tpf_provision_render(f, &n, &live, w, NULL);
	tpf_live_node_release(&live);
	free(n.name);
	tpf_recipe_release(&n.recipe);
	free(n.job.run);
	return s;
}

static void test_multislice__worker_script(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	CHECK_INT(parse(&f, ", slices: 2", &d), 0);
	char *s = script_of(&f, 2, 3);
	CHECK(strstr(s, "export TPUFORM_WORKER_ID='3'\n"));
	CHECK(strstr(s, "export TPUFORM_NUM_WORKERS='4'\n"));
	CHECK(strstr(s, "export TPUFORM_RETRY='1'\n"));
	CHECK(strstr(s, "export TPUFORM_SLICE_ID='1'\n"));
	CHECK(strstr(s, "export TPUFORM_NUM_SLICES='2'\n"));
	CHECK(strstr(s, ": ${MEGASCALE_COORDINATOR_ADDRESS:='10.0.0.2'}\nexport MEGASCALE_COORDINATOR_ADDRESS\n"));
	CHECK(strstr(s, ": ${MEGASCALE_SLICE_ID:='1'}\n"));
	CHECK(strstr(s, ": ${MEGASCALE_NUM_SLICES:='2'}\n"));
	CHECK(strstr(s, ": ${MEGASCALE_PORT:='8081'}\n"));
	free(s);
	s = script_of(&f, 2, 1);
	CHECK(strstr(s, "export TPUFORM_SLICE_ID='0'\n"));
	free(s);
	/* one slice: none of it, so single-slice scripts (and their hashes) stay as they were */
	s = script_of(&f, 0, 1);
	CHECK(!strstr(s, "SLICE") && !strstr(s, "MEGASCALE"));
	free(s);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

int main(void)
{
	RUN(test_multislice__config);
	RUN(test_multislice__plan);
	RUN(test_multislice__create_body);
	RUN(test_multislice__parse);
	RUN(test_multislice__fold);
	RUN(test_multislice__worker_script);
	return unit_done();
}
