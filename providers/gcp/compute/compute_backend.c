/*
 * The Compute Engine back-end of the gcp provider (gcp_backend.h):
 * instances (compute_api.c), multi-host slices as MIGs (compute_mig.c,
 * compute_slice_parts.c) and multislice nodes (compute_multislice.c);
 * docs/compute-engine.md.
 */
#include "providers/gcp/compute/compute_engine.h"
#include "providers/gcp/compute/compute_internal.h"
#include "providers/gcp/gcp_access.h"
#include "providers/gcp/gcp_backend.h"
#include "providers/gcp/gcp_fields.h"
#include "providers/gcp/gcp_sshkeys.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* A zone's slice members, until the fleet-wide lists make them slices;
 * then how many of the zone's nodes are single instances. */
struct ce_zone {
	struct tpf_live_set members;
	size_t nsingle;
};

static int ce_list_zone(struct tpf_gcp_ctx *g, struct tpf_gcp_zone *z)
{
	struct ce_zone *c = xcalloc(1, sizeof(*c));
	z->priv = c;
	/* Preemptions are marked and slices made from members once the
	 * aggregated lists, walked meanwhile, are in (ce_finish_zone). */
	int rc = tpf_compute_list(g->compute, z->zone, z->fleet, NULL, &z->set, &c->members,
				  &z->diags);
	c->nsingle = z->set.n;
	return rc;
}

static int ce_list_fleet(struct tpf_gcp_ctx *g, void **all, struct tpf_live_set *ids,
			 struct tpf_diags *d)
{
	return tpf_compute_refresh_fleet(g->compute, g->fleet->name, all, ids, d);
}

static void ce_finish_zone(struct tpf_gcp_ctx *g, void *all, struct tpf_gcp_zone *z)
{
	struct ce_zone *c = z->priv;
	c->nsingle = tpf_compute_refresh_zone(g->compute, all, z->zone, &z->set, &c->members);
}

/* Each node's shape, for remove() and set_labels(). */
static void ce_learn(struct tpf_gcp_ctx *g, struct tpf_gcp_zone *z)
{
	struct ce_zone *c = z->priv;
	for (size_t k = 0; z->rc >= 0 && k < z->set.n; k++) {
		const struct tpf_live_node *n = &z->set.nodes[k];
		int slice = c && k >= c->nsingle;
		tpf_gcp_facts_set(&g->facts, z->zone, n->name,
				  !slice			 ? TPF_GCP_SHAPE_INSTANCE
				  : tpf_recipe_slices(&n->recipe) > 1 ? TPF_GCP_SHAPE_MULTISLICE
								     : TPF_GCP_SHAPE_SLICE,
				  NULL, slice ? n->recipe.slices : 0);
	}
	if (c)
		tpf_live_set_release(&c->members);
	free(c);
	z->priv = NULL;
}

/*
 * A multislice node (compute_multislice.c) made or completed in r->zone.
 * Its slices live in one zone: if a refresh saw it in another (the zone
 * fallback moved on, or the group's zones changed), the slices there are
 * deleted first, so none is left behind.
 */
static int unit_create(struct tpf_gcp_ctx *g, const char *name, const struct tpf_recipe *r,
		       json_t *md, struct tpf_live_node *out, struct tpf_diags *d)
{
	int rc = 0;
	size_t n = 0;
	char **elsewhere = tpf_gcp_facts_multislice_zones(&g->facts, name, r->zone, &n);
	/* Only this state's slices go (r carries its lineage). */
	struct tpf_delete_guard guard = { .lineage = tpf_kvlist_get(&r->labels, TPF_LABEL_LINEAGE) };
	for (size_t i = 0; i < n; i++) {
		if (rc == 0)
			rc = tpf_compute_delete_unit(g->compute, elsewhere[i], name,
						     tpf_recipe_slices(r), &guard, d);
		if (rc == 0) /* nothing of it is left there */
			tpf_gcp_facts_set(&g->facts, elsewhere[i], name, TPF_GCP_SHAPE_NODE, NULL, 0);
		free(elsewhere[i]);
	}
	free(elsewhere);
	return rc ? rc : tpf_compute_create_unit(g->compute, name, r, md, out, d);
}

/*
 * A Compute Engine node: one instance, or for a multi-host topology a
 * slice (template, workload policy, MIG). A slice whose create fails has
 * its parts deleted again, so that the next zone can take the same names
 * (the template is global); the create's diagnostic stays the reason.
 */
static int compute_create(struct tpf_gcp_ctx *g, const char *name, const struct tpf_recipe *r,
			  json_t *md, struct tpf_live_node *out, struct tpf_diags *d)
{
	int slice = r->workers > 1 || tpf_recipe_slices(r) > 1, rc = 0;
	if (r->zone && tpf_recipe_slices(r) > 1)
		rc = unit_create(g, name, r, md, out, d);
	if (r->zone)
		tpf_gcp_facts_set(&g->facts, r->zone, name,
				  tpf_recipe_slices(r) > 1 ? TPF_GCP_SHAPE_MULTISLICE
				  : slice		 ? TPF_GCP_SHAPE_SLICE
							 : TPF_GCP_SHAPE_INSTANCE,
				  NULL, tpf_recipe_slices(r) > 1 ? r->slices : 0);
	if (r->zone && tpf_recipe_slices(r) > 1)
		return rc;
	if (!slice)
		return tpf_compute_create(g->compute, name, r, md, out, d);
	unsigned ours = 0;
	rc = tpf_compute_create_slice(g->compute, name, r, md, &ours, d);
	if (rc == 0)
		rc = tpf_compute_wait_slice(g->compute, name, r, out, d);
	if (rc < 0 && rc != TPF_EINTERRUPTED && r->zone) {
		/* The undo deletes the parts this create made or proved ours
		 * (so that the next zone can take the names: the template is
		 * global), and never one it refused as another state's
		 * (docs/compute-engine.md "Undo and ownership of a slice's
		 * parts"); each is read again before its delete. */
		struct tpf_delete_guard guard = { .lineage = tpf_kvlist_get(&r->labels,
									    TPF_LABEL_LINEAGE) };
		struct tpf_diags undo = TPF_DIAGS_INIT;
		if (ours && tpf_compute_delete_slice(g->compute, r->zone, name, ours, &guard,
						     &undo) < 0)
			tpf_diags_move(d, &undo); /* what is left behind, and why */
		tpf_diags_release(&undo);
	}
	return rc;
}

/* A slice, or a node not known to be either: every part it may have (a
 * crash between a slice's steps leaks nothing); every slice of a
 * multislice node. Each part is read before its delete and checked
 * against the guard (compute_engine.h). What it is: fact, else the
 * state's record, else its group. */
static int ce_remove(struct tpf_gcp_ctx *g, const char *zone, const char *name,
		     const struct tpf_gcp_fact *fact, const struct tpf_delete_guard *guard,
		     struct tpf_diags *d)
{
	const struct tpf_recipe *rec = guard ? guard->recorded : NULL;
	int known = fact != NULL, rc = 0;
	int slice = known && fact->shape != TPF_GCP_SHAPE_INSTANCE;
	const struct tpf_group *gr = known || rec ? NULL : tpf_gcp_group_of(g->fleet, name);
	int ns = known ? fact->nslices
		 : rec ? (tpf_recipe_slices(rec) > 1 ? rec->slices : 0)
		 : gr && gr->compute.api == TPF_API_COMPUTE && gr->slices > 1 ? gr->slices : 0;
	if (ns > 1)
		rc = tpf_compute_delete_unit(g->compute, zone, name, ns, guard, d);
	if (rc == 0 && (!known || (slice && ns <= 1)))
		rc = tpf_compute_delete_slice(g->compute, zone, name, TPF_SLICE_ALL, guard, d);
	if (rc == 0 && !slice)
		rc = tpf_compute_delete(g->compute, zone, name, guard, d);
	if (rc == 0) /* nothing of it is left on Compute Engine */
		tpf_gcp_facts_set(&g->facts, zone, name, TPF_GCP_SHAPE_NODE, NULL, 0);
	return rc;
}

static int ce_set_labels(struct tpf_gcp_ctx *g, const char *zone, const char *name,
			 const struct tpf_gcp_fact *fact, const struct tpf_kvlist *labels,
			 struct tpf_diags *d)
{
	if (fact && fact->shape != TPF_GCP_SHAPE_INSTANCE)
		return tpf_errorx(d, name, "replace the slice (tpuform taint) to relabel it",
				  "slice '%s': changing the labels of a Compute Engine slice in place "
				  "is not supported yet", name);
	return tpf_compute_set_labels(g->compute, zone, name, labels, d);
}

/* The metadata a compute instance should carry: the declared entries with
 * tpuform's ssh-keys line (as create sends), over what it has. */
static int replace_metadata(json_t *items, void *ctx)
{
	json_t *want = ctx, *v;
	const char *k;
	void *tmp;
	json_object_foreach_safe(items, tmp, k, v) {
		if (strcmp(k, "enable-guest-attributes") && !json_object_get(want, k))
			json_object_del(items, k);
	}
	json_object_update(items, want);
	return 1;
}

/* In place on a Compute Engine instance: labels (setLabels) and metadata
 * (setMetadata), each a read-modify-write on its fingerprint. Tags and
 * external addresses are not changed in place yet: an error says so. */
static int compute_patch(struct tpf_gcp_ctx *g, const char *zone, const char *name,
			 const struct tpf_recipe *r, unsigned fields, struct tpf_diags *d)
{
	int rc = 0;
	if (fields & (TPF_PATCH_TAGS | TPF_PATCH_EXTERNAL_IPS))
		return tpf_errorx(d, name, "replace the node (tpuform taint) to apply the change",
				  "instance '%s': changing tags or external addresses of a Compute "
				  "Engine instance in place is not supported yet", name);
	if (fields & TPF_PATCH_LABELS)
		rc = tpf_compute_set_labels(g->compute, zone, name, &r->labels, d);
	if (rc == 0 && (fields & TPF_PATCH_METADATA)) {
		json_t *md = NULL, *declared = tpf_gcp_declared_metadata(r);
		rc = tpf_gcp_access_create_metadata(g->access, declared, &md, d);
		json_decref(declared);
		if (rc == 0)
			rc = tpf_compute_edit_metadata(g->compute, zone, name, replace_metadata, md, d);
		json_decref(md);
	}
	return rc;
}

static int ce_get(struct tpf_gcp_ctx *g, const char *zone, const char *name,
		  struct tpf_live_node *out, struct tpf_diags *d)
{
	return tpf_compute_get(g->compute, zone, name, out, d);
}

static int ce_find(struct tpf_gcp_ctx *g, const char *zone, const char *name,
		   struct tpf_diags *d)
{
	struct tpf_live_node ln = { 0 }; /* the observer records it */
	int rc = tpf_compute_get(g->compute, zone, name, &ln, d);
	tpf_live_node_release(&ln);
	return rc;
}

/* tpf_compute_edit_metadata's edit: the entry appended to ssh-keys of the
 * instance's metadata as it is now, unless some metadata has it. */
static int add_key_entry(json_t *items, void *ctx)
{
	const struct tpf_gcp_key *k = ctx;
	if (tpf_gcp_key_in_metadata(items, k->project_md, k->user, k->key))
		return 0;
	json_t *body = tpf_gcp_metadata_patch(items, k->user, k->key, k->entry);
	if (!body)
		return 0;
	json_object_update(items, json_object_get(body, "metadata"));
	json_decref(body);
	return 1;
}

/* The key into an instance's ssh-keys: setMetadata, a read-modify-write
 * on the metadata fingerprint retried on 412 conditionNotMet (reference
 * section 7). A slice's members got it from the template at create. */
static int ce_add_key(struct tpf_gcp_ctx *g, const char *zone, const char *name,
		      enum tpf_gcp_shape s, const struct tpf_gcp_key *k, int *patched,
		      struct tpf_diags *d)
{
	if (s != TPF_GCP_SHAPE_INSTANCE)
		return 0;
	int rc = tpf_compute_edit_metadata(g->compute, zone, name, add_key_entry, (void *)k, d);
	*patched = rc == 0;
	return rc;
}

/*
 * A slice's guest attributes in the Cloud TPU API's shape
 * (guestAttributes[i] for worker i): each member's getGuestAttributes, in
 * worker order (the members' names as the last refresh saw them,
 * compute_mig.c). A member that cannot be read publishes nothing, so its
 * worker gets the access layer's warning; the first error is *why.
 */
static int member_guest_attributes(struct tpf_gcp_ctx *g, const char *zone, json_t *members,
				   json_t **out, struct tpf_diags *why)
{
	json_t *list = json_array(), *m;
	size_t i;
	int rc = 0;
	json_array_foreach(members, i, m) {
		json_t *ga = NULL;
		struct tpf_diags d = TPF_DIAGS_INIT;
		int r = json_is_string(m) ? tpf_compute_guest_attributes(g->compute, zone,
									 json_string_value(m), &ga, &d)
					  : TPF_ERROR;
		json_array_append_new(list, r == 0 ? ga : json_object());
		if (r < 0 && rc == 0) {
			rc = r;
			tpf_diags_move(why, &d);
		}
		tpf_diags_release(&d);
	}
	*out = json_pack("{s:o}", "guestAttributes", list);
	return rc;
}

static int ce_guest_attributes(struct tpf_gcp_ctx *g, const char *zone, const char *name,
			       enum tpf_gcp_shape s, json_t *members, json_t **out,
			       struct tpf_diags *why)
{
	if (s != TPF_GCP_SHAPE_INSTANCE)
		return member_guest_attributes(g, zone, members, out, why);
	json_t *ga = NULL; /* one instance: the TPU API's answer for one worker */
	int rc = tpf_compute_guest_attributes(g->compute, zone, name, &ga, why);
	*out = rc == 0 ? json_pack("{s:[o]}", "guestAttributes", ga) : NULL;
	return rc;
}

const struct tpf_gcp_backend tpf_gcp_compute_backend = {
	.name = "compute",
	.list_zone = ce_list_zone,
	.list_fleet = ce_list_fleet,
	.finish_zone = ce_finish_zone,
	.free_fleet = tpf_compute_refresh_free,
	.learn = ce_learn,
	.create = compute_create,
	.remove = ce_remove,
	.set_labels = ce_set_labels,
	.patch = compute_patch,
	.get = ce_get,
	.find = ce_find,
	.add_key = ce_add_key,
	.guest_attributes = ce_guest_attributes,
};
