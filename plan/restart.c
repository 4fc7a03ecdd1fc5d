/*
 * Restart units (plan/plan.h): the one rule for when a job is restarted,
 * and with which other jobs. docs/design.md section 5, "Restart units".
 */
#include "plan/plan.h"
#include "plan/plan_internal.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double tpf_restart_backoff(const struct tpf_job_policy *p, int restarts)
{
	double base = p ? p->restart_backoff : 0;
	if (restarts <= 0 || base <= 0)
		return 0;
	double cap = base > TPF_RESTART_BACKOFF_CAP ? base : TPF_RESTART_BACKOFF_CAP;
	double wait = base;
	for (int i = 1; i < restarts && wait < cap; i++)
		wait *= 2;
	return wait < cap ? wait : cap;
}

void tpf_fmt_stall(double seconds, char *out, size_t outlen)
{
	long s = seconds > 0 ? (long)seconds : 0;
	if (s < 60)
		snprintf(out, outlen, "%lds", s);
	else if (s < 600 && s % 60)
		snprintf(out, outlen, "%ldm%lds", s / 60, s % 60);
	else if (s < 3600)
		snprintf(out, outlen, "%ldm", s / 60);
	else if ((s / 60) % 60)
		snprintf(out, outlen, "%ldh%ldm", s / 3600, (s / 60) % 60);
	else
		snprintf(out, outlen, "%ldh", s / 3600);
}

/* Wall-clock seconds of an RFC 3339 time (tpf_rfc3339 writes them); 0
 * when absent or malformed. */
static double parse_time(const char *s)
{
	double t = tpf_parse_rfc3339(s);
	return t < 0 ? 0 : t;
}

int tpf_job_stalled(const struct tpf_job_policy *pol, const struct tpf_job_fact *sf)
{
	return pol && pol->stall_timeout > 0 && sf && sf->state == TPF_JOB_STATE_ALIVE &&
	       sf->stalled_for >= pol->stall_timeout;
}

/* What this job's state calls for under policy pol (before counting
 * restarts): JOB_CALLS_RESTART for a stalled job, a dead session, an exit
 * code the policy restarts on (restart_on_exit_codes; default: any but 0)
 * or any exit with `restart: always`; JOB_CALLS_END for a failed exit whose
 * code is not chosen (the job ended its run on purpose: failed, not
 * restarted); else nothing. `restart: never` is the verdict's to apply. */
enum { JOB_CALLS_NOTHING = 0, JOB_CALLS_RESTART, JOB_CALLS_END };
static int job_calls(const struct tpf_job_policy *pol, const struct tpf_job_fact *sf)
{
	if (!sf)
		return JOB_CALLS_NOTHING;
	if (tpf_job_stalled(pol, sf))
		return JOB_CALLS_RESTART;
	int dead = sf->state == TPF_JOB_STATE_DEAD;
	int exited = sf->state == TPF_JOB_STATE_EXITED;
	if (!dead && !exited)
		return JOB_CALLS_NOTHING; /* alive, never started (provisioning's), unreachable */
	if (dead || (pol->restart == TPF_RESTART_ALWAYS && sf->exit_code == 0) ||
	    tpf_policy_restarts_on(pol, sf->exit_code))
		return JOB_CALLS_RESTART;
	return sf->exit_code != 0 ? JOB_CALLS_END : JOB_CALLS_NOTHING;
}

int tpf_job_calls_restart(const struct tpf_job_policy *pol, const struct tpf_job_fact *sf)
{
	return pol->restart != TPF_RESTART_NEVER && job_calls(pol, sf) == JOB_CALLS_RESTART;
}

int tpf_job_ended_by_code(const struct tpf_job_policy *pol, const struct tpf_job_fact *sf)
{
	return job_calls(pol, sf) == JOB_CALLS_END;
}

char *tpf_job_what(const struct tpf_job_policy *pol, const struct tpf_job_fact *sf,
		   int with_exit)
{
	if (tpf_job_stalled(pol, sf)) {
		char d[32];
		tpf_fmt_stall(sf->stalled_for, d, sizeof(d));
		return xasprintf("stalled: no output for %s", d);
	}
	if (sf->state == TPF_JOB_STATE_DEAD)
		return xstrdup("has a dead session");
	const char *how = sf->exit_code ? "failed" : "finished";
	return with_exit ? xasprintf("job %s (exit %d)", how, sf->exit_code) : xasprintf("job %s", how);
}

void tpf_unit_verdict(const struct tpf_restart_unit *u, double now, struct tpf_unit_verdict *out)
{
	memset(out, 0, sizeof(*out));
	out->trigger = -1;
	int ended = -1;
	double last = 0;
	for (size_t i = 0; i < u->n; i++) {
		const struct tpf_unit_member *m = &u->members[i];
		if (m->sw && m->sw->restarts > out->restarts)
			out->restarts = m->sw->restarts;
		double t = m->sw ? parse_time(m->sw->restarted_at) : 0;
		if (t > last)
			last = t;
		int calls = job_calls(u->policy, m->sf);
		if (out->trigger < 0 && calls == JOB_CALLS_RESTART)
			out->trigger = (int)i;
		if (ended < 0 && calls == JOB_CALLS_END)
			ended = (int)i;
	}
	if (out->trigger < 0 && ended >= 0) {
		/* Ended on purpose (an exit code not chosen): failed, and no
		 * member's state asks for a restart. */
		out->trigger = ended;
		out->by_code = 1;
	}
	if (out->trigger < 0) {
		out->verdict = TPF_JOB_FINE;
		return;
	}
	const struct tpf_unit_member *m = &u->members[out->trigger];
	char *what = tpf_job_what(u->policy, m->sf, 1);
	out->why = xasprintf("worker %d %s", m->worker, what);
	free(what);
	double wait = tpf_restart_backoff(u->policy, out->restarts);
	if (u->policy->restart == TPF_RESTART_NEVER || out->by_code)
		out->verdict = TPF_JOB_NOT_RESTARTED;
	else if (out->restarts >= u->policy->max_restarts)
		out->verdict = TPF_JOB_EXHAUSTED;
	else if (now > 0 && last > 0 && now < last + wait) {
		out->verdict = TPF_JOB_WAITING;
		out->due = last + wait;
	} else
		out->verdict = TPF_JOB_RESTART;
}

void tpf_unit_verdict_release(struct tpf_unit_verdict *v)
{
	free(v->why);
	v->why = NULL;
}

void tpf_unit_of(struct tpf_restart_unit *u, const char *node, int nworkers, int w,
		 enum tpf_restart_scope scope, const struct tpf_job_policy *policy,
		 const struct tpf_state_node *sn, const struct tpf_job_facts *facts)
{
	int first = scope == TPF_SCOPE_NODE ? 0 : w;
	int last = scope == TPF_SCOPE_NODE ? nworkers - 1 : w;
	u->n = last >= first ? (size_t)(last - first + 1) : 0;
	u->members = xcalloc(u->n ? u->n : 1, sizeof(*u->members));
	u->policy = policy;
	for (int k = first; k <= last; k++) {
		struct tpf_unit_member *m = &u->members[k - first];
		m->node = node;
		m->worker = k;
		m->sf = tpf_job_facts_find(facts, node, k);
		m->sw = tpf_state_node_worker(sn, k);
	}
}

int tpf_node_succeeded(const struct tpf_job_policy *pol, const char *node, int nworkers,
		       const struct tpf_job_facts *facts)
{
	if (pol->restart == TPF_RESTART_ALWAYS || nworkers < 1)
		return 0;
	for (int w = 0; w < nworkers; w++) {
		const struct tpf_job_fact *sf = tpf_job_facts_find(facts, node, w);
		if (!sf || sf->state != TPF_JOB_STATE_EXITED || sf->exit_code != 0)
			return 0;
	}
	return 1;
}
