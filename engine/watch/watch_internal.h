/*
 * The parts of the watch loop (engine/watch/watch.h), shared by engine/watch*.c
 * only. The files call each other one way (docs/ARCHITECTURE.md section 3):
 *
 *   watch.c (the loop) -> watch_heal.c -> watch_lease.c -> watch_emit.c
 *   watch.c -> watch_hooks.c (and its watch_hooks_*.c parts) -> watch_summary.c
 *   watch.c -> watch_probe.c, watch_attach.c, watch_unhealthy.c, watch_summary.c,
 *              watch_maint.c
 *
 * and every file may call watch_emit.c, the leaf, which calls none.
 */
#ifndef TPF_ENGINE_WATCH_INTERNAL_H
#define TPF_ENGINE_WATCH_INTERNAL_H

#include "engine/pipeline/pipeline.h"
#include "engine/watch/watch.h"

/* ---- emitting (engine/watch/watch_emit.c: the leaf every watch file calls) ---- */

/* Pass ev to o->on_event (when set). ev is borrowed for the call. */
void tpf_watch_emit(const struct tpf_watch_opts *o, const struct tpf_watch_event *ev);
/* A TPF_WATCH_EVENT carrying ev (borrowed). */
void tpf_watch_event(const struct tpf_watch_opts *o, const struct tpf_event *ev);
/* A TPF_WATCH_EVENT of kind about node (NULL: the fleet), with message for
 * people (copied by nobody: borrowed for the call). */
void tpf_watch_note(const struct tpf_watch_opts *o, enum tpf_event_kind kind, const char *node,
		    const char *message);
/* A TPF_WATCH_DIAGS event of d's errors and of the warnings that are news:
 * a warning (address and text) said in this round or the last is left out,
 * so a standing one is said once, and again when its text changes or it
 * comes back. Nothing is emitted when nothing is left. */
void tpf_watch_diags(const struct tpf_watch_opts *o, const struct tpf_diags *d);
/* The round tpf_watch_diags counts in (engine/watch/watch.c calls it at each
 * round's start). */
void tpf_watch_warnings_round(long round);
/* Forget every warning said (at the end of a watch, and in tests). */
void tpf_watch_warnings_forget(void);

/* ---- the round summary (engine/watch/watch_summary.c) ------------------------ */

/*
 * Count s's desired nodes by what their live nodes are: READY is alive; a
 * state model/node_state.h classes dead (PREEMPTED, TERMINATED, STOPPED,
 * STOPPING) is dead, as is a queued resource that FAILED or is SUSPENDED;
 * a queued resource otherwise is queued; any other state is creating. A
 * desired node with no live node is waiting (deferred: quota) or missing.
 * Fills *sum (line and time too; wall: wall-clock seconds, fleet borrowed
 * from s).
 */
void tpf_watch_summarise(const struct tpf_pipeline *s, struct tpf_watch_summary *sum, int round,
			 size_t pending, double wall);

/* What tpf_watch_summarise counts dn as (model/node_state.h): ln is its
 * live node, or NULL. */
enum tpf_node_condition tpf_watch_node_condition(const struct tpf_desired_node *dn,
					       const struct tpf_live_node *ln);

/* Write sum to "<state path>.watch.json" (0600, atomic), which `tpuform
 * show` reads. Best effort: a summary that cannot be written is not worth
 * stopping the watch for, so errors are dropped. */
void tpf_watch_save_summary(const struct tpf_pipeline *s, const struct tpf_watch_summary *sum);

/* ---- the healer: background heals and the nodes they are busy with ---- */

struct tpf_healer;

/* A healer for the loop with options o (borrowed: must outlive it). */
struct tpf_healer *tpf_healer_new(const struct tpf_watch_opts *o);

/*
 * Start healing p's actions in the background, against this round's
 * session s (its live nodes are copied). Actions on nodes a heal in flight
 * is busy with are dropped: a later round sees them again if they still
 * apply. The first heal takes the state lock and reloads the state (and
 * the fleet file when it changed); when the lock is held elsewhere or the
 * state moved since s was refreshed, nothing starts (a NOTE says why).
 * Takes p's actions (p ends empty).
 */
void tpf_healer_heal(struct tpf_healer *h, const struct tpf_pipeline *s, struct tpf_plan *p);

/* Drop p's actions on nodes a heal in flight is busy with (the heal is
 * their answer), and on nodes whose heal ended at or after `since`
 * (monotonic seconds: when this round's refresh began), which the round saw
 * as they were before it. A later round sees them again if they still
 * apply. p's counts are recomputed. */
void tpf_healer_drop_busy(struct tpf_healer *h, struct tpf_plan *p, double since);

/* Drop the facts about nodes a heal is busy with, or whose heal ended at or
 * after `since` (monotonic seconds: when the probe that gathered f began):
 * they describe jobs that heal stopped or replaced, and a node without
 * facts is planned as not probed. */
void tpf_healer_drop_stale_facts(struct tpf_healer *h, struct tpf_job_facts *f, double since);

struct tpf_wait_time; /* below */

/*
 * Drop the job waits' facts f (t: when each was learnt, index for index;
 * engine/watch/watch_attach.c) that a heal made stale: about a node a heal is
 * busy with, or, for a job the wait saw appear (t[i].job_at > 0), one
 * that appeared before its node's last heal began (the heal stopped or
 * replaced it), or else one answered before that heal ended. A job the
 * heal itself started stays news however soon it ends (issue 26: a job
 * failing 2 s after a restart, while the heal was still finishing, waited
 * 10 s). Returns how many of the dropped facts ended a job (exited, dead)
 * on a node a heal is busy with: the loop plans again when that heal ends
 * (tpf_healer_ended).
 */
size_t tpf_healer_drop_stale_waits(struct tpf_healer *h, struct tpf_job_facts *f,
				   const struct tpf_wait_time *t);

/* How many heals have ended so far: the loop naps until it moves when a
 * round left a job's end to a heal in flight. */
unsigned long tpf_healer_ended(struct tpf_healer *h);

/*
 * Record in the state the checkpoints s's facts report that its state
 * does not have yet (engine/checkpoints.h), and emit a CHECKPOINT event
 * for each. Heals in flight: into the state they share, under its lock;
 * none: the lock is taken for the write (held elsewhere: nothing, the next
 * round tries again). Call after this round's heals started (a write
 * before them would move the serial under their plan). Errors are
 * events.
 */
void tpf_healer_record_checkpoints(struct tpf_healer *h, const struct tpf_pipeline *s);

/* Number of heals in flight now. */
int tpf_healer_running(struct tpf_healer *h);

/*
 * Did heals that created or deleted nodes (a replacement is both) all end
 * before `since` (monotonic seconds: when this round's session was opened,
 * so its state and live nodes include them), with no heal in flight now?
 * Then 1, once: the flag is cleared, and the caller rewrites the ssh config
 * `ssh-config -install` made (issue 19 item 4). Otherwise 0, and the flag
 * waits for a later round.
 */
int tpf_healer_take_nodes_changed(struct tpf_healer *h, double since);

/* Wait for every heal in flight, unlock the state and free h (NULL: no-op). */
void tpf_healer_finish(struct tpf_healer *h);

/* ---- the session probe, in the background (engine/watch/watch_probe.c) ------- */

struct tpf_prober;
struct tpf_attacher;

/* A prober for the loop with options o (borrowed: must outlive it). Its
 * probes skip the workers the attacher covers (tpf_attacher_covers; a:
 * borrowed, must outlive the prober; NULL: probe every worker). */
struct tpf_prober *tpf_prober_new(const struct tpf_watch_opts *o, struct tpf_attacher *a);

/*
 * Start asking every provisioned worker of the fleet for its session on a
 * thread of its own: a session opened from o->file (no lock), refreshed,
 * then engine/pipeline/pipeline.h tpf_pipeline_probe with one attempt per worker.
 * pinned: the commit this round resolved (copied; NULL: none). Returns 1
 * when a probe started, 0 when one is still running (nothing changes).
 * Answers nobody took yet are dropped. Errors of the probe are events
 * (TPF_WATCH_DIAGS) and leave no answers.
 */
int tpf_prober_start(struct tpf_prober *p, const char *pinned);

/*
 * Take the answers of the last finished probe. Waits for a running probe
 * until `deadline` (monotonic seconds; 0: do not wait; < 0: until it ends)
 * or the loop is interrupted. Returns 1 with *facts filled (the caller
 * releases them; *facts must be empty) and *started set to when the probe
 * began (monotonic seconds: the facts about nodes healed since then are
 * stale, tpf_healer_drop_stale_facts; a wait's later answer is newer), or
 * 0 when there are none.
 */
int tpf_prober_take(struct tpf_prober *p, double deadline, struct tpf_job_facts *facts,
		    double *started);

/* Wait for a probe in flight (its timeouts bound it) and free p (NULL: no-op). */
void tpf_prober_free(struct tpf_prober *p);

/* ---- the waits' threads (engine/watch/watch_waits.c) ---------------------------- */

/*
 * Long job waits (engine/workers/provision.h tpf_provision_watch_open) on
 * a fixed set of threads: one loop connects (non-blocking dials, at most
 * 64 in flight) and reads them all (poll), `helpers` threads (1 to 4)
 * start dials and close waits, with a backoff (1 s doubling to 30 s)
 * after a failure. For transports with tpf_provision_can_watch.
 */
struct tpf_waits;
struct tpf_wait;
struct tpf_worker_report;
struct tpf_transport;
struct tpf_wait_cb {
	/* A record of the wait (r and the tokens borrowed; prev: the token
	 * before, NULL for a new connection's first answer). */
	void (*record)(void *arg, const struct tpf_worker_report *r, const char *prev,
		       const char *now);
	/* The wait is running on a live connection (1), or it broke or an
	 * attempt to connect failed (0). */
	void (*attached)(void *arg, int on);
	void *arg;
};
/* NULL when the threads cannot start. t borrowed (outlives the waits);
 * window, beat: seconds (tpf_provision_watch_open); helpers: threads for
 * what may block (a dial's start, closing), clamped to 1..4; the loop
 * thread makes the connections (at most 64 at once). */
struct tpf_waits *tpf_waits_new(struct tpf_transport *t, int window, int beat, int helpers);
/* Wait on worker `worker` of node (node, live: borrowed until done). The
 * callbacks run on the waits' threads, never two at once for a wait. */
struct tpf_wait *tpf_waits_add(struct tpf_waits *ws, const struct tpf_state_node *node,
			       const struct tpf_live_node *live, int worker,
			       const struct tpf_wait_cb *cb);
/* Ask w to end (it is done within a connect's timeout at most). */
void tpf_waits_stop(struct tpf_wait *w);
/* Has w ended (no thread touches it any more, its connection closed)? */
int tpf_waits_done(struct tpf_wait *w);
/* Free a done w (NULL: no-op). */
void tpf_waits_release(struct tpf_wait *w);
/* Stop every wait, wait for them and the threads, free ws (NULL: no-op);
 * the waits are then done, to be released by their owners. */
void tpf_waits_free(struct tpf_waits *ws);

/* ---- job waits: a job's end seen at once (engine/watch/watch_attach.c) -------- */

struct tpf_attacher;

/* An attacher for the loop with options o (borrowed: must outlive it). Its
 * wait window is TPUFORM_ATTACH_WINDOW seconds (default 10). */
struct tpf_attacher *tpf_attacher_new(const struct tpf_watch_opts *o);

/*
 * Keep one waiting connection (a thread, engine/workers/provision.h
 * tpf_provision_wait) on every provisioned worker of every READY node of
 * the refreshed session s, and stop those of workers that left (a new VM
 * id is a new worker). The first call opens the attacher's own session
 * (fleet file, state, provider; no lock) to connect with. NULL a: no-op.
 */
void tpf_attacher_sync(struct tpf_attacher *a, const struct tpf_pipeline *s);

/* A counter that goes up each time a wait learns that a job ended (exited,
 * or its session died): the loop compares it with the value it last saw,
 * and plans at once when it moved. 0 for NULL. */
unsigned long tpf_attacher_news(struct tpf_attacher *a);

/* When a wait's fact was learnt, monotonic seconds (tpf_attacher_take). */
struct tpf_wait_time {
	double at;     /* the wait's answer */
	double job_at; /* when the wait saw the fact's job appear (its token's
			* process group, after a token without it); 0: not seen
			* appearing (the worker's first answer, or no job) */
};

/*
 * Append what the waits of attached workers know to *facts (empty on
 * entry; the caller releases it) and set *at to a new array (caller
 * frees) of when each was learnt, index for index: facts a heal of their
 * node made stale must be dropped (tpf_healer_drop_stale_waits). Jobs
 * tpuform itself stopped (session "none", or a disruption it gave:
 * restarted, replaced, deleted) give nothing: a late answer from a heal's
 * own stop is not a failure. Detached workers give nothing (the periodic
 * probe asks them). Returns the number of facts.
 */
size_t tpf_attacher_take(struct tpf_attacher *a, struct tpf_job_facts *facts,
			 struct tpf_wait_time **at);

/*
 * An engine/pipeline/refresh.h tpf_probe_skip_fn (arg: the attacher, or NULL): 1
 * when worker `worker` of sn (this VM: its id is part of the key) is
 * attached and its wait answered within its window plus 5 s, with a fact
 * tpf_attacher_take gives. The session check then skips it: the wait
 * already reports what a probe would, and at 256 workers a probe's
 * handshakes slowed the restarts it overlapped (docs/watch.md).
 */
int tpf_attacher_covers(void *arg, const struct tpf_state_node *sn, int worker);
/* 1 once a sync has run and every worker it attaches has had its first
 * attempt end, an answer or a failed connection (a NULL attacher: 1).
 * watch holds its first session check until then (engine/watch/watch.c
 * round_run): the waits' first answers cover the workers they reach, and
 * a probe of every worker at once, beside their handshakes, doubled the
 * work of an attach (issue 28). */
int tpf_attacher_settled(struct tpf_attacher *a);

/* Stop every wait (each ends within its window) and free a (NULL: no-op). */
void tpf_attacher_free(struct tpf_attacher *a);

struct tpf_watch_lease; /* engine/watch/watch_lease.c, below */

/* Heals check the lease before they start and fence their state writes
 * with it (engine/watch/watch_lease.c); NULL: no lease (local state). */
void tpf_healer_set_lease(struct tpf_healer *h, struct tpf_watch_lease *wl);

/* ---- leadership on Cloud Storage state (engine/watch/watch_lease.c) ---------- */

/*
 * Leadership for the loop with options o when f keeps its state in Cloud
 * Storage (*out NULL, 0 for local state). Opens the lease client and a
 * backend (no request yet). TPF_ERROR with a diagnostic in d.
 */
int tpf_watch_lease_open(struct tpf_watch_lease **out, const struct tpf_watch_opts *o,
			 const struct tpf_fleet *f, struct tpf_diags *d);
/* Release the lease if held (a standby takes over at its next look) and
 * free (NULL: no-op). After every heal ended. */
void tpf_watch_lease_free(struct tpf_watch_lease *wl);

/* What one lease step found. */
enum tpf_lead {
	TPF_LEAD_UNKNOWN = -1, /* Cloud Storage could not be asked; not leading (retry later) */
	TPF_LEAD_STANDBY = 0,  /* another watch leads */
	TPF_LEAD_LEADING = 1,  /* this watch leads and may heal */
};

/*
 * One lease step now (state/lease.h tpf_lease_step). Emits the events
 * TPF_EVENT_LEASE_ACQUIRED and _LOCK_REMOVED (taken: the dead leader's
 * state lock removed, the state rewritten to fence it out), _STANDBY (once
 * per holder) and _LEASE_LOST, and the diagnostics.
 */
enum tpf_lead tpf_watch_lease_lead(struct tpf_watch_lease *wl);
/* Did the last step lead? */
int tpf_watch_lease_leading(const struct tpf_watch_lease *wl);
/* Monotonic seconds when the next step is due (no later than now + interval). */
double tpf_watch_lease_due(struct tpf_watch_lease *wl, double interval);
/* Make every state write through b check the lease first (state/backend.h
 * tpf_backend_set_fence). */
void tpf_watch_lease_fence(struct tpf_watch_lease *wl, struct tpf_backend *b);
/* state/lease.h tpf_lease_held and tpf_lease_note_lock. */
int tpf_watch_lease_held(struct tpf_watch_lease *wl, struct tpf_diags *d);
int tpf_watch_lease_note_lock(struct tpf_watch_lease *wl, const char *lock_id, int renew_now,
			      struct tpf_diags *d);

/* ---- nodes seen READY but not HEALTHY ---------------------------------- */

struct tpf_unhealthy {
	char *node;
	double since; /* monotonic seconds: first seen so, or last replaced */
	int seen;     /* still unhealthy this round */
};

struct tpf_unhealthy_set {
	struct tpf_unhealthy *items;
	size_t n, alloc;
};

void tpf_unhealthy_release(struct tpf_unhealthy_set *u);

/*
 * A READY node whose Node.health stays other than HEALTHY (TIMEOUT,
 * UNHEALTHY_TENSORFLOW, UNHEALTHY_MAINTENANCE; docs/cloud-tpu-api.md) for
 * longer than `timeout` seconds is replaced, as a preempted one is: adds a
 * replace action (reason_code "unhealthy") to p for each such desired node
 * the plan does not already act on, at most one per timeout. now: monotonic
 * seconds. A node newly seen unhealthy gives a NOTE "unhealthy"; nodes that
 * recovered or went away are forgotten. p's counts are recomputed.
 */
void tpf_watch_check_unhealthy(struct tpf_unhealthy_set *u, const struct tpf_pipeline *s,
			       struct tpf_plan *p, double timeout, double now,
			       const struct tpf_watch_opts *o);

/* ---- upcoming maintenance to the jobs (engine/watch/watch_maint.c) ----------- */

struct tpf_maint;

/* The windows told of so far: none. Free with tpf_maint_free (NULL ok). */
struct tpf_maint *tpf_maint_new(void);
void tpf_maint_free(struct tpf_maint *m);

/*
 * For each READY node of s whose live node has a maintenance window
 * (model/live.h maintenance_start) not told of yet: tell its provisioned
 * workers' jobs (engine/workers/provision.h tpf_provision_disrupt: reason
 * maintenance, deadline the window's start) and emit TPF_EVENT_MAINTENANCE
 * (ledger, webhook "maintenance", a watch line) when a job was told now
 * (not when each already had this notice). A window is told once
 * per watch, and once per job even across watches (the verb says a
 * notice twice only once); a worker that could not be told is tried again
 * next round. Blocks for the workers' connections (a window is rare).
 */
void tpf_maint_check(struct tpf_maint *m, const struct tpf_pipeline *s,
		     const struct tpf_watch_opts *o);

/* ---- notifications and metrics (engine/watch/watch_hooks.c) ------------------ */

/*
 * What the loop's events mean to the webhook (engine/telemetry/notify.h) and the
 * metrics (engine/telemetry/metrics.h): the hooks see every event the loop emits, on
 * whatever thread, before the caller's on_event does.
 */
struct tpf_watch_hooks;

/*
 * Hooks for the loop whose options are *o (the loop's own copy: its
 * on_event and ctx are replaced by the hooks' dispatcher, which passes every
 * event on to the original). Serves metrics when o->metrics_addr is set
 * (a NOTE "metrics" says where). Returns NULL when the metrics cannot be
 * served (the diagnostics were an event): the watch must not start.
 */
struct tpf_watch_hooks *tpf_watch_hooks_new(struct tpf_watch_opts *o);

/*
 * A round refreshed s (probed: its workers were asked for their sessions;
 * started: monotonic seconds when the round began, i.e. before the refresh
 * that saw what s holds). Called before the round's events are emitted.
 */
void tpf_watch_hooks_seen(struct tpf_watch_hooks *h, const struct tpf_pipeline *s, int probed,
			  double started);

/*
 * Ready the hooks for s's fleet before a heal starts: the webhook
 * configured, the run ledger open, each node's last checkpoint known (a
 * preemption's event says it). tpf_watch_hooks_seen does this too; a
 * round that heals before it (a preemption found by the first round of a
 * watch) calls this first, or that heal's events would reach neither the
 * webhook nor the ledger. started: monotonic seconds when the round began
 * (a loss its heal replaces was seen then: the preemption's elapsed).
 */
void tpf_watch_hooks_ready(struct tpf_watch_hooks *h, const struct tpf_pipeline *s,
			   double started);

/* Deliver queued notifications for up to TPUFORM_NOTIFY_DRAIN seconds (10),
 * stop serving metrics and free h (NULL: no-op). After every heal ended. */
void tpf_watch_hooks_free(struct tpf_watch_hooks *h);

#endif
