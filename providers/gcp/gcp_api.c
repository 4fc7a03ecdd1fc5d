#include "providers/gcp/gcp_api.h"
#include "providers/gcp/gcp_api_internal.h"
#include "google/gcp_endpoint.h"
#include "google/gcp_errors.h"
#include "providers/gcp/gcp_node.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

struct tpf_gcp_client {
	char *project;
	char *endpoint;
	struct tpf_gcp_settings s;
	struct tpf_gcp_http *http;
	struct tpf_gcp_auth *auth;
	int ssh_port;
	int external_ips;
	/* The provider's interrupt flag, read at each poll (may be NULL). */
	volatile int *const *interrupted;
	tpf_gcp_node_seen_fn seen;
	void *seen_ctx;
};

void tpf_gcp_client_on_node(struct tpf_gcp_client *c, tpf_gcp_node_seen_fn fn, void *ctx)
{
	c->seen = fn;
	c->seen_ctx = ctx;
}

#define QUIET(cls) (1u << (cls))

/* Longest sleep between two looks at the interrupt flag (seconds). */
#define POLL_NAP 0.2

void tpf_gcp_client_watch_interrupt(struct tpf_gcp_client *c, volatile int *const *flag)
{
	c->interrupted = flag;
}

int tpf_gcp_poll_sleep(struct tpf_gcp_client *c, double seconds)
{
	double end = tpf_now_mono() + seconds;
	for (;;) {
		if (c->interrupted && *c->interrupted && **c->interrupted)
			return TPF_EINTERRUPTED;
		double left = end - tpf_now_mono();
		if (left <= 0)
			return 0;
		tpf_sleep(left < POLL_NAP ? left : POLL_NAP);
	}
}

int tpf_gcp_client_open(struct tpf_gcp_client **out, const struct tpf_gcp_client_config *cfg,
			struct tpf_diags *d)
{
	struct tpf_gcp_client *c = xcalloc(1, sizeof(*c));
	if (!cfg->project || !*cfg->project) {
		tpf_errorx(d, NULL, "add 'project: <id>' under provider.gcp",
			   "provider 'gcp' needs a project: none is set");
		goto fail;
	}
	c->project = xstrdup(cfg->project);
	c->ssh_port = cfg->ssh_port > 0 ? cfg->ssh_port : 22;
	c->external_ips = cfg->external_ips;
	if (tpf_gcp_settings_load(&c->s, d) < 0)
		goto fail;
	if (tpf_gcp_endpoint_resolve(cfg->endpoint, &c->endpoint, d) < 0)
		goto fail;
	struct tpf_gcp_http_opts o = {
		.connect_timeout = c->s.connect_timeout,
		.stall_timeout = c->s.stall_timeout,
		.request_timeout = c->s.request_timeout,
		.max_body = c->s.max_body,
	};
	if (tpf_gcp_http_new(&c->http, &o, d) < 0)
		goto fail;
	struct tpf_gcp_auth_config ac = {
		.credentials = cfg->credentials,
		.impersonate = cfg->impersonate_service_account,
		.quota_project = cfg->quota_project,
	};
	if (tpf_gcp_auth_open(&c->auth, c->http, &c->s, &ac, d) < 0)
		goto fail;
	*out = c;
	return 0;
fail:
	tpf_gcp_client_free(c);
	return TPF_ERROR;
}

void tpf_gcp_client_free(struct tpf_gcp_client *c)
{
	if (!c)
		return;
	tpf_gcp_auth_free(c->auth);
	tpf_gcp_http_free(c->http);
	free(c->project);
	free(c->endpoint);
	free(c);
}

struct tpf_gcp_http *tpf_gcp_client_http(struct tpf_gcp_client *c)
{
	return c->http;
}

struct tpf_gcp_auth *tpf_gcp_client_auth(struct tpf_gcp_client *c)
{
	return c->auth;
}

const struct tpf_gcp_settings *tpf_gcp_client_settings(struct tpf_gcp_client *c)
{
	return &c->s;
}

/* <endpoint>/v2/projects/P/locations/Z<suffix>; suffix may be "". */
static char *zone_url(struct tpf_gcp_client *c, const char *zone, const char *suffix)
{
	char *p = tpf_gcp_escape(c->project), *z = tpf_gcp_escape(zone);
	char *u = xasprintf("%s/v2/projects/%s/locations/%s%s", c->endpoint, p, z, suffix);
	free(p);
	free(z);
	return u;
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

/* What the caller asked and the outcome of the last attempt. */
struct call_result {
	enum tpf_gcp_class cls; /* valid when an API error was returned */
	int attempts;
	int api_error;          /* 1 if cls/err describe an HTTP error answer */
	struct tpf_gcp_error err;
};

static void add_api_diag(struct tpf_gcp_client *c, const char *what, const char *address,
			 const struct tpf_gcp_error *e, enum tpf_gcp_class cls, const char *suffix,
			 struct tpf_diags *d)
{
	struct tpf_buf m = TPF_BUF_INIT;
	tpf_gcp_error_format(e, &m);
	char *hint = cls == TPF_GCP_AUTH ? xstrdup(tpf_gcp_auth_reject_hint(c->auth))
					 : tpf_gcp_error_hint(e, cls, c->project);
	tpf_errorx(d, address, hint, "%s: %s%s", what, m.buf, suffix ? suffix : "");
	free(hint);
	tpf_buf_release(&m);
}

/*
 * One API request with retries. On 2xx returns 0 and *out (new reference,
 * an empty object for an empty body). On an API error of a class in
 * `quiet` returns its rc with no diagnostic (the caller handles it);
 * otherwise adds one. res (may be NULL) reports class and attempts.
 */
static int call(struct tpf_gcp_client *c, const char *method, const char *url, json_t *body,
		const char *what, const char *address, unsigned quiet, json_t **out,
		struct call_result *res, struct tpf_diags *d)
{
	int rc = TPF_ERROR;
	struct call_result local = { .err = TPF_GCP_ERROR_INIT };
	struct call_result *r = res ? res : &local;
	struct tpf_gcp_response rs = TPF_GCP_RESPONSE_INIT;
	char *body_s = body ? json_dumps(body, JSON_COMPACT) : NULL;
	int auth_retried = 0;
	*out = NULL;
	r->api_error = 0;
	r->attempts = 0;
	for (int attempt = 0;; attempt++) {
		char *tok = NULL;
		r->attempts = attempt + 1;
		int last = attempt + 1 >= c->s.tries;
		if ((rc = tpf_gcp_auth_token(c->auth, &tok, d)) < 0)
			goto done;
		/* x-goog-user-project: the quota project, if any (gcp_auth.h) */
		const char *extra[] = { tpf_gcp_auth_quota_header(c->auth), NULL };
		struct tpf_gcp_request rq = {
			.method = method, .url = url, .body = body_s,
			.body_len = body_s ? strlen(body_s) : 0, .bearer = tok, .headers = extra,
		};
		int h = tpf_gcp_http_do(c->http, &rq, &rs);
		if (h < 0) {
			tpf_gcp_auth_token_free(tok);
			if (rs.too_large) {
				rc = tpf_gcp_http_too_large(c->http, &rq, what, address, d);
				goto done;
			}
			if (h == TPF_ETRANSIENT && !last) {
				tpf_sleep(tpf_gcp_retry_delay(&c->s, attempt, -1));
				continue;
			}
			tpf_errorx(d, address, "check the network path to the endpoint",
				   "%s: cannot reach '%s': %s%s", what, c->endpoint, rs.error,
				   h == TPF_ETRANSIENT ? " (gave up after retries)" : "");
			rc = h;
			goto done;
		}
		if (rs.status >= 200 && rs.status < 300) {
			tpf_gcp_auth_token_free(tok);
			*out = rs.body.len ? json_loadb(rs.body.buf, rs.body.len, 0, NULL) : json_object();
			if (!json_is_object(*out)) {
				json_decref(*out);
				*out = NULL;
				tpf_errorx(d, address, NULL, "%s: HTTP %ld with a body that is not a JSON object",
					   what, rs.status);
				rc = TPF_ERROR;
				goto done;
			}
			rc = 0;
			goto done;
		}
		tpf_gcp_error_parse_http(&r->err, rs.status, rs.body.buf, rs.body.len);
		r->cls = tpf_gcp_error_classify(&r->err);
		r->api_error = 1;
		if (r->cls == TPF_GCP_AUTH && !auth_retried &&
		    tpf_gcp_auth_invalidate(c->auth, tok)) {
			/* expired early or revoked: one more try with a new token */
			tpf_gcp_auth_token_free(tok);
			auth_retried = 1;
			continue;
		}
		tpf_gcp_auth_token_free(tok);
		if (r->cls == TPF_GCP_TRANSIENT && !last) {
			double ra = tpf_gcp_parse_retry_after(rs.retry_after, tpf_now_wall());
			if (r->err.retry_delay > ra)
				ra = r->err.retry_delay;
			tpf_sleep(tpf_gcp_retry_delay(&c->s, attempt, ra));
			continue;
		}
		rc = tpf_gcp_class_rc(r->cls);
		if (!(quiet & QUIET(r->cls))) {
			char suffix[64] = "";
			if (r->cls == TPF_GCP_TRANSIENT)
				snprintf(suffix, sizeof(suffix), " (gave up after %d tries)", r->attempts);
			add_api_diag(c, what, address, &r->err, r->cls, suffix, d);
		}
		goto done;
	}
done:
	free(body_s);
	tpf_gcp_response_release(&rs);
	if (!res)
		tpf_gcp_error_release(&local.err);
	return rc;
}

/*
 * Poll operation `op` (as returned by a mutating call) until done.
 * Returns 0, a class rc with a diagnostic when the operation failed
 * (*failed set), or an error polling it (*failed stays 0).
 */
static int wait_op(struct tpf_gcp_client *c, json_t *op, const char *what, const char *address,
		   int *failed, struct tpf_diags *d)
{
	int rc = 0;
	json_t *cur = json_incref(op);
	double start = tpf_now_mono(), interval = c->s.poll_min;
	int missing = 0;
	char *url = NULL;
	const char *name = json_string_value(json_object_get(op, "name"));
	*failed = 0;
	if (name && *name)
		url = xasprintf("%s/v2/%s", c->endpoint, name);
	for (;;) {
		/* no name: Terraform's OperationWait treats the call as synchronous */
		if (json_is_true(json_object_get(cur, "done")) || !url) {
			json_t *err = json_object_get(cur, "error");
			if (json_is_object(err)) {
				struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
				tpf_gcp_error_parse_status(&e, err);
				enum tpf_gcp_class cls = tpf_gcp_error_classify(&e);
				add_api_diag(c, what, address, &e, cls, NULL, d);
				tpf_gcp_error_release(&e);
				*failed = 1;
				rc = tpf_gcp_class_rc(cls);
				if (rc == TPF_ENOTFOUND)
					rc = TPF_ERROR;
			}
			goto done;
		}
		if (tpf_now_mono() - start > c->s.op_timeout) {
			tpf_errorx(d, address,
				   "the operation may still finish; run 'tpuform refresh' later to see",
				   "%s: operation '%s' not done after %.0f seconds", what, name,
				   c->s.op_timeout);
			rc = TPF_ERROR;
			goto done;
		}
		if ((rc = tpf_gcp_poll_sleep(c, interval)) < 0)
			goto done; /* interrupted: the operation goes on without us */
		interval = tpf_gcp_next_poll(&c->s, interval);
		json_t *next = NULL;
		struct call_result r = { .err = TPF_GCP_ERROR_INIT };
		rc = call(c, "GET", url, NULL, what, address, QUIET(TPF_GCP_NOTFOUND), &next, &r, d);
		tpf_gcp_error_release(&r.err);
		if (rc == TPF_ENOTFOUND && ++missing <= 3) {
			/* Terraform ignores a 404 on an operation and polls on */
			rc = 0;
			continue;
		}
		if (rc < 0) {
			if (rc == TPF_ENOTFOUND)
				rc = tpf_errorx(d, address, NULL, "%s: operation '%s' disappeared", what, name);
			goto done;
		}
		missing = 0;
		json_decref(cur);
		cur = next;
	}
done:
	free(url);
	json_decref(cur);
	return rc;
}

int tpf_gcp_get_node_json(struct tpf_gcp_client *c, const char *zone, const char *name,
			  json_t **out, struct tpf_diags *d)
{
	char *url = node_url(c, zone, name, NULL);
	char *what = xasprintf("get node '%s' in zone '%s'", name, zone);
	int rc = call(c, "GET", url, NULL, what, name, QUIET(TPF_GCP_NOTFOUND), out, NULL, d);
	if (rc == 0 && !json_string_value(json_object_get(*out, "name"))) {
		rc = tpf_errorx(d, name, NULL, "%s: the answer is not a node (no 'name')", what);
		json_decref(*out);
		*out = NULL;
	}
	if (rc == 0 && c->seen)
		c->seen(c->seen_ctx, zone, *out);
	free(what);
	free(url);
	return rc;
}

int tpf_gcp_get_node(struct tpf_gcp_client *c, const char *zone, const char *name,
		     struct tpf_live_node *out, struct tpf_diags *d)
{
	json_t *node = NULL;
	int rc = tpf_gcp_get_node_json(c, zone, name, &node, d);
	if (rc == 0 && tpf_gcp_node_parse(node, zone, c->ssh_port, out) < 0)
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
	double start = tpf_now_mono(), interval = c->s.poll_min;
	for (;;) {
		int rc = tpf_gcp_get_node(c, zone, name, out, d);
		if (rc < 0)
			return rc;
		if (strcmp(out->state, "CREATING"))
			return 0;
		if (tpf_now_mono() - start > c->s.op_timeout)
			return tpf_errorx(d, name, "run 'tpuform refresh' later to see its state",
					  "%s: node still CREATING after %.0f seconds", what,
					  c->s.op_timeout);
		if (tpf_gcp_poll_sleep(c, interval) < 0)
			return TPF_EINTERRUPTED;
		interval = tpf_gcp_next_poll(&c->s, interval);
	}
}

/*
 * A create whose operation succeeded but whose node is already PREEMPTED or
 * TERMINATED: a stockout reported while creating (SkyPilot blocks the zone
 * for a create preempted this way, FailoverCloudErrorHandlerV2._gcp_handler,
 * code 3). Delete it (it holds quota until deleted, docs/cloud-tpu-api.md
 * section 4) and return TPF_ECAPACITY so that the next zone is tried.
 */
static int lost_while_creating(struct tpf_gcp_client *c, const char *zone, const char *name,
			       const char *what, struct tpf_live_node *out, struct tpf_diags *d)
{
	if (!out->state || (strcmp(out->state, "PREEMPTED") && strcmp(out->state, "TERMINATED")))
		return 0;
	tpf_errorx(d, name, "no capacity held it; tpuform tries the group's next zone, "
		   "or retry later",
		   "%s: the node was %s before it was ever READY", what, out->state);
	struct tpf_diags tmp = TPF_DIAGS_INIT;
	if (tpf_gcp_delete_node(c, zone, name, &tmp) < 0)
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
	json_t *body = tpf_gcp_node_body(r, c->external_ips, metadata);
	json_t *op = NULL;
	struct call_result res = { .err = TPF_GCP_ERROR_INIT };
	int failed = 0, rc;

	if (!zone || !*zone) {
		rc = tpf_errorx(d, name, NULL, "%s: the recipe has no zone", what);
		goto done;
	}
	rc = call(c, "POST", url, body, what, name, QUIET(TPF_GCP_CONFLICT), &op, &res, d);
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
	rc = wait_op(c, op, what, name, &failed, d);
	if (rc < 0) {
		if (failed) {
			/* leave nothing behind: a failed create may still leave a node */
			struct tpf_diags tmp = TPF_DIAGS_INIT;
			struct tpf_live_node left = { 0 };
			int got = tpf_gcp_get_node(c, zone, name, &left, &tmp) == 0;
			if (got && tpf_gcp_delete_node(c, zone, name, &tmp) < 0) {
				for (size_t i = 0; i < tmp.n; i++)
					tpf_warn(d, name, "cleanup after the failed create: %s",
						 tmp.items[i].summary);
			}
			/* Its node PREEMPTED or TERMINATED: lost while creating,
			 * a stockout (SkyPilot blocks the zone on the code 3
			 * this gives, FailoverCloudErrorHandlerV2._gcp_handler). */
			if (got && left.state && (!strcmp(left.state, "PREEMPTED") ||
						  !strcmp(left.state, "TERMINATED")))
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
		rc = lost_while_creating(c, zone, name, what, out, d);
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

int tpf_gcp_delete_node(struct tpf_gcp_client *c, const char *zone, const char *name,
			struct tpf_diags *d)
{
	char *url = node_url(c, zone, name, NULL);
	char *what = xasprintf("delete node '%s' in zone '%s'", name, zone);
	json_t *op = NULL;
	int failed = 0;
	int rc = call(c, "DELETE", url, NULL, what, name, QUIET(TPF_GCP_NOTFOUND), &op, NULL, d);
	if (rc == TPF_ENOTFOUND) {
		rc = 0; /* already gone */
		goto done;
	}
	if (rc < 0)
		goto done;
	if ((rc = wait_op(c, op, what, name, &failed, d)) < 0)
		goto done;
	/* the operation is done; make sure a get agrees before saying "gone" */
	double start = tpf_now_mono(), interval = c->s.poll_min;
	for (;;) {
		struct tpf_live_node n = { 0 };
		rc = tpf_gcp_get_node(c, zone, name, &n, d);
		tpf_live_node_release(&n);
		if (rc == TPF_ENOTFOUND) {
			rc = 0;
			break;
		}
		if (rc < 0)
			break;
		if (tpf_now_mono() - start > c->s.op_timeout) {
			rc = tpf_errorx(d, name, NULL, "%s: node still listed %.0f seconds after its "
					"delete operation finished", what, c->s.op_timeout);
			break;
		}
		if ((rc = tpf_gcp_poll_sleep(c, interval)) < 0)
			break;
		interval = tpf_gcp_next_poll(&c->s, interval);
	}
done:
	json_decref(op);
	free(what);
	free(url);
	return rc;
}

int tpf_gcp_patch_labels(struct tpf_gcp_client *c, const char *zone, const char *name,
			 const struct tpf_kvlist *labels, struct tpf_diags *d)
{
	char *url = node_url(c, zone, name, "?updateMask=labels");
	char *what = xasprintf("update labels of node '%s' in zone '%s'", name, zone);
	json_t *body = tpf_gcp_labels_body(labels);
	json_t *op = NULL;
	int failed = 0;
	int rc = call(c, "PATCH", url, body, what, name, 0, &op, NULL, d);
	if (rc == 0)
		rc = wait_op(c, op, what, name, &failed, d);
	json_decref(op);
	json_decref(body);
	free(what);
	free(url);
	return rc;
}

int tpf_gcp_patch_metadata(struct tpf_gcp_client *c, const char *zone, const char *name,
			   json_t *body, struct tpf_diags *d)
{
	char *url = node_url(c, zone, name, "?updateMask=metadata");
	char *what = xasprintf("add the SSH key to the metadata of node '%s' in zone '%s'", name,
			       zone);
	json_t *op = NULL;
	int failed = 0;
	int rc = call(c, "PATCH", url, body, what, name, 0, &op, NULL, d);
	if (rc == 0)
		rc = wait_op(c, op, what, name, &failed, d);
	json_decref(op);
	free(what);
	free(url);
	return rc;
}

int tpf_gcp_patch_node(struct tpf_gcp_client *c, const char *zone, const char *name,
		       json_t *body, const char *mask, struct tpf_diags *d)
{
	char *query = xasprintf("?updateMask=%s", mask);
	char *url = node_url(c, zone, name, query);
	char *what = xasprintf("update %s of node '%s' in zone '%s'", mask, name, zone);
	json_t *op = NULL;
	int failed = 0;
	int rc = call(c, "PATCH", url, body, what, name, 0, &op, NULL, d);
	if (rc == 0)
		rc = wait_op(c, op, what, name, &failed, d);
	json_decref(op);
	free(what);
	free(url);
	free(query);
	return rc;
}

int tpf_gcp_get_guest_attributes(struct tpf_gcp_client *c, const char *zone, const char *name,
				 const char *query_path, json_t **out, struct tpf_diags *d)
{
	char *url = node_url(c, zone, name, ":getGuestAttributes");
	char *what = xasprintf("read the guest attributes of node '%s' in zone '%s'", name, zone);
	json_t *body = json_pack("{s:s}", "queryPath", query_path);
	int rc = call(c, "POST", url, body, what, name, QUIET(TPF_GCP_NOTFOUND), out, NULL, d);
	json_decref(body);
	free(what);
	free(url);
	return rc;
}

/*
 * GET every page of a list method; calls each(item, ctx) for the items of
 * array `key`. An "unreachable" list is an error.
 */
static int list_all(struct tpf_gcp_client *c, const char *base, const char *key,
		    const char *what, int (*each)(json_t *, void *), void *ctx,
		    struct tpf_diags *d)
{
	int rc = 0;
	char *token = NULL;
	for (int page = 0;; page++) {
		char *url;
		/* prettyPrint=false: the list's JSON without the indentation
		 * Google adds by default (a standard system parameter,
		 * https://cloud.google.com/apis/docs/system-parameters, and in
		 * the discovery document): a third fewer bytes to receive and
		 * parse per page, the same values.
		 * No pageSize, as gcloud sends none: the reference gives neither
		 * its default nor its maximum ("the maximum number of items to
		 * return", https://cloud.google.com/tpu/docs/reference/rest/v2/projects.locations.nodes/list),
		 * so a value could as well ask for smaller pages than the
		 * server's own; and a large one risks a page past the response
		 * cap (TPF_GCP_MAX_BODY, 64 MiB) when nodes carry metadata near
		 * the 512 KB Compute Engine allows an instance (Metadata.items,
		 * https://cloud.google.com/compute/docs/reference/rest/v1/instances). */
		if (token) {
			char *t = tpf_gcp_escape(token);
			url = xasprintf("%s?prettyPrint=false&pageToken=%s", base, t);
			free(t);
		} else {
			url = xasprintf("%s?prettyPrint=false", base);
		}
		json_t *resp = NULL;
		rc = call(c, "GET", url, NULL, what, NULL, 0, &resp, NULL, d);
		free(url);
		if (rc < 0)
			break;
		size_t i;
		json_t *it;
		json_array_foreach(json_object_get(resp, key), i, it) {
			if ((rc = each(it, ctx)) < 0)
				break;
		}
		json_t *unr = json_object_get(resp, "unreachable");
		if (rc == 0 && json_array_size(unr) > 0) {
			const char *u = json_string_value(json_array_get(unr, 0));
			rc = tpf_errorx(d, NULL, "retry later; tpuform does not act on a partial list",
					"%s: the API could not reach location '%s'", what, u ? u : "?");
		}
		const char *next = json_string_value(json_object_get(resp, "nextPageToken"));
		char *nt = next && *next ? xstrdup(next) : NULL;
		json_decref(resp);
		if (rc < 0 || !nt) {
			free(nt);
			break;
		}
		if ((token && !strcmp(nt, token)) || page > 100000) {
			rc = tpf_errorx(d, NULL, NULL, "%s: the API returned page token '%s' twice",
					what, nt);
			free(nt);
			break;
		}
		free(token);
		token = nt;
	}
	free(token);
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
	if (x->c->seen)
		x->c->seen(x->c->seen_ctx, x->zone, node);
	struct tpf_live_node *n = tpf_live_set_add(x->out);
	if (tpf_gcp_node_parse(node, x->zone, x->c->ssh_port, n) < 0) {
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
	int rc = list_all(c, base, "nodes", what, each_node, &x, d);
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
	int rc = list_all(c, base, coll, what, each_string, &s, d);
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

/* ---- the machinery, for the other API files (gcp_api_internal.h) ---- */

char *tpf_gcp_zone_url(struct tpf_gcp_client *c, const char *zone, const char *suffix)
{
	return zone_url(c, zone, suffix);
}

int tpf_gcp_call(struct tpf_gcp_client *c, const char *method, const char *url, json_t *body,
		 const char *what, const char *address, unsigned quiet, json_t **out,
		 struct tpf_gcp_outcome *res, struct tpf_diags *d)
{
	struct call_result r = { .err = TPF_GCP_ERROR_INIT };
	int rc = call(c, method, url, body, what, address, quiet, out, &r, d);
	if (res) {
		res->api_error = r.api_error;
		res->cls = r.cls;
		res->attempts = r.attempts;
		tpf_gcp_error_release(&res->err);
		res->err = r.err; /* moved */
	} else {
		tpf_gcp_error_release(&r.err);
	}
	return rc;
}

int tpf_gcp_wait_op(struct tpf_gcp_client *c, json_t *op, const char *what, const char *address,
		    int *failed, struct tpf_diags *d)
{
	return wait_op(c, op, what, address, failed, d);
}

int tpf_gcp_list_all(struct tpf_gcp_client *c, const char *base, const char *key,
		     const char *what, int (*each)(json_t *, void *), void *ctx,
		     struct tpf_diags *d)
{
	return list_all(c, base, key, what, each, ctx, d);
}

int tpf_gcp_wait_node_settled(struct tpf_gcp_client *c, const char *zone, const char *name,
			      const char *what, struct tpf_live_node *out, struct tpf_diags *d)
{
	return wait_node_settled(c, zone, name, what, out, d);
}

const char *tpf_gcp_client_project(struct tpf_gcp_client *c)
{
	return c->project;
}

int tpf_gcp_client_ssh_port(struct tpf_gcp_client *c)
{
	return c->ssh_port;
}

int tpf_gcp_client_external_ips(struct tpf_gcp_client *c)
{
	return c->external_ips;
}
