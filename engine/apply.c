/*
 * The executor. See engine/apply.h for the rules it keeps.
 *
 * Concurrency: node actions run on a pool (util/pool.h); workers of one
 * node are provisioned on a pool of their own. The state (and the recap)
 * is touched only under x->mu, and pointers into the state never leave the
 * lock: another thread may add or remove nodes and move the array.
 * Provisioning, which is slow, works on a private copy of the node and
 * writes the worker's new facts back by name.
 */
#include "engine/apply.h"
#include "engine/provision.h"
#include "model/node_state.h"
#include "plan/quota.h"
#include "providers/ssh/ssh.h"
#include "providers/transport.h"
#include "util/pool.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct inflight {
	const char *node;
	enum tpf_event_kind started; /* the kind that started it: CREATING ... */
	char *id;
	double start;
	double last_beat;
	int active;
};

struct exec {
	const struct tpf_plan *p;
	const struct tpf_fleet *f;
	struct tpf_provider *prov;
	struct tpf_transport *t;
	const struct tpf_live_set *live;
	struct tpf_state *st;
	const char *state_path;
	const struct tpf_apply_opts *o;
	struct tpf_apply_result *res;
	struct tpf_diags *d;
	/* Guards the state, the result and the bookkeeping below: the
	 * caller's (opts->state_mu) when several applies share one state. */
	pthread_mutex_t own_mu;
	pthread_mutex_t *mu;

	/* the phase being run: indices into p->actions */
	size_t *queue;
	size_t nqueue;
	struct inflight *fl; /* one per action */
	int done;            /* stops the heartbeat thread */
};

static void emit_event(struct exec *x, const struct tpf_event *ev)
{
	if (x->o->on_event)
		x->o->on_event(ev, x->o->ctx);
}

/* Report a step of the action that `action` started (engine/events.h). */
static void emit(struct exec *x, enum tpf_event_kind kind, enum tpf_event_kind action,
		 const char *node, const char *id, double elapsed, const char *message)
{
	struct tpf_event ev = TPF_EVENT_INIT(kind);
	ev.action = action;
	ev.node = node;
	ev.id = id;
	ev.elapsed = elapsed;
	ev.message = message;
	emit_event(x, &ev);
}

/* A note of a create about one zone (message for people). */
static void emit_zone(struct exec *x, enum tpf_event_kind kind, const struct tpf_desired_node *dn,
		      const char *zone, const char *message)
{
	struct tpf_event ev = TPF_EVENT_INIT(kind);
	ev.action = TPF_EVENT_CREATING;
	ev.node = dn->name;
	ev.group = dn->group;
	ev.zone = zone;
	ev.message = message;
	emit_event(x, &ev);
}

/* Call with x->mu held. A failed save is an error: the caller must not go
 * on to spend money the state does not know about. */
static int save_locked(struct exec *x)
{
	tpf_ssh_jump_pin_sync(&x->st->proxy_jump_host, &x->st->proxy_jump_host_key);
	return tpf_state_save(x->st, x->state_path, x->d);
}

/* ---- state node copies -------------------------------------------------- */

static void worker_copy(struct tpf_state_worker *dst, const struct tpf_state_worker *src)
{
	dst->index = src->index;
	xstrset(&dst->script_hash, src->script_hash);
	xstrset(&dst->session, src->session);
	xstrset(&dst->status, src->status);
	dst->exit_code = src->exit_code;
	dst->restarts = src->restarts;
	xstrset(&dst->address, src->address);
	xstrset(&dst->host_key, src->host_key);
	xstrset(&dst->provisioned_at, src->provisioned_at);
	xstrset(&dst->restarted_at, src->restarted_at);
}

static struct tpf_state_node *node_clone(const struct tpf_state_node *src)
{
	struct tpf_state_node *n = xcalloc(1, sizeof(*n));
	n->name = xstrdup(src->name);
	n->group = xstrdup(src->group);
	n->index = src->index;
	n->id = xstrdup(src->id);
	n->status = xstrdup(src->status);
	n->generation = src->generation;
	tpf_recipe_copy(&n->recipe, &src->recipe);
	tpf_job_copy(&n->job, &src->job);
	n->created_at = xstrdup(src->created_at);
	n->completed_at = xstrdup(src->completed_at);
	n->exit_code = src->exit_code;
	tpf_state_node_set_workers(n, src->nworkers);
	for (size_t i = 0; i < src->nworkers; i++)
		worker_copy(&n->workers[i], &src->workers[i]);
	return n;
}

static void node_free(struct tpf_state_node *n)
{
	if (!n)
		return;
	tpf_state_node_release(n);
	free(n);
}

/* ---- recap -------------------------------------------------------------- */

void tpf_recap_release(struct tpf_recap *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->items[i].host);
	free(r->items);
	memset(r, 0, sizeof(*r));
}

void tpf_apply_result_release(struct tpf_apply_result *r)
{
	tpf_recap_release(&r->recap);
}

static struct tpf_recap_entry *recap_entry(struct tpf_recap *r, const char *host)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->items[i].host, host))
			return &r->items[i];
	XGROW(r->items, r->n + 1, r->alloc);
	struct tpf_recap_entry *e = &r->items[r->n++];
	memset(e, 0, sizeof(*e));
	e->host = xstrdup(host);
	return e;
}

/* ---- workers -------------------------------------------------------------- */

struct worker_job {
	struct exec *x;
	const char *node;
	const struct tpf_live_node *live;
	const int *workers;
	int force;
	int failures;
	pthread_mutex_t mu; /* guards failures */
};

/* The concurrency the caller asked for (Terraform's default: 10). */
static int parallelism_of(const struct exec *x)
{
	return x->o->parallelism > 0 ? x->o->parallelism : 10;
}

static void provision_one(struct worker_job *wj, int w)
{
	struct exec *x = wj->x;
	pthread_mutex_lock(x->mu);
	struct tpf_state_node *sn = tpf_state_find(x->st, wj->node);
	struct tpf_state_node *copy = sn ? node_clone(sn) : NULL;
	pthread_mutex_unlock(x->mu);
	if (!copy || (size_t)w >= copy->nworkers) {
		node_free(copy);
		return;
	}

	int changed = 0;
	int rc = tpf_provision_worker(x->t, x->f, copy, wj->live, w, wj->force, &changed, x->d);
	enum tpf_event_kind result = rc == 0 ? (changed ? TPF_EVENT_JOB_STARTED : TPF_EVENT_JOB_RUNNING)
				     : rc == TPF_EUNREACHABLE ? TPF_EVENT_UNREACHABLE
							      : TPF_EVENT_PROVISION_FAILED;
	char host[512];
	snprintf(host, sizeof(host), "%s/w%d", wj->node, w);

	pthread_mutex_lock(x->mu);
	sn = tpf_state_find(x->st, wj->node);
	if (sn && (size_t)w < sn->nworkers) {
		worker_copy(&sn->workers[w], &copy->workers[w]);
		save_locked(x);
	}
	struct tpf_recap_entry *e = recap_entry(&x->res->recap, host);
	if (rc == 0 && changed)
		e->changed++;
	else if (rc == 0)
		e->ok++;
	else if (rc == TPF_EUNREACHABLE)
		e->unreachable++;
	else
		e->failed++;
	pthread_mutex_unlock(x->mu);

	if (rc) {
		pthread_mutex_lock(&wj->mu);
		wj->failures++;
		pthread_mutex_unlock(&wj->mu);
	}
	struct tpf_event ev = TPF_EVENT_INIT(result);
	ev.node = wj->node;
	ev.id = copy->id;
	ev.worker = w;
	ev.generation = copy->generation;
	ev.retry = copy->generation + copy->workers[w].restarts;
	emit_event(x, &ev);
	node_free(copy);
}

/* A tpf_pool_fn: provision the i-th listed worker. */
static void provision_item(size_t i, void *arg)
{
	struct worker_job *wj = arg;
	provision_one(wj, wj->workers[i]);
}

/* Provision the given workers of node `name` in parallel. Returns the
 * number of workers that failed. An interrupt does not stop a node's
 * workers half-way: they all get the script once its provisioning began. */
static int provision_workers(struct exec *x, const char *name, const struct tpf_live_node *ln,
			     const int *workers, size_t nworkers, int force)
{
	if (!nworkers)
		return 0;
	if (!x->t) {
		tpf_warn(x->d, name,
			 "workers of '%s' were not provisioned: the %s provider has no worker "
			 "transport yet",
			 name, x->prov->ops->name);
		return 0;
	}
	struct worker_job wj = { .x = x, .node = name, .live = ln, .workers = workers,
				 .force = force };
	pthread_mutex_init(&wj.mu, NULL);
	tpf_pool_run(nworkers, parallelism_of(x), provision_item, &wj, NULL);
	pthread_mutex_destroy(&wj.mu);
	return wj.failures;
}

static int *all_workers(int n)
{
	int *w = xcalloc((size_t)(n > 0 ? n : 1), sizeof(int));
	for (int i = 0; i < n; i++)
		w[i] = i;
	return w;
}

/* ---- inflight bookkeeping (for heartbeats) ----------------------------------- */

static void fl_begin(struct exec *x, size_t ai, enum tpf_event_kind started, const char *id)
{
	const struct tpf_action *a = &x->p->actions[ai];
	pthread_mutex_lock(x->mu);
	struct inflight *f = &x->fl[ai];
	f->node = a->node;
	f->started = started;
	xstrset(&f->id, id);
	f->start = f->last_beat = tpf_now_mono();
	f->active = 1;
	pthread_mutex_unlock(x->mu);
	struct tpf_event ev = TPF_EVENT_INIT(started);
	ev.node = a->node;
	ev.group = a->desired ? a->desired->group : NULL;
	ev.zone = a->zone ? a->zone : a->desired ? a->desired->recipe.zone : NULL;
	ev.id = id;
	ev.reason = a->reason_code;
	ev.workers = started == TPF_EVENT_RESTARTING ? (int)a->nworkers : -1;
	emit_event(x, &ev);
}

static double fl_end(struct exec *x, size_t ai)
{
	pthread_mutex_lock(x->mu);
	struct inflight *f = &x->fl[ai];
	f->active = 0;
	double el = tpf_now_mono() - f->start;
	pthread_mutex_unlock(x->mu);
	return el;
}

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
			emit(x, TPF_EVENT_PROGRESS, due[i].started, due[i].node, due[i].id, due[i].start,
			     NULL);
	}
}

/* ---- node actions ------------------------------------------------------------ */

static int max_restarts_of(const struct tpf_state_node *n)
{
	int m = 0;
	for (size_t i = 0; i < n->nworkers; i++)
		if (n->workers[i].restarts > m)
			m = n->workers[i].restarts;
	return m;
}

static int exec_delete_only(struct exec *x, size_t ai, int forget_state)
{
	const struct tpf_action *a = &x->p->actions[ai];
	fl_begin(x, ai, TPF_EVENT_DELETING, a->id);
	int rc = x->prov->ops->remove(x->prov, a->zone, a->node, x->d);
	double el = fl_end(x, ai);
	if (rc == TPF_EINTERRUPTED) {
		/* Not a failure: the node stays in the state until a refresh
		 * finds it gone. */
		emit(x, TPF_EVENT_INTERRUPTED, TPF_EVENT_DELETING, a->node, a->id, el,
		     "interrupted: stopped waiting for the delete, which may still complete; "
		     "the node stays in the state until a refresh finds it gone");
		return rc;
	}
	if (rc) {
		emit(x, TPF_EVENT_FAILED, TPF_EVENT_DELETING, a->node, a->id, el, NULL);
		return rc;
	}
	pthread_mutex_lock(x->mu);
	if (forget_state)
		tpf_state_remove(x->st, a->node);
	rc = save_locked(x);
	pthread_mutex_unlock(x->mu);
	emit(x, TPF_EVENT_DELETED, TPF_EVENT_DELETING, a->node, a->id, el, NULL);
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
	struct tpf_state_node *sn = tpf_state_find(x->st, a->node);
	if (sn) {
		xstrset(&sn->status, TPF_NODE_COMPLETED);
		xstrset(&sn->id, NULL);
		xstrset(&sn->completed_at, now);
		sn->exit_code = 0;
		for (size_t i = 0; i < sn->nworkers; i++) {
			xstrset(&sn->workers[i].status, "exited");
			sn->workers[i].exit_code = 0;
		}
	}
	int rc = save_locked(x);
	pthread_mutex_unlock(x->mu);
	return rc;
}

/* ---- create ------------------------------------------------------------------ */

/* One create as it goes through the zones. */
struct create_try {
	struct tpf_recipe r;     /* the desired recipe; zone: the one being tried */
	struct tpf_live_node ln; /* the node, once created */
	struct tpf_diags zd;     /* the zones' refusals */
	int tried;               /* zones a create was sent to */
	int backed_off;          /* zones skipped: backed off */
	int only_zone_errors;    /* every refusal was quota, capacity or an unusable zone */
};

static int interrupted(const struct exec *x)
{
	return x->o->interrupted && *x->o->interrupted;
}

/* Record the node as pending, and save, before any request is sent. A
 * node that existed before starts a new generation (TPUFORM_RETRY). */
static int record_pending(struct exec *x, const struct tpf_desired_node *dn)
{
	pthread_mutex_lock(x->mu);
	struct tpf_state_node *sn = tpf_state_find(x->st, dn->name);
	int gen = 0;
	if (sn)
		gen = !strcmp(sn->status, TPF_NODE_PENDING) ? sn->generation
							    : sn->generation + max_restarts_of(sn) + 1;
	sn = tpf_state_add(x->st, dn->name);
	xstrset(&sn->group, dn->group);
	sn->index = dn->index;
	xstrset(&sn->status, TPF_NODE_PENDING);
	xstrset(&sn->id, NULL);
	sn->generation = gen;
	tpf_recipe_copy(&sn->recipe, &dn->recipe);
	tpf_job_copy(&sn->job, &dn->job);
	tpf_state_node_set_workers(sn, 0);
	tpf_state_node_set_workers(sn, (size_t)dn->recipe.workers);
	int rc = save_locked(x);
	pthread_mutex_unlock(x->mu);
	if (rc)
		tpf_errorx(x->d, dn->name, NULL,
			   "node '%s' was not created: the state could not be saved first", dn->name);
	return rc;
}

/* 1 if zone refused this accelerator type recently (a note says how long
 * it stays backed off). */
static int zone_backed_off(struct exec *x, const struct tpf_desired_node *dn, const char *zone)
{
	double until = 0;
	if (!x->o->backoff || !tpf_backoff_blocked(x->o->backoff, zone, dn->recipe.accelerator_type,
						   tpf_now_mono(), &until))
		return 0;
	char *msg = xasprintf("zone %s is backed off for %.0f s more", zone, until - tpf_now_mono());
	emit_zone(x, TPF_EVENT_ZONE_BACKED_OFF, dn, zone, msg);
	free(msg);
	return 1;
}

/*
 * If one more node like dn fits in zone under the declared quota
 * (plan/quota.h: every node in state counts, except this one), move the
 * pending node there and save. Returns 1 when it did; *rc gets the save's
 * result when one was attempted.
 */
static int claim_zone(struct exec *x, const struct tpf_desired_node *dn, const char *zone, int *rc)
{
	pthread_mutex_lock(x->mu);
	struct tpf_quota quota;
	tpf_quota_init(&quota, x->f->quota, x->f->nquota);
	tpf_quota_count_state(&quota, x->st, dn->name);
	int ok = tpf_quota_room(&quota, zone, &dn->recipe);
	tpf_quota_release(&quota);
	if (ok) {
		struct tpf_state_node *sn = tpf_state_find(x->st, dn->name);
		xstrset(&sn->recipe.zone, zone);
		*rc = save_locked(x);
		ok = *rc == 0;
	}
	pthread_mutex_unlock(x->mu);
	return ok;
}

/* A zone said quota, no capacity or that the project cannot use it: back it
 * off (when watch keeps backoff). */
static void zone_refused(struct exec *x, const struct tpf_desired_node *dn, const char *zone, int rc)
{
	if (!x->o->backoff)
		return;
	double wait = tpf_backoff_fail(x->o->backoff, zone, dn->recipe.accelerator_type, tpf_now_mono());
	char *msg = xasprintf("zone %s refused (%s): backing off %.0f s", zone,
			      rc == TPF_EQUOTA ? "quota" : rc == TPF_EZONE ? "zone unusable" : "no capacity",
			      wait);
	emit_zone(x, TPF_EVENT_ZONE_REFUSED, dn, zone, msg);
	free(msg);
}

/*
 * The planned zone first, then the group's other zones in order, each only
 * if not backed off and within quota, until a create succeeds or fails for
 * another reason than quota, capacity (a stockout, also one reported while
 * creating) or a zone the project cannot use (README.md, zone fallback). An
 * interrupt tries no further zone. Returns the last result (TPF_ERROR when no create was sent).
 */
static int create_in_zones(struct exec *x, const struct tpf_desired_node *dn, struct create_try *ct)
{
	int rc = TPF_ERROR;
	for (size_t zi = 0; zi <= dn->nzones; zi++) {
		const char *zone = zi == 0 ? dn->recipe.zone : dn->zones[zi - 1];
		if (zi > 0 && !strcmp(zone, dn->recipe.zone))
			continue;
		if (interrupted(x))
			break;
		if (zone_backed_off(x, dn, zone)) {
			ct->backed_off++;
			continue;
		}
		if (!claim_zone(x, dn, zone, &rc))
			continue;
		if (ct->tried) {
			char *msg = xasprintf("trying zone %s", zone);
			emit_zone(x, TPF_EVENT_ZONE_FALLBACK, dn, zone, msg);
			free(msg);
		}
		ct->tried++;
		xstrset(&ct->r.zone, zone);
		rc = x->prov->ops->create(x->prov, dn->name, &ct->r, &ct->ln, &ct->zd);
		if (rc == 0) {
			if (x->o->backoff)
				tpf_backoff_ok(x->o->backoff, zone, dn->recipe.accelerator_type);
			break;
		}
		if (rc != TPF_EQUOTA && rc != TPF_ECAPACITY && rc != TPF_EZONE) {
			ct->only_zone_errors = 0;
			break;
		}
		zone_refused(x, dn, zone, rc);
	}
	return rc;
}

/* Keep the zones' refusals as warnings. */
static void refusals_as_warnings(struct exec *x, struct create_try *ct)
{
	for (size_t i = 0; i < ct->zd.n; i++)
		ct->zd.items[i].severity = TPF_SEV_WARNING;
	tpf_diags_move(x->d, &ct->zd);
}

/* watch: nobody could take it now; it waits for the next round. */
static int create_deferred(struct exec *x, const struct tpf_desired_node *dn, struct create_try *ct,
			   double el)
{
	pthread_mutex_lock(x->mu);
	/* Nothing exists. A node with history stays pending so that its
	 * generation (the job's TPUFORM_RETRY) survives the wait. */
	struct tpf_state_node *sn = tpf_state_find(x->st, dn->name);
	if (sn && sn->generation > 0)
		xstrset(&sn->status, TPF_NODE_PENDING);
	else
		tpf_state_remove(x->st, dn->name);
	save_locked(x);
	pthread_mutex_unlock(x->mu);
	refusals_as_warnings(x, ct);
	emit(x, TPF_EVENT_DEFERRED, TPF_EVENT_CREATING, dn->name, NULL, el,
	     "deferred: no zone of its group can take it now");
	return TPF_EDEFERRED;
}

/* The create failed: forget the node when nothing can exist, else taint it
 * (a failed request may have left a node: it is replaced next time). */
static int create_failed(struct exec *x, const struct tpf_desired_node *dn, struct create_try *ct,
			 double el, int rc)
{
	pthread_mutex_lock(x->mu);
	if (ct->tried && ct->only_zone_errors) {
		/* Every zone said no before creating anything: nothing exists. */
		tpf_state_remove(x->st, dn->name);
	} else if (ct->tried) {
		struct tpf_state_node *sn = tpf_state_find(x->st, dn->name);
		if (sn)
			xstrset(&sn->status, TPF_NODE_TAINTED);
	} else {
		tpf_state_remove(x->st, dn->name);
		if (!interrupted(x))
			tpf_errorx(x->d, dn->name, NULL,
				   "node '%s' was not created: every zone of its group is at "
				   "its declared quota",
				   dn->name);
	}
	save_locked(x);
	pthread_mutex_unlock(x->mu);
	tpf_diags_move(x->d, &ct->zd);
	emit(x, TPF_EVENT_FAILED, TPF_EVENT_CREATING, dn->name, NULL, el, NULL);
	return rc;
}

/*
 * An interrupt stopped the create, in the provider's wait (the request was
 * sent: the node may exist and go on to READY) or before a request was
 * sent. Either way the node stays "pending", as record_pending saved it:
 * the next plan waits for it, adopts it or creates it again. Never
 * forgotten, never tainted: nothing failed.
 */
static int create_interrupted(struct exec *x, const struct tpf_desired_node *dn,
			      struct create_try *ct, double el)
{
	refusals_as_warnings(x, ct);
	emit(x, TPF_EVENT_INTERRUPTED, TPF_EVENT_CREATING, dn->name, NULL, el,
	     ct->tried ? "interrupted: stopped waiting for the create; the node stays pending in "
			 "the state, and the next plan waits for it or creates it again"
		       : "interrupted before the create was sent; the node stays pending in the "
			 "state, and the next plan creates it");
	return TPF_EINTERRUPTED;
}

/* The node exists: record it, then provision its workers if it is READY. */
static int create_done(struct exec *x, const struct tpf_desired_node *dn, struct create_try *ct,
		       double el)
{
	/* Earlier zones' refusals are kept as warnings: the node exists. */
	refusals_as_warnings(x, ct);
	const struct tpf_live_node *ln = &ct->ln;
	char when[32];
	tpf_rfc3339(tpf_now_wall(), when, sizeof(when));
	pthread_mutex_lock(x->mu);
	struct tpf_state_node *sn = tpf_state_find(x->st, dn->name);
	xstrset(&sn->id, ln->id);
	xstrset(&sn->status, TPF_NODE_CREATED);
	xstrset(&sn->created_at, when);
	int rc = save_locked(x);
	pthread_mutex_unlock(x->mu);

	int failed = 0;
	if (ln->state && tpf_node_class(ln->state) != TPF_NODE_READY) {
		/*
		 * A queued resource accepted, not yet provisioned: it may wait
		 * for capacity for hours (or a node already gone on). Its workers
		 * are provisioned by a later apply or watch once the node is
		 * READY (the plan's "provision").
		 */
		int queued = ln->queued_state && !strcmp(ln->queued_state, ln->state);
		char *msg = queued ? xasprintf("queued: its queued resource is %s; its workers are "
					       "provisioned once the node is READY",
					       ln->state)
				   : xasprintf("the node is %s, not READY: its workers are "
					       "provisioned once it is", ln->state);
		emit(x, queued ? TPF_EVENT_QUEUED : TPF_EVENT_NOT_READY, TPF_EVENT_CREATING, dn->name,
		     ln->id, el, msg);
		emit(x, TPF_EVENT_CREATED, TPF_EVENT_CREATING, dn->name, ln->id, el, msg);
		free(msg);
	} else {
		emit(x, TPF_EVENT_READY, TPF_EVENT_CREATING, dn->name, ln->id, el, NULL);
		int *ws = all_workers(dn->recipe.workers);
		failed = provision_workers(x, dn->name, ln, ws, (size_t)dn->recipe.workers, 0);
		free(ws);
	}
	return rc ? rc : failed ? TPF_ERROR : 0;
}

static int exec_create(struct exec *x, size_t ai)
{
	const struct tpf_desired_node *dn = x->p->actions[ai].desired;
	int rc = record_pending(x, dn);
	if (rc)
		return rc;
	struct create_try ct = { .zd = TPF_DIAGS_INIT, .only_zone_errors = 1 };
	tpf_recipe_copy(&ct.r, &dn->recipe);
	/* Labelled with the lineage of the state it is recorded in, not the
	 * plan's: a plan saved from a blank state was made with a lineage that
	 * only its apply writes (plan/ownership.h). */
	char lineage[TPF_LINEAGE_LABEL_LEN + 1];
	if (tpf_lineage_label(x->st->lineage, lineage)) {
		tpf_kvlist_set(&ct.r.labels, TPF_LABEL_LINEAGE, lineage);
		tpf_kvlist_sort(&ct.r.labels);
	}
	fl_begin(x, ai, TPF_EVENT_CREATING, NULL);
	rc = create_in_zones(x, dn, &ct);
	double el = fl_end(x, ai);

	/* watch: a node no zone can take now is deferred, not a failure. */
	int deferral = x->o->refusals_defer && ct.only_zone_errors && (ct.tried || ct.backed_off) &&
		       !interrupted(x);
	/* Stopped by the interrupt rather than refused or failed: in the
	 * provider's wait, before any zone, or between zones that refused. */
	int stopped = rc == TPF_EINTERRUPTED ||
		      (rc && interrupted(x) && (!ct.tried || ct.only_zone_errors));
	if (stopped)
		rc = create_interrupted(x, dn, &ct, el);
	else if (rc && deferral)
		rc = create_deferred(x, dn, &ct, el);
	else if (rc)
		rc = create_failed(x, dn, &ct, el, rc);
	else
		rc = create_done(x, dn, &ct, el);
	tpf_live_node_release(&ct.ln);
	tpf_recipe_release(&ct.r);
	tpf_diags_release(&ct.zd);
	return rc;
}

/* ---- updates, waits ---------------------------------------------------------- */

/* Make sure the state has the node (adoption) and the desired job. */
static int record_node(struct exec *x, const struct tpf_action *a, const struct tpf_live_node *ln)
{
	const struct tpf_desired_node *dn = a->desired;
	pthread_mutex_lock(x->mu);
	struct tpf_state_node *sn = tpf_state_find(x->st, dn->name);
	if (!sn) {
		sn = tpf_state_add(x->st, dn->name);
		xstrset(&sn->group, dn->group);
		sn->index = dn->index;
		sn->generation = 0;
		tpf_recipe_copy(&sn->recipe, ln ? &ln->recipe : &dn->recipe);
		/* When the provider does not say the node was queued (local
		 * cannot tell), the fleet's `queued` is recorded: a plain node
		 * found for a queued group is kept until it is next replaced. */
		if (ln && !ln->recipe.queued && !ln->queued_state)
			sn->recipe.queued = dn->recipe.queued;
		/* The node fields tpuform owns are the declared ones: an
		 * adopted node's own metadata and tags stay its own
		 * (plan/diff_node.c). */
		tpf_node_fields_copy(&sn->recipe.node, &dn->recipe.node);
		tpf_state_node_set_workers(sn, (size_t)dn->recipe.workers);
	}
	xstrset(&sn->status, TPF_NODE_CREATED);
	/* Same name, new id: the node was re-created outside tpuform. Its
	 * workers are new VMs: forget their pins and facts. */
	if (ln && sn->id && ln->id && strcmp(sn->id, ln->id))
		tpf_state_node_set_workers(sn, 0);
	if (ln) {
		xstrset(&sn->id, ln->id);
		xstrset(&sn->created_at, ln->create_time);
	}
	if (sn->nworkers != (size_t)dn->recipe.workers)
		tpf_state_node_set_workers(sn, (size_t)dn->recipe.workers);
	tpf_job_copy(&sn->job, &dn->job);
	int rc = save_locked(x);
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
	struct tpf_state_node *sn = tpf_state_find(x->st, a->node);
	int unit = 0;
	for (size_t i = 0; sn && i < a->nworkers; i++)
		if ((size_t)a->workers[i] < sn->nworkers && sn->workers[a->workers[i]].restarts > unit)
			unit = sn->workers[a->workers[i]].restarts;
	for (size_t i = 0; sn && i < a->nworkers; i++) {
		if ((size_t)a->workers[i] >= sn->nworkers)
			continue;
		struct tpf_state_worker *sw = &sn->workers[a->workers[i]];
		sw->restarts = a->gang ? unit + 1 : sw->restarts + 1;
		xstrset(&sw->restarted_at, now);
	}
	int rc = save_locked(x);
	pthread_mutex_unlock(x->mu);
	return rc;
}

/* Record now as the listed workers' last restart. */
static void stamp_restart(struct exec *x, const struct tpf_action *a)
{
	char now[40];
	tpf_rfc3339(tpf_now_wall(), now, sizeof(now));
	pthread_mutex_lock(x->mu);
	struct tpf_state_node *sn = tpf_state_find(x->st, a->node);
	for (size_t i = 0; sn && i < a->nworkers; i++)
		if ((size_t)a->workers[i] < sn->nworkers)
			xstrset(&sn->workers[a->workers[i]].restarted_at, now);
	save_locked(x);
	pthread_mutex_unlock(x->mu);
}

struct stop_job {
	struct exec *x;
	const struct tpf_state_node *node; /* a private copy */
	const struct tpf_live_node *live;
	const int *workers;
};

/* A tpf_pool_fn: stop the i-th listed worker's session and job. */
static void stop_item(size_t i, void *arg)
{
	struct stop_job *sj = arg;
	/* A worker that cannot be stopped is left to the restart that
	 * follows (the restart verb stops it first); its diagnostics are the
	 * restart's to give. */
	struct tpf_diags quiet = TPF_DIAGS_INIT;
	tpf_provision_stop(sj->x->t, sj->node, sj->live, sj->workers[i], &quiet);
	tpf_diags_release(&quiet);
}

/* Stop the given workers of node `name` in parallel (TERM to each job's
 * process group, KILL after 15 s, as the stop verb does). */
static void stop_workers(struct exec *x, const char *name, const struct tpf_live_node *ln,
			 const int *workers, size_t nworkers)
{
	if (!x->t || !nworkers)
		return;
	pthread_mutex_lock(x->mu);
	struct tpf_state_node *sn = tpf_state_find(x->st, name);
	struct tpf_state_node *copy = sn ? node_clone(sn) : NULL;
	pthread_mutex_unlock(x->mu);
	if (!copy)
		return;
	struct stop_job sj = { .x = x, .node = copy, .live = ln, .workers = workers };
	tpf_pool_run(nworkers, parallelism_of(x), stop_item, &sj, NULL);
	node_free(copy);
}

static int exec_update(struct exec *x, size_t ai, const struct tpf_live_node *ln, int force)
{
	const struct tpf_action *a = &x->p->actions[ai];
	const struct tpf_desired_node *dn = a->desired;
	enum tpf_event_kind started = force ? TPF_EVENT_RESTARTING : TPF_EVENT_UPDATING;
	fl_begin(x, ai, started, a->id);
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
			struct tpf_state_node *sn = tpf_state_find(x->st, a->node);
			if (sn)
				tpf_kvlist_copy(&sn->recipe.labels, &dn->recipe.labels);
			if (sn && a->patch)
				tpf_node_fields_copy(&sn->recipe.node, &dn->recipe.node);
			rc = save_locked(x);
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
		stop_workers(x, a->node, ln, a->workers, a->nworkers);
	if (!rc)
		failed = provision_workers(x, a->node, ln, a->workers, a->nworkers, force);
	if (!rc && force)
		stamp_restart(x, a); /* the backoff runs from the new jobs' start */
	double el = fl_end(x, ai);
	if (rc || failed) {
		emit(x, TPF_EVENT_FAILED, started, a->node, a->id, el, NULL);
		return rc ? rc : TPF_ERROR;
	}
	struct tpf_event ev = TPF_EVENT_INIT(force ? TPF_EVENT_RESTARTED : TPF_EVENT_UPDATED);
	ev.action = started;
	ev.node = a->node;
	ev.id = a->id;
	ev.elapsed = el;
	ev.workers = force ? (int)a->nworkers : -1;
	emit_event(x, &ev);
	return 0;
}

/* Sleep `seconds` in steps of at most 0.2 s; TPF_EINTERRUPTED as soon as
 * the interrupt flag is seen. */
static int nap(struct exec *x, double seconds)
{
	double end = tpf_now_mono() + seconds;
	for (;;) {
		if (interrupted(x))
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

static int exec_action(struct exec *x, size_t ai)
{
	const struct tpf_action *a = &x->p->actions[ai];
	const struct tpf_live_node *ln = tpf_live_set_find(x->live, a->node);
	int rc = 0;
	switch (a->kind) {
	case TPF_ACT_DELETE:
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
		rc = save_locked(x);
		pthread_mutex_unlock(x->mu);
		return rc;
	case TPF_ACT_REPLACE:
		/* Delete first: a preempted node keeps holding quota. The state
		 * entry stays (with its generation) until the create. */
		rc = exec_delete_only(x, ai, 0);
		if (rc)
			return rc;
		pthread_mutex_lock(x->mu);
		x->res->destroyed++;
		pthread_mutex_unlock(x->mu);
		/* fall through */
	case TPF_ACT_CREATE:
		rc = exec_create(x, ai);
		if (!rc || rc == TPF_ERROR) {
			/* The node exists even if a worker failed. */
			pthread_mutex_lock(x->mu);
			struct tpf_state_node *sn = tpf_state_find(x->st, a->node);
			if (sn && !strcmp(sn->status, TPF_NODE_CREATED))
				x->res->added++;
			pthread_mutex_unlock(x->mu);
		}
		return rc;
	case TPF_ACT_UPDATE:
	case TPF_ACT_RESTART:
		rc = exec_update(x, ai, ln, a->kind == TPF_ACT_RESTART);
		break;
	case TPF_ACT_WAIT: {
		struct tpf_live_node fresh;
		memset(&fresh, 0, sizeof(fresh));
		fl_begin(x, ai, TPF_EVENT_WAITING, a->id);
		rc = wait_ready(x, a, &fresh);
		double el = fl_end(x, ai);
		if (!rc)
			rc = exec_update(x, ai, &fresh, 0);
		else if (rc == TPF_EINTERRUPTED)
			emit(x, TPF_EVENT_INTERRUPTED, TPF_EVENT_WAITING, a->node, a->id, el,
			     "interrupted: stopped waiting for READY; the next plan waits again");
		else
			emit(x, TPF_EVENT_FAILED, TPF_EVENT_WAITING, a->node, a->id, el, NULL);
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
	size_t started = tpf_pool_run(x->nqueue, parallelism_of(x), action_item, x,
				      x->o->interrupted);
	pthread_mutex_lock(x->mu);
	x->res->not_started += x->nqueue - started;
	pthread_mutex_unlock(x->mu);
}

int tpf_apply(const struct tpf_plan *p, const struct tpf_fleet *f, struct tpf_provider *prov,
	      const struct tpf_live_set *live, struct tpf_state *st, const char *state_path,
	      const struct tpf_apply_opts *opts, struct tpf_apply_result *res, struct tpf_diags *d)
{
	memset(res, 0, sizeof(*res));
	size_t errors_before = tpf_diags_errors(d);
	struct exec x = {
		.p = p, .f = f, .prov = prov, .live = live, .st = st, .state_path = state_path,
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
	save_locked(&x);
	pthread_mutex_unlock(x.mu);
	pthread_join(hb, NULL);

	for (size_t i = 0; i < p->n; i++)
		free(x.fl[i].id);
	free(x.fl);
	free(x.queue);
	pthread_mutex_destroy(&x.own_mu);
	if (res->failed_actions || tpf_diags_errors(d) > errors_before)
		return TPF_ERROR;
	return res->interrupted || res->not_started ? TPF_EINTERRUPTED : 0;
}
