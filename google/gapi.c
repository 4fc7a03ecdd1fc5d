/*
 * The one Google REST client (google/gapi.h): the retry loop, JSON calls,
 * pages and operation waits.
 */
#include "google/gapi.h"
#include "util/hash.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct tpf_gapi {
	struct tpf_gcp_http *http;
	int own_http;
	struct tpf_gcp_settings s;
	char *endpoint, *project;
	struct tpf_gapi_creds creds;
	int has_creds;
	struct tpf_gapi_clock clock;
	tpf_gapi_hint_fn hint;
	void *hint_ctx;
	char *api_key_header; /* "X-goog-api-key: K", or NULL */
	volatile int *const *interrupted;
	pthread_mutex_t mu;
	long requests;
};

/* Longest sleep between two looks at the interrupt flag (seconds). */
#define NAP 0.2

int tpf_gapi_open(struct tpf_gapi **out, const struct tpf_gapi_config *cfg, struct tpf_diags *d)
{
	struct tpf_gapi *api = xcalloc(1, sizeof(*api));
	pthread_mutex_init(&api->mu, NULL);
	*out = NULL;
	if (cfg->settings)
		api->s = *cfg->settings;
	else if (tpf_gcp_settings_load(&api->s, d) < 0)
		goto fail;
	api->endpoint = cfg->endpoint ? xstrdup(cfg->endpoint) : NULL;
	api->project = cfg->project ? xstrdup(cfg->project) : NULL;
	api->http = cfg->http;
	if (!api->http) {
		struct tpf_gcp_http_opts o = {
			.connect_timeout = api->s.connect_timeout,
			.stall_timeout = api->s.stall_timeout,
			.request_timeout = api->s.request_timeout,
			.max_body = api->s.max_body,
		};
		if (tpf_gcp_http_new(&api->http, &o, d) < 0)
			goto fail;
		api->own_http = 1;
	}
	*out = api;
	return 0;
fail:
	tpf_gapi_free(api);
	return TPF_ERROR;
}

void tpf_gapi_free(struct tpf_gapi *api)
{
	if (!api)
		return;
	if (api->own_http)
		tpf_gcp_http_free(api->http);
	pthread_mutex_destroy(&api->mu);
	free(api->endpoint);
	free(api->project);
	free(api->api_key_header);
	free(api);
}

void tpf_gapi_set_creds(struct tpf_gapi *api, const struct tpf_gapi_creds *creds)
{
	api->creds = *creds;
	api->has_creds = creds->token != NULL;
}

void tpf_gapi_set_clock(struct tpf_gapi *api, const struct tpf_gapi_clock *clock)
{
	api->clock = *clock;
}

void tpf_gapi_set_hint(struct tpf_gapi *api, tpf_gapi_hint_fn fn, void *ctx)
{
	api->hint = fn;
	api->hint_ctx = ctx;
}

void tpf_gapi_set_api_key(struct tpf_gapi *api, const char *key)
{
	free(api->api_key_header);
	api->api_key_header = key ? xasprintf("X-goog-api-key: %s", key) : NULL;
}

void tpf_gapi_watch_interrupt(struct tpf_gapi *api, volatile int *const *flag)
{
	api->interrupted = flag;
}

struct tpf_gcp_http *tpf_gapi_http(struct tpf_gapi *api)
{
	return api->http;
}

const struct tpf_gcp_settings *tpf_gapi_settings(const struct tpf_gapi *api)
{
	return &api->s;
}

const char *tpf_gapi_endpoint(const struct tpf_gapi *api)
{
	return api->endpoint;
}

long tpf_gapi_requests(struct tpf_gapi *api)
{
	pthread_mutex_lock(&api->mu);
	long n = api->requests;
	pthread_mutex_unlock(&api->mu);
	return n;
}

static double now_wall(struct tpf_gapi *api)
{
	return api->clock.now_wall ? api->clock.now_wall(api->clock.ctx) : tpf_now_wall();
}

/* A backoff sleep: whole, not cut short by an interrupt. */
static void backoff(struct tpf_gapi *api, double seconds)
{
	if (api->clock.sleep)
		api->clock.sleep(api->clock.ctx, seconds);
	else
		tpf_sleep(seconds);
}

static int interrupted(const struct tpf_gapi *api)
{
	return api->interrupted && *api->interrupted && **api->interrupted;
}

int tpf_gapi_sleep(struct tpf_gapi *api, double seconds)
{
	if (api->clock.sleep) {
		if (interrupted(api))
			return TPF_EINTERRUPTED;
		api->clock.sleep(api->clock.ctx, seconds);
		return interrupted(api) ? TPF_EINTERRUPTED : 0;
	}
	double end = tpf_now_mono() + seconds;
	for (;;) {
		if (interrupted(api))
			return TPF_EINTERRUPTED;
		double left = end - tpf_now_mono();
		if (left <= 0)
			return 0;
		tpf_sleep(left < NAP ? left : NAP);
	}
}

void tpf_gapi_call_release(struct tpf_gapi_call *c)
{
	tpf_gcp_response_release(&c->rs);
	tpf_gcp_error_release(&c->err);
}

/* AIP-194: GET, PUT and DELETE may be repeated; POST and PATCH only when
 * the call says so. */
static int may_repeat(const struct tpf_gapi_call *c)
{
	const char *m = c->rq.method ? c->rq.method : "GET";
	if (!strcasecmp(m, "GET") || !strcasecmp(m, "HEAD") || !strcasecmp(m, "PUT") ||
	    !strcasecmp(m, "DELETE"))
		return 1;
	return (c->flags & (TPF_GAPI_IDEMPOTENT | TPF_GAPI_PRECONDITION | TPF_GAPI_REQUEST_ID)) != 0;
}

static int connect_failed(CURLcode cc)
{
	return cc == CURLE_COULDNT_RESOLVE_HOST || cc == CURLE_COULDNT_CONNECT ||
	       cc == CURLE_OPERATION_TIMEDOUT;
}

/* The hint for an error answer; caller frees. */
static char *hint_for(struct tpf_gapi *api, const struct tpf_gcp_error *e, enum tpf_gcp_class cls)
{
	char *h = api->hint ? api->hint(api->hint_ctx, e, cls) : NULL;
	if (h && !*h) {
		free(h); /* the API's way of saying "no hint" */
		return NULL;
	}
	if (h)
		return h;
	if (cls == TPF_GCP_AUTH && api->has_creds && api->creds.reject_hint) {
		const char *r = api->creds.reject_hint(api->creds.ctx);
		if (r)
			return xstrdup(r);
	}
	return tpf_gcp_error_hint(e, cls, api->project);
}

static int api_error_diag(struct tpf_gapi *api, struct tpf_gapi_call *c, int repeatable,
			  struct tpf_diags *d)
{
	int rc = tpf_gcp_class_rc(c->cls);
	if (c->quiet & TPF_GAPI_QUIET(c->cls))
		return rc;
	char suffix[96] = "";
	if (c->cls == TPF_GCP_TRANSIENT && repeatable)
		snprintf(suffix, sizeof(suffix), " (gave up after %d tries)", c->attempts);
	else if (c->cls == TPF_GCP_TRANSIENT)
		snprintf(suffix, sizeof(suffix), " (not retried: repeating this request could "
			 "act twice)");
	struct tpf_buf m = TPF_BUF_INIT;
	tpf_gcp_error_format(&c->err, &m);
	char *hint = hint_for(api, &c->err, c->cls);
	tpf_errorx(d, c->address, hint, "%s: %s%s", c->what ? c->what : "request", m.buf, suffix);
	free(hint);
	tpf_buf_release(&m);
	return rc;
}

/* The scheme, host and port the request went to (libcurl's URL API), so
 * that a failure names the endpoint that failed, not the client's default
 * one (a Compute Engine read from the Cloud TPU client). Caller frees;
 * the whole URL when it cannot be parsed. */
static char *origin_of(const char *url)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *out = NULL;
	if (u && !curl_url_set(u, CURLUPART_URL, url, 0) &&
	    !curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) &&
	    !curl_url_get(u, CURLUPART_HOST, &host, 0)) {
		if (curl_url_get(u, CURLUPART_PORT, &port, 0))
			port = NULL;
		out = port ? xasprintf("%s://%s:%s", scheme, host, port)
			   : xasprintf("%s://%s", scheme, host);
	}
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return out ? out : xstrdup(url);
}

static int transfer_diag(struct tpf_gapi *api, struct tpf_gapi_call *c, int rc, int repeatable,
			 struct tpf_diags *d)
{
	if (c->quiet == TPF_GAPI_QUIET_ALL)
		return rc;
	const char *what = c->what ? c->what : "request";
	if (c->rs.too_large)
		return tpf_gcp_http_too_large(api->http, &c->rq, what, c->address, d);
	char *origin = origin_of(c->rq.url);
	tpf_errorx(d, c->address, "check the network path to the endpoint",
		   "%s: cannot reach '%s': %s%s", what, origin, c->rs.error,
		   rc != TPF_ETRANSIENT ? ""
		   : repeatable ? " (gave up after retries)"
				: " (not retried: repeating this request could act twice)");
	free(origin);
	return rc;
}

/* The extra headers: the call's, then the credentials' one, then the API
 * key's. Caller frees the array. */
static const char **headers_for(struct tpf_gapi *api, const struct tpf_gapi_call *c, int auth)
{
	size_t n = 0;
	while (c->rq.headers && c->rq.headers[n])
		n++;
	const char **h = xcalloc(n + 3, sizeof(*h));
	for (size_t i = 0; i < n; i++)
		h[i] = c->rq.headers[i];
	if (auth && api->creds.header && (h[n] = api->creds.header(api->creds.ctx)) != NULL)
		n++;
	if (api->api_key_header)
		h[n] = api->api_key_header;
	return h;
}

/* rq.url with requestId=<id> appended. Caller frees. */
static char *with_request_id(const char *url, const char *id)
{
	return xasprintf("%s%crequestId=%s", url, strchr(url, '?') ? '&' : '?', id);
}

static void reset_outcome(struct tpf_gapi_call *c)
{
	tpf_gcp_response_release(&c->rs);
	tpf_gcp_error_release(&c->err);
	c->attempts = 0;
	c->api_error = 0;
	c->cls = TPF_GCP_PERMANENT;
}

/* One attempt's token, or NULL when the call sends none of the credentials'. */
static int attempt_token(struct tpf_gapi *api, const struct tpf_gapi_call *c, char **tok,
			 struct tpf_diags *d)
{
	*tok = NULL;
	if (!api->has_creds || (c->flags & TPF_GAPI_NO_AUTH) || c->rq.bearer)
		return 0;
	return api->creds.token(api->creds.ctx, tok, d);
}

static void token_free(struct tpf_gapi *api, char *tok)
{
	if (tok)
		api->creds.token_free ? api->creds.token_free(tok) : free(tok);
}

int tpf_gapi_send(struct tpf_gapi *api, struct tpf_gapi_call *c, struct tpf_diags *d)
{
	int repeatable = may_repeat(c), auth_retried = 0, rc;
	char *url = NULL;
	reset_outcome(c);
	c->request_id[0] = '\0';
	if (c->flags & TPF_GAPI_REQUEST_ID) {
		if (tpf_uuid4_try(c->request_id) < 0)
			return tpf_error(d, "%s: cannot make a request id: libcrypto's random "
					 "generator failed", c->what ? c->what : "request");
		url = with_request_id(c->rq.url, c->request_id);
	}
	for (int attempt = 0;; attempt++) {
		char *tok = NULL;
		int last = !repeatable || attempt + 1 >= api->s.tries;
		c->attempts = attempt + 1;
		if ((rc = attempt_token(api, c, &tok, d)) < 0)
			break;
		const char **hdrs = headers_for(api, c, tok != NULL);
		struct tpf_gcp_request rq = c->rq;
		rq.url = url ? url : c->rq.url;
		rq.bearer = tok ? tok : c->rq.bearer;
		rq.headers = hdrs;
		pthread_mutex_lock(&api->mu);
		api->requests++;
		pthread_mutex_unlock(&api->mu);
		int h = tpf_gcp_http_do(api->http, &rq, &c->rs);
		free(hdrs);
		if (h < 0) {
			token_free(api, tok);
			if (h == TPF_ETRANSIENT && !last && !c->rs.too_large &&
			    !((c->flags & TPF_GAPI_CONNECT_ONCE) && connect_failed(c->rs.curl_code))) {
				backoff(api, tpf_gcp_retry_delay(&api->s, attempt, -1));
				continue;
			}
			rc = transfer_diag(api, c, h, repeatable, d);
			break;
		}
		if (c->rs.status >= 200 && c->rs.status < 300) {
			token_free(api, tok);
			rc = 0;
			break;
		}
		tpf_gcp_error_parse_http(&c->err, c->rs.status, c->rs.body.buf, c->rs.body.len);
		c->cls = tpf_gcp_error_classify(&c->err);
		c->api_error = 1;
		if (c->cls == TPF_GCP_AUTH && tok && !auth_retried &&
		    api->creds.invalidate && api->creds.invalidate(api->creds.ctx, tok)) {
			/* expired early or revoked: once more with a new token */
			token_free(api, tok);
			auth_retried = 1;
			continue;
		}
		token_free(api, tok);
		if (c->cls == TPF_GCP_TRANSIENT && !last) {
			double ra = tpf_gcp_parse_retry_after(c->rs.retry_after, now_wall(api));
			if (c->err.retry_delay > ra)
				ra = c->err.retry_delay;
			backoff(api, tpf_gcp_retry_delay(&api->s, attempt, ra));
			continue;
		}
		rc = api_error_diag(api, c, repeatable, d);
		break;
	}
	free(url);
	return rc;
}

int tpf_gapi_json(struct tpf_gapi *api, struct tpf_gapi_call *c, json_t *body, json_t **out,
		  struct tpf_diags *d)
{
	char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
	struct tpf_gcp_request keep = c->rq;
	*out = NULL;
	if (s) {
		c->rq.body = s;
		c->rq.body_len = strlen(s);
	}
	int rc = tpf_gapi_send(api, c, d);
	c->rq = keep;
	free(s);
	if (rc == 0) {
		*out = c->rs.body.len ? json_loadb(c->rs.body.buf, c->rs.body.len, 0, NULL)
				      : json_object();
		if (!json_is_object(*out)) {
			json_decref(*out);
			*out = NULL;
			rc = tpf_errorx(d, c->address, NULL,
					"%s: HTTP %ld with a body that is not a JSON object",
					c->what ? c->what : "request", c->rs.status);
		}
	}
	tpf_gcp_response_release(&c->rs);
	return rc;
}

int tpf_gapi_pages(struct tpf_gapi *api, const char *url, const char *what, const char *address,
		   unsigned quiet, tpf_gapi_page_fn page, void *ctx, struct tpf_diags *d)
{
	int rc = 0;
	char *token = NULL;
	char sep = strchr(url, '?') ? '&' : '?';
	for (long n = 0;; n++) {
		char *t = token ? tpf_gcp_escape(token) : NULL;
		char *u = t ? xasprintf("%s%cpageToken=%s", url, sep, t) : xstrdup(url);
		struct tpf_gapi_call c = TPF_GAPI_CALL_INIT;
		c.rq.method = "GET";
		c.rq.url = u;
		c.what = what;
		c.address = address;
		c.quiet = quiet;
		json_t *resp = NULL;
		rc = tpf_gapi_json(api, &c, NULL, &resp, d);
		tpf_gapi_call_release(&c);
		free(u);
		free(t);
		if (rc == 0)
			rc = page(resp, ctx, d);
		const char *next = json_string_value(json_object_get(resp, "nextPageToken"));
		char *nt = rc == 0 && next && *next ? xstrdup(next) : NULL;
		json_decref(resp);
		if (!nt)
			break;
		if ((token && !strcmp(nt, token)) || n > 100000) {
			rc = tpf_errorx(d, address, NULL, "%s: the API returned page token '%s' twice",
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

/* ---- operations ---- */

static int op_done(const struct tpf_gapi_op *how, json_t *op)
{
	if (how->shape == TPF_GAPI_OP_COMPUTE)
		return !strcmp(json_string_value(json_object_get(op, "status")) ?: "", "DONE");
	return json_is_true(json_object_get(op, "done"));
}

/* The operation's error into e: 1 if it has one. */
static int op_error(const struct tpf_gapi_op *how, json_t *op, struct tpf_gcp_error *e)
{
	json_t *err = json_object_get(op, "error");
	if (!json_is_object(err))
		return 0;
	if (how->shape == TPF_GAPI_OP_COMPUTE)
		tpf_gcp_error_parse_compute(e, op);
	else
		tpf_gcp_error_parse_status(e, err);
	return 1;
}

/* The URL that advances op one step, and its method. NULL: synchronous. */
static char *op_url(const struct tpf_gapi_op *how, json_t *op, const char **method)
{
	if (how->shape == TPF_GAPI_OP_COMPUTE) {
		const char *self = json_string_value(json_object_get(op, "selfLink"));
		*method = "POST";
		return self && *self ? xasprintf("%s/wait", self) : NULL;
	}
	const char *name = json_string_value(json_object_get(op, "name"));
	*method = "GET";
	return name && *name ? xasprintf("%s%s", how->root ? how->root : "", name) : NULL;
}

/* The failed operation's diagnostic; returns its code. */
static int op_failed(struct tpf_gapi *api, const struct tpf_gapi_op *how, json_t *op,
		     const char *what, const char *address, struct tpf_diags *d)
{
	struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
	op_error(how, op, &e);
	enum tpf_gcp_class cls = tpf_gcp_error_classify(&e);
	struct tpf_buf m = TPF_BUF_INIT;
	tpf_gcp_error_format(&e, &m);
	char *hint = hint_for(api, &e, cls);
	tpf_errorx(d, address, hint, "%s: %s", what, m.buf);
	free(hint);
	tpf_buf_release(&m);
	tpf_gcp_error_release(&e);
	int rc = tpf_gcp_class_rc(cls);
	return rc == TPF_ENOTFOUND ? TPF_ERROR : rc;
}

/* One step: GET the operation, or POST .../wait; *next the new state. */
static int op_step(struct tpf_gapi *api, const char *method, const char *url, const char *what,
		   const char *address, json_t **next, struct tpf_diags *d)
{
	struct tpf_gapi_call c = TPF_GAPI_CALL_INIT;
	c.rq.method = method;
	c.rq.url = url;
	c.flags = TPF_GAPI_IDEMPOTENT; /* .../wait only waits */
	c.what = what;
	c.address = address;
	c.quiet = TPF_GAPI_QUIET(TPF_GCP_NOTFOUND);
	int rc = tpf_gapi_json(api, &c, NULL, next, d);
	tpf_gapi_call_release(&c);
	return rc;
}

int tpf_gapi_wait(struct tpf_gapi *api, const struct tpf_gapi_op *how, json_t *op,
		  const char *what, const char *address, int *failed, struct tpf_diags *d)
{
	int rc = 0, missing = 0, finished = 0;
	const char *method = "GET";
	json_t *cur = json_incref(op);
	double start = tpf_now_mono(), interval = api->s.poll_min;
	char *url = op_url(how, op, &method);
	*failed = 0;
	for (;;) {
		/* no name: Terraform's OperationWait treats the call as synchronous */
		if (op_done(how, cur) || !url) {
			finished = 1;
			break;
		}
		if (tpf_now_mono() - start > api->s.op_timeout) {
			rc = tpf_errorx(d, address,
					"the operation may still finish; run 'tpuform refresh' "
					"later to see",
					"%s: operation '%s' not done after %.0f seconds", what,
					json_string_value(json_object_get(op, "name")) ?: "?",
					api->s.op_timeout);
			break;
		}
		double t0 = tpf_now_mono();
		if (how->shape == TPF_GAPI_OP_LRO || missing) {
			if ((rc = tpf_gapi_sleep(api, interval)) < 0)
				break; /* interrupted: the operation goes on without us */
			interval = tpf_gcp_next_poll(&api->s, interval);
		} else if (interrupted(api)) {
			rc = TPF_EINTERRUPTED;
			break;
		}
		json_t *next = NULL;
		rc = op_step(api, method, url, what, address, &next, d);
		if (rc == TPF_ENOTFOUND && ++missing <= 3) {
			rc = 0; /* Terraform ignores a 404 on an operation and polls on */
			continue;
		}
		if (rc < 0) {
			if (rc == TPF_ENOTFOUND)
				rc = tpf_errorx(d, address, NULL, "%s: operation '%s' disappeared", what,
						url);
			break;
		}
		missing = 0;
		json_decref(cur);
		cur = next;
		/* a .../wait that answered at once: do not spin on it */
		if (how->shape == TPF_GAPI_OP_COMPUTE && !op_done(how, cur) &&
		    tpf_now_mono() - t0 < api->s.poll_min && (rc = tpf_gapi_sleep(api, interval)) < 0)
			break;
	}
	if (rc == 0 && finished && json_is_object(json_object_get(cur, "error"))) {
		*failed = 1;
		rc = op_failed(api, how, cur, what, address, d);
	}
	free(url);
	json_decref(cur);
	return rc;
}
