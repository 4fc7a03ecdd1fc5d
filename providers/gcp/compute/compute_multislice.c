/*
 * Multislice on Compute Engine (providers/gcp/compute/compute_engine.h; issue 18;
 * docs/compute-engine.md "Multislice"): a node of `slices: S` is S slices
 * of the group's topology, each its own MIG with its own template and
 * workload policy (compute_mig.c), named NODE-0 .. NODE-(S-1) as the Cloud
 * TPU API names a multislice unit's nodes. They are one restart unit: one
 * node for the plan and the state, with every slice's workers in slice
 * order. Unlike a multislice queued resource, a slice lost is recreated
 * alone: the others keep their VMs (a slice can take minutes to boot), and
 * every worker restarts with one new TPUFORM_RETRY since the job is one
 * program.
 *
 * Each slice MIG's description says which unit it belongs to: "unit"
 * (the node), "slice_index" and "slices" (tpf_compute_mig_description).
 */
#include "providers/gcp/compute/compute_engine.h"
#include "providers/gcp/compute/compute_internal.h"
#include "providers/gcp/gcp_client_internal.h"
#include "model/node_state.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

char *tpf_compute_unit_slice(const char *node, int k)
{
	return xasprintf("%s-%d", node, k);
}

int tpf_compute_mig_unit(json_t *mig, char **unit, int *index, int *nslices)
{
	json_t *desc = tpf_compute_mig_desc(mig);
	const char *u = json_string_value(json_object_get(desc, "unit"));
	json_t *k = json_object_get(desc, "slice_index"), *s = json_object_get(desc, "slices");
	int ok = u && *u && json_is_integer(k) && json_is_integer(s) &&
		 json_integer_value(s) > 1 && json_integer_value(k) >= 0 &&
		 json_integer_value(k) < json_integer_value(s) && json_integer_value(s) <= 1024;
	if (ok) {
		*unit = xstrdup(u);
		*index = (int)json_integer_value(k);
		*nslices = (int)json_integer_value(s);
	}
	json_decref(desc);
	return ok;
}

/* The unit's state from its slices' (NULL name: a slice gone): every
 * slice READY: READY; a slice lost (dead or gone): that slice's loss
 * (PREEMPTED before TERMINATED), and *lost lists them; else CREATING. */
static const char *unit_state(const struct tpf_live_node *sl, int n, char **lost)
{
	struct tpf_buf b = TPF_BUF_INIT;
	int ready = 0, preempted = 0, nlost = 0;
	for (int k = 0; k < n; k++) {
		int dead = !sl[k].name || tpf_node_class(sl[k].state) == TPF_NODE_DEAD;
		if (dead) {
			tpf_buf_addf(&b, "%s%d", nlost++ ? "," : "", k);
			preempted |= sl[k].name && tpf_node_state_of(sl[k].state) == TPF_NODE_STATE_PREEMPTED;
		}
		ready += !dead && tpf_node_class(sl[k].state) == TPF_NODE_READY;
	}
	*lost = nlost ? tpf_buf_detach(&b, NULL) : NULL;
	tpf_buf_release(&b);
	if (nlost)
		return preempted ? "PREEMPTED" : "TERMINATED";
	return ready == n ? "READY" : "CREATING";
}

int tpf_compute_unit_merge(const char *unit, struct tpf_live_node *sl, int n,
			   struct tpf_live_node *out)
{
	tpf_live_node_release(out);
	const struct tpf_live_node *first = NULL;
	size_t nend = 0;
	for (int k = 0; k < n; k++) {
		if (sl[k].name && !first)
			first = &sl[k];
		nend += sl[k].name ? sl[k].nendpoints : 0;
	}
	if (!first)
		return -1;
	out->name = xstrdup(unit);
	/* the unit's id: slice 0's MIG, else the first slice's that exists */
	out->id = xstrdup(first->id);
	out->create_time = xstrdup(first->create_time);
	tpf_recipe_copy(&out->recipe, &first->recipe);
	out->recipe.slices = n;
	out->recipe.workers = first->recipe.workers * n; /* every slice alike */
	out->state = xstrdup(unit_state(sl, n, &out->lost_slices));
	/* With a slice lost, each slice takes exactly its workers' places (a
	 * lost one's without an address), so that worker w of a running slice
	 * is endpoint w: the elastic job runs there (plan/elastic.h). */
	size_t per = (size_t)(first->recipe.workers > 0 ? first->recipe.workers : 1);
	if (out->lost_slices)
		nend = per * (size_t)n;
	out->endpoints = nend ? xcalloc(nend, sizeof(*out->endpoints)) : NULL;
	for (int k = 0; k < n; k++) { /* workers slice by slice */
		size_t i = 0;
		for (; sl[k].name && i < sl[k].nendpoints && (!out->lost_slices || i < per); i++) {
			struct tpf_endpoint *e = &out->endpoints[out->nendpoints++];
			e->ip = xstrdup(sl[k].endpoints[i].ip);
			e->external_ip = xstrdup(sl[k].endpoints[i].external_ip);
			e->port = sl[k].endpoints[i].port;
		}
		for (; out->lost_slices && i < per; i++)
			out->nendpoints++; /* zeroed: no address */
	}
	return 0;
}

/*
 * Make slice k of unit `name` unless it runs: a lost one (dead, or a
 * member gone) is deleted first. One that carries another state's lineage
 * is not this node's slice: TPF_EFOREIGN, untouched. *made: the parts
 * this call's create made or reused as ours (TPF_SLICE_* bits), which a
 * failed create deletes again.
 */
static int ensure_slice(struct tpf_compute_client *cc, const char *sname,
			const struct tpf_recipe *r, json_t *md, unsigned *made, struct tpf_diags *d)
{
	struct tpf_live_node now = { 0 };
	const char *want = tpf_kvlist_get(&r->labels, TPF_LABEL_LINEAGE);
	struct tpf_delete_guard guard = { want, NULL, NULL, NULL, NULL };
	int rc = tpf_compute_read_slice(cc, sname, r, &now, d);
	*made = 0;
	if (rc == 0)
		rc = tpf_delete_check(&guard, "slice", sname, r->zone,
				      tpf_kvlist_get(&now.recipe.labels, TPF_LABEL_LINEAGE), NULL, d);
	if (rc == 0 && tpf_node_class(now.state) != TPF_NODE_DEAD) {
		tpf_live_node_release(&now);
		return 0; /* running, or on its way: kept */
	}
	tpf_live_node_release(&now);
	if (rc == 0) /* lost: its parts go, then it is made again */
		rc = tpf_compute_delete_slice(cc, r->zone, sname, TPF_SLICE_ALL, &guard, d);
	else if (rc == TPF_ENOTFOUND)
		rc = 0;
	if (rc == 0)
		rc = tpf_compute_create_slice(cc, sname, r, md, made, d);
	return rc;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct tpf_live_node *)a)->name, ((const struct tpf_live_node *)b)->name);
}

/* Tell the access layer (gcp_access.h) of unit `name`: its members, slice
 * by slice and by name within a slice (the workers' order), whose guest
 * attributes hold the workers' host keys. One instances.list of the zone. */
static void seen_unit(struct tpf_compute_client *cc, const char *name, const struct tpf_recipe *r,
		      const struct tpf_live_node *unit, struct tpf_diags *d)
{
	struct tpf_live_set nodes = { 0 }, members = { 0 }, all = { 0 };
	const char *fleet = tpf_kvlist_get(&r->labels, TPF_LABEL_FLEET);
	if (tpf_compute_list(cc, r->zone, fleet ? fleet : "", NULL, &nodes, &members, d) == 0) {
		for (int k = 0; k < tpf_recipe_slices(r); k++) {
			char *sname = tpf_compute_unit_slice(name, k);
			size_t first = all.n;
			for (size_t i = 0; i < members.n; i++) {
				const char *s = tpf_kvlist_get(&members.nodes[i].recipe.labels,
							       TPF_COMPUTE_SLICE_LABEL);
				if (s && !strcmp(s, sname))
					tpf_live_node_copy(tpf_live_set_add(&all), &members.nodes[i]);
			}
			if (all.n - first > 1)
				qsort(all.nodes + first, all.n - first, sizeof(*all.nodes), cmp_name);
			free(sname);
		}
		tpf_compute_seen_slice(cc, r->zone, name, unit->id, all.nodes, all.n);
	}
	tpf_live_set_release(&nodes);
	tpf_live_set_release(&members);
	tpf_live_set_release(&all);
}

int tpf_compute_create_unit(struct tpf_compute_client *cc, const char *name,
			    const struct tpf_recipe *r, json_t *md, struct tpf_live_node *out,
			    struct tpf_diags *d)
{
	int n = tpf_recipe_slices(r), rc = 0;
	struct tpf_live_node *sl = xcalloc((size_t)n, sizeof(*sl));
	unsigned *made = xcalloc((size_t)n, sizeof(*made));
	struct tpf_delete_guard guard = { .lineage = tpf_kvlist_get(&r->labels,
								    TPF_LABEL_LINEAGE) };
	/* Every slice is asked for before any is waited for: they boot
	 * together. */
	for (int k = 0; k < n && rc == 0; k++) {
		char *sname = tpf_compute_unit_slice(name, k);
		rc = ensure_slice(cc, sname, r, md, &made[k], d);
		free(sname);
	}
	for (int k = 0; k < n && rc == 0; k++) {
		char *sname = tpf_compute_unit_slice(name, k);
		rc = tpf_compute_wait_slice(cc, sname, r, &sl[k], d);
		free(sname);
	}
	if (rc == 0 && tpf_compute_unit_merge(name, sl, n, out) < 0)
		rc = tpf_errorx(d, name, NULL, "multislice '%s': no slice was made", name);
	if (rc == 0)
		seen_unit(cc, name, r, out, d);
	if (rc < 0 && rc != TPF_EINTERRUPTED) {
		/* What this call made goes again (the template names are
		 * global, and the next zone reuses them); slices that ran
		 * before, and parts that existed (ours, reused; or another
		 * state's, refused), are kept. */
		for (int k = 0; k < n; k++) {
			char *sname = tpf_compute_unit_slice(name, k);
			struct tpf_diags undo = TPF_DIAGS_INIT;
			if (made[k] &&
			    tpf_compute_delete_slice(cc, r->zone, sname, made[k], &guard, &undo) < 0)
				tpf_diags_move(d, &undo);
			tpf_diags_release(&undo);
			free(sname);
		}
	}
	for (int k = 0; k < n; k++)
		tpf_live_node_release(&sl[k]);
	free(sl);
	free(made);
	return rc;
}

int tpf_compute_delete_unit(struct tpf_compute_client *cc, const char *zone, const char *name,
			    int nslices, const struct tpf_delete_guard *guard,
			    struct tpf_diags *d)
{
	int rc = 0;
	for (int k = 0; k < nslices && rc == 0; k++) {
		char *sname = tpf_compute_unit_slice(name, k);
		rc = tpf_compute_delete_slice(cc, zone, sname, TPF_SLICE_ALL, guard, d);
		free(sname);
	}
	return rc;
}
