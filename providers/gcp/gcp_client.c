/*
 * The gcp provider's client (gcp_client.h): its configuration, and the Cloud TPU
 * flavour of the Google REST client's calls (google/gapi.h owns retries,
 * operation waits and pages) for the resource files: nodes (tpu/gcp_api.c),
 * queued resources (tpu/gcp_qr_api.c), OS Login (gcp_oslogin.c), and the
 * Compute Engine back-end (compute/).
 */
#include "providers/gcp/gcp_client.h"
#include "providers/gcp/gcp_client_internal.h"
#include "google/gapi.h"
#include "google/gcp_endpoint.h"
#include "google/gcp_retry.h"
#include "util/diag.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

struct tpf_gcp_client {
	char *project;
	char *endpoint;
	char *op_root; /* <endpoint>/v2/: operation names are relative to it */
	struct tpf_gcp_settings s;
	struct tpf_gcp_http *http;
	struct tpf_gcp_auth *auth;
	struct tpf_gapi *api;
	int ssh_port;
	int external_ips;
	tpf_gcp_node_seen_fn seen;
	void *seen_ctx;
};

void tpf_gcp_client_on_node(struct tpf_gcp_client *c, tpf_gcp_node_seen_fn fn, void *ctx)
{
	c->seen = fn;
	c->seen_ctx = ctx;
}

void tpf_gcp_client_seen(struct tpf_gcp_client *c, const char *zone,
			 const struct tpf_gcp_seen *n)
{
	if (c->seen)
		c->seen(c->seen_ctx, zone, n);
}

void tpf_gcp_client_watch_interrupt(struct tpf_gcp_client *c, volatile int *const *flag)
{
	tpf_gapi_watch_interrupt(c->api, flag);
}

int tpf_gcp_poll_sleep(struct tpf_gcp_client *c, double seconds)
{
	return tpf_gapi_sleep(c->api, seconds);
}

int tpf_gcp_wait_gone(struct tpf_gcp_client *c, const char *zone, const char *name,
		      const char *noun, const char *what, tpf_gcp_probe_fn probe,
		      struct tpf_diags *d)
{
	double start = tpf_now_mono(), interval = c->s.poll_min;
	for (;;) {
		int rc = probe(c, zone, name, d);
		if (rc == TPF_ENOTFOUND)
			return 0;
		if (rc < 0)
			return rc;
		if (tpf_now_mono() - start > c->s.op_timeout)
			return tpf_errorx(d, name, NULL, "%s: %s still listed %.0f seconds after its "
					  "delete operation finished", what, noun, c->s.op_timeout);
		if ((rc = tpf_gcp_poll_sleep(c, interval)) < 0)
			return rc;
		interval = tpf_gcp_next_poll(&c->s, interval);
	}
}

/* HTTP engine, credentials and the REST client over them. */
static int open_api(struct tpf_gcp_client *c, const struct tpf_gcp_client_config *cfg,
		    struct tpf_diags *d)
{
	struct tpf_gcp_http_opts o = {
		.connect_timeout = c->s.connect_timeout,
		.stall_timeout = c->s.stall_timeout,
		.request_timeout = c->s.request_timeout,
		.max_body = c->s.max_body,
	};
	if (tpf_gcp_http_new(&c->http, &o, d) < 0)
		return TPF_ERROR;
	struct tpf_gcp_auth_config ac = {
		.credentials = cfg->credentials,
		.impersonate = cfg->impersonate_service_account,
		.quota_project = cfg->quota_project,
	};
	if (tpf_gcp_auth_open(&c->auth, c->http, &c->s, &ac, d) < 0)
		return TPF_ERROR;
	struct tpf_gapi_config gc = {
		.endpoint = c->endpoint, .project = c->project, .http = c->http, .settings = &c->s,
	};
	if (tpf_gapi_open(&c->api, &gc, d) < 0)
		return TPF_ERROR;
	struct tpf_gapi_creds creds;
	tpf_gcp_auth_creds(c->auth, &creds);
	tpf_gapi_set_creds(c->api, &creds);
	return 0;
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
	c->op_root = xasprintf("%s/v2/", c->endpoint);
	if (open_api(c, cfg, d) < 0)
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
	tpf_gapi_free(c->api);
	tpf_gcp_auth_free(c->auth);
	tpf_gcp_http_free(c->http);
	free(c->project);
	free(c->endpoint);
	free(c->op_root);
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

struct tpf_gapi *tpf_gcp_client_api(struct tpf_gcp_client *c)
{
	return c->api;
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

char *tpf_gcp_zone_url(struct tpf_gcp_client *c, const char *zone, const char *suffix)
{
	char *p = tpf_gcp_escape(c->project), *z = tpf_gcp_escape(zone);
	char *u = xasprintf("%s/v2/projects/%s/locations/%s%s", c->endpoint, p, z, suffix);
	free(p);
	free(z);
	return u;
}

int tpf_gcp_call(struct tpf_gcp_client *c, const char *method, const char *url, json_t *body,
		 const char *what, const char *address, unsigned quiet, json_t **out,
		 struct tpf_gcp_outcome *res, struct tpf_diags *d)
{
	struct tpf_gapi_call k = TPF_GAPI_CALL_INIT;
	k.rq.method = method;
	k.rq.url = url;
	k.flags = quiet >> TPF_GCP_FLAG_SHIFT;
	k.quiet = quiet & ((1u << TPF_GCP_FLAG_SHIFT) - 1);
	k.what = what;
	k.address = address;
	int rc = tpf_gapi_json(c->api, &k, body, out, d);
	if (res) {
		res->api_error = k.api_error;
		res->cls = k.cls;
		res->attempts = k.attempts;
		tpf_gcp_error_release(&res->err);
		res->err = k.err; /* moved */
	} else {
		tpf_gcp_error_release(&k.err);
	}
	tpf_gcp_response_release(&k.rs);
	return rc;
}

int tpf_gcp_wait_op(struct tpf_gcp_client *c, json_t *op, const char *what, const char *address,
		    int *failed, struct tpf_diags *d)
{
	struct tpf_gapi_op how = { .shape = TPF_GAPI_OP_LRO, .root = c->op_root };
	return tpf_gapi_wait(c->api, &how, op, what, address, failed, d);
}

struct each_ctx {
	const char *key, *what;
	int (*each)(json_t *, void *);
	void *ctx;
};

/* The items of one page, then its "unreachable" list (AIP-217): a partial
 * list is an error, never mistaken for absence. */
static int each_page(json_t *page, void *arg, struct tpf_diags *d)
{
	struct each_ctx *x = arg;
	size_t i;
	json_t *it;
	json_array_foreach(json_object_get(page, x->key), i, it) {
		int rc = x->each(it, x->ctx);
		if (rc < 0)
			return rc;
	}
	json_t *unr = json_object_get(page, "unreachable");
	if (json_array_size(unr) > 0) {
		const char *u = json_string_value(json_array_get(unr, 0));
		return tpf_errorx(d, NULL, "retry later; tpuform does not act on a partial list",
				  "%s: the API could not reach location '%s'", x->what, u ? u : "?");
	}
	return 0;
}

char *tpf_gcp_fields_query(char sep, const char *fields)
{
	char *e = tpf_gcp_escape(fields);
	char *q = xasprintf("%cprettyPrint=false&fields=%s", sep, e);
	free(e);
	return q;
}

int tpf_gcp_list_pages(struct tpf_gcp_client *c, const char *base, const char *key,
		       const char *fields, int page_size, const char *what,
		       int (*each)(json_t *, void *), void *ctx, struct tpf_diags *d)
{
	/* prettyPrint=false: the list's JSON without the indentation Google
	 * adds by default (a standard system parameter,
	 * https://cloud.google.com/apis/docs/system-parameters, and in the
	 * discovery document): a third fewer bytes to receive and parse per
	 * page, the same values. pageSize: see TPF_GCP_PAGE_SIZE. */
	char *f = fields ? tpf_gcp_fields_query('?', fields) : xstrdup("?prettyPrint=false");
	char *url = page_size > 0 ? xasprintf("%s%s&pageSize=%d", base, f, page_size)
				  : xasprintf("%s%s", base, f);
	free(f);
	struct each_ctx x = { key, what, each, ctx };
	int rc = tpf_gapi_pages(c->api, url, what, NULL, 0, each_page, &x, d);
	free(url);
	return rc;
}

int tpf_gcp_list_all(struct tpf_gcp_client *c, const char *base, const char *key,
		     const char *fields, const char *what, int (*each)(json_t *, void *), void *ctx,
		     struct tpf_diags *d)
{
	return tpf_gcp_list_pages(c, base, key, fields, 0, what, each, ctx, d);
}

int tpf_gcp_client_open_fleet(struct tpf_gcp_client **out, const struct tpf_fleet *f,
			      struct tpf_diags *d)
{
	struct tpf_gcp_client_config cfg = {
		.project = f->gcp.project,
		.endpoint = f->gcp.endpoint,
		.credentials = f->gcp.credentials,
		.impersonate_service_account = f->gcp.impersonate_service_account,
		.quota_project = f->gcp.quota_project,
		.ssh_port = f->ssh.port,
		.external_ips = f->ssh.address != TPF_SSH_ADDRESS_INTERNAL,
	};
	return tpf_gcp_client_open(out, &cfg, d);
}
