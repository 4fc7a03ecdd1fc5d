/*
 * Cloud Storage JSON API object calls (google/gcs.h): one request loop with
 * retries, then get, media, upload, delete and list over it.
 */
#include "google/gcs.h"
#include "google/gcp_endpoint.h"
#include "google/gcp_errors.h"
#include "google/gcp_http.h"
#include "google/gcp_retry.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tpf_gcs {
	char *endpoint;
	struct tpf_gcp_settings s;
	struct tpf_gcp_http *http;
	struct tpf_gcp_auth *auth;
	pthread_mutex_t mu;
	long requests;
};

int tpf_gcs_endpoint_resolve(const char *configured, char **out, struct tpf_diags *d)
{
	const char *url = configured, *what = "state.gcs.endpoint";
	if (!url || !*url) {
		url = getenv("TPUFORM_STORAGE_ENDPOINT");
		what = "TPUFORM_STORAGE_ENDPOINT";
	}
	if (!url || !*url) {
		url = TPF_GCS_DEFAULT_ENDPOINT;
		what = "storage endpoint";
	}
	return tpf_gcp_endpoint_check(url, what, out, d);
}

int tpf_gcs_open(struct tpf_gcs **out, const struct tpf_gcs_config *cfg, struct tpf_diags *d)
{
	struct tpf_gcs *g = xcalloc(1, sizeof(*g));
	pthread_mutex_init(&g->mu, NULL);
	*out = NULL;
	if (tpf_gcp_settings_load(&g->s, d) < 0 ||
	    tpf_gcs_endpoint_resolve(cfg->endpoint, &g->endpoint, d) < 0)
		goto fail;
	struct tpf_gcp_http_opts o = {
		.connect_timeout = g->s.connect_timeout,
		.stall_timeout = g->s.stall_timeout,
		.request_timeout = g->s.request_timeout,
		.max_body = g->s.max_body,
	};
	if (tpf_gcp_http_new(&g->http, &o, d) < 0 ||
	    tpf_gcp_auth_open(&g->auth, g->http, &g->s, &cfg->auth, d) < 0)
		goto fail;
	*out = g;
	return 0;
fail:
	tpf_gcs_free(g);
	return TPF_ERROR;
}

void tpf_gcs_free(struct tpf_gcs *g)
{
	if (!g)
		return;
	tpf_gcp_auth_free(g->auth);
	tpf_gcp_http_free(g->http);
	pthread_mutex_destroy(&g->mu);
	free(g->endpoint);
	free(g);
}

const char *tpf_gcs_endpoint(const struct tpf_gcs *g)
{
	return g->endpoint;
}

long tpf_gcs_requests(struct tpf_gcs *g)
{
	pthread_mutex_lock(&g->mu);
	long n = g->requests;
	pthread_mutex_unlock(&g->mu);
	return n;
}

void tpf_gcs_object_release(struct tpf_gcs_object *o)
{
	free(o->md5);
	free(o->updated);
	memset(o, 0, sizeof(*o));
}

/* One call: what it is for (messages) and what came back. */
struct gcs_call {
	const char *method, *url, *what;
	const char *body;
	size_t body_len;
	const char *content_type;
	struct tpf_gcp_response rs; /* the last answer */
	int attempts;
};

/* 408, 429 and 5xx: Cloud Storage's retry strategy. */
static int retryable(long status)
{
	return status == 408 || status == 429 || status >= 500;
}

static int api_error(struct tpf_gcs *g, struct gcs_call *c, struct tpf_diags *d)
{
	struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
	struct tpf_buf m = TPF_BUF_INIT;
	tpf_gcp_error_parse_http(&e, c->rs.status, c->rs.body.buf, c->rs.body.len);
	tpf_gcp_error_format(&e, &m);
	const char *hint = NULL;
	if (c->rs.status == 401)
		hint = tpf_gcp_auth_reject_hint(g->auth);
	else if (c->rs.status == 403)
		hint = "The credentials in use need storage.objects.get, create, delete and list on the "
		       "bucket (roles/storage.objectAdmin).";
	else if (retryable(c->rs.status))
		hint = "Cloud Storage kept failing; run the command again later.";
	int rc = tpf_errorx(d, NULL, hint, "%s: %s%s", c->what, m.buf,
			    retryable(c->rs.status) ? " (gave up after retries)" : "");
	tpf_buf_release(&m);
	tpf_gcp_error_release(&e);
	return retryable(c->rs.status) ? TPF_ETRANSIENT : rc;
}

/*
 * Send c with retries. Returns 0 on 2xx (c->rs holds the answer),
 * TPF_ENOTFOUND on 404 and TPF_ESTALE on 412 (no diagnostic), else an
 * error with a diagnostic.
 */
static int gcs_do(struct tpf_gcs *g, struct gcs_call *c, struct tpf_diags *d)
{
	int auth_retried = 0;
	for (int attempt = 0;; attempt++) {
		char *tok = NULL;
		int last = attempt + 1 >= g->s.tries;
		c->attempts = attempt + 1;
		int rc = tpf_gcp_auth_token(g->auth, &tok, d);
		if (rc < 0)
			return rc;
		const char *extra[] = { tpf_gcp_auth_quota_header(g->auth), NULL };
		struct tpf_gcp_request rq = {
			.method = c->method, .url = c->url, .body = c->body, .body_len = c->body_len,
			.content_type = c->content_type, .bearer = tok, .headers = extra,
		};
		pthread_mutex_lock(&g->mu);
		g->requests++;
		pthread_mutex_unlock(&g->mu);
		int h = tpf_gcp_http_do(g->http, &rq, &c->rs);
		if (h < 0) {
			tpf_gcp_auth_token_free(tok);
			if (c->rs.too_large)
				return tpf_gcp_http_too_large(g->http, &rq, c->what, NULL, d);
			if (h == TPF_ETRANSIENT && !last) {
				tpf_sleep(tpf_gcp_retry_delay(&g->s, attempt, -1));
				continue;
			}
			tpf_errorx(d, NULL, "Check the network path to the storage endpoint.",
				   "%s: cannot reach '%s': %s%s", c->what, g->endpoint, c->rs.error,
				   h == TPF_ETRANSIENT ? " (gave up after retries)" : "");
			return h;
		}
		long st = c->rs.status;
		if (st == 401 && !auth_retried && tpf_gcp_auth_invalidate(g->auth, tok)) {
			tpf_gcp_auth_token_free(tok);
			auth_retried = 1; /* expired early or revoked: once more */
			continue;
		}
		tpf_gcp_auth_token_free(tok);
		if (st >= 200 && st < 300)
			return 0;
		if (st == 404)
			return TPF_ENOTFOUND;
		if (st == 412)
			return TPF_ESTALE;
		if (retryable(st) && !last) {
			double ra = tpf_gcp_parse_retry_after(c->rs.retry_after, tpf_now_wall());
			tpf_sleep(tpf_gcp_retry_delay(&g->s, attempt, ra));
			continue;
		}
		return api_error(g, c, d);
	}
}

/* <endpoint>/storage/v1/b/BUCKET/o/NAME (NAME with '/' as %2F). */
static char *object_url(struct tpf_gcs *g, const char *prefix, const char *bucket,
			const char *name)
{
	char *b = tpf_gcp_escape(bucket), *n = name ? tpf_gcp_escape(name) : NULL;
	char *u = n ? xasprintf("%s%s/b/%s/o/%s", g->endpoint, prefix, b, n)
		    : xasprintf("%s%s/b/%s/o", g->endpoint, prefix, b);
	free(b);
	free(n);
	return u;
}

static long long json_int64(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (json_is_integer(v))
		return (long long)json_integer_value(v);
	const char *s = json_string_value(v);
	return s ? strtoll(s, NULL, 10) : 0;
}

/* The Object resource in c->rs into *o. */
static int parse_object(struct gcs_call *c, struct tpf_gcs_object *o, struct tpf_diags *d)
{
	json_t *j = json_loadb(c->rs.body.buf, c->rs.body.len, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return tpf_error(d, "%s: HTTP %ld with a body that is not a JSON object", c->what,
				 c->rs.status);
	}
	o->generation = json_int64(j, "generation");
	o->metageneration = json_int64(j, "metageneration");
	o->size = json_int64(j, "size");
	const char *s = json_string_value(json_object_get(j, "md5Hash"));
	o->md5 = s ? xstrdup(s) : NULL;
	s = json_string_value(json_object_get(j, "updated"));
	o->updated = s ? xstrdup(s) : NULL;
	json_decref(j);
	if (o->generation <= 0)
		return tpf_error(d, "%s: the answer names no generation", c->what);
	return 0;
}

int tpf_gcs_stat(struct tpf_gcs *g, const char *bucket, const char *name,
		 struct tpf_gcs_object *o, struct tpf_diags *d)
{
	memset(o, 0, sizeof(*o));
	char *url = object_url(g, "/storage/v1", bucket, name);
	char *what = xasprintf("reading gs://%s/%s", bucket, name);
	struct gcs_call c = { .method = "GET", .url = url, .what = what,
			      .rs = TPF_GCP_RESPONSE_INIT };
	int rc = gcs_do(g, &c, d);
	if (!rc)
		rc = parse_object(&c, o, d);
	if (rc)
		tpf_gcs_object_release(o);
	tpf_gcp_response_release(&c.rs);
	free(url);
	free(what);
	return rc;
}

int tpf_gcs_read(struct tpf_gcs *g, const char *bucket, const char *name, size_t max,
		 struct tpf_buf *data, long long *generation, struct tpf_diags *d)
{
	char *base = object_url(g, "/storage/v1", bucket, name);
	char *what = xasprintf("reading gs://%s/%s", bucket, name);
	int rc = TPF_ERROR;
	*generation = 0;
	tpf_buf_reset(data);
	for (int round = 0; round < 5; round++) {
		struct tpf_gcs_object o;
		rc = tpf_gcs_stat(g, bucket, name, &o, d);
		if (rc)
			break;
		char *url = xasprintf("%s?alt=media&ifGenerationMatch=%lld", base, o.generation);
		struct gcs_call c = { .method = "GET", .url = url, .what = what,
				      .rs = TPF_GCP_RESPONSE_INIT };
		rc = gcs_do(g, &c, d);
		if (!rc && c.rs.body.len > max)
			rc = tpf_errorx(d, NULL, "A state this large is not tpuform's.",
					"%s: the object is %zu bytes, more than the limit of %zu",
					what, c.rs.body.len, max);
		else if (!rc) {
			tpf_buf_add(data, c.rs.body.buf, c.rs.body.len);
			*generation = o.generation;
		}
		tpf_gcp_response_release(&c.rs);
		tpf_gcs_object_release(&o);
		free(url);
		/* 412: rewritten since the metadata was read; 404: deleted. */
		if (rc != TPF_ESTALE && rc != TPF_ENOTFOUND)
			break;
	}
	if (rc == TPF_ESTALE)
		rc = tpf_error(d, "%s: the object kept changing while it was read", what);
	free(base);
	free(what);
	return rc;
}

/* base64 MD5 of data, as the md5Hash field carries it. Caller frees. */
static char *md5_base64(const char *data, size_t len)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	unsigned char out[64];
	if (!EVP_Digest(data, len, md, &mdlen, EVP_md5(), NULL))
		return xstrdup("");
	EVP_EncodeBlock(out, md, (int)mdlen);
	return xstrdup((const char *)out);
}

/* A retried write answered 412: did the first attempt land after all? */
static int landed_anyway(struct tpf_gcs *g, const char *bucket, const char *name,
			 const char *data, size_t len, long long *generation)
{
	struct tpf_diags ignore = TPF_DIAGS_INIT;
	struct tpf_gcs_object o;
	int same = 0;
	if (tpf_gcs_stat(g, bucket, name, &o, &ignore) == 0) {
		char *want = md5_base64(data, len);
		same = o.md5 && !strcmp(o.md5, want);
		if (same && generation)
			*generation = o.generation;
		free(want);
		tpf_gcs_object_release(&o);
	}
	tpf_diags_release(&ignore);
	return same;
}

int tpf_gcs_write(struct tpf_gcs *g, const char *bucket, const char *name, const char *data,
		  size_t len, const char *content_type, long long if_generation,
		  long long *generation, struct tpf_diags *d)
{
	char *b = tpf_gcp_escape(bucket), *n = tpf_gcp_escape(name);
	char *url = if_generation >= 0
		? xasprintf("%s/upload/storage/v1/b/%s/o?uploadType=media&name=%s&ifGenerationMatch=%lld",
			    g->endpoint, b, n, if_generation)
		: xasprintf("%s/upload/storage/v1/b/%s/o?uploadType=media&name=%s", g->endpoint, b, n);
	char *what = xasprintf("writing gs://%s/%s", bucket, name);
	struct gcs_call c = { .method = "POST", .url = url, .what = what, .body = data,
			      .body_len = len,
			      .content_type = content_type ? content_type : "application/octet-stream",
			      .rs = TPF_GCP_RESPONSE_INIT };
	struct tpf_gcs_object o;
	memset(&o, 0, sizeof(o));
	int rc = gcs_do(g, &c, d);
	if (!rc) {
		rc = parse_object(&c, &o, d);
		if (!rc && generation)
			*generation = o.generation;
	} else if (rc == TPF_ESTALE && c.attempts > 1 &&
		   landed_anyway(g, bucket, name, data, len, generation)) {
		rc = 0;
	}
	tpf_gcs_object_release(&o);
	tpf_gcp_response_release(&c.rs);
	free(b);
	free(n);
	free(url);
	free(what);
	return rc;
}

int tpf_gcs_delete(struct tpf_gcs *g, const char *bucket, const char *name,
		   long long if_generation, struct tpf_diags *d)
{
	char *base = object_url(g, "/storage/v1", bucket, name);
	char *url = if_generation > 0 ? xasprintf("%s?ifGenerationMatch=%lld", base, if_generation)
				      : xstrdup(base);
	char *what = xasprintf("deleting gs://%s/%s", bucket, name);
	struct gcs_call c = { .method = "DELETE", .url = url, .what = what,
			      .rs = TPF_GCP_RESPONSE_INIT };
	int rc = gcs_do(g, &c, d);
	/* A retried delete whose first attempt landed finds nothing: done. */
	if (rc == TPF_ENOTFOUND && c.attempts > 1)
		rc = 0;
	tpf_gcp_response_release(&c.rs);
	free(base);
	free(url);
	free(what);
	return rc;
}

void tpf_gcs_names_free(char **names)
{
	if (!names)
		return;
	for (char **p = names; *p; p++)
		free(*p);
	free(names);
}

/* Append the names of one page; *token becomes the next page's (or NULL). */
static int list_page(struct gcs_call *c, char ***names, size_t *n, size_t *alloc, char **token,
		     struct tpf_diags *d)
{
	json_t *j = json_loadb(c->rs.body.buf, c->rs.body.len, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return tpf_error(d, "%s: HTTP %ld with a body that is not a JSON object", c->what,
				 c->rs.status);
	}
	size_t i;
	json_t *it;
	json_array_foreach(json_object_get(j, "items"), i, it) {
		const char *s = json_string_value(json_object_get(it, "name"));
		if (!s)
			continue;
		XGROW(*names, *n + 2, *alloc);
		(*names)[(*n)++] = xstrdup(s);
		(*names)[*n] = NULL;
	}
	const char *t = json_string_value(json_object_get(j, "nextPageToken"));
	free(*token);
	*token = t && *t ? xstrdup(t) : NULL;
	json_decref(j);
	return 0;
}

int tpf_gcs_list(struct tpf_gcs *g, const char *bucket, const char *prefix, char ***names,
		 size_t *n, struct tpf_diags *d)
{
	char *base = object_url(g, "/storage/v1", bucket, NULL);
	char *p = tpf_gcp_escape(prefix ? prefix : "");
	char *what = xasprintf("listing gs://%s/%s", bucket, prefix ? prefix : "");
	char *token = NULL;
	size_t alloc = 1;
	int rc = 0;
	*n = 0;
	*names = xcalloc(1, sizeof(**names));
	do {
		char *tk = token ? tpf_gcp_escape(token) : NULL;
		char *url = tk ? xasprintf("%s?prefix=%s&pageToken=%s", base, p, tk)
			       : xasprintf("%s?prefix=%s", base, p);
		struct gcs_call c = { .method = "GET", .url = url, .what = what,
				      .rs = TPF_GCP_RESPONSE_INIT };
		rc = gcs_do(g, &c, d);
		if (rc == TPF_ENOTFOUND)
			rc = tpf_errorx(d, NULL, "Create the bucket, or fix state.gcs.bucket.",
					"%s: the bucket '%s' does not exist", what, bucket);
		if (!rc)
			rc = list_page(&c, names, n, &alloc, &token, d);
		tpf_gcp_response_release(&c.rs);
		free(url);
		free(tk);
	} while (!rc && token);
	free(token);
	free(base);
	free(p);
	free(what);
	if (rc) {
		tpf_gcs_names_free(*names);
		*names = NULL;
		*n = 0;
	}
	return rc;
}
