/*
 * The executor. See engine/apply/apply.h for the rules it keeps; its parts are
 * listed in engine/apply/apply_internal.h. This file runs the phases and the
 * update, restart (engine/apply/apply_update.c), wait and delete actions.
 *
 * Concurrency: node actions run on a pool (util/pool.h); workers of one
 * node are provisioned on a pool of their own. The state (and the recap)
 * is touched only under x->mu, and pointers into the state never leave the
 * lock: another thread may add or remove nodes and move the array.
 * Provisioning, which is slow, works on a private copy of the node and
 * writes the worker's new facts back by name.
 */
#include "engine/apply/apply_internal.h"
#include "engine/workers/provision.h"
#include "model/node_state.h"
#include "providers/transport.h"
#include "util/pool.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static void *heartbeat_thread(void *arg)
{
	struct exec *x = arg;
	double period = x->o->heartbeat > 0 ? x->o->heartbeat : 10;
	for (;;) {
		tpf_sleep(period < 0.2 ? period : 0.2);
		pthread_mutex_lock(x->mu);
		if (x->done) {
			pthread_mutex_unlock(x->mu);
			return NULL;
		}
		apply_save_due_locked(x);
		double now = tpf_now_mono();
		size_t n = x->p->n;
		struct inflight due[64];
		size_t ndue = 0;
		for (size_t i = 0; i < n && ndue < 64; i++) {
			struct inflight *f = &x->fl[i];
			if (f->active && now - f->last_beat >= period) {
				f->last_beat = now;
				due[ndue] = *f;
				due[ndue].start = now - f->start;
				ndue++;
			}
		}
		pthread_mutex_unlock(x->mu);
		for (size_t i = 0; i < ndue; i++)
			apply_emit(x, TPF_EVENT_PROGRESS, due[i].started, due[i].node, due[i].id, due[i].start,
			     NULL);
	}
}

/* ---- node actions ------------------------------------------------------------ */

struct sending {
	struct exec *x;
	const char *node;
	int done;
};

/* The guard's hook (providers/provider.h): the delete of a node this
 * state owns is about to go out. Recorded and saved first (state.h
 * delete_sent_at), once: a run that dies while the delete runs leaves
 * the record, and the next plan waits for that delete. */
static void record_sending(void *arg)
{
	struct sending *s = arg;
	if (s->done)
		return;
	s->done = 1;
	char now[40];
	tpf_rfc3339(tpf_now_wall(), now, sizeof(now));
	pthread_mutex_lock(s->x->mu);
	tpf_state_record_delete_sent(s->x->st, s->node, now);
	apply_save_locked(s->x);
	pthread_mutex_unlock(s->x->mu);
}

/*
 * Delete a node, but only the one this state owns (docs/design.md section
 * 4, "Ownership at delete time"): the provider reads it again just before
 * the delete and refuses (TPF_EFOREIGN) a node that another state made
 * under the same name since the refresh. The id is the plan's (what the
 * refresh saw), else the state's record.
 */
static int exec_delete_only(struct exec *x, size_t ai, int forget_state)
{
	const struct tpf_action *a = &x->p->actions[ai];
	apply_keep_logs(x, a);
	char mine[TPF_LINEAGE_LABEL_LEN + 1];
	char *id = xstrdup(a->id);
	struct tpf_recipe recorded;
	memset(&recorded, 0, sizeof(recorded));
	struct sending sending = { x, a->node, 0 };
	pthread_mutex_lock(x->mu);
	const struct tpf_state_node *sn = tpf_state_find(x->st, a->node);
	if (sn && !id)
		id = xstrdup(sn->id);
	if (sn)
		tpf_recipe_copy(&recorded, &sn->recipe);
	struct tpf_delete_guard guard = { tpf_lineage_label(x->st->lineage, mine), id,
					  sn ? &recorded : NULL, record_sending, &sending };
	pthread_mutex_unlock(x->mu);
	apply_fl_begin(x, ai, TPF_EVENT_DELETING, a->id);
	int rc = x->prov->ops->remove(x->prov, a->zone, a->node, &guard, x->d);
	tpf_recipe_release(&recorded);
	free(id);
	double el = apply_fl_end(x, ai);
	if (rc == TPF_EINTERRUPTED) {
		/* Not a failure: the node stays in the state until a refresh
		 * finds it gone. */
		apply_emit(x, TPF_EVENT_INTERRUPTED, TPF_EVENT_DELETING, a->node, a->id, el,
		     "interrupted: stopped waiting for the delete, which may still complete; "
		     "the node stays in the state until a refresh finds it gone");
		return rc;
	}
	if (rc) {
		apply_emit(x, TPF_EVENT_FAILED, TPF_EVENT_DELETING, a->node, a->id, el, NULL);
		return rc;
	}
	pthread_mutex_lock(x->mu);
	if (forget_state)
		tpf_state_remove(x->st, a->node);
	rc = apply_save_locked(x);
	pthread_mutex_unlock(x->mu);
	apply_emit(x, TPF_EVENT_DELETED, TPF_EVENT_DELETING, a->node, a->id, el, NULL);
	return rc;
}

/*
 * The node was deleted because its job completed (on_success: delete): it
 * stays in the state as completed, with its exit status (0) and the time,
 * so that it is never created again and holds no quota (docs/design.md
 * section 8, "Completion").
 */
static int record_completed(struct exec *x, const struct tpf_action *a)
{
	char now[40];
	tpf_rfc3339(tpf_now_wall(), now, sizeof(now));
	pthread_mutex_lock(x->mu);
	tpf_state_record_completed(x->st, a->node, now);
	int rc = apply_save_locked(x);
	pthread_mutex_unlock(x->mu);
	return rc;
}

/* ---- updates, waits ---------------------------------------------------------- */

/* Sleep `seconds` in steps of at most 0.2 s; TPF_EINTERRUPTED as soon as
 * the interrupt flag is seen. */
static int nap(struct exec *x, double seconds)
{
	double end = tpf_now_mono() + seconds;
	for (;;) {
		if (apply_interrupted(x))
			return TPF_EINTERRUPTED;
		double left = end - tpf_now_mono();
		if (left <= 0)
			return 0;
		tpf_sleep(left < 0.2 ? left : 0.2);
	}
}

/* Poll the provider until the node is READY (or dead, gone, timed out). */
static int wait_ready(struct exec *x, const struct tpf_action *a, struct tpf_live_node *out)
{
	double deadline = tpf_now_mono() + (x->o->wait_timeout > 0 ? x->o->wait_timeout : 1200);
	const char *zones[1] = { a->zone };
	for (;;) {
		struct tpf_live_set ls = { 0 };
		/* What the refresh says about other nodes (a corrupt local
		 * node) was said by the plan's refresh: only this node's
		 * fate matters here, and only when it is not found. */
		struct tpf_diags rd = TPF_DIAGS_INIT;
		int rc = x->prov->ops->refresh(x->prov, zones, 1, &ls, &rd);
		struct tpf_live_node *ln = rc ? NULL : tpf_live_set_find(&ls, a->node);
		if (rc || !ln)
			tpf_diags_move(x->d, &rd);
		tpf_diags_release(&rd);
		char *state = xstrdup(ln && ln->state ? ln->state : NULL);
		enum tpf_node_class cls = tpf_node_class(state);
		if (cls == TPF_NODE_READY)
			tpf_live_node_copy(out, ln);
		tpf_live_set_release(&ls);
		if (cls == TPF_NODE_READY) {
			free(state);
			return 0;
		}
		if (rc || !state) {
			free(state);
			return rc ? rc : tpf_errorx(x->d, a->node, NULL, "node '%s' disappeared while "
						    "waiting for it to become READY", a->node);
		}
		if (cls != TPF_NODE_BUSY) {
			tpf_errorx(x->d, a->node, "run 'tpuform plan' again: it will be replaced",
				   "node '%s' went %s while waiting for READY", a->node, state);
			free(state);
			return TPF_ERROR;
		}
		if (tpf_now_mono() > deadline) {
			tpf_errorx(x->d, a->node, NULL, "node '%s' is still %s after %.0f s", a->node, state,
				   x->o->wait_timeout);
			free(state);
			return TPF_ERROR;
		}
		free(state);
		if (nap(x, 1))
			return TPF_EINTERRUPTED;
	}
}

/* A planned delete or replacement of a node whose jobs run (not a lost,
 * tainted or bad node, nor a completed one): its jobs are told first
 * ($TPUFORM_DISRUPTION, the on_disruption signal) and get the grace to
 * checkpoint before the VM goes (docs/recovery.md "Disruptions"). */
static void disrupt_planned(struct exec *x, const struct tpf_action *a,
			    const struct tpf_live_node *ln)
{
	if (!tpf_reason_info(a->reason_kind)->planned || !ln || tpf_node_class(ln->state) != TPF_NODE_READY)
		return;
	pthread_mutex_lock(x->mu);
	const struct tpf_state_node *sn = tpf_state_find(x->st, a->node);
	int n = sn ? (int)sn->nworkers : 0;
	pthread_mutex_unlock(x->mu);
	if (n <= 0)
		return;
	int *all = apply_all_workers(n);
	apply_stop_workers(x, a->node, ln, all, (size_t)n,
			   a->kind == TPF_ACT_DELETE ? "deleted" : "replaced");
	free(all);
}

/* A preempted node's replacement starts: the node's count goes up (the
 * state's one owner, state/state_record.c); the create's pending record
 * saves it. A plain create of a preempted spot VM is one too (plan/diff.c
 * gives both the reason code "preempted"). */
static void count_preemption(struct exec *x, const struct tpf_action *a)
{
	if (a->reason_kind != TPF_REASON_PREEMPTED)
		return;
	pthread_mutex_lock(x->mu);
	tpf_state_record_preempted(x->st, a->node);
	pthread_mutex_unlock(x->mu);
}

static int exec_action(struct exec *x, size_t ai)
{
	const struct tpf_action *a = &x->p->actions[ai];
	const struct tpf_live_node *ln = tpf_live_set_find(x->live, a->node);
	int rc = 0;
	if (a->elastic) { /* plan.h TPF_ELASTIC_*: engine/apply/apply_elastic.c */
		if (a->elastic == TPF_ELASTIC_SHRINK)
			count_preemption(x, a);
		return apply_exec_elastic(x, ai, ln);
	}
	switch (a->kind) {
	case TPF_ACT_DELETE:
		disrupt_planned(x, a, ln);
		rc = exec_delete_only(x, ai, !tpf_action_completes(a));
		if (!rc && tpf_action_completes(a))
			rc = record_completed(x, a);
		if (!rc) {
			pthread_mutex_lock(x->mu);
			x->res->destroyed++;
			pthread_mutex_unlock(x->mu);
		}
		return rc;
	case TPF_ACT_FORGET:
		pthread_mutex_lock(x->mu);
		tpf_state_remove(x->st, a->node);
		rc = apply_save_locked(x);
		pthread_mutex_unlock(x->mu);
		return rc;
	case TPF_ACT_REPLACE:
		/* Delete first: a preempted node keeps holding quota. The state
		 * entry stays (with its generation) until the create. A
		 * multislice node that lost some slices keeps the others: its
		 * create remakes only the lost ones (a->keep_parts). */
		if (a->keep_parts)
			return apply_exec_create(x, ai);
		disrupt_planned(x, a, ln);
		rc = exec_delete_only(x, ai, 0);
		if (rc)
			return rc;
		pthread_mutex_lock(x->mu);
		x->res->destroyed++;
		pthread_mutex_unlock(x->mu);
		/* fall through */
	case TPF_ACT_CREATE:
		count_preemption(x, a);
		rc = apply_exec_create(x, ai);
		if (!rc || rc == TPF_ERROR) {
			/* The node exists even if a worker failed. */
			pthread_mutex_lock(x->mu);
			struct tpf_state_node *sn = tpf_state_find(x->st, a->node);
			if (sn && sn->status == TPF_NODE_CREATED)
				(*(x->fl[ai].waiting ? &x->res->waiting : &x->res->added))++;
			pthread_mutex_unlock(x->mu);
		}
		return rc;
	case TPF_ACT_UPDATE:
	case TPF_ACT_RESTART:
		rc = apply_exec_update(x, ai, ln, a->kind == TPF_ACT_RESTART);
		break;
	case TPF_ACT_WAIT: {
		struct tpf_live_node fresh;
		memset(&fresh, 0, sizeof(fresh));
		apply_fl_begin(x, ai, TPF_EVENT_WAITING, a->id);
		rc = wait_ready(x, a, &fresh);
		double el = apply_fl_end(x, ai);
		if (!rc)
			rc = apply_exec_update(x, ai, &fresh, 0);
		else if (rc == TPF_EINTERRUPTED)
			apply_emit(x, TPF_EVENT_INTERRUPTED, TPF_EVENT_WAITING, a->node, a->id, el,
			     "interrupted: stopped waiting for READY; the next plan waits again");
		else
			apply_emit(x, TPF_EVENT_FAILED, TPF_EVENT_WAITING, a->node, a->id, el, NULL);
		tpf_live_node_release(&fresh);
		break;
	}
	}
	if (!rc) {
		pthread_mutex_lock(x->mu);
		x->res->changed++;
		pthread_mutex_unlock(x->mu);
	}
	return rc;
}

/* A tpf_pool_fn: run the qi-th action of the phase and count its outcome. */
static void action_item(size_t qi, void *arg)
{
	struct exec *x = arg;
	int rc = exec_action(x, x->queue[qi]);
	if (!rc)
		return;
	pthread_mutex_lock(x->mu);
	if (rc == TPF_EDEFERRED)
		x->res->deferred++;
	else if (rc == TPF_EINTERRUPTED)
		x->res->interrupted++;
	else
		x->res->failed_actions++;
	pthread_mutex_unlock(x->mu);
}

static void run_phase(struct exec *x, int deletes)
{
	x->nqueue = 0;
	for (size_t i = 0; i < x->p->n; i++) {
		enum tpf_action_kind k = x->p->actions[i].kind;
		int is_delete = k == TPF_ACT_DELETE || k == TPF_ACT_FORGET;
		if (is_delete == deletes)
			x->queue[x->nqueue++] = i;
	}
	/* Once interrupted, start nothing new; the caller reports it. */
	size_t started = tpf_pool_run(x->nqueue, apply_parallelism(x), action_item, x,
				      x->o->interrupted);
	pthread_mutex_lock(x->mu);
	x->res->not_started += x->nqueue - started;
	pthread_mutex_unlock(x->mu);
}

int tpf_apply(const struct tpf_plan *p, const struct tpf_fleet *f, struct tpf_provider *prov,
	      const struct tpf_live_set *live, struct tpf_state *st,
	      const struct tpf_apply_opts *opts, struct tpf_apply_result *res, struct tpf_diags *d)
{
	memset(res, 0, sizeof(*res));
	size_t errors_before = d->errors_seen; /* repeats count too (util/diag.h) */
	struct exec x = {
		.p = p, .f = f, .prov = prov, .live = live, .st = st,
		.o = opts, .res = res, .d = d,
	};
	x.t = prov->ops->transport ? prov->ops->transport(prov) : NULL;
	pthread_mutex_init(&x.own_mu, NULL);
	x.mu = opts->state_mu ? opts->state_mu : &x.own_mu;
	/* The provider's waits stop on the same flag. Written once, under
	 * the lock concurrent applies on this provider share, before any of
	 * them calls it (providers/provider.h). */
	pthread_mutex_lock(x.mu);
	if (opts->interrupted && prov->interrupted != opts->interrupted)
		prov->interrupted = opts->interrupted;
	pthread_mutex_unlock(x.mu);
	x.queue = xcalloc(p->n ? p->n : 1, sizeof(size_t));
	x.fl = xcalloc(p->n ? p->n : 1, sizeof(*x.fl));
	if (!st->fleet)
		st->fleet = xstrdup(f->name);

	pthread_t hb;
	pthread_create(&hb, NULL, heartbeat_thread, &x);
	run_phase(&x, 1);
	run_phase(&x, 0);
	pthread_mutex_lock(x.mu);
	x.done = 1;
	/* A final save, as Terraform persists at the end whatever happened. */
	apply_save_locked(&x);
	pthread_mutex_unlock(x.mu);
	pthread_join(hb, NULL);
	tpf_fanout_free(x.fanout);

	for (size_t i = 0; i < p->n; i++)
		free(x.fl[i].id);
	free(x.fl);
	free(x.queue);
	pthread_mutex_destroy(&x.own_mu);
	if (res->failed_actions || d->errors_seen > errors_before)
		return TPF_ERROR;
	return res->interrupted || res->not_started ? TPF_EINTERRUPTED : 0;
}

