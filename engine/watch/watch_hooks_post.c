/*
 * What an event means to the watch hooks (engine/watch/watch_hooks_internal.h):
 * its webhook and its metric, by its kind's row in engine/events.c.
 */
#include "engine/watch/watch_hooks_internal.h"
#include "engine/telemetry/metrics.h"
#include "engine/telemetry/notify.h"
#include "engine/ledger/ledger_writer.h"
#include "util/timeutil.h"

#include <stdio.h>

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
	if (tpf_hooks_mark_find(&h->deferred, key))
		return 1;
	tpf_hooks_mark_set(&h->deferred, key, 1);
	return 0;
}

/* Post and count ev as its kind's row (engine/events.c) says; h->mu held. */
void tpf_hooks_derive(struct tpf_watch_hooks *h, const struct tpf_event *ev)
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

void tpf_hooks_forward(struct tpf_watch_hooks *h, const struct tpf_event *ev)
{
	struct tpf_watch_event we = { .kind = TPF_WATCH_EVENT, .event = ev };
	if (h->next)
		h->next(&we, h->next_ctx);
}

/* A moment the hooks concluded (h->mu held): posted, counted, and passed on
 * like any other event. */
void tpf_hooks_conclude(struct tpf_watch_hooks *h, const struct tpf_event *ev)
{
	tpf_hooks_derive(h, ev);
	tpf_run_ledger_event(h->ledger, ev);
	tpf_hooks_forward(h, ev);
}
