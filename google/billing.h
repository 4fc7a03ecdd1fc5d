/*
 * A small Cloud Billing Catalog API v1 client: services.skus.list
 * (GET /v1/services/{service}/skus, https://cloud.google.com/billing/docs/
 * reference/rest/v1/services.skus/list): "Lists all publicly available
 * SKUs for a given cloud service", pages of at most 5,000 (pageSize,
 * pageToken, nextPageToken). Prices are list prices in the currency the
 * request names (US dollars when it names none).
 *
 * Credentials: the fleet's (google/gcp_auth.h), or an API key from
 * $TPUFORM_BILLING_API_KEY, which the API also takes (sent in the
 * X-goog-api-key header, gapi.h, with no token: not in the URL). Endpoint: $TPUFORM_BILLING_ENDPOINT or
 * TPF_BILLING_DEFAULT_ENDPOINT, checked by tpf_gcp_endpoint_check (https,
 * or http to a loopback host only). Every request goes through the one
 * REST client (gapi.h): its retries, its error messages (the API's message
 * and status) and a hint of this API's own.
 */
#ifndef TPF_GOOGLE_BILLING_H
#define TPF_GOOGLE_BILLING_H

#include <jansson.h>
#include "google/gcp_auth.h"
#include "util/diag.h"

#define TPF_BILLING_DEFAULT_ENDPOINT "https://cloudbilling.googleapis.com"
/* The services that list TPU SKUs (https://cloud.google.com/skus): Compute
 * Engine (v5e, v5p, v6e, TPU7x) and Cloud TPU (v2, v3, v4). */
#define TPF_BILLING_SERVICE_COMPUTE "6F81-5844-456A"
#define TPF_BILLING_SERVICE_TPU "E000-3F24-B8AA"
/* services.skus.list's largest page. */
#define TPF_BILLING_PAGE_SIZE 5000

struct tpf_billing;

/*
 * Open a client: with an API key when $TPUFORM_BILLING_API_KEY is set,
 * else with auth (may be all NULL: application default credentials). No
 * request yet. 0, or TPF_ERROR with a diagnostic (a bad endpoint names
 * the variable). Free with tpf_billing_free.
 */
int tpf_billing_open(struct tpf_billing **out, const struct tpf_gcp_auth_config *auth,
		     struct tpf_diags *d);
void tpf_billing_free(struct tpf_billing *b);
/* The endpoint in use (borrowed), and 1 when an API key is used. */
const char *tpf_billing_endpoint(const struct tpf_billing *b);
int tpf_billing_keyed(const struct tpf_billing *b);

/*
 * Every SKU of service ("6F81-5844-456A"), each page's skus[] appended to
 * the array skus (borrowed). 0, or an error with the API's message and
 * status in a diagnostic; skus then holds the pages read before it.
 */
int tpf_billing_skus(struct tpf_billing *b, const char *service, json_t *skus,
		     struct tpf_diags *d);

#endif
