/*
 * The fleet file's `budget`, `on_budget` and `prices` keys
 * (config/config_walk.h; docs/ledger.md "Budgets" and "Prices").
 *
 * Amounts are numbers of util/number.h's one grammar ("100", "12.5",
 * "1e3"): no sign, hex, inf or nan, which strtod alone would accept and
 * which no one means in a budget.
 */
#include "config/config_walk.h"
#include "util/number.h"
#include "util/str.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static const char *const budget_keys[] = { "chip_hours", "usd", "per", NULL };
static const char *const per_words[] = { "day", "week", "month", NULL };
static const char *const on_budget_words[] = { "stop", "delete", NULL };
static const char *const price_keys[] = { "accelerator", "class", "region", "usd_per_chip_hour",
					  NULL };
/* The chip generation keys of the run ledger (model/chips.h). */
static const char *const chip_words[] = { "v2", "v3", "v4", "v5e", "v5p", "v6e", "tpu7x", NULL };
/* The scheduling classes of the run ledger (model/recipe.h tpf_recipe_scheduling). */
static const char *const class_words[] = { "on-demand", "preemptible", "spot", "flex-start",
					   NULL };

/* A number (util/number.h) from min (exclusive when min_open) to max. 0
 * and *out, or -1 after an error naming `name`. */
static int want_amount(struct cfg *c, yaml_node_t *v, const char *name, double min, int min_open,
		       double max, const char *expect, double *out)
{
	const char *s = cfg_text(v);
	double x = 0;
	if (cfg_is_null(v) || tpf_parse_number(s, &x) < 0) {
		cfg_type_error(c, v, name, expect, NULL);
		return -1;
	}
	if ((min_open ? x <= min : x < min) || x > max) {
		cfg_error(c, v, NULL, "'%s' must be %s, got '%s' (at most %g)", name, expect, s, max);
		return -1;
	}
	*out = x;
	return 0;
}

/* The keys of an open budget mapping m into *b (cfg_read_budget). */
static void read_budget_keys(struct cfg *c, yaml_node_t *v, struct cfg_map *m, struct tpf_budget *b)
{
	yaml_node_t *ch = cfg_map_get(m, "chip_hours"), *usd = cfg_map_get(m, "usd"), *x;
	if (ch && usd) {
		cfg_error(c, usd, "a budget counts either chip-hours or dollars; keep one",
			  "'budget' takes exactly one of 'chip_hours' and 'usd', got both");
		return;
	}
	if (!ch && !usd) {
		if (!m->unknown)
			cfg_error(c, v, "e.g. budget: { chip_hours: 100, per: week }",
				  "'budget' needs one of 'chip_hours' and 'usd'");
		return;
	}
	double amount = 0;
	if (ch && want_amount(c, ch, "chip_hours", 0, 1, TPF_BUDGET_CHIP_HOURS_MAX,
			      "a number of chip-hours > 0 such as 100 or 12.5", &amount) < 0)
		return;
	if (usd && want_amount(c, usd, "usd", 0, 1, TPF_BUDGET_USD_MAX,
			       "a number of US dollars > 0 such as 500", &amount) < 0)
		return;
	int per = 0;
	if (!(x = cfg_map_require(m, "per", "per: day, per: week (from Monday, UTC) or per: month")))
		return;
	if (cfg_want_enum(c, x, "per", per_words, "one of day, week or month", &per) < 0)
		return;
	b->unit = ch ? TPF_BUDGET_CHIP_HOURS : TPF_BUDGET_USD;
	b->amount = amount;
	b->per = (enum tpf_budget_per)per;
	b->line = (int)v->start_mark.line + 1;
	b->column = (int)v->start_mark.column + 1;
}

void cfg_read_budget(struct cfg *c, yaml_node_t *v, const char *owner, struct tpf_budget *b)
{
	struct cfg_map m;
	memset(b, 0, sizeof(*b));
	if (!v)
		return;
	/* m keeps these for its messages: freed after the last lookup. */
	char *where = xasprintf("in budget of %s", owner);
	char *who = xasprintf("budget of %s", owner);
	if (cfg_map_open(&m, c, v, "'budget'",
			 "a mapping such as { chip_hours: 100, per: week } or { usd: 500, per: "
			 "month }",
			 budget_keys, where, who) == 0 &&
	    m.node)
		read_budget_keys(c, v, &m, b);
	free(where);
	free(who);
}

void cfg_read_on_budget(struct cfg *c, yaml_node_t *v, enum tpf_on_budget *out)
{
	int e;
	if (v && cfg_want_enum(c, v, "on_budget", on_budget_words,
			       "one of stop (create nothing more: the default) or delete", &e) == 0)
		*out = (enum tpf_on_budget)e;
}

/* region: a region name such as us-central1 (a zone's region, without the
 * zone letter). */
static char *want_region(struct cfg *c, yaml_node_t *x)
{
	const char *s = cfg_text(x);
	size_t n = s ? strlen(s) : 0;
	if (!s || !cfg_is_name(s) || n > 63 || (n > 2 && s[n - 2] == '-' && s[n - 1] >= 'a' &&
						  s[n - 1] <= 'z')) {
		cfg_type_error(c, x, "region",
			       "a region such as 'us-central1' (a zone's region: no zone letter)",
			       NULL);
		return NULL;
	}
	return xstrdup(s);
}

static void read_price(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v)
{
	struct cfg_map m;
	yaml_node_t *x;
	int e;
	struct tpf_price_override p = { 0 };
	if (cfg_map_open(&m, c, v, "each price",
			 "a mapping such as { accelerator: v6e, class: spot, usd_per_chip_hour: 1.1 }",
			 price_keys, "in price", "price") < 0 || !m.node)
		return;
	p.line = (int)v->start_mark.line + 1;
	p.column = (int)v->start_mark.column + 1;
	int ok = 1;
	x = cfg_map_require(&m, "accelerator", "the chip generation: v5e, v6e, tpu7x...");
	if (x && cfg_want_enum(c, x, "accelerator", chip_words,
			       "a chip generation: v2, v3, v4, v5e, v5p, v6e or tpu7x", &e) == 0)
		p.chip = xstrdup(chip_words[e]);
	else
		ok = 0;
	x = cfg_map_require(&m, "class", "on-demand, preemptible, spot or flex-start");
	if (x && cfg_want_enum(c, x, "class", class_words,
			       "one of on-demand, preemptible, spot or flex-start", &e) == 0)
		p.class = xstrdup(class_words[e]);
	else
		ok = 0;
	if ((x = cfg_map_get(&m, "region")) && !(p.region = want_region(c, x)))
		ok = 0;
	x = cfg_map_require(&m, "usd_per_chip_hour", "the price you pay, e.g. 1.1");
	if (!x || want_amount(c, x, "usd_per_chip_hour", 0, 0, TPF_PRICE_MAX,
			      "US dollars per chip-hour >= 0 such as 2.7", &p.usd_per_chip_hour) < 0)
		ok = 0;
	for (size_t i = 0; ok && i < f->nprices; i++) {
		const struct tpf_price_override *o = &f->prices[i];
		if (!strcmp(o->chip, p.chip) && !strcmp(o->class, p.class) &&
		    tpf_streq(o->region, p.region)) {
			cfg_error(c, v, "keep one of them",
				  "the price of %s %s%s%s is already given at line %d", p.chip, p.class,
				  p.region ? " in " : "", p.region ? p.region : "", o->line);
			ok = 0;
		}
	}
	if (!ok) {
		free(p.chip);
		free(p.class);
		free(p.region);
		return;
	}
	f->prices = xrealloc(f->prices, (f->nprices + 1) * sizeof(*f->prices));
	f->prices[f->nprices++] = p;
}

void cfg_read_prices(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v)
{
	if (!v || cfg_is_null(v))
		return;
	if (v->type != YAML_SEQUENCE_NODE) {
		cfg_type_error(c, v, "prices",
			       "a list such as [{ accelerator: v6e, class: spot, usd_per_chip_hour: 1.1 }]",
			       NULL);
		return;
	}
	size_t n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	if (n > TPF_PRICES_MAX) {
		cfg_error(c, v, "give a price per chip generation, class and region you use",
			  "'prices' lists %zu entries, more than %d", n, TPF_PRICES_MAX);
		return;
	}
	for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++)
		read_price(c, f, cfg_node(c, *it));
}

void tpf_fleet_prices_release(struct tpf_fleet *f)
{
	for (size_t i = 0; i < f->nprices; i++) {
		free(f->prices[i].chip);
		free(f->prices[i].class);
		free(f->prices[i].region);
	}
	free(f->prices);
	f->prices = NULL;
	f->nprices = 0;
}
