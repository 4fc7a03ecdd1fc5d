/*
 * desired x state x live (x job facts) -> actions.
 * The lifecycle rules are docs/design.md sections 6 and 8 ("Node lifecycle").
 */
#include "model/node_state.h"
#include "plan/ownership.h"
#include "plan/plan.h"
#include "plan/plan_internal.h"
#include "plan/worker_script.h"
#include "util/strindex.h"
#include "util/str.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* A node carrying this state's lineage label that the state does not list
 * (plan/ownership.h): an apply that crashed between its create and its
 * record. */
#define ADOPT_REASON "found by this state's lineage label but missing from state: adopt it"

/* A string as Terraform shows it: JSON-quoted (jansson does the escaping). */
static char *q(const char *s)
{
	if (!s)
		return xstrdup("null");
	json_t *j = json_string(s);
	/* Most values are short: encode into the stack, not a heap string. */
	char small[256];
	size_t n = j ? json_dumpb(j, small, sizeof(small), JSON_ENCODE_ANY) : 0;
	char *r;
	if (n && n < sizeof(small)) {
		r = xstrndup(small, n);
	} else {
		char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
		r = xstrdup(out ? out : "\"\"");
		free(out);
	}
	json_decref(j);
	return r;
}

static char *qmap(const struct tpf_kvlist *l)
{
	if (!l->n)
		return xstrdup("{}");
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_buf_adds(&b, "{ ");
	for (size_t i = 0; i < l->n; i++) {
		char *k = q(l->items[i].key), *v = q(l->items[i].value);
		tpf_buf_addf(&b, "%s%s = %s", i ? ", " : "", k, v);
		free(k);
		free(v);
	}
	tpf_buf_adds(&b, " }");
	return tpf_buf_detach(&b, NULL);
}

static char *qint(long v)
{
	return xasprintf("%ld", v);
}

/* Add a change line for a string attribute when before != after. */
static void diff_str(struct tpf_action *a, const char *field, const char *before,
		     const char *after, int forces)
{
	if (tpf_streq(before, after))
		return;
	char *qb = before ? q(before) : NULL, *qa = after ? q(after) : NULL;
	tpf_action_change(a, field, qb, qa, forces, 0);
	free(qb);
	free(qa);
}

/* ---- the rules ---------------------------------------------------------- */

/*
 * Queued resources (docs/cloud-tpu-api.md section 5). The queued resource's state
 * when it speaks for the node (providers/provider.h: no node yet, or it
 * FAILED or is SUSPENDED), else NULL: the node's own state rules.
 */
static const char *queued_state(const struct tpf_live_node *ln)
{
	return ln->queued_state && ln->state && !strcmp(ln->queued_state, ln->state)
		       ? ln->queued_state
		       : NULL;
}

/* Queued resources that will not give a node unless deleted and queued
 * again: FAILED, SUSPENDED (model/node_state.h), and ACTIVE, which here
 * (the queued resource speaks for the node) means its node is gone:
 * deleted outside tpuform. */
static int queued_needs_requeue(const char *qstate)
{
	return tpf_queued_state_dead(qstate) || !strcmp(qstate, "ACTIVE");
}

static int zone_allowed(const struct tpf_desired_node *dn, const char *zone)
{
	for (size_t i = 0; i < dn->nzones; i++)
		if (zone && !strcmp(dn->zones[i], zone))
			return 1;
	return 0;
}

/* Every attribute of a new node, all "+". */
static void describe_new(struct tpf_action *a, const struct tpf_desired_node *dn)
{
	char *v;
	int tpu = dn->recipe.compute.api != TPF_API_COMPUTE; /* compute: machine_type, image */
	if (tpu) {
		v = q(dn->recipe.accelerator_type);
		tpf_action_change(a, "accelerator_type", NULL, v, 0, 0);
		free(v);
	}
	if (dn->job.commit) {
		v = q(dn->job.commit);
		tpf_action_change(a, "commit", NULL, v, 0, 0);
		free(v);
	}
	if (dn->job.env.n) {
		v = qmap(&dn->job.env);
		tpf_action_change(a, "env", NULL, v, 0, 0);
		free(v);
	}
	tpf_action_change(a, "id", NULL, "(known after apply)", 0, 0);
	v = qmap(&dn->recipe.labels);
	tpf_action_change(a, "labels", NULL, v, 0, 0);
	free(v);
	if (dn->recipe.queued)
		tpf_action_change(a, "queued", NULL, "true", 0, 0);
	v = q(dn->job.run);
	tpf_action_change(a, "run", NULL, v, 0, 0);
	free(v);
	if (tpu) {
		v = q(dn->recipe.runtime_version);
		tpf_action_change(a, "runtime_version", NULL, v, 0, 0);
		free(v);
	}
	v = q(tpf_recipe_scheduling(&dn->recipe));
	tpf_action_change(a, "scheduling", NULL, v, 0, 0);
	free(v);
	if (dn->job.secrets_hash)
		tpf_action_change(a, "secrets", NULL, NULL, 0, 1);
	if (dn->job.setup) {
		v = q(dn->job.setup);
		tpf_action_change(a, "setup", NULL, v, 0, 0);
		free(v);
	}
	if (dn->recipe.slices > 1) {
		v = qint(dn->recipe.slices);
		tpf_action_change(a, "slices", NULL, v, 0, 0);
		free(v);
	}
	if (dn->recipe.queued && dn->recipe.valid_until) {
		v = q(dn->recipe.valid_until);
		tpf_action_change(a, "valid_until", NULL, v, 0, 0);
		free(v);
	}
	v = qint(dn->recipe.workers);
	tpf_action_change(a, "workers", NULL, v, 0, 0);
	free(v);
	v = q(dn->recipe.zone);
	tpf_action_change(a, "zone", NULL, v, 0, 0);
	free(v);
	tpf_diff_node_new(a, &dn->recipe);
	tpf_diff_compute_new(a, &dn->recipe);
}

/* Job attribute changes (commit, setup, run, env, secrets): re-provision. */
static int describe_job(struct tpf_action *a, const struct tpf_job *before,
			const struct tpf_job *after)
{
	size_t n0 = a->nchanges;
	diff_str(a, "commit", before->commit, after->commit, 0);
	if (!tpf_kvlist_equal(&before->env, &after->env)) {
		char *b = qmap(&before->env), *v = qmap(&after->env);
		tpf_action_change(a, "env", b, v, 0, 0);
		free(b);
		free(v);
	}
	diff_str(a, "run", before->run, after->run, 0);
	if (!tpf_streq(before->secrets_hash, after->secrets_hash))
		tpf_action_change(a, "secrets", NULL, NULL, 0, 1);
	diff_str(a, "setup", before->setup, after->setup, 0);
	return a->nchanges > n0;
}

/* The script hash worker w of node sn would have under desired job dj. */
static char *desired_hash(const struct tpf_fleet *f, const struct tpf_state_node *sn,
			  const struct tpf_desired_node *dn, const struct tpf_live_node *ln, int w)
{
	struct tpf_state_node tmp;
	memset(&tmp, 0, sizeof(tmp));
	tmp.name = dn->name;
	tmp.group = dn->group;
	tmp.index = dn->index;
	tmp.generation = sn ? sn->generation : 0;
	tmp.recipe = dn->recipe;
	tmp.job = dn->job;
	/* Keep the worker's restart count: it is part of TPUFORM_RETRY. */
	struct tpf_state_worker *ws = xcalloc((size_t)dn->recipe.workers + 1, sizeof(*ws));
	for (int i = 0; i < dn->recipe.workers; i++) {
		ws[i].index = i;
		ws[i].exit_code = -1;
		const struct tpf_state_worker *old = tpf_state_node_worker(sn, i);
		if (old)
			ws[i].restarts = old->restarts;
	}
	tmp.workers = ws;
	tmp.nworkers = (size_t)dn->recipe.workers;
	char *hash = tpf_provision_hash(f, &tmp, ln, w);
	free(ws);
	return hash;
}

static void add_worker(struct tpf_action *a, int w)
{
	a->workers = xrealloc(a->workers, (a->nworkers + 1) * sizeof(int));
	a->workers[a->nworkers++] = w;
}

/* `queued` as the state recorded it (how the node was requested): the
 * local provider cannot tell, so the live node is not asked. */
static void diff_queued(struct tpf_action *a, const struct tpf_desired_node *dn,
			const struct tpf_state_node *sn)
{
	if (sn && !sn->recipe.queued != !dn->recipe.queued)
		tpf_action_change(a, "queued", sn->recipe.queued ? "true" : "false",
				  dn->recipe.queued ? "true" : "false", 1, 0);
}

/* The fields that force replacement; 1 when the node moves to another API. */
static int plan_replace_fields(struct tpf_action *a, const struct tpf_desired_node *dn,
			       const struct tpf_live_node *ln, const struct tpf_state_node *sn)
{
	int moved = tpf_diff_compute_replace(a, &dn->recipe, &ln->recipe, sn ? &sn->recipe : NULL);
	diff_str(a, "accelerator_type", ln->recipe.accelerator_type, dn->recipe.accelerator_type, 1);
	diff_queued(a, dn, sn);
	diff_str(a, "runtime_version", ln->recipe.runtime_version, dn->recipe.runtime_version, 1);
	diff_str(a, "scheduling", tpf_recipe_scheduling(&ln->recipe),
		 tpf_recipe_scheduling(&dn->recipe), 1);
	if (tpf_recipe_slices(&ln->recipe) != tpf_recipe_slices(&dn->recipe)) {
		/* Multislice (docs/design.md section 9): another slice count is
		 * another queued resource. */
		char *b = qint(tpf_recipe_slices(&ln->recipe)), *v = qint(tpf_recipe_slices(&dn->recipe));
		tpf_action_change(a, "slices", b, v, 1, 0);
		free(b);
		free(v);
	}
	if (!zone_allowed(dn, ln->recipe.zone))
		diff_str(a, "zone", ln->recipe.zone, dn->recipe.zone, 1);
	tpf_diff_node_replace(a, &dn->recipe, &ln->recipe, sn ? &sn->recipe : NULL);
	return moved;
}

/* No live node: create it (again), or wait for quota. */
static void diff_absent(struct tpf_plan *p, const struct tpf_desired_node *dn,
			const struct tpf_state_node *sn, const struct tpf_live_set *live)
{
	struct tpf_action *a;
	if (dn->deferred) {
		tpf_plan_add_unconverged(p, TPF_UNCONV_QUOTA, dn->name, -1,
					 dn->waiting ? dn->waiting : "waiting for quota");
		if (sn) {
			a = tpf_diff_action(p, TPF_ACT_FORGET, NULL, sn, NULL);
			tpf_diff_reason(a, "gone", "the node is gone and waits for quota");
		}
		p->deferred++;
		return;
	}
	if (sn && sn->recipe.queued && !dn->recipe.queued && sn->status == TPF_NODE_CREATED) {
		/* Its queued resource may outlive the node (FAILED ones
		 * hold no node): delete it before the plain create. */
		a = tpf_diff_action(p, TPF_ACT_REPLACE, dn, sn, NULL);
		tpf_diff_reason(a, "recipe", "a field that forces replacement changed");
		diff_queued(a, dn, sn);
		return;
	}
	a = tpf_diff_action(p, TPF_ACT_CREATE, dn, sn, NULL);
	describe_new(a, dn);
	int was_created = sn && (sn->status == TPF_NODE_CREATED ||
				 sn->status == TPF_NODE_BAD_HOST);
	if (was_created && tpf_live_set_was_preempted(live, sn->id))
		tpf_diff_reason(a, "preempted", "the node was preempted: Compute Engine deleted it "
			        "(its termination action is DELETE)");
	else if (was_created && !tpf_diff_deleted(a, sn)) /* else: tpuform deleted it */
		tpf_diff_reason(a, "missing", "the node is missing: it was deleted outside tpuform");
	else if (sn && !was_created && sn->refused) {
		/* every zone refused its last create: say why (state.h) */
		char *why = xasprintf("the node was not created: %s", sn->refused);
		tpf_diff_reason(a, "refused", why);
		free(why);
	} else if (sn && !was_created)
		tpf_diff_reason(a, "interrupted", "an earlier create did not complete");
	free(a->id);
	a->id = NULL;
}

/* A replace whose "state" line shows `state` going back to READY. */
static void replace_from_state(struct tpf_action *a, const struct tpf_desired_node *dn,
			       const struct tpf_live_node *ln, const struct tpf_state_node *sn,
			       const char *state)
{
	char *qs = q(state);
	tpf_action_change(a, "state", qs, "\"READY\"", 0, 0);
	free(qs);
	plan_replace_fields(a, dn, ln, sn);
}

/* A queued resource that will not give a node: delete it (force: with any
 * node) and queue again. */
static void replace_queued(struct tpf_plan *p, const struct tpf_desired_node *dn,
			   const struct tpf_state_node *sn, const struct tpf_live_node *ln,
			   const char *qstate)
{
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_REPLACE, dn, sn, ln);
	if (!strcmp(qstate, "FAILED"))
		tpf_diff_reason(a, "queued_failed", "the queued resource failed");
	else if (!strcmp(qstate, "SUSPENDED"))
		tpf_diff_reason(a, "queued_suspended", "the queued resource was suspended: its node is gone");
	else
		tpf_diff_reason(a, "queued_node_gone", "the queued resource is ACTIVE but its node is gone");
	replace_from_state(a, dn, ln, sn, qstate);
}

/* A node that will not run the job again (TPF_NODE_DEAD): reason code
 * "preempted", "terminated", ... from its state. */
static void replace_dead(struct tpf_plan *p, const struct tpf_desired_node *dn,
			 const struct tpf_state_node *sn, const struct tpf_live_node *ln)
{
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_REPLACE, dn, sn, ln);
	char *text = xasprintf("the node is %s", ln->state);
	const size_t prefix = strlen("the node is ");
	for (char *c = text + prefix; *c; c++)
		*c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
	tpf_diff_reason(a, text + prefix, text);
	free(text);
	replace_from_state(a, dn, ln, sn, ln->state);
}

/*
 * A multislice node on Compute Engine with some slices lost
 * (ln->lost_slices; docs/compute-engine.md "Multislice"): replace only
 * those (a->keep_parts: no delete first, the create remakes them), and
 * restart every worker of every slice with one new TPUFORM_RETRY, since
 * the job is one program. When every slice is lost it is a plain replace.
 */
static int replace_lost_slices(struct tpf_plan *p, const struct tpf_desired_node *dn,
			       const struct tpf_state_node *sn, const struct tpf_live_node *ln)
{
	int n = tpf_recipe_slices(&ln->recipe), nlost = 1;
	if (!ln->lost_slices || n < 2 || ln->recipe.compute.api != TPF_API_COMPUTE)
		return 0;
	for (const char *c = ln->lost_slices; *c; c++)
		nlost += *c == ',';
	if (nlost >= n)
		return 0;
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_REPLACE, dn, sn, ln);
	a->keep_parts = 1;
	char *code = xstrdup(ln->state);
	for (char *c = code; *c; c++)
		*c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
	char *text = xasprintf("slice%s %s of %d %s %s: only %s recreated, and every worker of "
			       "every slice restarts", nlost > 1 ? "s" : "", ln->lost_slices, n,
			       nlost > 1 ? "are" : "is", code, nlost > 1 ? "they are" : "it is");
	tpf_diff_reason(a, code, text);
	free(text);
	free(code);
	char *was = xasprintf("\"%s\"", ln->lost_slices);
	tpf_action_change(a, "slices_replaced", NULL, was, 0, 0);
	free(was);
	replace_from_state(a, dn, ln, sn, ln->state);
	/* A field that forces replacement changed too: every slice goes. */
	for (size_t i = 0; i < a->nchanges; i++)
		if (a->changes[i].forces)
			a->keep_parts = 0;
	return 1;
}

/* Replace when the node must go: its queued resource gave up, it is dead,
 * tainted, a bad host (state/state.h TPF_NODE_BAD_HOST), or a field that
 * forces replacement changed. 1 if it did. */
static int diff_replace(struct tpf_plan *p, const struct tpf_desired_node *dn,
			const struct tpf_state_node *sn, const struct tpf_live_node *ln)
{
	const char *qstate = queued_state(ln);
	if (qstate && queued_needs_requeue(qstate)) {
		replace_queued(p, dn, sn, ln, qstate);
		return 1;
	}
	if (tpf_node_class(ln->state) == TPF_NODE_DEAD) {
		if (!replace_lost_slices(p, dn, sn, ln))
			replace_dead(p, dn, sn, ln);
		return 1;
	}
	/* The fields that force a replacement, gathered before an action is
	 * added: most nodes have none, and an action holds a copy of the
	 * desired node (one made and freed per node, at 10,000 nodes). */
	struct tpf_action fields;
	memset(&fields, 0, sizeof(fields));
	int moved = plan_replace_fields(&fields, dn, ln, sn);
	int tainted = sn && sn->status == TPF_NODE_TAINTED;
	int bad = sn && sn->status == TPF_NODE_BAD_HOST;
	if (!tainted && !bad && !fields.nchanges) {
		tpf_action_release(&fields);
		return 0;
	}
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_REPLACE, dn, sn, ln);
	a->changes = fields.changes; /* moved */
	a->nchanges = fields.nchanges;
	if (tainted) {
		tpf_diff_reason(a, "tainted", "is tainted, so must be replaced");
	} else if (bad) {
		/* Its TPU failed preflight again and again (templates/
		 * bootstrap.sh): a new host, not another restart (issue 21). */
		char *why = xasprintf("bad host: %s; replace the node",
				      sn->bad_host ? sn->bad_host : "its TPU failed preflight");
		tpf_diff_reason(a, "bad_host", why);
		free(why);
	}
	else if (moved)
		tpf_diff_reason(a, "api", "moving a group between APIs replaces its nodes");
	else
		tpf_diff_reason(a, "recipe", "a field that forces replacement changed");
	return 1;
}

/*
 * Queued (ACCEPTED, WAITING_FOR_RESOURCES, PROVISIONING, ...): that can take
 * hours, so nothing waits on it; a later plan provisions the workers once
 * the node is READY.
 */
static void diff_queued_waiting(struct tpf_plan *p, const struct tpf_desired_node *dn,
				const struct tpf_state_node *sn, const struct tpf_live_node *ln,
				const char *qstate, struct tpf_diags *d)
{
	tpf_warn(d, dn->name,
		 "queued: node '%s' waits: its queued resource is %s (its workers are "
		 "provisioned once the node is READY)",
		 dn->name, qstate);
	char *why = xasprintf("waiting in its queued resource, which is %s (its workers are "
			      "provisioned once the node is READY)",
			      qstate);
	tpf_plan_add_unconverged(p, TPF_UNCONV_QUEUED, dn->name, -1, why);
	free(why);
	if (sn)
		return;
	/* Found by its labels (an interrupted apply): record it. */
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_UPDATE, dn, sn, ln);
	a->adopt = 1;
	tpf_diff_reason(a, "adopt", ADOPT_REASON);
}

/*
 * A flex-start node waiting for capacity (model/live.h capacity_wait;
 * docs/compute-engine.md "Flex-start"): like a queued resource, nothing
 * waits on it and a later plan provisions its workers once it runs. Past
 * the group's flex_start.wait, counted from the resource's creation (else
 * the state's), it is given up: replaced, i.e. deleted and requested
 * again, which takes the group's zones in order once more. Without `wait`
 * it waits as long as Compute Engine keeps it.
 */
static void diff_capacity_wait(struct tpf_plan *p, const struct tpf_diff_input *in,
			       const struct tpf_desired_node *dn, const struct tpf_state_node *sn,
			       const struct tpf_live_node *ln, struct tpf_diags *d)
{
	double since = tpf_parse_rfc3339(ln->create_time);
	if (since < 0 && sn)
		since = tpf_parse_rfc3339(sn->created_at);
	long limit = dn->recipe.compute.flex_wait;
	double waited = since >= 0 && in->now > since ? in->now - since : 0;
	char w[32], l[32];
	tpf_fmt_duration(waited, w, sizeof(w));
	tpf_fmt_duration((double)limit, l, sizeof(l));
	if (limit > 0 && since >= 0 && in->now > 0 && waited >= (double)limit) {
		struct tpf_action *a = tpf_diff_action(p, TPF_ACT_REPLACE, dn, sn, ln);
		char *why = xasprintf("waited %s for flex-start capacity in zone %s, flex_start.wait "
				      "is %s: given up, so it is deleted and requested again", w,
				      ln->recipe.zone ? ln->recipe.zone : "?", l);
		tpf_diff_reason(a, "flex_wait", why);
		free(why);
		return;
	}
	char *why = limit > 0 ? xasprintf("waiting for flex-start capacity in zone %s (%s of "
					  "flex_start.wait %s; its workers are provisioned once "
					  "it runs)", ln->recipe.zone ? ln->recipe.zone : "?", w, l)
			      : xasprintf("waiting for flex-start capacity in zone %s (%s so far; "
					  "its workers are provisioned once it runs)",
					  ln->recipe.zone ? ln->recipe.zone : "?", w);
	tpf_warn(d, dn->name, "node '%s' is %s", dn->name, why);
	tpf_plan_add_unconverged(p, TPF_UNCONV_QUEUED, dn->name, -1, why);
	free(why);
	if (sn)
		return;
	/* Found by its labels (an interrupted apply): record it. */
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_UPDATE, dn, sn, ln);
	a->adopt = 1;
	tpf_diff_reason(a, "adopt", ADOPT_REASON);
}

/* On its way to READY (TPF_NODE_BUSY): wait, then provision every worker. */
static void diff_busy(struct tpf_plan *p, const struct tpf_desired_node *dn,
		      const struct tpf_state_node *sn, const struct tpf_live_node *ln)
{
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_WAIT, dn, sn, ln);
	char *text = xasprintf("the node is %s: wait for READY, then provision", ln->state);
	tpf_diff_reason(a, "busy", text);
	free(text);
	for (int w = 0; w < dn->recipe.workers; w++)
		add_worker(a, w);
	a->adopt = !sn;
}

/*
 * Add to a every worker whose script is not the desired one, that reports
 * it never started (a fresh disk), or whose node was re-created under the
 * same name outside tpuform (a new id: new VMs). 1 if the node was
 * re-created.
 */
static int stale_workers(struct tpf_action *a, const struct tpf_diff_input *in,
			 const struct tpf_desired_node *dn, const struct tpf_state_node *sn,
			 const struct tpf_live_node *ln, int *script_changed)
{
	int recreated = 0;
	for (int w = 0; w < dn->recipe.workers; w++) {
		const struct tpf_state_worker *sw = tpf_state_node_worker(sn, w);
		const struct tpf_job_fact *sf = tpf_job_facts_find(in->facts, dn->name, w);
		int never = sf && sf->job_state && !strcmp(sf->job_state, "none");
		int new_vm = sn && sn->id && ln->id && strcmp(sn->id, ln->id);
		/* Render and hash the desired script only when the answer hangs
		 * on it: a worker the state has no script for (never provisioned,
		 * adopted) is provisioned whatever that hash is. At 10,000 adopted
		 * nodes this was most of a plan's CPU (docs/figures.md). */
		int stale = !sw || !sw->script_hash || never || new_vm;
		if (!stale) {
			char *h = desired_hash(in->fleet, sn, dn, ln, w);
			stale = strcmp(sw->script_hash, h) != 0;
			/* A worker running an older script: whatever made it
			 * differ (the job, mounts, preflight, ...), its job is
			 * restarted with the new one. */
			*script_changed |= stale;
			free(h);
		}
		if (stale)
			add_worker(a, w);
		recreated |= new_vm;
	}
	return recreated;
}

static void update_reason(struct tpf_action *a, int job_changed, int recreated)
{
	if (a->adopt)
		tpf_diff_reason(a, "adopt", ADOPT_REASON);
	else if (a->nworkers && a->update_labels)
		tpf_diff_reason(a, "labels_and_job", "labels changed, and the bootstrap script changed: "
						        "re-provision workers (the running job will be restarted)");
	else if (a->nworkers && job_changed)
		tpf_diff_reason(a, "job", "bootstrap script changed: re-provision workers (the running job "
					     "will be restarted)");
	else if (a->nworkers && recreated)
		tpf_diff_reason(a, "provision", "the node was re-created outside tpuform (new id): provision "
					        "its new workers");
	else if (a->nworkers)
		tpf_diff_reason(a, "provision", "workers are not provisioned with the current script");
	else if (a->update_labels)
		tpf_diff_reason(a, "labels", "labels changed");
	if (a->patch && !a->adopt && !a->nworkers)
		tpf_diff_reason(a, "patch", a->update_labels ? "labels and node fields change in place"
							     : "node fields change in place");
}

/* Labels in place, adoption, or workers to (re)provision. 1 if an update
 * action was added. */
static int diff_update(struct tpf_plan *p, const struct tpf_diff_input *in,
		       const struct tpf_desired_node *dn, const struct tpf_state_node *sn,
		       const struct tpf_live_node *ln)
{
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_UPDATE, dn, sn, ln);
	a->adopt = !sn;
	if (!tpf_kvlist_equal(&ln->recipe.labels, &dn->recipe.labels)) {
		a->update_labels = 1;
		char *b = qmap(&ln->recipe.labels), *v = qmap(&dn->recipe.labels);
		tpf_action_change(a, "labels", b, v, 0, 0);
		free(b);
		free(v);
	}
	a->patch = tpf_diff_node_patch(a, &dn->recipe, &ln->recipe, sn ? &sn->recipe : NULL);
	int job_changed = 0;
	if (sn)
		job_changed = describe_job(a, &sn->job, &dn->job);
	else
		describe_new(a, dn);
	int script_changed = 0;
	int recreated = stale_workers(a, in, dn, sn, ln, &script_changed);
	update_reason(a, job_changed || (script_changed && !recreated), recreated);
	if (a->nworkers || a->update_labels || a->patch || a->adopt)
		return 1;
	tpf_action_release(a);
	p->n--;
	return 0;
}

/* One restart unit's entry of what is not as declared: the worker, or
 * (a unit of several) the node, which is then failed or waiting. */
static void unit_unconverged(struct tpf_plan *p, const struct tpf_restart_unit *u,
			     const struct tpf_unit_verdict *v, double now)
{
	enum tpf_unconverged_kind kind =
		v->verdict == TPF_JOB_EXHAUSTED	     ? TPF_UNCONV_RESTARTS_EXHAUSTED
		: v->verdict == TPF_JOB_NOT_RESTARTED ? TPF_UNCONV_NOT_RESTARTED
						      : TPF_UNCONV_RESTART_WAITING;
	const struct tpf_unit_member *m = &u->members[v->trigger];
	char *why = u->n > 1 ? tpf_unit_verdict_reason(u, v, now)
			     : tpf_job_verdict_reason(u->policy, m->sf, v->restarts, v->verdict,
						      v->due, now);
	struct tpf_unconverged *e =
		tpf_plan_add_unconverged(p, kind, m->node, u->n > 1 ? -1 : m->worker, why);
	if (!strcmp(m->sf->job_state, "exited"))
		e->exit_code = m->sf->exit_code;
	free(why);
}

/* Restart unit u (its verdict v says so): every member's worker is
 * provisioned again; a unit of several restarts as one (a->gang), every
 * member with the same new TPUFORM_RETRY. why gets the reason. */
static void unit_restart(struct tpf_action *a, const struct tpf_state_node *sn,
			 const struct tpf_restart_unit *u, const struct tpf_unit_verdict *v,
			 struct tpf_buf *why, int *stalled)
{
	int gen = sn ? sn->generation : 0;
	const struct tpf_unit_member *t = &u->members[v->trigger];
	*stalled |= tpf_job_stalled(u->policy, t->sf);
	if (u->n > 1) {
		a->gang = 1;
		tpf_buf_addf(why, "%srestart all %zu workers of %s: %s", why->len ? "; " : "", u->n,
			     t->node, v->why);
	} else {
		char *what = tpf_job_what(u->policy, t->sf, 0);
		tpf_buf_addf(why, "%sworker %d %s", why->len ? ", " : "", t->worker, what);
		free(what);
	}
	for (size_t i = 0; i < u->n; i++) {
		const struct tpf_unit_member *m = &u->members[i];
		add_worker(a, m->worker);
		char field[32];
		snprintf(field, sizeof(field), "w%d.retry", m->worker);
		long before = gen + (m->sw ? m->sw->restarts : 0);
		char *b = qint(before), *nv = qint(gen + v->restarts + 1);
		tpf_action_change(a, field, b, nv, 0, 0);
		free(b);
		free(nv);
	}
}

/* Every worker's job exited 0: done. With on_success: delete the node is
 * deleted (apply records it as completed); else it is kept and listed. */
static void diff_succeeded(struct tpf_plan *p, const struct tpf_desired_node *dn,
			   const struct tpf_state_node *sn, const struct tpf_live_node *ln,
			   const struct tpf_job_policy *pol)
{
	if (pol->on_success != TPF_ON_SUCCESS_DELETE) {
		tpf_plan_add_completed(p, dn->name, 0, 0, NULL);
		return;
	}
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_DELETE, NULL, sn, ln);
	tpf_diff_reason(a, "completed",
		        "completed: every worker's job exited 0; delete the node to free its quota "
		        "(on_success: delete)");
}

/* Nothing to change in the node: restart the units the policy wants
 * (docs/design.md section 5, "Restart units"); note those it will not
 * restart or that wait; delete or list a node whose job is done. */
static void diff_restart(struct tpf_plan *p, const struct tpf_diff_input *in,
			 const struct tpf_desired_node *dn, const struct tpf_state_node *sn,
			 const struct tpf_live_node *ln, struct tpf_diags *d)
{
	const struct tpf_group *g = tpf_fleet_group(in->fleet, dn->group);
	const struct tpf_job_policy *pol = tpf_fleet_job_policy(in->fleet, dn->group);
	enum tpf_restart_scope scope = tpf_group_restart_scope(g);
	int nworkers = dn->recipe.workers;
	for (int w = 0; w < nworkers; w++) {
		const struct tpf_job_fact *sf = tpf_job_facts_find(in->facts, dn->name, w);
		if (sf && !sf->job_state) {
			tpf_warn(d, dn->name, "worker %d of node '%s' is unreachable", w, dn->name);
			tpf_plan_add_unconverged(p, TPF_UNCONV_UNREACHABLE, dn->name, w,
						 "unreachable: its session could not be checked");
		}
	}
	if (tpf_node_succeeded(pol, dn->name, nworkers, in->facts)) {
		diff_succeeded(p, dn, sn, ln, pol);
		return;
	}
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_RESTART, dn, sn, ln);
	struct tpf_buf why = TPF_BUF_INIT;
	int stalled = 0;
	int nunits = scope == TPF_SCOPE_NODE ? 1 : nworkers;
	for (int k = 0; k < nunits; k++) {
		struct tpf_restart_unit u;
		struct tpf_unit_verdict v;
		tpf_unit_of(&u, dn->name, nworkers, k, scope, pol, sn, in->facts);
		tpf_unit_verdict(&u, in->now, &v);
		if (v.verdict == TPF_JOB_RESTART)
			unit_restart(a, sn, &u, &v, &why, &stalled);
		else if (v.verdict != TPF_JOB_FINE)
			unit_unconverged(p, &u, &v, in->now);
		tpf_unit_verdict_release(&v);
		free(u.members);
	}
	if (a->nworkers) {
		if (!a->gang)
			tpf_buf_addf(&why, ": restart %s", a->nworkers > 1 ? "them" : "it");
		tpf_diff_reason(a, stalled ? "stalled" : "session", why.buf);
	} else {
		tpf_action_release(a);
		p->n--;
	}
	tpf_buf_release(&why);
}

/* The state says the node completed: it is not created again. A live node
 * of that name (made outside tpuform) is deleted. */
static void diff_completed(struct tpf_plan *p, const struct tpf_desired_node *dn,
			   const struct tpf_state_node *sn, const struct tpf_live_node *ln)
{
	tpf_plan_add_completed(p, dn->name, 1, sn->exit_code >= 0 ? sn->exit_code : 0,
			       sn->completed_at);
	if (!ln)
		return;
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_DELETE, NULL, sn, ln);
	tpf_diff_reason(a, "completed",
		        "completed: its job completed, so it is not created again (on_success: delete)");
}

/* on_budget: delete (plan/budget.h): the budget of the node's scope is
 * reached, so its node is deleted through the ordinary delete, only when
 * this state made it (it carries this state's lineage label and the state
 * lists it): money is at stake, and a node of unknown origin is never
 * deleted for a budget. Returns 1 when the node is handled. */
static int diff_over_budget(struct tpf_plan *p, const struct tpf_diff_input *in,
			    const struct tpf_desired_node *dn, const struct tpf_state_node *sn,
			    const struct tpf_live_node *ln)
{
	if (dn->over_budget != TPF_OVER_BUDGET_DELETE || !sn ||
	    tpf_owner_of(ln, in->state) != TPF_OWNER_THIS)
		return 0;
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_DELETE, NULL, sn, ln);
	char *why = xasprintf("%s (on_budget: delete)", dn->waiting ? dn->waiting : "budget reached");
	tpf_diff_reason(a, "budget", why);
	free(why);
	tpf_plan_add_unconverged(p, TPF_UNCONV_QUOTA, dn->name, -1,
				 dn->waiting ? dn->waiting : "budget reached");
	p->deferred++;
	return 1;
}

/* A replace creates a node: over budget, the dead or changed node is left
 * as it is (a dead node is not billed) and the replace waits for the next
 * period, said as for a deferred create. */
static void drop_replace_for_budget(struct tpf_plan *p, const struct tpf_desired_node *dn)
{
	struct tpf_action *a = p->n ? &p->actions[p->n - 1] : NULL;
	if (!a || a->kind != TPF_ACT_REPLACE || strcmp(a->node, dn->name))
		return;
	tpf_action_release(a);
	p->n--;
	tpf_plan_add_unconverged(p, TPF_UNCONV_QUOTA, dn->name, -1,
				 dn->waiting ? dn->waiting : "budget reached");
	p->deferred++;
}

/* The rules for one desired node, in order of precedence (docs/design.md "Node
 * lifecycle the diff must handle"). */
static void diff_desired(struct tpf_plan *p, const struct tpf_diff_input *in,
			 const struct tpf_desired_node *dn, const struct tpf_live_node *ln,
			 struct tpf_diags *d)
{
	const struct tpf_state_node *sn = tpf_state_find((struct tpf_state *)in->state, dn->name);
	if (sn && sn->status == TPF_NODE_COMPLETED) {
		diff_completed(p, dn, sn, ln);
		return;
	}
	if (!ln) {
		diff_absent(p, dn, sn, in->live);
		return;
	}
	if (diff_over_budget(p, in, dn, sn, ln))
		return;
	tpf_diff_node_notes(ln, d);
	if (tpf_diff_going(p, dn, sn, ln) || diff_replace(p, dn, sn, ln)) {
		if (dn->over_budget)
			drop_replace_for_budget(p, dn);
		return;
	}
	const char *qstate = queued_state(ln);
	if (qstate) {
		diff_queued_waiting(p, dn, sn, ln, qstate, d);
		return;
	}
	if (ln->capacity_wait) {
		diff_capacity_wait(p, in, dn, sn, ln, d);
		return;
	}
	if (tpf_node_class(ln->state) == TPF_NODE_BUSY) {
		diff_busy(p, dn, sn, ln);
		return;
	}
	if (diff_update(p, in, dn, sn, ln))
		return;
	diff_restart(p, in, dn, sn, ln, d);
}

/* Names looked up once per node: hash indexes, not a scan per node, so a
 * fleet of 10,000 nodes plans in linear time (issue 13). */
struct diff_index {
	struct tpf_strindex live, desired;
};

static void diff_index_build(struct diff_index *ix, const struct tpf_diff_input *in)
{
	memset(ix, 0, sizeof(*ix));
	for (size_t i = 0; i < in->live->n; i++)
		tpf_strindex_put(&ix->live, in->live->nodes[i].name, i);
	for (size_t i = 0; i < in->desired->n; i++)
		tpf_strindex_put(&ix->desired, in->desired->nodes[i].name, i);
}

static const struct tpf_live_node *live_find(const struct diff_index *ix,
					     const struct tpf_diff_input *in, const char *name)
{
	size_t i;
	return tpf_strindex_get(&ix->live, name, &i) ? &in->live->nodes[i] : NULL;
}

static int desired_has(const struct diff_index *ix, const char *name)
{
	size_t i;
	return tpf_strindex_get(&ix->desired, name, &i);
}

int tpf_diff(struct tpf_plan *out, const struct tpf_diff_input *in, struct tpf_diags *d)
{
	const struct tpf_state *st = in->state;
	memset(out, 0, sizeof(*out));
	out->fleet = xstrdup(in->fleet->name);
	/* A state never written has no lineage yet that apply could match
	 * (Terraform's first-plan exception: lineage "" and serial 0). */
	out->lineage = st->serial ? xstrdup(st->lineage) : NULL;
	out->serial = st->serial;
	out->destroy = in->destroy;
	struct diff_index ix;
	diff_index_build(&ix, in);

	if (!in->destroy)
		for (size_t i = 0; i < in->desired->n; i++) {
			const struct tpf_desired_node *dn = &in->desired->nodes[i];
			diff_desired(out, in, dn, live_find(&ix, in, dn->name), d);
		}

	for (size_t i = 0; i < st->nnodes; i++) {
		const struct tpf_state_node *sn = &st->nodes[i];
		if (!in->destroy && desired_has(&ix, sn->name))
			continue;
		tpf_diff_gone(out, in->fleet, sn, live_find(&ix, in, sn->name), in->destroy);
	}
	for (size_t i = 0; i < in->live->n; i++) {
		const struct tpf_live_node *ln = &in->live->nodes[i];
		if (tpf_state_find((struct tpf_state *)st, ln->name))
			continue;
		if (!in->destroy && desired_has(&ix, ln->name))
			continue;
		struct tpf_action *a = tpf_diff_action(out, TPF_ACT_DELETE, NULL, NULL, ln);
		tpf_diff_delete_reason(a, in->fleet, NULL, in->destroy);
		if (in->destroy)
			tpf_diff_reason(a, "orphan",
				        "destroy was requested (found by this state's lineage label)");
	}

	tpf_strindex_release(&ix.live);
	tpf_strindex_release(&ix.desired);
	tpf_plan_sort(out);
	tpf_plan_recount(out);
	return 0;
}
