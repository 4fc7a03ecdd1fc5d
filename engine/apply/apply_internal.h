/*
 * The executor's own seams (engine/apply/apply.c and its parts); not for other
 * folders. One struct exec per tpf_apply call:
 *   engine/apply/apply.c          phases: deletes first, then the rest in
 *                           parallel; updates, restarts, waits; heartbeats
 *   engine/apply/apply_create.c   a create: pending record, zone fallback within
 *                           quota and backoff, what a refusal leaves
 *   engine/apply/apply_workers.c  provisioning and stopping workers in parallel,
 *                           and the Ansible-style recap
 *   engine/apply/apply_exec.c     what they share: events, saves, interrupts,
 *                           in-flight bookkeeping
 * Every state change goes through state/state.h transitions, under x->mu,
 * then apply_save_locked.
 */
#ifndef TPF_APPLY_INTERNAL_H
#define TPF_APPLY_INTERNAL_H

#include "engine/apply/apply.h"

#include <pthread.h>
#include <stddef.h>

struct inflight {
	const char *node;
	enum tpf_event_kind started; /* the kind that started it: CREATING ... */
	char *id;
	double start;
	double last_beat;
	int active;
	int waiting; /* a create that left the node waiting for capacity */
};

struct exec {
	const struct tpf_plan *p;
	const struct tpf_fleet *f;
	struct tpf_provider *prov;
	struct tpf_transport *t;
	const struct tpf_live_set *live;
	struct tpf_state *st;
	const struct tpf_apply_opts *o;
	struct tpf_apply_result *res;
	struct tpf_diags *d;
	/* Guards the state, the result and the bookkeeping below: the
	 * caller's (opts->state_mu) when several applies share one state. */
	pthread_mutex_t own_mu;
	pthread_mutex_t *mu;

	/* the phase being run: indices into p->actions */
	size_t *queue;
	size_t nqueue;
	struct inflight *fl; /* one per action */
	int done;            /* stops the heartbeat thread */
	/* Worker records not yet saved, and when the state was last saved
	 * (monotonic seconds). A worker's record is saved within
	 * APPLY_WORKER_SAVE_INTERVAL, not at once: one save per worker made
	 * N saves of a state that grows with N (O(N^2) bytes written and an
	 * fsync each, serialised under mu). So is a created node's id, and a
	 * pending node's record is saved with its zone's claim, before the
	 * create (engine/apply/apply_create.c); other node records are saved
	 * at once. */
	int workers_dirty;
	double last_save;
	/* Workers' provisioning on one event loop (engine/workers/provision.h
	 * tpf_fanout_*), made at its first use; freed by tpf_apply. */
	struct tpf_fanout *fanout;
	int fanout_tried;
};

/* Seconds a worker's record may wait for the next save (Terraform persists
 * the state of a long apply every 20 s; a worker's record lost to a crash
 * costs only a re-check of that worker at the next apply). */
#define APPLY_WORKER_SAVE_INTERVAL 1.0

/* Before node a->node is deleted: keep the tail of its workers' job logs
 * (engine/apply/apply_keep.c, engine/workers/kept_logs.h). Warnings only, in x->d. */
void apply_keep_logs(struct exec *x, const struct tpf_action *a);
/* Deliver ev to opts->on_event, if any. */
void apply_emit_event(struct exec *x, const struct tpf_event *ev);
/* Report a step (kind) of the action that `action` started (engine/events.h):
 * node, provider id, seconds since the action began, a message for people
 * (all may be NULL/0). */
void apply_emit(struct exec *x, enum tpf_event_kind kind, enum tpf_event_kind action,
		const char *node, const char *id, double elapsed, const char *message);
/* A create's note about one zone. */
void apply_emit_zone(struct exec *x, enum tpf_event_kind kind, const struct tpf_desired_node *dn,
		     const char *zone, const char *message);
/* Save the state through its backend. Call with x->mu held. A failed save
 * is an error: the caller must not go on to spend money the state does not
 * know about. */
int apply_save_locked(struct exec *x);
/* A worker's record changed (x->mu held): saved now when the last save is
 * APPLY_WORKER_SAVE_INTERVAL old or `now_please`, else by the next save,
 * the heartbeat thread's (apply_save_due_locked) or the apply's last. */
void apply_worker_changed_locked(struct exec *x, int now_please);
/* The heartbeat's part (x->mu held): save the worker records that waited
 * APPLY_WORKER_SAVE_INTERVAL. */
void apply_save_due_locked(struct exec *x);
/* 1 once the caller's interrupt flag is set. */
int apply_interrupted(const struct exec *x);
/* The concurrency the caller asked for (Terraform's default: 10). */
int apply_parallelism(const struct exec *x);
/* Action ai starts (`started`: CREATING, DELETING ...; id may be NULL) /
 * ends: the heartbeat thread reports it meanwhile. fl_end returns the
 * seconds it took. */
void apply_fl_begin(struct exec *x, size_t ai, enum tpf_event_kind started, const char *id);
double apply_fl_end(struct exec *x, size_t ai);

/* Provision the listed workers of node `name` (live as ln) in parallel
 * (force: restart their jobs); the number that failed. engine/apply/apply_workers.c */
int apply_provision_workers(struct exec *x, const char *name, const struct tpf_live_node *ln,
			    const int *workers, size_t nworkers, int force);
/* {0, 1, ..., n-1}; caller frees. */
int *apply_all_workers(int n);
/* Stop the listed workers' jobs in parallel (the stop verb: the group's
 * on_disruption signal to each job's process group, KILL after its grace;
 * reason, when not NULL, is written to $TPUFORM_DISRUPTION first). */
void apply_stop_workers(struct exec *x, const char *name, const struct tpf_live_node *ln,
			const int *workers, size_t nworkers, const char *reason);

/* Carry out create action ai (engine/apply/apply_create.c): 0, TPF_EDEFERRED,
 * TPF_EINTERRUPTED, or an error with diagnostics. For an elastic action
 * (plan.h TPF_ELASTIC_SHRINK, _RECREATE) the create is a background one:
 * the node stays recorded as it is (created, same generation) whatever
 * becomes of the create, which remakes only its lost slices and
 * provisions no worker; once made, the workers of those slices are
 * forgotten (new VMs: new host keys) and a later plan grows the job. */
int apply_exec_create(struct exec *x, size_t ai);

/* An update (force 0) or restart (force 1) of action ai's workers, live as
 * ln (engine/apply/apply.c): recorded, stopped as a unit when a->gang,
 * provisioned. 0 or an error. */
int apply_exec_update(struct exec *x, size_t ai, const struct tpf_live_node *ln, int force);

/* Carry out an elastic action (plan.h TPF_ELASTIC_*; engine/apply/
 * apply_elastic.c): shrink (record the running slices, restart their
 * workers, then the background create), recreate (the background create)
 * or grow (tell the jobs with grow: checkpoint, record every slice
 * running, restart every worker). 0, TPF_EDEFERRED, or an error. */
int apply_exec_elastic(struct exec *x, size_t ai, const struct tpf_live_node *ln);

#endif
