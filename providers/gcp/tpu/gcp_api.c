#include "model/node_state.h"
#include "providers/gcp/tpu/gcp_api.h"
#include "providers/gcp/gcp_client_internal.h"
#include "google/gcp_endpoint.h"
#include "google/gcp_errors.h"
#include "providers/gcp/tpu/gcp_node.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static char *zone_url(struct tpf_gcp_client *c, const char *zone, const char *suffix)
{
	return tpf_gcp_zone_url(c, zone, suffix);
}

static char *node_url(struct tpf_gcp_client *c, const char *zone, const char *name,
		      const char *query)
{
	char *n = tpf_gcp_escape(name);
	char *suffix = xasprintf("/nodes/%s%s", n, query ? query : "");
	char *u = zone_url(c, zone, suffix);
	free(n);
	free(suffix);
	return u;
}

/* What the access layer learns of a Node read (gcp_client.h). */
static void node_seen(struct tpf_gcp_client *c, const char *zone, json_t *node)
{
	json_t *md = json_object_get(node, "metadata");
	struct tpf_gcp_seen n = {
		.name = tpf_gcp_last_segment(json_string_value(json_object_get(node, "name"))),
		.id = json_string_value(json_object_get(node, "id")),
		.metadata = json_is_object(md) ? md : NULL,
		.nendpoints = (int)json_array_size(json_object_get(node, "networkEndpoints")),
		.multislice = json_is_true(json_object_get(node, "multisliceNode")),
		.shape = TPF_GCP_SHAPE_NODE,
	};
	tpf_gcp_client_seen(c, zone, &n);
}

int tpf_gcp_get_node_json(struct tpf_gcp_client *c, const char *zone, const char *name,
			  json_t **out, struct tpf_diags *d)
{
	char *q = tpf_gcp_fields_query('?', TPF_GCP_NODE_FIELDS);
	char *url = node_url(c, zone, name, q);
	char *what = xasprintf("get node '%s' in zone '%s'", name, zone);
	free(q);
	int rc = tpf_gcp_call(c, "GET", url, NULL, what, name, TPF_GCP_QUIET(TPF_GCP_NOTFOUND), out,
			      NULL, d);
	if (rc == 0 && !json_string_value(json_object_get(*out, "name"))) {
		rc = tpf_errorx(d, name, NULL, "%s: the answer is not a node (no 'name')", what);
		json_decref(*out);
		*out = NULL;
	}
	if (rc == 0)
		node_seen(c, zone, *out);
	free(what);
	free(url);
	return rc;
}

int tpf_gcp_get_node(struct tpf_gcp_client *c, const char *zone, const char *name,
		     struct tpf_live_node *out, struct tpf_diags *d)
{
	json_t *node = NULL;
	int rc = tpf_gcp_get_node_json(c, zone, name, &node, d);
	if (rc == 0 && tpf_gcp_node_parse(node, zone, tpf_gcp_client_ssh_port(c), out) < 0)
		rc = tpf_errorx(d, name, NULL, "get node '%s' in zone '%s': the answer is not a node",
				name, zone);
	json_decref(node);
	return rc;
}

/* Poll a node until it leaves CREATING (after a create whose operation we
 * lost). TPF_ENOTFOUND if it disappears. */
static int wait_node_settled(struct tpf_gcp_client *c, const char *zone, const char *name,
			     const char *what, struct tpf_live_node *out, struct tpf_diags *d)
{
	const struct tpf_gcp_settings *s = tpf_gcp_client_settings(c);
	double start = tpf_now_mono(), interval = s->poll_min;
	for (;;) {
		int rc = tpf_gcp_get_node(c, zone, name, out, d);
		if (rc < 0)
			return rc;
		if (tpf_node_state_of(out->state) != TPF_NODE_STATE_CREATING)
			return 0;
		if (tpf_now_mono() - start > s->op_timeout)
			return tpf_errorx(d, name, "run 'tpuform refresh' later to see its state",
					  "%s: node still CREATING after %.0f seconds", what,
					  s->op_timeout);
		if (tpf_gcp_poll_sleep(c, interval) < 0)
			return TPF_EINTERRUPTED;
		interval = tpf_gcp_next_poll(s, interval);
	}
}

/*
 * A create whose operation succeeded but whose node is already PREEMPTED or
 * TERMINATED: a stockout reported while creating (SkyPilot blocks the zone
 * for a create preempted this way, FailoverCloudErrorHandlerV2._gcp_handler,
 * code 3). Delete it (it holds quota until deleted, docs/cloud-tpu-api.md
 * section 4) and return TPF_ECAPACITY so that the next zone is tried.
 */
/* Is node n this create's (it carries the recipe's lineage `want`)? The
 * undo of a failed create deletes only that (docs/design.md section 4). */
static int made_by_us(const struct tpf_live_node *n, const char *want)
{
	const char *got = tpf_kvlist_get(&n->recipe.labels, TPF_LABEL_LINEAGE);
	return !want || (got && !strcmp(got, want));
}

static int lost_while_creating(struct tpf_gcp_client *c, const char *zone, const char *name,
			       const char *want, const char *what, struct tpf_live_node *out,
			       struct tpf_diags *d)
{
	if (!tpf_node_state_reclaimed(out->state))
		return 0;
	tpf_errorx(d, name, "no capacity held it; if the group has another zone, tpuform "
		   "tries the group's next zone; or retry later",
		   "%s: the node was %s before it was ever READY", what, out->state);
	struct tpf_diags tmp = TPF_DIAGS_INIT;
	if (made_by_us(out, want) && tpf_gcp_delete_node(c, zone, name, &tmp) < 0)
		for (size_t i = 0; i < tmp.n; i++)
			tpf_warn(d, name, "cleanup after the lost create: %s", tmp.items[i].summary);
	tpf_diags_release(&tmp);
	tpf_live_node_release(out);
	return TPF_ECAPACITY;
}

int tpf_gcp_create_node(struct tpf_gcp_client *c, const char *name, const struct tpf_recipe *r,
			json_t *metadata, struct tpf_live_node *out, struct tpf_diags *d)
{
	const char *zone = r->zone;
	char *what = xasprintf("create node '%s' in zone '%s'", name, zone ? zone : "");
	char *esc = tpf_gcp_escape(name);
	char *q = xasprintf("/nodes?nodeId=%s", esc);
	char *url = zone_url(c, zone ? zone : "", q);
	json_t *body = tpf_gcp_node_body(r, tpf_gcp_client_external_ips(c), metadata);
	json_t *op = NULL;
	struct tpf_gcp_outcome res = { .err = TPF_GCP_ERROR_INIT };
	int failed = 0, rc;

	if (!zone || !*zone) {
		rc = tpf_errorx(d, name, NULL, "%s: the recipe has no zone", what);
		goto done;
	}
	/* nodeId is ours: a repeat of a POST that went through answers 409,
	 * which is handled below, so the create may be retried. */
	rc = tpf_gcp_call(c, "POST", url, body, what, name,
			  TPF_GCP_QUIET(TPF_GCP_CONFLICT) | TPF_GCP_PRECONDITION, &op, &res, d);
	if (rc < 0 && res.api_error && res.cls == TPF_GCP_CONFLICT) {
		const char *want = tpf_kvlist_get(&r->labels, TPF_LABEL_LINEAGE);
		if (res.attempts > 1) {
			/* An earlier POST went through but its answer was lost:
			 * that node is ours if it carries our state's lineage
			 * label (plan/ownership.h), not merely our fleet's. */
			struct tpf_diags tmp = TPF_DIAGS_INIT;
			rc = wait_node_settled(c, zone, name, what, out, &tmp);
			const char *got = rc == 0 ? tpf_kvlist_get(&out->recipe.labels, TPF_LABEL_LINEAGE)
						  : NULL;
			if (rc == 0 && (!want || (got && !strcmp(got, want)))) {
				tpf_diags_release(&tmp);
				goto done;
			}
			if (rc == TPF_ENOTFOUND) {
				rc = tpf_errorx(d, name, NULL,
						"%s: the node disappeared after an earlier attempt created "
						"it (its create operation failed)", what);
				tpf_diags_release(&tmp);
				goto done;
			}
			tpf_diags_move(d, &tmp);
			tpf_diags_release(&tmp);
			tpf_live_node_release(out);
			if (rc < 0)
				goto done;
		}
		char *hint = xasprintf("a node of that name already exists in the zone and is not "
				       "this fleet's; delete it, or pick another fleet or group name");
		struct tpf_buf m = TPF_BUF_INIT;
		tpf_gcp_error_format(&res.err, &m);
		rc = tpf_errorx(d, name, hint, "%s: %s", what, m.buf);
		tpf_buf_release(&m);
		free(hint);
		goto done;
	}
	if (rc < 0)
		goto done;
	rc = tpf_gcp_wait_op(c, op, what, name, &failed, d);
	if (rc < 0) {
		if (failed) {
			/* leave nothing behind: a failed create may still leave a node */
			struct tpf_diags tmp = TPF_DIAGS_INIT;
			struct tpf_live_node left = { 0 };
			int got = tpf_gcp_get_node(c, zone, name, &left, &tmp) == 0;
			if (got && made_by_us(&left, tpf_kvlist_get(&r->labels, TPF_LABEL_LINEAGE)) &&
			    tpf_gcp_delete_node(c, zone, name, &tmp) < 0) {
				for (size_t i = 0; i < tmp.n; i++)
					tpf_warn(d, name, "cleanup after the failed create: %s",
						 tmp.items[i].summary);
			}
			/* Its node PREEMPTED or TERMINATED: lost while creating,
			 * a stockout (SkyPilot blocks the zone on the code 3
			 * this gives, FailoverCloudErrorHandlerV2._gcp_handler). */
			if (got && tpf_node_state_reclaimed(left.state))
				rc = TPF_ECAPACITY;
			tpf_live_node_release(&left);
			tpf_diags_release(&tmp);
		}
		goto done;
	}
	rc = tpf_gcp_get_node(c, zone, name, out, d);
	if (rc == TPF_ENOTFOUND)
		rc = tpf_errorx(d, name, NULL, "%s: the operation succeeded but the node is not there",
				what);
	else if (rc == 0)
		rc = lost_while_creating(c, zone, name, tpf_kvlist_get(&r->labels, TPF_LABEL_LINEAGE),
					 what, out, d);
done:
	tpf_gcp_error_release(&res.err);
	json_decref(body);
	json_decref(op);
	free(url);
	free(q);
	free(esc);
	free(what);
	return rc;
}

static int node_there(struct tpf_gcp_client *c, const char *zone, const char *name,
		      struct tpf_diags *d)
{
	struct tpf_live_node n = { 0 };
	int rc = tpf_gcp_get_node(c, zone, name, &n, d);
	tpf_live_node_release(&n);
	return rc;
}

int tpf_gcp_wait_node_gone(struct tpf_gcp_client *c, const char *zone, const char *name,
			   const char *what, struct tpf_diags *d)
{
	return tpf_gcp_wait_gone(c, zone, name, "node", what, node_there, d);
}

int tpf_gcp_delete_node(struct tpf_gcp_client *c, const char *zone, const char *name,
			struct tpf_diags *d)
{
	char *url = node_url(c, zone, name, NULL);
	char *what = xasprintf("delete node '%s' in zone '%s'", name, zone);
	json_t *op = NULL;
	int failed = 0;
	int rc = tpf_gcp_call(c, "DELETE", url, NULL, what, name, TPF_GCP_QUIET(TPF_GCP_NOTFOUND),
			      &op, NULL, d);
	if (rc == TPF_ENOTFOUND)
		rc = 0; /* already gone */
	else if (rc == 0 && (rc = tpf_gcp_wait_op(c, op, what, name, &failed, d)) == 0)
		/* the operation is done; make sure a get agrees before saying "gone" */
		rc = tpf_gcp_wait_node_gone(c, zone, name, what, d);
	json_decref(op);
	free(what);
	free(url);
	return rc;
}

/* The one PATCH of a node (projects.locations.nodes.patch): the fields in
 * mask from body, then a wait for the operation. Takes what (freed). */
static int patch_mask(struct tpf_gcp_client *c, const char *zone, const char *name, json_t *body,
		      const char *mask, char *what, struct tpf_diags *d)
{
	char *query = xasprintf("?updateMask=%s", mask);
	char *url = node_url(c, zone, name, query);
	json_t *op = NULL;
	int failed = 0;
	/* whole values under an updateMask: a repeat changes nothing more */
	int rc = tpf_gcp_call(c, "PATCH", url, body, what, name, TPF_GCP_IDEMPOTENT, &op, NULL, d);
	if (rc == 0)
		rc = tpf_gcp_wait_op(c, op, what, name, &failed, d);
	json_decref(op);
	free(what);
	free(url);
	free(query);
	return rc;
}

int tpf_gcp_patch_labels(struct tpf_gcp_client *c, const char *zone, const char *name,
			 const struct tpf_kvlist *labels, struct tpf_diags *d)
{
	json_t *body = tpf_gcp_labels_body(labels);
	int rc = patch_mask(c, zone, name, body, "labels",
			    xasprintf("update labels of node '%s' in zone '%s'", name, zone), d);
	json_decref(body);
	return rc;
}

int tpf_gcp_patch_metadata(struct tpf_gcp_client *c, const char *zone, const char *name,
			   json_t *body, struct tpf_diags *d)
{
	return patch_mask(c, zone, name, body, "metadata",
			  xasprintf("add the SSH key to the metadata of node '%s' in zone '%s'",
				    name, zone),
			  d);
}

int tpf_gcp_patch_node(struct tpf_gcp_client *c, const char *zone, const char *name,
		       json_t *body, const char *mask, struct tpf_diags *d)
{
	return patch_mask(c, zone, name, body, mask,
			  xasprintf("update %s of node '%s' in zone '%s'", mask, name, zone), d);
}

int tpf_gcp_get_guest_attributes(struct tpf_gcp_client *c, const char *zone, const char *name,
				 const char *query_path, json_t **out, struct tpf_diags *d)
{
	char *url = node_url(c, zone, name, ":getGuestAttributes");
	char *what = xasprintf("read the guest attributes of node '%s' in zone '%s'", name, zone);
	json_t *body = json_pack("{s:s}", "queryPath", query_path);
	/* a read, sent as POST */
	int rc = tpf_gcp_call(c, "POST", url, body, what, name,
			      TPF_GCP_QUIET(TPF_GCP_NOTFOUND) | TPF_GCP_IDEMPOTENT, out, NULL, d);
	json_decref(body);
	free(what);
	free(url);
	return rc;
}

struct list_nodes_ctx {
	struct tpf_gcp_client *c;
	const char *zone, *fleet;
	struct tpf_live_set *out;
};

static int each_node(json_t *node, void *arg)
{
	struct list_nodes_ctx *x = arg;
	if (!tpf_gcp_node_in_fleet(node, x->fleet))
		return 0;
	node_seen(x->c, x->zone, node);
	struct tpf_live_node *n = tpf_live_set_add(x->out);
	if (tpf_gcp_node_parse(node, x->zone, tpf_gcp_client_ssh_port(x->c), n) < 0) {
		/* keep the set consistent: drop the zeroed slot */
		tpf_live_node_release(n);
		x->out->n--;
	}
	return 0;
}

int tpf_gcp_list_nodes(struct tpf_gcp_client *c, const char *zone, const char *fleet,
		       struct tpf_live_set *out, struct tpf_diags *d)
{
	char *base = zone_url(c, zone, "/nodes");
	char *what = xasprintf("list nodes in zone '%s'", zone);
	struct list_nodes_ctx x = { c, zone, fleet, out };
	size_t before = d->n;
	int rc = tpf_gcp_list_pages(c, base, "nodes",
				    "nextPageToken,unreachable,nodes(" TPF_GCP_NODE_FIELDS ")",
				    TPF_GCP_PAGE_SIZE, what, each_node, &x, d);
	if (rc == TPF_EZONE) {
		/* A zone the project cannot use holds none of its nodes (as
		 * SkyPilot's TPU filter answers it: an empty list). Say so, and
		 * let creates there move on to the next zone. */
		for (size_t i = before; i < d->n; i++)
			d->items[i].severity = TPF_SEV_WARNING;
		tpf_live_set_add_unlisted(out, zone);
		rc = 0;
	}
	free(what);
	free(base);
	return rc;
}

struct strings {
	char **v;
	size_t n, alloc;
	const char *field;
};

static int each_string(json_t *it, void *arg)
{
	struct strings *s = arg;
	const char *v = json_string_value(json_object_get(it, s->field));
	if (!v)
		v = tpf_gcp_last_segment(json_string_value(json_object_get(it, "name")));
	if (v) {
		XGROW(s->v, s->n + 1, s->alloc);
		s->v[s->n++] = xstrdup(v);
	}
	return 0;
}

static int list_strings(struct tpf_gcp_client *c, const char *zone, const char *coll,
			const char *field, const char *noun, char ***out, size_t *n,
			struct tpf_diags *d)
{
	char *suffix = xasprintf("/%s", coll);
	char *base = zone_url(c, zone, suffix);
	char *what = xasprintf("list %s in zone '%s'", noun, zone);
	struct strings s = { .field = field };
	/* each_string reads these two */
	char *fields = xasprintf("nextPageToken,unreachable,%s(name,%s)", coll, field);
	int rc = tpf_gcp_list_all(c, base, coll, fields, what, each_string, &s, d);
	free(fields);
	if (rc < 0) {
		for (size_t i = 0; i < s.n; i++)
			free(s.v[i]);
		free(s.v);
		s.v = NULL;
		s.n = 0;
	}
	*out = s.v;
	*n = s.n;
	free(what);
	free(base);
	free(suffix);
	return rc;
}

int tpf_gcp_list_accelerator_types(struct tpf_gcp_client *c, const char *zone, char ***out,
				   size_t *n, struct tpf_diags *d)
{
	return list_strings(c, zone, "acceleratorTypes", "type", "accelerator types", out, n, d);
}

int tpf_gcp_list_runtime_versions(struct tpf_gcp_client *c, const char *zone, char ***out,
				  size_t *n, struct tpf_diags *d)
{
	return list_strings(c, zone, "runtimeVersions", "version", "runtime versions", out, n, d);
}

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 if want is in v; else a diagnostic listing v. */
static int offered(char **v, size_t n, const char *want, const char *noun, const char *zone,
		   const char *address, struct tpf_diags *d)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i], want))
			return 1;
	qsort(v, n, sizeof(*v), cmp_str);
	struct tpf_buf list = TPF_BUF_INIT;
	for (size_t i = 0; i < n; i++)
		tpf_buf_addf(&list, "%s%s", i ? ", " : "", v[i]);
	char *hint = xasprintf("zone '%s' offers: %s", zone, n ? list.buf : "none");
	tpf_errorx(d, address, hint, "%s '%s' is not offered in zone '%s'", noun, want, zone);
	free(hint);
	tpf_buf_release(&list);
	return 0;
}

int tpf_gcp_check_offering(struct tpf_gcp_client *c, const char *zone, const char *type,
			   const char *runtime, const char *address, struct tpf_diags *d)
{
	char **v = NULL;
	size_t n = 0;
	int ok = 1;
	if (type) {
		if (tpf_gcp_list_accelerator_types(c, zone, &v, &n, d) < 0)
			return TPF_ERROR;
		ok &= offered(v, n, type, "accelerator type", zone, address, d);
		free_strings(v, n);
	}
	if (runtime) {
		if (tpf_gcp_list_runtime_versions(c, zone, &v, &n, d) < 0)
			return TPF_ERROR;
		ok &= offered(v, n, runtime, "runtime version", zone, address, d);
		free_strings(v, n);
	}
	return ok;
}

int tpf_gcp_wait_node_settled(struct tpf_gcp_client *c, const char *zone, const char *name,
			      const char *what, struct tpf_live_node *out, struct tpf_diags *d)
{
	return wait_node_settled(c, zone, name, what, out, d);
}
