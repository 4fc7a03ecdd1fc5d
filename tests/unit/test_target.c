/*
 * Targeted plans (plan/target.h): -target keeps only the named nodes'
 * actions, -replace turns or adds a requested replace, the mode checks;
 * refresh-only plans and their state update (plan/refresh_only.h); the
 * saved-plan fields and the `show -json` form of both.
 *
 * The fixture: fleet f, group a (count 3) and b (count 1) in zone z1; the
 * state has f-a-0, f-a-1, f-b-0 and f-old-0 (a group no longer declared),
 * all live. tpf_diff then plans: delete f-old-0, create f-a-2, and an
 * update of each other node (their workers were never provisioned).
 */
#include "plan/plan.h"
#include "plan/plan_json.h"
#include "engine/pipeline/targeted.h"
#include "plan/refresh_only.h"
#include "plan/target.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const FLEET =
	"fleet: f\n"
	"provider:\n  local: { root: /nonexistent }\n"
	"run: train\n"
	"groups:\n"
	"  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 3 }\n"
	"  - { name: b, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }\n";

struct fx {
	struct tpf_fleet f;
	struct tpf_state st;
	struct tpf_desired_set ds;
	struct tpf_live_set live;
	struct tpf_diff_input in;
	struct tpf_diags d;
};

/* As tpuform labels a node of the state whose lineage is `lineage`. */
static void recipe(struct tpf_recipe *r, const char *group, const char *index,
		   const char *lineage)
{
	char lin[TPF_LINEAGE_LABEL_LEN + 1];
	r->zone = xstrdup("z1");
	r->accelerator_type = xstrdup("v2-8");
	r->runtime_version = xstrdup("rt");
	r->workers = 1;
	tpf_kvlist_set(&r->labels, TPF_LABEL_FLEET, "f");
	tpf_kvlist_set(&r->labels, TPF_LABEL_GROUP, group);
	tpf_kvlist_set(&r->labels, TPF_LABEL_INDEX, index);
	if (tpf_lineage_label(lineage, lin))
		tpf_kvlist_set(&r->labels, TPF_LABEL_LINEAGE, lin);
	tpf_kvlist_sort(&r->labels);
}

static void add_state(struct fx *x, const char *name, const char *group, int index, const char *id)
{
	struct tpf_state_node *sn = tpf_state_add(&x->st, name);
	xstrset(&sn->group, group);
	sn->index = index;
	sn->status = TPF_NODE_CREATED;
	xstrset(&sn->id, id);
	char idx[16];
	snprintf(idx, sizeof(idx), "%d", index);
	recipe(&sn->recipe, group, idx, x->st.lineage);
	tpf_state_node_set_workers(sn, 1);
}

static struct tpf_live_node *add_live(struct fx *x, const char *name, const char *group,
				      const char *index, const char *id)
{
	struct tpf_live_node *ln = tpf_live_set_add(&x->live);
	ln->name = xstrdup(name);
	ln->id = xstrdup(id);
	ln->state = xstrdup("READY");
	recipe(&ln->recipe, group, index, x->st.lineage);
	return ln;
}

static void fx_open(struct fx *x)
{
	memset(x, 0, sizeof(*x));
	tpf_diags_init(&x->d);
	CHECK_INT(tpf_fleet_parse(&x->f, "fleet.yaml", FLEET, strlen(FLEET), &x->d), 0);
	tpf_state_init(&x->st);
	x->st.serial = 4;
	add_state(x, "f-a-0", "a", 0, "100");
	add_state(x, "f-a-1", "a", 1, "101");
	add_state(x, "f-b-0", "b", 0, "200");
	add_state(x, "f-old-0", "old", 0, "900");
	add_live(x, "f-a-0", "a", "0", "100");
	add_live(x, "f-a-1", "a", "1", "101");
	add_live(x, "f-b-0", "b", "0", "200");
	add_live(x, "f-old-0", "old", "0", "900");
	tpf_desired_compute(&x->ds, &x->f, NULL, &x->st, &x->d);
	struct tpf_diff_input in = {
		.fleet = &x->f, .desired = &x->ds, .state = &x->st, .live = &x->live,
	};
	x->in = in;
}

static void fx_close(struct fx *x)
{
	tpf_live_set_release(&x->live);
	tpf_desired_release(&x->ds);
	tpf_state_release(&x->st);
	tpf_fleet_release(&x->f);
	tpf_diags_release(&x->d);
}

/* "kind:node(reason)" for every action, in order. */
static char *actions(const struct tpf_plan *p)
{
	static const char *kinds[] = { "create", "delete", "replace", "update",
				       "restart", "wait", "forget" };
	struct tpf_buf b = TPF_BUF_INIT;
	for (size_t i = 0; i < p->n; i++) {
		const struct tpf_action *a = &p->actions[i];
		tpf_buf_addf(&b, "%s%s:%s", i ? " " : "", kinds[a->kind], a->node);
		if (a->reason_code)
			tpf_buf_addf(&b, "(%s)", a->reason_code);
	}
	return tpf_buf_detach(&b, NULL);
}

static void check_actions(const struct tpf_plan *p, const char *want)
{
	char *got = actions(p);
	CHECK_STR(got, want);
	free(got);
}

static void test_target__keeps_only_the_named_nodes(void)
{
	struct fx x;
	fx_open(&x);
	struct tpf_plan p;
	CHECK_INT(tpf_diff(&p, &x.in, &x.d), 0);
	check_actions(&p, "delete:f-old-0(not_in_config) create:f-a-2 update:f-a-0(job) "
			  "update:f-a-1(job) update:f-b-0(job)");
	const char *targets[] = { "f-a-2", "f-old-0" };
	CHECK_INT(tpf_plan_target(&p, &x.in, targets, 2, &x.d), 0);
	check_actions(&p, "delete:f-old-0(not_in_config) create:f-a-2");
	CHECK_INT(p.add, 1);
	CHECK_INT(p.change, 0);
	CHECK_INT(p.destroyed, 1);
	CHECK_INT(p.ntargets, 2);
	CHECK_STR(p.targets[0], "f-a-2");
	CHECK_STR(p.targets[1], "f-old-0");
	tpf_plan_release(&p);
	fx_close(&x);
}

static void test_target__a_group_names_all_its_nodes(void)
{
	struct fx x;
	fx_open(&x);
	struct tpf_plan p;
	CHECK_INT(tpf_diff(&p, &x.in, &x.d), 0);
	const char *targets[] = { "a" };
	CHECK_INT(tpf_plan_target(&p, &x.in, targets, 1, &x.d), 0);
	check_actions(&p, "create:f-a-2 update:f-a-0(job) update:f-a-1(job)");
	tpf_plan_release(&p);
	/* A group no longer declared is still known by its nodes in state. */
	CHECK_INT(tpf_diff(&p, &x.in, &x.d), 0);
	const char *old[] = { "old" };
	CHECK_INT(tpf_plan_target(&p, &x.in, old, 1, &x.d), 0);
	check_actions(&p, "delete:f-old-0(not_in_config)");
	tpf_plan_release(&p);
	fx_close(&x);
}

static void test_target__unknown_names_are_errors(void)
{
	struct fx x;
	fx_open(&x);
	struct tpf_plan p;
	CHECK_INT(tpf_diff(&p, &x.in, &x.d), 0);
	size_t n = p.n;
	const char *targets[] = { "f-a-0", "f-a-9", "zz" };
	CHECK_INT(tpf_plan_target(&p, &x.in, targets, 3, &x.d), TPF_ERROR);
	CHECK_INT(tpf_diags_errors(&x.d), 2);
	CHECK(strstr(x.d.items[x.d.n - 2].summary, "-target: no node or group 'f-a-9'"));
	CHECK(strstr(x.d.items[x.d.n - 1].summary, "'zz'"));
	CHECK(strstr(x.d.items[x.d.n - 1].detail, "f-a-0, f-a-1, f-a-2, f-b-0"));
	CHECK_INT(p.n, n);   /* untouched */
	CHECK_INT(p.ntargets, 0);
	const char *none[] = { NULL };
	CHECK_INT(tpf_plan_target(&p, &x.in, none, 0, &x.d), 0);
	CHECK_INT(p.n, n);
	tpf_plan_release(&p);
	fx_close(&x);
}

static void test_target__keeps_only_targeted_unconverged(void)
{
	struct fx x;
	fx_open(&x);
	struct tpf_plan p = { 0 };
	tpf_plan_add_unconverged(&p, TPF_UNCONV_QUOTA, "f-a-2", -1, "waiting for quota");
	tpf_plan_add_unconverged(&p, TPF_UNCONV_RESTARTS_EXHAUSTED, "f-b-0", 0, "used up");
	p.deferred = 1;
	const char *targets[] = { "b" };
	CHECK_INT(tpf_plan_target(&p, &x.in, targets, 1, &x.d), 0);
	CHECK_INT(p.nunconverged, 1);
	CHECK_STR(p.unconverged[0].node, "f-b-0");
	CHECK_INT(p.deferred, 0);
	tpf_plan_release(&p);
	fx_close(&x);
}

static void test_replace__turns_an_update_into_a_requested_replace(void)
{
	struct fx x;
	fx_open(&x);
	struct tpf_plan p;
	CHECK_INT(tpf_diff(&p, &x.in, &x.d), 0);
	const char *names[] = { "f-a-1", "f-a-2", "f-old-0" };
	CHECK_INT(tpf_plan_replace(&p, &x.in, names, 3, &x.d), 0);
	/* f-a-2 does not exist: still a create; f-old-0 is not declared: still
	 * a delete; f-a-1 moves to the replaces, after the delete. */
	check_actions(&p, "delete:f-old-0(not_in_config) replace:f-a-1(replace_by_request) "
			  "create:f-a-2 update:f-a-0(job) update:f-b-0(job)");
	const struct tpf_action *a = &p.actions[1];
	CHECK_STR(a->reason, "requested with -replace");
	CHECK_STR(a->id, "101");
	CHECK_STR(a->zone, "z1");
	CHECK_INT(a->nworkers, 0);
	CHECK(a->desired && !strcmp(a->desired->name, "f-a-1"));
	CHECK_INT(a->nchanges, 1);
	CHECK_STR(a->changes[0].field, "id");
	CHECK_STR(a->changes[0].before, "\"101\"");
	CHECK_STR(a->changes[0].after, "(known after apply)");
	CHECK_INT(p.add, 2);
	CHECK_INT(p.change, 2);
	CHECK_INT(p.destroyed, 2);
	tpf_plan_release(&p);
	fx_close(&x);
}

static void test_replace__adds_one_for_a_node_with_no_action(void)
{
	struct fx x;
	fx_open(&x);
	struct tpf_plan p = { 0 };
	tpf_plan_add_unconverged(&p, TPF_UNCONV_RESTARTS_EXHAUSTED, "f-b-0", 0, "used up");
	tpf_plan_add_unconverged(&p, TPF_UNCONV_UNREACHABLE, "f-a-0", 0, "unreachable");
	const char *names[] = { "b" };
	CHECK_INT(tpf_plan_replace(&p, &x.in, names, 1, &x.d), 0);
	check_actions(&p, "replace:f-b-0(replace_by_request)");
	CHECK_STR(p.actions[0].id, "200");
	CHECK(p.actions[0].desired && p.actions[0].desired->index == 0);
	CHECK_INT(p.add, 1);
	CHECK_INT(p.destroyed, 1);
	/* The replaced node starts afresh; the other's entry stays. */
	CHECK_INT(p.nunconverged, 1);
	CHECK_STR(p.unconverged[0].node, "f-a-0");
	tpf_plan_release(&p);
	fx_close(&x);
}

static void test_replace__keeps_forced_fields_and_refuses_unknown_names(void)
{
	struct fx x;
	fx_open(&x);
	xstrset(&x.live.nodes[0].recipe.runtime_version, "old-rt"); /* f-a-0 must be replaced */
	struct tpf_plan p;
	CHECK_INT(tpf_diff(&p, &x.in, &x.d), 0);
	const char *names[] = { "f-a-0" };
	CHECK_INT(tpf_plan_replace(&p, &x.in, names, 1, &x.d), 0);
	const struct tpf_action *a = NULL;
	for (size_t i = 0; i < p.n; i++)
		if (!strcmp(p.actions[i].node, "f-a-0"))
			a = &p.actions[i];
	CHECK(a && a->kind == TPF_ACT_REPLACE);
	CHECK_STR(a ? a->reason_code : NULL, "replace_by_request");
	CHECK_INT(a ? a->nchanges : 0, 2); /* runtime_version (forces), then id */
	CHECK(a && a->changes[0].forces && !strcmp(a->changes[0].field, "runtime_version"));
	const char *bad[] = { "nope" };
	size_t n = p.n;
	CHECK_INT(tpf_plan_replace(&p, &x.in, bad, 1, &x.d), TPF_ERROR);
	CHECK(strstr(x.d.items[x.d.n - 1].summary, "-replace: no node or group 'nope'"));
	CHECK_INT(p.n, n);
	tpf_plan_release(&p);
	fx_close(&x);
}

static void test_target__mode_check(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	const char *one[] = { "f-a-0" };
	struct tpf_plan_mode ok = { .targets = one, .ntargets = 1, .replace = one, .nreplace = 1 };
	CHECK_INT(tpf_plan_mode_check(&ok, 1, &d), 0);
	struct tpf_plan_mode both = { .destroy = 1, .refresh_only = 1 };
	CHECK_INT(tpf_plan_mode_check(&both, 1, &d), TPF_ERROR);
	CHECK_STR(d.items[d.n - 1].summary,
		  "The -destroy and -refresh-only options are mutually-exclusive.");
	struct tpf_plan_mode rd = { .destroy = 1, .replace = one, .nreplace = 1 };
	CHECK_INT(tpf_plan_mode_check(&rd, 1, &d), TPF_ERROR);
	CHECK_STR(d.items[d.n - 1].summary, "Unsupported plan mode");
	struct tpf_plan_mode rr = { .refresh_only = 1, .replace = one, .nreplace = 1 };
	CHECK_INT(tpf_plan_mode_check(&rr, 1, &d), TPF_ERROR);
	struct tpf_plan_mode nr = { .refresh_only = 1 };
	CHECK_INT(tpf_plan_mode_check(&nr, 0, &d), TPF_ERROR);
	CHECK(strstr(d.items[d.n - 1].summary, "-refresh=false"));
	CHECK_INT(tpf_plan_mode_check(&nr, 1, &d), 0);
	/* rd and rr say the same "Unsupported plan mode": one diagnostic,
	 * since each is printed once per command (util/diag.h) */
	CHECK_INT(tpf_diags_errors(&d), 3);
	tpf_diags_release(&d);
}

/* The fixture with drift: f-a-1 gone, f-b-0 re-created (new id) and moved,
 * f-a-2 live with labels but not in state, f-x-0 labelled without group. */
static void drift(struct fx *x)
{
	tpf_live_set_release(&x->live);
	add_live(x, "f-a-0", "a", "0", "100");
	struct tpf_live_node *b = add_live(x, "f-b-0", "b", "0", "777");
	xstrset(&b->recipe.zone, "z2");
	add_live(x, "f-a-2", "a", "2", "102");
	add_live(x, "f-old-0", "old", "0", "900");
	struct tpf_live_node *u = add_live(x, "f-x-0", "x", "0", "300");
	tpf_kvlist_unset(&u->recipe.labels, TPF_LABEL_GROUP);
	struct tpf_state_node *pend = tpf_state_add(&x->st, "f-a-9"); /* a create never sent */
	xstrset(&pend->group, "a");
	pend->status = TPF_NODE_PENDING;
}

static void test_refresh_only__plans_state_updates_only(void)
{
	struct fx x;
	fx_open(&x);
	drift(&x);
	struct tpf_plan p;
	CHECK_INT(tpf_plan_refresh_only(&p, &x.in, &x.d), 0);
	CHECK(p.refresh_only);
	check_actions(&p, "forget:f-a-1(deleted) update:f-a-2(found) update:f-b-0(changed)");
	CHECK_INT(p.add + p.change + p.destroyed, 0);
	CHECK_STR(p.lineage, x.st.lineage);
	CHECK_INT(p.serial, 4);
	CHECK(p.actions[1].adopt && p.actions[1].desired);
	const struct tpf_action *b = &p.actions[2];
	CHECK_INT(b->nchanges, 2);
	CHECK_STR(b->changes[0].field, "id");
	CHECK_STR(b->changes[0].before, "\"200\"");
	CHECK_STR(b->changes[0].after, "\"777\"");
	CHECK_STR(b->changes[1].field, "zone");
	/* f-x-0 cannot be placed: a warning, not an action */
	CHECK(strstr(x.d.items[x.d.n - 1].summary, "node 'f-x-0' carries the label"));
	CHECK_INT(tpf_diags_errors(&x.d), 0);

	struct tpf_buf out = TPF_BUF_INIT;
	tpf_plan_render_human(&p, 0, &out);
	CHECK(strstr(out.buf, "Note: Objects have changed outside of tpuform\n"));
	CHECK(strstr(out.buf, "  # f-a-1 has been deleted\n  - node \"f-a-1\" {\n"
			      "      - id   = \"101\" -> null\n"));
	CHECK(strstr(out.buf, "  # f-b-0 has changed\n"));
	CHECK(strstr(out.buf, "      ~ id   = \"200\" -> \"777\"\n"));
	CHECK(strstr(out.buf, "  # f-a-2 has been found"));
	CHECK(strstr(out.buf, "This is a refresh-only plan, so tpuform will not take any actions"));
	CHECK(!strstr(out.buf, "Plan:"));
	tpf_buf_release(&out);

	CHECK_INT(tpf_refresh_only_apply(&x.st, &p, &x.live, &x.d), 3);
	CHECK(!tpf_state_find(&x.st, "f-a-1"));
	struct tpf_state_node *a2 = tpf_state_find(&x.st, "f-a-2");
	CHECK(a2 && a2->index == 2 && !strcmp(a2->group, "a") && !strcmp(a2->id, "102") &&
	      a2->status == TPF_NODE_CREATED && a2->nworkers == 1 && !a2->job.run);
	struct tpf_state_node *b0 = tpf_state_find(&x.st, "f-b-0");
	CHECK(b0 && !strcmp(b0->id, "777") && !strcmp(b0->recipe.zone, "z2"));
	CHECK(tpf_state_find(&x.st, "f-a-9")); /* pending: left alone */
	tpf_plan_release(&p);

	/* Now the state matches: nothing more to record. */
	CHECK_INT(tpf_plan_refresh_only(&p, &x.in, &x.d), 0);
	CHECK_INT(p.n, 0);
	tpf_plan_render_human(&p, 0, &out);
	CHECK(strstr(out.buf, "No changes. Your infrastructure still matches the configuration."));
	tpf_buf_release(&out);
	tpf_plan_closing(&p, &out);
	CHECK_STR(out.buf, "No changes. Your infrastructure still matches the configuration.");
	tpf_buf_release(&out);
	tpf_plan_release(&p);
	fx_close(&x);
}

static void test_refresh_only__skips_what_changed_again(void)
{
	struct fx x;
	fx_open(&x);
	drift(&x);
	struct tpf_plan p;
	CHECK_INT(tpf_plan_refresh_only(&p, &x.in, &x.d), 0);
	/* f-a-2 went away between plan and apply, under another id. */
	xstrset(&x.live.nodes[2].id, "999");
	size_t warnings = x.d.n;
	CHECK_INT(tpf_refresh_only_apply(&x.st, &p, &x.live, &x.d), 2);
	CHECK(!tpf_state_find(&x.st, "f-a-2"));
	CHECK_INT(x.d.n, warnings + 1);
	CHECK(strstr(x.d.items[x.d.n - 1].summary, "node 'f-a-2' was not recorded"));
	tpf_plan_release(&p);
	fx_close(&x);
}

static void test_target__saved_plans_keep_targets_and_mode(void)
{
	struct fx x;
	fx_open(&x);
	struct tpf_plan p, back;
	CHECK_INT(tpf_diff(&p, &x.in, &x.d), 0);
	const char *targets[] = { "b", "f-old-0" };
	const char *names[] = { "f-b-0" };
	CHECK_INT(tpf_plan_replace(&p, &x.in, names, 1, &x.d), 0);
	CHECK_INT(tpf_plan_target(&p, &x.in, targets, 2, &x.d), 0);
	json_t *j = tpf_plan_to_json(&p);
	CHECK_INT(tpf_plan_from_json(&back, j, "p.json", &x.d), 0);
	json_decref(j);
	CHECK_INT(back.ntargets, 2);
	CHECK_STR(back.ntargets ? back.targets[0] : NULL, "b");
	CHECK(!back.refresh_only);
	check_actions(&back, "delete:f-old-0(not_in_config) replace:f-b-0(replace_by_request)");

	json_t *show = tpf_plan_show_json(&back);
	char *text = json_dumps(show, JSON_COMPACT);
	CHECK(strstr(text, "\"format_version\":\"1.2\""));
	CHECK(strstr(text, "\"plan_mode\":\"normal\""));
	CHECK(strstr(text, "\"targets\":[\"b\",\"f-old-0\"]"));
	CHECK(strstr(text, "\"actions\":[\"delete\",\"create\"]"));
	CHECK(strstr(text, "\"action_reason\":\"replace_by_request\""));
	CHECK(strstr(text, "\"action_reason\":\"delete_because_no_resource_config\""));
	CHECK(strstr(text, "\"complete\":false"));
	free(text);
	json_decref(show);
	tpf_plan_release(&back);
	tpf_plan_release(&p);

	drift(&x);
	CHECK_INT(tpf_plan_refresh_only(&p, &x.in, &x.d), 0);
	j = tpf_plan_to_json(&p);
	CHECK_INT(tpf_plan_from_json(&back, j, "p.json", &x.d), 0);
	json_decref(j);
	CHECK(back.refresh_only);
	CHECK_INT(back.ntargets, 0);
	show = tpf_plan_show_json(&back);
	CHECK_INT(json_array_size(json_object_get(show, "resource_changes")), 0);
	json_t *dr = json_object_get(show, "resource_drift");
	CHECK_INT(json_array_size(dr), 3);
	text = json_dumps(json_object_get(json_array_get(dr, 0), "change"), JSON_COMPACT);
	CHECK(strstr(text, "\"actions\":[\"delete\"]"));
	free(text);
	text = json_dumps(json_object_get(json_array_get(dr, 1), "change"), JSON_COMPACT);
	CHECK(strstr(text, "\"actions\":[\"create\"]") && strstr(text, "\"before\":null"));
	free(text);
	CHECK_STR(json_string_value(json_object_get(show, "plan_mode")), "refresh-only");
	json_decref(show);
	tpf_plan_release(&back);
	tpf_plan_release(&p);
	fx_close(&x);
}

static void test_refresh_only__record_live_keeps_the_declared_queued(void)
{
	struct tpf_state st;
	tpf_state_init(&st);
	struct tpf_live_node ln = { 0 };
	ln.name = xstrdup("f-a-5");
	ln.id = xstrdup("55");
	ln.create_time = xstrdup("2026-01-01T00:00:00Z");
	recipe(&ln.recipe, "a", "5", st.lineage);
	ln.recipe.workers = 4;
	struct tpf_desired_node dn = { 0 };
	dn.recipe.queued = 1;
	struct tpf_state_node *sn = tpf_state_record_live(&st, "a", 5, &ln, &dn.recipe);
	CHECK(sn && sn->recipe.queued);
	CHECK_INT(sn->nworkers, 4);
	CHECK_STR(sn->created_at, "2026-01-01T00:00:00Z");
	CHECK_INT(sn->status, TPF_NODE_CREATED);
	sn = tpf_state_record_live(&st, "a", 5, &ln, NULL);
	CHECK(!sn->recipe.queued); /* without a declaration, the provider's word */
	tpf_live_node_release(&ln);
	tpf_state_release(&st);
}

int main(void)
{
	RUN(test_target__keeps_only_the_named_nodes);
	RUN(test_target__a_group_names_all_its_nodes);
	RUN(test_target__unknown_names_are_errors);
	RUN(test_target__keeps_only_targeted_unconverged);
	RUN(test_replace__turns_an_update_into_a_requested_replace);
	RUN(test_replace__adds_one_for_a_node_with_no_action);
	RUN(test_replace__keeps_forced_fields_and_refuses_unknown_names);
	RUN(test_target__mode_check);
	RUN(test_refresh_only__plans_state_updates_only);
	RUN(test_refresh_only__skips_what_changed_again);
	RUN(test_target__saved_plans_keep_targets_and_mode);
	RUN(test_refresh_only__record_live_keeps_the_declared_queued);
	return unit_done();
}
