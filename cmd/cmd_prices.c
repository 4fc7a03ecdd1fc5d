/*
 * tpuform prices [-refresh] [-json]: the price table `report` and budgets
 * use, each row with its source and date; -refresh reads it anew from the
 * Cloud Billing Catalog and stores it beside the state
 * (engine/ledger/price_catalog.h). Flags and printing only.
 */
#include "cmd/cmd.h"
#include "engine/ledger/price_catalog.h"
#include "util/timeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
	int refresh;
} prices_o;

static const struct tpf_flag prices_flags[] = {
	TPF_BOOL("refresh", &prices_o.refresh,
		 "read the TPU list prices from the Cloud Billing Catalog API and store them "
		 "beside the state first"),
	TPF_FLAGS_END,
};

static void say_table(json_t *doc)
{
	json_t *c = json_object_get(doc, "catalog");
	if (json_is_object(c))
		tpf_ui_say("Catalog: %s, fetched %s\n",
			   json_string_value(json_object_get(c, "source")),
			   json_string_value(json_object_get(c, "fetched")));
	else
		tpf_ui_say("Catalog: none stored (tpuform prices -refresh reads it)\n");
	tpf_ui_say("\n%-6s %-12s %-24s %12s  %-22s %s\n", "CHIP", "CLASS", "REGION", "USD/CHIP-H",
		   "SOURCE", "DATE");
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(doc, "rows"), i, r) {
		const char *region = json_string_value(json_object_get(r, "region"));
		const char *date = json_string_value(json_object_get(r, "date"));
		tpf_ui_say("%-6s %-12s %-24s %12.4f  %-22s %s\n",
			   json_string_value(json_object_get(r, "chip")),
			   json_string_value(json_object_get(r, "class")), region ? region : "(every)",
			   json_number_value(json_object_get(r, "usd_per_chip_hour")),
			   json_string_value(json_object_get(r, "source")), date ? date : "-");
	}
	json_array_foreach(json_object_get(c, "skipped"), i, r)
		tpf_ui_say("Skipped SKU %s \"%s\": %s\n",
			   json_string_value(json_object_get(r, "sku")),
			   json_string_value(json_object_get(r, "description")),
			   json_string_value(json_object_get(r, "why")));
	tpf_ui_say("\nList prices in US dollars per chip-hour (committed-use and negotiated prices "
		   "are not included); report uses the first row that fits: catalog, then the "
		   "fleet file's prices:, then built-in.\n");
}

static int run_prices(struct tpf_cmd_ctx *ctx)
{
	const struct tpf_fleet *f = &ctx->s.fleet;
	if (prices_o.refresh) {
		json_t *doc = NULL;
		if (tpf_price_catalog_refresh(f, tpf_now_wall(), &doc, ctx->d))
			return TPF_EXIT_ERROR;
		if (!ctx->o.json)
			tpf_ui_say("Read %lld SKUs from the Cloud Billing Catalog: %zu TPU prices.\n\n",
				   (long long)json_integer_value(json_object_get(doc, "skus_read")),
				   json_array_size(json_object_get(doc, "rows")));
		json_decref(doc);
	}
	struct tpf_prices p;
	tpf_prices_load(f, &p, ctx->d);
	json_t *doc = tpf_prices_table(&p);
	json_object_set_new(doc, "fleet", json_string(f->name));
	if (ctx->o.json) {
		char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
		printf("%s\n", text);
		free(text);
	} else {
		say_table(doc);
	}
	json_decref(doc);
	tpf_prices_release(&p);
	return TPF_EXIT_OK;
}

const struct tpf_cmd tpf_cmd_prices = {
	.name = "prices",
	.summary = "Show the TPU price table report uses, or refresh it from Google's catalog",
	.description =
		"  Show the list prices report and budgets use, per chip generation, class and\n"
		"  region, each with its source and date: the Cloud Billing Catalog table stored\n"
		"  beside the state (with its fetch time), the fleet file's prices:, the\n"
		"  built-in table. -refresh reads the catalog's TPU SKUs first (Compute Engine\n"
		"  and Cloud TPU services) with the fleet's credentials, or the API key in\n"
		"  TPUFORM_BILLING_API_KEY, and stores the table.\n",
	.footer = "List prices in US dollars; committed-use and negotiated prices are out of "
		  "scope.\n",
	.flags = prices_flags,
	.needs = TPF_CMD_FLEET | TPF_CMD_JSON,
	.signals = TPF_SIG_STOP,
	.run = run_prices,
};
