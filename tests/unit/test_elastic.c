/*
 * Elastic slices (issue 30; plan/elastic.c, plan/worker_script.c,
 * templates/render.c): the running-slice list, and what each worker's
 * script says while the job runs on some of its slices: the running slices
 * renumbered 0 .. k-1, the coordinator the first running slice's first
 * worker, and $TPUFORM_ELASTIC; without `elastic` nothing changes.
 */
#include "config/config.h"
#include "engine/ledger/ledger_losses.h"
#include "model/chips.h"
#include "plan/elastic.h"
#include "plan/plan.h"
#include "plan/worker_script.h"
#include "providers/gcp/compute/compute_engine.h"
#include "state/state.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLEET_HEAD                                                                     \
	"fleet: el\nprovider: { gcp: { project: p } }\nrun: train\ngroups:\n"          \
	"  - { name: a, machine_type: tpu7x-standard-4t, topology: 2x2x2, zones: [z1], " \
	"count: 1, slices: 3"

static int parse(struct tpf_fleet *f, const char *tail)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *text = xasprintf("%s%s }\n", FLEET_HEAD, tail);
	int rc = tpf_fleet_parse(f, "fleet.yaml", text, strlen(text), &d);
	free(text);
	tpf_diags_release(&d);
	return rc;
}

static void test_elastic__running(void)
{
	static const struct {
		const char *list;
		int n, count;
		const char *on;
	} cases[] = {
		{ NULL, 3, 3, "111" },	  { "0,2", 3, 2, "101" }, { "1", 3, 1, "010" },
		{ "0,1,2", 3, 3, "111" }, { "", 3, -1, "111" },	   { "3", 3, -1, "111" },
		{ "2,0", 3, -1, "111" },  { "1,1", 3, -1, "111" }, { "0,", 3, -1, "111" },
		{ "0;1", 3, -1, "111" },  { "-1", 3, -1, "111" },  { "10", 12, 1, "000000000010" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned char on[16];
		char got[17] = "";
		int count = tpf_elastic_running(cases[i].list, cases[i].n, on);
		for (int k = 0; k < cases[i].n; k++)
			got[k] = on[k] ? '1' : '0';
		got[cases[i].n] = 0;
		CHECKF(count == cases[i].count && !strcmp(got, cases[i].on),
		       "'%s' of %d: %d %s, want %d %s", cases[i].list ? cases[i].list : "(null)",
		       cases[i].n, count, got, cases[i].count, cases[i].on);
	}
	unsigned char on[3] = { 1, 0, 1 };
	char *l = tpf_elastic_list(on, 3);
	CHECK_STR(l, "0,2");
	free(l);
}

/* Worker w's script of a 3-slice node of 2-VM slices running on `running`
 * (NULL: every slice); the live unit has 6 endpoints 10.0.0.1 .. 10.0.0.6. */
static char *script_of(const struct tpf_fleet *f, const char *running, int w)
{
	struct tpf_state_node n = { 0 };
	struct tpf_live_node live = { 0 };
	n.name = xstrdup("el-a-0");
	n.group = xstrdup("a");
	n.recipe.slices = 3;
	n.recipe.workers = 6;
	n.recipe.compute.api = TPF_API_COMPUTE;
	n.job.run = xstrdup("train");
	n.elastic_slices = xstrdup(running);
	live.endpoints = xcalloc(6, sizeof(*live.endpoints));
	live.nendpoints = 6;
	for (int i = 0; i < 6; i++)
		live.endpoints[i].ip = xasprintf("10.0.0.%d", i + 1);
	char *s = tpf_provision_render(f, &n, &live, w, NULL);
	tpf_live_node_release(&live);
	tpf_state_node_release(&n);
	return s;
}

/* The value the script gives NAME: "export NAME='V'" or ": ${NAME:='V'}". */
static void value_of(const char *s, const char *name, char *out, size_t len)
{
	char *k1 = xasprintf("export %s='", name), *k2 = xasprintf(": ${%s:='", name);
	const char *p = strstr(s, k1);
	size_t skip = strlen(k1);
	if (!p) {
		p = strstr(s, k2);
		skip = strlen(k2);
	}
	*out = 0;
	if (p) {
		p += skip;
		size_t n = strcspn(p, "'");
		snprintf(out, len, "%.*s", (int)n, p);
	}
	free(k1);
	free(k2);
}

static void expect(const struct tpf_fleet *f, const char *running, int w, const char *want)
{
	static const char *const names[] = { "TPUFORM_SLICE_ID", "TPUFORM_NUM_SLICES",
					     "MEGASCALE_SLICE_ID", "MEGASCALE_NUM_SLICES",
					     "MEGASCALE_COORDINATOR_ADDRESS", "TPUFORM_COORDINATOR",
					     "TPU_WORKER_ID", "TPUFORM_ELASTIC" };
	char *s = script_of(f, running, w);
	char got[512] = "", v[128];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		value_of(s, names[i], v, sizeof(v));
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? " " : "", v);
	}
	CHECKF(!strcmp(got, want), "running %s, worker %d: '%s', want '%s'",
	       running ? running : "all", w, got, want);
	free(s);
}

static void test_elastic__scripts(void)
{
	struct tpf_fleet f;
	if (parse(&f, ", elastic: { min_slices: 2 }")) {
		CHECK(!"the fleet parses");
		return;
	}
	/* every slice: the plain numbering, and TPUFORM_ELASTIC 3/3 */
	expect(&f, NULL, 0, "0 3 0 3 10.0.0.1 10.0.0.1 0 3/3");
	expect(&f, NULL, 5, "2 3 2 3 10.0.0.1 10.0.0.1 1 3/3");
	/* slice 1 lost: slices 0 and 2 run as slices 0 and 1 of 2 */
	expect(&f, "0,2", 0, "0 2 0 2 10.0.0.1 10.0.0.1 0 2/3");
	expect(&f, "0,2", 1, "0 2 0 2 10.0.0.1 10.0.0.1 1 2/3");
	expect(&f, "0,2", 4, "1 2 1 2 10.0.0.1 10.0.0.1 0 2/3");
	expect(&f, "0,2", 5, "1 2 1 2 10.0.0.1 10.0.0.1 1 2/3");
	/* slice 0 lost: slice 1's first worker coordinates */
	expect(&f, "1,2", 2, "0 2 0 2 10.0.0.3 10.0.0.3 0 2/3");
	expect(&f, "1,2", 5, "1 2 1 2 10.0.0.3 10.0.0.3 1 2/3");
	tpf_fleet_release(&f);
	/* without elastic: no TPUFORM_ELASTIC, and the same script as before */
	if (parse(&f, "")) {
		CHECK(!"the fleet parses");
		return;
	}
	expect(&f, NULL, 4, "2 3 2 3 10.0.0.1 10.0.0.1 0 ");
	char *s = script_of(&f, NULL, 3);
	CHECK(!strstr(s, "ELASTIC"));
	free(s);
	tpf_fleet_release(&f);
}

/* The plan of node el-a-0 (state: created, its job on `running`, NULL:
 * every slice) whose live unit is `state` with `lost` slices lost. */
static void plan_of(const struct tpf_fleet *f, const char *running, const char *state,
		    const char *lost, struct tpf_plan *p)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state st;
	struct tpf_desired_set ds = { 0 };
	struct tpf_live_set live = { 0 };
	tpf_state_init(&st);
	tpf_desired_compute(&ds, f, NULL, &st, &d);
	const struct tpf_desired_node *dn = &ds.nodes[0];
	tpf_state_record_pending(&st, dn->name, dn->group, dn->index, &dn->recipe, &dn->job);
	tpf_state_record_created(&st, dn->name, "1", "2026-11-29T00:00:00Z");
	tpf_state_record_elastic(&st, dn->name, running);
	struct tpf_live_node *ln = tpf_live_set_add(&live);
	ln->name = xstrdup(dn->name);
	ln->id = xstrdup("1");
	ln->state = xstrdup(state);
	ln->lost_slices = xstrdup(lost);
	tpf_recipe_copy(&ln->recipe, &dn->recipe);
	struct tpf_diff_input in = { .fleet = f, .desired = &ds, .state = &st, .live = &live };
	memset(p, 0, sizeof(*p));
	CHECK_INT(tpf_diff(p, &in, &d), 0);
	tpf_live_set_release(&live);
	tpf_desired_release(&ds);
	tpf_state_release(&st);
	tpf_diags_release(&d);
}

static const char *change_after(const struct tpf_action *a, const char *field)
{
	for (size_t i = 0; i < a->nchanges; i++)
		if (!strcmp(a->changes[i].field, field))
			return a->changes[i].after;
	return "(none)";
}

static void workers_of(const struct tpf_action *a, char *out, size_t len)
{
	*out = 0;
	for (size_t i = 0; i < a->nworkers; i++)
		snprintf(out + strlen(out), len - strlen(out), "%s%d", i ? "," : "", a->workers[i]);
}

static void test_elastic__plan(void)
{
	struct tpf_fleet f;
	struct tpf_plan p;
	char ws[64];
	if (parse(&f, ", elastic: { min_slices: 2 }")) {
		CHECK(!"the fleet parses");
		return;
	}
	/* slice 1 lost, 2 left >= min_slices: shrink onto slices 0 and 2 */
	plan_of(&f, NULL, "PREEMPTED", "1", &p);
	CHECK_INT((int)p.n, 1);
	if (p.n) {
		const struct tpf_action *a = &p.actions[0];
		CHECK(a->kind == TPF_ACT_REPLACE && a->keep_parts && a->gang);
		CHECK_INT(a->elastic, TPF_ELASTIC_SHRINK);
		CHECK_STR(a->elastic_slices, "0,2");
		workers_of(a, ws, sizeof(ws));
		CHECK_STR(ws, "0,1,4,5");
		CHECK_STR(change_after(a, "running_slices"), "\"2/3\"");
		CHECK(strstr(a->reason, "restarts on the 2 other slices (0,2)") != NULL);
		CHECK(!strstr(a->reason, "every worker of every slice"));
		/* a saved plan keeps it */
		struct tpf_plan back;
		struct tpf_diags d = TPF_DIAGS_INIT;
		json_t *j = tpf_plan_to_json(&p);
		memset(&back, 0, sizeof(back));
		CHECK_INT(tpf_plan_from_json(&back, j, "plan", &d), 0);
		CHECK(back.n == 1 && back.actions[0].elastic == TPF_ELASTIC_SHRINK &&
		      back.actions[0].elastic_slices &&
		      !strcmp(back.actions[0].elastic_slices, "0,2") && back.actions[0].gang);
		json_decref(j);
		tpf_plan_release(&back);
		tpf_diags_release(&d);
	}
	tpf_plan_release(&p);
	/* the job runs on 0,2 already: only the lost slice is made again */
	plan_of(&f, "0,2", "PREEMPTED", "1", &p);
	CHECK(p.n == 1 && p.actions[0].elastic == TPF_ELASTIC_RECREATE &&
	      p.actions[0].nworkers == 0 && p.actions[0].reason_kind == TPF_REASON_REFUSED);
	tpf_plan_release(&p);
	/* slices 0 and 1 lost: 1 left < min_slices: today's replace */
	plan_of(&f, NULL, "PREEMPTED", "0,1", &p);
	CHECK(p.n == 1 && p.actions[0].keep_parts && !p.actions[0].elastic &&
	      strstr(p.actions[0].reason, "every worker of every slice restarts"));
	/* the run ledger's preempted line names them, their VMs and chips
	 * (engine/ledger/ledger_losses.h) */
	if (p.n && p.actions[0].desired) {
		const struct tpf_recipe *rec = &p.actions[0].desired->recipe;
		struct tpf_slice_loss sl;
		tpf_slice_loss_of(&p.actions[0], &sl);
		CHECK_STR(p.actions[0].lost_slices, "0,1");
		CHECK_STR(sl.slices, "0,1");
		CHECK_INT(sl.vms, 2 * tpf_recipe_slice_workers(rec));
		CHECK(sl.chips > 0 && sl.chips == tpf_recipe_chips(rec) / tpf_recipe_slices(rec) * 2);
		free(sl.slices);
	}
	tpf_plan_release(&p);
	/* every slice READY again: grow, every worker, grow: checkpoint */
	plan_of(&f, "0,2", "READY", NULL, &p);
	CHECK(p.n == 1 && p.actions[0].kind == TPF_ACT_RESTART);
	if (p.n) {
		CHECK_INT(p.actions[0].elastic, TPF_ELASTIC_GROW);
		CHECK_INT(p.actions[0].elastic_checkpoint, 1);
		CHECK_STR(p.actions[0].reason_code, "grow");
		workers_of(&p.actions[0], ws, sizeof(ws));
		CHECK_STR(ws, "0,1,2,3,4,5");
		CHECK_STR(change_after(&p.actions[0], "running_slices"), "\"3/3\"");
	}
	tpf_plan_release(&p);
	/* the lost slice on its way: no action, the job goes on */
	plan_of(&f, "0,2", "CREATING", NULL, &p);
	CHECK_INT((int)p.n, 0);
	CHECK(p.nunconverged == 1 && strstr(p.unconverged[0].reason, "runs on 2 of 3 slices"));
	tpf_plan_release(&p);
	tpf_fleet_release(&f);
	/* without elastic: today's plan */
	if (parse(&f, "")) {
		CHECK(!"the fleet parses");
		return;
	}
	plan_of(&f, NULL, "PREEMPTED", "1", &p);
	CHECK(p.n == 1 && p.actions[0].keep_parts && !p.actions[0].elastic &&
	      strstr(p.actions[0].reason, "every worker of every slice restarts"));
	tpf_plan_release(&p);
	tpf_fleet_release(&f);
}

/* A Compute Engine unit with a slice lost gives each slice exactly its
 * workers' places, so that worker w of a running slice is endpoint w. */
static void test_elastic__unit_endpoints(void)
{
	struct tpf_live_node sl[3], out = { 0 };
	memset(sl, 0, sizeof(sl));
	for (int s = 0; s < 3; s++) {
		sl[s].name = xasprintf("f-g-0-%d", s);
		sl[s].id = xasprintf("%d", 100 + s);
		sl[s].state = xstrdup("READY");
		sl[s].recipe.workers = 2;
		sl[s].recipe.compute.api = TPF_API_COMPUTE;
		sl[s].endpoints = xcalloc(2, sizeof(*sl[s].endpoints));
		sl[s].nendpoints = 2;
		for (int w = 0; w < 2; w++)
			sl[s].endpoints[w].ip = xasprintf("10.0.%d.%d", s, w);
	}
	CHECK_INT(tpf_compute_unit_merge("f-g-0", sl, 3, &out), 0);
	CHECK_INT((int)out.nendpoints, 6);
	/* slice 1 lost with one VM gone: 6 places, slice 2's first is the 5th */
	xstrset(&sl[1].state, "PREEMPTED");
	sl[1].nendpoints = 1;
	CHECK_INT(tpf_compute_unit_merge("f-g-0", sl, 3, &out), 0);
	CHECK_STR(out.lost_slices, "1");
	CHECK_INT((int)out.nendpoints, 6);
	CHECK_STR(out.nendpoints == 6 ? out.endpoints[4].ip : NULL, "10.0.2.0");
	CHECK(out.nendpoints == 6 && !out.endpoints[3].ip);
	/* slice 0 gone too: its places are empty */
	tpf_live_node_release(&sl[0]);
	CHECK_INT(tpf_compute_unit_merge("f-g-0", sl, 3, &out), 0);
	CHECK_STR(out.lost_slices, "0,1");
	CHECK_INT((int)out.nendpoints, 6);
	CHECK(out.nendpoints == 6 && !out.endpoints[0].ip && !out.endpoints[1].ip);
	CHECK_STR(out.nendpoints == 6 ? out.endpoints[5].ip : NULL, "10.0.2.1");
	sl[1].nendpoints = 2;
	for (int s = 0; s < 3; s++)
		tpf_live_node_release(&sl[s]);
	tpf_live_node_release(&out);
}

int main(void)
{
	RUN(test_elastic__unit_endpoints);
	RUN(test_elastic__running);
	RUN(test_elastic__scripts);
	RUN(test_elastic__plan);
	return unit_done();
}
