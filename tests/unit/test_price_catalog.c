/*
 * Prices from the Cloud Billing Catalog (engine/ledger/price_catalog.h):
 * which SKUs are TPU chip-hours, of which generation, class and region;
 * the table built from them; and the order report prices a row in
 * (catalog, fleet file, built-in; a region the catalog does not list is
 * missing).
 */
#include "tests/unit/unit.h"
#include "engine/ledger/price_catalog.h"
#include "engine/ledger/report.h"
#include "util/timeutil.h"

#include <string.h>

/* A Sku object as services.skus.list gives it. units: an int64 string
 * (NULL: left out, as proto3 JSON leaves out 0); nanos 0: left out. */
static json_t *sku(const char *id, const char *desc, const char *group, const char *usage,
		   const char *region, const char *currency, const char *units, long nanos)
{
	json_t *price = json_pack("{s:s}", "currencyCode", currency);
	if (units)
		json_object_set_new(price, "units", json_string(units));
	if (nanos)
		json_object_set_new(price, "nanos", json_integer(nanos));
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:s},s:[s],s:[{s:s,s:{s:s,s:s,s:i,s:[{s:o}]}}]}",
			 "skuId", id, "description", desc, "category", "serviceDisplayName",
			 "Compute Engine", "resourceFamily", "Compute", "resourceGroup", group,
			 "usageType", usage, "serviceRegions", region, "pricingInfo",
			 "effectiveTime", "2026-11-28T08:00:00Z", "pricingExpression", "usageUnit",
			 "h", "usageUnitDescription", "hour", "displayQuantity", 1, "tieredRates",
			 "unitPrice", price);
}

static int match(json_t *s, struct tpf_sku_price *m, const char **why)
{
	int rc = tpf_sku_match(s, m, why);
	json_decref(s);
	return rc;
}

static void test_price_catalog__spot_and_on_demand(void)
{
	struct tpf_sku_price m;
	const char *why;
	CHECK_INT(match(sku("A", "TpuV5e chip running in Americas", "TPU", "OnDemand", "us-central1",
			    "USD", "1", 200000000),
			&m, &why),
		  1);
	CHECK_STR(m.chip, "v5e");
	CHECK_STR(m.class, "on-demand");
	CHECK(m.usd_per_chip_hour > 1.1999 && m.usd_per_chip_hour < 1.2001);
	/* Spot TPU SKUs say so in the description, their usageType is OnDemand
	 * (SkyPilot's fetch_gcp.py notes it). */
	CHECK_INT(match(sku("B", "Preemptible TpuV5e chip running in Americas", "TPU", "OnDemand",
			    "us-central1", "USD", NULL, 480000000),
			&m, &why),
		  1);
	CHECK_STR(m.class, "spot");
	CHECK(m.usd_per_chip_hour > 0.4799 && m.usd_per_chip_hour < 0.4801);
	CHECK_INT(match(sku("C", "TpuV6e chip", "TPU", "Preemptible", "us-east5", "USD", "1", 0), &m,
			&why),
		  1);
	CHECK_STR(m.class, "spot");
}

static void test_price_catalog__per_chip(void)
{
	struct tpf_sku_price m;
	const char *why;
	/* v4 is priced per Pod host of 8 TensorCores, 4 chips. */
	CHECK_INT(match(sku("D", "Tpu-v4 Pod running in Americas", "TPU", "OnDemand", "us-central2",
			    "USD", "12", 880000000),
			&m, &why),
		  1);
	CHECK_STR(m.chip, "v4");
	CHECK(m.pod);
	CHECK(m.usd_per_chip_hour > 3.2199 && m.usd_per_chip_hour < 3.2201);
	/* v5p per chip, as are v6e and TPU7x. */
	CHECK_INT(match(sku("E", "TpuV5p chip running in Americas", "TPU", "OnDemand", "us-east5",
			    "USD", "4", 200000000),
			&m, &why),
		  1);
	CHECK_STR(m.chip, "v5p");
	CHECK(m.usd_per_chip_hour > 4.1999 && m.usd_per_chip_hour < 4.2001);
	CHECK_INT(match(sku("F", "Tpu7x chip running in Americas", "TPU", "OnDemand", "us-central1",
			    "USD", "5", 0),
			&m, &why),
		  1);
	CHECK_STR(m.chip, "tpu7x");
	CHECK(m.usd_per_chip_hour == 5);
}

static void test_price_catalog__unknown_and_currency(void)
{
	struct tpf_sku_price m;
	const char *why;
	/* Not TPU chip-hours at all, or a commitment: nothing said. */
	CHECK_INT(match(sku("G", "N1 Predefined Instance Core", "N1Standard", "OnDemand",
			    "us-central1", "USD", NULL, 31611000),
			&m, &why),
		  0);
	CHECK(why == NULL);
	CHECK_INT(match(sku("H", "Commitment v1: TpuV5e in Americas for 1 Year", "TPU", "Commit1Yr",
			    "us-central1", "USD", NULL, 840000000),
			&m, &why),
		  0);
	/* A TPU SKU that names no generation: left out, saying why. */
	CHECK_INT(match(sku("I", "Tpu Interconnect Egress", "TPU", "OnDemand", "us-central1", "USD",
			    NULL, 10000000),
			&m, &why),
		  -1);
	CHECKF(why && strstr(why, "no TPU generation"), "%s", why ? why : "(null)");
	/* Another currency: left out, tpuform keeps US dollars. */
	CHECK_INT(match(sku("J", "TpuV6e chip running in Paris", "TPU", "OnDemand", "europe-west9",
			    "EUR", "2", 900000000),
			&m, &why),
		  -1);
	CHECKF(why && strstr(why, "US dollars"), "%s", why ? why : "(null)");
	/* Only the tier from 0 counts; none: left out. */
	json_t *s = sku("K", "TpuV6e chip", "TPU", "OnDemand", "us-east5", "USD", "2", 0);
	json_t *tiers = json_object_get(
		json_object_get(json_array_get(json_object_get(s, "pricingInfo"), 0), "pricingExpression"),
		"tieredRates");
	json_object_set_new(json_array_get(tiers, 0), "startUsageAmount", json_integer(100));
	CHECK_INT(match(s, &m, &why), -1);
}

/* The table of a few SKUs, into p (with fleet file rows over it). */
static void catalog(struct tpf_prices *p)
{
	json_t *skus = json_pack(
		"[o,o,o,o,o]",
		sku("A", "TpuV5e chip", "TPU", "OnDemand", "us-central1", "USD", "1", 200000000),
		sku("B", "Preemptible TpuV5e chip", "TPU", "OnDemand", "us-central1", "USD", NULL,
		    480000000),
		sku("P", "Tpu-v2 Pod running in Americas", "TPU", "OnDemand", "us-central1", "USD", "6",
		    0),
		sku("Q", "Tpu-v2 running in Americas", "TPU", "OnDemand", "us-central1", "USD", "4",
		    500000000),
		sku("J", "TpuV6e chip running in Paris", "TPU", "OnDemand", "europe-west9", "EUR", "2",
		    0));
	json_t *doc = tpf_price_catalog_build(skus, tpf_parse_rfc3339("2026-11-28T10:00:00Z"), NULL);
	json_decref(skus);
	CHECK_INT((long)json_array_size(json_object_get(doc, "rows")), 3);
	CHECK_INT((long)json_array_size(json_object_get(doc, "skipped")), 1);
	memset(p, 0, sizeof(*p));
	tpf_prices_use_catalog(p, doc);
}

static void test_price_catalog__region_and_order(void)
{
	struct tpf_prices p;
	catalog(&p);
	const struct tpf_price *x = tpf_prices_find(&p, "v5e", "on-demand", "us-central1-a");
	CHECK(x && x->from_catalog && x->usd_per_chip_hour > 1.1999 && x->usd_per_chip_hour < 1.2001);
	CHECK_STR(x ? x->sku : NULL, "A");
	char src[48];
	CHECK_STR(x ? tpf_price_source(x, src, sizeof(src)) : NULL, "catalog 2026-11-28");
	/* Preemptible takes the spot SKU. */
	x = tpf_prices_find(&p, "v5e", "preemptible", "us-central1-b");
	CHECK_STR(x ? x->sku : NULL, "B");
	/* v2: the device SKU wins over the Pod one, per chip (4 to a device). */
	x = tpf_prices_find(&p, "v2", "on-demand", "us-central1-f");
	CHECK_STR(x ? x->sku : NULL, "Q");
	CHECK(x && x->usd_per_chip_hour == 1.125);
	/* A region the catalog does not list for a chip it prices: missing,
	 * not the built-in price of every region. */
	CHECK(tpf_prices_find(&p, "v5e", "on-demand", "mars-north1-a") == NULL);
	/* A chip it does not price at all: the built-in table. */
	x = tpf_prices_find(&p, "v4", "on-demand", "us-central2-b");
	CHECK(x && !x->from_catalog && !x->from_fleet && x->usd_per_chip_hour == 3.22);
	/* The fleet file's price for a region the catalog lacks. */
	struct tpf_price over = { "v5e", "on-demand", 9.5, "the fleet file", NULL, "mars-north1",
				  1, 0, 0, NULL };
	p.over = &over;
	p.nover = 1;
	x = tpf_prices_find(&p, "v5e", "on-demand", "mars-north1-a");
	CHECK(x == &over);
	/* ... but the catalog first where it has one. */
	over.region = NULL;
	x = tpf_prices_find(&p, "v5e", "on-demand", "us-central1-a");
	CHECK(x && x->from_catalog);
	p.over = NULL;
	p.nover = 0;
	json_t *t = tpf_prices_table(&p);
	json_t *first = json_array_get(json_object_get(t, "rows"), 0);
	CHECK_STR(json_string_value(json_object_get(first, "source")), "catalog");
	CHECK_STR(json_string_value(json_object_get(first, "date")), "2026-11-28");
	CHECK_STR(json_string_value(json_object_get(json_object_get(t, "catalog"), "fetched")),
		  "2026-11-28T10:00:00Z");
	json_decref(t);
	tpf_prices_release(&p);
}

int main(void)
{
	RUN(test_price_catalog__spot_and_on_demand);
	RUN(test_price_catalog__per_chip);
	RUN(test_price_catalog__unknown_and_currency);
	RUN(test_price_catalog__region_and_order);
	return unit_done();
}
