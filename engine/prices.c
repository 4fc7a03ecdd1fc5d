/*
 * The built-in price table of `tpuform report` (engine/report.h): Google's
 * list prices per chip-hour, per chip generation and scheduling class.
 *
 * Source: the Cloud TPU pricing page, https://cloud.google.com/tpu/pricing
 * (us-central1 / us-central2 list prices; v2 and v3 as priced per 8-core
 * device there, divided by its 4 chips). The date on each row is when the
 * row was written down here; docs/ledger.md "Prices" repeats the table.
 * Spot prices change with supply, so there are none for v4 and later: a
 * fleet that runs spot TPUs prices them with `prices:` (docs/ledger.md),
 * and the report says which rows had no price. An estimate, never a bill.
 */
#include "engine/report.h"

#include <string.h>

#define PRICING "https://cloud.google.com/tpu/pricing"
#define RECORDED "2026-11-26"

static const struct tpf_price table[] = {
	{ "v2", "on-demand", 1.125, PRICING, RECORDED },   /* v2-8: $4.50/h, 4 chips */
	{ "v2", "preemptible", 0.3375, PRICING, RECORDED }, /* v2-8: $1.35/h */
	{ "v3", "on-demand", 2.00, PRICING, RECORDED },    /* v3-8: $8.00/h, 4 chips */
	{ "v3", "preemptible", 0.60, PRICING, RECORDED },  /* v3-8: $2.40/h */
	{ "v4", "on-demand", 3.22, PRICING, RECORDED },
	{ "v5e", "on-demand", 1.20, PRICING, RECORDED },
	{ "v5p", "on-demand", 4.20, PRICING, RECORDED },
	{ "v6e", "on-demand", 2.70, PRICING, RECORDED },
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
