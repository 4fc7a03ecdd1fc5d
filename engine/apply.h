/*
 * Carrying out a plan: provider operations with bounded parallelism, then
 * worker provisioning, saving state after every node and worker transition
 * (Terraform persists after each resource, terraform-ux.md section 7).
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
#include "plan/plan.h"
#include "providers/provider.h"
#include "state/state.h"
#include "util/diag.h"

enum tpf_event_kind {
	TPF_EV_START,     /* "NAME: Creating..." */
	TPF_EV_PROGRESS,  /* heartbeat: "NAME: Still creating... [00m10s elapsed]" */
	TPF_EV_COMPLETE,  /* "NAME: Creation complete after 2s [id=X]" */
	TPF_EV_ERRORED,   /* the action failed (details are in the diagnostics) */
	TPF_EV_WORKER,    /* one worker provisioned: result ok|changed|unreachable|failed */
	TPF_EV_NOTE,      /* informational line, e.g. zone fallback */
};

struct tpf_event {
	enum tpf_event_kind kind;
	const char *node;
	const char *verb;    /* "create" "delete" "update" "restart" "wait" "forget" */
	const char *id;      /* provider id when known, may be NULL */
	double elapsed;      /* seconds since the action started */
	int worker;          /* TPF_EV_WORKER: index */
	const char *result;  /* TPF_EV_WORKER: "ok" "changed" "unreachable" "failed" */
	/* TPF_EV_NOTE / TPF_EV_ERRORED: text, may be NULL; TPF_EV_COMPLETE of
	 * a create: set when the node was queued, not created (a queued
	 * resource waiting for capacity), else NULL */
	const char *message;
};

/* Called from several threads; the callee serialises its own output. */
typedef void (*tpf_event_fn)(const struct tpf_event *ev, void *ctx);

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

struct tpf_apply_result {
	size_t added, changed, destroyed; /* completed, Terraform's counts */
	size_t failed_actions;
	size_t deferred;  /* creates put off: every zone refused or backed off */
	size_t not_started; /* actions never begun: an interrupt stopped the queue first */
	struct tpf_recap recap;
};

/*
 * Execute plan p against provider prov, updating st (saved to state_path
 * after every transition). live: the refreshed nodes (for worker addresses
 * of existing nodes; borrowed). Returns 0 when every action succeeded, else
 * TPF_ERROR with one diagnostic per failure; either way *res is filled and
 * the state on disk reflects everything that happened.
 */
int tpf_apply(const struct tpf_plan *p, const struct tpf_fleet *f, struct tpf_provider *prov,
	      const struct tpf_live_set *live, struct tpf_state *st, const char *state_path,
	      const struct tpf_apply_opts *opts, struct tpf_apply_result *res, struct tpf_diags *d);

void tpf_apply_result_release(struct tpf_apply_result *r);

#endif
