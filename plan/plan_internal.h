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

/*
 * Why a worker's job is not as declared, for people, given its verdict
 * (TPF_JOB_EXHAUSTED, TPF_JOB_NOT_RESTARTED or TPF_JOB_WAITING;
 * sf->state is EXITED or DEAD, or stalled): "job failed (exit 1) after 3
 * restarts; restarts are used up (max_restarts: 3)". pol: the group's (its max_restarts and
 * stall_timeout; not NULL); restarts: the unit's; due, now: wall-clock
 * seconds (WAITING). Caller frees.
 */
char *tpf_job_verdict_reason(const struct tpf_job_policy *pol, const struct tpf_job_fact *sf,
			     int restarts, enum tpf_job_verdict v, double due, double now);

/* Sort the actions as tpf_diff does: deletes first (they free quota), then
 * forgets, replaces, creates, waits, updates, restarts; by node name
 * within each kind. */
void tpf_plan_sort(struct tpf_plan *p);

/* The same for a unit of several workers (the node is "failed" when its
 * restarts are used up): "failed: worker 1 job failed (exit 1) after 3
 * restarts of its 2 workers; restarts are used up (max_restarts: 3); the
 * node is kept for debugging". Caller frees. */
char *tpf_unit_verdict_reason(const struct tpf_restart_unit *u, const struct tpf_unit_verdict *v,
			      double now);


/* What happened to a job that calls for a restart (sf->state is EXITED or
 * DEAD, or stalled): "has a dead session", "job failed (exit 1)" ("job failed" without
 * with_exit), "job finished (exit 0)", "stalled: no output for 31m".
 * Caller frees. */
char *tpf_job_what(const struct tpf_job_policy *pol, const struct tpf_job_fact *sf,
		   int with_exit);

/* Free the plan's entries of what is not as declared and its completed
 * nodes (tpf_plan_release does). */
void tpf_plan_unconverged_release(struct tpf_plan *p);

/*
 * The node fields' part of the diff (plan/diff_node.c):
 * - tpf_diff_node_new: a "+" line for every field the recipe sets;
 * - tpf_diff_node_replace: a "# forces replacement" line for every changed
 *   field nodes.patch cannot change (live: the node as it is; recorded:
 *   the state's recipe, how it was requested, or NULL);
 * - tpf_diff_node_patch: a line for every changed patchable field (tags,
 *   metadata, enable_external_ips; recorded as for replace); returns their
 *   TPF_PATCH_* bits;
 * - tpf_diff_node_notes: the live node's health description, symptoms
 *   and upcoming maintenance as warnings starting "note:", not actions.
 */
void tpf_diff_node_new(struct tpf_action *a, const struct tpf_recipe *r);
void tpf_diff_node_replace(struct tpf_action *a, const struct tpf_recipe *want,
			   const struct tpf_recipe *live, const struct tpf_recipe *recorded);
unsigned tpf_diff_node_patch(struct tpf_action *a, const struct tpf_recipe *want,
			     const struct tpf_recipe *live, const struct tpf_recipe *recorded);
void tpf_diff_node_notes(const struct tpf_live_node *ln, struct tpf_diags *d);

/*
 * The Compute Engine part (plan/diff_compute.c): tpf_diff_compute_new adds
 * a "+" line for api, machine_type, image, boot disk, max_run_duration,
 * termination_action and flex_wait of a compute recipe (nothing for a
 * Cloud TPU API one); tpf_diff_compute_replace a "# forces replacement"
 * line for each changed one, and returns 1 when the API itself changed
 * (the plan then says "moving a group between APIs replaces its nodes").
 */
void tpf_diff_compute_new(struct tpf_action *a, const struct tpf_recipe *r);
int tpf_diff_compute_replace(struct tpf_action *a, const struct tpf_recipe *want,
			     const struct tpf_recipe *live, const struct tpf_recipe *recorded);

/*
 * Add a node action for dn (desired), sn (state) or ln (live), at least
 * one of them: the desired node copied, zone and id from ln, else sn
 * (plan/diff_action.c). Returns the plan's action (borrowed).
 * tpf_diff_reason sets its reason code (for machines) and text (people).
 */
struct tpf_action *tpf_diff_action(struct tpf_plan *p, enum tpf_action_kind kind,
				   const struct tpf_desired_node *dn,
				   const struct tpf_state_node *sn,
				   const struct tpf_live_node *ln);
void tpf_diff_reason(struct tpf_action *a, const char *code, const char *text);

/*
 * Nodes on their way out (plan/diff_going.c; docs/state.md "A delete
 * under way"):
 * - tpf_diff_going: ln (desired dn, state sn or NULL) is in the going
 *   class (model/node_state.h), or dead while the delete tpuform sent runs
 *   (sn->delete_sent_at, same id): adds a replace whose delete is under
 *   way, reason code "deleting", "the node is being deleted (state
 *   DELETING)..."; returns 1, else 0 and nothing added;
 * - tpf_diff_deleted: sn records a delete tpuform sent: a's reason is
 *   "deleted" ("tpuform deleted it", never "outside tpuform"); 1, else 0;
 * - tpf_diff_delete_reason: why a node that is not desired is deleted
 *   (destroy, orphan when sn is NULL, count, not_in_config);
 * - tpf_diff_gone: state node sn is not desired (or destroy; ln its live
 *   node or NULL): a delete when it lives (its reason says a delete is
 *   under way when one is), else a forget, or for a Compute Engine slice
 *   whose parts may remain a delete (reason code "leftover") that removes
 *   each part carrying this state's lineage.
 */
int tpf_diff_going(struct tpf_plan *p, const struct tpf_desired_node *dn,
		   const struct tpf_state_node *sn, const struct tpf_live_node *ln);
int tpf_diff_deleted(struct tpf_action *a, const struct tpf_state_node *sn);
void tpf_diff_delete_reason(struct tpf_action *a, const struct tpf_fleet *f,
			    const struct tpf_state_node *sn, int destroy);
void tpf_diff_gone(struct tpf_plan *p, const struct tpf_fleet *f,
		   const struct tpf_state_node *sn, const struct tpf_live_node *ln, int destroy);

#endif
