/*
 * Plans with -target, -replace and -refresh-only, and the state-only
 * apply of a refresh-only plan (engine/targeted.h).
 */
#include "engine/targeted.h"
#include "plan/refresh_only.h"
#include "util/xalloc.h"

#include <string.h>

int tpf_session_plan_mode(struct tpf_session *s, const struct tpf_plan_mode *m,
			  struct tpf_plan *p)
{
	struct tpf_diff_input in = {
		.fleet = &s->fleet,
		.desired = &s->desired,
		.state = &s->state,
		.live = &s->live,
		.facts = &s->facts,
		.destroy = m->destroy,
	};
	if (m->refresh_only) {
		if (tpf_plan_refresh_only(p, &in, &s->d))
			return TPF_ERROR;
		/* As tpf_session_plan: a saved plan checks the fleet file. */
		xstrset(&p->fleet_sha256, s->fleet_sha256);
	} else if (tpf_session_plan(s, m->destroy, p)) {
		return TPF_ERROR;
	}
	if (tpf_plan_replace(p, &in, m->replace, m->nreplace, &s->d) ||
	    tpf_plan_target(p, &in, m->targets, m->ntargets, &s->d))
		return TPF_ERROR;
	return 0;
}

int tpf_session_apply_refresh_only(struct tpf_session *s, const struct tpf_plan *p,
				   struct tpf_apply_result *res)
{
	memset(res, 0, sizeof(*res));
	tpf_state_apply_refresh(&s->state, p, &s->live, &s->d);
	if (!s->state.fleet)
		s->state.fleet = xstrdup(s->fleet.name);
	return tpf_state_save(&s->state, s->fleet.state_path, &s->d);
}
