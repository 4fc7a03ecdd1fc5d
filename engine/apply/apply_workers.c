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

static void provision_one(struct worker_job *wj, int w)
{
	struct exec *x = wj->x;
	pthread_mutex_lock(x->mu);
	struct tpf_state_node *sn = tpf_state_find(x->st, wj->node);
	struct tpf_state_node *copy = sn ? tpf_state_node_clone(sn) : NULL;
	pthread_mutex_unlock(x->mu);
	const struct tpf_state_worker *cw = tpf_state_node_worker(copy, w);
	if (!copy || !cw) { /* copy: for the analyzer, which cannot see cw implies it */
		tpf_state_node_free(copy);
		return;
	}

	int changed = 0;
	int before = cw->preflight_failures;
	int rc = tpf_provision_worker(x->t, x->f, copy, wj->live, w, wj->force, &changed, x->d);
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

/* A tpf_pool_fn: provision the i-th listed worker. */
static void provision_item(size_t i, void *arg)
{
	struct worker_job *wj = arg;
	provision_one(wj, wj->workers[i]);
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

