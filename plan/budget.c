/*
 * Budgets: periods and the deferral rule (plan/budget.h).
 */
#include "plan/budget.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DAY 86400.0

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil), so month starts need no timegm(). */
static long days_from_civil(long y, long m, long d)
{
	y -= m <= 2;
	long era = (y >= 0 ? y : y - 399) / 400;
	long yoe = y - era * 400;
	long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void tpf_budget_period(double now, enum tpf_budget_per per, double *start, double *end)
{
	long days = (long)(now / DAY);
	if ((double)days * DAY > now)
		days--; /* floor for times before 1970 */
	switch (per) {
	case TPF_BUDGET_WEEK: {
		/* 1970-01-01 was a Thursday: ISO weekday index 3 from Monday. */
		long monday = days - (((days + 3) % 7) + 7) % 7;
		*start = (double)monday * DAY;
		*end = *start + 7 * DAY;
		return;
	}
	case TPF_BUDGET_MONTH: {
		time_t t = (time_t)(days * (long)DAY);
		struct tm tm;
		gmtime_r(&t, &tm);
		long y = tm.tm_year + 1900L, m = tm.tm_mon + 1L;
		*start = (double)days_from_civil(y, m, 1) * DAY;
		*end = (double)days_from_civil(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1) * DAY;
		return;
	}
	case TPF_BUDGET_DAY:
		break;
	}
	*start = (double)days * DAY;
	*end = *start + DAY;
}

const char *tpf_budget_per_words(enum tpf_budget_per per)
{
	switch (per) {
	case TPF_BUDGET_WEEK: return "this week";
	case TPF_BUDGET_MONTH: return "this month";
	case TPF_BUDGET_DAY: break;
	}
	return "today";
}

int tpf_budget_reached(const struct tpf_budget_status *s)
{
	return s->budget && s->budget->unit != TPF_BUDGET_NONE && s->spent >= s->budget->amount;
}

void tpf_budget_describe(const struct tpf_budget_status *s, const char *fleet,
			 struct tpf_buf *out)
{
	const struct tpf_budget *b = s->budget;
	double pct = b->amount > 0 ? 100.0 * s->spent / b->amount : 0;
	if (s->group)
		tpf_buf_addf(out, "group '%s': ", s->group);
	else
		tpf_buf_addf(out, "fleet '%s': ", fleet ? fleet : "");
	if (b->unit == TPF_BUDGET_USD)
		tpf_buf_addf(out, "$%.2f of $%.2f", s->spent, b->amount);
	else
		tpf_buf_addf(out, "%.2f of %g chip-hours", s->spent, b->amount);
	tpf_buf_addf(out, " %s (%.0f%%)", tpf_budget_per_words(b->per), pct);
	if (b->unit == TPF_BUDGET_USD && s->unpriced > 0)
		tpf_buf_addf(out, "; %ld ledger row%s without a price not counted", s->unpriced,
			     s->unpriced == 1 ? "" : "s");
}

/* When the period ends, for messages: "2026-11-30 00:00 UTC". */
static void period_end_words(double end, char *out, size_t len)
{
	time_t t = (time_t)end;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, len, "%Y-%m-%d %H:%M UTC", &tm);
}

size_t tpf_budget_defer(struct tpf_desired_set *ds, const struct tpf_budget_status *v, size_t n,
			const char *fleet, struct tpf_diags *d)
{
	size_t total = 0;
	for (size_t k = 0; k < n; k++) {
		const struct tpf_budget_status *s = &v[k];
		if (!tpf_budget_reached(s))
			continue;
		struct tpf_buf why = TPF_BUF_INIT;
		tpf_buf_adds(&why, "budget reached: ");
		tpf_budget_describe(s, fleet, &why);
		int del = s->on_budget == TPF_ON_BUDGET_DELETE;
		size_t hit = 0;
		for (size_t i = 0; i < ds->n; i++) {
			struct tpf_desired_node *dn = &ds->nodes[i];
			if (dn->completed || (s->group && strcmp(dn->group, s->group)))
				continue;
			dn->deferred = 1;
			if (dn->over_budget != TPF_OVER_BUDGET_DELETE)
				dn->over_budget = del ? TPF_OVER_BUDGET_DELETE : TPF_OVER_BUDGET_STOP;
			xstrset(&dn->waiting, why.buf);
			hit++;
		}
		char until[40];
		period_end_words(s->period_end, until, sizeof(until));
		tpf_warn(d, s->group,
			 "%s: creating no node of %zu until %s%s", why.buf, hit, until,
			 del ? ", and deleting the running ones (on_budget: delete)"
			     : "; running nodes keep running (on_budget: delete would delete them)");
		tpf_buf_release(&why);
		total += hit;
	}
	return total;
}
