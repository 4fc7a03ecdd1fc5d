/*
 * Nodes on their way out (plan/plan_internal.h; docs/state.md "A delete
 * under way"; docs/compute-engine.md "Undo and ownership of a slice's
 * parts"):
 *
 * - a live node in the "going" class (model/node_state.h: DELETING,
 *   HIDING, HIDDEN) is about to be absent: a desired one is a replace
 *   whose delete is already under way (the provider's delete waits for
 *   it rather than sending another), never a node left as it is;
 * - a node whose delete tpuform sent (the state's delete_sent_at) and
 *   which still answers in a dead state, as a Compute Engine VM or slice
 *   does while its delete runs (STOPPING, then TERMINATED), is the same;
 * - a node gone after tpuform deleted it is said to be so, never
 *   "deleted outside tpuform";
 * - a state node that is not desired (or destroy) and has no live node is
 *   forgotten, except a Compute Engine slice, whose template and workload
 *   policy may outlive its MIG after a crash between the delete's steps:
 *   it is deleted, part by part, each part only when it carries this
 *   state's lineage (providers/gcp/compute_slice_parts.c).
 */
#include "model/node_state.h"
#include "plan/plan_internal.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Did tpuform send the delete of this very node (same id, or no id to
 * tell)? */
static int delete_sent(const struct tpf_state_node *sn, const struct tpf_live_node *ln)
{
	return sn && sn->delete_sent_at &&
	       (!ln || !sn->id || !ln->id || !strcmp(sn->id, ln->id));
}

/* "is being deleted (state DELETING)", and who sent the delete when the
 * state says tpuform did. Caller frees. */
static char *going_words(const struct tpf_state_node *sn, const struct tpf_live_node *ln)
{
	const char *s = ln->state ? ln->state : "?";
	enum tpf_node_state v = tpf_node_state_of(ln->state);
	int hidden = v == TPF_NODE_STATE_HIDING || v == TPF_NODE_STATE_HIDDEN;
	char *by = delete_sent(sn, ln) ? xasprintf("; tpuform sent its delete at %s",
						   sn->delete_sent_at)
				       : xstrdup("");
	char *t = xasprintf("is being %s (state %s)%s", hidden ? "hidden" : "deleted", s, by);
	free(by);
	return t;
}

int tpf_diff_going(struct tpf_plan *p, const struct tpf_desired_node *dn,
		   const struct tpf_state_node *sn, const struct tpf_live_node *ln)
{
	enum tpf_node_class c = tpf_node_class(ln->state);
	if (c != TPF_NODE_GOING && !(c == TPF_NODE_DEAD && delete_sent(sn, ln)))
		return 0;
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_REPLACE, dn, sn, ln);
	char *w = going_words(sn, ln);
	char *why = xasprintf("the node %s: wait for the delete to finish, then create it again", w);
	tpf_diff_reason(a, "deleting", why);
	json_t *j = json_string(ln->state ? ln->state : "");
	char *before = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	tpf_action_change(a, "state", before ? before : "null", "\"READY\"", 0, 0);
	free(before);
	free(why);
	free(w);
	return 1;
}

int tpf_diff_deleted(struct tpf_action *a, const struct tpf_state_node *sn)
{
	if (!delete_sent(sn, NULL))
		return 0;
	char *why = xasprintf("the node is gone: tpuform deleted it (its delete was sent at %s); "
			      "create it again", sn->delete_sent_at);
	tpf_diff_reason(a, "deleted", why);
	free(why);
	return 1;
}

void tpf_diff_delete_reason(struct tpf_action *a, const struct tpf_fleet *f,
			    const struct tpf_state_node *sn, int destroy)
{
	if (destroy) {
		tpf_diff_reason(a, "destroy", "destroy was requested");
		return;
	}
	if (!sn) {
		tpf_diff_reason(a, "orphan",
				"it carries this state's lineage label but is in neither the "
				"configuration nor the state (left by an interrupted run)");
		return;
	}
	const struct tpf_group *g = tpf_fleet_group(f, sn->group);
	char *t = g ? xasprintf("because index [%d] is out of range for count", sn->index)
		    : xasprintf("because group '%s' is not in configuration", sn->group);
	tpf_diff_reason(a, g ? "count" : "not_in_config", t);
	free(t);
}

/* A Compute Engine slice (or multislice node) this state asked for in a
 * zone and did not see through to the end: its parts may remain. */
static int parts_may_remain(const struct tpf_state_node *sn)
{
	const struct tpf_recipe *r = &sn->recipe;
	return r->compute.api == TPF_API_COMPUTE && r->zone &&
	       (r->workers > 1 || tpf_recipe_slices(r) > 1) &&
	       sn->status != TPF_NODE_COMPLETED;
}

void tpf_diff_gone(struct tpf_plan *p, const struct tpf_fleet *f,
		   const struct tpf_state_node *sn, const struct tpf_live_node *ln, int destroy)
{
	if (!ln && !parts_may_remain(sn)) {
		struct tpf_action *a = tpf_diff_action(p, TPF_ACT_FORGET, NULL, sn, NULL);
		tpf_diff_reason(a, "gone", "the node is already gone: remove it from state");
		return;
	}
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_DELETE, NULL, sn, ln);
	if (!ln) {
		tpf_diff_reason(a, "leftover",
				"its managed instance group is gone, but its instance template and "
				"workload policy may remain (a run stopped between the steps of "
				"its create or delete): delete each part that carries this "
				"state's lineage, then remove it from state");
		return;
	}
	tpf_diff_delete_reason(a, f, sn, destroy);
	enum tpf_node_class c = tpf_node_class(ln->state);
	if (c != TPF_NODE_GOING && !(c == TPF_NODE_DEAD && delete_sent(sn, ln)))
		return;
	char *w = going_words(sn, ln);
	char *why = xasprintf("%s; the node %s: wait for the delete to finish", a->reason, w);
	xstrset(&a->reason, why);
	free(why);
	free(w);
}
