/*
 * What the parts of the executor share (engine/apply/apply_internal.h): events,
 * saves, the interrupt flag, in-flight bookkeeping for heartbeats.
 */
#include "engine/apply/apply_internal.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

void apply_emit_event(struct exec *x, const struct tpf_event *ev)
{
	if (x->o->on_event)
		x->o->on_event(ev, x->o->ctx);
}

/* Report a step of the action that `action` started (engine/events.h). */
void apply_emit(struct exec *x, enum tpf_event_kind kind, enum tpf_event_kind action,
		 const char *node, const char *id, double elapsed, const char *message)
{
	struct tpf_event ev = TPF_EVENT_INIT(kind);
	ev.action = action;
	ev.node = node;
	ev.id = id;
	ev.elapsed = elapsed;
	ev.message = message;
	apply_emit_event(x, &ev);
}

/* A note of a create about one zone (message for people). */
void apply_emit_zone(struct exec *x, enum tpf_event_kind kind, const struct tpf_desired_node *dn,
		      const char *zone, const char *message)
{
	struct tpf_event ev = TPF_EVENT_INIT(kind);
	ev.action = TPF_EVENT_CREATING;
	ev.node = dn->name;
	ev.group = dn->group;
	ev.zone = zone;
	ev.message = message;
	apply_emit_event(x, &ev);
}

/* Call with x->mu held. A failed save is an error: the caller must not go
 * on to spend money the state does not know about. */
int apply_save_locked(struct exec *x)
{
	x->workers_dirty = 0;
	x->last_save = tpf_now_mono();
	return tpf_state_save(x->st, x->d);
}

void apply_worker_changed_locked(struct exec *x, int now_please)
{
	x->workers_dirty = 1;
	if (now_please || tpf_now_mono() - x->last_save >= APPLY_WORKER_SAVE_INTERVAL)
		apply_save_locked(x);
}

void apply_save_due_locked(struct exec *x)
{
	if (x->workers_dirty && tpf_now_mono() - x->last_save >= APPLY_WORKER_SAVE_INTERVAL)
		apply_save_locked(x);
}

int apply_interrupted(const struct exec *x)
{
	return x->o->interrupted && *x->o->interrupted;
}

/* The concurrency the caller asked for (Terraform's default: 10). */
int apply_parallelism(const struct exec *x)
{
	return x->o->parallelism > 0 ? x->o->parallelism : 10;
}

/* ---- inflight bookkeeping (for heartbeats) ----------------------------------- */

void apply_fl_begin(struct exec *x, size_t ai, enum tpf_event_kind started, const char *id)
{
	const struct tpf_action *a = &x->p->actions[ai];
	pthread_mutex_lock(x->mu);
	struct inflight *f = &x->fl[ai];
	f->node = a->node;
	f->started = started;
	xstrset(&f->id, id);
	f->start = f->last_beat = tpf_now_mono();
	f->active = 1;
	/* What the node is and its generation, for the run ledger: the
	 * desired recipe, else (a delete) the state's copy; copied under the
	 * lock, since other actions may grow the state's node array. */
	struct tpf_recipe rec;
	memset(&rec, 0, sizeof(rec));
	long generation = -1;
	const struct tpf_state_node *sn = tpf_state_find(x->st, a->node);
	if (sn) {
		generation = sn->generation;
		if (!a->desired)
			tpf_recipe_copy(&rec, &sn->recipe);
	}
	pthread_mutex_unlock(x->mu);
	struct tpf_event ev = TPF_EVENT_INIT(started);
	ev.recipe = a->desired ? &a->desired->recipe : sn ? &rec : NULL;
	ev.generation = generation;
	ev.node = a->node;
	ev.group = a->desired ? a->desired->group : NULL;
	ev.zone = a->zone ? a->zone : a->desired ? a->desired->recipe.zone : NULL;
	ev.id = id;
	ev.reason = a->reason_code;
	ev.workers = started == TPF_EVENT_RESTARTING ? (int)a->nworkers : -1;
	apply_emit_event(x, &ev);
	tpf_recipe_release(&rec);
}

double apply_fl_end(struct exec *x, size_t ai)
{
	pthread_mutex_lock(x->mu);
	struct inflight *f = &x->fl[ai];
	f->active = 0;
	double el = tpf_now_mono() - f->start;
	pthread_mutex_unlock(x->mu);
	return el;
}

