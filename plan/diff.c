/*
 * desired x state x live (x job facts) -> actions.
 * The lifecycle rules are docs/design.md sections 6 and 8 ("Node lifecycle").
 * This file walks the nodes and applies the rules in order of precedence;
 * each rule lives in its own file (plan/plan_internal.h): diff_recreate.c
 * (create, replace), diff_wait.c (queued, flex-start, busy), diff_update.c
 * (update in place, provision), diff_restart.c (restart, completed),
 * diff_going.c (deleting, gone); diff_values.c shows values.
 */
#include "model/node_state.h"
#include "plan/ownership.h"
#include "plan/plan.h"
#include "plan/plan_internal.h"
#include "util/strindex.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

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
		tpf_diff_completed(p, dn, sn, ln);
		return;
	}
	if (!ln) {
		tpf_diff_absent(p, dn, sn, in->live);
		return;
	}
	if (diff_over_budget(p, in, dn, sn, ln))
		return;
	tpf_diff_node_notes(ln, d);
	if (tpf_diff_going(p, dn, sn, ln) || tpf_diff_replace(p, dn, sn, ln)) {
		if (dn->over_budget)
			drop_replace_for_budget(p, dn);
		return;
	}
	if (tpf_diff_elastic_grown(p, dn, sn, ln))
		return;
	const char *qstate = tpf_diff_queued_state(ln);
	if (qstate) {
		tpf_diff_queued_waiting(p, dn, sn, ln, qstate, d);
		return;
	}
	if (ln->capacity_wait) {
		tpf_diff_capacity_wait(p, in, dn, sn, ln, d);
		return;
	}
	if (tpf_node_class(ln->state) == TPF_NODE_BUSY) {
		tpf_diff_busy(p, dn, sn, ln);
		return;
	}
	if (tpf_diff_update(p, in, dn, sn, ln))
		return;
	tpf_diff_restart(p, in, dn, sn, ln, d);
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
