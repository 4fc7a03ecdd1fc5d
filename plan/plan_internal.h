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

/* The same, taking before and after (heap strings or NULL) into the
 * change instead of copying them: a plan of 10,000 adopted nodes makes
 * 90,000 values (tests/bench/gcp_bench.sh). */
void tpf_action_change_take(struct tpf_action *a, const char *field, char *before, char *after,
			    int forces);

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


/*
 * Elastic slices (plan/diff_elastic.c; plan.h TPF_ELASTIC_*), for a node
 * of a group with `elastic` (dn->elastic.min_slices > 0) only:
 * - tpf_diff_elastic_lost: a is the keep_parts replace of a multislice
 *   node that lost slices (ln->lost_slices); when at least min_slices
 *   others remain, turn it into a shrink (the job restarts on them) or,
 *   when the job runs on exactly those already (sn->elastic_slices), a
 *   recreate of the lost ones alone; 1 when it did, else 0 and a as it was;
 * - tpf_diff_elastic_grown: a node whose job runs on some slices
 *   (sn->elastic_slices): READY again with every slice, a grow (every
 *   worker restarts on every slice); still being made, a note and no
 *   action; 1 when it decided, else 0 and nothing added.
 */
int tpf_diff_elastic_lost(struct tpf_action *a, const struct tpf_desired_node *dn,
			  const struct tpf_state_node *sn, const struct tpf_live_node *ln);
int tpf_diff_elastic_grown(struct tpf_plan *p, const struct tpf_desired_node *dn,
			   const struct tpf_state_node *sn, const struct tpf_live_node *ln);

/* Worker w joins the action's list of workers to provision. */
void tpf_diff_add_worker(struct tpf_action *a, int w);

/* The reason of an update that records a node found by this state's
 * lineage label but missing from the state (plan/ownership.h): an apply
 * that crashed between its create and its record. */
#define TPF_DIFF_ADOPT_REASON \
	"found by this state's lineage label but missing from state: adopt it"

/*
 * Values as the plan shows them (plan/diff_values.c; Terraform's plan
 * renderer): tpf_diff_value_str a string JSON-quoted by jansson ("null" for
 * NULL), tpf_diff_value_map a map as { "k" = "v" } ("{}" when empty),
 * tpf_diff_value_long a number; each returns a heap string the caller
 * frees. tpf_diff_change_str adds a change line for a string field when
 * before != after (forces: "# forces replacement").
 * tpf_diff_describe_new adds a "+" line for every attribute of a new node;
 * tpf_diff_describe_job a line for each changed job field (commit, env,
 * run, secrets, setup) and returns 1 when there was one.
 */
char *tpf_diff_value_str(const char *s);
char *tpf_diff_value_map(const struct tpf_kvlist *l);
char *tpf_diff_value_long(long v);
void tpf_diff_change_str(struct tpf_action *a, const char *field, const char *before,
			 const char *after, int forces);
void tpf_diff_describe_new(struct tpf_action *a, const struct tpf_desired_node *dn);
int tpf_diff_describe_job(struct tpf_action *a, const struct tpf_job *before,
			  const struct tpf_job *after);

/*
 * The rules of tpf_diff for one desired node dn (state sn, live ln; sn may
 * be NULL), one file each; plan/diff.c applies them in order of precedence
 * (docs/design.md "Node lifecycle the diff must handle"):
 * - tpf_diff_queued_state: the queued resource's state when it speaks for
 *   the node (no node yet, or FAILED or SUSPENDED; docs/cloud-tpu-api.md
 *   section 5), else NULL (borrowed from ln);
 * - tpf_diff_absent (plan/diff_recreate.c): no live node: create it
 *   (again), or wait for quota;
 * - tpf_diff_replace (same file): replace when the node must go (queued
 *   resource gave up, dead, tainted, bad host, a field that forces
 *   replacement); 1 if it added a replace;
 * - tpf_diff_queued_waiting, tpf_diff_capacity_wait, tpf_diff_busy
 *   (plan/diff_wait.c): a node still queued, waiting for flex-start
 *   capacity (past flex_start.wait: replaced), or on its way to READY;
 * - tpf_diff_update (plan/diff_update.c): labels, patchable fields,
 *   adoption or workers to provision; 1 if an update was added;
 * - tpf_diff_restart, tpf_diff_completed (plan/diff_restart.c): restart
 *   the units whose jobs call for it, list or delete a node whose job is
 *   done; a node the state says completed is not created again.
 * in->now is wall-clock seconds. Warnings go to d.
 */
const char *tpf_diff_queued_state(const struct tpf_live_node *ln);
void tpf_diff_absent(struct tpf_plan *p, const struct tpf_desired_node *dn,
		     const struct tpf_state_node *sn, const struct tpf_live_set *live);
int tpf_diff_replace(struct tpf_plan *p, const struct tpf_desired_node *dn,
		     const struct tpf_state_node *sn, const struct tpf_live_node *ln);
void tpf_diff_queued_waiting(struct tpf_plan *p, const struct tpf_desired_node *dn,
			     const struct tpf_state_node *sn, const struct tpf_live_node *ln,
			     const char *qstate, struct tpf_diags *d);
void tpf_diff_capacity_wait(struct tpf_plan *p, const struct tpf_diff_input *in,
			    const struct tpf_desired_node *dn, const struct tpf_state_node *sn,
			    const struct tpf_live_node *ln, struct tpf_diags *d);
void tpf_diff_busy(struct tpf_plan *p, const struct tpf_desired_node *dn,
		   const struct tpf_state_node *sn, const struct tpf_live_node *ln);
int tpf_diff_update(struct tpf_plan *p, const struct tpf_diff_input *in,
		    const struct tpf_desired_node *dn, const struct tpf_state_node *sn,
		    const struct tpf_live_node *ln);
void tpf_diff_restart(struct tpf_plan *p, const struct tpf_diff_input *in,
		      const struct tpf_desired_node *dn, const struct tpf_state_node *sn,
		      const struct tpf_live_node *ln, struct tpf_diags *d);
void tpf_diff_completed(struct tpf_plan *p, const struct tpf_desired_node *dn,
			const struct tpf_state_node *sn, const struct tpf_live_node *ln);

#endif
