/*
 * OAuth2 access tokens for the Cloud TPU API, found in the Application
 * Default Credentials order (docs/cloud-tpu-api.md section 7,
 * google-auth-library-python _default.py):
 *
 *   0. $TPUFORM_ACCESS_TOKEN: a ready token, used as is (never refreshed);
 *   1. provider.gcp.credentials (the fleet file);
 *   2. $GOOGLE_APPLICATION_CREDENTIALS;
 *   3. gcloud's ADC file: $CLOUDSDK_CONFIG/application_default_credentials.json,
 *      else ~/.config/gcloud/application_default_credentials.json;
 *   4. the GCE metadata server ($GCE_METADATA_HOST, else
 *      metadata.google.internal), with header "Metadata-Flavor: Google".
 *
 * Credential files: "service_account" keys (RS256 JWT-bearer grant at the
 * key's token_uri), "authorized_user" files (refresh-token grant at their
 * token_uri, default https://oauth2.googleapis.com/token) and
 * "external_account" files (workload identity federation, AIP-4117: a
 * subject token read from a file or URL, exchanged at the Security Token
 * Service per RFC 8693, then optionally service account impersonation).
 *
 * Any of these may be the source of service account impersonation
 * (provider.gcp.impersonate_service_account or
 * $TPUFORM_IMPERSONATE_SERVICE_ACCOUNT): IAM Credentials
 * generateAccessToken, called with the source's token, gives the token used
 * on the API (as gcloud --impersonate-service-account and Terraform's
 * impersonate_service_account do). The quota project (provider.gcp.quota_project,
 * else $GOOGLE_CLOUD_QUOTA_PROJECT, else the file's quota_project_id, the
 * order of google-auth _default.py) goes on API calls as x-goog-user-project.
 *
 * Tokens are cached and refreshed `token_margin` seconds before expiry (at
 * most half the token's lifetime early); one refresh at a time across
 * threads, the others wait for its result. The cache is process-wide
 * (gcp_auth_cache.c): a client opened later with the same credentials, as
 * every round of `watch` does, reuses the token until its refresh time. Tokens, keys, refresh tokens,
 * client secrets, subject tokens and credential-source headers never appear
 * in diagnostics: messages quoted from a token endpoint are scrubbed of
 * them, too. Every URL a credentials file names is checked
 * (tpf_gcp_credential_url_check) before anything is sent.
 */
#ifndef TPF_GCP_AUTH_H
#define TPF_GCP_AUTH_H

#include "google/gcp_http.h"
#include "google/gcp_retry.h"
#include "google/gapi.h"
#include "util/diag.h"

struct tpf_gcp_auth;

/* What the fleet file says about credentials; every field may be NULL. */
struct tpf_gcp_auth_config {
	const char *credentials;   /* provider.gcp.credentials (resolved path) */
	const char *impersonate;   /* provider.gcp.impersonate_service_account (an email);
				    * NULL: $TPUFORM_IMPERSONATE_SERVICE_ACCOUNT */
	const char *quota_project; /* provider.gcp.quota_project; NULL:
				    * $GOOGLE_CLOUD_QUOTA_PROJECT, then the file's */
};

/*
 * Pick the credential source. `cfg` may be NULL (all defaults). `http` and
 * `s` are borrowed and must outlive the result. A named file that is
 * missing or malformed, or a URL in it that the policy refuses, is an
 * error here; no request is sent until a token is first needed.
 */
int tpf_gcp_auth_open(struct tpf_gcp_auth **out, struct tpf_gcp_http *http,
		      const struct tpf_gcp_settings *s, const struct tpf_gcp_auth_config *cfg,
		      struct tpf_diags *d);
/* Wipes and frees cached secrets. NULL ok. */
void tpf_gcp_auth_free(struct tpf_gcp_auth *a);

/* Where credentials come from, for messages: "service account key
 * 'key.json' (sa@p.iam.gserviceaccount.com)", followed by ", impersonating
 * EMAIL" when impersonation is on. Borrowed; no secrets. */
const char *tpf_gcp_auth_source(const struct tpf_gcp_auth *a);

/* The quota project sent as x-goog-user-project, or NULL. Borrowed. */
const char *tpf_gcp_auth_quota_project(const struct tpf_gcp_auth *a);
/* The header line "x-goog-user-project: P" for API calls, or NULL. Borrowed. */
const char *tpf_gcp_auth_quota_header(const struct tpf_gcp_auth *a);

/* The service account the API sees when it is known without a request:
 * the impersonated one, else a key's client_email; NULL otherwise
 * (authorized user, metadata server, external account without
 * impersonation, TPUFORM_ACCESS_TOKEN): then OS Login asks the tokeninfo
 * endpoint (gcp_oslogin.h). Borrowed. */
const char *tpf_gcp_auth_email(const struct tpf_gcp_auth *a);

/*
 * A valid access token: the cached one, or a fresh one. *token is a copy
 * the caller frees with tpf_gcp_auth_token_free. Thread-safe.
 * Errors: TPF_ERROR (rejected credentials, no credentials found) or
 * TPF_ETRANSIENT (token endpoint kept failing), with a diagnostic.
 */
int tpf_gcp_auth_token(struct tpf_gcp_auth *a, char **token, struct tpf_diags *d);
/* Wipe and free a token returned by tpf_gcp_auth_token. NULL ok. */
void tpf_gcp_auth_token_free(char *token);

/*
 * The API rejected `used` (HTTP 401): forget it if it is still the cached
 * token, so the next tpf_gcp_auth_token fetches a new one. Returns 1 if a
 * new token can be fetched (0 for TPUFORM_ACCESS_TOKEN without
 * impersonation: it cannot be refreshed).
 */
int tpf_gcp_auth_invalidate(struct tpf_gcp_auth *a, const char *used);

/* What to do when the API rejects this source's tokens (HTTP 401), as a
 * diagnostic detail; for TPUFORM_ACCESS_TOKEN it says that the variable
 * cannot be refreshed and how to set a fresh one. Borrowed. */
const char *tpf_gcp_auth_reject_hint(const struct tpf_gcp_auth *a);

/*
 * The credentials as a Google REST client's token source (google/gapi.h):
 * token, invalidate, the quota project header and the reject hint of `a`
 * (borrowed: a outlives every client it is plugged into).
 */
void tpf_gcp_auth_creds(struct tpf_gcp_auth *a, struct tpf_gapi_creds *out);

/* Forget every token of the process-wide cache (gcp_auth_cache.c), so
 * that the next client fetches its own. For tests. */
void tpf_gcp_auth_cache_clear(void);

/* Tokens this object fetched so far (for tests; one taken from the
 * process-wide cache is not counted). */
long tpf_gcp_auth_fetches(struct tpf_gcp_auth *a);

/*
 * When a token obtained at `obtained` (monotonic seconds) with `lifetime`
 * seconds to live should be replaced: obtained + lifetime - margin, but
 * never earlier than half its lifetime (a short-lived token is still used).
 */
double tpf_gcp_token_refresh_at(double obtained, double lifetime, double margin);
/* 1 if a cached token may still be used at `now`. */
int tpf_gcp_token_fresh(const char *token, double refresh_at, double now);

#endif
