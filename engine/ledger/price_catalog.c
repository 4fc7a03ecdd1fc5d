/*
 * TPU SKUs of the Cloud Billing Catalog read as prices per chip-hour, and
 * the table built from them (engine/ledger/price_catalog.h says how a SKU
 * is read and where each rule comes from).
 */
#include "engine/ledger/price_catalog.h"
#include "util/str.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CATALOG_SOURCE "Cloud Billing Catalog API (services.skus.list)"

/* The generations tpuform prices, as report rows name them (model/chips.c). */
static const char *const chips[] = { "v2", "v3", "v4", "v5e", "v5p", "v6e", "tpu7x", NULL };

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* An int64 of the API's JSON (a string, or a number); absent: 0. */
static double int64_of(json_t *v)
{
	if (json_is_string(v))
		return strtod(json_string_value(v), NULL);
	return json_is_number(v) ? json_number_value(v) : 0;
}

/* The generation a description names after "Tpu" ("TpuV5e" -> "v5e",
 * "Tpu-v4 Pod" -> "v4", "Tpu7x" -> "tpu7x") into out; 0 when none. */
static int chip_of(const char *desc, char *out, size_t n)
{
	for (const char *p = desc; p && *p; p++) {
		if (strncasecmp(p, "tpu", 3) || (p > desc && isalnum((unsigned char)p[-1])))
			continue;
		const char *q = p + 3;
		if (*q == '-' || *q == ' ' || *q == '_')
			q++;
		int v = *q == 'v' || *q == 'V';
		q += v;
		size_t digits = strspn(q, "0123456789"), letters = 0;
		while (isalpha((unsigned char)q[digits + letters]) && letters < 4)
			letters++;
		if (!digits || digits > 2 || isalnum((unsigned char)q[digits + letters]))
			continue;
		int gen = atoi(q);
		snprintf(out, n, "%s%.*s", gen >= 7 ? "tpu" : "v", (int)(digits + letters), q);
		for (char *c = out; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		return 1;
	}
	return 0;
}

/* The tier of the newest pricingInfo that starts at usage 0, and its
 * expression; NULL when there is none. */
static json_t *tier_from_zero(json_t *sku, json_t **expr)
{
	json_t *infos = json_object_get(sku, "pricingInfo");
	size_t n = json_array_size(infos);
	*expr = n ? json_object_get(json_array_get(infos, n - 1), "pricingExpression") : NULL;
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(*expr, "tieredRates"), i, t)
		if (int64_of(json_object_get(t, "startUsageAmount")) == 0)
			return t;
	return NULL;
}

static int known_chip(const char *chip)
{
	for (int i = 0; chips[i]; i++)
		if (!strcmp(chips[i], chip))
			return 1;
	return 0;
}

int tpf_sku_match(json_t *sku, struct tpf_sku_price *m, const char **why)
{
	memset(m, 0, sizeof(*m));
	*why = NULL;
	json_t *cat = json_object_get(sku, "category");
	const char *usage = str(cat, "usageType"), *desc = str(sku, "description");
	if (!tpf_streq(str(cat, "resourceGroup"), "TPU") || !usage ||
	    (strcmp(usage, "OnDemand") && strcmp(usage, "Preemptible")) || !desc ||
	    strstr(desc, "Commit") || strstr(desc, "Reserved"))
		return 0;
	if (!chip_of(desc, m->chip, sizeof(m->chip)) || !known_chip(m->chip)) {
		*why = "its description names no TPU generation tpuform knows";
		return -1;
	}
	json_t *expr, *tier = tier_from_zero(sku, &expr);
	json_t *price = json_object_get(tier, "unitPrice");
	if (!tier || !json_is_object(price)) {
		*why = "it has no price tier starting at usage 0";
		return -1;
	}
	if (!tpf_streq(str(price, "currencyCode"), "USD")) {
		*why = "it is not priced in US dollars (tpuform keeps USD list prices)";
		return -1;
	}
	if (!tpf_streq(str(expr, "usageUnit"), "h")) {
		*why = "it is not priced per hour (usageUnit is not \"h\")";
		return -1;
	}
	double usd = int64_of(json_object_get(price, "units")) +
		     int64_of(json_object_get(price, "nanos")) / 1e9;
	int per_host = !strcmp(m->chip, "v2") || !strcmp(m->chip, "v3") || !strcmp(m->chip, "v4");
	m->usd_per_chip_hour = per_host ? usd / 4 : usd;
	m->class = strstr(desc, "Preemptible") || !strcmp(usage, "Preemptible") ? "spot" : "on-demand";
	m->pod = strstr(desc, "Pod") != NULL;
	return 1;
}

/* The row of rows for chip, class and region, or NULL. */
static json_t *row_for(json_t *rows, const struct tpf_sku_price *m, const char *region)
{
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r)
		if (!strcmp(str(r, "chip"), m->chip) && !strcmp(str(r, "class"), m->class) &&
		    !strcmp(str(r, "region"), region))
			return r;
	return NULL;
}

static void add_rows(json_t *rows, json_t *sku, const struct tpf_sku_price *m)
{
	size_t i;
	json_t *reg;
	json_array_foreach(json_object_get(sku, "serviceRegions"), i, reg) {
		const char *region = json_string_value(reg);
		if (!region)
			continue;
		json_t *was = row_for(rows, m, region);
		if (was && (json_is_false(json_object_get(was, "pod")) || m->pod))
			continue; /* the first SKU, or a device's over a Pod's */
		json_t *row = json_pack("{s:s,s:s,s:s,s:f,s:s?,s:s?,s:b}", "chip", m->chip, "class",
					m->class, "region", region, "usd_per_chip_hour",
					m->usd_per_chip_hour, "sku", str(sku, "skuId"), "description",
					str(sku, "description"), "pod", m->pod);
		if (was)
			json_object_update(was, row);
		else
			json_array_append(rows, row);
		json_decref(row);
	}
}

json_t *tpf_price_catalog_build(json_t *skus, double fetched, const char *endpoint)
{
	char when[40];
	tpf_rfc3339_fmt(fetched, 0, 0, when, sizeof(when));
	json_t *rows = json_array(), *skipped = json_array();
	size_t i;
	json_t *sku;
	json_array_foreach(skus, i, sku) {
		struct tpf_sku_price m;
		const char *why;
		int rc = tpf_sku_match(sku, &m, &why);
		if (rc > 0)
			add_rows(rows, sku, &m);
		else if (rc < 0)
			json_array_append_new(skipped,
					      json_pack("{s:s?,s:s?,s:s}", "sku", str(sku, "skuId"),
							"description", str(sku, "description"),
							"why", why));
	}
	return json_pack("{s:i,s:s,s:s?,s:s,s:s,s:I,s:o,s:o}", "v", 1, "source", CATALOG_SOURCE,
			 "endpoint", endpoint, "fetched", when, "note",
			 "list prices in US dollars per chip-hour; committed-use and negotiated "
			 "prices are not included",
			 "skus_read", (json_int_t)json_array_size(skus), "rows", rows, "skipped",
			 skipped);
}

void tpf_prices_use_catalog(struct tpf_prices *p, json_t *doc)
{
	free(p->catalog);
	json_decref(p->catalog_doc);
	p->catalog = NULL;
	p->ncatalog = 0;
	p->catalog_doc = doc;
	snprintf(p->catalog_date, sizeof(p->catalog_date), "%.10s", str(doc, "fetched") ?: "");
	json_t *rows = json_object_get(doc, "rows");
	p->catalog = xcalloc(json_array_size(rows) + 1, sizeof(*p->catalog));
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r) {
		json_t *usd = json_object_get(r, "usd_per_chip_hour");
		if (!str(r, "chip") || !str(r, "class") || !str(r, "region") || !json_is_number(usd))
			continue; /* a stored row of another shape: not a price */
		p->catalog[p->ncatalog++] = (struct tpf_price){
			.chip = str(r, "chip"), .class = str(r, "class"),
			.usd_per_chip_hour = json_number_value(usd), .source = str(doc, "source"),
			.date = p->catalog_date, .region = str(r, "region"), .from_catalog = 1,
			.sku = str(r, "sku"),
		};
	}
}

static json_t *table_row(const struct tpf_price *p)
{
	char src[48];
	tpf_price_source(p, src, sizeof(src));
	if (p->from_catalog)
		snprintf(src, sizeof(src), "catalog");
	return json_pack("{s:s,s:s,s:s?,s:f,s:s,s:s?,s:s?}", "chip", p->chip, "class", p->class,
			 "region", p->region, "usd_per_chip_hour", p->usd_per_chip_hour, "source",
			 src, "date", p->date, "sku", p->sku);
}

json_t *tpf_prices_table(const struct tpf_prices *p)
{
	json_t *rows = json_array();
	for (size_t i = 0; i < p->ncatalog; i++)
		json_array_append_new(rows, table_row(&p->catalog[i]));
	for (size_t i = 0; i < p->nover; i++)
		json_array_append_new(rows, table_row(&p->over[i]));
	const struct tpf_price *b;
	for (size_t i = 0; (b = tpf_price_builtin(i)); i++)
		json_array_append_new(rows, table_row(b));
	json_t *doc = json_pack("{s:o,s:s}", "rows", rows, "note",
				"list prices in US dollars per chip-hour, not a bill");
	json_t *c = p->catalog_doc;
	json_object_set_new(doc, "catalog",
			    c ? json_pack("{s:O?,s:O?,s:O?,s:O?}", "source",
					  json_object_get(c, "source"), "fetched",
					  json_object_get(c, "fetched"), "endpoint",
					  json_object_get(c, "endpoint"), "skipped",
					  json_object_get(c, "skipped"))
			      : json_null());
	return doc;
}
