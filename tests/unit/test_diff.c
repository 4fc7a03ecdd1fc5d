/*
 * The diff, table-driven: a fleet, a state and live nodes (and session
 * facts) -> the actions, written compactly as "kind:node(reason)[workers]"
 * ("restart*" for a restart of a whole unit), then what is not as
 * declared, as "!code:node[/wN]", then completed nodes, as "=node".
 */
#include "plan/plan.h"
#include "engine/workers/provision.h"
#include "tests/unit/unit.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLEET                                                                                  \
	"fleet: f\n"                                                                              \
	"provider:\n  local: { root: /nonexistent }\n"                                            \
	"run: train\n"                                                                            \
	"max_restarts: 2\n"                                                                       \
	"groups:\n"                                                                               \
	"  - { name: a, accelerator_type: v4-16, runtime_version: rt1, zones: [z1, z2], count: %d, " \
	"preemptible: true%s }\n"

/* A node in state or live, described in one line:
 * "NAME ZONE TYPE RUNTIME SCHED STATE" (STATE only for live). */
struct node_desc {
	const char *name, *zone, *type, *runtime, *sched, *state;
	/* Queued resources: live, its state (tpf_live_node.queued_state);
	 * in state, non-NULL records the node as queued. */
	const char *queued;
};

struct tcase {
	const char *title;
	int count;
	struct node_desc state[4]; /* NULL name ends */
	struct node_desc live[4];
	const char *facts;         /* "NODE/W=session:exit,..." or NULL */
	int provisioned;           /* state workers carry the current script hash */
	const char *job_run;       /* the run command state recorded (NULL: current) */
	int destroy;
	const char *want;
};

/* A case whose group says queued: true (or not). */
struct qcase {
	int queued;
	struct tcase tc;
};

/* A case whose state workers were restarted `restarts` times (max_restarts: 2). */
struct rcase {
	int restarts;
	struct tcase tc;
};

/* A case with job policy keys in the group, restarts, and a last restart
 * `ago` seconds before the plan's time NOW (0: none recorded). */
struct pcase {
	const char *keys; /* appended to the group: ", restart_scope: worker" */
	int restarts;
	double ago;
	struct tcase tc;
};

#define NOW 1800000000.0

/* Labels as tpuform sets them, with the lineage label of the state whose
 * lineage is `lineage` (NULL: a node made before that label existed). */
static void fill_recipe(struct tpf_recipe *r, const struct node_desc *nd, const char *fleet,
			const char *lineage)
{
	char lin[TPF_LINEAGE_LABEL_LEN + 1];
	r->zone = xstrdup(nd->zone);
	r->accelerator_type = xstrdup(nd->type);
	r->runtime_version = xstrdup(nd->runtime);
	r->preemptible = !strcmp(nd->sched, "preemptible");
	r->spot = !strcmp(nd->sched, "spot");
	r->workers = !strcmp(nd->type, "v4-16") ? 2 : 1;
	tpf_kvlist_set(&r->labels, TPF_LABEL_FLEET, fleet);
	tpf_kvlist_set(&r->labels, TPF_LABEL_GROUP, "a");
	tpf_kvlist_set(&r->labels, TPF_LABEL_INDEX, nd->name + strlen(nd->name) - 1);
	if (tpf_lineage_label(lineage, lin))
		tpf_kvlist_set(&r->labels, TPF_LABEL_LINEAGE, lin);
	tpf_kvlist_sort(&r->labels);
}

static void render_plan(const struct tpf_plan *p, struct tpf_buf *b)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct tpf_action *a = &p->actions[i];
		static const char *kinds[] = { "create", "delete", "replace", "update",
					       "restart", "wait", "forget" };
		tpf_buf_addf(b, "%s%s%s:%s", i ? " " : "", kinds[a->kind], a->gang ? "*" : "",
			     a->node);
		if (a->reason_code)
			tpf_buf_addf(b, "(%s)", a->reason_code);
		if (a->nworkers) {
			tpf_buf_addch(b, '[');
			for (size_t k = 0; k < a->nworkers; k++)
				tpf_buf_addf(b, "%s%d", k ? "," : "", a->workers[k]);
			tpf_buf_addch(b, ']');
		}
	}
	for (size_t i = 0; i < p->nunconverged; i++) {
		const struct tpf_unconverged *u = &p->unconverged[i];
		tpf_buf_addf(b, "%s!%s:%s", b->len ? " " : "", tpf_unconverged_code(u->kind), u->node);
		if (u->worker >= 0)
			tpf_buf_addf(b, "/w%d", u->worker);
	}
	for (size_t i = 0; i < p->ncompleted; i++)
		tpf_buf_addf(b, "%s=%s%s", b->len ? " " : "", p->completed[i].node,
			     p->completed[i].deleted ? "" : "(kept)");
}

/* Facts: "NODE/W=session:exit[:stalled_for],..." */
static void parse_facts(const char *text, struct tpf_job_facts *facts)
{
	char *copy = xstrdup(text), *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char node[64], sess[16];
		int w, code;
		double stalled = -1;
		if (sscanf(tok, "%63[^/]/%d=%15[^:]:%d:%lf", node, &w, sess, &code, &stalled) < 4)
			continue;
		XGROW(facts->items, facts->n + 1, facts->alloc);
		struct tpf_job_fact *sf = &facts->items[facts->n++];
		memset(sf, 0, sizeof(*sf));
		sf->node = xstrdup(node);
		sf->worker = w;
		sf->state = tpf_job_state_from_name(sess);
		sf->exit_code = code;
		sf->stalled_for = stalled;
	}
	free(copy);
}

static void run_case_with(const struct tcase *tc, const char *keys, int restarts, double ago)
{
	unit_begin(tc->title);
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	char restarted_at[40] = "";
	if (ago > 0)
		tpf_rfc3339(NOW - ago, restarted_at, sizeof(restarted_at));
	char *yaml = xasprintf(FLEET, tc->count, keys);
	int rc = tpf_fleet_parse(&f, "fleet.yaml", yaml, strlen(yaml), &d);
	free(yaml);
	CHECK_INT(rc, 0);
	if (rc)
		return;
	struct tpf_state st;
	tpf_state_init(&st);
	st.serial = 3;
	struct tpf_desired_set ds = { 0 };
	struct tpf_live_set live = { 0 };
	for (const struct node_desc *nd = tc->state; nd->name; nd++) {
		struct tpf_state_node *sn = tpf_state_add(&st, nd->name);
		xstrset(&sn->group, "a");
		sn->index = nd->name[strlen(nd->name) - 1] - '0';
		/* "sent": created, and tpuform sent its delete (delete_sent_at) */
		int sent = nd->state && !strcmp(nd->state, "sent");
		sn->status = nd->state && !sent ? tpf_node_status_from_name(nd->state) : TPF_NODE_CREATED;
		if (sent)
			xstrset(&sn->delete_sent_at, "2026-11-28T10:00:00Z");
		xstrset(&sn->id, "123");
		fill_recipe(&sn->recipe, nd, "f", st.lineage);
		sn->recipe.queued = nd->queued != NULL;
		tpf_state_node_set_workers(sn, (size_t)sn->recipe.workers);
		for (size_t w = 0; w < sn->nworkers; w++) {
			sn->workers[w].restarts = restarts;
			if (*restarted_at)
				sn->workers[w].restarted_at = xstrdup(restarted_at);
		}
	}
	tpf_desired_compute(&ds, &f, NULL, &st, &d);
	/* Record the job (and script hashes) the state would hold after an apply. */
	for (size_t i = 0; i < st.nnodes; i++) {
		struct tpf_state_node *sn = &st.nodes[i];
		for (size_t k = 0; k < ds.n; k++) {
			if (strcmp(ds.nodes[k].name, sn->name))
				continue;
			tpf_job_copy(&sn->job, &ds.nodes[k].job);
			if (tc->job_run)
				xstrset(&sn->job.run, tc->job_run);
			for (size_t w = 0; tc->provisioned && w < sn->nworkers; w++) {
				char *h = NULL;
				free(tpf_provision_render(&f, sn, NULL, (int)w, &h));
				sn->workers[w].script_hash = h;
			}
		}
	}
	for (const struct node_desc *nd = tc->live; nd->name; nd++) {
		struct tpf_live_node *ln = tpf_live_set_add(&live);
		ln->name = xstrdup(nd->name);
		/* "READY/new-id": a node re-created under the same name. */
		int new_id = !strcmp(nd->state, "READY/new-id");
		ln->id = xstrdup(new_id ? "456" : "123");
		ln->state = xstrdup(new_id ? "READY" : nd->state);
		fill_recipe(&ln->recipe, nd, "f", st.lineage);
		ln->queued_state = xstrdup(nd->queued);
		ln->recipe.queued = nd->queued != NULL;
		if (nd->queued && !strcmp(nd->queued, nd->state)) {
			/* only the queued resource exists: no node id yet */
			free(ln->id);
			ln->id = NULL;
		}
	}
	struct tpf_job_facts facts = { 0 };
	if (tc->facts)
		parse_facts(tc->facts, &facts);
	struct tpf_diff_input in = { &f, &ds, &st, &live, &facts, tc->destroy, NOW };
	/* Each case twice: the facts scanned, then indexed as
	 * tpf_pipeline_plan indexes them; the same plan both times. */
	for (int indexed = 0; indexed < 2; indexed++) {
		if (indexed)
			tpf_job_facts_index(&facts);
		struct tpf_plan p;
		CHECK_INT(tpf_diff(&p, &in, &d), 0);
		struct tpf_buf b = TPF_BUF_INIT;
		render_plan(&p, &b);
		CHECK_STR(b.buf, tc->want);
		tpf_buf_release(&b);
		tpf_plan_release(&p);
	}
	tpf_job_facts_release(&facts);
	tpf_live_set_release(&live);
	tpf_desired_release(&ds);
	tpf_state_release(&st);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

static void run_case(const struct tcase *tc, int queued, int restarts)
{
	run_case_with(tc, queued ? ", queued: true" : "", restarts, 0);
}

#define N(name, zone, type, rt, sched, state) { name, zone, type, rt, sched, state, NULL }
#define A0(state) N("f-a-0", "z1", "v4-16", "rt1", "preemptible", state)
#define A1(state) N("f-a-1", "z1", "v4-16", "rt1", "preemptible", state)
/* queued: node (or queued resource) state, queued resource state */
#define Q0(state, qstate) { "f-a-0", "z1", "v4-16", "rt1", "preemptible", state, qstate }

static const struct tcase cases[] = {
	{ "empty state, nothing live: create all", 2, { { 0 } }, { { 0 } }, NULL, 0, NULL, 0,
	  "create:f-a-0 create:f-a-1" },
	{ "all there and provisioned: no changes", 2, { A0(NULL), A1(NULL), { 0 } },
	  { A0("READY"), A1("READY"), { 0 } }, NULL, 1, NULL, 0, "" },
	{ "preempted: replace", 1, { A0(NULL), { 0 } }, { A0("PREEMPTED"), { 0 } }, NULL, 1, NULL, 0,
	  "replace:f-a-0(preempted)" },
	{ "terminated: replace", 1, { A0(NULL), { 0 } }, { A0("TERMINATED"), { 0 } }, NULL, 1, NULL, 0,
	  "replace:f-a-0(terminated)" },
	{ "vanished from the provider: create again", 1, { A0(NULL), { 0 } }, { { 0 } }, NULL, 1, NULL,
	  0, "create:f-a-0(missing)" },
	{ "pending in state, not live (crash before create): create", 1,
	  { A0("pending"), { 0 } }, { { 0 } }, NULL, 0, NULL, 0, "create:f-a-0(interrupted)" },
	{ "tainted: replace", 1, { A0("tainted"), { 0 } }, { A0("READY"), { 0 } }, NULL, 1, NULL,
	  0, "replace:f-a-0(tainted)" },
	{ "runtime version changed: replace", 1, { A0(NULL), { 0 } },
	  { N("f-a-0", "z1", "v4-16", "rt0", "preemptible", "READY"), { 0 } }, NULL, 1, NULL, 0,
	  "replace:f-a-0(recipe)" },
	{ "scheduling changed: replace", 1, { A0(NULL), { 0 } },
	  { N("f-a-0", "z1", "v4-16", "rt1", "spot", "READY"), { 0 } }, NULL, 1, NULL, 0,
	  "replace:f-a-0(recipe)" },
	{ "zone outside the group's list: replace", 1, { A0(NULL), { 0 } },
	  { N("f-a-0", "z9", "v4-16", "rt1", "preemptible", "READY"), { 0 } }, NULL, 1, NULL, 0,
	  "replace:f-a-0(recipe)" },
	{ "fallback zone in the list: kept", 1,
	  { N("f-a-0", "z2", "v4-16", "rt1", "preemptible", NULL), { 0 } },
	  { N("f-a-0", "z2", "v4-16", "rt1", "preemptible", "READY"), { 0 } }, NULL, 1, NULL, 0, "" },
	{ "being deleted (the going class): a replace whose delete is under way", 1,
	  { A0(NULL), { 0 } }, { A0("DELETING"), { 0 } }, NULL, 1, NULL, 0,
	  "replace:f-a-0(deleting)" },
	{ "hidden: going too", 1, { A0(NULL), { 0 } }, { A0("HIDDEN"), { 0 } }, NULL, 1, NULL, 0,
	  "replace:f-a-0(deleting)" },
	{ "tpuform sent its delete, the node still TERMINATED: its delete is under way", 1,
	  { A0("sent"), { 0 } }, { A0("TERMINATED"), { 0 } }, NULL, 1, NULL, 0,
	  "replace:f-a-0(deleting)" },
	{ "tpuform sent its delete, the node is gone: created again, not 'missing'", 1,
	  { A0("sent"), { 0 } }, { { 0 } }, NULL, 1, NULL, 0, "create:f-a-0(deleted)" },
	{ "tpuform sent its delete, yet the node is READY (a lost request): left alone", 1,
	  { A0("sent"), { 0 } }, { A0("READY"), { 0 } }, NULL, 1, NULL, 0, "" },
	{ "destroy of a node being deleted: one delete, waited for", 1, { A0("sent"), { 0 } },
	  { A0("DELETING"), { 0 } }, NULL, 1, NULL, 1, "delete:f-a-0(destroy)" },
	{ "still creating: wait then provision", 1, { A0(NULL), { 0 } }, { A0("CREATING"), { 0 } }, NULL,
	  1, NULL, 0, "wait:f-a-0(busy)[0,1]" },
	{ "run command changed: re-provision both workers", 1, { A0(NULL), { 0 } },
	  { A0("READY"), { 0 } }, NULL, 1, "old command", 0, "update:f-a-0(job)[0,1]" },
	{ "re-created outside tpuform (new id): provision every worker", 1, { A0(NULL), { 0 } },
	  { A0("READY/new-id"), { 0 } }, NULL, 1, NULL, 0, "update:f-a-0(provision)[0,1]" },
	{ "never provisioned: provision", 1, { A0(NULL), { 0 } }, { A0("READY"), { 0 } }, NULL, 0, NULL,
	  0, "update:f-a-0(provision)[0,1]" },
	{ "count lowered: delete the last", 1, { A0(NULL), A1(NULL), { 0 } },
	  { A0("READY"), A1("READY"), { 0 } }, NULL, 1, NULL, 0, "delete:f-a-1(count)" },
	{ "labelled but in no state, not declared: orphan delete", 1, { A0(NULL), { 0 } },
	  { A0("READY"), A1("READY"), { 0 } }, NULL, 1, NULL, 0, "delete:f-a-1(orphan)" },
	{ "labelled, declared, not in state: adopt", 1, { { 0 } }, { A0("READY"), { 0 } }, NULL, 0, NULL,
	  0, "update:f-a-0(adopt)[0,1]" },
	{ "in state, gone, not declared: forget", 0, { A0(NULL), { 0 } }, { { 0 } }, NULL, 1, NULL, 0,
	  "forget:f-a-0(gone)" },
	{ "dead session on one worker of a multi-host node: restart the node's workers", 1,
	  { A0(NULL), { 0 } }, { A0("READY"), { 0 } }, "f-a-0/0=alive:-1,f-a-0/1=dead:-1", 1, NULL,
	  0, "restart*:f-a-0(session)[0,1]" },
	{ "job failed: restart every worker (on-failure, restart_scope node by default)", 1,
	  { A0(NULL), { 0 } }, { A0("READY"), { 0 } }, "f-a-0/0=exited:3,f-a-0/1=alive:-1", 1, NULL,
	  0, "restart*:f-a-0(session)[0,1]" },
	{ "job finished with 0: left alone, listed as completed (on_success: keep)", 1,
	  { A0(NULL), { 0 } }, { A0("READY"), { 0 } }, "f-a-0/0=exited:0,f-a-0/1=exited:0", 1, NULL,
	  0, "=f-a-0(kept)" },
	{ "one worker finished with 0, the other runs: nothing yet", 1, { A0(NULL), { 0 } },
	  { A0("READY"), { 0 } }, "f-a-0/0=exited:0,f-a-0/1=alive:-1", 1, NULL, 0, "" },
	{ "unreachable worker: no action, not as declared", 1, { A0(NULL), { 0 } },
	  { A0("READY"), { 0 } }, "f-a-0/0=unreachable:-1,f-a-0/1=alive:-1", 1, NULL, 0,
	  "!unreachable:f-a-0/w0" },

	{ "destroy: delete what is live, forget what is gone", 2, { A0(NULL), A1(NULL), { 0 } },
	  { A0("READY"), { 0 } }, NULL, 1, NULL, 1, "delete:f-a-0(destroy) forget:f-a-1(gone)" },
	{ "deletes sort before creates", 1, { A1(NULL), { 0 } }, { A1("READY"), { 0 } }, NULL, 1, NULL, 0,
	  "delete:f-a-1(count) create:f-a-0" },
};


/* Queued resources: waiting is not an action (it can take hours). */
static const struct qcase qcases[] = {
	{ 1, { "queued, waiting for resources: no action", 1, { Q0(NULL, "yes"), { 0 } },
	  { Q0("WAITING_FOR_RESOURCES", "WAITING_FOR_RESOURCES"), { 0 } }, NULL, 0, NULL, 0,
	  "!queued:f-a-0" } },
	{ 1, { "queued, accepted: no action", 1, { Q0(NULL, "yes"), { 0 } },
	  { Q0("ACCEPTED", "ACCEPTED"), { 0 } }, NULL, 0, NULL, 0, "!queued:f-a-0" } },
	{ 1, { "queued, provisioning and no node yet: no action", 1, { Q0(NULL, "yes"), { 0 } },
	  { Q0("PROVISIONING", "PROVISIONING"), { 0 } }, NULL, 0, NULL, 0, "!queued:f-a-0" } },
	{ 1, { "queued, creating (the queued resource's CREATING, not a node's): no wait", 1,
	  { Q0(NULL, "yes"), { 0 } }, { Q0("CREATING", "CREATING"), { 0 } }, NULL, 0, NULL, 0,
	  "!queued:f-a-0" } },
	{ 1, { "queued, node CREATING while provisioning: wait, then provision", 1,
	  { Q0(NULL, "yes"), { 0 } }, { Q0("CREATING", "PROVISIONING"), { 0 } }, NULL, 0, NULL, 0,
	  "wait:f-a-0(busy)[0,1]" } },
	{ 1, { "queued, node READY, queued resource ACTIVE, never provisioned: provision", 1,
	  { Q0(NULL, "yes"), { 0 } }, { Q0("READY", "ACTIVE"), { 0 } }, NULL, 0, NULL, 0,
	  "update:f-a-0(provision)[0,1]" } },
	{ 1, { "queued, READY and provisioned: no changes", 1, { Q0(NULL, "yes"), { 0 } },
	  { Q0("READY", "ACTIVE"), { 0 } }, NULL, 1, NULL, 0, "" } },
	{ 1, { "queued resource FAILED: delete and queue again", 1, { Q0(NULL, "yes"), { 0 } },
	  { Q0("FAILED", "FAILED"), { 0 } }, NULL, 1, NULL, 0, "replace:f-a-0(queued_failed)" } },
	{ 1, { "queued resource SUSPENDED: delete and queue again", 1, { Q0(NULL, "yes"), { 0 } },
	  { Q0("SUSPENDED", "SUSPENDED"), { 0 } }, NULL, 1, NULL, 0,
	  "replace:f-a-0(queued_suspended)" } },
	{ 1, { "queued resource ACTIVE without its node: delete and queue again", 1,
	  { Q0(NULL, "yes"), { 0 } }, { Q0("ACTIVE", "ACTIVE"), { 0 } }, NULL, 1, NULL, 0,
	  "replace:f-a-0(queued_node_gone)" } },
	{ 1, { "queued, node PREEMPTED before its queued resource noticed: replace", 1,
	  { Q0(NULL, "yes"), { 0 } }, { Q0("PREEMPTED", "ACTIVE"), { 0 } }, NULL, 1, NULL, 0,
	  "replace:f-a-0(preempted)" } },
	{ 1, { "waiting queued resource, runtime changed in the file: replace", 1,
	  { Q0(NULL, "yes"), { 0 } },
	  { { "f-a-0", "z1", "v4-16", "rt0", "preemptible", "WAITING_FOR_RESOURCES",
	      "WAITING_FOR_RESOURCES" }, { 0 } }, NULL, 0, NULL, 0, "replace:f-a-0(recipe)" } },
	{ 1, { "group turned queued: replace the plain node", 1, { A0(NULL), { 0 } },
	  { A0("READY"), { 0 } }, NULL, 1, NULL, 0, "replace:f-a-0(recipe)" } },
	{ 0, { "group no longer queued: replace", 1, { Q0(NULL, "yes"), { 0 } },
	  { Q0("READY", "ACTIVE"), { 0 } }, NULL, 1, NULL, 0, "replace:f-a-0(recipe)" } },
	{ 0, { "group no longer queued, node gone: replace (its queued resource may linger)", 1,
	  { Q0(NULL, "yes"), { 0 } }, { { 0 } }, NULL, 1, NULL, 0, "replace:f-a-0(recipe)" } },
	{ 1, { "queued, node gone with its queued resource: create", 1, { Q0(NULL, "yes"), { 0 } },
	  { { 0 } }, NULL, 1, NULL, 0, "create:f-a-0(missing)" } },
	{ 1, { "waiting queued resource not in state: adopt, nothing to provision", 1, { { 0 } },
	  { Q0("WAITING_FOR_RESOURCES", "WAITING_FOR_RESOURCES"), { 0 } }, NULL, 0, NULL, 0,
	  "update:f-a-0(adopt) !queued:f-a-0" } },
	{ 1, { "waiting queued resource, not declared: orphan delete", 0, { { 0 } },
	  { Q0("WAITING_FOR_RESOURCES", "WAITING_FOR_RESOURCES"), { 0 } }, NULL, 0, NULL, 0,
	  "delete:f-a-0(orphan)" } },
};

/* Restarts used up (max_restarts: 2): not as declared, unless an action
 * starts the job afresh. */
static const struct rcase rcases[] = {
	{ 2, { "job failed, restarts of the node used up: no action, the node failed", 1,
	  { A0(NULL), { 0 } }, { A0("READY"), { 0 } }, "f-a-0/0=exited:3,f-a-0/1=alive:-1", 1, NULL,
	  0, "!restarts_exhausted:f-a-0" } },
	{ 2, { "dead sessions, restarts used up: the node is listed once", 1, { A0(NULL), { 0 } },
	  { A0("READY"), { 0 } }, "f-a-0/0=dead:-1,f-a-0/1=dead:-1", 1, NULL, 0,
	  "!restarts_exhausted:f-a-0" } },
	{ 1, { "job failed, one restart left: restart the node", 1, { A0(NULL), { 0 } },
	  { A0("READY"), { 0 } }, "f-a-0/0=exited:3,f-a-0/1=alive:-1", 1, NULL, 0,
	  "restart*:f-a-0(session)[0,1]" } },
	{ 2, { "job finished with 0, restarts used up: done", 1, { A0(NULL), { 0 } },
	  { A0("READY"), { 0 } }, "f-a-0/0=exited:0,f-a-0/1=exited:0", 1, NULL, 0, "=f-a-0(kept)" } },
	{ 2, { "restarts used up but the job changed: re-provision, nothing listed", 1,
	  { A0(NULL), { 0 } }, { A0("READY"), { 0 } }, "f-a-0/0=exited:3,f-a-0/1=exited:3", 1,
	  "old command", 0, "update:f-a-0(job)[0,1]" } },
	{ 2, { "restarts used up, node preempted: replace, nothing listed", 1, { A0(NULL), { 0 } },
	  { A0("PREEMPTED"), { 0 } }, "f-a-0/0=exited:3", 1, NULL, 0,
	  "replace:f-a-0(preempted)" } },
};

#define WORKER_SCOPE ", restart_scope: worker"

/* Restart units, stalls, backoff and completion (docs/design.md sections
 * 5 and 8). max_restarts is 2; restart_backoff defaults to 10s. */
static const struct pcase pcases[] = {
	{ WORKER_SCOPE, 0, 0, { "restart_scope worker: a dead session restarts only its worker", 1,
	  { A0(NULL), { 0 } }, { A0("READY"), { 0 } }, "f-a-0/0=alive:-1,f-a-0/1=dead:-1", 1, NULL,
	  0, "restart:f-a-0(session)[1]" } },
	{ WORKER_SCOPE, 0, 0, { "restart_scope worker: a failed job restarts only its worker", 1,
	  { A0(NULL), { 0 } }, { A0("READY"), { 0 } }, "f-a-0/0=exited:3,f-a-0/1=alive:-1", 1, NULL,
	  0, "restart:f-a-0(session)[0]" } },
	{ WORKER_SCOPE, 2, 0, { "restart_scope worker: restarts used up: each worker listed", 1,
	  { A0(NULL), { 0 } }, { A0("READY"), { 0 } }, "f-a-0/0=dead:-1,f-a-0/1=dead:-1", 1, NULL, 0,
	  "!restarts_exhausted:f-a-0/w0 !restarts_exhausted:f-a-0/w1" } },
	{ "", 1, 5, { "second restart within its backoff (10s after the first): waits", 1,
	  { A0(NULL), { 0 } }, { A0("READY"), { 0 } }, "f-a-0/0=alive:-1,f-a-0/1=exited:1", 1, NULL,
	  0, "!restart_waiting:f-a-0" } },
	{ "", 1, 11, { "second restart once its backoff passed: restart", 1, { A0(NULL), { 0 } },
	  { A0("READY"), { 0 } }, "f-a-0/0=alive:-1,f-a-0/1=exited:1", 1, NULL, 0,
	  "restart*:f-a-0(session)[0,1]" } },
	{ ", restart_backoff: 0s", 1, 1, { "restart_backoff 0s: no wait", 1, { A0(NULL), { 0 } },
	  { A0("READY"), { 0 } }, "f-a-0/0=alive:-1,f-a-0/1=exited:1", 1, NULL, 0,
	  "restart*:f-a-0(session)[0,1]" } },
	{ "", 0, 1, { "first restart: never waits", 1, { A0(NULL), { 0 } }, { A0("READY"), { 0 } },
	  "f-a-0/0=alive:-1,f-a-0/1=exited:1", 1, NULL, 0, "restart*:f-a-0(session)[0,1]" } },
	{ ", stall_timeout: 30m", 0, 0, { "stalled past stall_timeout: restart the node (stalled)", 1,
	  { A0(NULL), { 0 } }, { A0("READY"), { 0 } },
	  "f-a-0/0=alive:-1:1860,f-a-0/1=alive:-1:5", 1, NULL, 0, "restart*:f-a-0(stalled)[0,1]" } },
	{ ", stall_timeout: 30m", 0, 0, { "quiet, but not for stall_timeout: nothing", 1,
	  { A0(NULL), { 0 } }, { A0("READY"), { 0 } },
	  "f-a-0/0=alive:-1:1799,f-a-0/1=alive:-1:3", 1, NULL, 0, "" } },
	{ "", 0, 0, { "no stall_timeout: a quiet job is left alone", 1, { A0(NULL), { 0 } },
	  { A0("READY"), { 0 } }, "f-a-0/0=alive:-1:99999,f-a-0/1=alive:-1:99999", 1, NULL, 0,
	  "" } },
	{ ", stall_timeout: 1m" WORKER_SCOPE, 0, 0, { "stalled, restart_scope worker: its worker", 1,
	  { A0(NULL), { 0 } }, { A0("READY"), { 0 } }, "f-a-0/0=alive:-1:5,f-a-0/1=alive:-1:61", 1,
	  NULL, 0, "restart:f-a-0(stalled)[1]" } },
	{ ", on_success: delete", 0, 0, { "every worker exited 0, on_success delete: delete", 1,
	  { A0(NULL), { 0 } }, { A0("READY"), { 0 } }, "f-a-0/0=exited:0,f-a-0/1=exited:0", 1, NULL,
	  0, "delete:f-a-0(completed)" } },
	{ ", on_success: delete", 0, 0, { "one worker still runs: not completed", 1,
	  { A0(NULL), { 0 } }, { A0("READY"), { 0 } }, "f-a-0/0=exited:0,f-a-0/1=alive:-1", 1, NULL,
	  0, "" } },
	{ ", on_success: delete", 0, 0, { "one worker unreachable: not completed", 1,
	  { A0(NULL), { 0 } }, { A0("READY"), { 0 } }, "f-a-0/0=exited:0,f-a-0/1=unreachable:-1", 1,
	  NULL, 0, "!unreachable:f-a-0/w1" } },
	{ ", on_success: delete", 0, 0, { "completed in state, gone: listed, never created again", 2,
	  { A0("completed"), A1(NULL), { 0 } }, { A1("READY"), { 0 } }, NULL, 1, NULL, 0,
	  "=f-a-0" } },
	{ ", on_success: delete", 0, 0, { "completed in state but live again: delete it", 1,
	  { A0("completed"), { 0 } }, { A0("READY"), { 0 } }, NULL, 1, NULL, 0,
	  "delete:f-a-0(completed) =f-a-0" } },
	{ ", on_success: delete", 0, 0, { "completed, then the count lowered: forget", 0,
	  { A0("completed"), { 0 } }, { { 0 } }, NULL, 1, NULL, 0, "forget:f-a-0(gone)" } },
	{ ", on_success: delete", 0, 0, { "completed: destroy forgets it", 1,
	  { A0("completed"), { 0 } }, { { 0 } }, NULL, 1, NULL, 1, "forget:f-a-0(gone)" } },
};

#include "plan/plan_internal.h"

static void add(struct tpf_plan *p, enum tpf_action_kind k, const char *node, const char *code)
{
	struct tpf_action *a = tpf_plan_add(p, k, node);
	tpf_action_set_reason_code(a, code);
}

static void test_heal__split(void)
{
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	add(&p, TPF_ACT_DELETE, "count", "count");        /* lower count: not healing */
	add(&p, TPF_ACT_DELETE, "orphan", "orphan");      /* orphan holds quota: heal */
	add(&p, TPF_ACT_REPLACE, "pre", "preempted");     /* heal */
	add(&p, TPF_ACT_REPLACE, "recipe", "recipe");     /* changed recipe: not healing */
	add(&p, TPF_ACT_CREATE, "new", NULL);             /* heal */
	add(&p, TPF_ACT_UPDATE, "job", "job");            /* changed job: not healing */
	add(&p, TPF_ACT_UPDATE, "labels", "labels");      /* not healing */
	add(&p, TPF_ACT_UPDATE, "prov", "provision");     /* workers not up: heal */
	add(&p, TPF_ACT_UPDATE, "adopt", "adopt");        /* heal */
	add(&p, TPF_ACT_RESTART, "restart", "session");   /* heal */
	add(&p, TPF_ACT_REPLACE, "qfail", "queued_failed");   /* queue again: heal */
	add(&p, TPF_ACT_REPLACE, "qsusp", "queued_suspended"); /* heal */
	struct tpf_plan rest;
	memset(&rest, 0, sizeof(rest));
	tpf_plan_split_healing(&p, &rest);
	struct tpf_buf a = TPF_BUF_INIT, b = TPF_BUF_INIT;
	for (size_t i = 0; i < p.n; i++)
		tpf_buf_addf(&a, "%s ", p.actions[i].node);
	for (size_t i = 0; i < rest.n; i++)
		tpf_buf_addf(&b, "%s ", rest.actions[i].node);
	CHECK_STR(a.buf, "orphan pre new prov adopt restart qfail qsusp ");
	CHECK_STR(b.buf, "count recipe job labels ");
	CHECK_INT(p.add, 4);
	CHECK_INT(p.destroyed, 4);
	CHECK_INT(p.change, 3);
	CHECK_INT(rest.add, 1);
	CHECK_INT(rest.destroyed, 2);
	CHECK_INT(rest.change, 2);
	tpf_buf_release(&a);
	tpf_buf_release(&b);
	tpf_plan_release(&p);
	tpf_plan_release(&rest);
}

/* jansson's own quoting of s, the answer tpf_diff_value_str must give. */
static char *jansson_quoted(const char *s)
{
	json_t *j = json_string(s);
	char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	char *r = xstrdup(out ? out : "\"\"");
	free(out);
	return r;
}

/* Values shown again and again (plan/diff_values.c keeps the last
 * encodings by a hash of the text): each answer is jansson's for that very
 * text, whatever came before it in the same slot, up to and past the
 * kept length, with escapes and non-ASCII. */
static void test_diff__value_str_repeats(void)
{
	char text[200];
	int bad = 0;
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 400; i++) {
			int len = i % 70;
			for (int k = 0; k < len; k++)
				text[k] = (char)('a' + (i + k) % 26);
			text[len] = '\0';
			if (i % 7 == 0 && len > 2)
				text[1] = '"';
			if (i % 11 == 0 && len > 3)
				text[2] = '\\';
			if (i % 13 == 0)
				snprintf(text, sizeof(text), "z\xc3\xa9%d\n", i);
			char *got = tpf_diff_value_str(text), *want = jansson_quoted(text);
			bad += strcmp(got, want) != 0;
			free(got);
			free(want);
		}
	}
	CHECK_INT(bad, 0);
	char *n = tpf_diff_value_str(NULL);
	CHECK_STR(n, "null");
	free(n);
}

/* An action's change lines keep their order as the list grows (by
 * doubling, plan/plan.c) past 8, 16 and 32 lines. */
/* tpf_job_facts_find answers the same indexed as scanned: the first of
 * two facts of one worker, none for an unknown one; a fact added after the
 * index was built is still found (the scan decides); a hit is checked
 * against the fact it names. */
static void test_diff__facts_index(void)
{
	struct tpf_job_facts s = { 0 };
	const char *nodes[] = { "a", "b", "a", "c" };
	int workers[] = { 0, 0, 0, 1 };
	for (size_t i = 0; i < 4; i++) {
		XGROW(s.items, s.n + 1, s.alloc);
		memset(&s.items[s.n], 0, sizeof(s.items[s.n]));
		s.items[s.n].node = xstrdup(nodes[i]);
		s.items[s.n].worker = workers[i];
		s.n++;
	}
	for (int indexed = 0; indexed < 2; indexed++) {
		if (indexed)
			tpf_job_facts_index(&s);
		CHECK(tpf_job_facts_find(&s, "a", 0) == &s.items[0]);
		CHECK(tpf_job_facts_find(&s, "c", 1) == &s.items[3]);
		CHECK(tpf_job_facts_find(&s, "c", 0) == NULL);
		CHECK(tpf_job_facts_find(&s, "d", 0) == NULL);
		CHECK(tpf_job_facts_find(&s, NULL, 0) == NULL);
	}
	CHECK(s.ix != NULL);
	/* A slot changed under the index (which its callers must not do):
	 * the hit is checked against the fact, so the old name is not
	 * answered with the new fact. */
	free(s.items[3].node);
	s.items[3].node = xstrdup("e");
	CHECK(tpf_job_facts_find(&s, "c", 1) == NULL);
	/* Appended after the index: a count the index was not built for. */
	XGROW(s.items, s.n + 1, s.alloc);
	memset(&s.items[s.n], 0, sizeof(s.items[s.n]));
	s.items[s.n].node = xstrdup("z");
	s.items[s.n].worker = 3;
	s.n++;
	CHECK(tpf_job_facts_find(&s, "z", 3) == &s.items[4]);
	tpf_job_facts_unindex(&s);
	CHECK(s.ix == NULL);
	CHECK(tpf_job_facts_find(&s, "e", 1) == &s.items[3]);
	tpf_job_facts_index(&s);
	CHECK(tpf_job_facts_find(&s, "e", 1) == &s.items[3]);
	tpf_job_facts_release(&s); /* frees the index too (LeakSanitizer) */
	CHECK(s.ix == NULL && s.n == 0);
}

static void test_diff__many_changes(void)
{
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	struct tpf_action *a = tpf_plan_add(&p, TPF_ACT_UPDATE, "n");
	char f[16];
	for (int i = 0; i < 40; i++) {
		snprintf(f, sizeof(f), "f%d", i);
		if (i % 2)
			tpf_action_change(a, f, NULL, f, 0, 0);
		else
			tpf_action_change_take(a, f, xstrdup("b"), xstrdup(f), 0);
	}
	CHECK_INT((int)a->nchanges, 40);
	int bad = 0;
	for (int i = 0; i < 40; i++) {
		snprintf(f, sizeof(f), "f%d", i);
		bad += strcmp(a->changes[i].field, f) || strcmp(a->changes[i].after, f) ||
		       (i % 2 ? a->changes[i].before != NULL : strcmp(a->changes[i].before, "b"));
	}
	CHECK_INT(bad, 0);
	tpf_plan_release(&p);
}

int main(void)
{
	RUN(test_heal__split);
	RUN(test_diff__value_str_repeats);
	RUN(test_diff__many_changes);
	RUN(test_diff__facts_index);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i], 0, 0);
	for (size_t i = 0; i < sizeof(qcases) / sizeof(qcases[0]); i++)
		run_case(&qcases[i].tc, qcases[i].queued, 0);
	for (size_t i = 0; i < sizeof(rcases) / sizeof(rcases[0]); i++)
		run_case(&rcases[i].tc, 0, rcases[i].restarts);
	for (size_t i = 0; i < sizeof(pcases) / sizeof(pcases[0]); i++)
		run_case_with(&pcases[i].tc, pcases[i].keys, pcases[i].restarts, pcases[i].ago);
	return unit_done();
}
