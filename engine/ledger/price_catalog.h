/*
 * Prices from Google's Cloud Billing Catalog (google/billing.h): which SKUs
 * are TPU chip-hours, of which generation, class and region, and the price
 * table `tpuform prices -refresh` stores beside the state and `report` and
 * budgets use first (engine/ledger/report.h tpf_prices_find).
 *
 * How a SKU is read (docs/ledger.md "Prices"; as SkyPilot's
 * sky/catalog/data_fetchers/fetch_gcp.py and dstack's gpuhunt
 * src/gpuhunt/providers/gcp.py read them): category.resourceGroup "TPU",
 * category.usageType "OnDemand" or "Preemptible" (commitments are left
 * out); the generation from the description ("TpuV5e", "TpuV5p",
 * "TpuV6e", "Tpu7x", "Tpu-v4 Pod"); spot when the description or the
 * usage type says "Preemptible"; the price is the tier starting at usage 0
 * of the newest pricingInfo, units + nanos / 1e9, per hour (usageUnit
 * "h"). v5e, v5p, v6e and TPU7x SKUs price one chip; v2, v3 and v4 SKUs
 * price 8 TensorCores, 4 chips (a v2-8 or v3-8 device; a v4 Pod's host),
 * so their price is divided by 4. For v2 and v3 the device SKU wins over
 * the Pod one. Only US dollars are kept: a SKU in another currency is
 * left out with a note. List prices: committed-use and negotiated prices
 * are out of scope.
 */
#ifndef TPF_ENGINE_PRICE_CATALOG_H
#define TPF_ENGINE_PRICE_CATALOG_H

#include <jansson.h>
#include "engine/ledger/report.h"
#include "util/diag.h"

/* What the catalog says of one TPU SKU. */
struct tpf_sku_price {
	char chip[16];     /* "v5e", "v5p", "v6e", "tpu7x", "v4", ... */
	const char *class; /* "on-demand" or "spot" (static) */
	double usd_per_chip_hour;
	int pod;           /* a Pod SKU (v2, v3: the device SKU wins) */
};

/*
 * Read one SKU (a Sku object of services.skus.list, borrowed): 1 and *m
 * for a TPU SKU tpuform prices; 0 for a SKU of something else (another
 * resource group, a commitment: *why NULL); -1 for a TPU SKU left out,
 * *why saying why (static: another currency, not priced per hour, no tier
 * from 0, no TPU generation in its description).
 */
int tpf_sku_match(json_t *sku, struct tpf_sku_price *m, const char **why);

/*
 * The price table of skus (an array of Sku objects, borrowed), fetched at
 * `fetched` (wall seconds) from endpoint (may be NULL): a new object
 * {v: 1, source, endpoint, fetched (RFC 3339), note, skus_read,
 * rows [{chip, class, region, usd_per_chip_hour, sku, description, pod}],
 * skipped [{sku, description, why}]}, one row per SKU and service region.
 */
json_t *tpf_price_catalog_build(json_t *skus, double fetched, const char *endpoint);

/* Put the catalog table doc (stolen; NULL: none) into p: its rows become
 * p->catalog, borrowing from it. */
void tpf_prices_use_catalog(struct tpf_prices *p, json_t *doc);

/*
 * `tpuform prices`: every row of the table in use, in the order tpf_prices_find
 * tries them (catalog, fleet file, built-in), each with chip, class,
 * region (null: every region), usd_per_chip_hour, source ("catalog", "fleet
 * file", "built-in", "built-in, unverified"), date, and the catalog's sku;
 * with the catalog's fetch time and the rows it skipped. New reference.
 */
json_t *tpf_prices_table(const struct tpf_prices *p);

struct tpf_fleet;
/*
 * Read the catalog's TPU SKUs (both services: TPF_BILLING_SERVICE_COMPUTE,
 * TPF_BILLING_SERVICE_TPU) with f's credentials or
 * $TPUFORM_BILLING_API_KEY, build the table at now and store it beside
 * f's state (the object "<state><suffix>prices.json", local or Cloud
 * Storage; state/objstore.h). *doc: the table (new reference) on 0; an
 * error with the API's message and status otherwise (nothing stored).
 */
int tpf_price_catalog_refresh(const struct tpf_fleet *f, double now, json_t **doc,
			      struct tpf_diags *d);

/* The stored table of f (new reference), or *doc NULL and 0 when none was
 * stored; TPF_ERROR with a diagnostic when it cannot be read or parsed. */
int tpf_price_catalog_load(const struct tpf_fleet *f, json_t **doc, struct tpf_diags *d);

/*
 * The prices `report` and budgets use: f's `prices:` (tpf_prices_from_fleet)
 * and the stored catalog when there is one. A catalog that cannot be read
 * is a warning in d (may be NULL), never an error: the rest still prices.
 * Release with tpf_prices_release.
 */
void tpf_prices_load(const struct tpf_fleet *f, struct tpf_prices *out, struct tpf_diags *d);

#endif
