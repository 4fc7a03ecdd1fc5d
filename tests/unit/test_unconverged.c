/*
 * What is not as declared (plan/plan.h): the restart policy's verdict on a
 * job, quota deferral with the rule that blocks it, the entries tpf_diff
 * records, their rendering (section and closing sentence) and their saved
 * plan form.
 */
#include "plan/plan.h"
#include "plan/quota.h"
#include "plan/worker_script.h"
#include "tests/unit/unit.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse(struct tpf_fleet *f, const char *yaml)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	int rc = tpf_fleet_parse(f, "fleet.yaml", yaml, strlen(yaml), &d);
	for (size_t i = 0; rc && i < d.n; i++)
		printf("# %s\n", d.items[i].summary);
	tpf_diags_release(&d);
	return rc;
}

/* ---- the verdict ---------------------------------------------------------- */

struct vcase {
	const char *policy;  /* restart: */
	const char *session; /* NULL: no fact; "unreachable": fact without a session */
	int exit_code;
	int restarts;        /* of the worker; max_restarts is 2 */
	enum tpf_job_verdict want;
};

static const struct vcase vcases[] = {
	{ "on-failure", "alive", -1, 0, TPF_JOB_FINE },
	{ "on-failure", "none", -1, 0, TPF_JOB_FINE },
	{ "on-failure", NULL, -1, 5, TPF_JOB_FINE },
	{ "on-failure", "unreachable", -1, 5, TPF_JOB_FINE },
	{ "on-failure", "exited", 0, 0, TPF_JOB_FINE },
	{ "on-failure", "exited", 0, 2, TPF_JOB_FINE },
	{ "on-failure", "exited", 3, 0, TPF_JOB_RESTART },
	{ "on-failure", "exited", 3, 1, TPF_JOB_RESTART },
	{ "on-failure", "exited", 3, 2, TPF_JOB_EXHAUSTED },
	{ "on-failure", "dead", -1, 1, TPF_JOB_RESTART },
	{ "on-failure", "dead", -1, 2, TPF_JOB_EXHAUSTED },
	{ "always", "exited", 0, 1, TPF_JOB_RESTART },
	{ "always", "exited", 0, 2, TPF_JOB_EXHAUSTED },
	{ "always", "exited", 3, 3, TPF_JOB_EXHAUSTED },
	{ "always", "alive", -1, 9, TPF_JOB_FINE },
	{ "never", "exited", 0, 0, TPF_JOB_FINE },
	{ "never", "exited", 3, 0, TPF_JOB_NOT_RESTARTED },
	{ "never", "dead", -1, 0, TPF_JOB_NOT_RESTARTED },
	{ "never", "alive", -1, 0, TPF_JOB_FINE },
};

static void test_unconverged__verdict(void)
{
	for (size_t i = 0; i < sizeof(vcases) / sizeof(vcases[0]); i++) {
		const struct vcase *c = &vcases[i];
		char *yaml = xasprintf("fleet: f\nprovider:\n  local: { root: /nonexistent }\n"
				       "run: train\nrestart: %s\nmax_restarts: 2\ngroups:\n"
				       "  - { name: a, accelerator_type: v2-8, runtime_version: rt, "
				       "zones: [z1], count: 1 }\n",
				       c->policy);
		struct tpf_fleet f;
		int rc = parse(&f, yaml);
		free(yaml);
		CHECK_INT(rc, 0);
		if (rc)
			continue;
		struct tpf_job_fact sf = { .node = "f-a-0", .exit_code = c->exit_code };
		sf.state = tpf_job_state_from_name(c->session);
		struct tpf_state_worker sw = { .restarts = c->restarts, .exit_code = -1 };
		enum tpf_job_verdict got = tpf_job_verdict(&f, c->session ? &sf : NULL, &sw);
		CHECKF(got == c->want, "restart: %s, %s exit %d after %d restarts: got %d, want %d",
		       c->policy, c->session ? c->session : "(no fact)", c->exit_code, c->restarts,
		       (int)got, (int)c->want);
		/* show's view agrees with the verdict. */
		int kind = tpf_worker_unconverged(&f, c->session ? &sf : NULL, &sw);
		int want_kind = c->want == TPF_JOB_EXHAUSTED      ? TPF_UNCONV_RESTARTS_EXHAUSTED
				: c->want == TPF_JOB_NOT_RESTARTED ? TPF_UNCONV_NOT_RESTARTED
								   : -1;
		CHECK_INT(kind, want_kind);
		tpf_fleet_release(&f);
	}
}

/* ---- the entries tpf_diff records ------------------------------------------ */

#define BASE                                                                                   \
	"fleet: f\nprovider:\n  local: { root: /nonexistent }\nrun: train\n"

struct world {
	struct tpf_fleet f;
	struct tpf_state st;
	struct tpf_desired_set ds;
	struct tpf_live_set live;
	struct tpf_job_facts facts;
	struct tpf_plan p;
	struct tpf_diags d;
	double now; /* wall clock the plan is made at (0: backoffs have passed) */
};

/* An existing READY node in state and live (v2-8, one worker, in `zone`),
 * its job as desired, its worker with `restarts` restarts. */
static void add_node(struct world *w, const char *name, const char *zone, int restarts)
{
	struct tpf_state_node *sn = tpf_state_add(&w->st, name);
	xstrset(&sn->group, "a");
	sn->index = name[strlen(name) - 1] - '0';
	sn->status = TPF_NODE_CREATED;
	xstrset(&sn->id, "123");
	sn->recipe.zone = xstrdup(zone);
	sn->recipe.accelerator_type = xstrdup("v2-8");
	sn->recipe.runtime_version = xstrdup("rt");
	sn->recipe.workers = 1;
	tpf_state_node_set_workers(sn, 1);
	sn->workers[0].restarts = restarts;
	struct tpf_live_node *ln = tpf_live_set_add(&w->live);
	ln->name = xstrdup(name);
	ln->id = xstrdup("123");
	ln->state = xstrdup("READY");
	tpf_recipe_copy(&ln->recipe, &sn->recipe);
}

/* A READY v4-16 node (two workers) in state and live, each worker with
 * `restarts` restarts, the last `ago` seconds before w->now (0: none). */
static void add_node2(struct world *w, const char *name, int restarts0, int restarts1, double ago)
{
	add_node(w, name, "z1", restarts0);
	struct tpf_state_node *sn = tpf_state_find(&w->st, name);
	xstrset(&sn->recipe.accelerator_type, "v4-16");
	sn->recipe.workers = 2;
	tpf_state_node_set_workers(sn, 2);
	sn->workers[1].restarts = restarts1;
	char at[40];
	tpf_rfc3339(w->now - ago, at, sizeof(at));
	for (int k = 0; ago > 0 && k < 2; k++)
		xstrset(&sn->workers[k].restarted_at, at);
	struct tpf_live_node *ln = tpf_live_set_find(&w->live, name);
	tpf_recipe_copy(&ln->recipe, &sn->recipe);
}

/* A fact of worker `worker`, stalled for `stalled` seconds (< 0: unknown). */
static void add_fact_w(struct world *w, const char *node, int worker, const char *session,
		       int code, double stalled)
{
	XGROW(w->facts.items, w->facts.n + 1, w->facts.alloc);
	struct tpf_job_fact *sf = &w->facts.items[w->facts.n++];
	memset(sf, 0, sizeof(*sf));
	sf->node = xstrdup(node);
	sf->worker = worker;
	sf->state = session ? tpf_job_state_from_name(session) : TPF_JOB_STATE_UNREACHABLE;
	sf->exit_code = code;
	sf->stalled_for = stalled;
}

static void add_fact(struct world *w, const char *node, const char *session, int code)
{
	XGROW(w->facts.items, w->facts.n + 1, w->facts.alloc);
	struct tpf_job_fact *sf = &w->facts.items[w->facts.n++];
	memset(sf, 0, sizeof(*sf));
	sf->node = xstrdup(node);
	sf->state = session ? tpf_job_state_from_name(session) : TPF_JOB_STATE_UNREACHABLE;
	sf->exit_code = code;
}

/* Desired nodes, then the state's jobs and labels made to match them (as
 * after an apply; old_run, when not NULL, is the run command the state
 * recorded instead), then the diff. */
static int plan_world(struct world *w, const char *yaml, const char *old_run)
{
	memset(&w->p, 0, sizeof(w->p));
	if (parse(&w->f, yaml))
		return -1;
	tpf_desired_compute(&w->ds, &w->f, NULL, &w->st, &w->d);
	for (size_t i = 0; i < w->st.nnodes; i++) {
		struct tpf_state_node *sn = &w->st.nodes[i];
		const struct tpf_desired_node *dn = tpf_desired_find(&w->ds, sn->name);
		struct tpf_live_node *ln = tpf_live_set_find(&w->live, sn->name);
		if (!dn)
			continue;
		tpf_job_copy(&sn->job, &dn->job);
		if (old_run)
			xstrset(&sn->job.run, old_run);
		tpf_kvlist_merge(&sn->recipe.labels, &dn->recipe.labels);
		if (ln)
			tpf_kvlist_merge(&ln->recipe.labels, &dn->recipe.labels);
		for (size_t k = 0; k < sn->nworkers; k++) {
			char *h = NULL;
			free(tpf_provision_render(&w->f, sn, NULL, (int)k, &h));
			sn->workers[k].script_hash = h;
		}
	}
	struct tpf_diff_input in = { &w->f, &w->ds, &w->st, &w->live, &w->facts, 0, w->now };
	return tpf_diff(&w->p, &in, &w->d);
}

static void world_release(struct world *w)
{
	tpf_plan_release(&w->p);
	tpf_job_facts_release(&w->facts);
	tpf_live_set_release(&w->live);
	tpf_desired_release(&w->ds);
	tpf_state_release(&w->st);
	tpf_fleet_release(&w->f);
	tpf_diags_release(&w->d);
}

static void world_init(struct world *w)
{
	memset(w, 0, sizeof(*w));
	tpf_state_init(&w->st);
	w->d = (struct tpf_diags)TPF_DIAGS_INIT;
}

/* "code:node[/wN](exit N) ..." */
static char *entries(const struct tpf_plan *p)
{
	struct tpf_buf b = TPF_BUF_INIT;
	for (size_t i = 0; i < p->nunconverged; i++) {
		const struct tpf_unconverged *u = &p->unconverged[i];
		tpf_buf_addf(&b, "%s%s:%s", i ? " " : "", tpf_unconverged_code(u->kind), u->node);
		if (u->worker >= 0)
			tpf_buf_addf(&b, "/w%d", u->worker);
		if (u->exit_code >= 0)
			tpf_buf_addf(&b, "(exit %d)", u->exit_code);
	}
	return tpf_buf_detach(&b, NULL);
}

static void test_unconverged__restarts_exhausted(void)
{
	struct world w;
	world_init(&w);
	add_node(&w, "f-a-0", "z1", 3);
	add_node(&w, "f-a-1", "z1", 1);
	add_node(&w, "f-a-2", "z1", 3);
	add_fact(&w, "f-a-0", "exited", 1); /* used up */
	add_fact(&w, "f-a-1", "exited", 1); /* restarted */
	add_fact(&w, "f-a-2", "dead", -1);  /* used up */
	CHECK_INT(plan_world(&w, BASE "max_restarts: 3\ngroups:\n  - { name: a, accelerator_type: "
				      "v2-8, runtime_version: rt, zones: [z1], count: 3 }\n",
				  NULL),
		  0);
	char *got = entries(&w.p);
	CHECK_STR(got, "restarts_exhausted:f-a-0/w0(exit 1) restarts_exhausted:f-a-2/w0");
	free(got);
	CHECK_INT(w.p.n, 1); /* f-a-1 is restarted */
	CHECK_INT(w.p.nunconverged, 2);
	if (w.p.nunconverged == 2) {
		CHECK_STR(w.p.unconverged[0].reason,
			  "job failed (exit 1) after 3 restarts; restarts are used up (max_restarts: 3)");
		CHECK_STR(w.p.unconverged[1].reason,
			  "session died after 3 restarts; restarts are used up (max_restarts: 3)");
	}
	CHECK(!tpf_plan_converged(&w.p));
	world_release(&w);
}

static void test_unconverged__not_restarted_and_unreachable(void)
{
	struct world w;
	world_init(&w);
	add_node(&w, "f-a-0", "z1", 0);
	add_node(&w, "f-a-1", "z1", 0);
	add_node(&w, "f-a-2", "z1", 0);
	add_fact(&w, "f-a-0", "exited", 2);
	add_fact(&w, "f-a-1", "exited", 0); /* finished: as declared */
	add_fact(&w, "f-a-2", NULL, -1);    /* unreachable */
	CHECK_INT(plan_world(&w, BASE "restart: never\nmax_restarts: 0\ngroups:\n  - { name: a, "
				      "accelerator_type: v2-8, runtime_version: rt, zones: [z1], "
				      "count: 3 }\n",
				  NULL),
		  0);
	char *got = entries(&w.p);
	CHECK_STR(got, "not_restarted:f-a-0/w0(exit 2) unreachable:f-a-2/w0");
	free(got);
	CHECK_INT(w.p.n, 0);
	if (w.p.nunconverged == 2) {
		CHECK_STR(w.p.unconverged[0].reason, "job failed (exit 2); not restarted (restart: never)");
		CHECK_STR(w.p.unconverged[1].reason, "unreachable: its session could not be checked");
	}
	world_release(&w);
}

/* A job that changed is provisioned again: its old failures do not count. */
static void test_unconverged__changed_job_is_an_action(void)
{
	struct world w;
	world_init(&w);
	add_node(&w, "f-a-0", "z1", 3);
	add_fact(&w, "f-a-0", "exited", 1);
	CHECK_INT(plan_world(&w, BASE "max_restarts: 3\ngroups:\n  - { name: a, accelerator_type: "
				      "v2-8, runtime_version: rt, zones: [z1], count: 1 }\n",
			     "old command"),
		  0);
	CHECK_INT(w.p.n, 1);
	if (w.p.n == 1)
		CHECK_STR(w.p.actions[0].reason_code, "job");
	CHECK_INT(w.p.nunconverged, 0);
	world_release(&w);
}

static void test_unconverged__quota(void)
{
	struct world w;
	world_init(&w);
	/* f-b-0 exists in z2 and holds the only slot of the "*" rule there. */
	add_node(&w, "f-b-0", "z2", 0);
	add_fact(&w, "f-b-0", "alive", -1);
	CHECK_INT(plan_world(&w, BASE "quota:\n"
				      "  - { zone: z1, accelerator_type: v2-8, on_demand: 0 }\n"
				      "  - { zone: z2, accelerator_type: '*', on_demand: 1, spot: 4 }\n"
				      "groups:\n"
				      "  - { name: a, accelerator_type: v2-8, runtime_version: rt, "
				      "zones: [z1, z2], count: 1 }\n"
				      "  - { name: b, accelerator_type: v2-8, runtime_version: rt, "
				      "zones: [z2], count: 1 }\n",
			     NULL),
		  0);
	const struct tpf_desired_node *dn = tpf_desired_find(&w.ds, "f-a-0");
	CHECK(dn && dn->deferred);
	if (dn)
		CHECK_STR(dn->waiting, "waiting for quota: on_demand cap 0 in z1 (quota[0], v2-8); "
				       "on_demand cap 1 in z2 (quota[1], all accelerator types, 1 in "
				       "use)");
	char *got = entries(&w.p);
	CHECK_STR(got, "quota:f-a-0");
	free(got);
	CHECK_INT(w.p.n, 0);
	CHECK_INT(w.p.deferred, 1);
	if (w.p.nunconverged == 1 && dn)
		CHECK_STR(w.p.unconverged[0].reason, dn->waiting);
	/* The rule that blocks, as placement and apply see it. */
	struct tpf_quota q;
	tpf_quota_init(&q, w.f.quota, w.f.nquota);
	int cap = -7;
	CHECK_INT(tpf_quota_blocking_rule(&q, "z1", &dn->recipe, &cap), 0);
	CHECK_INT(cap, 0);
	cap = -7;
	CHECK_INT(tpf_quota_blocking_rule(&q, "z2", &dn->recipe, &cap), -1);
	CHECK_INT(cap, -7);
	CHECK(tpf_quota_room(&q, "z2", &dn->recipe));
	tpf_quota_release(&q);
	world_release(&w);
}

/* ---- rendering ------------------------------------------------------------ */

static void two_entries(struct tpf_plan *p)
{
	struct tpf_unconverged *u = tpf_plan_add_unconverged(
		p, TPF_UNCONV_RESTARTS_EXHAUSTED, "llm-sweep-0", 1,
		"job failed (exit 1) after 3 restarts; restarts are used up (max_restarts: 3)");
	u->exit_code = 1;
	tpf_plan_add_unconverged(p, TPF_UNCONV_QUOTA, "llm-sweep-3", -1,
				 "waiting for quota: on_demand cap 0 in us-central1-f (quota[0], v2-8)");
}

static void test_unconverged__render_no_changes(void)
{
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_plan_render_human(&p, 0, &b);
	CHECK_STR(b.buf, "No changes. Your infrastructure matches the configuration.\n");
	CHECK(tpf_plan_converged(&p));
	tpf_buf_reset(&b);
	two_entries(&p);
	tpf_plan_render_human(&p, 0, &b);
	CHECK_STR(b.buf,
		  "Not as declared (tpuform cannot change these now):\n"
		  "  - llm-sweep-0/w1: job failed (exit 1) after 3 restarts; restarts are used up "
		  "(max_restarts: 3)\n"
		  "  - llm-sweep-3: waiting for quota: on_demand cap 0 in us-central1-f (quota[0], "
		  "v2-8)\n"
		  "\n"
		  "No changes can be made now, but the fleet is not as declared: see above.\n");
	CHECK(!tpf_plan_converged(&p));
	CHECK(!tpf_plan_has_changes(&p));
	tpf_buf_reset(&b);
	tpf_plan_closing(&p, &b);
	CHECK_STR(b.buf, "No changes can be made now, but the fleet is not as declared: see above.");
	tpf_buf_release(&b);
	tpf_plan_release(&p);
}

static void test_unconverged__render_with_changes(void)
{
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	struct tpf_action *a = tpf_plan_add(&p, TPF_ACT_DELETE, "llm-sweep-9");
	a->reason = xstrdup("because index [9] is out of range for count");
	tpf_action_set_reason_code(a, "count");
	tpf_plan_recount(&p);
	two_entries(&p);
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_plan_render_human(&p, 0, &b);
	/* The section comes after the actions, before the summary line. */
	const char *blocks = strstr(b.buf, "# llm-sweep-9 will be destroyed");
	const char *section = strstr(b.buf, "Not as declared (tpuform cannot change these now):\n"
					    "  - llm-sweep-0/w1: ");
	const char *summary = strstr(b.buf, "\nPlan: 0 to add, 0 to change, 1 to destroy.\n");
	CHECK(blocks && section && summary && blocks < section && section < summary);
	CHECK(!strstr(b.buf, "No changes"));
	CHECKF(summary && !strcmp(summary, "\nPlan: 0 to add, 0 to change, 1 to destroy.\n"),
	       "the summary line ends the output:\n%s", b.buf);
	tpf_buf_reset(&b);
	tpf_plan_closing(&p, &b);
	CHECK_STR(b.buf, "Plan: 0 to add, 0 to change, 1 to destroy.");
	tpf_buf_release(&b);
	tpf_plan_release(&p);
}

static void test_unconverged__saved_plan(void)
{
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	p.fleet = xstrdup("llm-sweep");
	two_entries(&p);
	json_t *j = tpf_plan_to_json(&p);
	json_t *e = json_array_get(json_object_get(j, "unconverged"), 0);
	CHECK_STR(json_string_value(json_object_get(e, "kind")), "restarts_exhausted");
	CHECK_INT(json_integer_value(json_object_get(e, "worker")), 1);
	CHECK_INT(json_integer_value(json_object_get(e, "exit_code")), 1);
	e = json_array_get(json_object_get(j, "unconverged"), 1);
	CHECK(json_object_get(e, "worker") == NULL); /* a node: no worker */
	/* an entry of a kind this tpuform does not know is left out */
	json_array_append_new(json_object_get(j, "unconverged"),
			      json_pack("{s:s,s:s}", "kind", "from_the_future", "node", "x"));
	struct tpf_plan back;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_plan_from_json(&back, j, "plan.json", &d), 0);
	CHECK_INT(back.nunconverged, 2);
	if (back.nunconverged == 2) {
		CHECK_INT(back.unconverged[0].kind, TPF_UNCONV_RESTARTS_EXHAUSTED);
		CHECK_STR(back.unconverged[0].node, "llm-sweep-0");
		CHECK_INT(back.unconverged[0].worker, 1);
		CHECK_INT(back.unconverged[0].exit_code, 1);
		CHECK_STR(back.unconverged[0].reason, p.unconverged[0].reason);
		CHECK_INT(back.unconverged[1].kind, TPF_UNCONV_QUOTA);
		CHECK_INT(back.unconverged[1].worker, -1);
		CHECK_INT(back.unconverged[1].exit_code, -1);
	}
	json_decref(j);
	tpf_plan_release(&back);
	tpf_plan_release(&p);
	tpf_diags_release(&d);
}

static void test_unconverged__codes(void)
{
	static const enum tpf_unconverged_kind all[] = {
		TPF_UNCONV_RESTARTS_EXHAUSTED, TPF_UNCONV_NOT_RESTARTED, TPF_UNCONV_QUOTA,
		TPF_UNCONV_QUEUED, TPF_UNCONV_UNREACHABLE, TPF_UNCONV_RESTART_WAITING,
	};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		enum tpf_unconverged_kind k = TPF_UNCONV_UNREACHABLE;
		CHECK_INT(tpf_unconverged_kind_from(tpf_unconverged_code(all[i]), &k), 0);
		CHECK_INT(k, all[i]);
	}
	CHECK_INT(tpf_unconverged_kind_from("nope", NULL), -1);
	CHECK_STR(tpf_unconverged_mark(TPF_UNCONV_RESTARTS_EXHAUSTED), "restarts exhausted");
	CHECK_STR(tpf_unconverged_mark(TPF_UNCONV_QUOTA), "waiting for quota");
}

/* ---- restart units, stalls, backoff, completion ---------------------------- */

#define V416(extra)                                                                            \
	BASE "max_restarts: 3\n" extra "groups:\n  - { name: a, accelerator_type: v4-16, "      \
	     "runtime_version: rt, zones: [z1], count: 1 }\n"

/* restart_on_exit_codes (xpk's restart-on-exit-codes): a chosen code
 * restarts the unit, any other failing code ends its run as failed; a dead
 * session still restarts; no list keeps the old rule (any code but 0). */
static void test_unconverged__exit_codes(void)
{
	static const struct {
		const char *keys;
		int code;
		const char *want; /* "restart", or the unconverged entries */
	} cases[] = {
		{ "restart_on_exit_codes: [42]\n", 42, "restart" },
		{ "restart_on_exit_codes: [42]\n", 3, "not_restarted:f-a-0(exit 3)" },
		{ "restart_on_exit_codes: [42, 128-255]\n", 137, "restart" },
		{ "restart_on_exit_codes: [42, 128-255]\n", 127, "not_restarted:f-a-0(exit 127)" },
		{ "never_restart_on: [3]\n", 3, "not_restarted:f-a-0(exit 3)" },
		{ "never_restart_on: [3]\n", 4, "restart" },
		{ "restart_on_exit_codes: []\n", 1, "not_restarted:f-a-0(exit 1)" },
		{ "", 3, "restart" },
		{ "", 0, "" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct world w;
		world_init(&w);
		w.now = 1800000000;
		add_node2(&w, "f-a-0", 0, 0, 3600);
		add_fact_w(&w, "f-a-0", 0, "alive", -1, 1);
		add_fact_w(&w, "f-a-0", 1, "exited", cases[i].code, -1);
		char yaml[512];
		snprintf(yaml, sizeof(yaml), V416("%s"), cases[i].keys);
		CHECK_INT(plan_world(&w, yaml, NULL), 0);
		char *got = w.p.n == 1 && w.p.actions[0].kind == TPF_ACT_RESTART ? xstrdup("restart")
										  : entries(&w.p);
		if (strcmp(got, cases[i].want))
			printf("# case %zu: %s exit %d\n", i, cases[i].keys, cases[i].code);
		CHECK_STR(got, cases[i].want);
		if (!strcmp(cases[i].want, "not_restarted:f-a-0(exit 3)") && w.p.nunconverged == 1) {
			CHECK_STR(w.p.unconverged[0].reason,
				  "failed: worker 1 job failed (exit 3); not restarted (its exit code "
				  "is not in restart_on_exit_codes); the node is kept for debugging");
			const struct tpf_state_node *sn = tpf_state_find(&w.st, "f-a-0");
			CHECK_STR(tpf_node_outcome(&w.f, sn, &w.facts, w.now), "failed");
		}
		free(got);
		world_release(&w);
	}
	/* A dead session is not an exit code: it restarts whatever the list. */
	struct world w;
	world_init(&w);
	add_node(&w, "f-a-0", "z1", 0);
	add_fact(&w, "f-a-0", "dead", -1);
	CHECK_INT(plan_world(&w, BASE "restart_on_exit_codes: [42]\ngroups:\n  - { name: a, "
				      "accelerator_type: v2-8, runtime_version: rt, zones: [z1], "
				      "count: 1 }\n",
			     NULL),
		  0);
	CHECK_INT(w.p.n, 1);
	world_release(&w);
	/* A unit of one names the code in its reason. */
	world_init(&w);
	add_node(&w, "f-a-0", "z1", 0);
	add_fact(&w, "f-a-0", "exited", 3);
	CHECK_INT(plan_world(&w, BASE "groups:\n  - { name: a, accelerator_type: v2-8, "
				      "runtime_version: rt, zones: [z1], count: 1, "
				      "restart_on_exit_codes: [42] }\n",
			     NULL),
		  0);
	CHECK_INT(w.p.n, 0);
	if (w.p.nunconverged == 1)
		CHECK_STR(w.p.unconverged[0].reason,
			  "job failed (exit 3); not restarted (exit 3 is not in restart_on_exit_codes)");
	world_release(&w);
}

/* max_restarts and restart per group (issue 26): group a (a sweep) gives
 * 1, group b (training) 5, over the fleet's 3; group c says restart: never.
 * Each node is judged by its own group's budget: the plan, show's note and
 * watch's restarts_exhausted rule (tpf_worker_exhausted) alike. */
static void test_unconverged__group_max_restarts(void)
{
	struct world w;
	world_init(&w);
	add_node(&w, "f-a-0", "z1", 1); /* a: its 1 restart used */
	add_node(&w, "f-a-1", "z1", 0); /* a: restarted */
	add_node(&w, "f-b-0", "z1", 3); /* b: 3 of 5 (the fleet's 3 would end it) */
	add_node(&w, "f-b-1", "z1", 5); /* b: all 5 used */
	add_node(&w, "f-c-0", "z1", 0); /* c: never restarted */
	for (size_t i = 2; i < 5; i++)
		xstrset(&w.st.nodes[i].group, i < 4 ? "b" : "c");
	add_fact(&w, "f-a-0", "exited", 1);
	add_fact(&w, "f-a-1", "exited", 1);
	add_fact(&w, "f-b-0", "exited", 1);
	add_fact(&w, "f-b-1", "dead", -1);
	add_fact(&w, "f-c-0", "exited", 2);
	CHECK_INT(plan_world(&w, BASE "max_restarts: 3\ngroups:\n"
				      "  - { name: a, accelerator_type: v2-8, runtime_version: rt, "
				      "zones: [z1], count: 2, max_restarts: 1 }\n"
				      "  - { name: b, accelerator_type: v2-8, runtime_version: rt, "
				      "zones: [z1], count: 2, max_restarts: 5 }\n"
				      "  - { name: c, accelerator_type: v2-8, runtime_version: rt, "
				      "zones: [z1], count: 1, restart: never }\n",
			     NULL),
		  0);
	char *got = entries(&w.p);
	CHECK_STR(got, "restarts_exhausted:f-a-0/w0(exit 1) restarts_exhausted:f-b-1/w0 "
		       "not_restarted:f-c-0/w0(exit 2)");
	free(got);
	CHECK_INT(w.p.n, 2); /* f-a-1 and f-b-0 are restarted */
	for (size_t i = 0; i < w.p.n; i++)
		CHECK_INT(w.p.actions[i].kind, TPF_ACT_RESTART);
	if (w.p.n == 2) {
		CHECK_STR(w.p.actions[0].node, "f-a-1");
		CHECK_STR(w.p.actions[1].node, "f-b-0");
	}
	if (w.p.nunconverged == 3) {
		CHECK_STR(w.p.unconverged[0].reason,
			  "job failed (exit 1) after 1 restart; restarts are used up (max_restarts: 1)");
		CHECK_STR(w.p.unconverged[1].reason,
			  "session died after 5 restarts; restarts are used up (max_restarts: 5)");
	}
	static const struct {
		const char *node;
		int exhausted;
	} want[] = { { "f-a-0", 1 }, { "f-a-1", 0 }, { "f-b-0", 0 }, { "f-b-1", 1 }, { "f-c-0", 0 } };
	for (size_t i = 0; i < 5; i++) {
		const struct tpf_state_node *sn = tpf_state_find(&w.st, want[i].node);
		CHECKF(sn && tpf_worker_exhausted(&w.f, sn, 0, &w.facts) == want[i].exhausted,
		       "%s exhausted: want %d", want[i].node, want[i].exhausted);
	}
	world_release(&w);
}

static void test_unconverged__gang_restart(void)
{
	struct world w;
	world_init(&w);
	w.now = 1800000000;
	/* Worker 0 was restarted twice alone (restart_scope: worker, before);
	 * the unit's count is the most any worker had. */
	add_node2(&w, "f-a-0", 2, 0, 3600);
	add_fact_w(&w, "f-a-0", 0, "alive", -1, 4);
	add_fact_w(&w, "f-a-0", 1, "exited", 1, -1);
	CHECK_INT(plan_world(&w, V416(""), NULL), 0);
	CHECK_INT(w.p.n, 1);
	CHECK_INT(w.p.nunconverged, 0);
	if (w.p.n == 1) {
		const struct tpf_action *a = &w.p.actions[0];
		CHECK_INT(a->kind, TPF_ACT_RESTART);
		CHECK(a->gang);
		CHECK_STR(a->reason_code, "session");
		CHECK_STR(a->reason, "restart all 2 workers of f-a-0: worker 1 job failed (exit 1)");
		CHECK_INT(a->nworkers, 2);
		/* every worker starts with the same new TPUFORM_RETRY */
		CHECK_INT(a->nchanges, 2);
		if (a->nchanges == 2) {
			CHECK_STR(a->changes[0].field, "w0.retry");
			CHECK_STR(a->changes[0].before, "2");
			CHECK_STR(a->changes[0].after, "3");
			CHECK_STR(a->changes[1].field, "w1.retry");
			CHECK_STR(a->changes[1].before, "0");
			CHECK_STR(a->changes[1].after, "3");
		}
		/* and a saved plan keeps the unit */
		json_t *j = tpf_plan_to_json(&w.p);
		struct tpf_plan back;
		struct tpf_diags d = TPF_DIAGS_INIT;
		CHECK_INT(tpf_plan_from_json(&back, j, "plan.json", &d), 0);
		CHECK(back.n == 1 && back.actions[0].gang);
		tpf_plan_release(&back);
		tpf_diags_release(&d);
		json_decref(j);
	}
	world_release(&w);
}

static void test_unconverged__gang_failed(void)
{
	struct world w;
	world_init(&w);
	w.now = 1800000000;
	add_node2(&w, "f-a-0", 3, 3, 3600);
	add_fact_w(&w, "f-a-0", 0, "alive", -1, 1);
	add_fact_w(&w, "f-a-0", 1, "exited", 1, -1);
	CHECK_INT(plan_world(&w, V416(""), NULL), 0);
	CHECK_INT(w.p.n, 0);
	char *got = entries(&w.p);
	CHECK_STR(got, "restarts_exhausted:f-a-0(exit 1)");
	free(got);
	if (w.p.nunconverged == 1)
		CHECK_STR(w.p.unconverged[0].reason,
			  "failed: worker 1 job failed (exit 1) after 3 restarts of all 2 workers; "
			  "restarts are used up (max_restarts: 3); the node is kept for debugging");
	const struct tpf_state_node *sn = tpf_state_find(&w.st, "f-a-0");
	CHECK_STR(tpf_node_outcome(&w.f, sn, &w.facts, w.now), "failed");
	char *note = NULL;
	CHECK_INT(tpf_worker_note(&w.f, sn, 0, &w.facts, w.now, &note), TPF_UNCONV_RESTARTS_EXHAUSTED);
	CHECK_STR(note, "restarts exhausted");
	free(note);
	size_t nc = 9, nf = 9;
	CHECK(tpf_plan_done(&w.p, &w.ds, &nc, &nf));
	CHECK_INT(nc, 0);
	CHECK_INT(nf, 1);
	world_release(&w);
}

static void test_unconverged__backoff_waits(void)
{
	struct world w;
	world_init(&w);
	w.now = 1800000000;
	/* One restart 3 s ago; restart_backoff 10s: the second is due in 7 s. */
	add_node2(&w, "f-a-0", 1, 1, 3);
	add_fact_w(&w, "f-a-0", 0, "dead", -1, -1);
	add_fact_w(&w, "f-a-0", 1, "alive", -1, 2);
	CHECK_INT(plan_world(&w, V416(""), NULL), 0);
	CHECK_INT(w.p.n, 0);
	char *got = entries(&w.p);
	CHECK_STR(got, "restart_waiting:f-a-0");
	free(got);
	if (w.p.nunconverged == 1)
		CHECK_STR(w.p.unconverged[0].reason,
			  "worker 0 has a dead session; restart 2 of 3 of all 2 workers in 7s "
			  "(restart_backoff)");
	CHECK(!tpf_plan_converged(&w.p));
	CHECK(!tpf_plan_done(&w.p, &w.ds, NULL, NULL));
	const struct tpf_state_node *sn = tpf_state_find(&w.st, "f-a-0");
	char *note = NULL;
	CHECK_INT(tpf_worker_note(&w.f, sn, 1, &w.facts, w.now, &note), TPF_UNCONV_RESTART_WAITING);
	CHECK_STR(note, "restart in 7s (restart_backoff)");
	free(note);
	CHECK(tpf_node_outcome(&w.f, sn, &w.facts, w.now) == NULL);
	world_release(&w);

	/* The same, 10 s later: restart. */
	world_init(&w);
	w.now = 1800000000;
	add_node2(&w, "f-a-0", 1, 1, 10);
	add_fact_w(&w, "f-a-0", 0, "dead", -1, -1);
	CHECK_INT(plan_world(&w, V416(""), NULL), 0);
	CHECK(w.p.n == 1 && w.p.actions[0].gang);
	CHECK_INT(w.p.nunconverged, 0);
	world_release(&w);
}

static void test_unconverged__backoff_schedule(void)
{
	struct tpf_job_policy p = { .restart_backoff = 10 };
	static const double want[] = { 0, 10, 20, 40, 80, 160, 320, 600, 600 };
	for (int k = 0; k < 9; k++)
		CHECKF(tpf_restart_backoff(&p, k) == want[k], "after %d restarts: got %g, want %g", k,
		       tpf_restart_backoff(&p, k), want[k]);
	CHECK(tpf_restart_backoff(&p, 1000) == 600);
	p.restart_backoff = 900; /* a base above the cap is the cap */
	CHECK(tpf_restart_backoff(&p, 1) == 900 && tpf_restart_backoff(&p, 5) == 900);
	p.restart_backoff = 0;
	CHECK(tpf_restart_backoff(&p, 5) == 0);
	static const struct {
		double s;
		const char *want;
	} d[] = { { 0, "0s" }, { 59, "59s" }, { 61, "1m1s" }, { 1860, "31m" }, { 3600, "1h" },
		  { 3900, "1h5m" } };
	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		char out[32];
		tpf_fmt_stall(d[i].s, out, sizeof(out));
		CHECK_STR(out, d[i].want);
	}
}

static void test_unconverged__stalled(void)
{
	struct world w;
	world_init(&w);
	w.now = 1800000000;
	add_node2(&w, "f-a-0", 0, 0, 0);
	add_fact_w(&w, "f-a-0", 0, "alive", -1, 1860); /* 31 min quiet */
	add_fact_w(&w, "f-a-0", 1, "alive", -1, 2);
	CHECK_INT(plan_world(&w, V416("stall_timeout: 30m\n"), NULL), 0);
	CHECK_INT(w.p.n, 1);
	if (w.p.n == 1) {
		CHECK_STR(w.p.actions[0].reason_code, "stalled");
		CHECK_STR(w.p.actions[0].reason,
			  "restart all 2 workers of f-a-0: worker 0 stalled: no output for 31m");
	}
	const struct tpf_state_node *sn = tpf_state_find(&w.st, "f-a-0");
	char *note = NULL;
	CHECK_INT(tpf_worker_note(&w.f, sn, 0, &w.facts, w.now, &note), -1);
	CHECK_STR(note, "stalled: no output for 31m");
	free(note);
	CHECK_INT(tpf_worker_note(&w.f, sn, 1, &w.facts, w.now, &note), -1);
	CHECK(note == NULL);
	world_release(&w);

	/* restart: never: the node failed, and says why. */
	world_init(&w);
	add_node2(&w, "f-a-0", 0, 0, 0);
	add_fact_w(&w, "f-a-0", 0, "alive", -1, 1860);
	add_fact_w(&w, "f-a-0", 1, "alive", -1, 2);
	CHECK_INT(plan_world(&w, V416("restart: never\nstall_timeout: 30m\n"), NULL), 0);
	CHECK_INT(w.p.n, 0);
	char *got = entries(&w.p);
	CHECK_STR(got, "not_restarted:f-a-0");
	free(got);
	if (w.p.nunconverged == 1)
		CHECK_STR(w.p.unconverged[0].reason,
			  "failed: worker 0 stalled: no output for 31m; not restarted (restart: never); "
			  "the node is kept for debugging");
	world_release(&w);
}

static void test_unconverged__completion(void)
{
	struct world w;
	world_init(&w);
	add_node2(&w, "f-a-0", 0, 0, 0);
	add_node2(&w, "f-a-1", 0, 0, 0);
	add_fact_w(&w, "f-a-0", 0, "exited", 0, -1);
	add_fact_w(&w, "f-a-0", 1, "exited", 0, -1);
	add_fact_w(&w, "f-a-1", 0, "exited", 0, -1);
	add_fact_w(&w, "f-a-1", 1, "alive", -1, 1);
	CHECK_INT(plan_world(&w, BASE "groups:\n  - { name: a, accelerator_type: v4-16, "
				      "runtime_version: rt, zones: [z1], count: 2, on_success: "
				      "delete }\n",
			     NULL),
		  0);
	CHECK_INT(w.p.n, 1);
	if (w.p.n == 1) {
		const struct tpf_action *a = &w.p.actions[0];
		CHECK_INT(a->kind, TPF_ACT_DELETE);
		CHECK_STR(a->node, "f-a-0");
		CHECK(tpf_action_completes(a));
		CHECK(tpf_action_is_healing(a));
	}
	CHECK_INT(w.p.destroyed, 1);
	CHECK(!tpf_plan_done(&w.p, &w.ds, NULL, NULL));
	world_release(&w);

	/* After apply: f-a-0 completed in state (deleted), f-a-1 done too. */
	world_init(&w);
	add_node2(&w, "f-a-1", 0, 0, 0);
	struct tpf_state_node *sn = tpf_state_add(&w.st, "f-a-0");
	xstrset(&sn->group, "a");
	sn->status = TPF_NODE_COMPLETED;
	xstrset(&sn->completed_at, "2027-01-15T08:00:00Z");
	sn->exit_code = 0;
	sn->recipe.zone = xstrdup("z1");
	sn->recipe.accelerator_type = xstrdup("v4-16");
	sn->recipe.workers = 2;
	add_fact_w(&w, "f-a-1", 0, "exited", 0, -1);
	add_fact_w(&w, "f-a-1", 1, "exited", 0, -1);
	/* quota for one node only: a completed node holds none */
	CHECK_INT(plan_world(&w, BASE "quota:\n  - { zone: z1, accelerator_type: v4-16, on_demand: "
				      "1 }\ngroups:\n  - { name: a, accelerator_type: v4-16, "
				      "runtime_version: rt, zones: [z1], count: 2, on_success: keep }\n",
			     NULL),
		  0);
	const struct tpf_desired_node *dn = tpf_desired_find(&w.ds, "f-a-0");
	CHECK(dn && dn->completed && !dn->deferred);
	CHECK_INT(w.p.n, 0);
	CHECK_INT(w.p.ncompleted, 2);
	size_t nc = 0, nf = 9;
	CHECK(tpf_plan_done(&w.p, &w.ds, &nc, &nf));
	CHECK_INT(nc, 2);
	CHECK_INT(nf, 0);
	CHECK(tpf_plan_converged(&w.p));
	CHECK_STR(tpf_node_outcome(&w.f, sn, &w.facts, 0), "completed");
	CHECK_STR(tpf_node_outcome(&w.f, tpf_state_find(&w.st, "f-a-1"), &w.facts, 0), "succeeded");
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_plan_render_human(&w.p, 0, &b);
	CHECK_STR(b.buf, "Completed (every worker's job exited 0):\n"
			 "  - f-a-0: completed with exit 0 at 2027-01-15T08:00:00Z; deleted, not "
			 "created again (on_success: delete)\n"
			 "  - f-a-1: completed with exit 0; the node is kept (on_success: keep)\n"
			 "\n"
			 "No changes. Your infrastructure matches the configuration.\n");
	tpf_buf_release(&b);
	/* saved plans keep the list */
	json_t *j = tpf_plan_to_json(&w.p);
	struct tpf_plan back;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_plan_from_json(&back, j, "plan.json", &d), 0);
	CHECK_INT(back.ncompleted, 2);
	if (back.ncompleted == 2) {
		CHECK_STR(back.completed[0].at, "2027-01-15T08:00:00Z");
		CHECK(back.completed[0].deleted && !back.completed[1].deleted);
	}
	tpf_plan_release(&back);
	tpf_diags_release(&d);
	json_decref(j);
	world_release(&w);
}

int main(void)
{
	RUN(test_unconverged__verdict);
	RUN(test_unconverged__restarts_exhausted);
	RUN(test_unconverged__not_restarted_and_unreachable);
	RUN(test_unconverged__changed_job_is_an_action);
	RUN(test_unconverged__quota);
	RUN(test_unconverged__render_no_changes);
	RUN(test_unconverged__render_with_changes);
	RUN(test_unconverged__saved_plan);
	RUN(test_unconverged__codes);
	RUN(test_unconverged__exit_codes);
	RUN(test_unconverged__group_max_restarts);
	RUN(test_unconverged__gang_restart);
	RUN(test_unconverged__gang_failed);
	RUN(test_unconverged__backoff_waits);
	RUN(test_unconverged__backoff_schedule);
	RUN(test_unconverged__stalled);
	RUN(test_unconverged__completion);
	return unit_done();
}
