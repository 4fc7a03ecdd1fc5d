/*
 * The credentials object: which source (the ADC order of gcp_auth.h), the
 * impersonation and quota project on top of it, and the token cache.
 * Fetching is in gcp_auth_oauth.c, gcp_auth_external.c and
 * gcp_auth_impersonate.c.
 */
#include "google/gcp_auth_internal.h"
#include "google/gcp_endpoint.h"
#include "util/hash.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <math.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

void tpf_gcp_auth_token_free(char *token)
{
	tpf_gcp_wipe_free(token);
}

void tpf_gcp_auth_free(struct tpf_gcp_auth *a)
{
	if (!a)
		return;
	tpf_gapi_free(a->api);
	free(a->base_source);
	free(a->source);
	free(a->path);
	free(a->hint);
	tpf_gcp_wipe_free(a->static_token);
	free(a->client_email);
	tpf_gcp_wipe_free(a->private_key);
	free(a->private_key_id);
	free(a->client_id);
	tpf_gcp_wipe_free(a->client_secret);
	tpf_gcp_wipe_free(a->refresh_token);
	free(a->token_uri);
	free(a->metadata_host);
	tpf_gcp_external_free(a->ext);
	free(a->file_quota_project);
	free(a->quota_header);
	tpf_gcp_impersonation_free(a->imp);
	tpf_gcp_wipe_free(a->base_token);
	tpf_gcp_wipe_free(a->token);
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
	return a->hint;
}

const char *tpf_gcp_auth_quota_header(const struct tpf_gcp_auth *a)
{
	return a->quota_header;
}

const char *tpf_gcp_auth_quota_project(const struct tpf_gcp_auth *a)
{
	return a->quota_header ? strchr(a->quota_header, ':') + 2 : NULL;
}

const char *tpf_gcp_auth_email(const struct tpf_gcp_auth *a)
{
	if (a->imp)
		return a->imp->email;
	if (a->ext && a->ext->imp)
		return a->ext->imp->email;
	return a->kind == CRED_SERVICE_ACCOUNT ? a->client_email : NULL;
}

long tpf_gcp_auth_fetches(struct tpf_gcp_auth *a)
{
	pthread_mutex_lock(&a->mu);
	long n = a->fetches;
	pthread_mutex_unlock(&a->mu);
	return n;
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

/* The ADC order of gcp_auth.h: sets kind, base_source and its fields. */
static int pick_source(struct tpf_gcp_auth *a, const char *credentials, struct tpf_diags *d)
{
	const char *tok = getenv("TPUFORM_ACCESS_TOKEN");
	const char *gac = getenv("GOOGLE_APPLICATION_CREDENTIALS");
	char *adc = NULL;
	int rc = 0;
	if (tok && *tok) {
		a->kind = CRED_STATIC;
		a->static_token = xstrdup(tok);
		a->base_source = xstrdup("the access token in TPUFORM_ACCESS_TOKEN");
	} else if (credentials && *credentials) {
		rc = tpf_gcp_auth_load_file(a, credentials, "provider.gcp.credentials", d);
	} else if (gac && *gac) {
		rc = tpf_gcp_auth_load_file(a, gac, "GOOGLE_APPLICATION_CREDENTIALS", d);
	} else if ((adc = adc_well_known()) && file_exists(adc)) {
		rc = tpf_gcp_auth_load_file(a, adc, "gcloud's application default credentials", d);
	} else {
		const char *host = getenv("GCE_METADATA_HOST");
		if (!host || !*host)
			host = getenv("GCE_METADATA_ROOT"); /* legacy name, _metadata.py */
		a->kind = CRED_METADATA;
		a->metadata_explicit = host && *host;
		a->metadata_host = xstrdup(a->metadata_explicit ? host : "metadata.google.internal");
		a->base_source = xasprintf("the metadata server '%s'", a->metadata_host);
	}
	free(adc);
	return rc;
}

/* Quota project: the fleet file, else GOOGLE_CLOUD_QUOTA_PROJECT, else
 * the credentials file (google-auth _default.py and credentials.py
 * with_quota_project_from_environment; tests/test__default.py
 * test_quota_project_from_environment shows the order). */
static int setup_quota(struct tpf_gcp_auth *a, const char *configured, struct tpf_diags *d)
{
	const char *env = getenv("GOOGLE_CLOUD_QUOTA_PROJECT");
	const char *q = configured && *configured ? configured
			: env && *env ? env : a->file_quota_project;
	if (!q)
		return 0;
	for (const char *p = q; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return tpf_errorx(d, NULL, "set a project ID such as 'my-project'",
					  "quota project '%s' (from %s) contains white space or "
					  "control characters", q,
					  q == configured ? "provider.gcp.quota_project"
					  : q == env ? "GOOGLE_CLOUD_QUOTA_PROJECT"
						     : "quota_project_id in the credentials file");
	a->quota_header = xasprintf("x-goog-user-project: %s", q);
	return 0;
}

static int setup_impersonation(struct tpf_gcp_auth *a, const char *configured,
			       struct tpf_diags *d)
{
	const char *env = getenv("TPUFORM_IMPERSONATE_SERVICE_ACCOUNT");
	const char *from = "provider.gcp.impersonate_service_account";
	const char *email = configured;
	if (!email || !*email) {
		email = env;
		from = "TPUFORM_IMPERSONATE_SERVICE_ACCOUNT";
	}
	if (!email || !*email)
		return 0;
	a->imp = tpf_gcp_impersonation_new(email, 0, from, d);
	return a->imp ? 0 : TPF_ERROR;
}

/* a->source and a->hint, once the rest is known. */
static void describe(struct tpf_gcp_auth *a)
{
	if (a->imp)
		a->source = xasprintf("%s, %simpersonating %s", a->base_source,
				      a->ext && a->ext->imp ? "then " : "", a->imp->email);
	else
		a->source = xstrdup(a->base_source);
	if (a->kind == CRED_STATIC && !a->imp)
		a->hint = xstrdup(
			"TPUFORM_ACCESS_TOKEN cannot be refreshed, and the API no longer accepts "
			"the token it holds (access tokens expire after about an hour): set a "
			"fresh one, e.g. TPUFORM_ACCESS_TOKEN=$(gcloud auth print-access-token), "
			"or unset it so that tpuform uses credentials it can refresh "
			"(GOOGLE_APPLICATION_CREDENTIALS, 'gcloud auth application-default login')");
	else if (a->imp || (a->ext && a->ext->imp))
		a->hint = xasprintf("a freshly issued token of service account %s was rejected; "
				    "check that the account exists and is enabled and that the "
				    "Cloud TPU API is enabled",
				    a->imp ? a->imp->email : a->ext->imp->email);
	else if (a->kind == CRED_METADATA)
		a->hint = xstrdup("the metadata server's service account token was rejected; "
				  "check the VM's service account and its scopes (cloud-platform)");
	else
		a->hint = xstrdup("a freshly issued token was rejected; check that the "
				  "credentials belong to the project and that the Cloud TPU API "
				  "is enabled");
}

/* What a token depends on: the source (kind, file path and text, metadata
 * host, ready token) and the impersonation. Fed through SHA-256 so that no
 * secret sits in the key. */
static void cache_key(struct tpf_gcp_auth *a)
{
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_buf_addf(&b, "%d\n%s\n%s\n%s\n%s", (int)a->kind, a->source, a->file_sha,
		     a->static_token ? a->static_token : "", a->imp ? a->imp->url : "");
	tpf_sha256_hex(b.buf, b.len, a->cache_key);
	OPENSSL_cleanse(b.buf, b.len);
	tpf_buf_release(&b);
}

int tpf_gcp_auth_open(struct tpf_gcp_auth **out, struct tpf_gcp_http *http,
		      const struct tpf_gcp_settings *s, const struct tpf_gcp_auth_config *cfg,
		      struct tpf_diags *d)
{
	static const struct tpf_gcp_auth_config none = { NULL, NULL, NULL };
	struct tpf_gcp_auth *a = xcalloc(1, sizeof(*a));
	a->http = http;
	a->s = s;
	pthread_mutex_init(&a->mu, NULL);
	pthread_mutex_init(&a->refresh_mu, NULL);
	if (!cfg)
		cfg = &none;
	struct tpf_gapi_config gc = { .http = http, .settings = s };
	if (tpf_gapi_open(&a->api, &gc, d) < 0 || pick_source(a, cfg->credentials, d) < 0 ||
	    setup_impersonation(a, cfg->impersonate, d) < 0 ||
	    setup_quota(a, cfg->quota_project, d) < 0) {
		tpf_gcp_auth_free(a);
		return TPF_ERROR;
	}
	describe(a);
	if (a->kind == CRED_STATIC && !a->imp) {
		a->token = xstrdup(a->static_token);
		a->refresh_at = INFINITY;
	} else {
		cache_key(a);
		tpf_gcp_token_cache_get(a->cache_key, &a->token, &a->refresh_at);
	}
	*out = a;
	return 0;
}

/* A token of the source credentials, before any impersonation. */
static int fetch_base(struct tpf_gcp_auth *a, char **token, double *lifetime,
		      struct tpf_diags *d)
{
	switch (a->kind) {
	case CRED_STATIC:
		*token = xstrdup(a->static_token);
		*lifetime = INFINITY;
		return 0;
	case CRED_EXTERNAL:
		return tpf_gcp_external_fetch(a, token, lifetime, d);
	default:
		return tpf_gcp_oauth_fetch(a, token, lifetime, d);
	}
}

/* A token of the impersonated account, called with the source's token
 * (kept while fresh: it is a token like any other). If IAM says that
 * token is no longer good, it is fetched again once. */
static int fetch_impersonated(struct tpf_gcp_auth *a, char **token, double *lifetime,
			      struct tpf_diags *d)
{
	for (int attempt = 0;; attempt++) {
		double t0 = tpf_now_mono();
		if (!tpf_gcp_token_fresh(a->base_token, a->base_refresh_at, t0)) {
			char *b = NULL;
			double life = 0;
			int rc = fetch_base(a, &b, &life, d);
			if (rc < 0)
				return rc;
			tpf_gcp_wipe_free(a->base_token);
			a->base_token = b;
			a->base_refresh_at = tpf_gcp_token_refresh_at(t0, life, a->s->token_margin);
		}
		int rejected = 0;
		struct tpf_diags tmp = TPF_DIAGS_INIT;
		int rc = tpf_gcp_impersonate(a, a->imp, a->base_token, token, lifetime, &rejected,
					     &tmp);
		if (rc < 0 && rejected && attempt == 0 && a->kind != CRED_STATIC) {
			tpf_gcp_wipe_free(a->base_token);
			a->base_token = NULL;
			tpf_diags_release(&tmp);
			continue;
		}
		tpf_diags_move(d, &tmp);
		tpf_diags_release(&tmp);
		return rc;
	}
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
	int rc = a->imp ? fetch_impersonated(a, &fresh, &lifetime, d)
			: fetch_base(a, &fresh, &lifetime, d);
	if (rc == 0) {
		pthread_mutex_lock(&a->mu);
		tpf_gcp_wipe_free(a->token);
		a->token = fresh;
		a->refresh_at = tpf_gcp_token_refresh_at(t0, lifetime, a->s->token_margin);
		a->fetches++;
		tpf_gcp_token_cache_put(a->cache_key, fresh, a->refresh_at);
		*token = xstrdup(fresh);
		pthread_mutex_unlock(&a->mu);
	}
	pthread_mutex_unlock(&a->refresh_mu);
	return rc;
}

int tpf_gcp_auth_invalidate(struct tpf_gcp_auth *a, const char *used)
{
	if (a->kind == CRED_STATIC && !a->imp)
		return 0;
	pthread_mutex_lock(&a->mu);
	if (a->token && used && !strcmp(a->token, used)) {
		tpf_gcp_wipe_free(a->token);
		a->token = NULL;
		a->refresh_at = 0;
	}
	pthread_mutex_unlock(&a->mu);
	if (used)
		tpf_gcp_token_cache_drop(a->cache_key, used);
	return 1;
}

static int creds_token(void *ctx, char **out, struct tpf_diags *d)
{
	return tpf_gcp_auth_token(ctx, out, d);
}

static int creds_invalidate(void *ctx, const char *used)
{
	return tpf_gcp_auth_invalidate(ctx, used);
}

static const char *creds_header(void *ctx)
{
	return tpf_gcp_auth_quota_header(ctx);
}

static const char *creds_reject_hint(void *ctx)
{
	return tpf_gcp_auth_reject_hint(ctx);
}

void tpf_gcp_auth_creds(struct tpf_gcp_auth *a, struct tpf_gapi_creds *out)
{
	struct tpf_gapi_creds c = {
		.token = creds_token, .token_free = tpf_gcp_auth_token_free,
		.invalidate = creds_invalidate, .header = creds_header,
		.reject_hint = creds_reject_hint, .ctx = a,
	};
	*out = c;
}
