/*
 * A REST client (google/gapi.h) with an HTTP engine and credentials of its
 * own: what a small client of one Google API opens (google/gcs.c,
 * google/monitoring.c). Settings from TPUFORM_GCP_* (gcp_retry.h), the
 * credentials of google/gcp_auth.h, the caller's hint for its API's errors.
 */
#ifndef TPF_GOOGLE_GCLIENT_H
#define TPF_GOOGLE_GCLIENT_H

#include "google/gapi.h"
#include "google/gcp_auth.h"
#include "google/gcp_retry.h"

struct tpf_gclient {
	struct tpf_gcp_settings s;
	struct tpf_gcp_http *http;
	struct tpf_gcp_auth *auth;
	struct tpf_gapi *api; /* the calls go here */
};

/*
 * Open *c (zeroed here) for endpoint (borrowed: it must outlive *c), with
 * credentials auth (may be NULL: defaults) and hint (may be NULL). No
 * request is sent. 0, or TPF_ERROR with a diagnostic (*c then holds
 * nothing). Close with tpf_gclient_close.
 */
int tpf_gclient_open(struct tpf_gclient *c, const char *endpoint,
		     const struct tpf_gcp_auth_config *auth, tpf_gapi_hint_fn hint,
		     struct tpf_diags *d);
/*
 * The same without credentials: no token is asked for or sent (an API
 * that takes an API key instead, google/billing.h); c->auth
 * stays NULL.
 */
int tpf_gclient_open_anonymous(struct tpf_gclient *c, const char *endpoint,
			       tpf_gapi_hint_fn hint, struct tpf_diags *d);
/*
 * An API's root: $var when set and not empty, else def; checked by
 * tpf_gcp_endpoint_check (messages name var, or what_default for def).
 * *out: normalized, caller frees. 0, or TPF_ERROR with a diagnostic.
 */
int tpf_gclient_endpoint(const char *var, const char *def, const char *what_default, char **out,
			 struct tpf_diags *d);
/* Zeroed ok. */
void tpf_gclient_close(struct tpf_gclient *c);

#endif
