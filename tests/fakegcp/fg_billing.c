/*
 * The Cloud Billing Catalog API v1 subset `tpuform prices -refresh` reads
 * (tests/fakegcp/README.md "Cloud Billing Catalog"): services.skus.list,
 * GET /v1/services/{service}/skus, in the API's shape
 * (https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list:
 * skus[] of name, skuId, description, category {serviceDisplayName,
 * resourceFamily, resourceGroup, usageType}, serviceRegions[],
 * pricingInfo[] {effectiveTime, summary, pricingExpression {usageUnit,
 * usageUnitDescription, baseUnit, baseUnitDescription,
 * baseUnitConversionFactor, displayQuantity, tieredRates[]
 * {startUsageAmount, unitPrice {currencyCode, units, nanos}}},
 * currencyConversionRate}, serviceProviderName; nextPageToken), pages of
 * pageSize (capped by --page-size) with an opaque pageToken. Zero values
 * are left out, as proto3 JSON leaves them out (a first tier's
 * startUsageAmount, a price's nanos).
 *
 * A fixed catalog of test data: TPU SKUs of both services (on-demand and
 * spot, per chip for v5e, v5p, v6e and TPU7x, per 8 TensorCores for v2, v3
 * and v4, a v2 device and a v2 Pod SKU), a commitment, a TPU SKU that names
 * no generation, one priced in euros, one with two tiers, and SKUs of
 * other resources. The prices are made up for tests, not Google's.
 * An API key (key= or the X-goog-api-key header) must be --billing-api-key
 * when that is set;
 * --billing-disabled answers 403 SERVICE_DISABLED as a project without the
 * API enabled gets.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

#define COMPUTE "6F81-5844-456A"
#define TPU "E000-3F24-B8AA"
#define PAGE_MAX 5000

struct sku {
	const char *service, *id, *desc, *family, *group, *usage;
	const char *regions[3];
	const char *currency;
	long units, nanos;
	const char *unit; /* usageUnit */
	long tier2_from;  /* > 0: a second tier from this usage, at half price */
};

/* In skuId order within each service (the page token is the last skuId). */
static const struct sku skus[] = {
	{ COMPUTE, "0A1B-0000-0001", "N1 Predefined Instance Core running in Americas", "Compute",
	  "N1Standard", "OnDemand", { "us-central1", "us-east5" }, "USD", 0, 31611000, "h", 0 },
	{ COMPUTE, "0A1B-0000-0002", "TpuV5e chip running in Americas", "Compute", "TPU",
	  "OnDemand", { "us-central1", "us-west4" }, "USD", 1, 200000000, "h", 0 },
	{ COMPUTE, "0A1B-0000-0003", "Preemptible TpuV5e chip running in Americas", "Compute", "TPU",
	  "OnDemand", { "us-central1", "us-west4" }, "USD", 0, 480000000, "h", 0 },
	{ COMPUTE, "0A1B-0000-0004", "TpuV5p chip running in Americas", "Compute", "TPU", "OnDemand",
	  { "us-east5" }, "USD", 4, 200000000, "h", 0 },
	{ COMPUTE, "0A1B-0000-0005", "TpuV6e chip running in Americas", "Compute", "TPU", "OnDemand",
	  { "us-east5", "europe-west4" }, "USD", 2, 700000000, "h", 1000 },
	{ COMPUTE, "0A1B-0000-0006", "Tpu7x chip running in Americas", "Compute", "TPU", "OnDemand",
	  { "us-central1" }, "USD", 5, 0, "h", 0 },
	{ COMPUTE, "0A1B-0000-0007", "Commitment v1: TpuV5e in Americas for 1 Year", "Compute",
	  "TPU", "Commit1Yr", { "us-central1" }, "USD", 0, 840000000, "h", 0 },
	{ COMPUTE, "0A1B-0000-0008", "Tpu Interconnect Egress between regions", "Network", "TPU",
	  "OnDemand", { "us-central1" }, "USD", 0, 10000000, "GiBy", 0 },
	{ COMPUTE, "0A1B-0000-0009", "TpuV6e chip running in Paris", "Compute", "TPU", "OnDemand",
	  { "europe-west9" }, "EUR", 2, 900000000, "h", 0 },
	{ COMPUTE, "0A1B-0000-000A", "Storage PD Capacity", "Storage", "PDStandard", "OnDemand",
	  { "us-central1" }, "USD", 0, 40000000, "GiBy.mo", 0 },
	{ TPU, "0B2C-0000-0001", "Tpu-v2 running in Americas", "Compute", "TPU", "OnDemand",
	  { "us-central1" }, "USD", 4, 500000000, "h", 0 },
	{ TPU, "0B2C-0000-0002", "Tpu-v2 Pod running in Americas", "Compute", "TPU", "OnDemand",
	  { "us-central1" }, "USD", 6, 0, "h", 0 },
	{ TPU, "0B2C-0000-0003", "Tpu-v4 Pod running in Americas", "Compute", "TPU", "OnDemand",
	  { "us-central2" }, "USD", 12, 880000000, "h", 0 },
	{ TPU, "0B2C-0000-0004", "Preemptible Tpu-v4 Pod running in Americas", "Compute", "TPU",
	  "OnDemand", { "us-central2" }, "USD", 3, 860000000, "h", 0 },
};
#define NSKUS (sizeof(skus) / sizeof(skus[0]))

/* {currencyCode, units, nanos}, zero values left out; units an int64 string. */
static json_t *money(const char *currency, long units, long nanos)
{
	json_t *m = json_pack("{s:s}", "currencyCode", currency);
	if (units) {
		char u[24];
		snprintf(u, sizeof(u), "%ld", units);
		json_object_set_new(m, "units", json_string(u));
	}
	if (nanos)
		json_object_set_new(m, "nanos", json_integer(nanos));
	return m;
}

static json_t *pricing(const struct sku *s)
{
	int hourly = !strcmp(s->unit, "h");
	json_t *tiers = json_pack("[{s:o}]", "unitPrice", money(s->currency, s->units, s->nanos));
	if (s->tier2_from)
		json_array_append_new(tiers, json_pack("{s:I,s:o}", "startUsageAmount",
						       (json_int_t)s->tier2_from, "unitPrice",
						       money(s->currency, s->units / 2,
							     s->nanos / 2)));
	json_t *expr = json_pack("{s:s,s:s,s:s,s:s,s:f,s:I,s:o}", "usageUnit", s->unit,
				 "usageUnitDescription", hourly ? "hour" : s->unit, "baseUnit",
				 hourly ? "s" : "By", "baseUnitDescription", hourly ? "second" : "byte",
				 "baseUnitConversionFactor", hourly ? 3600.0 : 1.0, "displayQuantity",
				 (json_int_t)1, "tieredRates", tiers);
	return json_pack("[{s:s,s:s,s:o,s:I}]", "effectiveTime", "2026-11-28T08:00:00.000Z",
			 "summary", "", "pricingExpression", expr, "currencyConversionRate",
			 (json_int_t)1);
}

static json_t *sku_json(const struct sku *s)
{
	json_t *regions = json_array();
	for (int i = 0; i < 3 && s->regions[i]; i++)
		json_array_append_new(regions, json_string(s->regions[i]));
	char *name = xasprintf("services/%s/skus/%s", s->service, s->id);
	json_t *o = json_pack("{s:s,s:s,s:s,s:{s:s,s:s,s:s,s:s},s:o,s:o,s:s}", "name", name,
			      "skuId", s->id, "description", s->desc, "category",
			      "serviceDisplayName",
			      strcmp(s->service, COMPUTE) ? "Cloud TPU" : "Compute Engine",
			      "resourceFamily", s->family, "resourceGroup", s->group, "usageType",
			      s->usage, "serviceRegions", regions, "pricingInfo", pricing(s),
			      "serviceProviderName", "Google");
	free(name);
	return o;
}

static void list(struct fg_req *r, const char *service)
{
	int size;
	char *after;
	if (fg_page_params(r, &size, &after) < 0)
		return;
	if (size > PAGE_MAX)
		size = PAGE_MAX;
	json_t *page = json_array();
	const char *last = NULL;
	size_t i = 0;
	for (; i < NSKUS; i++) {
		if (strcmp(skus[i].service, service) || (after && strcmp(skus[i].id, after) <= 0))
			continue;
		if ((int)json_array_size(page) == size)
			break;
		json_array_append_new(page, sku_json(&skus[i]));
		last = skus[i].id;
	}
	int more = 0;
	for (; i < NSKUS; i++)
		more |= !strcmp(skus[i].service, service);
	json_t *o = json_pack("{s:o}", "skus", page);
	if (more && last) {
		char *t = fg_page_token(last);
		json_object_set_new(o, "nextPageToken", json_string(t));
		free(t);
	} else {
		json_object_set_new(o, "nextPageToken", json_string(""));
	}
	free(after);
	fg_reply_json(r, 200, o);
}

/* The key, the project's API switch, the currency: 0 when the request may go on. */
static int refused(struct fg_req *r)
{
	/* Google takes the key as key= or in the X-goog-api-key header */
	const char *key = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "key");
	if (!key)
		key = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-goog-api-key");
	const char *cur = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "currencyCode");
	if (key && fg_opt.billing_key && strcmp(key, fg_opt.billing_key)) {
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
			       "API key not valid. Please pass a valid API key.");
	} else if (!key && fg_auth_check(r) < 0) {
		return 1; /* answered 401 */
	} else if (fg_opt.billing_disabled) {
		fg_reply_error(r, 403, "PERMISSION_DENIED", NULL,
			       "Cloud Billing API has not been used in project %s before or it is "
			       "disabled. Enable it by visiting https://console.developers.google.com/"
			       "apis/api/cloudbilling.googleapis.com/overview?project=%s then retry.",
			       fg_opt.project_number ? fg_opt.project_number : "1234",
			       fg_opt.project_number ? fg_opt.project_number : "1234");
	} else if (cur && *cur && strcmp(cur, "USD")) {
		fg_bad_request(r, "currency_code", "Only USD is emulated.");
	} else {
		return 0;
	}
	return 1;
}

int fg_billing_serve(struct fg_req *r)
{
	static const char prefix[] = "/v1/services/";
	if (strncmp(r->path, prefix, sizeof(prefix) - 1))
		return 0;
	const char *rest = r->path + sizeof(prefix) - 1, *slash = strchr(rest, '/');
	char *service = slash ? xstrndup(rest, (size_t)(slash - rest)) : xstrdup(rest);
	if (refused(r)) {
		/* answered */
	} else if (!slash || strcmp(slash, "/skus")) {
		fg_reply_error(r, 404, "NOT_FOUND", NULL,
			       "%s %s: the requested URL was not found on this server.", r->method,
			       r->path);
	} else if (strcmp(r->method, "GET")) {
		fg_reply_error(r, 405, "METHOD_NOT_ALLOWED", NULL, "Method %s is not allowed.",
			       r->method);
	} else if (strcmp(service, COMPUTE) && strcmp(service, TPU)) {
		fg_reply_error(r, 404, "NOT_FOUND", NULL, "Service services/%s not found.", service);
	} else {
		list(r, service);
	}
	free(service);
	return 1;
}
