/*
 * The watch loop's notifications and metrics (engine/watch/watch_internal.h):
 * what the loop's events and sessions mean as webhook events
 * (engine/telemetry/notify.h) and metrics (engine/telemetry/metrics.h). Which webhook and which
 * metric an event stands for is its kind's row in engine/events.c (derive,
 * below); what the hooks add is memory across rounds: they conclude the
 * moments below from several events and sessions (typed events of their
 * own, posted, counted and passed on), each once.
 *
 * Where each notification comes from (docs/watch.md "Notifications"):
 *   preempted        a replace the plan made for a lost node (reason codes
 *                    marked lost in plan/reason_code.c), sent when its delete starts
 *                    (some slices of a multislice node: the first step of
 *                    their re-creation, the slices named): once
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
#include "engine/watch/watch_hooks_internal.h"
#include "engine/ledger/ledger_writer.h"
#include "engine/telemetry/metrics.h"
#include "engine/telemetry/monitoring_export.h"
#include "engine/telemetry/notify.h"
#include "util/env.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>

#define DRAIN_DEFAULT 10.0 /* seconds to deliver what is queued at exit */

/* Every event of the loop passes here first. The notifier's warnings do
 * not (notify_warn): they come from threads that may hold h->mu. */
static void dispatch(const struct tpf_watch_event *ev, void *ctx)
{
	struct tpf_watch_hooks *h = ctx;
	switch (ev->kind) {
	case TPF_WATCH_ACTIONS:
		if (!ev->pending) {
			pthread_mutex_lock(&h->mu);
			tpf_hooks_on_actions(h, ev->plan);
			pthread_mutex_unlock(&h->mu);
		}
		break;
	case TPF_WATCH_EVENT:
		pthread_mutex_lock(&h->mu);
		tpf_hooks_on_step(h, ev->event);
		tpf_hooks_derive(h, ev->event);
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
	tpf_hooks_forward(ctx, &ev);
}

/* Start, reconfigure or mute the notifier for this round's fleet file. */
static void configure_notifier(struct tpf_watch_hooks *h, const struct tpf_pipeline *s)
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
static void ledger_metrics(struct tpf_watch_hooks *h, const struct tpf_pipeline *s)
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

/* The ledger's report in Cloud Monitoring, when the fleet file asks
 * (monitoring:): at most once a minute, outside h->mu as ledger_metrics. */
static void monitoring_export(struct tpf_watch_hooks *h, const struct tpf_pipeline *s)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	if (!h->ledger || !s->fleet.monitoring.project)
		return;
	if (!h->monitoring_tried) {
		h->monitoring_tried = 1;
		tpf_monitoring_export_open(&h->monitoring, &s->fleet, &d);
	}
	tpf_monitoring_export_round(h->monitoring, &s->fleet, tpf_now_mono(), &d);
	tpf_watch_diags(h->o, &d);
	tpf_diags_release(&d);
}

/* Where events go and what they say of a node, from s (h->mu held): the
 * webhook, the run ledger (opened at the first call), each node's last
 * checkpoint. */
static void hooks_open(struct tpf_watch_hooks *h, const struct tpf_pipeline *s)
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
	tpf_hooks_seen_checkpoints(h, s);
}

void tpf_watch_hooks_ready(struct tpf_watch_hooks *h, const struct tpf_pipeline *s,
			   double started)
{
	pthread_mutex_lock(&h->mu);
	h->round_started = started;
	hooks_open(h, s);
	pthread_mutex_unlock(&h->mu);
}

void tpf_watch_hooks_seen(struct tpf_watch_hooks *h, const struct tpf_pipeline *s, int probed,
			  double started)
{
	pthread_mutex_lock(&h->mu);
	h->round_started = started;
	hooks_open(h, s);
	tpf_hooks_seen_quota(h, s);
	tpf_hooks_seen_budget(h, s);
	for (size_t i = 0; probed && i < s->facts.n; i++) {
		tpf_hooks_seen_job(h, s, &s->facts.items[i]);
		tpf_hooks_seen_progress(h, s, &s->facts.items[i]);
	}
	for (size_t i = 0; probed && i < s->desired.n; i++)
		tpf_hooks_seen_completion(h, s, &s->desired.nodes[i]);
	if (h->metrics)
		tpf_hooks_seen_metrics(h, s, probed);
	pthread_mutex_unlock(&h->mu);
	ledger_metrics(h, s);
	monitoring_export(h, s);
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
	tpf_monitoring_export_free(h->monitoring);
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
		free(h->lost[i].slices.slices);
	}
	free(h->lost);
	tpf_hooks_marks_release(&h->restarts);
	tpf_hooks_marks_release(&h->jobs);
	tpf_hooks_marks_release(&h->exhausted);
	tpf_hooks_marks_release(&h->completed);
	tpf_hooks_marks_release(&h->deferred);
	tpf_hooks_marks_release(&h->budgets);
	tpf_hooks_marks_release(&h->settled);
	tpf_hooks_marks_release(&h->steps);
	tpf_hooks_marks_release(&h->ckpts);
	tpf_hooks_ckpt_forget(h);
	free(h->ck);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

