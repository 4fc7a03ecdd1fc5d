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

/* Where a URL inside a credentials file may point. */
enum tpf_gcp_cred_url {
	TPF_GCP_URL_STS,            /* token_url: the Security Token Service */
	TPF_GCP_URL_IAMCREDENTIALS, /* service_account_impersonation_url, and
				     * TPUFORM_IAMCREDENTIALS_ENDPOINT */
	TPF_GCP_URL_SOURCE,         /* credential_source.url: where the subject token is read */
};

/* Google's production Security Token Service and IAM Credentials roots. */
#define TPF_GCP_DEFAULT_STS_URL "https://sts.googleapis.com/v1/token"
#define TPF_GCP_DEFAULT_IAMCREDENTIALS "https://iamcredentials.googleapis.com"

/*
 * Check a URL taken from a credentials file, so that a file cannot send
 * tokens anywhere else (docs/providers.md, "Google Cloud credentials"):
 *  - everything tpf_gcp_endpoint_check refuses is refused here too (plain
 *    http except to loopback, user:password parts, fragments), and so is a
 *    query, except in a credential source URL (GitHub's has one);
 *  - a token_url's https host must be a Security Token Service host and an
 *    impersonation URL's an IAM Credentials host, matched case-insensitively
 *    with the patterns of golang.org/x/oauth2 google/internal/externalaccount
 *    basecredentials.go (validTokenURLPatterns, validImpersonateURLPatterns;
 *    the same four in google-auth-library-java ExternalAccountCredentials):
 *    sts.googleapis.com, X.sts.googleapis.com, sts.X.googleapis.com,
 *    X-sts.googleapis.com (X one DNS label), plus Google's regional form
 *    sts.REGION.rep.googleapis.com; likewise for iamcredentials;
 *  - a loopback host is accepted for every kind (the emulator);
 *  - a credential source URL may be any https host: it is the identity
 *    provider's (GitHub's ID-token endpoint is on githubusercontent.com),
 *    and it receives only the headers the same file names, never a token
 *    tpuform obtained. Google's libraries do not restrict it either.
 * `what` names the URL in messages ("token_url in 'cred.json'").
 * Returns 0 or TPF_ERROR with a diagnostic.
 */
int tpf_gcp_credential_url_check(const char *url, enum tpf_gcp_cred_url kind, const char *what,
				 struct tpf_diags *d);

/* 1 if `host` (no port) matches the host patterns of `kind` described
 * above (loopback not included), else 0. */
int tpf_gcp_google_host_ok(const char *host, enum tpf_gcp_cred_url kind);

/*
 * The API endpoint in effect: `configured` (provider.gcp.endpoint), else
 * $TPUFORM_TPU_ENDPOINT, else TPF_GCP_DEFAULT_ENDPOINT, checked with
 * tpf_gcp_endpoint_check. *out: caller frees.
 */
int tpf_gcp_endpoint_resolve(const char *configured, char **out, struct tpf_diags *d);

#endif
