/*
 * Nodes that must be made again: absent ones are created (again), and
 * those whose queued resource gave up, that are dead, tainted, bad hosts or
 * have a field that forces replacement changed are replaced
 * (docs/design.md section 6, "Node lifecycle").
 */
#include "model/node_state.h"
#include "plan/plan_internal.h"
#include "util/str.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/*
 * Queued resources (docs/cloud-tpu-api.md section 5). The queued resource's state
 * when it speaks for the node (providers/provider.h: no node yet, or it
 * FAILED or is SUSPENDED), else NULL: the node's own state rules.
 */
const char *tpf_diff_queued_state(const struct tpf_live_node *ln)
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
	return tpf_queued_state_dead(qstate) || tpf_queued_state_of(qstate) == TPF_QUEUED_ACTIVE;
}

static int zone_allowed(const struct tpf_desired_node *dn, const char *zone)
{
	for (size_t i = 0; i < dn->nzones; i++)
		if (zone && !strcmp(dn->zones[i], zone))
			return 1;
	return 0;
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
	tpf_diff_change_str(a, "accelerator_type", ln->recipe.accelerator_type,
			    dn->recipe.accelerator_type, 1);
	diff_queued(a, dn, sn);
	tpf_diff_change_str(a, "runtime_version", ln->recipe.runtime_version,
			    dn->recipe.runtime_version, 1);
	tpf_diff_change_str(a, "scheduling", tpf_recipe_scheduling(&ln->recipe),
		 tpf_recipe_scheduling(&dn->recipe), 1);
	if (tpf_recipe_slices(&ln->recipe) != tpf_recipe_slices(&dn->recipe)) {
		/* Multislice (docs/design.md section 9): another slice count is
		 * another queued resource. */
		char *b = tpf_diff_value_long(tpf_recipe_slices(&ln->recipe));
		char *v = tpf_diff_value_long(tpf_recipe_slices(&dn->recipe));
		tpf_action_change(a, "slices", b, v, 1, 0);
		free(b);
		free(v);
	}
	if (!zone_allowed(dn, ln->recipe.zone))
		tpf_diff_change_str(a, "zone", ln->recipe.zone, dn->recipe.zone, 1);
	tpf_diff_node_replace(a, &dn->recipe, &ln->recipe, sn ? &sn->recipe : NULL);
	return moved;
}

/* No live node: create it (again), or wait for quota. */
void tpf_diff_absent(struct tpf_plan *p, const struct tpf_desired_node *dn,
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
	tpf_diff_describe_new(a, dn);
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
	char *qs = tpf_diff_value_str(state);
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
	enum tpf_queued_state q = tpf_queued_state_of(qstate);
	if (q == TPF_QUEUED_FAILED)
		tpf_diff_reason(a, "queued_failed", "the queued resource failed");
	else if (q == TPF_QUEUED_SUSPENDED)
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
	a->lost_slices = xstrdup(ln->lost_slices);
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
		if (a->changes[i].forces) {
			a->keep_parts = 0;
			free(a->lost_slices);
			a->lost_slices = NULL;
		}
	tpf_diff_elastic_lost(a, dn, sn, ln); /* elastic groups: maybe go on without them */
	return 1;
}

/* Replace when the node must go: its queued resource gave up, it is dead,
 * tainted, a bad host (state/state.h TPF_NODE_BAD_HOST), or a field that
 * forces replacement changed. 1 if it did. */
int tpf_diff_replace(struct tpf_plan *p, const struct tpf_desired_node *dn,
		     const struct tpf_state_node *sn, const struct tpf_live_node *ln)
{
	const char *qstate = tpf_diff_queued_state(ln);
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
