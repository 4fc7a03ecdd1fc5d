/*
 * Multislice queued resources (gcp_multislice.h).
 */
#include "providers/gcp/tpu/gcp_multislice.h"
#include "model/node_state.h"
#include "providers/gcp/gcp_client_internal.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

char *tpf_gcp_slice_name(const char *node, int k)
{
	return xasprintf("%s-%d", node, k);
}

void tpf_gcp_multislice_body(json_t *body, const char *name, const struct tpf_recipe *r)
{
	json_t *spec = json_array_get(json_object_get(json_object_get(body, "tpu"), "nodeSpec"), 0);
	if (r->slices <= 1 || !json_is_object(spec))
		return;
	/* "This message must be populated in case of multislice requests
	 * instead of node_id" (discovery document, MultisliceParams). */
	json_object_del(spec, "nodeId");
	json_object_set_new(spec, "multisliceParams",
			    json_pack("{s:i, s:s}", "nodeCount", r->slices, "nodeIdPrefix", name));
}

const char *tpf_gcp_multislice_prefix(json_t *spec, const char *qr_id, int *count)
{
	json_t *mp = json_object_get(spec, "multisliceParams");
	json_t *n = json_object_get(mp, "nodeCount");
	*count = 0;
	if (!json_is_object(mp))
		return NULL;
	*count = json_is_integer(n) ? (int)json_integer_value(n) : 0;
	const char *prefix = json_string_value(json_object_get(mp, "nodeIdPrefix"));
	return prefix && *prefix ? prefix : qr_id;
}

/* The unit's state from its slices' (gcp_multislice.h). */
static const char *unit_state(struct tpf_live_node **slices, int n, const char *qr_state)
{
	const char *busy = NULL;
	for (int k = 0; k < n; k++)
		if (!slices[k])
			return qr_state;
	for (int k = 0; k < n; k++) {
		enum tpf_node_class cls = tpf_node_class(slices[k]->state);
		if (cls == TPF_NODE_DEAD)
			return slices[k]->state;
		if (cls != TPF_NODE_READY && !busy)
			busy = slices[k]->state;
	}
	return busy ? busy : "READY";
}

/* The unit from its slices (some may be NULL), into a zeroed *u. */
static void build_unit(struct tpf_live_node *u, struct tpf_live_node **slices, int n,
		       const struct tpf_gcp_qr *q)
{
	struct tpf_live_node *first = NULL;
	size_t total = 0;
	for (int k = 0; k < n; k++) {
		if (slices[k] && !first)
			first = slices[k];
		total += slices[k] ? slices[k]->nendpoints : 0;
	}
	u->name = xstrdup(q->node_id);
	if (!first) { /* no slice listed (the caller folds only when one is): the QR speaks */
		u->state = xstrdup(q->state ? q->state : "UNKNOWN");
		tpf_recipe_copy(&u->recipe, &q->recipe);
		return;
	}
	u->id = xstrdup(first->id);
	u->create_time = xstrdup(first->create_time);
	u->state = xstrdup(unit_state(slices, n, q->state));
	u->health = xstrdup(first->health);
	for (int k = 0; k < n; k++)
		if (slices[k] && slices[k]->health && strcmp(slices[k]->health, "HEALTHY")) {
			xstrset(&u->health, slices[k]->health);
			break;
		}
	tpf_recipe_copy(&u->recipe, &q->recipe);
	xstrset(&u->recipe.zone, first->recipe.zone);
	u->endpoints = xcalloc(total ? total : 1, sizeof(*u->endpoints));
	for (int k = 0; k < n; k++)
		for (size_t e = 0; slices[k] && e < slices[k]->nendpoints; e++) {
			struct tpf_endpoint *to = &u->endpoints[u->nendpoints++];
			*to = slices[k]->endpoints[e]; /* moved */
			memset(&slices[k]->endpoints[e], 0, sizeof(*to));
		}
	/* Every slice's workers, or the table's count while some have no
	 * endpoints yet. */
	if (total > (size_t)u->recipe.workers)
		u->recipe.workers = (int)total;
}

void tpf_gcp_multislice_fold(struct tpf_live_set *set, const struct tpf_gcp_qr *q)
{
	int n = q->recipe.slices, found = 0;
	if (n <= 1 || !q->node_id)
		return;
	struct tpf_live_node **slices = xcalloc((size_t)n, sizeof(*slices));
	struct tpf_live_node *copies = xcalloc((size_t)n, sizeof(*copies));
	for (int k = 0; k < n; k++) {
		char *name = tpf_gcp_slice_name(q->node_id, k);
		struct tpf_live_node *s = tpf_live_set_find(set, name);
		if (s) {
			copies[k] = *s; /* moved out of the set below */
			memset(s, 0, sizeof(*s));
			slices[k] = &copies[k];
			found++;
		}
		free(name);
	}
	/* Drop the emptied entries (name NULL) from the set. */
	size_t w = 0;
	for (size_t i = 0; i < set->n; i++)
		if (set->nodes[i].name)
			set->nodes[w++] = set->nodes[i];
	set->n = w;
	if (found)
		build_unit(tpf_live_set_add(set), slices, n, q);
	for (int k = 0; k < n; k++)
		tpf_live_node_release(&copies[k]);
	free(copies);
	free(slices);
}

int tpf_gcp_multislice_settled(struct tpf_gcp_client *c, const char *zone,
			       const struct tpf_gcp_qr *q, const char *what,
			       struct tpf_live_node *out, struct tpf_diags *d)
{
	struct tpf_live_set set = { 0 };
	int rc = 0;
	for (int k = 0; k < q->recipe.slices && rc == 0; k++) {
		char *name = tpf_gcp_slice_name(q->node_id, k);
		rc = tpf_gcp_wait_node_settled(c, zone, name, what, tpf_live_set_add(&set), d);
		free(name);
	}
	if (rc == 0) {
		tpf_gcp_multislice_fold(&set, q);
		struct tpf_live_node *u = tpf_live_set_find(&set, q->node_id);
		tpf_live_node_release(out);
		if (u) {
			*out = *u; /* moved */
			memset(u, 0, sizeof(*u));
		}
	}
	tpf_live_set_release(&set);
	return rc;
}
