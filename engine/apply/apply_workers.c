/*
 * Workers of one node, provisioned or stopped in parallel on a pool of
 * their own (util/pool.h), and the Ansible-style recap
 * (engine/apply/apply_internal.h). Provisioning, which is slow, works on a
 * private copy of the node (state/state.h tpf_state_node_clone) and
 * writes the worker's new facts back by name under x->mu.
 */
#include "engine/apply/apply_internal.h"
#include "engine/workers/provision.h"
#include "util/pool.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* A private copy of node wj->node, taken under x->mu (NULL: the node or
 * its worker w is gone from state). */
static struct tpf_state_node *copy_for(struct worker_job *wj, int w)
{
	struct exec *x = wj->x;
	pthread_mutex_lock(x->mu);
	struct tpf_state_node *sn = tpf_state_find(x->st, wj->node);
	struct tpf_state_node *copy = sn ? tpf_state_node_clone(sn) : NULL;
	pthread_mutex_unlock(x->mu);
	if (copy && !tpf_state_node_worker(copy, w)) {
		tpf_state_node_free(copy);
		copy = NULL;
	}
	return copy;
}

/* Worker w's provisioning ended (rc, changed as tpf_provision_worker's;
 * before: its preflight failures before): its facts from copy recorded
 * in state, the recap, the events. Frees copy. */
static void record(struct worker_job *wj, int w, struct tpf_state_node *copy, int rc, int changed,
		   int before)
{
	struct exec *x = wj->x;
	const struct tpf_state_worker *sw = &copy->workers[w];
	int preflight = rc && sw->preflight_failures > before;
	enum tpf_event_kind result = rc == 0 ? (changed ? TPF_EVENT_JOB_STARTED : TPF_EVENT_JOB_RUNNING)
				     : rc == TPF_EUNREACHABLE ? TPF_EVENT_UNREACHABLE
				     : preflight		 ? TPF_EVENT_PREFLIGHT_FAILED
							      : TPF_EVENT_PROVISION_FAILED;
	/* A host whose TPU fails preflight again and again is bad: replace
	 * the node rather than spend restarts on it (issue 21). */
	int bad = preflight && sw->preflight_failures >=
				       tpf_fleet_job_policy(x->f, copy->group)->preflight_failures;
	char host[512];
	snprintf(host, sizeof(host), "%s/w%d", wj->node, w);

	pthread_mutex_lock(x->mu);
	int recorded = tpf_state_record_worker(x->st, wj->node, sw);
	if (recorded && bad)
		tpf_state_record_bad_host(x->st, wj->node, w, sw->preflight_error);
	if (recorded) /* a bad host at once: the next plan replaces it */
		apply_worker_changed_locked(x, bad);
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
	if (preflight)
		ev.message = sw->preflight_error;
	apply_emit_event(x, &ev);
	if (bad) {
		struct tpf_event bh = TPF_EVENT_INIT(TPF_EVENT_BAD_HOST);
		bh.node = wj->node;
		bh.id = copy->id;
		bh.zone = copy->recipe.zone;
		bh.group = copy->group;
		bh.worker = w;
		bh.generation = copy->generation;
		bh.reason = "bad_host";
		bh.message = sw->preflight_error;
		apply_emit_event(x, &bh);
	}
	tpf_state_node_free(copy);
}

static void provision_one(struct worker_job *wj, int w)
{
	struct tpf_state_node *copy = copy_for(wj, w);
	if (!copy)
		return;
	int changed = 0, before = copy->workers[w].preflight_failures;
	int rc = tpf_provision_worker(wj->x->t, wj->x->f, copy, wj->live, w, wj->force, &changed,
				      wj->x->d);
	record(wj, w, copy, rc, changed, before);
}

/* A tpf_pool_fn: provision the i-th listed worker. */
static void provision_item(size_t i, void *arg)
{
	struct worker_job *wj = arg;
	provision_one(wj, wj->workers[i]);
}

/* The workers of one node on the fan-out: their copies, in the order
 * handed to it, with their preflight failures before. */
struct fanout_run {
	struct worker_job *wj;
	struct tpf_state_node **copies;
	int *workers, *before;
};

/* A tpf_fanout_done_fn: the i-th handed worker ended. */
static void fanout_done(void *arg, size_t i, int rc, int changed, struct tpf_diags *d)
{
	struct fanout_run *r = arg;
	tpf_diags_move(r->wj->x->d, d);
	record(r->wj, r->workers[i], r->copies[i], rc, changed, r->before[i]);
	r->copies[i] = NULL;
}

/* The apply's fan-out, made at its first use (NULL: none to be had). */
static struct tpf_fanout *fanout_of(struct exec *x)
{
	pthread_mutex_lock(x->mu);
	if (!x->fanout_tried) {
		x->fanout_tried = 1;
		x->fanout = tpf_fanout_new(x->t, apply_parallelism(x));
	}
	struct tpf_fanout *fo = x->fanout;
	pthread_mutex_unlock(x->mu);
	return fo;
}

/* Provision workers of the node on the fan-out (one event loop for the
 * whole apply, at most -parallelism workers in flight: issue 28). */
static void provision_on_fanout(struct worker_job *wj, struct tpf_fanout *fo,
				const int *workers, size_t nworkers)
{
	struct fanout_run r = { .wj = wj };
	r.copies = xcalloc(nworkers, sizeof(*r.copies));
	r.workers = xcalloc(nworkers, sizeof(int));
	r.before = xcalloc(nworkers, sizeof(int));
	size_t n = 0;
	for (size_t i = 0; i < nworkers; i++) {
		struct tpf_state_node *copy = copy_for(wj, workers[i]);
		if (!copy)
			continue;
		r.copies[n] = copy;
		r.workers[n] = workers[i];
		r.before[n] = copy->workers[workers[i]].preflight_failures;
		n++;
	}
	tpf_fanout_provision(fo, wj->x->f, r.copies, wj->live, r.workers, n, wj->force,
			     fanout_done, &r);
	free(r.copies);
	free(r.workers);
	free(r.before);
}

/* Provision the given workers of node `name` in parallel. Returns the
 * number of workers that failed. An interrupt does not stop a node's
 * workers half-way: they all get the script once its provisioning began. */
int apply_provision_workers(struct exec *x, const char *name, const struct tpf_live_node *ln,
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
	struct tpf_fanout *fo = NULL;
	pthread_mutex_lock(x->mu);
	struct tpf_state_node *sn = tpf_state_find(x->st, name);
	int fits = sn && tpf_fanout_can(x->t, x->f, sn);
	pthread_mutex_unlock(x->mu);
	if (fits)
		fo = fanout_of(x);
	if (fo)
		provision_on_fanout(&wj, fo, workers, nworkers);
	else
		tpf_pool_run(nworkers, apply_parallelism(x), provision_item, &wj, NULL);
	pthread_mutex_destroy(&wj.mu);
	return wj.failures;
}

int *apply_all_workers(int n)
{
	int *w = xcalloc((size_t)(n > 0 ? n : 1), sizeof(int));
	for (int i = 0; i < n; i++)
		w[i] = i;
	return w;
}


struct stop_job {
	struct exec *x;
	const struct tpf_state_node *node; /* a private copy */
	const struct tpf_live_node *live;
	const int *workers;
	const char *reason;
};

/* A tpf_pool_fn: stop the i-th listed worker's session and job. */
static void stop_item(size_t i, void *arg)
{
	struct stop_job *sj = arg;
	/* A worker that cannot be stopped is left to the restart that
	 * follows (the restart verb stops it first); its diagnostics are the
	 * restart's to give. */
	struct tpf_diags quiet = TPF_DIAGS_INIT;
	tpf_provision_stop(sj->x->t, sj->node, sj->live, sj->workers[i], sj->reason, &quiet);
	tpf_diags_release(&quiet);
}

/* Stop the given workers of node `name` in parallel (TERM to each job's
 * process group, KILL after 15 s, as the stop verb does). */
void apply_stop_workers(struct exec *x, const char *name, const struct tpf_live_node *ln,
			 const int *workers, size_t nworkers, const char *reason)
{
	if (!x->t || !nworkers)
		return;
	pthread_mutex_lock(x->mu);
	struct tpf_state_node *sn = tpf_state_find(x->st, name);
	struct tpf_state_node *copy = sn ? tpf_state_node_clone(sn) : NULL;
	pthread_mutex_unlock(x->mu);
	if (!copy)
		return;
	struct stop_job sj = { .x = x, .node = copy, .live = ln, .workers = workers, .reason = reason };
	tpf_pool_run(nworkers, apply_parallelism(x), stop_item, &sj, NULL);
	tpf_state_node_free(copy);
}

