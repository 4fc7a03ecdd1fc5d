/*
 * The Google services next to the Cloud TPU API that SSH access needs:
 *   - Compute Engine projects.get, for the project's metadata
 *     (commonInstanceMetadata: enable-oslogin, ssh-keys), which gcloud
 *     reads before it writes a key;
 *   - the OAuth2 tokeninfo endpoint, for the email of the account the
 *     tokens act for (OS Login names users by email);
 *   - OS Login users.importSshPublicKey
 *     (POST https://oslogin.googleapis.com/v1/users/EMAIL:importSshPublicKey
 *     ?projectId=P, body SshPublicKey {key, expirationTimeUsec}; the answer's
 *     loginProfile.posixAccounts[] names the POSIX user to log in as).
 *
 * Each endpoint can be overridden for tests with an environment variable
 * (TPUFORM_COMPUTE_ENDPOINT, TPUFORM_TOKENINFO_ENDPOINT,
 * TPUFORM_OSLOGIN_ENDPOINT) under the TPU endpoint's policy
 * (google/gcp_endpoint.h: https, or http to loopback only). Requests go through
 * the TPU client's HTTP engine, token and retries (gcp_client.h).
 */
#ifndef TPF_GCP_OSLOGIN_H
#define TPF_GCP_OSLOGIN_H

#include <jansson.h>
#include "providers/gcp/gcp_client.h"
#include "util/diag.h"

#define TPF_GCP_DEFAULT_COMPUTE_ENDPOINT "https://compute.googleapis.com"
#define TPF_GCP_DEFAULT_OSLOGIN_ENDPOINT "https://oslogin.googleapis.com"
/* Google's token information endpoint, as google-auth-library-nodejs
 * (OAuth2Client.getTokenInfo: GOOGLE_TOKEN_INFO_URL) calls it: a POSTed
 * form "access_token=...", answered with {"email", "scope", ...}; "email"
 * only when the token carries the userinfo.email scope. */
#define TPF_GCP_DEFAULT_TOKENINFO "https://oauth2.googleapis.com/tokeninfo"

/* Lifetime of a key imported with OS Login, seconds (TPUFORM_OSLOGIN_TTL
 * overrides it): long enough for one apply or one watch round, which
 * imports again. */
#define TPF_GCP_OSLOGIN_TTL (24 * 3600.0)

/*
 * The endpoint in effect: $env when set, else `fallback`, checked with
 * tpf_gcp_endpoint_check (`what` names it). *out: caller frees.
 */
int tpf_gcp_service_endpoint(const char *env, const char *fallback, const char *what, char **out,
			     struct tpf_diags *d);

/*
 * The project's metadata (Compute projects.get, commonInstanceMetadata) as
 * an object of strings (*out: new reference). Errors as gcp_client.h.
 */
int tpf_gcp_project_metadata(struct tpf_gcp_client *c, json_t **out, struct tpf_diags *d);

/*
 * The email of the account the client's tokens act for: a service account
 * key's client_email, else what the tokeninfo endpoint says of the current
 * token (POSTed as a form, never in a URL). *out: caller frees. TPF_ERROR
 * with a hint when neither names one (the token lacks the userinfo.email
 * scope).
 */
int tpf_gcp_login_email(struct tpf_gcp_client *c, char **out, struct tpf_diags *d);

/*
 * OS Login: import public key "TYPE BASE64" for account `email` with
 * expirationTimeUsec now + ttl seconds, into the client's project; *user:
 * the login profile's primary POSIX account's username (else the first
 * one's). Caller frees. Errors as gcp_client.h; an answer without a POSIX
 * account is TPF_ERROR.
 */
int tpf_gcp_oslogin_import(struct tpf_gcp_client *c, const char *email, const char *public_key,
			   double ttl, char **user, struct tpf_diags *d);

/* The username of the primary POSIX account of an ImportSshPublicKeyResponse
 * (else the first account's); borrowed from resp, NULL if none. */
const char *tpf_gcp_oslogin_username(json_t *resp);

#endif
