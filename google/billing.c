/*
 * Cloud Billing Catalog API calls (google/billing.h), through the Google
 * REST client (gapi.h) and its pagination.
 */
#include "google/billing.h"
#include "google/gclient.h"
#include "google/gcp_errors.h"
#include "google/gcp_http.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct tpf_billing {
	char *endpoint;
	int keyed; /* 1: an API key in a header (gapi.h), no token */
	struct tpf_gclient c;
};

static char *billing_hint(void *ctx, const struct tpf_gcp_error *e, enum tpf_gcp_class cls)
{
	(void)ctx;
	if (cls == TPF_GCP_AUTH && e->http != 403)
		return NULL;
	if (e->http == 403 || e->http == 400)
		return xstrdup("The Cloud Billing API (cloudbilling.googleapis.com) must be enabled in "
			       "the project the credentials bill to (the quota project), or give an "
			       "API key of a project where it is, in TPUFORM_BILLING_API_KEY. Until "
			       "then report uses the fleet file's prices: and the built-in table "
			       "(tpuform prices shows which).");
	return xstrdup("");
}

int tpf_billing_open(struct tpf_billing **out, const struct tpf_gcp_auth_config *auth,
		     struct tpf_diags *d)
{
	struct tpf_billing *b = xcalloc(1, sizeof(*b));
	*out = NULL;
	const char *key = getenv("TPUFORM_BILLING_API_KEY");
	b->keyed = key && *key;
	if (tpf_gclient_endpoint("TPUFORM_BILLING_ENDPOINT", TPF_BILLING_DEFAULT_ENDPOINT,
				 "Cloud Billing endpoint", &b->endpoint, d) < 0 ||
	    (b->keyed ? tpf_gclient_open_anonymous(&b->c, b->endpoint, billing_hint, d)
		      : tpf_gclient_open(&b->c, b->endpoint, auth, billing_hint, d)) < 0) {
		tpf_billing_free(b);
		return TPF_ERROR;
	}
	if (b->keyed)
		tpf_gapi_set_api_key(b->c.api, key);
	*out = b;
	return 0;
}

void tpf_billing_free(struct tpf_billing *b)
{
	if (!b)
		return;
	tpf_gclient_close(&b->c);
	free(b->endpoint);
	free(b);
}

const char *tpf_billing_endpoint(const struct tpf_billing *b)
{
	return b->endpoint;
}

int tpf_billing_keyed(const struct tpf_billing *b)
{
	return b->keyed;
}

static int one_page(json_t *page, void *ctx, struct tpf_diags *d)
{
	(void)d;
	json_t *skus = json_object_get(page, "skus");
	if (json_is_array(skus))
		json_array_extend(ctx, skus);
	return 0;
}

int tpf_billing_skus(struct tpf_billing *b, const char *service, json_t *skus,
		     struct tpf_diags *d)
{
	char *s = tpf_gcp_escape(service);
	char *url = xasprintf("%s/v1/services/%s/skus?pageSize=%d", b->endpoint, s,
			      TPF_BILLING_PAGE_SIZE);
	char *what = xasprintf("listing the SKUs of service %s in the Cloud Billing Catalog", service);
	int rc = tpf_gapi_pages(b->c.api, url, what, NULL, 0, one_page, skus, d);
	free(what);
	free(url);
	free(s);
	return rc < 0 ? rc : 0;
}
