/*
 * The watch loop's healer (engine/watch/watch_internal.h).
 *
 * Healing runs on background threads so that rounds keep their rhythm: a
 * round that finds a preemption must not wait for the previous round's
 * replacement (a delete, a create and provisioning, minutes on Cloud TPU)
 * before it refreshes again. Heals share one session (engine/pipeline/pipeline.h,
 * the loop's type: fleet, provider, state, backend and lock), under one
 * mutex (engine/apply/apply.h state_mu); a node with a heal in flight is
 * "busy" and left out of later rounds' plans until it is done. The state
 * lock is held exactly while any heal runs.
 */
#include "engine/checkpoints.h"
#include "engine/watch/watch_internal.h"
#include "engine/state_store.h"
#include "plan/backoff.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct tpf_healer {
	pthread_mutex_t mu;
	pthread_cond_t idle;
	const struct tpf_watch_opts *o;
	/*
	 * What heals run against, the loop's session type (engine/pipeline/pipeline.h)
	 * kept across rounds: its fleet and provider (replaced only when idle
	 * and the fleet file changed), the shared state (saved by the heals),
	 * its backend and the state lock (held exactly while heals run). Not
	 * refreshed: each heal gets the live nodes of the round that started
	 * it. Its diagnostics are unused (each heal has its own).
	 */
	struct tpf_pipeline s;
	char **busy;              /* nodes a heal in flight acts on */
	size_t nbusy, alloc;
	/* Nodes whose heal ended, and when (monotonic seconds): a round that
	 * refreshed before that saw them as they were before the heal (a job
	 * "exited" that the heal has just restarted) and must not act on them.
	 * began: when the node's last heal began (a job a wait saw appear
	 * after that is the heal's own); at: 0 while the first is in flight. */
	struct healed {
		char *node;
		double at;
		double began;
	} *healed;
	size_t nhealed, healed_alloc;
	int running;              /* heals in flight */
	unsigned long ended;      /* heals ended so far */
	/* Every heal thread not yet joined. Joined, not detached: a thread
	 * that has said it is done still runs its thread-local destructors
	 * (libcrypto's per-thread state), and a process that exits before
	 * they ran leaks them (LeakSanitizer saw it in the SIGTERM path). */
	struct heal_thread {
		pthread_t th;
		int done; /* under mu: the thread touches nothing of h any more */
	} **threads;
	size_t nthreads, threads_alloc;
	struct tpf_backoff *backoff;
	/* A heal created or deleted nodes (tpf_healer_take_nodes_changed):
	 * when the last such heal ended, monotonic seconds. */
	int nodes_changed;
	double nodes_changed_at;
	struct tpf_watch_lease *lease; /* Cloud Storage state: the leader lease; else NULL */
};

struct heal_job {
	struct tpf_healer *h;
	struct heal_thread *self; /* NULL when healing in the caller's thread */
	struct tpf_plan plan;
	struct tpf_live_set live;
};

struct tpf_healer *tpf_healer_new(const struct tpf_watch_opts *o)
{
	struct tpf_healer *h = xcalloc(1, sizeof(*h));
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->idle, NULL);
	tpf_pipeline_init(&h->s);
	h->s.o.file = o->file;
	h->s.o.parallelism = o->parallelism;
	h->o = o;
	/* Zones that refuse are retried after interval, 2 interval, ... 1 min
	 * (or interval, when longer). */
	h->backoff = tpf_backoff_new(o->interval, TPF_ZONE_BACKOFF_CAP);
	return h;
}

static int busy_has(const struct tpf_healer *h, const char *node)
{
	for (size_t i = 0; i < h->nbusy; i++)
		if (!strcmp(h->busy[i], node))
			return 1;
	return 0;
}

/* The record of node's heals, made when missing; h->mu held. */
static struct healed *healed_of(struct tpf_healer *h, const char *node)
{
	for (size_t i = 0; i < h->nhealed; i++)
		if (!strcmp(h->healed[i].node, node))
			return &h->healed[i];
	XGROW(h->healed, h->nhealed + 1, h->healed_alloc);
	struct healed *e = &h->healed[h->nhealed++];
	e->node = xstrdup(node);
	e->at = e->began = 0;
	return e;
}

/* Call with h->mu held. */
static void healed_now(struct tpf_healer *h, const char *node)
{
	healed_of(h, node)->at = tpf_now_mono();
}

/* How long a heal is remembered, seconds: a round may plan from session
 * facts its background probe gathered up to this long ago (engine/
 * watch_probe.c), so `since` can go back that far. */
#define HEALED_KEEP 3600.0

/* Was node healed at or after `since`? Entries far older than any since
 * still to come are dropped on the way. */
static int healed_since(struct tpf_healer *h, const char *node, double since)
{
	int hit = 0;
	for (size_t i = 0; i < h->nhealed;) {
		double last = h->healed[i].at > h->healed[i].began ? h->healed[i].at
								   : h->healed[i].began;
		if (last < since - HEALED_KEEP) {
			free(h->healed[i].node);
			h->healed[i] = h->healed[--h->nhealed];
			continue;
		}
		hit |= h->healed[i].at >= since && !strcmp(h->healed[i].node, node);
		i++;
	}
	return hit;
}

static void busy_remove(struct tpf_healer *h, const char *node)
{
	for (size_t i = 0; i < h->nbusy; i++) {
		if (!strcmp(h->busy[i], node)) {
			free(h->busy[i]);
			h->busy[i] = h->busy[--h->nbusy];
			return;
		}
	}
}

/* Release the state lock (h->mu held) and take it out of the lease. */
static void unlock_state(struct tpf_healer *h)
{
	tpf_lock_release(&h->s.lock);
	if (h->lease) /* no request: the next renewal drops it */
		tpf_watch_lease_note_lock(h->lease, NULL, 0, NULL);
}

/* engine/apply/apply.h events of a heal, passed on as TPF_WATCH_EVENT. */
static void forward_apply_event(const struct tpf_event *ev, void *ctx)
{
	tpf_watch_event(ctx, ev);
}

static void *heal_thread(void *arg)
{
	struct heal_job *job = arg;
	struct tpf_healer *h = job->h;
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_apply_opts opts = {
		.parallelism = h->o->parallelism,
		.heartbeat = 3600,
		.wait_timeout = 1200,
		.on_event = forward_apply_event,
		.ctx = (void *)h->o,
		.interrupted = h->o->interrupted,
		.backoff = h->backoff,
		.refusals_defer = 1,
		.state_mu = &h->mu,
	};
	struct tpf_apply_result res;
	tpf_apply(&job->plan, &h->s.fleet, h->s.prov, &job->live, &h->s.state, &opts, &res, &d);
	int changed = res.added || res.waiting || res.destroyed; /* a waiting node is new too */
	tpf_apply_result_release(&res);
	tpf_watch_diags(h->o, &d);
	tpf_diags_release(&d);

	pthread_mutex_lock(&h->mu);
	if (changed) {
		h->nodes_changed = 1;
		h->nodes_changed_at = tpf_now_mono();
	}
	for (size_t i = 0; i < job->plan.n; i++) {
		busy_remove(h, job->plan.actions[i].node);
		healed_now(h, job->plan.actions[i].node);
	}
	h->ended++;
	if (--h->running == 0) {
		unlock_state(h);
		pthread_cond_broadcast(&h->idle);
	}
	tpf_plan_release(&job->plan);
	tpf_live_set_release(&job->live);
	if (job->self)
		job->self->done = 1;
	pthread_mutex_unlock(&h->mu);
	free(job);
	return NULL;
}

/* Load the fleet file again when it changed since the last heal (or its
 * provider could not be opened then), and open its provider. Returns 0, or
 * -1 with diagnostics in d. */
static int reload_fleet(struct tpf_healer *h, const struct tpf_pipeline *s, struct tpf_diags *d)
{
	struct tpf_pipeline *hs = &h->s;
	if (hs->have_fleet && hs->prov && !strcmp(hs->fleet_sha256, s->fleet_sha256))
		return 0;
	if (hs->prov)
		tpf_provider_free(hs->prov);
	hs->prov = NULL;
	if (hs->have_fleet)
		tpf_fleet_release(&hs->fleet);
	hs->have_fleet = 0;
	if (tpf_fleet_load(&hs->fleet, s->fleet.path, d) == 0 &&
	    tpf_fleet_resolve_secrets(&hs->fleet, d) != 0)
		tpf_fleet_release(&hs->fleet); /* zeroed: the next test fails */
	if (hs->fleet.path) {
		hs->have_fleet = 1;
		xstrset(&hs->fleet_sha256, s->fleet_sha256);
		if (tpf_provider_open(&hs->prov, &hs->fleet, d))
			hs->prov = NULL;
	}
	return hs->prov ? 0 : -1;
}

/* Call with h->mu held and no heal running: take the state lock (quiet:
 * a lock held elsewhere is no news) and load the state into h->s.
 * Returns 0, or -1 with the lock not held (diagnostics emitted). */
static int lock_and_load(struct tpf_healer *h, const struct tpf_pipeline *s, int quiet,
			 struct tpf_diags *d)
{
	struct tpf_pipeline *hs = &h->s;
	if (!hs->backend && tpf_fleet_backend_open(&hs->backend, &s->fleet, d) == 0 && h->lease)
		tpf_watch_lease_fence(h->lease, hs->backend);
	int rc = hs->backend ? tpf_backend_lock(hs->backend, &hs->lock, "OperationTypeApply", 0, d)
			     : TPF_ERROR;
	if (rc) {
		/* Only a conflict is "locked"; say why otherwise (a state
		 * backend that cannot be opened, a full disk that cannot take
		 * the lock-info file). */
		if (rc == TPF_ELOCKED && !quiet)
			tpf_watch_note(h->o, TPF_EVENT_LOCKED, NULL,
				       "the state is locked by another tpuform: healing waits for "
				       "the next round");
		else if (rc != TPF_ELOCKED)
			tpf_watch_diags(h->o, d);
		return -1;
	}
	/* Name the lock in the lease at once: a successor that finds this
	 * process dead removes it (engine/watch/watch_lease.c). */
	if (h->lease && tpf_watch_lease_note_lock(h->lease, hs->lock.id, 1, d)) {
		tpf_watch_diags(h->o, d);
		tpf_lock_release(&hs->lock);
		return -1;
	}
	if (hs->have_state)
		tpf_state_release(&hs->state);
	hs->have_state = 0;
	rc = tpf_backend_load(hs->backend, &hs->state, d);
	hs->have_state = 1;
	if (rc) {
		tpf_watch_diags(h->o, d);
		unlock_state(h);
		return -1;
	}
	return 0;
}

/* Call with h->mu held and no heal running: take the lock, load the state
 * (and the fleet, when it changed) that heals will share. */
static int healer_start(struct tpf_healer *h, const struct tpf_pipeline *s)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	int rc = lock_and_load(h, s, 0, &d);
	if (rc)
		goto done;
	if (h->s.state.serial != s->state.serial) {
		tpf_watch_note(h->o, TPF_EVENT_REPLAN, NULL,
			       "the state changed since this round's refresh: planning again "
			       "next round");
		rc = -1;
	} else {
		rc = reload_fleet(h, s, &d);
	}
	if (rc) {
		tpf_watch_diags(h->o, &d);
		unlock_state(h);
	}
done:
	tpf_diags_release(&d);
	return rc;
}

/* Drop p's actions on busy nodes, and (since >= 0) on nodes healed since
 * then (call with h->mu held). */
static void drop_busy(struct tpf_healer *h, struct tpf_plan *p, double since)
{
	size_t keep = 0;
	for (size_t i = 0; i < p->n; i++) {
		const char *node = p->actions[i].node;
		if (busy_has(h, node) || (since >= 0 && healed_since(h, node, since))) {
			tpf_action_release(&p->actions[i]);
			continue;
		}
		p->actions[keep++] = p->actions[i];
	}
	p->n = keep;
	tpf_plan_recount(p);
}

/* Join the heal threads that are done (all of them when `all`, waiting for
 * each). Called with h->mu held when !all; without it when all. A done
 * thread only has to return, so joining it while holding mu is brief. */
static void reap_threads(struct tpf_healer *h, int all)
{
	size_t keep = 0;
	for (size_t i = 0; i < h->nthreads; i++) {
		struct heal_thread *t = h->threads[i];
		if (all || t->done) {
			pthread_join(t->th, NULL);
			free(t);
		} else {
			h->threads[keep++] = t;
		}
	}
	h->nthreads = keep;
}

void tpf_healer_heal(struct tpf_healer *h, const struct tpf_pipeline *s, struct tpf_plan *p)
{
	pthread_mutex_lock(&h->mu);
	drop_busy(h, p, -1);
	if (p->n && h->lease) {
		/* The fence before a heal starts: still the leader? */
		struct tpf_diags d = TPF_DIAGS_INIT;
		if (tpf_watch_lease_held(h->lease, &d)) {
			tpf_watch_diags(h->o, &d);
			tpf_plan_release(p);
		}
		tpf_diags_release(&d);
	}
	if (!p->n || (h->running == 0 && healer_start(h, s))) {
		pthread_mutex_unlock(&h->mu);
		return;
	}
	struct heal_job *job = xcalloc(1, sizeof(*job));
	job->h = h;
	job->plan = *p;
	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < job->plan.n; i++) {
		const char *node = job->plan.actions[i].node;
		XGROW(h->busy, h->nbusy + 1, h->alloc);
		h->busy[h->nbusy++] = xstrdup(node);
		healed_of(h, node)->began = tpf_now_mono();
		const struct tpf_live_node *ln = tpf_live_set_find(&s->live, node);
		if (ln)
			tpf_live_node_copy(tpf_live_set_add(&job->live), ln);
	}
	h->running++;
	reap_threads(h, 0);
	/*
	 * A thread of its own, not util/pool.h tpf_pool_run: a pool returns
	 * when its items are done, and a heal must outlive the round that
	 * started it (tpf_apply already fans the heal's actions out on its own
	 * pool). Joined by reap_threads once done.
	 */
	struct heal_thread *t = xcalloc(1, sizeof(*t));
	job->self = t;
	if (pthread_create(&t->th, NULL, heal_thread, job)) {
		/* No thread: heal in this one instead. */
		free(t);
		job->self = NULL;
		pthread_mutex_unlock(&h->mu);
		heal_thread(job);
		return;
	}
	XGROW(h->threads, h->nthreads + 1, h->threads_alloc);
	h->threads[h->nthreads++] = t;
	pthread_mutex_unlock(&h->mu);
}

/* A node's recorded checkpoint changed: a CHECKPOINT event carries it to
 * the run ledger (engine/watch/watch_hooks.c). */
static void checkpoint_event(const struct tpf_state_node *sn, void *ctx)
{
	struct tpf_healer *h = ctx;
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_CHECKPOINT);
	ev.node = sn->name;
	ev.generation = sn->generation;
	ev.checkpoint = sn->last_checkpoint;
	tpf_watch_event(h->o, &ev);
}

void tpf_healer_record_checkpoints(struct tpf_healer *h, const struct tpf_pipeline *s)
{
	if (!tpf_checkpoints_news(&s->state, &s->facts))
		return;
	char now[40];
	tpf_rfc3339(tpf_now_wall(), now, sizeof(now));
	struct tpf_diags d = TPF_DIAGS_INIT;
	pthread_mutex_lock(&h->mu);
	/* Heals in flight hold the lock and share h->s.state: record there.
	 * Else take the lock for this one write; held elsewhere, the next
	 * round tries again (the facts still differ from the state). */
	int own = h->running == 0;
	if (!own || lock_and_load(h, s, 1, &d) == 0) {
		if (tpf_checkpoints_record(&h->s.state, &s->facts, now, checkpoint_event, h) &&
		    tpf_state_save(&h->s.state, &d))
			tpf_watch_diags(h->o, &d);
		if (own)
			unlock_state(h);
	}
	pthread_mutex_unlock(&h->mu);
	tpf_diags_release(&d);
}

void tpf_healer_set_lease(struct tpf_healer *h, struct tpf_watch_lease *wl)
{
	pthread_mutex_lock(&h->mu);
	h->lease = wl;
	pthread_mutex_unlock(&h->mu);
}

void tpf_healer_drop_stale_facts(struct tpf_healer *h, struct tpf_job_facts *f, double since)
{
	pthread_mutex_lock(&h->mu);
	size_t keep = 0;
	for (size_t i = 0; i < f->n; i++) {
		struct tpf_job_fact *sf = &f->items[i];
		if (busy_has(h, sf->node) || healed_since(h, sf->node, since)) {
			/* Its strings go; its slot is reused below. */
			tpf_job_fact_release(sf);
			continue;
		}
		f->items[keep++] = *sf;
	}
	f->n = keep;
	pthread_mutex_unlock(&h->mu);
}

/* Did a heal make this wait's fact stale (h->mu held)? See
 * tpf_healer_drop_stale_waits. */
static int wait_stale(struct tpf_healer *h, const char *node, const struct tpf_wait_time *t)
{
	if (t->job_at <= 0)
		return healed_since(h, node, t->at);
	for (size_t i = 0; i < h->nhealed; i++)
		if (!strcmp(h->healed[i].node, node))
			return h->healed[i].began >= t->job_at;
	return 0;
}

size_t tpf_healer_drop_stale_waits(struct tpf_healer *h, struct tpf_job_facts *f,
				   const struct tpf_wait_time *t)
{
	size_t held = 0, keep = 0;
	pthread_mutex_lock(&h->mu);
	for (size_t i = 0; i < f->n; i++) {
		struct tpf_job_fact *sf = &f->items[i];
		int busy = busy_has(h, sf->node);
		if (busy || wait_stale(h, sf->node, &t[i])) {
			if (busy && sf->state != TPF_JOB_STATE_UNREACHABLE &&
			    sf->state != TPF_JOB_STATE_ALIVE)
				held++;
			tpf_job_fact_release(sf);
			continue;
		}
		f->items[keep++] = *sf;
	}
	f->n = keep;
	pthread_mutex_unlock(&h->mu);
	return held;
}

unsigned long tpf_healer_ended(struct tpf_healer *h)
{
	pthread_mutex_lock(&h->mu);
	unsigned long n = h->ended;
	pthread_mutex_unlock(&h->mu);
	return n;
}

void tpf_healer_drop_busy(struct tpf_healer *h, struct tpf_plan *p, double since)
{
	pthread_mutex_lock(&h->mu);
	drop_busy(h, p, since);
	pthread_mutex_unlock(&h->mu);
}

int tpf_healer_running(struct tpf_healer *h)
{
	pthread_mutex_lock(&h->mu);
	int n = h->running;
	pthread_mutex_unlock(&h->mu);
	return n;
}

int tpf_healer_take_nodes_changed(struct tpf_healer *h, double since)
{
	pthread_mutex_lock(&h->mu);
	int take = h->nodes_changed && !h->running && h->nodes_changed_at < since;
	if (take)
		h->nodes_changed = 0;
	pthread_mutex_unlock(&h->mu);
	return take;
}

void tpf_healer_finish(struct tpf_healer *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	while (h->running)
		pthread_cond_wait(&h->idle, &h->mu);
	pthread_mutex_unlock(&h->mu);
	/* Every heal has said it is done; wait until their threads are gone. */
	reap_threads(h, 1);
	free(h->threads);
	for (size_t i = 0; i < h->nbusy; i++)
		free(h->busy[i]);
	free(h->busy);
	for (size_t i = 0; i < h->nhealed; i++)
		free(h->healed[i].node);
	free(h->healed);
	tpf_pipeline_close(&h->s); /* unlocks the state, then frees its backend */
	tpf_backoff_free(h->backoff);
	pthread_cond_destroy(&h->idle);
	pthread_mutex_destroy(&h->mu);
	free(h);
}
