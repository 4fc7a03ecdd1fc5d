/*
 * The Cloud TPU API back-end of the gcp provider (gcp_backend.h): nodes
 * (gcp_api.c), queued resources (gcp_qr_api.c) and multislice queued
 * resources (gcp_multislice.c).
 */
#include "providers/gcp/gcp_access.h"
#include "providers/gcp/gcp_backend.h"
#include "providers/gcp/gcp_sshkeys.h"
#include "providers/gcp/tpu/gcp_api.h"
#include "providers/gcp/tpu/gcp_node.h"
#include "providers/gcp/tpu/gcp_qr.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* The queued resources listed with a zone, until learn records them. */
struct tpu_zone {
	struct tpf_gcp_qr *qrs;
	size_t nqrs;
};

static int tpu_list_zone(struct tpf_gcp_ctx *g, struct tpf_gcp_zone *z)
{
	struct tpu_zone *t = xcalloc(1, sizeof(*t));
	z->priv = t;
	int rc = tpf_gcp_list_nodes(g->client, z->zone, z->fleet, &z->set, &z->diags);
	if (rc == 0 && z->queued) {
		rc = tpf_gcp_list_qrs(g->client, z->zone, z->fleet, &t->qrs, &t->nqrs, &z->diags);
		if (rc == 0)
			tpf_gcp_qr_merge(&z->set, t->qrs, t->nqrs);
	}
	return rc;
}

/* Remember, for remove(), which nodes of a zone have a queued resource. */
static void tpu_learn(struct tpf_gcp_ctx *g, struct tpf_gcp_zone *z)
{
	struct tpu_zone *t = z->priv;
	if (z->rc >= 0) {
		for (size_t k = 0; k < z->set.n; k++) {
			const struct tpf_live_node *n = &z->set.nodes[k];
			/* Ours are named after their node (gcp_qr.h). */
			tpf_gcp_facts_set(&g->facts, z->zone, n->name,
					  n->recipe.queued ? TPF_GCP_SHAPE_QUEUED : TPF_GCP_SHAPE_NODE,
					  n->recipe.queued ? n->name : NULL, 0);
		}
		for (size_t k = 0; t && k < t->nqrs; k++)
			tpf_gcp_facts_set_qr(&g->facts, z->zone, t->qrs[k].node_id, t->qrs[k].id);
		if (z->queued)
			tpf_gcp_facts_qr_zone_add(&g->facts, z->zone);
	}
	for (size_t k = 0; t && k < t->nqrs; k++)
		tpf_gcp_qr_release(&t->qrs[k]);
	if (t)
		free(t->qrs);
	free(t);
	z->priv = NULL;
}

static int tpu_create(struct tpf_gcp_ctx *g, const char *name, const struct tpf_recipe *r,
		      json_t *md, struct tpf_live_node *out, struct tpf_diags *d)
{
	if (!r->queued)
		return tpf_gcp_create_node(g->client, name, r, md, out, d);
	int rc = tpf_gcp_create_qr(g->client, name, r, md, out, d);
	/* Its queued resource exists unless the request failed (then
	 * tpf_gcp_create_qr deleted it); either way remove() knows. */
	if (r->zone)
		tpf_gcp_facts_set_qr(&g->facts, r->zone, name,
				     rc == 0 || rc == TPF_EINTERRUPTED ? name : NULL);
	return rc;
}

/*
 * A node requested through a queued resource goes with it: delete the
 * queued resource with force=true. Which it is comes from this provider's
 * last refresh; a node it never saw, in a zone whose queued resources
 * were not listed, costs one queuedResources.get.
 */
static int tpu_remove(struct tpf_gcp_ctx *g, const char *zone, const char *name,
		      const struct tpf_gcp_fact *fact, const struct tpf_delete_guard *guard,
		      struct tpf_diags *d)
{
	char *qr = fact ? xstrdup(fact->qr) : NULL;
	int rc = 0;
	if (!fact && !tpf_gcp_facts_qr_zone_listed(&g->facts, zone)) {
		struct tpf_gcp_qr q = { 0 };
		rc = tpf_gcp_get_qr(g->client, zone, name, &q, d);
		if (rc == 0)
			qr = xstrdup(q.id);
		tpf_gcp_qr_release(&q);
		if (rc == TPF_ENOTFOUND)
			rc = 0;
	}
	int gone = 0, deleting = 0; /* deleting: a delete in flight, waited for */
	if (rc == 0 && guard) {
		rc = tpf_gcp_owned_now(g->client, zone, name, qr, guard, &deleting, d);
		gone = rc == TPF_ENOTFOUND;
		rc = gone ? 0 : rc;
	}
	if (rc == 0 && !gone)
		rc = qr ? tpf_gcp_delete_qr(g->client, zone, qr, name, guard ? guard->lineage : NULL, d)
		     : deleting ? tpf_gcp_wait_node_gone(g->client, zone, name, "delete node", d)
				: tpf_gcp_delete_node(g->client, zone, name, d);
	if (rc == 0)
		tpf_gcp_facts_set_qr(&g->facts, zone, name, NULL);
	free(qr);
	return rc;
}

static int tpu_set_labels(struct tpf_gcp_ctx *g, const char *zone, const char *name,
			  const struct tpf_gcp_fact *fact, const struct tpf_kvlist *labels,
			  struct tpf_diags *d)
{
	return tpf_gcp_patch_labels(g->client, zone, name, labels, d);
}

/* One nodes.patch for every changed patchable field; the metadata sent
 * keeps tpuform's ssh-keys entry (gcp_access.h), as create does. */
static int tpu_patch(struct tpf_gcp_ctx *g, const char *zone, const char *name,
		     const struct tpf_recipe *r, unsigned fields, struct tpf_diags *d)
{
	json_t *body = json_object();
	if (fields & TPF_PATCH_LABELS) {
		json_t *lb = tpf_gcp_labels_body(&r->labels);
		json_object_set(body, "labels", json_object_get(lb, "labels"));
		json_decref(lb);
	}
	if (fields & TPF_PATCH_TAGS)
		json_object_set_new(body, "tags", tpf_gcp_tags_json(&r->node));
	if (fields & TPF_PATCH_METADATA) {
		json_t *md = NULL, *declared = tpf_gcp_declared_metadata(r);
		int rc = tpf_gcp_access_create_metadata(g->access, declared, &md, d);
		json_decref(declared);
		if (rc < 0) {
			json_decref(body);
			return rc;
		}
		json_object_set_new(body, "metadata", md);
	}
	if (fields & TPF_PATCH_EXTERNAL_IPS)
		json_object_set_new(body, "networkConfig",
				    json_pack("{s:b}", "enableExternalIps",
					      r->node.enable_external_ips == TPF_TRI_TRUE));
	char *mask = tpf_patch_mask(fields);
	int rc = mask ? tpf_gcp_patch_node(g->client, zone, name, body, mask, d) : 0;
	free(mask);
	json_decref(body);
	return rc;
}

static int tpu_get(struct tpf_gcp_ctx *g, const char *zone, const char *name,
		   struct tpf_live_node *out, struct tpf_diags *d)
{
	return tpf_gcp_get_node(g->client, zone, name, out, d);
}

static int tpu_find(struct tpf_gcp_ctx *g, const char *zone, const char *name,
		    struct tpf_diags *d)
{
	json_t *node = NULL; /* the observer records it */
	int rc = tpf_gcp_get_node_json(g->client, zone, name, &node, d);
	json_decref(node);
	return rc;
}

/* Patch from the node as it is now: the API replaces the whole map, and
 * what refresh saw may be stale. */
static int tpu_add_key(struct tpf_gcp_ctx *g, const char *zone, const char *name,
		       enum tpf_gcp_shape s, const struct tpf_gcp_key *k, int *patched,
		       struct tpf_diags *d)
{
	json_t *node = NULL, *body = NULL;
	int rc = tpf_gcp_get_node_json(g->client, zone, name, &node, d);
	if (rc == TPF_ENOTFOUND)
		return tpf_errorx(d, name, NULL, "node '%s' in zone '%s' is gone", name, zone);
	json_t *md = json_object_get(node, "metadata");
	if (rc == 0 && !tpf_gcp_key_in_metadata(md, k->project_md, k->user, k->key))
		body = tpf_gcp_metadata_patch(md, k->user, k->key, k->entry);
	if (body && (rc = tpf_gcp_patch_metadata(g->client, zone, name, body, d)) == 0)
		*patched = 1;
	json_decref(body);
	json_decref(node);
	return rc;
}

static int tpu_guest_attributes(struct tpf_gcp_ctx *g, const char *zone, const char *name,
				enum tpf_gcp_shape s, json_t *members, json_t **out,
				struct tpf_diags *why)
{
	return tpf_gcp_get_guest_attributes(g->client, zone, name, TPF_GCP_HOSTKEYS_PATH, out, why);
}

const struct tpf_gcp_backend tpf_gcp_tpu_backend = {
	.name = "tpu",
	.list_zone = tpu_list_zone,
	.learn = tpu_learn,
	.create = tpu_create,
	.remove = tpu_remove,
	.set_labels = tpu_set_labels,
	.patch = tpu_patch,
	.get = tpu_get,
	.find = tpu_find,
	.add_key = tpu_add_key,
	.guest_attributes = tpu_guest_attributes,
};
