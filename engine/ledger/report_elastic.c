/*
 * Slices in the report (docs/ledger.md): elastic slices
 * (engine/ledger/report.h TPF_RB_WAITING_CAPACITY: while a shrunk node's
 * job runs on some of its slices, its chip-hours are the phase's for the
 * running share and waiting_for_capacity for the missing slices' share),
 * and a `preempted` line that names the slices lost.
 */
#include "engine/ledger/report.h"

#include <stdlib.h>

double tpf_report_missing_share(long workers, int vms)
{
	if (workers <= 0 || vms <= 0 || workers >= vms)
		return 0;
	return 1.0 - (double)workers / (double)vms;
}

void tpf_report_split(struct tpf_report_row *row, enum tpf_report_bucket b, double chip_hours,
		      double missing)
{
	if (missing <= 0 || missing >= 1) {
		row->chip_hours[b] += chip_hours;
		return;
	}
	row->chip_hours[b] += chip_hours * (1 - missing);
	row->chip_hours[TPF_RB_WAITING_CAPACITY] += chip_hours * missing;
	/* in Google's categories (the other phases' are counted as theirs) */
	if (b == TPF_RB_GOODPUT)
		row->ml_chip_hours[TPF_MB_OTHER] += chip_hours * missing;
}

/* "0,2" as bits (slice k: bit k); slices past 63 are left out. -1: not a list. */
static int slice_bits(const char *list, unsigned long long *bits)
{
	int n = 0;
	*bits = 0;
	for (const char *c = list; c && *c;) {
		char *end;
		if (*c < '0' || *c > '9')
			return -1;
		long k = strtol(c, &end, 10);
		if (k < 64)
			*bits |= 1ULL << k;
		n++;
		if (*end && *end != ',')
			return -1;
		c = *end ? end + 1 : end;
	}
	return n ? n : -1;
}

int tpf_report_slice_loss(json_t *o, int vms, int chips, unsigned long long *lost, double *share)
{
	unsigned long long bits;
	*share = 0;
	if (slice_bits(json_string_value(json_object_get(o, "slices")), &bits) < 0)
		return 0;
	json_int_t w = json_integer_value(json_object_get(o, "workers"));
	json_int_t c = json_integer_value(json_object_get(o, "lost_chips"));
	if (vms > 0 && w > 0 && w < vms)
		*share = (double)w / vms;
	else if (chips > 0 && c > 0 && c < chips)
		*share = (double)c / chips;
	if (bits && (bits & *lost) == bits)
		return 2;
	*lost |= bits;
	return 1;
}
