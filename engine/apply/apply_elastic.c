/*
 * Elastic slices carried out (plan.h TPF_ELASTIC_*; plan/diff_elastic.c
 * decides; docs/recovery.md "Elastic slices"): a shrink restarts the
 * running slices' workers as a job of that many slices and then makes the
 * lost slices again in the background; a grow tells the job (grow:
 * checkpoint), then restarts every worker on every slice.
 */
#include "engine/apply/apply_internal.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* `shrunk` or `grown`: the node's job now runs on k of its n slices. */
static void emit_resized(struct exec *x, const struct tpf_action *a, enum tpf_event_kind kind,
			 int k, int n)
{
	char *msg = xasprintf("the job runs on %d of %d slices%s%s", k, n,
			      a->elastic_slices && kind == TPF_EVENT_SHRUNK ? ": " : "",
			      a->elastic_slices && kind == TPF_EVENT_SHRUNK ? a->elastic_slices
									    : "");
	struct tpf_event ev = TPF_EVENT_INIT(kind);
	ev.node = a->node;
	ev.id = a->id;
	ev.group = a->desired ? a->desired->group : NULL;
	ev.zone = a->zone;
	ev.workers = (int)a->nworkers;
	ev.message = msg;
	apply_emit_event(x, &ev);
	free(msg);
}

static int slices_of(const struct tpf_action *a)
{
	return a->desired && a->desired->recipe.slices > 1 ? a->desired->recipe.slices : 1;
}

static int shrink(struct exec *x, size_t ai, const struct tpf_live_node *ln)
{
	const struct tpf_action *a = &x->p->actions[ai];
	pthread_mutex_lock(x->mu);
	tpf_state_record_elastic(x->st, a->node, a->elastic_slices);
	int rc = apply_save_locked(x);
	pthread_mutex_unlock(x->mu);
	if (!rc)
		rc = apply_exec_update(x, ai, ln, 1);
	if (!rc) {
		int k = 1;
		for (const char *c = a->elastic_slices; c && *c; c++)
			k += *c == ',';
		emit_resized(x, a, TPF_EVENT_SHRUNK, k, slices_of(a));
	}
	return rc;
}

static int grow(struct exec *x, size_t ai, const struct tpf_live_node *ln)
{
	const struct tpf_action *a = &x->p->actions[ai];
	if (a->elastic_checkpoint) {
		/* grow: checkpoint: the running jobs get the notice ("resize")
		 * and on_disruption's signal, and their grace to save a
		 * checkpoint before they stop (the stop verb). */
		apply_stop_workers(x, a->node, ln, a->workers, a->nworkers, "resize");
	}
	pthread_mutex_lock(x->mu);
	tpf_state_record_elastic(x->st, a->node, NULL);
	int rc = apply_save_locked(x);
	pthread_mutex_unlock(x->mu);
	if (!rc)
		rc = apply_exec_update(x, ai, ln, 1);
	if (!rc)
		emit_resized(x, a, TPF_EVENT_GROWN, slices_of(a), slices_of(a));
	return rc;
}

int apply_exec_elastic(struct exec *x, size_t ai, const struct tpf_live_node *ln)
{
	const struct tpf_action *a = &x->p->actions[ai];
	int rc = 0;
	switch (a->elastic) {
	case TPF_ELASTIC_SHRINK:
		/* then the lost slices are made again in the background */
		rc = shrink(x, ai, ln);
		if (rc)
			return rc;
		/* fall through */
	case TPF_ELASTIC_RECREATE:
		return apply_exec_create(x, ai);
	case TPF_ELASTIC_GROW:
		return grow(x, ai, ln);
	default:
		return tpf_error(x->d, "this is a bug: elastic action %d of node '%s'", a->elastic,
				 a->node);
	}
}
