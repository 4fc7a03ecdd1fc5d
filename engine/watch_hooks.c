/*
 * The watch loop's notifications and metrics (engine/watch_internal.h):
 * what the loop's events and sessions mean as webhook events
 * (engine/notify.h) and metrics (engine/metrics.h).
 *
 * Where each notification comes from (README.md "Notifications"):
 *   preempted        a replace the plan made for a lost node (reason codes
 *                    in lost_reasons), sent when its delete starts: once
 *                    per replacement, however many rounds reported it
 *   replaced         that node's new create completed
 *   job_failed       a worker reports its job exited non-zero, or its
 *   job_succeeded    session died; exited 0
 *   restarts_exhausted  such a job the restart policy would restart, but
 *                    the worker's restarts reached max_restarts
 *   quota_deferred   a group's nodes wait for quota (more than last said),
 *                    or a create found no zone that can take the node now
 *   completed        every worker of a node reports its job exited 0
 *   stalled          a restart the plan makes for a stalled job (reason
 *                    code "stalled"; the plan has no stall detector yet)
 * Job events are keyed by worker and retry (TPUFORM_RETRY), so each try
 * is reported once per watch process; a new watch reports a job that is
 * still exited once more.
 */
#include "engine/metrics.h"
#include "engine/notify.h"
#include "engine/watch_internal.h"
#include "util/env.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRAIN_DEFAULT 10.0 /* seconds to deliver what is queued at exit */

/* Reason codes (plan/diff.c, engine/watch_unhealthy.c) of a node that was
 * lost and is replaced. */
static const char *const lost_reasons[] = {
	"preempted", "terminated", "stopped", "stopping", "queued_failed",
	"queued_suspended", "queued_node_gone", "unhealthy", NULL,
};

struct mark {
	char *key;
	long value;
};

struct marks {
	struct mark *items;
	size_t n, alloc;
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
};

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

static int is_lost_reason(const char *code)
{
	for (int i = 0; code && lost_reasons[i]; i++)
		if (!strcmp(code, lost_reasons[i]))
			return 1;
	return 0;
}

/* ---- posting ------------------------------------------------------------- */

struct post_args {
	enum tpf_notify_event event;
	const char *node;
	int worker;
	const char *reason;
	int exit_code;
	const char *last_log;
};

static void post(struct tpf_watch_hooks *h, const struct post_args *a, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void post(struct tpf_watch_hooks *h, const struct post_args *a, const char *fmt, ...)
{
	if (!h->notifier)
		return;
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct tpf_notify_event_data ev = { a->event, a->node, a->worker, msg, a->reason,
					    a->exit_code, a->last_log, tpf_now_wall() };
	tpf_notifier_post(h->notifier, &ev);
}

#define POST_ARGS(e, node) { (e), (node), -1, NULL, -1, NULL }

/* ---- events of the loop --------------------------------------------------- */

static void on_actions(struct tpf_watch_hooks *h, const struct tpf_plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct tpf_action *a = &p->actions[i];
		if (a->kind == TPF_ACT_REPLACE && is_lost_reason(a->reason_code) &&
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
		if ((a->reason_code && !strcmp(a->reason_code, "stalled")) ||
		    (a->reason && strstr(a->reason, "stalled"))) {
			struct post_args pa = POST_ARGS(TPF_NOTIFY_STALLED, a->node);
			pa.reason = a->reason_code;
			post(h, &pa, "%s: %s", a->node, a->reason ? a->reason : "stalled");
		}
	}
}

/* A lost node's delete started: it is being replaced. */
static void replacement_started(struct tpf_watch_hooks *h, struct lost_node *l)
{
	double latency = tpf_now_mono() - l->seen;
	l->announced = 1;
	if (h->metrics)
		tpf_metrics_preemption(h->metrics, l->code, latency);
	struct post_args pa = POST_ARGS(TPF_NOTIFY_PREEMPTED, l->node);
	pa.reason = l->code;
	post(h, &pa, "%s: %s: replacing it", l->node, l->reason);
}

static void replacement_done(struct tpf_watch_hooks *h, struct lost_node *l,
			     const struct tpf_event *ev)
{
	if (h->metrics)
		tpf_metrics_replacement(h->metrics);
	struct post_args pa = POST_ARGS(TPF_NOTIFY_REPLACED, l->node);
	pa.reason = l->code;
	if (ev->message) /* a queued resource: queued again, not READY yet */
		post(h, &pa, "%s: replaced (%s): %s", l->node, l->code, ev->message);
	else
		post(h, &pa, "%s: replaced (%s): the new node is READY %.0f s after the loss was "
			     "seen [id=%s]",
		     l->node, l->code, tpf_now_mono() - l->seen, ev->id ? ev->id : "?");
	lost_remove(h, l);
}

static void on_apply(struct tpf_watch_hooks *h, const struct tpf_event *ev)
{
	int create = !strcmp(ev->verb, "create"), restart = !strcmp(ev->verb, "restart");
	struct lost_node *l = lost_find(h, ev->node);
	if (ev->kind == TPF_EV_START && !strcmp(ev->verb, "delete") && l && !l->announced)
		replacement_started(h, l);
	if (ev->kind == TPF_EV_COMPLETE && create) {
		char key[300];
		snprintf(key, sizeof(key), "node:%s", ev->node);
		mark_remove(&h->deferred, key);
		if (l)
			replacement_done(h, l, ev);
	}
	if ((ev->kind == TPF_EV_COMPLETE || ev->kind == TPF_EV_ERRORED) && (restart || create))
		mark_set(&h->settled, ev->node, (long)(tpf_now_mono() * 1000));
	if ((ev->kind == TPF_EV_COMPLETE || ev->kind == TPF_EV_ERRORED) && restart) {
		struct mark *k = mark_find(&h->restarts, ev->node);
		if (k && ev->kind == TPF_EV_COMPLETE && h->metrics)
			tpf_metrics_restarts(h->metrics, k->value);
		mark_remove(&h->restarts, ev->node);
	}
	if (ev->kind == TPF_EV_NOTE && create && ev->message && !strncmp(ev->message, "deferred", 8)) {
		char key[300];
		snprintf(key, sizeof(key), "node:%s", ev->node);
		if (!mark_find(&h->deferred, key)) {
			mark_set(&h->deferred, key, 1);
			struct post_args pa = POST_ARGS(TPF_NOTIFY_QUOTA_DEFERRED, ev->node);
			post(h, &pa, "%s: %s", ev->node, ev->message);
		}
	}
}

/* Every event of the loop passes here first. NOTE events never take h->mu:
 * the notifier's warnings arrive as notes from threads that may hold it. */
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
	case TPF_WATCH_APPLY:
		pthread_mutex_lock(&h->mu);
		on_apply(h, ev->apply);
		pthread_mutex_unlock(&h->mu);
		break;
	case TPF_WATCH_SUMMARY:
		if (h->metrics)
			tpf_metrics_round_done(h->metrics, tpf_now_wall());
		break;
	case TPF_WATCH_NOTE:
		if (h->metrics && ev->code && !strcmp(ev->code, "error"))
			tpf_metrics_round_failed(h->metrics);
		break;
	case TPF_WATCH_DIAGS:
		break;
	}
	if (h->next)
		h->next(ev, h->next_ctx);
}

/* The notifier's warnings, as NOTE "notify" (straight to the caller). */
static void notify_warn(const char *msg, void *ctx)
{
	struct tpf_watch_hooks *h = ctx;
	struct tpf_watch_event ev = { .kind = TPF_WATCH_NOTE, .code = "notify", .message = msg };
	if (h->next)
		h->next(&ev, h->next_ctx);
}

/* ---- what a round saw ------------------------------------------------------- */

/* Whether the restart policy would restart this job (plan/diff.c's rule,
 * without the budget). */
static int policy_restarts(const struct tpf_fleet *f, const struct tpf_session_fact *sf)
{
	if (!strcmp(sf->session, "dead"))
		return f->restart != TPF_RESTART_NEVER;
	return f->restart == TPF_RESTART_ALWAYS ||
	       (f->restart == TPF_RESTART_ON_FAILURE && sf->exit_code != 0);
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

/* job_failed / job_succeeded / restarts_exhausted for one worker's report. */
static void seen_job(struct tpf_watch_hooks *h, const struct tpf_session *s,
		     const struct tpf_session_fact *sf)
{
	if (!sf->session || (strcmp(sf->session, "exited") && strcmp(sf->session, "dead")))
		return;
	if (unsettled(h, sf->node))
		return;
	struct tpf_state_node *sn = tpf_state_find((struct tpf_state *)&s->state, sf->node);
	const struct tpf_state_worker *sw =
		sn && sf->worker >= 0 && (size_t)sf->worker < sn->nworkers ? &sn->workers[sf->worker]
									: NULL;
	long retry = (sn ? sn->generation : 0) + (sw ? sw->restarts : 0);
	int died = !strcmp(sf->session, "dead"), ok = !died && sf->exit_code == 0;
	char key[300];
	snprintf(key, sizeof(key), "%s/%d", sf->node, sf->worker);
	struct mark *k = mark_find(&h->jobs, key);
	if (!k || k->value != retry) {
		mark_set(&h->jobs, key, retry);
		struct post_args pa = { ok ? TPF_NOTIFY_JOB_SUCCEEDED : TPF_NOTIFY_JOB_FAILED, sf->node,
					sf->worker, NULL, died ? -1 : sf->exit_code, sf->last_log };
		if (died)
			post(h, &pa, "%s worker %d: the job's session died (retry %ld)", sf->node,
			     sf->worker, retry);
		else
			post(h, &pa, "%s worker %d: the job %s (exit %d, retry %ld)", sf->node,
			     sf->worker, ok ? "finished" : "failed", sf->exit_code, retry);
	}
	if (!policy_restarts(&s->fleet, sf) || !sw || sw->restarts < s->fleet.max_restarts)
		return;
	k = mark_find(&h->exhausted, key);
	if (k && k->value == retry)
		return;
	mark_set(&h->exhausted, key, retry);
	struct post_args pa = { TPF_NOTIFY_RESTARTS_EXHAUSTED, sf->node, sf->worker, NULL,
				died ? -1 : sf->exit_code, sf->last_log };
	post(h, &pa, "%s worker %d: the job %s and max_restarts (%d) is used up: it is not "
		     "restarted",
	     sf->node, sf->worker, died ? "lost its session" : "failed", s->fleet.max_restarts);
}

/* completed: every worker of a desired node reports exit 0. */
static void seen_completion(struct tpf_watch_hooks *h, const struct tpf_session *s,
			    const struct tpf_desired_node *dn)
{
	int done = 0;
	if (unsettled(h, dn->name))
		return;
	for (int w = 0; w < dn->recipe.workers; w++) {
		const struct tpf_session_fact *sf = tpf_session_facts_find(&s->facts, dn->name, w);
		done += sf && sf->session && !strcmp(sf->session, "exited") && sf->exit_code == 0;
	}
	struct tpf_state_node *sn = tpf_state_find((struct tpf_state *)&s->state, dn->name);
	long generation = sn ? sn->generation : 0;
	struct mark *k = mark_find(&h->completed, dn->name);
	if (!dn->recipe.workers || done < dn->recipe.workers || (k && k->value == generation))
		return;
	mark_set(&h->completed, dn->name, generation);
	struct post_args pa = POST_ARGS(TPF_NOTIFY_COMPLETED, dn->name);
	post(h, &pa, "%s: completed: the job exited 0 on all %d worker%s", dn->name, dn->recipe.workers,
	     dn->recipe.workers > 1 ? "s" : "");
}

/* quota_deferred for groups with more nodes waiting than last said. */
static void seen_quota(struct tpf_watch_hooks *h, const struct tpf_session *s)
{
	for (size_t g = 0; g < s->fleet.ngroups; g++) {
		const struct tpf_group *gr = &s->fleet.groups[g];
		long waiting = 0;
		for (size_t i = 0; i < s->desired.n; i++)
			waiting += s->desired.nodes[i].deferred && !strcmp(s->desired.nodes[i].group, gr->name);
		struct mark *k = mark_find(&h->deferred, gr->name);
		if (!waiting) {
			mark_remove(&h->deferred, gr->name);
			continue;
		}
		if (k && k->value >= waiting)
			continue;
		mark_set(&h->deferred, gr->name, waiting);
		struct post_args pa = POST_ARGS(TPF_NOTIFY_QUOTA_DEFERRED, NULL);
		post(h, &pa, "%ld of %d nodes of group '%s' wait for quota (%s %s)", waiting, gr->count,
		     gr->name, gr->accelerator_type,
		     gr->spot ? "spot" : gr->preemptible ? "preemptible" : "on-demand");
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
			counts[tpf_metrics_session_index(s->facts.items[i].session)]++;
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

void tpf_watch_hooks_seen(struct tpf_watch_hooks *h, const struct tpf_session *s, int probed,
			  double started)
{
	pthread_mutex_lock(&h->mu);
	h->round_started = started;
	configure_notifier(h, s);
	seen_quota(h, s);
	for (size_t i = 0; probed && i < s->facts.n; i++)
		seen_job(h, s, &s->facts.items[i]);
	for (size_t i = 0; probed && i < s->desired.n; i++)
		seen_completion(h, s, &s->desired.nodes[i]);
	if (h->metrics)
		seen_metrics(h, s, probed);
	pthread_mutex_unlock(&h->mu);
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
	tpf_watch_note(o, NULL, "metrics", msg);
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
	marks_release(&h->settled);
	pthread_mutex_destroy(&h->mu);
	free(h);
}
