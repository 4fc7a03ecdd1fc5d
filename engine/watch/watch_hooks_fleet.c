/*
 * What the watch hooks conclude from the fleet in a round
 * (engine/watch/watch_hooks_internal.h): quota_deferred for groups waiting for
 * quota, budget_reached, and the node, worker and notification metrics.
 */
#include "engine/watch/watch_hooks_internal.h"
#include "engine/telemetry/metrics.h"
#include "engine/telemetry/notify.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* quota_deferred for groups with more nodes waiting than last said. */
void tpf_hooks_seen_quota(struct tpf_watch_hooks *h, const struct tpf_pipeline *s)
{
	for (size_t g = 0; g < s->fleet.ngroups; g++) {
		const struct tpf_group *gr = &s->fleet.groups[g];
		long waiting = 0;
		for (size_t i = 0; i < s->desired.n; i++)
			waiting += s->desired.nodes[i].deferred && !s->desired.nodes[i].over_budget &&
				   !strcmp(s->desired.nodes[i].group, gr->name);
		struct mark *k = tpf_hooks_mark_find(&h->deferred, gr->name);
		if (!waiting) {
			tpf_hooks_mark_remove(&h->deferred, gr->name);
			continue;
		}
		if (k && k->value >= waiting)
			continue;
		tpf_hooks_mark_set(&h->deferred, gr->name, waiting);
		/* A Compute Engine group has a machine type, no accelerator type. */
		const char *type = gr->accelerator_type ? gr->accelerator_type
							: gr->compute.machine_type;
		char *msg = xasprintf("%ld of %d nodes of group '%s' wait for quota (%s %s)", waiting,
				      gr->count, gr->name, type ? type : "?",
				      gr->spot ? "spot" : gr->preemptible ? "preemptible" : "on-demand");
		struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_QUOTA_WAITING);
		ev.group = gr->name;
		ev.message = msg;
		tpf_hooks_conclude(h, &ev);
		free(msg);
	}
}

/* budget_reached once per period and scope: not when the ledger already
 * holds one for this period (another watch, or this one before a
 * restart, said it), nor twice from this process. */
void tpf_hooks_seen_budget(struct tpf_watch_hooks *h, const struct tpf_pipeline *s)
{
	for (size_t i = 0; i < s->nbudgets; i++) {
		const struct tpf_budget_status *b = &s->budgets[i];
		if (!tpf_budget_reached(b) || b->reported)
			continue;
		char *key = xasprintf("budget:%s", b->group ? b->group : "");
		struct mark *k = tpf_hooks_mark_find(&h->budgets, key);
		if (!k || k->value != (long)b->period_start) {
			tpf_hooks_mark_set(&h->budgets, key, (long)b->period_start);
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
			tpf_hooks_conclude(h, &ev);
			tpf_buf_release(&msg);
		}
		free(key);
	}
}

void tpf_hooks_seen_metrics(struct tpf_watch_hooks *h, const struct tpf_pipeline *s, int probed)
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
			counts[tpf_metrics_session_index(s->facts.items[i].state)]++;
		tpf_metrics_set_workers(h->metrics, counts);
	}
	if (h->notifier) {
		struct tpf_notify_stats st;
		tpf_notifier_stats(h->notifier, &st);
		tpf_metrics_set_notifications(h->metrics, st.sent, st.failed, st.dropped);
	}
}
