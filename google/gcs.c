/*
 * Cloud Storage JSON API object calls (google/gcs.h): get, media, upload,
 * delete and list, each one call of the Google REST client (gapi.h), which
 * owns the retries.
 */
#include "google/gcs.h"
#include "google/gcs_internal.h"
#include "google/gapi.h"
#include "google/gclient.h"
#include "google/gcp_endpoint.h"
#include "google/gcp_errors.h"
#include "google/gcp_http.h"
#include "google/gcp_retry.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tpf_gcs {
	char *endpoint;
	struct tpf_gclient c;
	struct tpf_gapi *api; /* c.api */
};

/* Cloud Storage's own hints; NULL: the client's default. */
static char *gcs_hint(void *ctx, const struct tpf_gcp_error *e, enum tpf_gcp_class cls)
{
	(void)ctx;
	if (cls == TPF_GCP_AUTH)
		return NULL; /* the credentials' reject hint */
	if (e->http == 403)
		return xstrdup("The credentials in use need storage.objects.get, create, delete and "
			       "list on the bucket (roles/storage.objectAdmin).");
	if (cls == TPF_GCP_TRANSIENT)
		return xstrdup("Cloud Storage kept failing; run the command again later.");
	return xstrdup("");
}

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
	*out = NULL;
	if (tpf_gcs_endpoint_resolve(cfg->endpoint, &g->endpoint, d) < 0 ||
	    tpf_gclient_open(&g->c, g->endpoint, &cfg->auth, gcs_hint, d) < 0) {
		tpf_gcs_free(g);
		return TPF_ERROR;
	}
	g->api = g->c.api;
	*out = g;
	return 0;
}

void tpf_gcs_free(struct tpf_gcs *g)
{
	if (!g)
		return;
	tpf_gclient_close(&g->c);
	free(g->endpoint);
	free(g);
}

const char *tpf_gcs_endpoint(const struct tpf_gcs *g)
{
	return g->endpoint;
}

long tpf_gcs_requests(struct tpf_gcs *g)
{
	return tpf_gapi_requests(g->api);
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
	int precondition; /* the URL carries ifGenerationMatch: a write may be repeated */
	int repeatable;   /* no precondition, but the same bytes twice are harmless */
	struct tpf_gcp_response rs; /* the last answer */
	int attempts;
};

/*
 * Send c through the client. Returns 0 on 2xx (c->rs holds the answer),
 * TPF_ENOTFOUND on 404 and TPF_ESTALE on 412 (no diagnostic), else an
 * error with a diagnostic: TPF_ETRANSIENT when Cloud Storage kept failing,
 * TPF_ERROR otherwise.
 */
static int gcs_do(struct tpf_gcs *g, struct gcs_call *c, struct tpf_diags *d)
{
	struct tpf_gapi_call k = TPF_GAPI_CALL_INIT;
	k.rq.method = c->method;
	k.rq.url = c->url;
	k.rq.body = c->body;
	k.rq.body_len = c->body_len;
	k.rq.content_type = c->content_type;
	k.flags = c->precondition ? TPF_GAPI_PRECONDITION : c->repeatable ? TPF_GAPI_IDEMPOTENT : 0;
	k.what = c->what;
	k.quiet = TPF_GAPI_QUIET(TPF_GCP_NOTFOUND) | TPF_GAPI_QUIET(TPF_GCP_STALE);
	int rc = tpf_gapi_send(g->api, &k, d);
	tpf_gcp_response_release(&c->rs);
	c->rs = k.rs; /* moved */
	c->attempts = k.attempts;
	tpf_gcp_error_release(&k.err);
	if (rc < 0 && rc != TPF_ENOTFOUND && rc != TPF_ESTALE && rc != TPF_ETRANSIENT)
		rc = TPF_ERROR; /* what a state backend tells apart */
	return rc;
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

int tpf_gcs_parse_object(const char *body, size_t len, const char *what, long status,
			 struct tpf_gcs_object *o, struct tpf_diags *d)
{
	json_t *j = json_loadb(body ? body : "", body ? len : 0, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return tpf_error(d, "%s: HTTP %ld with a body that is not a JSON object", what,
				 status);
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
		return tpf_error(d, "%s: the answer names no generation", what);
	return 0;
}

/* The Object resource in c->rs into *o. */
static int parse_object(struct gcs_call *c, struct tpf_gcs_object *o, struct tpf_diags *d)
{
	return tpf_gcs_parse_object(c->rs.body.buf, c->rs.body.len, c->what, c->rs.status, o, d);
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
			      .precondition = if_generation >= 0,
			      .repeatable = if_generation == TPF_GCS_REPEATABLE, .rs = TPF_GCP_RESPONSE_INIT };
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

struct list_ctx {
	char **names;
	long long *gens; /* NULL: not wanted */
	size_t n, alloc, galloc;
	int want_gens;
};

/* Append the names of one page (tpf_gapi_pages follows nextPageToken). */
static int list_page(json_t *page, void *arg, struct tpf_diags *d)
{
	struct list_ctx *x = arg;
	size_t i;
	json_t *it;
	(void)d;
	json_array_foreach(json_object_get(page, "items"), i, it) {
		const char *s = json_string_value(json_object_get(it, "name"));
		if (!s)
			continue;
		XGROW(x->names, x->n + 2, x->alloc);
		if (x->want_gens) {
			XGROW(x->gens, x->n + 1, x->galloc);
			x->gens[x->n] = json_int64(it, "generation");
		}
		x->names[x->n++] = xstrdup(s);
		x->names[x->n] = NULL;
	}
	return 0;
}

int tpf_gcs_list(struct tpf_gcs *g, const char *bucket, const char *prefix, char ***names,
		 size_t *n, struct tpf_diags *d)
{
	return tpf_gcs_list_gen(g, bucket, prefix, names, NULL, n, d);
}

int tpf_gcs_list_gen(struct tpf_gcs *g, const char *bucket, const char *prefix, char ***names,
		     long long **generations, size_t *n, struct tpf_diags *d)
{
	char *base = object_url(g, "/storage/v1", bucket, NULL);
	char *p = tpf_gcp_escape(prefix ? prefix : "");
	char *url = xasprintf("%s?prefix=%s", base, p);
	char *what = xasprintf("listing gs://%s/%s", bucket, prefix ? prefix : "");
	struct list_ctx x = { .alloc = 1, .want_gens = generations != NULL };
	x.names = xcalloc(1, sizeof(*x.names));
	int rc = tpf_gapi_pages(g->api, url, what, NULL, TPF_GAPI_QUIET(TPF_GCP_NOTFOUND), list_page,
				&x, d);
	if (rc == TPF_ENOTFOUND)
		rc = tpf_errorx(d, NULL, "Create the bucket, or fix state.gcs.bucket.",
				"%s: the bucket '%s' does not exist", what, bucket);
	else if (rc < 0 && rc != TPF_ETRANSIENT)
		rc = TPF_ERROR;
	free(base);
	free(p);
	free(url);
	free(what);
	if (rc) {
		tpf_gcs_names_free(x.names);
		free(x.gens);
		x.names = NULL;
		x.gens = NULL;
		x.n = 0;
	}
	if (generations)
		*generations = x.gens ? x.gens : xcalloc(1, sizeof(long long));
	*names = x.names;
	*n = x.n;
	return rc;
}
