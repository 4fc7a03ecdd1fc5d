/*
 * Which planned actions `watch` may carry out on its own.
 */
#include "plan/plan.h"
#include "plan/plan_internal.h"
#include "util/xalloc.h"

#include <string.h>

static int reason_is(const struct tpf_action *a, enum tpf_reason_code code)
{
	return a->reason_kind == code;
}

int tpf_action_is_healing(const struct tpf_action *a)
{
	switch (a->kind) {
	case TPF_ACT_CREATE:
	case TPF_ACT_RESTART:
	case TPF_ACT_WAIT:
	case TPF_ACT_FORGET:
		return 1;
	case TPF_ACT_REPLACE:
		/* Dead, tainted or unhealthy nodes and FAILED or SUSPENDED queued
		 * resources (queued_failed, queued_suspended, queued_node_gone)
		 * come back; a changed recipe waits. */
		return !reason_is(a, TPF_REASON_RECIPE);
	case TPF_ACT_UPDATE:
		return reason_is(a, TPF_REASON_ADOPT) || reason_is(a, TPF_REASON_PROVISION);
	case TPF_ACT_DELETE:
		/* Orphans, nodes whose job completed (on_success: delete), and
		 * the nodes of a scope over its budget (on_budget: delete). */
		return reason_is(a, TPF_REASON_ORPHAN) || reason_is(a, TPF_REASON_COMPLETED) ||
		       reason_is(a, TPF_REASON_BUDGET);
	}
	return 0;
}

void tpf_plan_split_healing(struct tpf_plan *p, struct tpf_plan *rest)
{
	rest->fleet = xstrdup(p->fleet);
	rest->lineage = xstrdup(p->lineage);
	rest->serial = p->serial;
	rest->commit = xstrdup(p->commit);
	size_t keep = 0;
	for (size_t i = 0; i < p->n; i++) {
		if (tpf_action_is_healing(&p->actions[i])) {
			p->actions[keep++] = p->actions[i];
			continue;
		}
		XGROW(rest->actions, rest->n + 1, rest->alloc);
		rest->actions[rest->n++] = p->actions[i];
	}
	p->n = keep;
	tpf_plan_recount(p);
	tpf_plan_recount(rest);
}
