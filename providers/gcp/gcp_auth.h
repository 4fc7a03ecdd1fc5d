/*
 * OAuth2 access tokens for the Cloud TPU API, found in the Application
 * Default Credentials order (gcp-tpu-api.md section 7, google-auth-library
 * _default.py):
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
 * key's token_uri) and "authorized_user" files (refresh-token grant at
 * their token_uri, default https://oauth2.googleapis.com/token).
 *
 * Tokens are cached and refreshed `token_margin` seconds before expiry (at
 * most half the token's lifetime early); one refresh at a time across
 * threads, the others wait for its result. Tokens, keys, refresh tokens
 * and client secrets never appear in diagnostics: messages quoted from a
 * token endpoint are scrubbed of them, too.
 */
#ifndef TPF_GCP_AUTH_H
#define TPF_GCP_AUTH_H

#include "providers/gcp/gcp_http.h"
#include "providers/gcp/gcp_retry.h"
#include "util/diag.h"

struct tpf_gcp_auth;

/*
 * Pick the credential source. `credentials` is provider.gcp.credentials
 * (resolved path) or NULL. `http` and `s` are borrowed and must outlive the
 * result. A named file that is missing or malformed is an error here; the
 * metadata server is only contacted when a token is first needed.
 */
int tpf_gcp_auth_open(struct tpf_gcp_auth **out, struct tpf_gcp_http *http,
		      const struct tpf_gcp_settings *s, const char *credentials,
		      struct tpf_diags *d);
/* Wipes and frees cached secrets. NULL ok. */
void tpf_gcp_auth_free(struct tpf_gcp_auth *a);

/* Where credentials come from, for messages: "service account key
 * 'key.json' (sa@p.iam.gserviceaccount.com)". Borrowed; no secrets. */
const char *tpf_gcp_auth_source(const struct tpf_gcp_auth *a);

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
 * new token can be fetched (0 for TPUFORM_ACCESS_TOKEN).
 */
int tpf_gcp_auth_invalidate(struct tpf_gcp_auth *a, const char *used);

/* What to do when the API rejects this source's tokens (HTTP 401), as a
 * diagnostic detail. Borrowed static string. */
const char *tpf_gcp_auth_reject_hint(const struct tpf_gcp_auth *a);

/* The account the tokens act for when the credentials name it (a service
 * account key's client_email), else NULL: ask the tokeninfo endpoint
 * (gcp_oslogin.h). Borrowed. */
const char *tpf_gcp_auth_email(const struct tpf_gcp_auth *a);

/* Tokens fetched so far (for tests). */
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
