/*
 * Refresh and session probes (engine/pipeline/refresh.h).
 */
#include "engine/pipeline/refresh.h"
#include "plan/ownership.h"
#include "engine/workers/provision.h"
#include "model/node_state.h"
#include "providers/transport.h"
#include "util/pool.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/*
 * A zone the provider could not list (the project cannot use it now) reads
 * as empty, so that creates move on to other zones. But when the state
 * records a node of ours there, empty would mean "gone, create it again":
 * a second billable node while the first may still run (an IAM change, a
 * zone briefly unreachable), and the first forgotten. Stop instead.
 */
static int check_unlisted(const struct tpf_state *st, const struct tpf_live_set *live,
			  struct tpf_diags *d)
{
	int rc = 0;
	for (size_t i = 0; i < st->nnodes; i++) {
		const struct tpf_state_node *n = &st->nodes[i];
		if (!n->recipe.zone || !tpf_live_set_zone_unlisted(live, n->recipe.zone) ||
		    n->status == TPF_NODE_COMPLETED)
			continue;
		tpf_errorx(d, n->name,
			   "check the project's access to the zone (gcloud compute tpus tpu-vm list "
			   "--zone ZONE); if the node is truly gone, 'tpuform state rm NODE' forgets it",
			   "cannot tell whether node '%s' still exists: zone '%s' answered that it is "
			   "not found or unauthorized, and the state records the node there",
			   n->name, n->recipe.zone);
		rc = TPF_ERROR;
	}
	return rc;
}

int tpf_refresh(struct tpf_provider *prov, const struct tpf_fleet *f, const struct tpf_state *st,
		struct tpf_live_set *live, struct tpf_diags *d)
{
	size_t nz = 0;
	const char **fz = tpf_fleet_zones(f, &nz);
	const char **zones = xcalloc(nz + st->nnodes + 1, sizeof(char *));
	memcpy(zones, fz, nz * sizeof(char *));
	free(fz);
	for (size_t i = 0; i < st->nnodes; i++) {
		const char *z = st->nodes[i].recipe.zone;
		int seen = !z;
		for (size_t k = 0; k < nz && !seen; k++)
			seen = !strcmp(zones[k], z);
		if (!seen)
			zones[nz++] = z;
	}
	int rc = prov->ops->refresh(prov, zones, nz, live, d);
	free(zones);
	if (rc == 0)
		rc = check_unlisted(st, live, d);
	/* Only what this state owns is planned on: a node of the same fleet
	 * name made by another state is removed from the live set, and the
	 * run stops (plan/ownership.h). */
	if (rc == 0)
		rc = tpf_ownership_filter(live, st, d);
	return rc;
}

struct probe_task {
	const struct tpf_state_node *node;
	const struct tpf_live_node *live;
	int worker;
	struct tpf_worker_report report;
	int rc;
	int skipped; /* covered by the time its turn came: no fact */
};

struct probe_pool {
	struct tpf_transport *t;
	int once; /* tpf_provision_probe once */
	tpf_probe_skip_fn skip;
	void *skip_arg;
	struct probe_task *tasks;
	size_t n;
};

/* A tpf_pool_fn: probe the i-th worker. */
static void probe_item(size_t i, void *arg)
{
	struct probe_pool *pp = arg;
	struct probe_task *t = &pp->tasks[i];
	/* Asked again at its turn: a probe of thousands takes a while, and a
	 * job wait that answered meanwhile covers the worker (watch). */
	if (pp->skip && pp->skip(pp->skip_arg, t->node, t->worker)) {
		t->skipped = 1;
		return;
	}
	/* Unreachable is a fact, not an error: keep those diagnostics out. */
	struct tpf_diags local = TPF_DIAGS_INIT;
	t->rc = tpf_provision_probe(pp->t, t->node, t->live, t->worker, pp->once, &t->report,
				    &local);
	tpf_diags_release(&local);
}

int tpf_probe_jobs(struct tpf_provider *prov, const struct tpf_state *st,
		       const struct tpf_live_set *live, int parallelism, int once,
		       tpf_probe_skip_fn skip, void *skip_arg, struct tpf_job_facts *out,
		       struct tpf_diags *d)
{
	struct tpf_transport *t = prov->ops->transport ? prov->ops->transport(prov) : NULL;
	if (!t)
		return 0;
	struct probe_pool pp = { .t = t, .once = once, .skip = skip, .skip_arg = skip_arg };
	size_t cap = 0;
	for (size_t i = 0; i < st->nnodes; i++)
		cap += st->nodes[i].nworkers;
	pp.tasks = xcalloc(cap ? cap : 1, sizeof(*pp.tasks));
	for (size_t i = 0; i < st->nnodes; i++) {
		const struct tpf_state_node *sn = &st->nodes[i];
		const struct tpf_live_node *ln = tpf_live_set_find(live, sn->name);
		if (!ln || tpf_node_class(ln->state) != TPF_NODE_READY)
			continue;
		for (size_t w = 0; w < sn->nworkers; w++) {
			if (!sn->workers[w].script_hash)
				continue; /* never provisioned: the diff already acts */
			if (skip && skip(skip_arg, sn, (int)w))
				continue;
			struct probe_task *task = &pp.tasks[pp.n++];
			task->node = sn;
			task->live = ln;
			task->worker = (int)w;
		}
	}
	tpf_pool_run(pp.n, parallelism > 0 ? parallelism : 10, probe_item, &pp, NULL);

	for (size_t i = 0; i < pp.n; i++) {
		struct probe_task *task = &pp.tasks[i];
		if (task->skipped)
			continue;
		XGROW(out->items, out->n + 1, out->alloc);
		struct tpf_job_fact *f = &out->items[out->n++];
		memset(f, 0, sizeof(*f));
		f->node = xstrdup(task->node->name);
		f->worker = task->worker;
		f->state = TPF_JOB_STATE_UNREACHABLE;
		f->exit_code = -1;
		f->stalled_for = -1;
		if (task->rc == 0 && task->report.reachable) {
			f->stalled_for = task->report.stalled_for;
			f->state = task->report.state;
			f->exit_code = task->report.exit_code;
			f->script_hash = xstrdup(task->report.script_hash);
			f->last_log = xstrdup(task->report.last_log);
			f->have_progress = 1;
			f->step = task->report.step;
			f->checkpoint_step = task->report.checkpoint_step;
			f->checkpoint = xstrdup(task->report.checkpoint);
			f->disruption = xstrdup(task->report.disruption);
		}
		tpf_worker_report_release(&task->report);
	}
	free(pp.tasks);
	return 0;
}
