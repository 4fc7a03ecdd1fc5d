/*
 * The price table of `tpuform report` and of usd budgets (engine/ledger/report.h):
 * Google's list prices per chip-hour, per chip generation and scheduling
 * class, and the fleet file's `prices:` over them.
 *
 * Checked 2026-11-26 against what the search corpora hold of Google's
 * pages (docs/ledger.md "Prices" lists every query and what it found):
 * - https://cloud.google.com/tpu/pricing (and its translations): the
 *   stored copies are the v4 Preview era page; its prose was readable
 *   ("Charges for Cloud TPU accrue while your TPU node is in a READY
 *   state"), its price tables were not in any excerpt.
 * - https://www.infer-pub.com/questions/1114-will-the-price-per-chip-hour-of-google-s-cloud-based-tensor-processing-unit-tpu-v4-be-greater-than-3-22-on-january-1-2023
 *   quotes that page: v4 "on-demand / evaluation" $3.22 per chip-hour on
 *   2022-08-11. A secondary source, but it names Google's page and the date.
 * - https://cloud.google.com/spot-vms/pricing: spot prices "can change up
 *   to once every day"; no TPU row was in any excerpt.
 * Every other row is as written down before (us-central1 / us-central2
 * list prices; v2 and v3 priced per 8-core device of 4 chips there) and is
 * marked unverified: the report's footer names them. An estimate, never
 * a bill.
 */
#include "engine/ledger/report.h"
#include "config/config.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRICING "https://cloud.google.com/tpu/pricing"
#define INFER_PUB                                                                       \
	"https://www.infer-pub.com/questions/1114-will-the-price-per-chip-hour-of-google-s-" \
	"cloud-based-tensor-processing-unit-tpu-v4-be-greater-than-3-22-on-january-1-2023"
#define RECORDED "2026-11-26"
#define UNVERIFIED 1

/* chip, class, USD per chip-hour, source, date read, region (NULL: any),
 * from the fleet file, unverified */
static const struct tpf_price table[] = {
	{ "v2", "on-demand", 1.125, PRICING, RECORDED, NULL, 0, UNVERIFIED, 0, NULL },  /* v2-8 $4.50/h */
	{ "v2", "preemptible", 0.3375, PRICING, RECORDED, NULL, 0, UNVERIFIED, 0, NULL }, /* v2-8 $1.35/h */
	{ "v3", "on-demand", 2.00, PRICING, RECORDED, NULL, 0, UNVERIFIED, 0, NULL },   /* v3-8 $8.00/h */
	{ "v3", "preemptible", 0.60, PRICING, RECORDED, NULL, 0, UNVERIFIED, 0, NULL }, /* v3-8 $2.40/h */
	{ "v4", "on-demand", 3.22, INFER_PUB, RECORDED, NULL, 0, 0, 0, NULL },          /* as of 2022-08-11 */
	{ "v5e", "on-demand", 1.20, PRICING, RECORDED, NULL, 0, UNVERIFIED, 0, NULL },
	{ "v5p", "on-demand", 4.20, PRICING, RECORDED, NULL, 0, UNVERIFIED, 0, NULL },
	{ "v6e", "on-demand", 2.70, PRICING, RECORDED, NULL, 0, UNVERIFIED, 0, NULL },
};

const struct tpf_price *tpf_price_find(const char *chip, const char *cls)
{
	if (!chip || !cls)
		return NULL;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcmp(table[i].chip, chip) && !strcmp(table[i].class, cls))
			return &table[i];
	if (!strcmp(cls, "preemptible"))
		return tpf_price_find(chip, "spot");
	return NULL;
}

const struct tpf_price *tpf_price_builtin(size_t i)
{
	return i < sizeof(table) / sizeof(table[0]) ? &table[i] : NULL;
}

const char *tpf_price_source(const struct tpf_price *p, char *buf, size_t n)
{
	if (p->from_catalog)
		snprintf(buf, n, "catalog %s", p->date ? p->date : "");
	else
		snprintf(buf, n, "%s", p->from_fleet   ? "fleet file"
				       : p->unverified ? "built-in, unverified"
						       : "built-in");
	return buf;
}

const char *tpf_prices_date(void)
{
	return RECORDED;
}

void tpf_prices_from_fleet(const struct tpf_fleet *f, struct tpf_prices *out)
{
	memset(out, 0, sizeof(*out));
	if (!f || !f->nprices)
		return;
	struct tpf_price *v = xcalloc(f->nprices, sizeof(*v));
	for (size_t i = 0; i < f->nprices; i++) {
		const struct tpf_price_override *o = &f->prices[i];
		v[i] = (struct tpf_price){ o->chip, o->class, o->usd_per_chip_hour, "the fleet file",
					   NULL, o->region, 1, 0, 0, NULL };
	}
	out->over = v;
	out->nover = f->nprices;
}

void tpf_prices_release(struct tpf_prices *p)
{
	free(p->over);
	free(p->catalog);
	json_decref(p->catalog_doc);
	memset(p, 0, sizeof(*p));
}

/* The region of a zone: "us-central1-a" -> "us-central1" (n bytes). */
static size_t region_len(const char *zone)
{
	const char *dash = zone ? strrchr(zone, '-') : NULL;
	return dash ? (size_t)(dash - zone) : 0;
}

static int in_region(const struct tpf_price *o, const char *zone, size_t rl)
{
	return o->region && rl && strlen(o->region) == rl && !strncmp(o->region, zone, rl);
}

/* The catalog's row of chip and class in zone's region; *listed: 1 when
 * the catalog prices chip and class in some region. */
static const struct tpf_price *catalog_find(const struct tpf_prices *p, const char *chip,
					    const char *cls, const char *zone, int *listed)
{
	*listed = 0;
	if (!strcmp(cls, "preemptible"))
		cls = "spot"; /* Cloud TPU bills preemptible TPUs as spot VMs since v4 */
	size_t rl = region_len(zone);
	for (size_t i = 0; p && i < p->ncatalog; i++) {
		const struct tpf_price *o = &p->catalog[i];
		if (strcmp(o->chip, chip) || strcmp(o->class, cls))
			continue;
		*listed = 1;
		if (in_region(o, zone, rl))
			return o;
	}
	return NULL;
}

const struct tpf_price *tpf_prices_find(const struct tpf_prices *p, const char *chip,
					const char *cls, const char *zone)
{
	const struct tpf_price *any = NULL;
	size_t rl = region_len(zone);
	int listed = 0;
	if (!chip || !cls)
		return NULL;
	const struct tpf_price *c = catalog_find(p, chip, cls, zone, &listed);
	if (c)
		return c;
	for (size_t i = 0; p && i < p->nover; i++) {
		const struct tpf_price *o = &p->over[i];
		if (strcmp(o->chip, chip) || strcmp(o->class, cls))
			continue;
		if (!o->region)
			any = any ? any : o;
		else if (in_region(o, zone, rl))
			return o; /* a region's own price beats one for every region */
	}
	if (any || listed)
		return any;
	return tpf_price_find(chip, cls);
}
