/*
 * Before the executor deletes a node (a completion, a replacement, a
 * destroy, a lower count), the tail of its workers' job logs is kept
 * beside the state (engine/workers/kept_logs.h), so `tpuform logs NODE -previous`
 * can show why a job ended after its VMs are gone. Keeping is best
 * effort: a warning at worst, never a reason not to delete, and the state
 * is not touched.
 */
#include "engine/apply/apply_internal.h"
#include "engine/workers/kept_logs.h"
#include "model/node_state.h"

#include <string.h>

/* 1 when some worker of sn was provisioned: it has a job log. */
static int provisioned(const struct tpf_state_node *sn)
{
	for (size_t w = 0; w < sn->nworkers; w++)
		if (sn->workers[w].script_hash)
			return 1;
	return 0;
}

void apply_keep_logs(struct exec *x, const struct tpf_action *a)
{
	if (!x->t)
		return; /* a provider without workers to reach */
	pthread_mutex_lock(x->mu);
	const struct tpf_state_node *cur = tpf_state_find(x->st, a->node);
	/* A copy: the fetch runs outside the state's lock. */
	struct tpf_state_node *sn = cur ? tpf_state_node_clone(cur) : NULL;
	pthread_mutex_unlock(x->mu);
	if (!sn || !provisioned(sn)) {
		tpf_state_node_free(sn);
		return;
	}
	const struct tpf_live_node *ln = tpf_live_set_find(x->live, a->node);
	if (!ln || tpf_node_class(ln->state) != TPF_NODE_READY) {
		/* Its VMs are gone or going (PREEMPTED, TERMINATED, missing):
		 * there is nothing to reach. */
		tpf_warn(x->d, a->node, "the logs of node '%s' were not kept: it is %s, so its "
			 "workers cannot be reached", a->node, ln && ln->state ? ln->state : "missing");
		tpf_state_node_free(sn);
		return;
	}
	struct tpf_kept_store *ks;
	struct tpf_diags od = TPF_DIAGS_INIT;
	if (tpf_kept_open(&ks, x->f, &od))
		tpf_warn(x->d, a->node, "the logs of node '%s' were not kept: %s", a->node,
			 od.n ? od.items[0].summary : "the store cannot be opened");
	else
		tpf_kept_keep(ks, x->t, sn, ln, x->d);
	tpf_kept_close(ks);
	tpf_diags_release(&od);
	tpf_state_node_free(sn);
}
