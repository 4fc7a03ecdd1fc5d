/*
 * The watch loop (`tpuform watch`): refresh -> plan -> heal, in rounds, for
 * weeks (docs/design.md, "The job in one paragraph" and "Node lifecycle the
 * diff must handle").
 *
 * Each round opens a session (engine/pipeline/pipeline.h) without the state lock,
 * lists the fleet's nodes once per zone and, when a session check is due,
 * asks every worker for its session. Healing actions (plan/plan.h
 * tpf_action_is_healing) start at once on background threads; other changes
 * are reported and applied only with apply_all. A READY node that stays
 * other than HEALTHY for unhealthy_timeout is replaced, as a preempted one
 * is. The state lock is held exactly while heals run, so plan and show work
 * from another shell. When *interrupted becomes non-zero the loop finishes
 * the step in flight, waits for the heals (which save the state) and
 * returns; nothing is deleted on the way out.
 *
 * On Cloud Storage state, watches of one fleet elect one leader through a
 * lease object (state/lease.h, engine/watch/watch_lease.c): only the leader
 * refreshes, plans and heals; the others stand by, look at the lease every
 * interval (and when it would expire) and take over when it expires.
 *
 * The loop never prints: everything people should see is an event.
 */
#ifndef TPF_ENGINE_WATCH_H
#define TPF_ENGINE_WATCH_H

#include <stddef.h>
#include "engine/apply/apply.h"
#include "plan/plan.h"
#include "util/diag.h"

/* What one round saw, by desired node (for the summary line and `show`). */
struct tpf_watch_summary {
	int desired;
	int alive;    /* READY */
	int creating; /* any other state on the way up (or unknown) */
	int waiting;  /* not created: waiting for quota */
	int dead;     /* will not run the job again (model/node_state.h), or its
		       * queued resource FAILED or is SUSPENDED: being replaced */
	int missing;  /* not there at all: being created */
	int queued;   /* a queued resource waits for capacity (or is on its way) */
	int completed; /* its job completed (on_success: delete): not created again */
	int round;    /* 1, 2, ... */
	size_t pending; /* changes that are not healing, left for -apply-all or apply */
	const char *fleet; /* the fleet's name */
	/* "alive A/D, creating C, waiting for quota W, dead X, missing M, queued Q"
	 * (then ", completed K" when K > 0) */
	char line[256];
	char time[40];     /* when it was taken, RFC 3339 UTC */
};

enum tpf_watch_event_kind {
	/* Something happened (engine/events.h): a heal's executor steps, and
	 * what the loop and its hooks saw; the kind's row in engine/events.c
	 * says how it is shown, posted and counted. */
	TPF_WATCH_EVENT,
	TPF_WATCH_ACTIONS, /* what this round found and will do: plan (pending: will not) */
	TPF_WATCH_SUMMARY, /* the round's summary (also saved beside the state) */
	TPF_WATCH_DIAGS,   /* diagnostics to show (a failed round, a heal's errors) */
};

/* Every pointer is borrowed for the duration of the call. */
struct tpf_watch_event {
	enum tpf_watch_event_kind kind;
	/* TPF_WATCH_EVENT. The loop's own kinds: TPF_EVENT_UNHEALTHY (a READY
	 * node is not HEALTHY), _WARNING (a warning of the round, e.g.
	 * "deferred: quota"), _LOCKED (another tpuform holds the state lock:
	 * healing waits), _REPLAN (the state changed since the refresh),
	 * _LEASE_ACQUIRED and _LOCK_REMOVED (this watch took the leader lease,
	 * and removed the state lock a dead leader held), _STANDBY (another
	 * watch leads: who, and the lease), _LEASE_LOST (the lease was taken
	 * over: healing stopped), _ROUND_FAILED (retried), _STOPPED
	 * (interrupted), _METRICS (where metrics are served), _NOTIFY_PROBLEM
	 * (a webhook delivery problem), _DONE (with exit_when_done: every node
	 * completed or failed), and once per entry that appears
	 * _RESTARTS_USED_UP, _NOT_RESTARTED, _RESTART_WAITING (plan/plan.h
	 * tpf_unconverged_code). The hooks' conclusions (_PREEMPTED,
	 * _REPLACED, _JOB_FAILED, ...) pass here too. */
	const struct tpf_event *event;
	/* TPF_WATCH_ACTIONS: the actions; pending: 1 when they are not healing
	 * and wait for -apply-all (reported in the first round only). */
	const struct tpf_plan *plan;
	int pending;
	const struct tpf_watch_summary *summary; /* TPF_WATCH_SUMMARY */
	const struct tpf_diags *diags;           /* TPF_WATCH_DIAGS */
};

/* Called from the loop's thread and from heal threads at once: the callee
 * serialises its own output. */
typedef void (*tpf_watch_event_fn)(const struct tpf_watch_event *ev, void *ctx);

struct tpf_watch_opts {
	const char *file;         /* the fleet file, read again every round */
	int parallelism;          /* concurrent probes and node actions per heal */
	double interval;          /* seconds between rounds (<= 0: 10) */
	double session_check;     /* seconds between worker session probes */
	double unhealthy_timeout; /* seconds a READY node may stay not HEALTHY */
	int apply_all;            /* apply every change, not only healing ones */
	int max_rounds;           /* stop after this many rounds (0: never) */
	/* Stop once the fleet is done (plan/plan.h tpf_plan_done): every
	 * desired node completed or failed, nothing to change, no heal in
	 * flight. */
	int exit_when_done;
	/* Set (may be NULL) when the loop stopped because the fleet is done:
	 * 1 every node completed, 2 some failed. Untouched otherwise. */
	int *done;
	volatile int *interrupted; /* set by a signal handler; may be NULL */
	tpf_watch_event_fn on_event; /* may be NULL */
	void *ctx;                   /* passed to on_event */
	/* Serve Prometheus metrics on this "HOST:PORT" (engine/telemetry/metrics.h
	 * tpf_metrics_serve); NULL: not. Notifications need no option: the
	 * fleet file's `notify` key turns them on (engine/telemetry/notify.h). */
	const char *metrics_addr;
	/* Fleets with Cloud Storage state: seconds the leader lease
	 * (state/lease.h) lasts without renewal; a standby watch takes over
	 * after that (<= 0: 30). Local state has no lease. */
	double lease_ttl;
	/* Wait on every worker's job over a connection of its own, so that a
	 * job's end or a dead session is acted on at once rather than at the
	 * next -session-check (engine/watch/watch_attach.c; docs/ARCHITECTURE.md
	 * section 3). -job-wait, default on; 0: probes only. */
	int job_wait;
};

/*
 * Run the loop until *interrupted or max_rounds. A failed round is reported
 * (TPF_WATCH_DIAGS, then a NOTE "error") and retried after a wait that
 * doubles up to 5 minutes. Each round's summary is also written to
 * "<state path>.watch.json" (with "leader": HOST:PID of the writer), which
 * `tpuform show` reads. Returns 0, or
 * TPF_ERROR when the very first round could not load the fleet file or
 * the metrics address cannot be served (nothing to watch; the diagnostics
 * were an event).
 */
int tpf_watch_run(const struct tpf_watch_opts *o);

#endif
