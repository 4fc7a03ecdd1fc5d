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
	{ "v2", "on-demand", 1.125, PRICING, RECORDED, NULL, 0, UNVERIFIED },  /* v2-8 $4.50/h */
	{ "v2", "preemptible", 0.3375, PRICING, RECORDED, NULL, 0, UNVERIFIED }, /* v2-8 $1.35/h */
	{ "v3", "on-demand", 2.00, PRICING, RECORDED, NULL, 0, UNVERIFIED },   /* v3-8 $8.00/h */
	{ "v3", "preemptible", 0.60, PRICING, RECORDED, NULL, 0, UNVERIFIED }, /* v3-8 $2.40/h */
	{ "v4", "on-demand", 3.22, INFER_PUB, RECORDED, NULL, 0, 0 },          /* as of 2022-08-11 */
	{ "v5e", "on-demand", 1.20, PRICING, RECORDED, NULL, 0, UNVERIFIED },
	{ "v5p", "on-demand", 4.20, PRICING, RECORDED, NULL, 0, UNVERIFIED },
	{ "v6e", "on-demand", 2.70, PRICING, RECORDED, NULL, 0, UNVERIFIED },
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
					   NULL, o->region, 1, 0 };
	}
	out->over = v;
	out->nover = f->nprices;
}

void tpf_prices_release(struct tpf_prices *p)
{
	free(p->over);
	memset(p, 0, sizeof(*p));
}

/* The region of a zone: "us-central1-a" -> "us-central1" (n bytes). */
static size_t region_len(const char *zone)
{
	const char *dash = zone ? strrchr(zone, '-') : NULL;
	return dash ? (size_t)(dash - zone) : 0;
}

const struct tpf_price *tpf_prices_find(const struct tpf_prices *p, const char *chip,
					const char *cls, const char *zone)
{
	const struct tpf_price *any = NULL;
	size_t rl = region_len(zone);
	for (size_t i = 0; p && chip && cls && i < p->nover; i++) {
		const struct tpf_price *o = &p->over[i];
		if (strcmp(o->chip, chip) || strcmp(o->class, cls))
			continue;
		if (!o->region)
			any = any ? any : o;
		else if (rl && strlen(o->region) == rl && !strncmp(o->region, zone, rl))
			return o; /* a region's own price beats one for every region */
	}
	return any ? any : tpf_price_find(chip, cls);
}
