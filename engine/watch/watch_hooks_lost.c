/*
 * Lost nodes and their replacement, as the watch hooks tell them
 * (engine/watch/watch_hooks_internal.h): a replace the plan made for a lost node
 * is a preemption when its delete starts (a loss of some slices of a
 * multislice node, which deletes nothing: when their re-creation's first
 * step starts, engine/ledger/ledger_losses.h), and a replacement when its new
 * create completes; each node's last checkpoint gives the words of how much
 * work the new VM's job starts from (docs/recovery.md). The restarts in
 * flight and the stalled restarts are kept here too.
 */
#include "engine/watch/watch_hooks_internal.h"
#include "engine/ledger/ledger_losses.h"
#include "engine/checkpoints.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void lost_remove(struct tpf_watch_hooks *h, struct lost_node *l)
{
	free(l->node);
	free(l->code);
	free(l->reason);
	free(l->slices.slices);
	*l = h->lost[--h->nlost];
}

void tpf_hooks_on_actions(struct tpf_watch_hooks *h, const struct tpf_plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct tpf_action *a = &p->actions[i];
		if (a->kind == TPF_ACT_REPLACE && tpf_reason_info(a->reason_kind)->lost &&
		    !tpf_hooks_lost_find(h, a->node)) {
			XGROW(h->lost, h->nlost + 1, h->lost_alloc);
			struct lost_node *l = &h->lost[h->nlost++];
			l->node = xstrdup(a->node);
			l->code = xstrdup(a->reason_code);
			l->reason = xstrdup(a->reason ? a->reason : a->reason_code);
			/* Seen when the round began; a hooks user that set no
			 * round (0) saw it now, not at the clock's origin. */
			l->seen = h->round_started > 0 ? h->round_started : tpf_now_mono();
			l->announced = 0;
			tpf_slice_loss_of(a, &l->slices);
		}
		if (a->kind != TPF_ACT_RESTART || tpf_hooks_mark_find(&h->restarts, a->node))
			continue;
		tpf_hooks_mark_set(&h->restarts, a->node, (long)a->nworkers);
		if (a->reason_kind == TPF_REASON_STALLED) {
			struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_STALLED);
			ev.node = a->node;
			ev.reason = a->reason_code;
			ev.message = a->reason ? a->reason : "stalled";
			tpf_hooks_conclude(h, &ev);
		}
	}
}

void tpf_hooks_ckpt_forget(struct tpf_watch_hooks *h)
{
	for (size_t i = 0; i < h->nck; i++) {
		free(h->ck[i].node);
		free(h->ck[i].checkpoint);
		free(h->ck[i].at);
	}
	h->nck = 0;
}

/* Keep each node's last checkpoint of s's state (h->mu held). */
void tpf_hooks_seen_checkpoints(struct tpf_watch_hooks *h, const struct tpf_pipeline *s)
{
	tpf_hooks_ckpt_forget(h);
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
	char *msg = xasprintf("%s%s; %s", l->reason, l->slices.slices ? "" : ": replacing it", words);
	free(words);
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_PREEMPTED);
	ev.node = l->node;
	ev.reason = l->code;
	tpf_slice_loss_event(&l->slices, &ev);
	ev.elapsed = tpf_now_mono() - l->seen; /* the detection latency */
	ev.message = msg;
	tpf_hooks_conclude(h, &ev);
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
	struct tpf_event ev = tpf_ledger_replaced_event(l->node, l->code, done, msg);
	tpf_hooks_conclude(h, &ev);
	free(msg);
	lost_remove(h, l);
}

/* What an executor step of a heal means to the hooks (h->mu held). */
void tpf_hooks_on_step(struct tpf_watch_hooks *h, const struct tpf_event *ev)
{
	const struct tpf_event_info *in = tpf_event_info(ev->kind);
	if (in->hook == TPF_HOOK_NONE || !ev->node)
		return;
	int create = ev->action == TPF_EVENT_CREATING, restart = ev->action == TPF_EVENT_RESTARTING;
	int ended = in->hook == TPF_HOOK_COMPLETE || in->hook == TPF_HOOK_ERRORED;
	struct lost_node *l = tpf_hooks_lost_find(h, ev->node);
	if (l && !l->announced && tpf_slice_loss_starts(&l->slices, ev))
		replacement_started(h, l);
	if (create && in->hook == TPF_HOOK_COMPLETE) {
		char key[300];
		snprintf(key, sizeof(key), "node:%s", ev->node);
		tpf_hooks_mark_remove(&h->deferred, key);
		if (l)
			replacement_done(h, l, ev);
	}
	if (ended && (restart || create))
		tpf_hooks_mark_set(&h->settled, ev->node, (long)(tpf_now_mono() * 1000));
	if (ended && restart)
		tpf_hooks_mark_remove(&h->restarts, ev->node);
}
