/*
 * A live node as declared but for labels, patchable fields or its
 * workers' scripts: an update in place, adoption, or workers to provision.
 */
#include "plan/plan_internal.h"
#include "plan/worker_script.h"
#include "util/str.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* The script hash worker w of node sn would have under desired job dj. */
static char *desired_hash(const struct tpf_fleet *f, const struct tpf_state_node *sn,
			  const struct tpf_desired_node *dn, const struct tpf_live_node *ln, int w)
{
	struct tpf_state_node tmp;
	memset(&tmp, 0, sizeof(tmp));
	tmp.name = dn->name;
	tmp.group = dn->group;
	tmp.index = dn->index;
	tmp.generation = sn ? sn->generation : 0;
	tmp.recipe = dn->recipe;
	tmp.job = dn->job;
	/* Keep the worker's restart count: it is part of TPUFORM_RETRY. */
	struct tpf_state_worker *ws = xcalloc((size_t)dn->recipe.workers + 1, sizeof(*ws));
	for (int i = 0; i < dn->recipe.workers; i++) {
		ws[i].index = i;
		ws[i].exit_code = -1;
		const struct tpf_state_worker *old = tpf_state_node_worker(sn, i);
		if (old)
			ws[i].restarts = old->restarts;
	}
	tmp.workers = ws;
	tmp.nworkers = (size_t)dn->recipe.workers;
	char *hash = tpf_provision_hash(f, &tmp, ln, w);
	free(ws);
	return hash;
}

/*
 * Add to a every worker whose script is not the desired one, that reports
 * it never started (a fresh disk), or whose node was re-created under the
 * same name outside tpuform (a new id: new VMs). 1 if the node was
 * re-created.
 */
static int stale_workers(struct tpf_action *a, const struct tpf_diff_input *in,
			 const struct tpf_desired_node *dn, const struct tpf_state_node *sn,
			 const struct tpf_live_node *ln, int *script_changed)
{
	int recreated = 0;
	for (int w = 0; w < dn->recipe.workers; w++) {
		const struct tpf_state_worker *sw = tpf_state_node_worker(sn, w);
		const struct tpf_job_fact *sf = tpf_job_facts_find(in->facts, dn->name, w);
		int never = sf && sf->state == TPF_JOB_STATE_NONE;
		int new_vm = sn && sn->id && ln->id && strcmp(sn->id, ln->id);
		/* Render and hash the desired script only when the answer hangs
		 * on it: a worker the state has no script for (never provisioned,
		 * adopted) is provisioned whatever that hash is. At 10,000 adopted
		 * nodes this was most of a plan's CPU (docs/figures.md). */
		int stale = !sw || !sw->script_hash || never || new_vm;
		if (!stale) {
			char *h = desired_hash(in->fleet, sn, dn, ln, w);
			stale = strcmp(sw->script_hash, h) != 0;
			/* A worker running an older script: whatever made it
			 * differ (the job, mounts, preflight, ...), its job is
			 * restarted with the new one. */
			*script_changed |= stale;
			free(h);
		}
		if (stale)
			tpf_diff_add_worker(a, w);
		recreated |= new_vm;
	}
	return recreated;
}

static void update_reason(struct tpf_action *a, int job_changed, int recreated)
{
	if (a->adopt)
		tpf_diff_reason(a, "adopt", TPF_DIFF_ADOPT_REASON);
	else if (a->nworkers && a->update_labels)
		tpf_diff_reason(a, "labels_and_job", "labels changed, and the bootstrap script changed: "
						        "re-provision workers (the running job will be restarted)");
	else if (a->nworkers && job_changed)
		tpf_diff_reason(a, "job", "bootstrap script changed: re-provision workers (the running job "
					     "will be restarted)");
	else if (a->nworkers && recreated)
		tpf_diff_reason(a, "provision", "the node was re-created outside tpuform (new id): provision "
					        "its new workers");
	else if (a->nworkers)
		tpf_diff_reason(a, "provision", "workers are not provisioned with the current script");
	else if (a->update_labels)
		tpf_diff_reason(a, "labels", "labels changed");
	if (a->patch && !a->adopt && !a->nworkers)
		tpf_diff_reason(a, "patch", a->update_labels ? "labels and node fields change in place"
							     : "node fields change in place");
}

/* Labels in place, adoption, or workers to (re)provision. 1 if an update
 * action was added. */
int tpf_diff_update(struct tpf_plan *p, const struct tpf_diff_input *in,
		    const struct tpf_desired_node *dn, const struct tpf_state_node *sn,
		    const struct tpf_live_node *ln)
{
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_UPDATE, dn, sn, ln);
	a->adopt = !sn;
	if (!tpf_kvlist_equal(&ln->recipe.labels, &dn->recipe.labels)) {
		a->update_labels = 1;
		char *b = tpf_diff_value_map(&ln->recipe.labels);
		char *v = tpf_diff_value_map(&dn->recipe.labels);
		tpf_action_change_take(a, "labels", b, v, 0);
	}
	a->patch = tpf_diff_node_patch(a, &dn->recipe, &ln->recipe, sn ? &sn->recipe : NULL);
	int job_changed = 0;
	if (sn)
		job_changed = tpf_diff_describe_job(a, &sn->job, &dn->job);
	else
		tpf_diff_describe_new(a, dn);
	int script_changed = 0;
	int recreated = stale_workers(a, in, dn, sn, ln, &script_changed);
	update_reason(a, job_changed || (script_changed && !recreated), recreated);
	if (a->nworkers || a->update_labels || a->patch || a->adopt)
		return 1;
	tpf_action_release(a);
	p->n--;
	return 0;
}
