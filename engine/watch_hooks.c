/*
 * The watch loop's notifications and metrics (engine/watch_internal.h):
 * what the loop's events and sessions mean as webhook events
 * (engine/notify.h) and metrics (engine/metrics.h). Which webhook and which
 * metric an event stands for is its kind's row in engine/events.c (derive,
 * below); what the hooks add is memory across rounds: they conclude the
 * moments below from several events and sessions (typed events of their
 * own, posted, counted and passed on), each once.
 *
 * Where each notification comes from (docs/watch.md "Notifications"):
 *   preempted        a replace the plan made for a lost node (reason codes
 *                    marked lost in plan/reason_code.c), sent when its delete starts: once
 *                    per replacement, however many rounds reported it
 *   replaced         that node's new create completed
 *   job_failed       a worker reports its job exited non-zero, or its
 *   job_succeeded    session died; exited 0
 *   restarts_exhausted  such a job the restart policy would restart, but
 *                    its unit's restarts reached its group's max_restarts
 *                    (plan/plan.h tpf_worker_exhausted: the plan's rule)
 *   quota_deferred   a group's nodes wait for quota (more than last said),
 *                    or a create found no zone that can take the node now
 *   completed        every worker of a node reports its job exited 0
 *   stalled          a restart the plan makes for a stalled job (reason
 *                    code "stalled"; the plan has no stall detector yet)
 * Job events are keyed by worker and retry (TPUFORM_RETRY), so each try
 * is reported once per watch process; a new watch reports a job that is
 * still exited once more.
 */
#include "engine/checkpoints.h"
#include "engine/ledger.h"
#include "engine/metrics.h"
#include "engine/notify.h"
#include "engine/watch_internal.h"
#include "util/env.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRAIN_DEFAULT 10.0 /* seconds to deliver what is queued at exit */

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
};

struct tpf_watch_hooks {
	pthread_mutex_t mu; /* the fields below; events come from heal threads */
	struct tpf_watch_opts *o;
	tpf_watch_event_fn next;
	void *next_ctx;
	struct tpf_notifier *notifier; /* created when a fleet file has notify */
	struct tpf_metrics *metrics;   /* NULL without -metrics-addr */
	/* The run ledger (engine/ledger.h), opened at the first round this
	 * watch leads; every event that passes here is written to it. */
	struct tpf_run_ledger *ledger;
	int ledger_tried;
	double ledger_metrics_at; /* monotonic: the last ledger metrics refresh; 0 never */
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

/* At most one job_step line per node this often: a 1,000-node fleet adds
 * 100 lines a minute, not one per probe (docs/ledger.md). */
#define STEP_EVERY_MS 600000L

/* ---- small tables ------------------------------------------------------ */

static struct mark *mark_find(struct marks *m, const char *key)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->items[i].key, key))
			return &m->items[i];
	return NULL;
}

static void mark_set(struct marks *m, const char *key, long value)
{
	struct mark *k = mark_find(m, key);
	if (!k) {
		XGROW(m->items, m->n + 1, m->alloc);
		k = &m->items[m->n++];
		k->key = xstrdup(key);
	}
	k->value = value;
}

static void mark_remove(struct marks *m, const char *key)
{
	struct mark *k = mark_find(m, key);
	if (k) {
		free(k->key);
		*k = m->items[--m->n];
	}
}

static void marks_release(struct marks *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->items[i].key);
	free(m->items);
	memset(m, 0, sizeof(*m));
}

static struct lost_node *lost_find(struct tpf_watch_hooks *h, const char *node)
{
	for (size_t i = 0; i < h->nlost; i++)
		if (!strcmp(h->lost[i].node, node))
			return &h->lost[i];
	return NULL;
}

static void lost_remove(struct tpf_watch_hooks *h, struct lost_node *l)
{
	free(l->node);
	free(l->code);
	free(l->reason);
	*l = h->lost[--h->nlost];
}

/* ---- what an event means: its webhook and its metric, by kind ---------- */

/* The webhook document for ev: "NODE: MESSAGE", "NODE worker W: MESSAGE"
 * or, for the fleet, "MESSAGE". */
static void post(struct tpf_watch_hooks *h, int event, const struct tpf_event *ev)
{
	if (!h->notifier)
		return;
	char msg[600];
	const char *m = ev->message ? ev->message : tpf_event_info(ev->kind)->text;
	if (ev->node && ev->worker >= 0)
		snprintf(msg, sizeof(msg), "%s worker %d: %s", ev->node, ev->worker, m);
	else if (ev->node)
		snprintf(msg, sizeof(msg), "%s: %s", ev->node, m);
	else
		snprintf(msg, sizeof(msg), "%s", m);
	struct tpf_notify_event_data d = { (enum tpf_notify_event)event, ev->node, ev->worker, msg,
					   ev->reason, ev->exit_code, ev->last_log, tpf_now_wall() };
	tpf_notifier_post(h->notifier, &d);
}

/* A node's deferral is posted once until its create completes (h->mu held). */
static int repeated(struct tpf_watch_hooks *h, const struct tpf_event *ev)
{
	if (ev->kind != TPF_EVENT_DEFERRED || !ev->node)
		return 0;
	char key[300];
	snprintf(key, sizeof(key), "node:%s", ev->node);
	if (mark_find(&h->deferred, key))
		return 1;
	mark_set(&h->deferred, key, 1);
	return 0;
}

/* Post and count ev as its kind's row (engine/events.c) says; h->mu held. */
static void derive(struct tpf_watch_hooks *h, const struct tpf_event *ev)
{
	const struct tpf_event_info *in = tpf_event_info(ev->kind);
	if (h->metrics) {
		switch (in->metric) {
		case TPF_METRIC_PREEMPTIONS:
			tpf_metrics_preemption(h->metrics, ev->reason, ev->elapsed);
			break;
		case TPF_METRIC_REPLACEMENTS:
			tpf_metrics_replacement(h->metrics);
			break;
		case TPF_METRIC_RESTARTS:
			tpf_metrics_restarts(h->metrics, ev->workers > 0 ? ev->workers : 0);
			break;
		case TPF_METRIC_ROUND_FAILURES:
			tpf_metrics_round_failed(h->metrics);
			break;
		case TPF_METRIC_NONE:
			break;
		}
	}
	if (in->notify >= 0 && !repeated(h, ev))
		post(h, in->notify, ev);
}

static void forward(struct tpf_watch_hooks *h, const struct tpf_event *ev)
{
	struct tpf_watch_event we = { .kind = TPF_WATCH_EVENT, .event = ev };
	if (h->next)
		h->next(&we, h->next_ctx);
}

/* A moment the hooks concluded (h->mu held): posted, counted, and passed on
 * like any other event. */
static void conclude(struct tpf_watch_hooks *h, const struct tpf_event *ev)
{
	derive(h, ev);
	tpf_run_ledger_event(h->ledger, ev);
	forward(h, ev);
}

/* ---- events of the loop --------------------------------------------------- */

static void on_actions(struct tpf_watch_hooks *h, const struct tpf_plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct tpf_action *a = &p->actions[i];
		if (a->kind == TPF_ACT_REPLACE && tpf_reason_info(a->reason_kind)->lost &&
		    !lost_find(h, a->node)) {
			XGROW(h->lost, h->nlost + 1, h->lost_alloc);
			struct lost_node *l = &h->lost[h->nlost++];
			l->node = xstrdup(a->node);
			l->code = xstrdup(a->reason_code);
			l->reason = xstrdup(a->reason ? a->reason : a->reason_code);
			l->seen = h->round_started;
			l->announced = 0;
		}
		if (a->kind != TPF_ACT_RESTART || mark_find(&h->restarts, a->node))
			continue;
		mark_set(&h->restarts, a->node, (long)a->nworkers);
		if (a->reason_kind == TPF_REASON_STALLED) {
			struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_STALLED);
			ev.node = a->node;
			ev.reason = a->reason_code;
			ev.message = a->reason ? a->reason : "stalled";
			conclude(h, &ev);
		}
	}
}

static void ckpt_forget(struct tpf_watch_hooks *h)
{
	for (size_t i = 0; i < h->nck; i++) {
		free(h->ck[i].node);
		free(h->ck[i].checkpoint);
		free(h->ck[i].at);
	}
	h->nck = 0;
}

/* Keep each node's last checkpoint of s's state (h->mu held). */
static void seen_checkpoints(struct tpf_watch_hooks *h, const struct tpf_session *s)
{
	ckpt_forget(h);
	for (size_t i = 0; i < s->state.nnodes; i++) {
		const struct tpf_state_node *sn = &s->state.nodes[i];
		if (!sn->last_checkpoint)
			continue;
		XGROW(h->ck, h->nck + 1, h->ck_alloc);
		h->ck[h->nck].node = xstrdup(sn->name);
		h->ck[h->nck].checkpoint = xstrdup(sn->last_checkpoint);
		h->ck[h->nck++].at = xstrdup(sn->checkpoint_at);
	}
}

/* "last checkpoint 1200, 4m ago" for node (caller frees; h->mu held). */
static char *ckpt_words(struct tpf_watch_hooks *h, const char *node)
{
	struct tpf_state_node sn;
	memset(&sn, 0, sizeof(sn));
	for (size_t i = 0; i < h->nck; i++) {
		if (!strcmp(h->ck[i].node, node)) {
			sn.last_checkpoint = h->ck[i].checkpoint;
			sn.checkpoint_at = h->ck[i].at;
		}
	}
	return tpf_checkpoint_words(&sn, tpf_now_wall());
}

/* A lost node's delete started: it is being replaced. The words say how
 * much work the new VM's job starts from (docs/recovery.md). */
static void replacement_started(struct tpf_watch_hooks *h, struct lost_node *l)
{
	l->announced = 1;
	char *words = ckpt_words(h, l->node);
	char *msg = xasprintf("%s: replacing it; %s", l->reason, words);
	free(words);
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_PREEMPTED);
	ev.node = l->node;
	ev.reason = l->code;
	ev.elapsed = tpf_now_mono() - l->seen; /* the detection latency */
	ev.message = msg;
	conclude(h, &ev);
	free(msg);
}

/* The lost node's new create completed (done: READY, CREATED or
 * CAPACITY_WAITING). */
static void replacement_done(struct tpf_watch_hooks *h, struct lost_node *l,
			     const struct tpf_event *done)
{
	/* queued again, waiting for capacity, or not READY yet */
	char *msg = done->kind != TPF_EVENT_READY
			    ? xasprintf("replaced (%s): %s", l->code,
					done->message ? done->message : "created")
			    : xasprintf("replaced (%s): the new node is READY %.0f s after the loss "
					"was seen [id=%s]",
					l->code, tpf_now_mono() - l->seen, done->id ? done->id : "?");
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_REPLACED);
	ev.node = l->node;
	ev.reason = l->code;
	ev.id = done->id;
	ev.message = msg;
	conclude(h, &ev);
	free(msg);
	lost_remove(h, l);
}

/* What an executor step of a heal means to the hooks (h->mu held). */
static void on_step(struct tpf_watch_hooks *h, const struct tpf_event *ev)
{
	const struct tpf_event_info *in = tpf_event_info(ev->kind);
	if (in->hook == TPF_HOOK_NONE || !ev->node)
		return;
	int create = ev->action == TPF_EVENT_CREATING, restart = ev->action == TPF_EVENT_RESTARTING;
	int ended = in->hook == TPF_HOOK_COMPLETE || in->hook == TPF_HOOK_ERRORED;
	struct lost_node *l = lost_find(h, ev->node);
	if (ev->kind == TPF_EVENT_DELETING && l && !l->announced)
		replacement_started(h, l);
	if (create && in->hook == TPF_HOOK_COMPLETE) {
		char key[300];
		snprintf(key, sizeof(key), "node:%s", ev->node);
		mark_remove(&h->deferred, key);
		if (l)
			replacement_done(h, l, ev);
	}
	if (ended && (restart || create))
		mark_set(&h->settled, ev->node, (long)(tpf_now_mono() * 1000));
	if (ended && restart)
		mark_remove(&h->restarts, ev->node);
}

/* Every event of the loop passes here first. The notifier's warnings do
 * not (notify_warn): they come from threads that may hold h->mu. */
static void dispatch(const struct tpf_watch_event *ev, void *ctx)
{
	struct tpf_watch_hooks *h = ctx;
	switch (ev->kind) {
	case TPF_WATCH_ACTIONS:
		if (!ev->pending) {
			pthread_mutex_lock(&h->mu);
			on_actions(h, ev->plan);
			pthread_mutex_unlock(&h->mu);
		}
		break;
	case TPF_WATCH_EVENT:
		pthread_mutex_lock(&h->mu);
		on_step(h, ev->event);
		derive(h, ev->event);
		/* After on_step: what it concluded from this event (a
		 * preemption seen at a delete) is written before the event. */
		tpf_run_ledger_event(h->ledger, ev->event);
		pthread_mutex_unlock(&h->mu);
		break;
	case TPF_WATCH_SUMMARY:
		if (h->metrics)
			tpf_metrics_round_done(h->metrics, tpf_now_wall());
		break;
	case TPF_WATCH_DIAGS:
		break;
	}
	if (h->next)
		h->next(ev, h->next_ctx);
}

/* The notifier's warnings, as TPF_EVENT_NOTIFY_PROBLEM (straight to the
 * caller: nothing to post or count). */
static void notify_warn(const char *msg, void *ctx)
{
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_NOTIFY_PROBLEM);
	ev.message = msg;
	forward(ctx, &ev);
}

/* ---- what a round saw ------------------------------------------------------- */

/* Worker 0's progress, for the run ledger: each new checkpoint, and its
 * step now and then (h->mu held). */
static void seen_progress(struct tpf_watch_hooks *h, const struct tpf_session *s,
			  const struct tpf_job_fact *sf)
{
	if (!sf->have_progress || sf->worker != 0 || !h->ledger)
		return;
	const struct tpf_state_node *sn = tpf_state_find((struct tpf_state *)&s->state, sf->node);
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_CHECKPOINT);
	ev.node = sf->node;
	ev.worker = 0;
	ev.generation = sn ? sn->generation : -1;
	struct mark *k = mark_find(&h->ckpts, sf->node);
	if (sf->checkpoint_step >= 0 && (!k || k->value != sf->checkpoint_step)) {
		mark_set(&h->ckpts, sf->node, sf->checkpoint_step);
		ev.step = sf->checkpoint_step;
		tpf_run_ledger_event(h->ledger, &ev);
	}
	long now = (long)(tpf_now_mono() * 1000);
	k = mark_find(&h->steps, sf->node);
	if (sf->step >= 0 && (!k || now - k->value >= STEP_EVERY_MS)) {
		mark_set(&h->steps, sf->node, now);
		ev.kind = ev.action = TPF_EVENT_JOB_STEP;
		ev.step = sf->step;
		tpf_run_ledger_event(h->ledger, &ev);
	}
}

/* A probe that races a restart or replacement of node (in flight, or ended
 * after this round's refresh began) may see a session between two tries,
 * and the state of before: what it says is about neither. */
static int unsettled(struct tpf_watch_hooks *h, const char *node)
{
	const struct mark *settled = mark_find(&h->settled, node);
	return mark_find(&h->restarts, node) || lost_find(h, node) ||
	       (settled && (double)settled->value / 1000 >= h->round_started);
}

/* restarts_exhausted, once per worker and retry: its job calls for a
 * restart (failed, died or stalled) and its group's max_restarts is used
 * up (the plan's rule: tpf_worker_exhausted). */
static void exhausted(struct tpf_watch_hooks *h, const struct tpf_session *s,
		      const struct tpf_state_node *sn, struct tpf_event *ev, const char *key,
		      const char *how)
{
	struct mark *k = mark_find(&h->exhausted, key);
	if (k && k->value == ev->retry)
		return;
	mark_set(&h->exhausted, key, ev->retry);
	char msg[200];
	ev->kind = ev->action = TPF_EVENT_RESTARTS_EXHAUSTED;
	/* sn is never NULL here (its callers found a worker of it); the
	 * guard is for the reader and the analyzer, which cannot see that */
	snprintf(msg, sizeof(msg), "the job %s and max_restarts (%d) is used up: it is not restarted",
		 how, tpf_fleet_job_policy(&s->fleet, sn ? sn->group : NULL)->max_restarts);
	ev->message = msg;
	conclude(h, ev);
	ev->message = NULL;
}

/* A running job that stalled past its stall_timeout, with no restart left:
 * restarts_exhausted too (docs/watch.md "Watch", webhooks), as for a failure. */
static void seen_stall(struct tpf_watch_hooks *h, const struct tpf_session *s,
		       const struct tpf_job_fact *sf, const struct tpf_state_node *sn)
{
	const struct tpf_job_policy *pol = tpf_fleet_job_policy(&s->fleet, sn ? sn->group : NULL);
	if (!sn || !tpf_job_stalled(pol, sf) || !tpf_state_node_worker(sn, sf->worker) ||
	    !tpf_worker_exhausted(&s->fleet, sn, sf->worker, &s->facts))
		return;
	char key[300];
	snprintf(key, sizeof(key), "%s/%d", sf->node, sf->worker);
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_RESTARTS_EXHAUSTED);
	ev.node = sf->node;
	ev.worker = sf->worker;
	ev.generation = sn->generation;
	ev.retry = sn->generation + sn->workers[sf->worker].restarts;
	ev.last_log = sf->last_log;
	exhausted(h, s, sn, &ev, key, "stalled");
}

/* job_failed / job_succeeded / restarts_exhausted for one worker's report. */
static void seen_job(struct tpf_watch_hooks *h, const struct tpf_session *s,
		     const struct tpf_job_fact *sf)
{
	if (!sf->job_state || unsettled(h, sf->node))
		return;
	struct tpf_state_node *sn = tpf_state_find((struct tpf_state *)&s->state, sf->node);
	if (!strcmp(sf->job_state, "alive")) {
		seen_stall(h, s, sf, sn);
		return;
	}
	if (strcmp(sf->job_state, "exited") && strcmp(sf->job_state, "dead"))
		return;
	const struct tpf_state_worker *sw = tpf_state_node_worker(sn, sf->worker);
	long retry = (sn ? sn->generation : 0) + (sw ? sw->restarts : 0);
	int died = !strcmp(sf->job_state, "dead"), ok = !died && sf->exit_code == 0;
	char key[300];
	snprintf(key, sizeof(key), "%s/%d", sf->node, sf->worker);
	struct mark *k = mark_find(&h->jobs, key);
	struct tpf_event ev = TPF_EVENT_INIT(ok ? TPF_EVENT_JOB_SUCCEEDED : TPF_EVENT_JOB_FAILED);
	ev.node = sf->node;
	ev.worker = sf->worker;
	ev.generation = sn ? sn->generation : -1;
	ev.retry = retry;
	ev.exit_code = died ? -1 : sf->exit_code;
	ev.last_log = sf->last_log;
	char msg[200];
	if (!k || k->value != retry) {
		mark_set(&h->jobs, key, retry);
		if (died)
			snprintf(msg, sizeof(msg), "the job's session died (retry %ld)", retry);
		else
			snprintf(msg, sizeof(msg), "the job %s (exit %d, retry %ld)",
				 ok ? "finished" : "failed", sf->exit_code, retry);
		ev.message = msg;
		conclude(h, &ev);
	}
	if (!sw || !tpf_worker_exhausted(&s->fleet, sn, sf->worker, &s->facts))
		return;
	exhausted(h, s, sn, &ev, key, died ? "lost its session" : "failed");
}

/* completed: every worker of a desired node reports exit 0. */
static void seen_completion(struct tpf_watch_hooks *h, const struct tpf_session *s,
			    const struct tpf_desired_node *dn)
{
	int done = 0;
	if (unsettled(h, dn->name))
		return;
	for (int w = 0; w < dn->recipe.workers; w++) {
		const struct tpf_job_fact *sf = tpf_job_facts_find(&s->facts, dn->name, w);
		done += sf && sf->job_state && !strcmp(sf->job_state, "exited") && sf->exit_code == 0;
	}
	struct tpf_state_node *sn = tpf_state_find((struct tpf_state *)&s->state, dn->name);
	long generation = sn ? sn->generation : 0;
	struct mark *k = mark_find(&h->completed, dn->name);
	if (!dn->recipe.workers || done < dn->recipe.workers || (k && k->value == generation))
		return;
	mark_set(&h->completed, dn->name, generation);
	char *msg = xasprintf("completed: the job exited 0 on all %d worker%s", dn->recipe.workers,
			      dn->recipe.workers > 1 ? "s" : "");
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_COMPLETED);
	ev.node = dn->name;
	ev.group = dn->group;
	ev.zone = dn->recipe.zone;
	ev.generation = sn ? sn->generation : -1;
	ev.message = msg;
	conclude(h, &ev);
	free(msg);
}

/* quota_deferred for groups with more nodes waiting than last said. */
static void seen_quota(struct tpf_watch_hooks *h, const struct tpf_session *s)
{
	for (size_t g = 0; g < s->fleet.ngroups; g++) {
		const struct tpf_group *gr = &s->fleet.groups[g];
		long waiting = 0;
		for (size_t i = 0; i < s->desired.n; i++)
			waiting += s->desired.nodes[i].deferred && !s->desired.nodes[i].over_budget &&
				   !strcmp(s->desired.nodes[i].group, gr->name);
		struct mark *k = mark_find(&h->deferred, gr->name);
		if (!waiting) {
			mark_remove(&h->deferred, gr->name);
			continue;
		}
		if (k && k->value >= waiting)
			continue;
		mark_set(&h->deferred, gr->name, waiting);
		/* A Compute Engine group has a machine type, no accelerator type. */
		const char *type = gr->accelerator_type ? gr->accelerator_type
							: gr->compute.machine_type;
		char *msg = xasprintf("%ld of %d nodes of group '%s' wait for quota (%s %s)", waiting,
				      gr->count, gr->name, type ? type : "?",
				      gr->spot ? "spot" : gr->preemptible ? "preemptible" : "on-demand");
		struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_QUOTA_WAITING);
		ev.group = gr->name;
		ev.message = msg;
		conclude(h, &ev);
		free(msg);
	}
}

/* budget_reached once per period and scope: not when the ledger already
 * holds one for this period (another watch, or this one before a
 * restart, said it), nor twice from this process. */
static void seen_budget(struct tpf_watch_hooks *h, const struct tpf_session *s)
{
	for (size_t i = 0; i < s->nbudgets; i++) {
		const struct tpf_budget_status *b = &s->budgets[i];
		if (!tpf_budget_reached(b) || b->reported)
			continue;
		char *key = xasprintf("budget:%s", b->group ? b->group : "");
		struct mark *k = mark_find(&h->budgets, key);
		if (!k || k->value != (long)b->period_start) {
			mark_set(&h->budgets, key, (long)b->period_start);
			struct tpf_buf msg = TPF_BUF_INIT;
			tpf_buf_adds(&msg, "budget reached: ");
			tpf_budget_describe(b, s->fleet.name, &msg);
			tpf_buf_adds(&msg, b->on_budget == TPF_ON_BUDGET_DELETE
						   ? ": deleting its nodes (on_budget: delete)"
						   : ": creating no more nodes this period");
			struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_BUDGET_REACHED);
			ev.group = b->group;
			ev.reason = "budget";
			ev.message = msg.buf;
			conclude(h, &ev);
			tpf_buf_release(&msg);
		}
		free(key);
	}
}

static void seen_metrics(struct tpf_watch_hooks *h, const struct tpf_session *s, int probed)
{
	struct tpf_metrics_nodes t = TPF_METRICS_NODES_INIT;
	for (size_t i = 0; i < s->desired.n; i++) {
		const struct tpf_desired_node *dn = &s->desired.nodes[i];
		tpf_metrics_nodes_add(&t, dn->group,
				      tpf_watch_node_condition(dn, tpf_live_set_find(&s->live, dn->name)));
	}
	tpf_metrics_set_nodes(h->metrics, s->fleet.name, &t);
	if (probed) {
		long counts[TPF_METRICS_NSESSIONS] = { 0 };
		for (size_t i = 0; i < s->facts.n; i++)
			counts[tpf_metrics_session_index(s->facts.items[i].job_state)]++;
		tpf_metrics_set_workers(h->metrics, counts);
	}
	if (h->notifier) {
		struct tpf_notify_stats st;
		tpf_notifier_stats(h->notifier, &st);
		tpf_metrics_set_notifications(h->metrics, st.sent, st.failed, st.dropped);
	}
}

/* Start, reconfigure or mute the notifier for this round's fleet file. */
static void configure_notifier(struct tpf_watch_hooks *h, const struct tpf_session *s)
{
	if (!h->notifier && s->fleet.notify.webhook) {
		struct tpf_diags d = TPF_DIAGS_INIT;
		struct tpf_notify_opts no = { .warn = notify_warn, .ctx = h };
		if (tpf_env_seconds("TPUFORM_NOTIFY_BACKOFF", &no.backoff, &d) ||
		    tpf_notifier_new(&h->notifier, &no, &d))
			tpf_watch_diags(h->o, &d);
		tpf_diags_release(&d);
	}
	if (h->notifier)
		tpf_notifier_configure(h->notifier, &s->fleet.notify, s->fleet.name, &s->fleet.secrets);
}

/* The run ledger's metrics and page, from the whole ledger: at the first
 * round, then every $TPUFORM_LEDGER_REFRESH (5 min). Outside h->mu: it
 * reads the whole ledger, and heals must not wait for it. */
static void ledger_metrics(struct tpf_watch_hooks *h, const struct tpf_session *s)
{
	double every = 300;
	struct tpf_diags d = TPF_DIAGS_INIT;
	if (!h->metrics || !h->ledger ||
	    tpf_env_seconds("TPUFORM_LEDGER_REFRESH", &every, &d) ||
	    (h->ledger_metrics_at > 0 && tpf_now_mono() - h->ledger_metrics_at < every)) {
		tpf_watch_diags(h->o, &d);
		tpf_diags_release(&d);
		return;
	}
	h->ledger_metrics_at = tpf_now_mono();
	tpf_metrics_ledger_refresh(h->metrics, &s->fleet, &d);
	tpf_watch_diags(h->o, &d);
	tpf_diags_release(&d);
}

/* Where events go and what they say of a node, from s (h->mu held): the
 * webhook, the run ledger (opened at the first call), each node's last
 * checkpoint. */
static void hooks_open(struct tpf_watch_hooks *h, const struct tpf_session *s)
{
	configure_notifier(h, s);
	if (!h->ledger_tried) {
		struct tpf_diags d = TPF_DIAGS_INIT;
		h->ledger_tried = 1;
		h->ledger = tpf_run_ledger_open(&s->fleet, &s->state, "watch", &d);
		tpf_watch_diags(h->o, &d);
		tpf_diags_release(&d);
	} else {
		tpf_run_ledger_learn(h->ledger, &s->state);
	}
	seen_checkpoints(h, s);
}

void tpf_watch_hooks_ready(struct tpf_watch_hooks *h, const struct tpf_session *s)
{
	pthread_mutex_lock(&h->mu);
	hooks_open(h, s);
	pthread_mutex_unlock(&h->mu);
}

void tpf_watch_hooks_seen(struct tpf_watch_hooks *h, const struct tpf_session *s, int probed,
			  double started)
{
	pthread_mutex_lock(&h->mu);
	h->round_started = started;
	hooks_open(h, s);
	seen_quota(h, s);
	seen_budget(h, s);
	for (size_t i = 0; probed && i < s->facts.n; i++) {
		seen_job(h, s, &s->facts.items[i]);
		seen_progress(h, s, &s->facts.items[i]);
	}
	for (size_t i = 0; probed && i < s->desired.n; i++)
		seen_completion(h, s, &s->desired.nodes[i]);
	if (h->metrics)
		seen_metrics(h, s, probed);
	pthread_mutex_unlock(&h->mu);
	ledger_metrics(h, s);
}

/* ---- life cycle ------------------------------------------------------------ */

struct tpf_watch_hooks *tpf_watch_hooks_new(struct tpf_watch_opts *o)
{
	struct tpf_watch_hooks *h = xcalloc(1, sizeof(*h));
	pthread_mutex_init(&h->mu, NULL);
	h->o = o;
	h->next = o->on_event;
	h->next_ctx = o->ctx;
	o->on_event = dispatch;
	o->ctx = h;
	if (!o->metrics_addr)
		return h;
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *bound = NULL;
	int loopback = 0;
	h->metrics = tpf_metrics_new();
	if (tpf_metrics_serve(h->metrics, o->metrics_addr, &bound, &loopback, &d)) {
		tpf_watch_diags(o, &d);
		tpf_diags_release(&d);
		tpf_watch_hooks_free(h);
		return NULL;
	}
	char *msg = xasprintf("serving metrics on http://%s/metrics%s", bound,
			      loopback ? "" : " (reachable from other machines)");
	tpf_watch_note(o, TPF_EVENT_METRICS, NULL, msg);
	free(msg);
	free(bound);
	return h;
}

void tpf_watch_hooks_free(struct tpf_watch_hooks *h)
{
	if (!h)
		return;
	if (h->notifier) {
		struct tpf_diags d = TPF_DIAGS_INIT;
		double drain = DRAIN_DEFAULT;
		if (tpf_env_seconds("TPUFORM_NOTIFY_DRAIN", &drain, &d))
			tpf_watch_diags(h->o, &d);
		tpf_diags_release(&d);
		tpf_notifier_free(h->notifier, drain);
	}
	tpf_metrics_free(h->metrics);
	if (h->ledger) {
		struct tpf_diags d = TPF_DIAGS_INIT;
		tpf_run_ledger_close(h->ledger, &d);
		tpf_watch_diags(h->o, &d);
		tpf_diags_release(&d);
	}
	h->o->on_event = h->next;
	h->o->ctx = h->next_ctx;
	for (size_t i = 0; i < h->nlost; i++) {
		free(h->lost[i].node);
		free(h->lost[i].code);
		free(h->lost[i].reason);
	}
	free(h->lost);
	marks_release(&h->restarts);
	marks_release(&h->jobs);
	marks_release(&h->exhausted);
	marks_release(&h->completed);
	marks_release(&h->deferred);
	marks_release(&h->budgets);
	marks_release(&h->settled);
	marks_release(&h->steps);
	marks_release(&h->ckpts);
	ckpt_forget(h);
	free(h->ck);
	pthread_mutex_destroy(&h->mu);
	free(h);
}
