/*
 * Compute Engine nodes in the diff (plan/diff_compute.c, plan/diff.c):
 * moving a group between APIs replaces its nodes and the plan says why;
 * machine type, image, boot disk, termination action and maxRunDuration
 * force replacement; a node as declared is left alone; a new node's plan
 * shows every compute field and no Cloud TPU API field.
 */
#include "plan/plan.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLEET                                                                            \
	"fleet: f\nprovider: { gcp: { project: p } }\nrun: train\n"                         \
	"groups:\n  - name: a\n    machine_type: ct6e-standard-4t\n"                      \
	"    zones: [us-east5-b]\n    count: 1\n    spot: true\n    max_run_duration: 2h\n"

struct result {
	int kind; /* -1: no action */
	char code[32];
	char reason[128];
	char lines[512]; /* "field!" (forces) or "field", comma-joined */
};

/* mutate(live, recorded): how the node differs; live NULL: no live node. */
static void plan_one(void (*mutate)(struct tpf_recipe *live, struct tpf_recipe *recorded),
		     int with_live, struct result *res)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_fleet_parse(&f, "fleet.yaml", FLEET, strlen(FLEET), &d) == 0);
	struct tpf_state st;
	tpf_state_init(&st);
	struct tpf_desired_set ds = { 0 };
	CHECK(tpf_desired_compute(&ds, &f, NULL, &st, &d) == 0);
	const struct tpf_desired_node *dn = &ds.nodes[0];
	struct tpf_live_set live = { 0 };
	if (with_live) {
		struct tpf_state_node *sn = tpf_state_add(&st, dn->name);
		sn->status = TPF_NODE_CREATED;
		xstrset(&sn->id, "1");
		tpf_recipe_copy(&sn->recipe, &dn->recipe);
		tpf_job_copy(&sn->job, &dn->job);
		tpf_state_node_set_workers(sn, (size_t)dn->recipe.workers);
		struct tpf_live_node *ln = tpf_live_set_add(&live);
		ln->name = xstrdup(dn->name);
		ln->id = xstrdup("1");
		ln->state = xstrdup("READY");
		tpf_recipe_copy(&ln->recipe, &dn->recipe);
		/* An instance does not report its image or disk type. */
		xstrset(&ln->recipe.compute.image, NULL);
		xstrset(&ln->recipe.compute.disk_type, NULL);
		mutate(&ln->recipe, &sn->recipe);
	}
	struct tpf_diff_input in = { .fleet = &f, .desired = &ds, .state = &st, .live = &live };
	struct tpf_plan p;
	CHECK_INT(tpf_diff(&p, &in, &d), 0);
	memset(res, 0, sizeof(*res));
	res->kind = -1;
	for (size_t i = 0; i < p.n; i++) {
		const struct tpf_action *a = &p.actions[i];
		if (a->kind != TPF_ACT_REPLACE && a->kind != TPF_ACT_CREATE)
			continue;
		res->kind = (int)a->kind;
		snprintf(res->code, sizeof(res->code), "%s", a->reason_code ? a->reason_code : "");
		snprintf(res->reason, sizeof(res->reason), "%s", a->reason ? a->reason : "");
		for (size_t k = 0; k < a->nchanges; k++) {
			const struct tpf_change *c = &a->changes[k];
			size_t n = strlen(res->lines);
			snprintf(res->lines + n, sizeof(res->lines) - n, "%s%s%s", n ? "," : "",
				 c->field, c->forces ? "!" : "");
		}
	}
	tpf_plan_release(&p);
	tpf_live_set_release(&live);
	tpf_desired_release(&ds);
	tpf_state_release(&st);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

static void same(struct tpf_recipe *l, struct tpf_recipe *s) { (void)l; (void)s; }
static void on_tpu_api(struct tpf_recipe *l, struct tpf_recipe *s)
{
	tpf_compute_release(&l->compute);
	tpf_compute_release(&s->compute);
	xstrset(&l->accelerator_type, "v6e-4");
	xstrset(&l->runtime_version, "v2-alpha-tpuv6e");
	xstrset(&l->node.topology, NULL);
}
static void machine(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)s;
	xstrset(&l->compute.machine_type, "ct6e-standard-8t");
}
static void image(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)l;
	xstrset(&s->compute.image, "projects/x/global/images/old");
}
static void disk(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)l;
	s->compute.disk_size_gb = 100;
}
static void stop(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)s;
	xstrset(&l->compute.termination_action, "STOP");
}
static void run_time(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)s;
	l->compute.max_run_duration = 3600;
}
static void on_demand(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)s;
	l->spot = 0;
	xstrset(&l->compute.termination_action, NULL);
}

#define FLEX_FLEET                                                                       \
	"fleet: f\nprovider: { gcp: { project: p } }\nrun: train\n"                         \
	"groups:\n  - name: a\n    machine_type: ct6e-standard-4t\n"                      \
	"    zones: [us-east5-b]\n    count: 1\n"                                          \
	"    flex_start: { max_run_duration: 24h, wait: 1h }\n"

/*
 * A flex-start node waiting for capacity (capacity_wait, created at T0 =
 * 2026-01-01T00:00:00Z), planned `waited` seconds later: the plan's one
 * action (kind, reason code and text in *res; kind -1: none) and its
 * unconverged note (note, may be "").
 */
static void plan_flex(double waited, int recorded, struct result *res, char *note, size_t nn)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_fleet_parse(&f, "fleet.yaml", FLEX_FLEET, strlen(FLEX_FLEET), &d) == 0);
	struct tpf_state st;
	tpf_state_init(&st);
	struct tpf_desired_set ds = { 0 };
	CHECK(tpf_desired_compute(&ds, &f, NULL, &st, &d) == 0);
	const struct tpf_desired_node *dn = &ds.nodes[0];
	if (recorded) {
		struct tpf_state_node *sn = tpf_state_add(&st, dn->name);
		sn->status = TPF_NODE_CREATED;
		xstrset(&sn->id, "1");
		tpf_recipe_copy(&sn->recipe, &dn->recipe);
		tpf_job_copy(&sn->job, &dn->job);
		tpf_state_node_set_workers(sn, (size_t)dn->recipe.workers);
	}
	struct tpf_live_set live = { 0 };
	struct tpf_live_node *ln = tpf_live_set_add(&live);
	ln->name = xstrdup(dn->name);
	ln->id = xstrdup("1");
	ln->state = xstrdup("CREATING");
	ln->create_time = xstrdup("2026-01-01T00:00:00.000-00:00");
	ln->capacity_wait = 1;
	tpf_recipe_copy(&ln->recipe, &dn->recipe);
	xstrset(&ln->recipe.compute.image, NULL);
	xstrset(&ln->recipe.compute.disk_type, NULL);
	ln->recipe.compute.flex_wait = 0; /* the API does not know it */
	double t0 = 1767225600.0; /* 2026-01-01T00:00:00Z */
	struct tpf_diff_input in = { .fleet = &f, .desired = &ds, .state = &st, .live = &live,
				     .now = t0 + waited };
	struct tpf_plan p;
	CHECK_INT(tpf_diff(&p, &in, &d), 0);
	memset(res, 0, sizeof(*res));
	res->kind = -1;
	CHECK(p.n <= 1);
	if (p.n) {
		res->kind = (int)p.actions[0].kind;
		snprintf(res->code, sizeof(res->code), "%s", p.actions[0].reason_code ?: "");
		snprintf(res->reason, sizeof(res->reason), "%s", p.actions[0].reason ?: "");
	}
	snprintf(note, nn, "%s", p.nunconverged ? p.unconverged[0].reason : "");
	tpf_plan_release(&p);
	tpf_live_set_release(&live);
	tpf_desired_release(&ds);
	tpf_state_release(&st);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

static void test_compute_diff__flex_waiting_then_given_up(void)
{
	struct result r;
	char note[256];
	/* 10 minutes in: waiting, shown as such, no action (nothing blocks) */
	plan_flex(600, 1, &r, note, sizeof(note));
	CHECK_INT(r.kind, -1);
	CHECK(strstr(note, "waiting for flex-start capacity in zone us-east5-b") != NULL);
	CHECK(strstr(note, "10m0s of flex_start.wait 1h0m0s") != NULL);
	/* not recorded (an interrupted apply): adopted, still waiting */
	plan_flex(600, 0, &r, note, sizeof(note));
	CHECK_INT(r.kind, TPF_ACT_UPDATE);
	CHECK_STR(r.code, "adopt");
	/* past `wait`: given up, replaced (deleted and requested again) */
	plan_flex(3600, 1, &r, note, sizeof(note));
	CHECK_INT(r.kind, TPF_ACT_REPLACE);
	CHECK_STR(r.code, "flex_wait");
	CHECK(strstr(r.reason, "waited 1h0m0s for flex-start capacity in zone us-east5-b") != NULL);
	CHECK(strstr(r.reason, "given up") != NULL);
}

#define MS_FLEET                                                                         \
	"fleet: f\nprovider: { gcp: { project: p } }\nrun: train\n"                         \
	"groups:\n  - name: a\n    machine_type: tpu7x-standard-4t\n    topology: 2x2x2\n"   \
	"    zones: [us-central1-c]\n    count: 1\n    slices: 3\n    spot: true\n"

/* A 3-slice Compute Engine node whose slices `lost` are lost (NULL: none):
 * the plan's one action into *res and its keep_parts (-1: no action). */
static int plan_ms(const char *lost, const char *machine, struct result *res)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_fleet_parse(&f, "fleet.yaml", MS_FLEET, strlen(MS_FLEET), &d) == 0);
	struct tpf_state st;
	tpf_state_init(&st);
	struct tpf_desired_set ds = { 0 };
	CHECK(tpf_desired_compute(&ds, &f, NULL, &st, &d) == 0);
	const struct tpf_desired_node *dn = &ds.nodes[0];
	CHECK_INT(dn->recipe.workers, 6);
	struct tpf_state_node *sn = tpf_state_add(&st, dn->name);
	sn->status = TPF_NODE_CREATED;
	xstrset(&sn->id, "1");
	tpf_recipe_copy(&sn->recipe, &dn->recipe);
	tpf_job_copy(&sn->job, &dn->job);
	tpf_state_node_set_workers(sn, (size_t)dn->recipe.workers);
	struct tpf_live_set live = { 0 };
	struct tpf_live_node *ln = tpf_live_set_add(&live);
	ln->name = xstrdup(dn->name);
	ln->id = xstrdup("1");
	ln->state = xstrdup(lost ? "PREEMPTED" : "READY");
	ln->lost_slices = lost ? xstrdup(lost) : NULL;
	tpf_recipe_copy(&ln->recipe, &dn->recipe);
	xstrset(&ln->recipe.compute.image, NULL);
	xstrset(&ln->recipe.compute.disk_type, NULL);
	if (machine)
		xstrset(&ln->recipe.compute.machine_type, machine);
	struct tpf_diff_input in = { .fleet = &f, .desired = &ds, .state = &st, .live = &live };
	struct tpf_plan p;
	CHECK_INT(tpf_diff(&p, &in, &d), 0);
	memset(res, 0, sizeof(*res));
	res->kind = -1;
	int keep = -1;
	for (size_t i = 0; i < p.n; i++)
		if (p.actions[i].kind == TPF_ACT_REPLACE) {
			res->kind = TPF_ACT_REPLACE;
			keep = p.actions[i].keep_parts;
			snprintf(res->code, sizeof(res->code), "%s", p.actions[i].reason_code ?: "");
			snprintf(res->reason, sizeof(res->reason), "%s", p.actions[i].reason ?: "");
		}
	tpf_plan_release(&p);
	tpf_live_set_release(&live);
	tpf_desired_release(&ds);
	tpf_state_release(&st);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
	return keep;
}

static void test_compute_diff__multislice_one_slice_lost(void)
{
	struct result r;
	/* one slice of three: only it is recreated (no delete first) */
	CHECK_INT(plan_ms("1", NULL, &r), 1);
	CHECK_STR(r.code, "preempted"); /* a lost node, for watch's events */
	CHECK_STR(r.reason, "slice 1 of 3 is preempted: only it is recreated, and every worker "
			    "of every slice restarts");
	CHECK_INT(plan_ms("0,2", NULL, &r), 1);
	CHECK(strstr(r.reason, "slices 0,2 of 3 are preempted") != NULL);
	/* every slice lost: a plain replace */
	CHECK_INT(plan_ms("0,1,2", NULL, &r), 0);
	CHECK_STR(r.code, "preempted");
	/* a field that forces replacement changed too: every slice goes */
	CHECK_INT(plan_ms("1", "ct5p-hightpu-4t", &r), 0);
	/* nothing lost: nothing replaced */
	CHECK_INT(plan_ms(NULL, NULL, &r), -1);
}

static void test_compute_diff__replacements(void)
{
	struct result r;
	plan_one(same, 1, &r);
	CHECKF(r.kind == -1, "a node as declared: no action, got %s", r.lines);
	plan_one(on_tpu_api, 1, &r);
	CHECK_INT(r.kind, TPF_ACT_REPLACE);
	CHECK_STR(r.code, "api");
	CHECK_STR(r.reason, "moving a group between APIs replaces its nodes");
	CHECKF(strstr(r.lines, "api!") != NULL, "lines: %s", r.lines);
	static const struct {
		void (*fn)(struct tpf_recipe *, struct tpf_recipe *);
		const char *line;
	} cases[] = {
		{ machine, "machine_type!" }, { image, "image!" },
		{ disk, "boot_disk_size_gb!" }, { stop, "termination_action!" },
		{ run_time, "max_run_duration!" }, { on_demand, "scheduling!" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		plan_one(cases[i].fn, 1, &r);
		CHECK_INT(r.kind, TPF_ACT_REPLACE);
		CHECK_STR(r.code, "recipe");
		CHECKF(strstr(r.lines, cases[i].line) != NULL, "%s in %s", cases[i].line, r.lines);
		CHECKF(strstr(r.lines, "api") == NULL, "no api line in %s", r.lines);
	}
}

static void test_compute_diff__new_node_shows_every_field(void)
{
	struct result r;
	plan_one(same, 0, &r);
	CHECK_INT(r.kind, TPF_ACT_CREATE);
	static const char *const want[] = { "api",	 "machine_type",      "image",
					    "boot_disk_size_gb", "boot_disk_type", "max_run_duration",
					    "termination_action", "topology",     "scheduling",
					    "zone",	 "workers",	     "labels" };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char field[64];
		snprintf(field, sizeof(field), ",%s", want[i]);
		char lines[600];
		snprintf(lines, sizeof(lines), ",%s", r.lines);
		CHECKF(strstr(lines, field) != NULL, "%s in %s", want[i], r.lines);
	}
	CHECKF(strstr(r.lines, "accelerator_type") == NULL, "no accelerator_type: %s", r.lines);
	CHECKF(strstr(r.lines, "runtime_version") == NULL, "no runtime_version: %s", r.lines);
}

int main(void)
{
	RUN(test_compute_diff__replacements);
	RUN(test_compute_diff__flex_waiting_then_given_up);
	RUN(test_compute_diff__multislice_one_slice_lost);
	RUN(test_compute_diff__new_node_shows_every_field);
	return unit_done();
}
