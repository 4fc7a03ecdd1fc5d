/*
 * The losses an apply acts on, written to the run ledger
 * (engine/ledger/ledger_losses.h).
 */
#include "engine/ledger/ledger_losses.h"
#include "engine/ledger/ledger_writer.h"
#include "model/chips.h"
#include "model/live.h"
#include "model/recipe.h"
#include "model/node_state.h"
#include "plan/plan.h"
#include "plan/reason_code.h"
#include "state/state.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lost {
	char *node, *code, *reason;
	int announced, replace;
	struct tpf_slice_loss slices;
};

struct tpf_ledger_losses {
	pthread_mutex_t mu;
	struct lost *v;
	size_t n;
	double seen;
};

/* A lost node the plan deletes or replaces: what `watch` would have
 * written a preemption for. A delete for another reason (destroy, count)
 * of a node Google already reclaimed is one too: its billing ended at the
 * preemption, not at the delete. */
static int is_loss(const struct tpf_action *a, const struct tpf_live_set *live)
{
	if (a->kind != TPF_ACT_REPLACE && a->kind != TPF_ACT_DELETE)
		return 0;
	if (tpf_reason_info(a->reason_kind)->lost)
		return 1;
	const struct tpf_live_node *ln = live ? tpf_live_set_find(live, a->node) : NULL;
	return a->kind == TPF_ACT_DELETE && ln && tpf_node_state_reclaimed(ln->state);
}

struct tpf_ledger_losses *tpf_ledger_losses_new(const struct tpf_plan *p,
						const struct tpf_live_set *live, double seen)
{
	size_t n = 0;
	for (size_t i = 0; p && i < p->n; i++)
		n += is_loss(&p->actions[i], live);
	if (!n)
		return NULL;
	struct tpf_ledger_losses *l = xcalloc(1, sizeof(*l));
	pthread_mutex_init(&l->mu, NULL);
	l->v = xcalloc(n, sizeof(*l->v));
	l->seen = seen;
	for (size_t i = 0; i < p->n; i++) {
		const struct tpf_action *a = &p->actions[i];
		if (!is_loss(a, live))
			continue;
		struct lost *x = &l->v[l->n++];
		x->node = xstrdup(a->node);
		if (tpf_reason_info(a->reason_kind)->lost) {
			x->code = xstrdup(a->reason_code ? a->reason_code : "lost");
			x->reason = xstrdup(a->reason ? a->reason : x->code);
		} else { /* reclaimed, deleted for another reason */
			const struct tpf_live_node *ln = tpf_live_set_find(live, a->node);
			int pre = tpf_node_state_of(ln->state) == TPF_NODE_STATE_PREEMPTED;
			x->code = xstrdup(pre ? "preempted" : "terminated");
			x->reason = xasprintf("the node was %s (%s)", x->code,
					      a->reason ? a->reason : "deleted");
		}
		x->replace = a->kind == TPF_ACT_REPLACE;
		tpf_slice_loss_of(a, &x->slices);
	}
	return l;
}

void tpf_slice_loss_of(const struct tpf_action *a, struct tpf_slice_loss *out)
{
	memset(out, 0, sizeof(*out));
	if (a->kind != TPF_ACT_REPLACE || !a->keep_parts || !a->lost_slices || !*a->lost_slices)
		return;
	int nlost = 1;
	for (const char *c = a->lost_slices; *c; c++)
		nlost += *c == ',';
	out->slices = xstrdup(a->lost_slices);
	if (!a->desired)
		return;
	const struct tpf_recipe *rec = &a->desired->recipe;
	int n = tpf_recipe_slices(rec);
	out->vms = nlost * tpf_recipe_slice_workers(rec);
	out->chips = n > 0 ? tpf_recipe_chips(rec) / n * nlost : 0;
}

void tpf_slice_loss_event(const struct tpf_slice_loss *l, struct tpf_event *ev)
{
	if (!l->slices)
		return;
	ev->slices = l->slices;
	ev->workers = l->vms > 0 ? l->vms : -1;
	ev->lost_chips = l->chips;
}

int tpf_slice_loss_starts(const struct tpf_slice_loss *l, const struct tpf_event *ev)
{
	if (ev->kind == TPF_EVENT_DELETING)
		return 1;
	return l->slices && ev->kind != TPF_EVENT_PREEMPTED &&
	       tpf_event_info(ev->kind)->hook == TPF_HOOK_START;
}

void tpf_ledger_losses_free(struct tpf_ledger_losses *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].node);
		free(l->v[i].code);
		free(l->v[i].reason);
		free(l->v[i].slices.slices);
	}
	free(l->v);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

static struct lost *find(struct tpf_ledger_losses *l, const char *node)
{
	for (size_t i = 0; node && i < l->n; i++)
		if (!strcmp(l->v[i].node, node))
			return &l->v[i];
	return NULL;
}

/* The delete of lost node x starts: its `preempted` line (l->mu held). */
static void started(struct tpf_ledger_losses *l, struct tpf_run_ledger *r, struct lost *x)
{
	x->announced = 1;
	/* a slice loss's reason says already which slices are made again */
	char *msg = x->slices.slices ? xstrdup(x->reason)
				     : xasprintf("%s: %s", x->reason,
						 x->replace ? "replacing it" : "deleting it");
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_PREEMPTED);
	ev.node = x->node;
	ev.reason = x->code;
	tpf_slice_loss_event(&x->slices, &ev);
	ev.elapsed = tpf_now_mono() - l->seen; /* since the refresh that saw it */
	ev.message = msg;
	tpf_run_ledger_event(r, &ev);
	free(msg);
}

struct tpf_event tpf_ledger_replaced_event(const char *node, const char *code,
					   const struct tpf_event *done, const char *msg)
{
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_REPLACED);
	ev.node = node;
	ev.reason = code;
	ev.id = done->id;
	ev.message = msg;
	return ev;
}

/* Its replacement's create completed (done): `replaced` (l->mu held). */
static void replaced(struct tpf_run_ledger *r, struct lost *x, const struct tpf_event *done)
{
	char *msg = xasprintf("replaced (%s): %s", x->code,
			      done->message ? done->message : "created");
	struct tpf_event ev = tpf_ledger_replaced_event(x->node, x->code, done, msg);
	tpf_run_ledger_event(r, &ev);
	free(msg);
	x->replace = 0;
}

void tpf_ledger_losses_step(struct tpf_ledger_losses *l, struct tpf_run_ledger *r,
			    const struct tpf_event *ev, int before)
{
	if (!l || !r || !ev->node)
		return;
	pthread_mutex_lock(&l->mu);
	struct lost *x = find(l, ev->node);
	const struct tpf_event_info *in = tpf_event_info(ev->kind);
	if (x && before && !x->announced && tpf_slice_loss_starts(&x->slices, ev))
		started(l, r, x);
	else if (x && !before && x->announced && x->replace &&
		 ev->action == TPF_EVENT_CREATING && in->hook == TPF_HOOK_COMPLETE)
		replaced(r, x, ev);
	pthread_mutex_unlock(&l->mu);
}

long tpf_ledger_job_exit_event(const struct tpf_job_fact *sf, const struct tpf_state_node *sn,
			       struct tpf_event *ev, char *msg, size_t msglen)
{
	const struct tpf_state_worker *sw = tpf_state_node_worker(sn, sf->worker);
	long retry = (sn ? sn->generation : 0) + (sw ? sw->restarts : 0);
	int died = sf->state == TPF_JOB_STATE_DEAD, ok = !died && sf->exit_code == 0;
	if (died)
		snprintf(msg, msglen, "the job's session died (retry %ld)", retry);
	else
		snprintf(msg, msglen, "the job %s (exit %d, retry %ld)", ok ? "finished" : "failed",
			 sf->exit_code, retry);
	*ev = (struct tpf_event)TPF_EVENT_INIT(ok ? TPF_EVENT_JOB_SUCCEEDED : TPF_EVENT_JOB_FAILED);
	ev->node = sf->node;
	ev->worker = sf->worker;
	ev->generation = sn ? sn->generation : -1;
	ev->retry = retry;
	ev->exit_code = died ? -1 : sf->exit_code;
	ev->last_log = sf->last_log;
	ev->message = msg;
	return retry;
}

void tpf_ledger_job_exits(struct tpf_run_ledger *r, const struct tpf_job_facts *facts,
			  const struct tpf_state *st)
{
	for (size_t i = 0; r && facts && i < facts->n; i++) {
		const struct tpf_job_fact *sf = &facts->items[i];
		if (sf->state != TPF_JOB_STATE_EXITED && sf->state != TPF_JOB_STATE_DEAD)
			continue;
		char msg[200];
		struct tpf_event ev;
		tpf_ledger_job_exit_event(sf, tpf_state_find((struct tpf_state *)st, sf->node), &ev,
					  msg, sizeof(msg));
		tpf_run_ledger_event(r, &ev);
	}
}

/* Lives here, not in the writer: the writer must not call back into the
 * losses (one way: losses -> writer). */
void tpf_run_ledger_chain(const struct tpf_event *ev, void *ctx)
{
	const struct tpf_ledger_chain *c = ctx;
	tpf_ledger_losses_step(c->losses, c->r, ev, 1);
	tpf_run_ledger_event(c->r, ev);
	tpf_ledger_losses_step(c->losses, c->r, ev, 0);
	if (c->next)
		c->next(ev, c->next_ctx);
}
