/*
 * The watch hooks' parts (engine/watch/watch_hooks.c and the watch_hooks_*.c
 * files), shared by them only. They call each other one way:
 *
 *   watch_hooks.c (dispatch, rounds, life cycle)
 *     -> watch_hooks_lost.c, watch_hooks_jobs.c, watch_hooks_fleet.c
 *     -> watch_hooks_post.c (webhook, metric, ledger, next handler)
 *     -> watch_hooks_marks.c (the tables kept across rounds)
 *
 * Every function here runs with h->mu held, unless it says otherwise.
 */
#ifndef TPF_ENGINE_WATCH_HOOKS_INTERNAL_H
#define TPF_ENGINE_WATCH_HOOKS_INTERNAL_H

#include "engine/watch/watch_internal.h"
#include "engine/ledger/ledger_losses.h"

#include <pthread.h>

struct mark {
	char *key;
	long value;
};

struct marks {
	struct mark *items;
	size_t n, alloc;
};

/* A node's last checkpoint as the round's state recorded it, for the
 * words of its preemption (engine/checkpoints.h). */
struct ckpt_seen {
	char *node, *checkpoint, *at;
};

struct lost_node {
	char *node, *code, *reason;
	double seen; /* monotonic: the start of the round that first saw it */
	int announced;
	/* some slices of a multislice node, announced at the first step of
	 * their re-creation (engine/ledger/ledger_losses.h); slices NULL: the
	 * whole node, announced at its delete */
	struct tpf_slice_loss slices;
};

struct tpf_watch_hooks {
	pthread_mutex_t mu; /* the fields below; events come from heal threads */
	struct tpf_watch_opts *o;
	tpf_watch_event_fn next;
	void *next_ctx;
	struct tpf_notifier *notifier; /* created when a fleet file has notify */
	struct tpf_metrics *metrics;   /* NULL without -metrics-addr */
	/* The run ledger (engine/ledger/ledger_writer.h), opened at the first round this
	 * watch leads; every event that passes here is written to it. */
	struct tpf_run_ledger *ledger;
	int ledger_tried;
	double ledger_metrics_at; /* monotonic: the last ledger metrics refresh; 0 never */
	/* monitoring: in the fleet file: the ledger's report written to Cloud
	 * Monitoring (engine/telemetry/monitoring_export.h), opened at the first
	 * round this watch leads with a ledger. */
	struct tpf_monitoring_export *monitoring;
	int monitoring_tried;
	double round_started;
	struct lost_node *lost;
	size_t nlost, lost_alloc;
	struct marks restarts;  /* node -> workers its restart in flight restarts */
	struct marks jobs;      /* "node/w" -> retry whose exit was reported */
	struct marks exhausted; /* "node/w" -> retry reported as exhausted */
	struct marks completed; /* node -> generation reported as completed */
	struct marks deferred;  /* group -> nodes reported waiting; "node:" + name */
	struct marks settled;   /* node -> when (monotonic ms) its last restart or
				 * replacement ended */
	struct marks steps;     /* node -> monotonic ms of its last job_step line */
	struct marks ckpts;     /* node -> step of its last checkpoint line */
	struct ckpt_seen *ck;   /* every node with a last_checkpoint, last round */
	size_t nck, ck_alloc;
	struct marks budgets;   /* "budget:" + group ("" the fleet) -> period start reported */
};

/* ---- the tables (engine/watch/watch_hooks_marks.c) ---------------------------- */

/* The mark under key, or NULL; borrowed from m. */
struct mark *tpf_hooks_mark_find(struct marks *m, const char *key);
/* Set key's mark to value (key copied; added when new). */
void tpf_hooks_mark_set(struct marks *m, const char *key, long value);
/* Forget key's mark (nothing when there is none). */
void tpf_hooks_mark_remove(struct marks *m, const char *key);
/* Free every mark and zero m. */
void tpf_hooks_marks_release(struct marks *m);
/* The lost node called node, or NULL; borrowed from h. */
struct lost_node *tpf_hooks_lost_find(struct tpf_watch_hooks *h, const char *node);
/* A probe that races a restart or replacement of node (in flight, or ended
 * after this round's refresh began) may see a session between two tries,
 * and the state of before: 1 when what it says is about neither. */
int tpf_hooks_unsettled(struct tpf_watch_hooks *h, const char *node);

/* ---- what an event means (engine/watch/watch_hooks_post.c) -------------------- */

/* Post ev as the webhook and count it as the metric its kind's row says
 * (engine/events.c); a node's deferral is posted once until its create
 * completes. ev is borrowed. */
void tpf_hooks_derive(struct tpf_watch_hooks *h, const struct tpf_event *ev);
/* Pass ev to the next handler (o->on_event before the hooks), as a
 * TPF_WATCH_EVENT. Needs no lock. */
void tpf_hooks_forward(struct tpf_watch_hooks *h, const struct tpf_event *ev);
/* A moment the hooks concluded: posted, counted, written to the run
 * ledger and passed on like any other event. */
void tpf_hooks_conclude(struct tpf_watch_hooks *h, const struct tpf_event *ev);

/* ---- lost nodes and checkpoints (engine/watch/watch_hooks_lost.c) ------------- */

/* The plan's actions: a replace of a lost node (its reason code says so)
 * is remembered until its new create completes; a restart is in flight
 * until it ends, and one for a stalled job is said (stalled). */
void tpf_hooks_on_actions(struct tpf_watch_hooks *h, const struct tpf_plan *p);
/* An executor step of a heal: a lost node's delete starts its replacement
 * (preempted), its create's end completes it (replaced); a restart's or
 * create's end settles the node. */
void tpf_hooks_on_step(struct tpf_watch_hooks *h, const struct tpf_event *ev);
/* Keep each node's last checkpoint of s's state, for the words of a
 * preemption; tpf_hooks_ckpt_forget drops them (h->ck stays allocated). */
void tpf_hooks_seen_checkpoints(struct tpf_watch_hooks *h, const struct tpf_pipeline *s);
void tpf_hooks_ckpt_forget(struct tpf_watch_hooks *h);

/* ---- what a round saw of the jobs (engine/watch/watch_hooks_jobs.c) ----------- */

/* job_failed / job_succeeded / restarts_exhausted for one worker's report
 * (the plan's rule, tpf_worker_exhausted), once per worker and retry. */
void tpf_hooks_seen_job(struct tpf_watch_hooks *h, const struct tpf_pipeline *s,
			const struct tpf_job_fact *sf);
/* Worker 0's progress, for the run ledger: each new checkpoint, and its
 * step now and then. */
void tpf_hooks_seen_progress(struct tpf_watch_hooks *h, const struct tpf_pipeline *s,
			     const struct tpf_job_fact *sf);
/* completed: every worker of desired node dn reports exit 0 (once per
 * generation). */
void tpf_hooks_seen_completion(struct tpf_watch_hooks *h, const struct tpf_pipeline *s,
			       const struct tpf_desired_node *dn);

/* ---- what a round saw of the fleet (engine/watch/watch_hooks_fleet.c) --------- */

/* quota_deferred for groups with more nodes waiting than last said. */
void tpf_hooks_seen_quota(struct tpf_watch_hooks *h, const struct tpf_pipeline *s);
/* budget_reached once per period and scope. */
void tpf_hooks_seen_budget(struct tpf_watch_hooks *h, const struct tpf_pipeline *s);
/* The node gauges, the workers by job state (probed: the round checked the
 * sessions) and the notifier's counts; h->metrics is not NULL. */
void tpf_hooks_seen_metrics(struct tpf_watch_hooks *h, const struct tpf_pipeline *s, int probed);

#endif
