/*
 * Nodes the plan waits on without blocking: a queued resource still
 * queued, a flex-start node waiting for capacity, a node on its way to
 * READY.
 */
#include "plan/plan_internal.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>

/* A node that waits without blocking: listed as not converged (why), and
 * recorded when the state does not know it (found by its labels: an
 * interrupted apply). */
static void waiting(struct tpf_plan *p, const struct tpf_desired_node *dn,
		    const struct tpf_state_node *sn, const struct tpf_live_node *ln, const char *why)
{
	tpf_plan_add_unconverged(p, TPF_UNCONV_QUEUED, dn->name, -1, why);
	if (sn)
		return;
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_UPDATE, dn, sn, ln);
	a->adopt = 1;
	tpf_diff_reason(a, "adopt", TPF_DIFF_ADOPT_REASON);
}

/*
 * Queued (ACCEPTED, WAITING_FOR_RESOURCES, PROVISIONING, ...): that can take
 * hours, so nothing waits on it; a later plan provisions the workers once
 * the node is READY.
 */
void tpf_diff_queued_waiting(struct tpf_plan *p, const struct tpf_desired_node *dn,
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
	waiting(p, dn, sn, ln, why);
	free(why);
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
void tpf_diff_capacity_wait(struct tpf_plan *p, const struct tpf_diff_input *in,
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
	waiting(p, dn, sn, ln, why);
	free(why);
}

/* On its way to READY (TPF_NODE_BUSY): wait, then provision every worker. */
void tpf_diff_busy(struct tpf_plan *p, const struct tpf_desired_node *dn,
		   const struct tpf_state_node *sn, const struct tpf_live_node *ln)
{
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_WAIT, dn, sn, ln);
	char *text = xasprintf("the node is %s: wait for READY, then provision", ln->state);
	tpf_diff_reason(a, "busy", text);
	free(text);
	for (int w = 0; w < dn->recipe.workers; w++)
		tpf_diff_add_worker(a, w);
	a->adopt = !sn;
}
