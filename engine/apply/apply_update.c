/*
 * An update or restart of a node's workers (engine/apply/apply_internal.h
 * apply_exec_update): the record, the patch of labels and fields, the
 * restart count, the unit's stop and the provisioning. Called by apply.c's
 * update, restart and wait actions and by apply_elastic.c's shrink and grow.
 */
#include "engine/apply/apply_internal.h"
#include "util/timeutil.h"

/* Make sure the state has the node (adoption) and the desired job. */
static int record_node(struct exec *x, const struct tpf_action *a, const struct tpf_live_node *ln)
{
	const struct tpf_desired_node *dn = a->desired;
	pthread_mutex_lock(x->mu);
	tpf_state_record_running(x->st, dn->name, dn->group, dn->index, ln, &dn->recipe, &dn->job);
	int rc = apply_save_locked(x);
	pthread_mutex_unlock(x->mu);
	return rc;
}

/*
 * A restart is a new attempt: TPUFORM_RETRY goes up (docs/design.md
 * section 5). A unit of several workers (a->gang) counts one restart of
 * the unit: every worker gets the unit's count (the most any had) + 1, so
 * they all start with the same TPUFORM_RETRY; otherwise each listed
 * worker's own count goes up. The time is kept for the restart backoff
 * (and set again once the new jobs started: stamp_restart).
 */
static int count_restart(struct exec *x, const struct tpf_action *a)
{
	char now[40];
	tpf_rfc3339(tpf_now_wall(), now, sizeof(now));
	pthread_mutex_lock(x->mu);
	tpf_state_count_restart(x->st, a->node, a->workers, a->nworkers, a->gang, now);
	int rc = apply_save_locked(x);
	pthread_mutex_unlock(x->mu);
	return rc;
}

/* Record now as the listed workers' last restart. */
static void stamp_restart(struct exec *x, const struct tpf_action *a)
{
	char now[40];
	tpf_rfc3339(tpf_now_wall(), now, sizeof(now));
	pthread_mutex_lock(x->mu);
	tpf_state_stamp_restart(x->st, a->node, a->workers, a->nworkers, now);
	apply_save_locked(x);
	pthread_mutex_unlock(x->mu);
}

int apply_exec_update(struct exec *x, size_t ai, const struct tpf_live_node *ln, int force)
{
	const struct tpf_action *a = &x->p->actions[ai];
	const struct tpf_desired_node *dn = a->desired;
	enum tpf_event_kind started = force ? TPF_EVENT_RESTARTING : TPF_EVENT_UPDATING;
	apply_fl_begin(x, ai, started, a->id);
	int rc = record_node(x, a, ln);
	if (!rc && (a->update_labels || a->patch)) {
		/* One nodes.patch for labels and the other patchable fields. */
		unsigned fields = (a->update_labels ? TPF_PATCH_LABELS : 0) | a->patch;
		rc = x->prov->ops->patch
			     ? x->prov->ops->patch(x->prov, a->zone, a->node, &dn->recipe, fields, x->d)
			     : x->prov->ops->set_labels(x->prov, a->zone, a->node, &dn->recipe.labels,
							x->d);
		if (!rc) {
			pthread_mutex_lock(x->mu);
			tpf_state_record_patched(x->st, a->node, &dn->recipe.labels,
						 a->patch ? &dn->recipe.node : NULL);
			rc = apply_save_locked(x);
			pthread_mutex_unlock(x->mu);
		}
	}
	if (!rc && force)
		rc = count_restart(x, a);
	int failed = 0;
	/* A unit of several workers (a->gang) is stopped as a whole before any
	 * of it starts again: a worker that started early would meet the old
	 * job of another in its collectives, or read a checkpoint that one is
	 * still writing on SIGTERM. */
	if (!rc && force && a->gang)
		apply_stop_workers(x, a->node, ln, a->workers, a->nworkers, "restarted");
	if (!rc)
		failed = apply_provision_workers(x, a->node, ln, a->workers, a->nworkers, force);
	if (!rc && force)
		stamp_restart(x, a); /* the backoff runs from the new jobs' start */
	double el = apply_fl_end(x, ai);
	if (rc || failed) {
		apply_emit(x, TPF_EVENT_FAILED, started, a->node, a->id, el, NULL);
		return rc ? rc : TPF_ERROR;
	}
	struct tpf_event ev = TPF_EVENT_INIT(force ? TPF_EVENT_RESTARTED : TPF_EVENT_UPDATED);
	ev.action = started;
	ev.node = a->node;
	ev.id = a->id;
	ev.elapsed = el;
	ev.workers = force ? (int)a->nworkers : -1;
	apply_emit_event(x, &ev);
	return 0;
}

