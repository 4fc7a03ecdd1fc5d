/*
 * What is read from a computed report (engine/ledger/report.h): the names
 * of its phases and buckets, its figures summed and ranked, and its release. Apart from report.c, which
 * computes it, so that the arithmetic stays one file of one job.
 */
#include "engine/ledger/report.h"

#include <stdlib.h>
#include <string.h>

const char *tpf_report_phase_name(enum tpf_report_phase p)
{
	static const char *const names[] = { "waiting", "provisioning", "setup", "running",
					     "restart", "stalled", "idle" };
	return (unsigned)p < TPF_RP_N ? names[p] : "";
}

const char *tpf_report_bucket_name(enum tpf_report_bucket b)
{
	static const char *const names[] = { "goodput",	  "setup", "restart",
					     "stalled",	  "preempted", "idle",
					     "waiting_for_capacity" };
	return (unsigned)b < TPF_RB_N ? names[b] : "";
}

void tpf_report_release(struct tpf_report *r)
{
	for (size_t i = 0; i < r->nrows; i++) {
		free(r->rows[i].group);
		free(r->rows[i].zone);
		free(r->rows[i].cls);
		free(r->rows[i].chip);
	}
	free(r->rows);
	free(r->recoveries);
	for (size_t i = 0; i < r->nnodes; i++) {
		free(r->nodes[i].name);
		free(r->nodes[i].group);
	}
	free(r->nodes);
	free(r->spans);
	free(r->marks);
	memset(r, 0, sizeof(*r));
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double tpf_report_percentile(double *v, size_t n, double p)
{
	if (!n)
		return -1;
	qsort(v, n, sizeof(*v), dbl_cmp);
	double want = p / 100.0 * (double)n;
	size_t rank = (size_t)want;
	if ((double)rank < want)
		rank++; /* nearest rank: the ceiling */
	size_t i = rank < 1 ? 0 : rank - 1;
	return v[i < n ? i : n - 1];
}

double tpf_report_row_billed(const struct tpf_report_row *row)
{
	double s = 0;
	for (int b = 0; b < TPF_RB_N; b++)
		s += row->chip_hours[b];
	return s;
}

void tpf_report_spend(const struct tpf_report *r, double *chip_hours, double *usd, long *unpriced)
{
	double ch = 0, dollars = 0;
	long none = 0;
	for (size_t i = 0; i < r->nrows; i++) {
		double row_billed = tpf_report_row_billed(&r->rows[i]);
		ch += row_billed;
		if (r->rows[i].price)
			dollars += row_billed * r->rows[i].price->usd_per_chip_hour;
		else if (row_billed > 0)
			none++;
	}
	*chip_hours = ch;
	*usd = dollars;
	*unpriced = none;
}
