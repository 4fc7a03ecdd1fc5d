/*
 * Carrying out a plan: provider operations with bounded parallelism, then
 * worker provisioning, saving state after every node and worker transition
 * (Terraform persists after each resource, docs/terraform-behaviour.md section 7).
 *
 * Money rules, enforced here:
 * - a node is recorded in state as "pending" (and saved) BEFORE its create
 *   request is sent, so a crash right after leaves a trace; the provider's
 *   tpuform-* labels let the next refresh find it in any case;
 * - deletes run before creates (preempted and orphan nodes hold quota);
 * - a failed create that may have left a node marks it "tainted" (replaced
 *   next time), never forgets it; one failed node does not stop the others;
 * - a zone fallback never exceeds the declared quota (plan/quota.h, the
 *   same rule plan placement uses).
 */
#ifndef TPF_APPLY_H
#define TPF_APPLY_H

#include <pthread.h>
#include "plan/backoff.h"
#include "config/config.h"
#include "engine/events.h"
#include "plan/plan.h"
#include "providers/provider.h"
#include "state/state.h"
#include "util/diag.h"

/* The executor reports each step as a typed event (engine/events.h): an
 * action's start (TPF_EVENT_CREATING ...), heartbeat (TPF_EVENT_PROGRESS),
 * completion or failure, each worker provisioned, and zone fallback,
 * deferral and interrupt notes; ev->action is the kind that started the
 * action. Events come from several threads. */

struct tpf_recap_entry {
	char *host; /* "NODE/wN" */
	int ok, changed, unreachable, failed;
};

struct tpf_recap {
	struct tpf_recap_entry *items;
	size_t n, alloc;
};
void tpf_recap_release(struct tpf_recap *r);

struct tpf_apply_opts {
	int parallelism;         /* concurrent node actions (Terraform's default 10) */
	double heartbeat;        /* seconds between "Still creating..." lines (10) */
	double wait_timeout;     /* seconds a WAIT action waits for READY (1200) */
	tpf_event_fn on_event;   /* may be NULL */
	void *ctx;
	volatile int *interrupted; /* set by a signal handler: start nothing new */
	/* Zones that refused (quota, capacity) are skipped until their backoff
	 * ends, and refusals extend it. NULL: try every zone every time. */
	struct tpf_backoff *backoff;
	/* watch: a node no zone can take now is deferred (a warning, counted
	 * in res->deferred), not a failure. */
	int refusals_defer;
	/* When several applies run at once on one state (watch heals nodes
	 * concurrently), they must share this mutex; NULL: apply's own. */
	pthread_mutex_t *state_mu;
};

/*
 * What an apply did. Every action of the plan is counted once: completed
 * (added/changed/destroyed; a replace counts in both added and destroyed),
 * failed_actions, deferred, interrupted or not_started.
 */
struct tpf_apply_result {
	size_t added, changed, destroyed; /* completed, Terraform's counts */
	/* Creates whose node waits for capacity (a flex-start VM or slice, a
	 * queued resource): requested, not added; counted apart so that the
	 * closing line does not call them added (issue 26). */
	size_t waiting;
	size_t failed_actions;
	size_t deferred;  /* creates put off: every zone refused or backed off */
	/* Actions that had started when *opts.interrupted was set and stopped
	 * waiting (a create, a delete, a wait for READY). A create stopped
	 * this way stays "pending" in state: the next plan waits for the node
	 * or creates it again. Not failures: no diagnostic, and a
	 * TPF_EVENT_INTERRUPTED instead of TPF_EVENT_FAILED. */
	size_t interrupted;
	size_t not_started; /* actions never started because of the interrupt */
	struct tpf_recap recap;
};

/*
 * Execute plan p against provider prov, updating st (saved through its
 * backend, state/state.h tpf_state_save, after every transition). live: the refreshed nodes (for worker addresses
 * of existing nodes; borrowed). Returns 0 when every action succeeded,
 * TPF_ERROR with one diagnostic per failure, else TPF_EINTERRUPTED when
 * *opts->interrupted stopped some (res->interrupted, res->not_started);
 * either way *res is filled and the state on disk reflects everything that
 * happened.
 *
 * Interrupts (Terraform's first Ctrl-C): once *opts->interrupted is set,
 * no action starts; provider waits in flight stop within 0.2 s (prov's
 * interrupted flag is pointed at opts->interrupted, see
 * providers/provider.h); workers already being provisioned finish; the
 * state is saved.
 */
int tpf_apply(const struct tpf_plan *p, const struct tpf_fleet *f, struct tpf_provider *prov,
	      const struct tpf_live_set *live, struct tpf_state *st,
	      const struct tpf_apply_opts *opts, struct tpf_apply_result *res, struct tpf_diags *d);

void tpf_apply_result_release(struct tpf_apply_result *r);

#endif
