/*
 * tpuform's buckets in Google's badput categories (engine/ledger/report.h
 * tpf_ml_badput_of; docs/ledger.md "Google's goodput categories"). The
 * categories are ml-goodput-measurement's (AI-Hypercomputer,
 * ml_goodput_measurement/src/goodput_utils.py `BadputType`); how Google
 * computes them is its goodput.py: a disruption's INFRASTRUCTURE_RECOVERY
 * runs from the disruption to the job's next start, its
 * WASTED_PROGRESS from the last checkpointed step to the disruption.
 */
#include "engine/ledger/report.h"

#include <string.h>

#define ML_SOURCE "https://github.com/AI-Hypercomputer/ml-goodput-measurement"

static const struct {
	const char *name;
	int measured; /* seen from the control plane; else inside the job */
} categories[TPF_MB_N] = {
	[TPF_MB_TPU_INITIALIZATION] = { "TPU_INITIALIZATION", 0 },
	[TPF_MB_TRAINING_PREP] = { "TRAINING_PREP", 0 },
	[TPF_MB_PROGRAM_STARTUP] = { "PROGRAM_STARTUP", 0 },
	[TPF_MB_DATA_LOADING_SYNC] = { "DATA_LOADING_SYNC", 0 },
	[TPF_MB_UNPRODUCTIVE_CHECKPOINT_SAVE_TIME] = { "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME", 0 },
	[TPF_MB_UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME] = { "UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME", 0 },
	[TPF_MB_WASTED_PROGRESS_FROM_DISRUPTION] = { "WASTED_PROGRESS_FROM_DISRUPTION", 1 },
	[TPF_MB_INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION] = { "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION", 1 },
	[TPF_MB_OTHER] = { "OTHER", 1 },
};

/*
 * The mapping, the one table (docs/ledger.md has it for people). A row
 * with after_disruption -1 holds in both cases. Google's categories that
 * happen inside the job (TPU_INITIALIZATION ... DATA_LOADING_SYNC, the
 * checkpoint save and restore) are in tpuform's goodput: it cannot see
 * them.
 */
static const struct {
	enum tpf_report_bucket bucket;
	int after_disruption;
	enum tpf_ml_badput category;
	int seconds_at_recovery;
} mapping[] = {
	{ TPF_RB_GOODPUT, -1, TPF_MB_NONE, 0 },
	/* A first creation's provisioning and setup: before the job's first
	 * start, outside Google's job time. */
	{ TPF_RB_SETUP, 0, TPF_MB_OTHER, 0 },
	/* A replacement's, after a preemption: part of the recovery. */
	{ TPF_RB_SETUP, 1, TPF_MB_INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION, 1 },
	/* A failed or stalled job waiting for its restart: the job's own
	 * fault, not a disruption of the machines, so not in
	 * INFRASTRUCTURE_RECOVERY, which thus stays the preemption-to-running
	 * time (issue 29: "from a preemption to the job running again"). */
	{ TPF_RB_RESTART, -1, TPF_MB_OTHER, 0 },
	{ TPF_RB_STALLED, -1, TPF_MB_OTHER, 0 },
	{ TPF_RB_PREEMPTED, -1, TPF_MB_WASTED_PROGRESS_FROM_DISRUPTION, 0 },
	/* After the job's end: outside Google's job time. */
	{ TPF_RB_IDLE, -1, TPF_MB_OTHER, 0 },
};

const char *tpf_ml_badput_name(enum tpf_ml_badput m)
{
	return (unsigned)m < TPF_MB_N ? categories[m].name : "";
}

int tpf_ml_badput_measured(enum tpf_ml_badput m)
{
	return (unsigned)m < TPF_MB_N && categories[m].measured;
}

enum tpf_ml_badput tpf_ml_badput_of(enum tpf_report_bucket b, int after_disruption,
				    int *seconds_at_recovery)
{
	int after = after_disruption != 0;
	for (size_t i = 0; i < sizeof(mapping) / sizeof(mapping[0]); i++)
		if (mapping[i].bucket == b &&
		    (mapping[i].after_disruption < 0 || mapping[i].after_disruption == after)) {
			if (seconds_at_recovery)
				*seconds_at_recovery = mapping[i].seconds_at_recovery;
			return mapping[i].category;
		}
	if (seconds_at_recovery)
		*seconds_at_recovery = 0;
	return TPF_MB_OTHER;
}

/* x rounded to `scale` (1e6: micro), without libm. */
static double rounded(double x, double scale)
{
	return (double)(long long)(x * scale + (x >= 0 ? 0.5 : -0.5)) / scale;
}

static json_t *by_category(const double *v, double scale)
{
	json_t *o = json_object();
	for (int m = 0; m < TPF_MB_N; m++)
		json_object_set_new(o, tpf_ml_badput_name(m),
				    tpf_ml_badput_measured(m) ? json_real(rounded(v[m], scale))
							      : json_null());
	return o;
}

json_t *tpf_report_ml_json(const struct tpf_report *r, const struct tpf_report_row *row)
{
	double ch[TPF_MB_N], secs[TPF_MB_N];
	memset(ch, 0, sizeof(ch));
	memset(secs, 0, sizeof(secs));
	for (size_t i = 0; i < r->nrows; i++) {
		const struct tpf_report_row *x = &r->rows[i];
		if (row && x != row)
			continue;
		for (int m = 0; m < TPF_MB_N; m++) {
			ch[m] += x->ml_chip_hours[m];
			secs[m] += x->ml_seconds[m];
		}
	}
	json_t *o = json_pack("{s:s}", "source", ML_SOURCE);
	json_object_set_new(o, "badput_chip_hours", by_category(ch, 1e6));
	json_object_set_new(o, "badput_seconds", by_category(secs, 1e3));
	if (!row) { /* the table, for people reading the numbers */
		json_t *map = json_array();
		for (size_t i = 0; i < sizeof(mapping) / sizeof(mapping[0]); i++) {
			if (mapping[i].category == TPF_MB_NONE)
				continue;
			json_t *e = json_pack("{s:s,s:s}", "bucket", tpf_report_bucket_name(mapping[i].bucket),
					      "category", tpf_ml_badput_name(mapping[i].category));
			if (mapping[i].after_disruption >= 0)
				json_object_set_new(e, "when", json_string(mapping[i].after_disruption
									   ? "after a preemption"
									   : "a first creation"));
			json_array_append_new(map, e);
		}
		json_object_set_new(o, "mapping", map);
	}
	return o;
}
