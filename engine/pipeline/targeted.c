/*
 * Plans with -target, -replace and -refresh-only, and the state-only
 * apply of a refresh-only plan (engine/pipeline/targeted.h).
 */
#include "engine/pipeline/targeted.h"
#include "plan/refresh_only.h"
#include "util/str.h"
#include "util/xalloc.h"

#include <string.h>

int tpf_pipeline_plan_mode(struct tpf_pipeline *s, const struct tpf_plan_mode *m,
			  struct tpf_plan *p)
{
	struct tpf_diff_input in = tpf_pipeline_diff_input(s, m->destroy, 0);
	if (m->refresh_only) {
		if (tpf_plan_refresh_only(p, &in, &s->d))
			return TPF_ERROR;
		/* As tpf_pipeline_plan: a saved plan checks the fleet file. */
		xstrset(&p->fleet_sha256, s->fleet_sha256);
	} else if (tpf_pipeline_plan(s, m->destroy, p)) {
		return TPF_ERROR;
	}
	if (tpf_plan_replace(p, &in, m->replace, m->nreplace, &s->d) ||
	    tpf_plan_target(p, &in, m->targets, m->ntargets, &s->d))
		return TPF_ERROR;
	return 0;
}

/* A found node: recorded from what is live now, if it is still the one
 * the plan saw. 1 if recorded. */
static int apply_found(struct tpf_state *st, const struct tpf_action *a,
		       const struct tpf_live_set *live, struct tpf_diags *d)
{
	const struct tpf_live_node *ln = tpf_live_set_find(live, a->node);
	const char *group = NULL;
	int index = 0;
	if (a->desired) {
		group = a->desired->group;
		index = a->desired->index;
	}
	if (!ln || !tpf_streq(ln->id, a->id) || (!a->desired && tpf_live_node_slot(ln, &group, &index) < 0)) {
		tpf_warn(d, a->node,
			 "node '%s' was not recorded: it is no longer live as planned (run "
			 "'tpuform plan -refresh-only' again)",
			 a->node);
		return 0;
	}
	tpf_state_record_live(st, group, index, ln, a->desired ? &a->desired->recipe : NULL);
	return 1;
}

/* A changed node: the new id (new VMs: their workers' facts go), zone and
 * status. 1 if written. */
static int apply_changed(struct tpf_state *st, const struct tpf_action *a,
			 const struct tpf_live_set *live, struct tpf_diags *d)
{
	if (!tpf_state_find(st, a->node)) {
		tpf_warn(d, a->node, "node '%s' was not updated: it is no longer in the state", a->node);
		return 0;
	}
	const struct tpf_live_node *ln = tpf_live_set_find(live, a->node);
	tpf_state_record_refreshed(st, a->node, a->id, a->zone,
				   ln && tpf_streq(ln->id, a->id) ? ln->create_time : NULL);
	return 1;
}

size_t tpf_refresh_only_apply(struct tpf_state *st, const struct tpf_plan *p,
			       const struct tpf_live_set *live, struct tpf_diags *d)
{
	size_t changed = 0;
	for (size_t i = 0; i < p->n; i++) {
		const struct tpf_action *a = &p->actions[i];
		if (a->kind == TPF_ACT_FORGET)
			changed += (size_t)tpf_state_remove(st, a->node);
		else if (a->kind == TPF_ACT_UPDATE && a->adopt)
			changed += (size_t)apply_found(st, a, live, d);
		else if (a->kind == TPF_ACT_UPDATE)
			changed += (size_t)apply_changed(st, a, live, d);
	}
	return changed;
}

/* ---- rendering --------------------------------------------------------- */


int tpf_pipeline_apply_refresh_only(struct tpf_pipeline *s, const struct tpf_plan *p,
				   struct tpf_apply_result *res)
{
	memset(res, 0, sizeof(*res));
	tpf_refresh_only_apply(&s->state, p, &s->live, &s->d);
	if (!s->state.fleet)
		s->state.fleet = xstrdup(s->fleet.name);
	return tpf_state_save(&s->state, &s->d);
}
