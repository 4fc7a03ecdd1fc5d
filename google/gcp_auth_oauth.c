/*
 * Token requests: sending them with retries, reading OAuth2 answers and
 * errors, and the three grants of Google's token endpoint and metadata
 * server (docs/cloud-tpu-api.md section 7): the JWT bearer grant (RFC 7523)
 * for a service account key, the refresh_token grant (RFC 6749 section 6)
 * for an authorized user, a GET to the metadata server.
 */
#include "google/gcp_auth_internal.h"
#include "google/gcp_jwt.h"
#include "util/redact.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

void tpf_gcp_token_request_release(struct tpf_gcp_token_request *t)
{
	tpf_gcp_wipe_free(t->body);
	for (size_t i = 0; i < sizeof(t->secret) / sizeof(t->secret[0]); i++)
		tpf_gcp_wipe_free(t->secret[i]);
	free(t->url);
	tpf_buf_release(&t->what);
}

char *tpf_gcp_token_request_keep(struct tpf_gcp_token_request *t, char *secret)
{
	for (size_t i = 0; i < sizeof(t->secret) / sizeof(t->secret[0]); i++)
		if (!t->secret[i])
			return t->secret[i] = secret;
	abort(); /* a programming error: at most four per request */
}

void tpf_gcp_response_wipe(struct tpf_gcp_response *rs)
{
	if (rs->body.alloc)
		OPENSSL_cleanse(rs->body.buf, rs->body.len);
	tpf_gcp_response_release(rs);
}

/* Every secret a quoted message could echo, as "***" (util/redact.h): *msg
 * is replaced by a redacted copy, the old one wiped and freed. */
static void scrub(const struct tpf_gcp_auth *a, const struct tpf_gcp_token_request *t, char **msg)
{
	if (!*msg)
		return;
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_buf_adds(&b, *msg);
	for (size_t i = 0; i < sizeof(t->secret) / sizeof(t->secret[0]); i++)
		tpf_redact(&b, t->secret[i]);
	tpf_redact(&b, a->client_secret);
	tpf_redact(&b, a->refresh_token);
	tpf_redact(&b, a->static_token);
	tpf_redact(&b, a->base_token);
	for (size_t i = 0; a->ext && a->ext->headers && a->ext->headers[i]; i++) {
		const char *v = strchr(a->ext->headers[i], ':');
		tpf_redact(&b, v ? v + 2 : NULL);
	}
	tpf_gcp_wipe_free(*msg);
	*msg = tpf_buf_detach(&b, NULL);
}

/* The default metadata server did not answer: not on Google Cloud, so
 * there are no credentials at all (not retried). */
static int metadata_absent(const struct tpf_gcp_auth *a, const struct tpf_gcp_token_request *t,
			   const struct tpf_gcp_response *rs)
{
	return t->rq.metadata_flavor && !a->metadata_explicit &&
	       (rs->curl_code == CURLE_COULDNT_RESOLVE_HOST ||
		rs->curl_code == CURLE_COULDNT_CONNECT || rs->curl_code == CURLE_OPERATION_TIMEDOUT);
}

/* The diagnostic for a transfer that failed (no HTTP answer); returns r,
 * or TPF_ERROR when there are no credentials. */
static int transfer_failed(struct tpf_gcp_auth *a, const struct tpf_gcp_token_request *t,
			   const struct tpf_gcp_response *rs, int r, struct tpf_diags *d)
{
	if (rs->too_large)
		return tpf_gcp_http_too_large(a->http, &t->rq, t->what.buf, NULL, d);
	if (metadata_absent(a, t, rs))
		return tpf_errorx(d, NULL,
				  "set provider.gcp.credentials to a service-account key file, "
				  "set GOOGLE_APPLICATION_CREDENTIALS, run 'gcloud auth "
				  "application-default login', or set TPUFORM_ACCESS_TOKEN",
				  "no Google Cloud credentials found: no credentials file is configured "
				  "and the metadata server 'metadata.google.internal' is not reachable "
				  "(not running on Google Cloud)");
	tpf_errorx(d, NULL, NULL, "%s: %s%s", t->what.buf, rs->error,
		   r == TPF_ETRANSIENT ? " (gave up after retries)" : "");
	return r;
}

int tpf_gcp_token_send(struct tpf_gcp_auth *a, struct tpf_gcp_token_request *t,
		       struct tpf_gcp_response *rs, struct tpf_gcp_error *e, struct tpf_diags *d)
{
	struct tpf_gapi_call c = TPF_GAPI_CALL_INIT;
	c.rq = t->rq;
	/* Minting a token changes nothing: safe to repeat. The default
	 * metadata server is absent off Google Cloud: one connect decides. */
	c.flags = TPF_GAPI_NO_AUTH | TPF_GAPI_IDEMPOTENT |
		  (t->rq.metadata_flavor && !a->metadata_explicit ? TPF_GAPI_CONNECT_ONCE : 0);
	c.what = t->what.buf;
	c.quiet = TPF_GAPI_QUIET_ALL;
	int r = tpf_gapi_send(a->api, &c, d);
	tpf_gcp_response_wipe(rs);
	*rs = c.rs; /* moved */
	tpf_gcp_error_release(e);
	*e = c.err; /* moved */
	if (r == 0)
		return 0;
	if (!c.api_error)
		return transfer_failed(a, t, rs, r, d);
	scrub(a, t, &e->message);
	return r == TPF_ETRANSIENT ? TPF_ETRANSIENT : TPF_ERROR;
}

int tpf_gcp_token_refused(const struct tpf_gcp_token_request *t, const struct tpf_gcp_error *e,
			  const char *hint, int rc, struct tpf_diags *d)
{
	struct tpf_buf m = TPF_BUF_INIT;
	tpf_gcp_error_format(e, &m);
	tpf_errorx(d, NULL, hint, "%s: %s", t->what.buf, m.buf);
	tpf_buf_release(&m);
	return rc;
}

int tpf_gcp_token_parse(const struct tpf_gcp_token_request *t, const struct tpf_gcp_response *rs,
			char **token, double *lifetime, struct tpf_diags *d)
{
	int rc = TPF_ERROR;
	json_t *root = json_loadb(rs->body.buf, rs->body.len, 0, NULL);
	json_t *at = json_object_get(root, "access_token");
	json_t *ei = json_object_get(root, "expires_in");
	if (!json_string_value(at) || !*json_string_value(at)) {
		tpf_error(d, "%s: the answer has no 'access_token' (HTTP %ld)", t->what.buf,
			  rs->status);
	} else {
		*lifetime = json_is_number(ei) ? json_number_value(ei)
			    : json_is_string(ei) ? atof(json_string_value(ei)) : 3600;
		if (*lifetime <= 0)
			*lifetime = 0; /* used once, then fetched again */
		*token = xstrdup(json_string_value(at));
		rc = 0;
	}
	if (json_is_string(at)) /* the parsed copy held the token */
		OPENSSL_cleanse((char *)json_string_value(at), json_string_length(at));
	json_decref(root);
	return rc;
}

/* Build the request for the credentials' kind (never CRED_STATIC or
 * CRED_EXTERNAL: gcp_auth.c sends those elsewhere). */
static int oauth_build(struct tpf_gcp_auth *a, struct tpf_gcp_token_request *t,
		       struct tpf_diags *d)
{
	if (a->kind == CRED_METADATA) {
		t->url = xasprintf("http://%s/computeMetadata/v1/instance/service-accounts/default/token",
				   a->metadata_host);
		t->rq.method = "GET";
		t->rq.url = t->url;
		t->rq.metadata_flavor = 1;
		/* off GCE the default host does not answer: do not hang on it */
		t->rq.connect_timeout = a->metadata_explicit ? 0 : 3;
		tpf_buf_addf(&t->what, "get an access token from %s", a->base_source);
		return 0;
	}
	t->rq.method = "POST";
	t->rq.content_type = "application/x-www-form-urlencoded";
	t->rq.url = a->token_uri;
	tpf_buf_addf(&t->what, "get an access token from '%s' for %s", a->token_uri,
		     a->base_source);
	if (a->kind == CRED_SERVICE_ACCOUNT) {
		struct tpf_gcp_jwt_claims c = {
			.iss = a->client_email, .scope = TPF_GCP_SCOPE, .aud = a->token_uri,
			.iat = (long)tpf_now_wall(), .lifetime = 3600,
		};
		char *jwt = NULL;
		if (tpf_gcp_jwt_sign(a->private_key, a->private_key_id, &c, a->path, &jwt, d) < 0)
			return TPF_ERROR;
		tpf_gcp_token_request_keep(t, jwt);
		char *e = tpf_gcp_token_request_keep(t, tpf_gcp_escape(jwt));
		t->body = xasprintf("grant_type=%s&assertion=%s",
				    "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer", e);
	} else if (a->kind == CRED_AUTHORIZED_USER) {
		char *id = tpf_gcp_escape(a->client_id);
		char *sec = tpf_gcp_token_request_keep(t, tpf_gcp_escape(a->client_secret));
		char *rt = tpf_gcp_token_request_keep(t, tpf_gcp_escape(a->refresh_token));
		t->body = xasprintf("grant_type=refresh_token&client_id=%s&client_secret=%s"
				    "&refresh_token=%s", id, sec, rt);
		free(id);
	}
	t->rq.body = t->body;
	t->rq.body_len = t->body ? strlen(t->body) : 0;
	return 0;
}

/* A hint for the OAuth2 errors a person can fix (RFC 6749 section 5.2). */
static const char *oauth_hint(const struct tpf_gcp_auth *a, const struct tpf_gcp_error *e)
{
	if (e->status && !strcmp(e->status, "invalid_grant"))
		return a->kind == CRED_SERVICE_ACCOUNT
			       ? "the key may be deleted or disabled, or this machine's clock "
				 "is wrong; create a new key for the service account"
			       : "the refresh token was revoked or expired; run 'gcloud auth "
				 "application-default login' again";
	if (e->status && !strcmp(e->status, "invalid_client"))
		return "the client_id or client_secret is wrong; run 'gcloud auth "
		       "application-default login' again";
	return NULL;
}

int tpf_gcp_oauth_fetch(struct tpf_gcp_auth *a, char **token, double *lifetime,
			struct tpf_diags *d)
{
	struct tpf_gcp_token_request t = { .what = TPF_BUF_INIT };
	struct tpf_gcp_response rs = TPF_GCP_RESPONSE_INIT;
	struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
	int rc = oauth_build(a, &t, d);
	if (rc == 0)
		rc = tpf_gcp_token_send(a, &t, &rs, &e, d);
	if (rc < 0 && e.http)
		tpf_gcp_token_refused(&t, &e, oauth_hint(a, &e), rc, d);
	if (rc == 0 && a->kind == CRED_METADATA && !rs.metadata_flavor)
		rc = tpf_errorx(d, NULL, "check GCE_METADATA_HOST",
				"%s: the answer lacks the header 'Metadata-Flavor: Google', so it "
				"does not come from a metadata server", t.what.buf);
	return tpf_gcp_token_finish(rc, &t, &rs, &e, token, lifetime, d);
}

int tpf_gcp_token_finish(int rc, struct tpf_gcp_token_request *t, struct tpf_gcp_response *rs,
			 struct tpf_gcp_error *e, char **token, double *lifetime,
			 struct tpf_diags *d)
{
	if (rc == 0)
		rc = tpf_gcp_token_parse(t, rs, token, lifetime, d);
	tpf_gcp_error_release(e);
	tpf_gcp_response_wipe(rs);
	tpf_gcp_token_request_release(t);
	return rc;
}
