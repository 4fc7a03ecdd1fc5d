/*
 * The losses an `apply` or `destroy` acts on, for the run ledger: a
 * replace or delete the plan made for a lost node (plan/reason_code.h
 * `lost`: preempted, gone, terminated, unhealthy, ...) writes the same
 * `preempted` line as `watch` when its delete starts (some slices of a
 * multislice node: tpf_slice_loss_starts), and `replaced` when
 * the new node's create completes (engine/watch/watch_hooks_lost.c writes
 * them in `watch`). Without it a preemption acted on by `apply` alone is
 * not in the ledger, and `report` counts none (issue 29 item 7).
 *
 * The report counts one loss of a node once, whoever wrote it
 * (engine/ledger/report.c: a node lost again before it was created again
 * is the same loss; docs/ledger.md "Who writes what").
 */
#ifndef TPF_ENGINE_LEDGER_LOSSES_H
#define TPF_ENGINE_LEDGER_LOSSES_H

#include "engine/events.h"

struct tpf_plan;
struct tpf_action;
struct tpf_run_ledger;
struct tpf_ledger_losses;

/*
 * A loss of some slices of a Compute Engine multislice node (a replace
 * with keep_parts, plan/plan.h: nothing is deleted, the create remakes
 * the lost slices): its `preempted` line names them, with their VMs and
 * chips (docs/ledger.md "A lost slice"), so that `report` stops billing
 * those slices alone. Written when the action's first step starts, since
 * no delete starts.
 */
struct tpf_slice_loss {
	char *slices; /* "1", "0,2"; NULL: the whole node was lost */
	int vms;      /* the lost slices' worker VMs */
	int chips;    /* their TPU chips (model/chips.h; 0: unknown) */
};
/* The slices action a loses into *out (out->slices owned by the caller:
 * free it); out->slices NULL when a is not a keep_parts replace. */
void tpf_slice_loss_of(const struct tpf_action *a, struct tpf_slice_loss *out);
/* l's slices, VMs (`workers`) and chips onto preempted event ev; l and
 * its string borrowed by ev. Nothing when l->slices is NULL. */
void tpf_slice_loss_event(const struct tpf_slice_loss *l, struct tpf_event *ev);
/* 1 when the loss is announced at ev, an executor step of the lost node:
 * a whole node's at its delete, a slice loss's at the first step of its
 * action (its create, or an elastic shrink's restart). */
int tpf_slice_loss_starts(const struct tpf_slice_loss *l, const struct tpf_event *ev);

/*
 * The lost nodes plan p replaces or deletes, seen at monotonic time `seen`
 * (seconds: when the refresh that found them began; the preemption line's
 * elapsed counts from it): those the plan deletes or replaces because they
 * were lost, and those it deletes for another reason (destroy, count)
 * while live (the refresh's nodes, may be NULL) says Google reclaimed them
 * (PREEMPTED or TERMINATED). NULL when p has none. Free with
 * tpf_ledger_losses_free.
 */
struct tpf_live_set;
struct tpf_ledger_losses *tpf_ledger_losses_new(const struct tpf_plan *p,
						const struct tpf_live_set *live, double seen);
void tpf_ledger_losses_free(struct tpf_ledger_losses *l);

/*
 * Executor event ev of the apply (thread-safe): the first DELETING of a
 * lost node (for a slice loss, its action's first step:
 * tpf_slice_loss_starts) writes its `preempted` line to r first; the completed create
 * of its replacement writes `replaced` after ev. before: 1 when called
 * before ev is written, 0 after. l or r NULL: nothing.
 */
void tpf_ledger_losses_step(struct tpf_ledger_losses *l, struct tpf_run_ledger *r,
			    const struct tpf_event *ev, int before);

/*
 * The job exits the refresh before an apply found (facts: each worker's
 * job; st: the state, for each node's generation and restarts): one
 * `job_succeeded` or `job_failed` line per worker whose job exited or whose
 * session died, as `watch` writes them (engine/watch/watch_hooks_jobs.c),
 * stamped when the apply saw them. Without them a job that ended with no
 * `watch` running counts as goodput until the node is deleted. r NULL:
 * nothing.
 */
struct tpf_job_facts;
struct tpf_job_fact;
struct tpf_state;
struct tpf_state_node;

/*
 * The `job_succeeded` or `job_failed` event of worker fact sf (exited or
 * dead) of node sn (may be NULL) into *ev, its message into msg (msglen
 * bytes); ev's strings borrow from sf and msg. Returns the retry (the
 * node's generation plus the worker's restarts). What `watch` and `apply`
 * both write (engine/watch/watch_hooks_jobs.c).
 */
long tpf_ledger_job_exit_event(const struct tpf_job_fact *sf, const struct tpf_state_node *sn,
			       struct tpf_event *ev, char *msg, size_t msglen);
void tpf_ledger_job_exits(struct tpf_run_ledger *r, const struct tpf_job_facts *facts,
			  const struct tpf_state *st);

/* The `replaced` event of lost node `node` (its loss's reason code `code`)
 * whose new create completed with `done`; every pointer is borrowed, msg
 * included. What `watch` and `apply` both write. */
struct tpf_event tpf_ledger_replaced_event(const char *node, const char *code,
					   const struct tpf_event *done, const char *msg);

/*
 * Chaining the writer in front of an event callback (apply, destroy):
 * set opts.on_event = tpf_run_ledger_chain and opts.ctx = &chain; every
 * event is written (when r is not NULL), then passed to next.
 */
struct tpf_ledger_chain {
	struct tpf_run_ledger *r;
	tpf_event_fn next; /* may be NULL */
	void *next_ctx;
	/* The lost nodes the apply acts on (engine/ledger/ledger_losses.h),
	 * their preempted and replaced lines written around the events; may
	 * be NULL. */
	struct tpf_ledger_losses *losses;
};
void tpf_run_ledger_chain(const struct tpf_event *ev, void *ctx);

#endif
