/*
 * Where the client may send requests (and bearer tokens).
 *
 * Policy: https to any host; plain http only to loopback hosts
 * (127.0.0.0/8, ::1, "localhost"), which is what an emulator needs. Anything
 * else would put OAuth2 tokens on the wire in clear text. URLs are parsed
 * with libcurl's URL API (curl_url), never by hand.
 */
#ifndef TPF_GCP_ENDPOINT_H
#define TPF_GCP_ENDPOINT_H

#include "util/diag.h"

/* The production TPU endpoint (discovery rootUrl without the slash). */
#define TPF_GCP_DEFAULT_ENDPOINT "https://tpu.googleapis.com"
/* Google's OAuth2 token endpoint (service_account.py _GOOGLE_OAUTH2_TOKEN_ENDPOINT). */
#define TPF_GCP_DEFAULT_TOKEN_URI "https://oauth2.googleapis.com/token"

/* 1 if host (as in a URL, IPv6 with or without brackets) is a loopback
 * address or "localhost", else 0. */
int tpf_gcp_host_is_loopback(const char *host);

/*
 * Check `url` against the policy. `what` names it in messages ("endpoint",
 * "token_uri"). On success returns 0 and, if normalized is not NULL, sets
 * *normalized to the URL without a trailing slash (caller frees). Refused:
 * malformed URLs, schemes other than http/https, http to non-loopback,
 * URLs with a query, fragment or user:password part. TPF_ERROR otherwise.
 */
int tpf_gcp_endpoint_check(const char *url, const char *what, char **normalized,
			   struct tpf_diags *d);

/*
 * The API endpoint in effect: `configured` (provider.gcp.endpoint), else
 * $TPUFORM_TPU_ENDPOINT, else TPF_GCP_DEFAULT_ENDPOINT, checked with
 * tpf_gcp_endpoint_check. *out: caller frees.
 */
int tpf_gcp_endpoint_resolve(const char *configured, char **out, struct tpf_diags *d);

#endif
