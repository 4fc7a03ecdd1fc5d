#include "providers/gcp/gcp_auth.h"
#include "providers/gcp/gcp_endpoint.h"
#include "providers/gcp/gcp_errors.h"
#include "providers/gcp/gcp_jwt.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <math.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum cred_kind { CRED_STATIC, CRED_SERVICE_ACCOUNT, CRED_AUTHORIZED_USER, CRED_METADATA };

struct tpf_gcp_auth {
	struct tpf_gcp_http *http;
	const struct tpf_gcp_settings *s;
	enum cred_kind kind;
	char *source;
	char *path; /* credentials file, for messages */
	/* service_account */
	char *client_email, *private_key, *private_key_id;
	/* authorized_user */
	char *client_id, *client_secret, *refresh_token;
	char *token_uri;
	/* metadata server */
	char *metadata_host;
	int metadata_explicit; /* GCE_METADATA_HOST was set */

	pthread_mutex_t mu;         /* guards token, refresh_at, fetches */
	pthread_mutex_t refresh_mu; /* one refresh at a time */
	char *token;
	double refresh_at; /* monotonic */
	long fetches;
};

double tpf_gcp_token_refresh_at(double obtained, double lifetime, double margin)
{
	if (!isfinite(lifetime))
		return INFINITY;
	double early = margin < lifetime / 2 ? margin : lifetime / 2;
	if (early < 0)
		early = 0;
	return obtained + lifetime - early;
}

int tpf_gcp_token_fresh(const char *token, double refresh_at, double now)
{
	return token && *token && now < refresh_at;
}

static void wipe_free(char *s)
{
	if (s) {
		OPENSSL_cleanse(s, strlen(s));
		free(s);
	}
}

void tpf_gcp_auth_token_free(char *token)
{
	wipe_free(token);
}

void tpf_gcp_auth_free(struct tpf_gcp_auth *a)
{
	if (!a)
		return;
	free(a->source);
	free(a->path);
	free(a->client_email);
	wipe_free(a->private_key);
	free(a->private_key_id);
	free(a->client_id);
	wipe_free(a->client_secret);
	wipe_free(a->refresh_token);
	free(a->token_uri);
	free(a->metadata_host);
	wipe_free(a->token);
	pthread_mutex_destroy(&a->mu);
	pthread_mutex_destroy(&a->refresh_mu);
	free(a);
}

const char *tpf_gcp_auth_source(const struct tpf_gcp_auth *a)
{
	return a->source;
}

const char *tpf_gcp_auth_reject_hint(const struct tpf_gcp_auth *a)
{
	switch (a->kind) {
	case CRED_STATIC:
		return "TPUFORM_ACCESS_TOKEN holds an expired or wrong token; set a fresh one "
		       "($(gcloud auth print-access-token)) or unset it to use the credentials files";
	case CRED_METADATA:
		return "the metadata server's service account token was rejected; check the "
		       "VM's service account and its scopes (cloud-platform)";
	default:
		return "a freshly issued token was rejected; check that the credentials belong "
		       "to the project and that the Cloud TPU API is enabled";
	}
}

long tpf_gcp_auth_fetches(struct tpf_gcp_auth *a)
{
	pthread_mutex_lock(&a->mu);
	long n = a->fetches;
	pthread_mutex_unlock(&a->mu);
	return n;
}

static char *jstr(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v && *v ? xstrdup(v) : NULL;
}

/* Read a credentials file; `what` says where its name came from. */
static int load_file(struct tpf_gcp_auth *a, const char *path, const char *what,
		     struct tpf_diags *d)
{
	int rc = TPF_ERROR;
	struct tpf_buf text = TPF_BUF_INIT;
	json_t *root = NULL;
	json_error_t jerr;
	struct tpf_diags tmp = TPF_DIAGS_INIT;
	int r = tpf_read_file(path, &text, &tmp);
	if (r == TPF_ENOTFOUND) {
		tpf_errorx(d, NULL,
			   "download a service-account key or run 'gcloud auth application-default login'",
			   "credentials file '%s' (from %s) does not exist", path, what);
		goto done;
	}
	if (r < 0) {
		tpf_diags_move(d, &tmp);
		goto done;
	}
	root = json_loadb(text.buf, text.len, 0, &jerr);
	if (!json_is_object(root)) {
		/* jerr.text could quote file content (a key): give the position only */
		tpf_error(d, "credentials file '%s' (from %s) is not a JSON object (error at line %d, column %d)",
			  path, what, jerr.line, jerr.column);
		goto done;
	}
	const char *type = json_string_value(json_object_get(root, "type"));
	a->path = xstrdup(path);
	a->token_uri = jstr(root, "token_uri");
	if (type && !strcmp(type, "service_account")) {
		a->kind = CRED_SERVICE_ACCOUNT;
		a->client_email = jstr(root, "client_email");
		a->private_key = jstr(root, "private_key");
		a->private_key_id = jstr(root, "private_key_id");
		if (!a->client_email || !a->private_key) {
			tpf_error(d, "credentials file '%s' is a service_account key without '%s': "
				  "expected client_email and private_key", path,
				  a->client_email ? "private_key" : "client_email");
			goto done;
		}
		a->source = xasprintf("service account key '%s' (%s)", path, a->client_email);
	} else if (type && !strcmp(type, "authorized_user")) {
		a->kind = CRED_AUTHORIZED_USER;
		a->client_id = jstr(root, "client_id");
		a->client_secret = jstr(root, "client_secret");
		a->refresh_token = jstr(root, "refresh_token");
		if (!a->client_id || !a->client_secret || !a->refresh_token) {
			tpf_errorx(d, NULL, "run 'gcloud auth application-default login' again",
				   "credentials file '%s' is an authorized_user file without "
				   "client_id, client_secret or refresh_token", path);
			goto done;
		}
		a->source = xasprintf("authorized user credentials '%s'", path);
	} else {
		tpf_errorx(d, NULL,
			   "use a service-account JSON key or 'gcloud auth application-default login'",
			   "credentials file '%s' has type '%s': expected 'service_account' or "
			   "'authorized_user'", path, type ? type : "(none)");
		goto done;
	}
	if (!a->token_uri)
		a->token_uri = xstrdup(TPF_GCP_DEFAULT_TOKEN_URI);
	if (tpf_gcp_endpoint_check(a->token_uri, "token_uri", NULL, d) < 0)
		goto done;
	rc = 0;
done:
	tpf_diags_release(&tmp);
	json_decref(root);
	if (text.alloc)
		OPENSSL_cleanse(text.buf, text.len);
	tpf_buf_release(&text);
	return rc;
}

static int file_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

static char *adc_well_known(void)
{
	const char *dir = getenv("CLOUDSDK_CONFIG");
	if (dir && *dir)
		return xasprintf("%s/application_default_credentials.json", dir);
	const char *home = getenv("HOME");
	if (!home || !*home)
		return NULL;
	return xasprintf("%s/.config/gcloud/application_default_credentials.json", home);
}

int tpf_gcp_auth_open(struct tpf_gcp_auth **out, struct tpf_gcp_http *http,
		      const struct tpf_gcp_settings *s, const char *credentials,
		      struct tpf_diags *d)
{
	struct tpf_gcp_auth *a = xcalloc(1, sizeof(*a));
	char *adc = NULL;
	a->http = http;
	a->s = s;
	pthread_mutex_init(&a->mu, NULL);
	pthread_mutex_init(&a->refresh_mu, NULL);
	const char *tok = getenv("TPUFORM_ACCESS_TOKEN");
	const char *gac = getenv("GOOGLE_APPLICATION_CREDENTIALS");
	if (tok && *tok) {
		a->kind = CRED_STATIC;
		a->token = xstrdup(tok);
		a->refresh_at = INFINITY;
		a->source = xstrdup("the access token in TPUFORM_ACCESS_TOKEN");
	} else if (credentials && *credentials) {
		if (load_file(a, credentials, "provider.gcp.credentials", d) < 0)
			goto fail;
	} else if (gac && *gac) {
		if (load_file(a, gac, "GOOGLE_APPLICATION_CREDENTIALS", d) < 0)
			goto fail;
	} else if ((adc = adc_well_known()) && file_exists(adc)) {
		if (load_file(a, adc, "gcloud's application default credentials", d) < 0)
			goto fail;
	} else {
		const char *host = getenv("GCE_METADATA_HOST");
		if (!host || !*host)
			host = getenv("GCE_METADATA_ROOT"); /* legacy name, _metadata.py */
		a->kind = CRED_METADATA;
		a->metadata_explicit = host && *host;
		a->metadata_host = xstrdup(a->metadata_explicit ? host : "metadata.google.internal");
		a->source = xasprintf("the metadata server '%s'", a->metadata_host);
	}
	free(adc);
	*out = a;
	return 0;
fail:
	free(adc);
	tpf_gcp_auth_free(a);
	return TPF_ERROR;
}

/* Replace every occurrence of secret in s (in place, same length). */
static void redact(char *s, const char *secret)
{
	size_t n;
	if (!s || !secret || (n = strlen(secret)) < 4)
		return;
	for (char *p = strstr(s, secret); p; p = strstr(p + n, secret))
		memset(p, '*', n);
}

static void scrub(struct tpf_gcp_auth *a, char *msg, const char *extra)
{
	redact(msg, extra);
	redact(msg, a->client_secret);
	redact(msg, a->refresh_token);
}

/* A token request being built and sent; every string owned, secrets
 * wiped by token_request_release. */
struct token_request {
	struct tpf_gcp_request rq;
	char *body, *jwt, *url;
	char *e1, *e2, *e3;   /* escaped form values */
	struct tpf_buf what;  /* "get an access token from ...", for messages */
};

static void token_request_release(struct token_request *t)
{
	wipe_free(t->body);
	wipe_free(t->jwt);
	wipe_free(t->e1);
	wipe_free(t->e2);
	wipe_free(t->e3);
	free(t->url);
	tpf_buf_release(&t->what);
}

/* Build the request for the credentials' kind: a JWT bearer grant
 * (RFC 7523) for a service account, a refresh_token grant (RFC 6749
 * section 6) for an authorized user, a GET for the metadata server. */
static int token_request_build(struct tpf_gcp_auth *a, struct token_request *t,
			       struct tpf_diags *d)
{
	t->rq.method = "POST";
	t->rq.content_type = "application/x-www-form-urlencoded";
	switch (a->kind) {
	case CRED_SERVICE_ACCOUNT: {
		struct tpf_gcp_jwt_claims c = {
			.iss = a->client_email, .scope = TPF_GCP_SCOPE, .aud = a->token_uri,
			.iat = (long)tpf_now_wall(), .lifetime = 3600,
		};
		if (tpf_gcp_jwt_sign(a->private_key, a->private_key_id, &c, a->path, &t->jwt, d) < 0)
			return TPF_ERROR;
		t->e1 = tpf_gcp_escape(t->jwt);
		t->body = xasprintf("grant_type=%s&assertion=%s",
				    "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer", t->e1);
		t->rq.url = a->token_uri;
		tpf_buf_addf(&t->what, "get an access token from '%s' for %s", a->token_uri,
			     a->source);
		break;
	}
	case CRED_AUTHORIZED_USER:
		t->e1 = tpf_gcp_escape(a->client_id);
		t->e2 = tpf_gcp_escape(a->client_secret);
		t->e3 = tpf_gcp_escape(a->refresh_token);
		t->body = xasprintf("grant_type=refresh_token&client_id=%s&client_secret=%s"
				    "&refresh_token=%s", t->e1, t->e2, t->e3);
		t->rq.url = a->token_uri;
		tpf_buf_addf(&t->what, "get an access token from '%s' for %s", a->token_uri,
			     a->source);
		break;
	case CRED_METADATA:
		t->url = xasprintf("http://%s/computeMetadata/v1/instance/service-accounts/default/token",
				   a->metadata_host);
		t->rq.method = "GET";
		t->rq.content_type = NULL;
		t->rq.url = t->url;
		t->rq.metadata_flavor = 1;
		/* off GCE the default host does not answer: do not hang on it */
		t->rq.connect_timeout = a->metadata_explicit ? 0 : 3;
		tpf_buf_addf(&t->what, "get an access token from %s", a->source);
		break;
	case CRED_STATIC:
		return tpf_errorx(d, NULL, "set TPUFORM_ACCESS_TOKEN to a fresh token, e.g. "
				  "$(gcloud auth print-access-token), or unset it",
				  "the access token in TPUFORM_ACCESS_TOKEN was rejected (expired or revoked)");
	}
	if (t->body) {
		t->rq.body = t->body;
		t->rq.body_len = strlen(t->body);
	}
	return 0;
}

/* The default metadata server did not answer: not on Google Cloud, so
 * there are no credentials at all (not retried). */
static int metadata_absent(const struct tpf_gcp_auth *a, const struct tpf_gcp_response *rs)
{
	return a->kind == CRED_METADATA && !a->metadata_explicit &&
	       (rs->curl_code == CURLE_COULDNT_RESOLVE_HOST ||
		rs->curl_code == CURLE_COULDNT_CONNECT || rs->curl_code == CURLE_OPERATION_TIMEDOUT);
}

/* The diagnostic for a transfer that failed (no HTTP answer); returns r,
 * or TPF_ERROR when there are no credentials. */
static int transfer_failed(struct tpf_gcp_auth *a, const struct token_request *t,
			   const struct tpf_gcp_response *rs, int r, struct tpf_diags *d)
{
	if (rs->too_large)
		return tpf_gcp_http_too_large(a->http, &t->rq, t->what.buf, NULL, d);
	if (metadata_absent(a, rs))
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

/* The diagnostic for an OAuth2 error answer (RFC 6749 section 5.2), with
 * a hint for the errors a person can fix. Secrets are scrubbed from the
 * server's message. */
static int token_refused(struct tpf_gcp_auth *a, const struct token_request *t,
			 struct tpf_gcp_error *e, enum tpf_gcp_class cl, struct tpf_diags *d)
{
	scrub(a, e->message, t->jwt);
	struct tpf_buf m = TPF_BUF_INIT;
	tpf_gcp_error_format(e, &m);
	const char *hint = NULL;
	if (e->status && !strcmp(e->status, "invalid_grant"))
		hint = a->kind == CRED_SERVICE_ACCOUNT
			       ? "the key may be deleted or disabled, or this machine's clock "
				 "is wrong; create a new key for the service account"
			       : "the refresh token was revoked or expired; run 'gcloud auth "
				 "application-default login' again";
	else if (e->status && !strcmp(e->status, "invalid_client"))
		hint = "the client_id or client_secret is wrong; run 'gcloud auth "
		       "application-default login' again";
	tpf_errorx(d, NULL, hint, "%s: %s", t->what.buf, m.buf);
	tpf_buf_release(&m);
	return cl == TPF_GCP_TRANSIENT ? TPF_ETRANSIENT : TPF_ERROR;
}

/* Send the request, retrying transient failures; 0 when a 2xx answer is in
 * rs, else an error with a diagnostic. */
static int token_request_send(struct tpf_gcp_auth *a, const struct token_request *t,
			      struct tpf_gcp_response *rs, struct tpf_diags *d)
{
	for (int attempt = 0;; attempt++) {
		int r = tpf_gcp_http_do(a->http, &t->rq, rs);
		int last = attempt + 1 >= a->s->tries;
		if (r < 0) {
			if (r == TPF_ETRANSIENT && !last && !metadata_absent(a, rs)) {
				tpf_sleep(tpf_gcp_retry_delay(a->s, attempt, -1));
				continue;
			}
			return transfer_failed(a, t, rs, r, d);
		}
		if (rs->status >= 200 && rs->status < 300)
			return 0;
		struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
		tpf_gcp_error_parse_http(&e, rs->status, rs->body.buf, rs->body.len);
		enum tpf_gcp_class cl = tpf_gcp_error_classify(&e);
		if (cl == TPF_GCP_TRANSIENT && !last) {
			double ra = tpf_gcp_parse_retry_after(rs->retry_after, tpf_now_wall());
			tpf_gcp_error_release(&e);
			tpf_sleep(tpf_gcp_retry_delay(a->s, attempt, ra));
			continue;
		}
		int rc = token_refused(a, t, &e, cl, d);
		tpf_gcp_error_release(&e);
		return rc;
	}
}

/* The token and its lifetime (seconds) from a 2xx answer. */
static int token_parse(struct tpf_gcp_auth *a, const struct token_request *t,
		       const struct tpf_gcp_response *rs, char **token, double *lifetime,
		       struct tpf_diags *d)
{
	if (a->kind == CRED_METADATA && !rs->metadata_flavor)
		return tpf_errorx(d, NULL, "check GCE_METADATA_HOST",
				  "%s: the answer lacks the header 'Metadata-Flavor: Google', so it "
				  "does not come from a metadata server", t->what.buf);
	int rc = TPF_ERROR;
	json_t *root = json_loadb(rs->body.buf, rs->body.len, 0, NULL);
	const char *at = json_string_value(json_object_get(root, "access_token"));
	if (!at || !*at) {
		tpf_error(d, "%s: the answer has no 'access_token' (HTTP %ld)", t->what.buf,
			  rs->status);
	} else {
		json_t *ei = json_object_get(root, "expires_in");
		*lifetime = json_is_number(ei) ? json_number_value(ei) : 3600;
		*token = xstrdup(at);
		rc = 0;
	}
	if (root) {
		/* the body held the token: wipe it before freeing */
		json_t *at2 = json_object_get(root, "access_token");
		if (json_is_string(at2))
			json_string_set(at2, "");
	}
	json_decref(root);
	return rc;
}

/* One request to a token endpoint, with retries for transient failures.
 * On success *token and *lifetime are set. */
static int fetch_once(struct tpf_gcp_auth *a, char **token, double *lifetime,
		      struct tpf_diags *d)
{
	struct token_request t = { .what = TPF_BUF_INIT };
	struct tpf_gcp_response rs = TPF_GCP_RESPONSE_INIT;
	int rc = token_request_build(a, &t, d);
	if (rc == 0)
		rc = token_request_send(a, &t, &rs, d);
	if (rc == 0)
		rc = token_parse(a, &t, &rs, token, lifetime, d);
	if (rs.body.alloc)
		OPENSSL_cleanse(rs.body.buf, rs.body.len);
	tpf_gcp_response_release(&rs);
	token_request_release(&t);
	return rc;
}

int tpf_gcp_auth_token(struct tpf_gcp_auth *a, char **token, struct tpf_diags *d)
{
	pthread_mutex_lock(&a->mu);
	if (tpf_gcp_token_fresh(a->token, a->refresh_at, tpf_now_mono())) {
		*token = xstrdup(a->token);
		pthread_mutex_unlock(&a->mu);
		return 0;
	}
	pthread_mutex_unlock(&a->mu);

	pthread_mutex_lock(&a->refresh_mu);
	pthread_mutex_lock(&a->mu);
	/* another thread may have refreshed while we waited */
	if (tpf_gcp_token_fresh(a->token, a->refresh_at, tpf_now_mono())) {
		*token = xstrdup(a->token);
		pthread_mutex_unlock(&a->mu);
		pthread_mutex_unlock(&a->refresh_mu);
		return 0;
	}
	pthread_mutex_unlock(&a->mu);

	char *fresh = NULL;
	double lifetime = 0;
	double t0 = tpf_now_mono();
	int rc = fetch_once(a, &fresh, &lifetime, d);
	if (rc == 0) {
		pthread_mutex_lock(&a->mu);
		wipe_free(a->token);
		a->token = fresh;
		a->refresh_at = tpf_gcp_token_refresh_at(t0, lifetime, a->s->token_margin);
		a->fetches++;
		*token = xstrdup(fresh);
		pthread_mutex_unlock(&a->mu);
	}
	pthread_mutex_unlock(&a->refresh_mu);
	return rc;
}

int tpf_gcp_auth_invalidate(struct tpf_gcp_auth *a, const char *used)
{
	if (a->kind == CRED_STATIC)
		return 0;
	pthread_mutex_lock(&a->mu);
	if (a->token && used && !strcmp(a->token, used)) {
		wipe_free(a->token);
		a->token = NULL;
		a->refresh_at = 0;
	}
	pthread_mutex_unlock(&a->mu);
	return 1;
}

const char *tpf_gcp_auth_email(const struct tpf_gcp_auth *a)
{
	return a && a->kind == CRED_SERVICE_ACCOUNT ? a->client_email : NULL;
}
