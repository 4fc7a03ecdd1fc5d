/*
 * Compute Engine instances over the one Google REST client
 * (providers/gcp/compute/compute_engine.h; google/gapi.h owns retries, pages and the
 * Compute operation wait: POST <selfLink>/wait in a loop until DONE).
 */
#include "providers/gcp/compute/compute_engine.h"
#include "providers/gcp/compute/compute_internal.h"
#include "providers/gcp/gcp_client_internal.h"
#include "providers/gcp/gcp_oslogin.h"
#include "google/gcp_endpoint.h"
#include "model/node_state.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>


/* How often a read-modify-write is tried when someone else wrote first. */
#define FINGERPRINT_TRIES 5

int tpf_compute_client_open(struct tpf_compute_client **out, struct tpf_gcp_client *c,
			    struct tpf_diags *d)
{
	char *root = NULL;
	*out = NULL;
	if (tpf_gcp_service_endpoint("TPUFORM_COMPUTE_ENDPOINT", TPF_GCP_DEFAULT_COMPUTE_ENDPOINT,
				     "Compute Engine endpoint", &root, d) < 0)
		return TPF_ERROR;
	struct tpf_compute_client *cc = xcalloc(1, sizeof(*cc));
	char *p = tpf_gcp_escape(tpf_gcp_client_project(c));
	size_t n = strlen(root);
	while (n && root[n - 1] == '/')
		n--;
	cc->c = c;
	cc->base = xasprintf("%.*s/compute/v1/projects/%s", (int)n, root, p);
	free(p);
	free(root);
	*out = cc;
	return 0;
}

void tpf_compute_client_free(struct tpf_compute_client *cc)
{
	if (!cc)
		return;
	free(cc->base);
	free(cc);
}

/* <base>/zones/<zone>/instances[/<name>][<suffix>] (caller frees). */
static char *instance_url(struct tpf_compute_client *cc, const char *zone, const char *name,
			  const char *suffix)
{
	char *z = tpf_gcp_escape(zone), *n = name ? tpf_gcp_escape(name) : NULL;
	char *u = xasprintf("%s/zones/%s/instances%s%s%s", cc->base, z, n ? "/" : "", n ? n : "",
			    suffix ? suffix : "");
	free(z);
	free(n);
	return u;
}

int tpf_compute_wait_op(struct tpf_compute_client *cc, json_t *op, const char *what,
			const char *address, struct tpf_diags *d)
{
	struct tpf_gapi_op how = { .shape = TPF_GAPI_OP_COMPUTE, .root = NULL };
	int failed = 0;
	return tpf_gapi_wait(tpf_gcp_client_api(cc->c), &how, op, what, address, &failed, d);
}

int tpf_compute_delete_url(struct tpf_compute_client *cc, const char *url, const char *what,
			   const char *address, struct tpf_diags *d)
{
	const struct tpf_gcp_settings *s = tpf_gcp_client_settings(cc->c);
	double start = tpf_now_mono(), nap = s->poll_min;
	for (;;) {
		json_t *op = NULL;
		struct tpf_gcp_outcome res = { .err = TPF_GCP_ERROR_INIT };
		struct tpf_diags tmp = TPF_DIAGS_INIT;
		int rc = tpf_gcp_call(cc->c, "DELETE", url, NULL, what, address,
				      TPF_GCP_QUIET(TPF_GCP_NOTFOUND) | TPF_GCP_REQUEST_ID, &op, &res,
				      &tmp);
		int busy = rc < 0 && res.api_error && res.err.reason &&
			   !strcmp(res.err.reason, "resourceNotReady");
		tpf_gcp_error_release(&res.err);
		if (busy && tpf_now_mono() - start < s->op_timeout) {
			tpf_diags_release(&tmp); /* its delete (or another change) runs: again */
			if ((rc = tpf_gcp_poll_sleep(cc->c, nap)) < 0)
				return rc;
			nap = tpf_gcp_next_poll(s, nap);
			continue;
		}
		tpf_diags_move(d, &tmp);
		tpf_diags_release(&tmp);
		if (rc == 0)
			rc = tpf_compute_wait_op(cc, op, what, address, d);
		json_decref(op);
		return rc == TPF_ENOTFOUND ? 0 : rc;
	}
}

/* A 403 quotaExceeded is quota: the zone fallback and quota deferral act
 * on TPF_EQUOTA (google/gcp_errors.h tpf_gcp_error_quota_exceeded). */
static int quota_rc(int rc, const struct tpf_gcp_outcome *res)
{
	if (rc < 0 && res->api_error && tpf_gcp_error_quota_exceeded(&res->err))
		return TPF_EQUOTA;
	return rc;
}

/* Tell the client's node observer (the SSH access layer, gcp_access.h)
 * about an instance: one worker, its metadata as an object of strings. */
static void seen(struct tpf_compute_client *cc, const char *zone, json_t *inst)
{
	json_t *md = json_object(), *it;
	size_t i;
	json_array_foreach(json_object_get(json_object_get(inst, "metadata"), "items"), i, it) {
		const char *k = json_string_value(json_object_get(it, "key"));
		if (k && json_is_string(json_object_get(it, "value")))
			json_object_set(md, k, json_object_get(it, "value"));
	}
	struct tpf_gcp_seen n = {
		.name = json_string_value(json_object_get(inst, "name")),
		.id = json_string_value(json_object_get(inst, "id")),
		.metadata = md,
		.nendpoints = 1,
		.shape = TPF_GCP_SHAPE_INSTANCE,
	};
	if (n.name)
		tpf_gcp_client_seen(cc->c, zone, &n);
	json_decref(md);
}

int tpf_compute_get(struct tpf_compute_client *cc, const char *zone, const char *name,
		    struct tpf_live_node *out, struct tpf_diags *d)
{
	char *q = tpf_gcp_fields_query('?', TPF_COMPUTE_INSTANCE_FIELDS);
	char *url = instance_url(cc, zone, name, q);
	char *what = xasprintf("get instance '%s' in zone '%s'", name, zone);
	free(q);
	json_t *inst = NULL;
	int rc = tpf_gcp_call(cc->c, "GET", url, NULL, what, name,
			      TPF_GCP_QUIET(TPF_GCP_NOTFOUND), &inst, NULL, d);
	if (rc == 0 && tpf_compute_instance_parse(inst, zone, tpf_gcp_client_ssh_port(cc->c),
						  out) < 0)
		rc = tpf_errorx(d, name, NULL, "%s: the answer is not an instance", what);
	if (rc == 0)
		seen(cc, zone, inst);
	json_decref(inst);
	free(what);
	free(url);
	return rc;
}

/*
 * The insert's operation is DONE once the VM is accepted, usually before
 * it runs: TPU instances "start instead in the PENDING state", then
 * PROVISIONING, STAGING, RUNNING (docs/compute-engine.md section 5). Read
 * it until it is READY (RUNNING), at most the client's op_timeout (then
 * *out is the instance as it is: CREATING, and a later apply provisions
 * it), as the Cloud TPU create waits for READY. A VM lost meanwhile
 * (spot preemption, a failed boot) is an error.
 */
static int wait_instance(struct tpf_compute_client *cc, const char *zone, const char *name,
			 const char *what, struct tpf_live_node *out, struct tpf_diags *d)
{
	const struct tpf_gcp_settings *s = tpf_gcp_client_settings(cc->c);
	double deadline = tpf_now_mono() + s->op_timeout, nap = s->poll_min;
	for (;;) {
		int rc = tpf_compute_get(cc, zone, name, out, d);
		/* READY, or flex-start waiting for capacity (never blocks) */
		if (rc < 0 || tpf_node_class(out->state) == TPF_NODE_READY || out->capacity_wait)
			return rc;
		if (tpf_node_class(out->state) == TPF_NODE_DEAD)
			return tpf_errorx(d, name, "spot capacity may have been reclaimed; apply again",
					  "%s: the instance is %s right after its create", what,
					  out->state);
		if (tpf_now_mono() > deadline)
			return 0;
		if ((rc = tpf_gcp_poll_sleep(cc->c, nap)) < 0)
			return rc;
		nap = nap * 2 < s->poll_max ? nap * 2 : s->poll_max;
	}
}

int tpf_compute_create(struct tpf_compute_client *cc, const char *name,
		       const struct tpf_recipe *r, json_t *metadata, struct tpf_live_node *out,
		       struct tpf_diags *d)
{
	if (!r->zone || !r->compute.machine_type)
		return tpf_errorx(d, name, NULL, "instance '%s': no zone or machine type", name);
	if (r->workers > 1) /* never one VM for a slice that needs several */
		return tpf_errorx(d, name, "use a single-host topology (the machine type's own) for now",
				  "node '%s': a multi-host slice (%d VMs, topology %s) on Compute "
				  "Engine is a managed instance group, which tpuform does not create "
				  "yet", name, r->workers, r->node.topology ? r->node.topology : "?");
	json_t *body = tpf_compute_instance_body(name, r, metadata,
						 tpf_gcp_client_external_ips(cc->c));
	char *url = instance_url(cc, r->zone, NULL, NULL);
	char *what = xasprintf("create instance '%s' (%s) in zone '%s'", name,
			       r->compute.machine_type, r->zone);
	struct tpf_gcp_outcome res = { .err = TPF_GCP_ERROR_INIT };
	json_t *op = NULL;
	/* requestId: a retry of the insert is the same request, never a
	 * second VM (AIP-155; reference section 6). */
	int rc = tpf_gcp_call(cc->c, "POST", url, body, what, name, TPF_GCP_REQUEST_ID, &op, &res,
			      d);
	rc = quota_rc(rc, &res);
	tpf_gcp_error_release(&res.err);
	/* A flex-start insert's operation stays RUNNING until the capacity
	 * comes: the instance, PENDING, tells instead. */
	if (rc == 0 && !r->compute.flex_start)
		rc = tpf_compute_wait_op(cc, op, what, name, d);
	if (rc == 0)
		rc = wait_instance(cc, r->zone, name, what, out, d);
	if (rc == TPF_ENOTFOUND)
		rc = tpf_errorx(d, name, "it may have been deleted at once (spot, or a failed boot)",
				"%s: the instance is gone right after its create", what);
	json_decref(op);
	json_decref(body);
	free(what);
	free(url);
	return rc;
}

/* Is instance `name` (still) this state's? Read just before its delete:
 * 0 yes, TPF_ENOTFOUND gone, TPF_EFOREIGN (tpf_delete_check) or an error. */
static int owned_now(struct tpf_compute_client *cc, const char *zone, const char *name,
		     const struct tpf_delete_guard *guard, struct tpf_diags *d)
{
	struct tpf_live_node now = { 0 };
	int rc = tpf_compute_get(cc, zone, name, &now, d);
	if (rc == 0)
		rc = tpf_delete_check_live(guard, "instance", name, zone, &now, d);
	tpf_live_node_release(&now);
	return rc;
}

int tpf_compute_delete(struct tpf_compute_client *cc, const char *zone, const char *name,
		       const struct tpf_delete_guard *guard, struct tpf_diags *d)
{
	/* instances.delete takes only requestId: no etag or id precondition
	 * (https://cloud.google.com/compute/docs/reference/rest/v1/instances/delete),
	 * so the check is a read right before. */
	int rc = guard ? owned_now(cc, zone, name, guard, d) : 0;
	if (rc == TPF_ENOTFOUND)
		return 0; /* gone already */
	if (rc < 0)
		return rc;
	char *url = instance_url(cc, zone, name, NULL);
	char *what = xasprintf("delete instance '%s' in zone '%s'", name, zone);
	rc = tpf_compute_delete_url(cc, url, what, name, d);
	free(what);
	free(url);
	return rc;
}

struct list_ctx {
	struct tpf_compute_client *cc;
	const char *zone, *fleet;
	int ssh_port;
	json_t *preempted;
	struct tpf_live_set *out, *members;
};

static int list_page(json_t *page, void *arg, struct tpf_diags *d)
{
	struct list_ctx *x = arg;
	size_t i;
	json_t *inst;
	(void)d;
	json_array_foreach(json_object_get(page, "items"), i, inst) {
		const char *f = json_string_value(json_object_get(json_object_get(inst, "labels"),
								  TPF_LABEL_FLEET));
		if (!f || strcmp(f, x->fleet))
			continue; /* matched here: gcloud never filters labels on the server */
		struct tpf_live_node n = { 0 };
		if (tpf_compute_instance_parse(inst, x->zone, x->ssh_port, &n) < 0)
			continue;
		tpf_compute_mark_preempted(&n, x->preempted);
		if (tpf_kvlist_get(&n.recipe.labels, TPF_COMPUTE_SLICE_LABEL)) {
			if (x->members) /* a slice's member: its MIG is the node */
				*tpf_live_set_add(x->members) = n;
			else
				tpf_live_node_release(&n);
			continue;
		}
		*tpf_live_set_add(x->out) = n; /* moved */
		seen(x->cc, x->zone, inst);
	}
	return 0;
}

int tpf_compute_list(struct tpf_compute_client *cc, const char *zone, const char *fleet,
		     json_t *preempted, struct tpf_live_set *out, struct tpf_live_set *members,
		     struct tpf_diags *d)
{
	/* maxResults 500, the API's largest page (reference section 8). */
	char *q = tpf_gcp_fields_query('&', "nextPageToken,items(" TPF_COMPUTE_INSTANCE_FIELDS ")");
	char *suffix = xasprintf("?maxResults=500%s", q);
	char *url = instance_url(cc, zone, NULL, suffix);
	free(suffix);
	free(q);
	char *what = xasprintf("list the instances of zone '%s'", zone);
	struct list_ctx x = { cc, zone, fleet, tpf_gcp_client_ssh_port(cc->c), preempted, out,
			      members };
	int rc = tpf_gapi_pages(tpf_gcp_client_api(cc->c), url, what, NULL,
				TPF_GCP_QUIET(TPF_GCP_NOTFOUND), list_page, &x, d);
	if (rc == TPF_ENOTFOUND) { /* no such zone for this project */
		tpf_live_set_add_unlisted(out, zone);
		rc = 0;
	}
	free(what);
	free(url);
	return rc;
}

/* GET the instance, change with edit, POST to `method` with the
 * fingerprint; again on 412. */
static int read_modify_write(struct tpf_compute_client *cc, const char *zone, const char *name,
			     const char *method, const char *fields,
			     int (*edit)(json_t *inst, json_t **body, void *ctx), void *ctx,
			     struct tpf_diags *d)
{
	char *q = tpf_gcp_fields_query('?', fields);
	char *url = instance_url(cc, zone, name, q); /* the GET: what edit reads */
	free(q);
	char *sfx = xasprintf("/%s", method);
	char *post = instance_url(cc, zone, name, sfx);
	free(sfx);
	char *what = xasprintf("%s of instance '%s' in zone '%s'", method, name, zone);
	int rc = 0;
	for (int attempt = 0; attempt < FINGERPRINT_TRIES; attempt++) {
		json_t *inst = NULL, *body = NULL, *op = NULL;
		rc = tpf_gcp_call(cc->c, "GET", url, NULL, what, name, 0, &inst, NULL, d);
		if (rc == 0)
			rc = edit(inst, &body, ctx);
		if (rc == 1) /* a fingerprint makes a repeat a 412, never a double write */
			rc = tpf_gcp_call(cc->c, "POST", post, body, what, name,
					  TPF_GCP_QUIET(TPF_GCP_STALE) | TPF_GCP_PRECONDITION |
						  TPF_GCP_REQUEST_ID,
					  &op, NULL, d);
		if (rc == 0 && op)
			rc = tpf_compute_wait_op(cc, op, what, name, d);
		json_decref(inst);
		json_decref(body);
		json_decref(op);
		if (rc != TPF_ESTALE)
			break;
	}
	if (rc == TPF_ESTALE)
		rc = tpf_errorx(d, name, "something else keeps changing it; try again",
				"%s: 412 conditionNotMet %d times in a row", what, FINGERPRINT_TRIES);
	free(what);
	free(post);
	free(url);
	return rc;
}

static int edit_labels(json_t *inst, json_t **body, void *ctx)
{
	const struct tpf_kvlist *labels = ctx;
	json_t *l = json_object();
	for (size_t i = 0; i < labels->n; i++)
		json_object_set_new(l, labels->items[i].key, json_string(labels->items[i].value));
	const char *fp = json_string_value(json_object_get(inst, "labelFingerprint"));
	*body = json_pack("{s:o, s:s}", "labels", l, "labelFingerprint", fp ? fp : "");
	return 1;
}

int tpf_compute_set_labels(struct tpf_compute_client *cc, const char *zone, const char *name,
			   const struct tpf_kvlist *labels, struct tpf_diags *d)
{
	return read_modify_write(cc, zone, name, "setLabels", "labelFingerprint", edit_labels,
				 (void *)labels, d);
}

struct md_edit {
	int (*edit)(json_t *items, void *ctx);
	void *ctx;
};

static int edit_metadata(json_t *inst, json_t **body, void *arg)
{
	struct md_edit *e = arg;
	json_t *md = json_object_get(inst, "metadata"), *it, *kv = json_object();
	size_t i;
	json_array_foreach(json_object_get(md, "items"), i, it) {
		const char *key = json_string_value(json_object_get(it, "key"));
		if (key && json_is_string(json_object_get(it, "value")))
			json_object_set(kv, key, json_object_get(it, "value"));
	}
	int rc = e->edit(kv, e->ctx);
	if (rc == 1) {
		json_t *items = json_array(), *v;
		const char *k;
		json_object_foreach(kv, k, v)
			json_array_append_new(items, json_pack("{s:s, s:O}", "key", k, "value", v));
		const char *fp = json_string_value(json_object_get(md, "fingerprint"));
		*body = json_pack("{s:s, s:o}", "fingerprint", fp ? fp : "", "items", items);
	}
	json_decref(kv);
	return rc;
}

int tpf_compute_edit_metadata(struct tpf_compute_client *cc, const char *zone, const char *name,
			      int (*edit)(json_t *items, void *ctx), void *ctx,
			      struct tpf_diags *d)
{
	struct md_edit e = { edit, ctx };
	return read_modify_write(cc, zone, name, "setMetadata", "metadata(fingerprint,items)",
				 edit_metadata, &e, d);
}

int tpf_compute_guest_attributes(struct tpf_compute_client *cc, const char *zone,
				 const char *name, json_t **out, struct tpf_diags *d)
{
	char *url = instance_url(cc, zone, name, "/getGuestAttributes?queryPath=hostkeys%2F");
	char *what = xasprintf("read the host keys of instance '%s'", name);
	*out = NULL;
	/* "The resource 'hostkeys/' of type 'Guest Attribute' was not found":
	 * none published yet (reference section 7). */
	int rc = tpf_gcp_call(cc->c, "GET", url, NULL, what, name, TPF_GCP_QUIET(TPF_GCP_NOTFOUND),
			      out, NULL, d);
	if (rc == TPF_ENOTFOUND)
		rc = 0;
	if (rc == 0 && !*out)
		*out = json_object();
	free(what);
	free(url);
	return rc;
}

int tpf_compute_host_keys(struct tpf_compute_client *cc, const char *zone, const char *name,
			  json_t **out, struct tpf_diags *d)
{
	json_t *ga = NULL, *it;
	size_t i;
	*out = json_array();
	int rc = tpf_compute_guest_attributes(cc, zone, name, &ga, d);
	json_array_foreach(json_object_get(json_object_get(ga, "queryValue"), "items"), i, it) {
		const char *ns = json_string_value(json_object_get(it, "namespace"));
		const char *k = json_string_value(json_object_get(it, "key"));
		const char *v = json_string_value(json_object_get(it, "value"));
		if (ns && !strcmp(ns, "hostkeys") && k && v && *k && *v) {
			char *line = xasprintf("%s %s", k, v);
			json_array_append_new(*out, json_string(line));
			free(line);
		}
	}
	json_decref(ga);
	return rc;
}

/* ---- preemptions (docs/compute-engine.md "Preemption") ---------------------- */

/* Keep the later of two RFC 3339 times under key k of o. */
static void keep_latest(json_t *o, const char *k, const char *when)
{
	const char *had = json_string_value(json_object_get(o, k));
	if (!had || tpf_parse_rfc3339(when) > tpf_parse_rfc3339(had))
		json_object_set_new(o, k, json_string(when));
}

static int preempted_page(json_t *page, void *arg, struct tpf_diags *d)
{
	json_t *out = arg, *sl, *op;
	const char *scope;
	size_t i;
	(void)d;
	json_object_foreach(json_object_get(page, "items"), scope, sl) {
		if (strncmp(scope, "zones/", 6))
			continue; /* instances are zonal */
		json_array_foreach(json_object_get(sl, "operations"), i, op) {
			const char *type = json_string_value(json_object_get(op, "operationType"));
			const char *id = json_string_value(json_object_get(op, "targetId"));
			const char *link = json_string_value(json_object_get(op, "targetLink"));
			const char *when = json_string_value(json_object_get(op, "insertTime"));
			const char *name = link ? strrchr(link, '/') : NULL;
			/* checked here too: the filter is the server's to honour */
			if (!type || strcmp(type, "compute.instances.preempted") || !when)
				continue;
			if (id) {
				char *k = xasprintf("id:%s", id);
				keep_latest(out, k, when);
				free(k);
			}
			if (name && name[1]) {
				char *k = xasprintf("name:%s/%s", scope + 6, name + 1);
				keep_latest(out, k, when);
				free(k);
			}
		}
	}
	return 0;
}

int tpf_compute_list_preempted(struct tpf_compute_client *cc, json_t **out, struct tpf_diags *d)
{
	/* The filter as Google's compute-preemptible-history sample writes it. */
	char *f = tpf_gcp_escape("operationType=\"compute.instances.preempted\"");
	/* preempted_page reads these */
	char *q = tpf_gcp_fields_query('&', "nextPageToken,items/*/operations(operationType,"
					    "targetId,targetLink,insertTime)");
	char *url = xasprintf("%s/aggregated/operations?filter=%s&maxResults=500&"
			      "returnPartialSuccess=true%s", cc->base, f, q);
	free(q);
	json_t *o = json_object();
	int rc = tpf_gapi_pages(tpf_gcp_client_api(cc->c), url, "list the preemptions", NULL, 0,
				preempted_page, o, d);
	free(url);
	free(f);
	if (rc < 0) {
		json_decref(o);
		o = NULL;
	}
	*out = o;
	return rc;
}

void tpf_compute_mark_preempted(struct tpf_live_node *n, json_t *preempted)
{
	if (!preempted || !n->id || tpf_node_class(n->state) != TPF_NODE_DEAD)
		return;
	char *k = xasprintf("id:%s", n->id);
	if (json_object_get(preempted, k))
		xstrset(&n->state, "PREEMPTED");
	free(k);
}

int tpf_compute_member_preempted(json_t *preempted, const char *zone, const char *slice,
				 const char *since)
{
	char *prefix = xasprintf("name:%s/%s-", zone, slice);
	size_t pl = strlen(prefix);
	double t0 = since ? tpf_parse_rfc3339(since) : -1;
	const char *k;
	json_t *v;
	int found = 0;
	json_object_foreach(preempted, k, v) {
		if (strncmp(k, prefix, pl) || !k[pl] || strspn(k + pl, "0123456789") != strlen(k + pl))
			continue;
		if (t0 < 0 || tpf_parse_rfc3339(json_string_value(v)) >= t0)
			found = 1;
	}
	free(prefix);
	return found;
}
