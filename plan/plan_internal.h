/*
 * Helpers shared by the files of plan/ only (tests/layering.sh refuses
 * this header anywhere else; what other layers need is in plan/plan.h).
 */
#ifndef TPF_PLAN_INTERNAL_H
#define TPF_PLAN_INTERNAL_H

#include "plan/plan.h"

/* Release and free a heap node (NULL is fine). */
void tpf_desired_node_free(struct tpf_desired_node *n);

/* Append an attribute change; before/after may be NULL. */
void tpf_action_change(struct tpf_action *a, const char *field, const char *before,
		       const char *after, int forces, int sensitive);

/* Why a job is not as declared, for people, given its verdict
 * (TPF_JOB_EXHAUSTED or TPF_JOB_NOT_RESTARTED; sf->session is set):
 * "job failed (exit 1) after 3 restarts; restarts are used up
 * (max_restarts: 3)". Caller frees. */
char *tpf_job_verdict_reason(const struct tpf_fleet *f, const struct tpf_session_fact *sf,
			     const struct tpf_state_worker *sw, enum tpf_job_verdict v);

/* Sort the actions as tpf_diff does: deletes first (they free quota), then
 * forgets, replaces, creates, waits, updates, restarts; by node name
 * within each kind. */
void tpf_plan_sort(struct tpf_plan *p);

/* Free the plan's entries of what is not as declared (tpf_plan_release does). */
void tpf_plan_unconverged_release(struct tpf_plan *p);

#endif
