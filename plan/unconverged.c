/*
 * What is not as declared and no action can change now (plan/plan.h):
 * the restart policy's verdict on a job, and the plan's list of entries.
 */
#include "plan/plan.h"
#include "plan/plan_internal.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

enum tpf_job_verdict tpf_job_verdict(const struct tpf_fleet *f, const struct tpf_session_fact *sf,
				     const struct tpf_state_worker *sw)
{
	if (!sf || !sf->session)
		return TPF_JOB_FINE;
	int dead = !strcmp(sf->session, "dead");
	int exited = !strcmp(sf->session, "exited");
	if (!dead && !exited)
		return TPF_JOB_FINE; /* alive, or never started ("none": provisioning's) */
	int failed = dead || sf->exit_code != 0;
	int wanted;
	switch (f->restart) {
	case TPF_RESTART_NEVER:
		return failed ? TPF_JOB_NOT_RESTARTED : TPF_JOB_FINE;
	case TPF_RESTART_ALWAYS:
		wanted = 1;
		break;
	case TPF_RESTART_ON_FAILURE:
	default:
		wanted = failed;
		break;
	}
	if (!wanted)
		return TPF_JOB_FINE; /* finished with 0: done */
	return !sw || sw->restarts < f->max_restarts ? TPF_JOB_RESTART : TPF_JOB_EXHAUSTED;
}

char *tpf_job_verdict_reason(const struct tpf_fleet *f, const struct tpf_session_fact *sf,
			     const struct tpf_state_worker *sw, enum tpf_job_verdict v)
{
	int restarts = sw ? sw->restarts : 0;
	char *what = !strcmp(sf->session, "dead")
			     ? xstrdup("session died")
			     : xasprintf("job %s (exit %d)", sf->exit_code ? "failed" : "finished",
					 sf->exit_code);
	char *r;
	if (v == TPF_JOB_NOT_RESTARTED)
		r = xasprintf("%s; not restarted (restart: never)", what);
	else if (restarts > 0)
		r = xasprintf("%s after %d restart%s; restarts are used up (max_restarts: %d)", what,
			      restarts, restarts == 1 ? "" : "s", f->max_restarts);
	else
		r = xasprintf("%s; restarts are used up (max_restarts: %d)", what, f->max_restarts);
	free(what);
	return r;
}

static const struct {
	enum tpf_unconverged_kind kind;
	const char *code, *mark;
} kinds[] = {
	{ TPF_UNCONV_RESTARTS_EXHAUSTED, "restarts_exhausted", "restarts exhausted" },
	{ TPF_UNCONV_NOT_RESTARTED, "not_restarted", "not restarted (restart: never)" },
	{ TPF_UNCONV_QUOTA, "quota", "waiting for quota" },
	{ TPF_UNCONV_QUEUED, "queued", "waiting in its queued resource" },
	{ TPF_UNCONV_UNREACHABLE, "unreachable", "unreachable" },
};

const char *tpf_unconverged_code(enum tpf_unconverged_kind k)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].kind == k)
			return kinds[i].code;
	return "unknown";
}

int tpf_unconverged_kind_from(const char *code, enum tpf_unconverged_kind *k)
{
	for (size_t i = 0; code && i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (!strcmp(kinds[i].code, code)) {
			*k = kinds[i].kind;
			return 0;
		}
	}
	return -1;
}

const char *tpf_unconverged_mark(enum tpf_unconverged_kind k)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].kind == k)
			return kinds[i].mark;
	return "not as declared";
}

int tpf_worker_unconverged(const struct tpf_fleet *f, const struct tpf_session_fact *sf,
			   const struct tpf_state_worker *sw)
{
	switch (tpf_job_verdict(f, sf, sw)) {
	case TPF_JOB_EXHAUSTED: return TPF_UNCONV_RESTARTS_EXHAUSTED;
	case TPF_JOB_NOT_RESTARTED: return TPF_UNCONV_NOT_RESTARTED;
	case TPF_JOB_FINE:
	case TPF_JOB_RESTART: break;
	}
	return -1;
}

struct tpf_unconverged *tpf_plan_add_unconverged(struct tpf_plan *p, enum tpf_unconverged_kind kind,
						 const char *node, int worker, const char *reason)
{
	XGROW(p->unconverged, p->nunconverged + 1, p->unconverged_alloc);
	struct tpf_unconverged *u = &p->unconverged[p->nunconverged++];
	memset(u, 0, sizeof(*u));
	u->kind = kind;
	u->node = xstrdup(node);
	u->worker = worker;
	u->exit_code = -1;
	u->reason = xstrdup(reason);
	return u;
}

void tpf_plan_unconverged_release(struct tpf_plan *p)
{
	for (size_t i = 0; i < p->nunconverged; i++) {
		free(p->unconverged[i].node);
		free(p->unconverged[i].reason);
	}
	free(p->unconverged);
	p->unconverged = NULL;
	p->nunconverged = p->unconverged_alloc = 0;
}

int tpf_plan_converged(const struct tpf_plan *p)
{
	return !tpf_plan_has_changes(p) && !p->nunconverged;
}
