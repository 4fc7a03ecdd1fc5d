/*
 * A node with nothing to change: restart the units whose jobs call for it
 * (docs/design.md section 5, "Restart units"), note those that will not
 * restart or wait, and delete or list a node whose job is done.
 */
#include "plan/plan_internal.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One restart unit's entry of what is not as declared: the worker, or
 * (a unit of several) the node, which is then failed or waiting. */
static void unit_unconverged(struct tpf_plan *p, const struct tpf_restart_unit *u,
			     const struct tpf_unit_verdict *v, double now)
{
	enum tpf_unconverged_kind kind =
		v->verdict == TPF_JOB_EXHAUSTED	     ? TPF_UNCONV_RESTARTS_EXHAUSTED
		: v->verdict == TPF_JOB_NOT_RESTARTED ? TPF_UNCONV_NOT_RESTARTED
						      : TPF_UNCONV_RESTART_WAITING;
	const struct tpf_unit_member *m = &u->members[v->trigger];
	char *why = u->n > 1 ? tpf_unit_verdict_reason(u, v, now)
			     : tpf_job_verdict_reason(u->policy, m->sf, v->restarts, v->verdict,
						      v->due, now);
	struct tpf_unconverged *e =
		tpf_plan_add_unconverged(p, kind, m->node, u->n > 1 ? -1 : m->worker, why);
	if (m->sf->state == TPF_JOB_STATE_EXITED)
		e->exit_code = m->sf->exit_code;
	free(why);
}

/* Restart unit u (its verdict v says so): every member's worker is
 * provisioned again; a unit of several restarts as one (a->gang), every
 * member with the same new TPUFORM_RETRY. why gets the reason. */
static void unit_restart(struct tpf_action *a, const struct tpf_state_node *sn,
			 const struct tpf_restart_unit *u, const struct tpf_unit_verdict *v,
			 struct tpf_buf *why, int *stalled)
{
	int gen = sn ? sn->generation : 0;
	const struct tpf_unit_member *t = &u->members[v->trigger];
	*stalled |= tpf_job_stalled(u->policy, t->sf);
	if (u->n > 1) {
		a->gang = 1;
		tpf_buf_addf(why, "%srestart all %zu workers of %s: %s", why->len ? "; " : "", u->n,
			     t->node, v->why);
	} else {
		char *what = tpf_job_what(u->policy, t->sf, 0);
		tpf_buf_addf(why, "%sworker %d %s", why->len ? ", " : "", t->worker, what);
		free(what);
	}
	for (size_t i = 0; i < u->n; i++) {
		const struct tpf_unit_member *m = &u->members[i];
		tpf_diff_add_worker(a, m->worker);
		char field[32];
		snprintf(field, sizeof(field), "w%d.retry", m->worker);
		long before = gen + (m->sw ? m->sw->restarts : 0);
		char *b = tpf_diff_value_long(before);
		char *nv = tpf_diff_value_long(gen + v->restarts + 1);
		tpf_action_change(a, field, b, nv, 0, 0);
		free(b);
		free(nv);
	}
}

/* Every worker's job exited 0: done. With on_success: delete the node is
 * deleted (apply records it as completed); else it is kept and listed. */
static void diff_succeeded(struct tpf_plan *p, const struct tpf_desired_node *dn,
			   const struct tpf_state_node *sn, const struct tpf_live_node *ln,
			   const struct tpf_job_policy *pol)
{
	if (pol->on_success != TPF_ON_SUCCESS_DELETE) {
		tpf_plan_add_completed(p, dn->name, 0, 0, NULL);
		return;
	}
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_DELETE, NULL, sn, ln);
	tpf_diff_reason(a, "completed",
		        "completed: every worker's job exited 0; delete the node to free its quota "
		        "(on_success: delete)");
}

/* Nothing to change in the node: restart the units the policy wants
 * (docs/design.md section 5, "Restart units"); note those it will not
 * restart or that wait; delete or list a node whose job is done. */
void tpf_diff_restart(struct tpf_plan *p, const struct tpf_diff_input *in,
		      const struct tpf_desired_node *dn, const struct tpf_state_node *sn,
		      const struct tpf_live_node *ln, struct tpf_diags *d)
{
	const struct tpf_group *g = tpf_fleet_group(in->fleet, dn->group);
	const struct tpf_job_policy *pol = tpf_fleet_job_policy(in->fleet, dn->group);
	enum tpf_restart_scope scope = tpf_group_restart_scope(g);
	int nworkers = dn->recipe.workers;
	for (int w = 0; w < nworkers; w++) {
		const struct tpf_job_fact *sf = tpf_job_facts_find(in->facts, dn->name, w);
		if (sf && sf->state == TPF_JOB_STATE_UNREACHABLE) {
			tpf_warn(d, dn->name, "worker %d of node '%s' is unreachable", w, dn->name);
			tpf_plan_add_unconverged(p, TPF_UNCONV_UNREACHABLE, dn->name, w,
						 "unreachable: its session could not be checked");
		}
	}
	if (tpf_node_succeeded(pol, dn->name, nworkers, in->facts)) {
		diff_succeeded(p, dn, sn, ln, pol);
		return;
	}
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_RESTART, dn, sn, ln);
	struct tpf_buf why = TPF_BUF_INIT;
	int stalled = 0;
	int nunits = scope == TPF_SCOPE_NODE ? 1 : nworkers;
	for (int k = 0; k < nunits; k++) {
		struct tpf_restart_unit u;
		struct tpf_unit_verdict v;
		tpf_unit_of(&u, dn->name, nworkers, k, scope, pol, sn, in->facts);
		tpf_unit_verdict(&u, in->now, &v);
		if (v.verdict == TPF_JOB_RESTART)
			unit_restart(a, sn, &u, &v, &why, &stalled);
		else if (v.verdict != TPF_JOB_FINE)
			unit_unconverged(p, &u, &v, in->now);
		tpf_unit_verdict_release(&v);
		free(u.members);
	}
	if (a->nworkers) {
		if (!a->gang)
			tpf_buf_addf(&why, ": restart %s", a->nworkers > 1 ? "them" : "it");
		tpf_diff_reason(a, stalled ? "stalled" : "session", why.buf);
	} else {
		tpf_action_release(a);
		p->n--;
	}
	tpf_buf_release(&why);
}

/* The state says the node completed: it is not created again. A live node
 * of that name (made outside tpuform) is deleted. */
void tpf_diff_completed(struct tpf_plan *p, const struct tpf_desired_node *dn,
			const struct tpf_state_node *sn, const struct tpf_live_node *ln)
{
	tpf_plan_add_completed(p, dn->name, 1, sn->exit_code >= 0 ? sn->exit_code : 0,
			       sn->completed_at);
	if (!ln)
		return;
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_DELETE, NULL, sn, ln);
	tpf_diff_reason(a, "completed",
		        "completed: its job completed, so it is not created again (on_success: delete)");
}
