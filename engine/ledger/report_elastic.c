/*
 * Elastic slices in the report (engine/ledger/report.h
 * TPF_RB_WAITING_CAPACITY; docs/ledger.md): while a shrunk node's job runs
 * on some of its slices, its chip-hours are the phase's for the running
 * share and waiting_for_capacity for the missing slices' share.
 */
#include "engine/ledger/report.h"

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
