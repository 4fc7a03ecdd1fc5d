/*
 * What is not as declared and no action can change now (plan/plan.h):
 * the restart policy's verdict on a job, the plan's list of entries, its
 * completed nodes, and the same rules as `show` and `watch` ask them.
 */
#include "plan/plan.h"
#include "plan/plan_internal.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum tpf_job_verdict tpf_job_verdict(const struct tpf_fleet *f, const struct tpf_job_fact *sf,
				     const struct tpf_state_worker *sw)
{
	/* The unit rule on a unit of one under the fleet's policy, with no
	 * stall timeout and no backoff (now 0): one rule for every caller. */
	struct tpf_job_policy none = f->policy; /* shallow: owns nothing here */
	none.scope = TPF_SCOPE_WORKER;
	none.stall_timeout = 0;
	struct tpf_unit_member m = { .node = sf ? sf->node : NULL, .worker = sf ? sf->worker : 0,
				     .sf = sf, .sw = sw };
	struct tpf_restart_unit u = { &m, 1, &none };
	struct tpf_unit_verdict v;
	tpf_unit_verdict(&u, 0, &v);
	tpf_unit_verdict_release(&v);
	return v.verdict;
}

/* "session died", "job failed (exit 1)", "stalled: no output for 31m". */
static char *job_happened(const struct tpf_job_policy *pol, const struct tpf_job_fact *sf)
{
	if (!tpf_job_stalled(pol, sf) && sf->state == TPF_JOB_STATE_DEAD)
		return xstrdup("session died");
	return tpf_job_what(pol, sf, 1);
}

/* "restart 2 of 3 in 8s (restart_backoff)", with " of all N workers"
 * after the count for a unit of several. */
static char *waiting_words(const struct tpf_job_policy *pol, int restarts, double due, double now,
			   size_t members)
{
	char in[32], all[48] = "";
	tpf_fmt_stall(due - now + 0.999, in, sizeof(in));
	if (members > 1)
		snprintf(all, sizeof(all), " of all %zu workers", members);
	return xasprintf("restart %d of %d%s in %s (restart_backoff)", restarts + 1,
			 pol->max_restarts, all, in);
}

char *tpf_job_verdict_reason(const struct tpf_job_policy *pol, const struct tpf_job_fact *sf,
			     int restarts, enum tpf_job_verdict v, double due, double now)
{
	char *what = job_happened(pol, sf);
	char *r;
	if (v == TPF_JOB_WAITING) {
		char *wait = waiting_words(pol, restarts, due, now, 1);
		r = xasprintf("%s; %s", what, wait);
		free(wait);
	} else if (v == TPF_JOB_NOT_RESTARTED && tpf_job_ended_by_code(pol, sf)) {
		r = xasprintf("%s; not restarted (exit %d is not in restart_on_exit_codes)", what,
			      sf->exit_code);
	} else if (v == TPF_JOB_NOT_RESTARTED) {
		r = xasprintf("%s; not restarted (restart: never)", what);
	} else if (restarts > 0) {
		r = xasprintf("%s after %d restart%s; restarts are used up (max_restarts: %d)", what,
			      restarts, restarts == 1 ? "" : "s", pol->max_restarts);
	} else {
		r = xasprintf("%s; restarts are used up (max_restarts: %d)", what, pol->max_restarts);
	}
	free(what);
	return r;
}

char *tpf_unit_verdict_reason(const struct tpf_restart_unit *u, const struct tpf_unit_verdict *v,
			      double now)
{
	if (v->verdict == TPF_JOB_WAITING) {
		char *wait = waiting_words(u->policy, v->restarts, v->due, now, u->n);
		char *r = xasprintf("%s; %s", v->why, wait);
		free(wait);
		return r;
	}
	if (v->verdict == TPF_JOB_NOT_RESTARTED)
		return xasprintf("failed: %s; not restarted (%s); the node is kept for debugging",
				 v->why,
				 v->by_code ? "its exit code is not in restart_on_exit_codes"
					    : "restart: never");
	return xasprintf("failed: %s after %d restart%s of all %zu workers; restarts are used up "
			 "(max_restarts: %d); the node is kept for debugging",
			 v->why, v->restarts, v->restarts == 1 ? "" : "s", u->n, u->policy->max_restarts);
}

static const struct {
	enum tpf_unconverged_kind kind;
	const char *code, *mark;
} kinds[] = {
	{ TPF_UNCONV_RESTARTS_EXHAUSTED, "restarts_exhausted", "restarts exhausted" },
	{ TPF_UNCONV_NOT_RESTARTED, "not_restarted", "not restarted" },
	{ TPF_UNCONV_QUOTA, "quota", "waiting for quota" },
	{ TPF_UNCONV_QUEUED, "queued", "waiting in its queued resource" },
	{ TPF_UNCONV_UNREACHABLE, "unreachable", "unreachable" },
	{ TPF_UNCONV_RESTART_WAITING, "restart_waiting", "restart waiting (restart_backoff)" },
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

static int verdict_kind(enum tpf_job_verdict v)
{
	switch (v) {
	case TPF_JOB_EXHAUSTED: return TPF_UNCONV_RESTARTS_EXHAUSTED;
	case TPF_JOB_NOT_RESTARTED: return TPF_UNCONV_NOT_RESTARTED;
	case TPF_JOB_WAITING: return TPF_UNCONV_RESTART_WAITING;
	case TPF_JOB_FINE:
	case TPF_JOB_RESTART: break;
	}
	return -1;
}

int tpf_worker_unconverged(const struct tpf_fleet *f, const struct tpf_job_fact *sf,
			   const struct tpf_state_worker *sw)
{
	return verdict_kind(tpf_job_verdict(f, sf, sw));
}

/* The unit worker w of sn belongs to, and its verdict at `now`. */
static void node_unit_verdict(const struct tpf_fleet *f, const struct tpf_state_node *sn, int w,
			      const struct tpf_job_facts *facts, double now,
			      struct tpf_restart_unit *u, struct tpf_unit_verdict *v)
{
	const struct tpf_group *g = sn->group ? tpf_fleet_group(f, sn->group) : NULL;
	int nworkers = sn->recipe.workers > 0 ? sn->recipe.workers : (int)sn->nworkers;
	tpf_unit_of(u, sn->name, nworkers, w, tpf_group_restart_scope(g),
		    tpf_fleet_job_policy(f, sn->group), sn, facts);
	tpf_unit_verdict(u, now, v);
}

int tpf_worker_exhausted(const struct tpf_fleet *f, const struct tpf_state_node *sn, int w,
			 const struct tpf_job_facts *facts)
{
	const struct tpf_job_fact *sf = tpf_job_facts_find(facts, sn->name, w);
	if (!tpf_job_calls_restart(tpf_fleet_job_policy(f, sn->group), sf))
		return 0;
	struct tpf_restart_unit u;
	struct tpf_unit_verdict v;
	node_unit_verdict(f, sn, w, facts, 0, &u, &v);
	int exhausted = v.verdict == TPF_JOB_EXHAUSTED;
	tpf_unit_verdict_release(&v);
	free(u.members);
	return exhausted;
}

int tpf_worker_note(const struct tpf_fleet *f, const struct tpf_state_node *sn, int w,
		    const struct tpf_job_facts *facts, double now, char **words)
{
	struct tpf_restart_unit u;
	struct tpf_unit_verdict v;
	*words = NULL;
	node_unit_verdict(f, sn, w, facts, now, &u, &v);
	const struct tpf_job_fact *sf = tpf_job_facts_find(facts, sn->name, w);
	int kind = verdict_kind(v.verdict);
	if (v.verdict == TPF_JOB_WAITING) {
		char in[32];
		tpf_fmt_stall(v.due - now + 0.999, in, sizeof(in));
		*words = xasprintf("restart in %s (restart_backoff)", in);
	} else if (kind >= 0) {
		*words = xstrdup(tpf_unconverged_mark(kind));
	} else if (tpf_job_stalled(u.policy, sf)) {
		*words = tpf_job_what(u.policy, sf, 0);
	}
	tpf_unit_verdict_release(&v);
	free(u.members);
	return kind;
}

const char *tpf_node_outcome(const struct tpf_fleet *f, const struct tpf_state_node *sn,
			     const struct tpf_job_facts *facts, double now)
{
	if (sn->status == TPF_NODE_COMPLETED)
		return "completed";
	int nworkers = sn->recipe.workers > 0 ? sn->recipe.workers : (int)sn->nworkers;
	if (tpf_node_succeeded(tpf_fleet_job_policy(f, sn->group), sn->name, nworkers, facts))
		return "succeeded";
	/* Failed: every restart unit of the node (the node itself, or each
	 * worker) has used up its restarts or is not restarted. */
	const struct tpf_group *g = sn->group ? tpf_fleet_group(f, sn->group) : NULL;
	int nunits = tpf_group_restart_scope(g) == TPF_SCOPE_NODE ? 1 : nworkers;
	int failed = 0;
	for (int k = 0; k < nunits; k++) {
		struct tpf_restart_unit u;
		struct tpf_unit_verdict v;
		node_unit_verdict(f, sn, k, facts, now, &u, &v);
		failed += v.verdict == TPF_JOB_EXHAUSTED || v.verdict == TPF_JOB_NOT_RESTARTED;
		tpf_unit_verdict_release(&v);
		free(u.members);
	}
	return nunits > 0 && failed == nunits ? "failed" : NULL;
}

int tpf_action_completes(const struct tpf_action *a)
{
	return a->kind == TPF_ACT_DELETE && a->reason_kind == TPF_REASON_COMPLETED;
}

/* Has node dn failed for good: a node-wide entry of used-up restarts (or
 * restart: never), or such an entry for each of its workers? */
static int node_failed(const struct tpf_plan *p, const struct tpf_desired_node *dn)
{
	int workers = 0;
	for (size_t i = 0; i < p->nunconverged; i++) {
		const struct tpf_unconverged *u = &p->unconverged[i];
		if (strcmp(u->node, dn->name) || (u->kind != TPF_UNCONV_RESTARTS_EXHAUSTED &&
						  u->kind != TPF_UNCONV_NOT_RESTARTED))
			continue;
		if (u->worker < 0)
			return 1;
		workers++;
	}
	return workers > 0 && workers >= dn->recipe.workers;
}

static int node_completed(const struct tpf_plan *p, const char *name)
{
	for (size_t i = 0; i < p->ncompleted; i++)
		if (!strcmp(p->completed[i].node, name))
			return 1;
	return 0;
}

int tpf_plan_done(const struct tpf_plan *p, const struct tpf_desired_set *ds, size_t *ncompleted,
		  size_t *nfailed)
{
	size_t done = 0, failed = 0;
	int all = !tpf_plan_has_changes(p);
	for (size_t i = 0; i < ds->n; i++) {
		if (node_completed(p, ds->nodes[i].name))
			done++;
		else if (node_failed(p, &ds->nodes[i]))
			failed++;
		else
			all = 0;
	}
	if (ncompleted)
		*ncompleted = done;
	if (nfailed)
		*nfailed = failed;
	return all;
}
