/*
 * The losses and job exits an apply acts on, to the run ledger
 * (engine/pipeline/apply_seen.h).
 */
#include "engine/pipeline/apply_seen.h"
#include "plan/reason_code.h"

#include <stdio.h>

static void lost_line(struct tpf_run_ledger *r, const struct tpf_action *a,
		      const struct tpf_state *st)
{
	const struct tpf_state_node *sn = tpf_state_find((struct tpf_state *)st, a->node);
	char msg[300];
	snprintf(msg, sizeof(msg), "%s: replacing it (seen by apply)",
		 a->reason ? a->reason : a->reason_code);
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_PREEMPTED);
	ev.node = a->node;
	ev.reason = a->reason_code;
	ev.generation = sn ? sn->generation : -1;
	ev.message = msg;
	tpf_run_ledger_event(r, &ev);
}

static void exit_lines(struct tpf_run_ledger *r, const struct tpf_action *a,
		       const struct tpf_state *st, const struct tpf_job_facts *facts)
{
	const struct tpf_state_node *sn = tpf_state_find((struct tpf_state *)st, a->node);
	for (size_t i = 0; i < a->nworkers; i++) {
		const struct tpf_job_fact *sf = tpf_job_facts_find(facts, a->node, a->workers[i]);
		if (!sf || (sf->state != TPF_JOB_STATE_EXITED && sf->state != TPF_JOB_STATE_DEAD))
			continue;
		int died = sf->state == TPF_JOB_STATE_DEAD;
		if (!died && sf->exit_code == 0)
			continue; /* a finished job restarted (its script changed): no failure */
		const struct tpf_state_worker *sw = tpf_state_node_worker(sn, sf->worker);
		long retry = (sn ? sn->generation : 0) + (sw ? sw->restarts : 0);
		char msg[200];
		if (died)
			snprintf(msg, sizeof(msg), "the job's session died (retry %ld)", retry);
		else
			snprintf(msg, sizeof(msg), "the job failed (exit %d, retry %ld)",
				 sf->exit_code, retry);
		struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_JOB_FAILED);
		ev.node = sf->node;
		ev.worker = sf->worker;
		ev.generation = sn ? sn->generation : -1;
		ev.retry = retry;
		ev.exit_code = died ? -1 : sf->exit_code;
		ev.last_log = sf->last_log;
		ev.message = msg;
		tpf_run_ledger_event(r, &ev);
	}
}

void tpf_apply_seen_write(struct tpf_run_ledger *r, const struct tpf_plan *p,
			  const struct tpf_state *st, const struct tpf_job_facts *facts)
{
	if (!r)
		return;
	for (size_t i = 0; i < p->n; i++) {
		const struct tpf_action *a = &p->actions[i];
		if (a->kind == TPF_ACT_REPLACE && tpf_reason_info(a->reason_kind)->lost)
			lost_line(r, a, st);
		else if (a->kind == TPF_ACT_RESTART && a->reason_kind == TPF_REASON_SESSION)
			exit_lines(r, a, st, facts);
	}
}
