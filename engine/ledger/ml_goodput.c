/*
 * tpuform's badput buckets as ml-goodput-measurement's categories
 * (engine/ledger/ml_goodput.h).
 */
#include "engine/ledger/ml_goodput.h"


/* Each bucket of tpuform's (engine/ledger/report.h) as the library's
 * BadputType that covers it best:
 *   setup: the bootstrap's checkout and setup commands up to the run
 *     command, the job's preparation: TRAINING_PREP (the library splits
 *     TPU_INITIALIZATION and PROGRAM_STARTUP out of the job's own log;
 *     tpuform sees only when the job process starts);
 *   restart: a failed job waiting for its restart: OTHER (not a disruption
 *     of the infrastructure);
 *   stalled: a job alive but making no progress: OTHER;
 *   preempted: the work since the last checkpoint, lost to a preemption:
 *     WASTED_PROGRESS_FROM_DISRUPTION;
 *   idle: billed with no job running: OTHER. */
static const struct {
	enum tpf_report_bucket bucket;
	const char *category;
} MAP[] = {
	{ TPF_RB_SETUP, "TRAINING_PREP" },
	{ TPF_RB_RESTART, "OTHER" },
	{ TPF_RB_STALLED, "OTHER" },
	{ TPF_RB_PREEMPTED, "WASTED_PROGRESS_FROM_DISRUPTION" },
	{ TPF_RB_IDLE, "OTHER" },
};

const char *tpf_ml_goodput_category(enum tpf_report_bucket b)
{
	for (size_t i = 0; i < sizeof(MAP) / sizeof(MAP[0]); i++)
		if (MAP[i].bucket == b)
			return MAP[i].category;
	return NULL;
}

/* To 1e-6, as the totals' chip-hours (never negative here). */
static double micro(double h)
{
	return (double)(long long)(h * 1e6 + 0.5) / 1e6;
}

json_t *tpf_ml_goodput_json(const struct tpf_report *r, const double by[TPF_RB_N])
{
	json_t *hours = json_object(), *map = json_object();
	for (int b = TPF_RB_GOODPUT + 1; b < TPF_RB_N; b++) {
		const char *c = tpf_ml_goodput_category((enum tpf_report_bucket)b);
		json_t *have = json_object_get(hours, c);
		double sum = (have ? json_real_value(have) : 0) + by[b];
		json_object_set_new(hours, c, json_real(sum));
		json_object_set_new(map, tpf_report_bucket_name(b), json_string(c));
	}
	const char *key;
	json_t *v;
	json_object_foreach(hours, key, v)
		json_real_set(v, micro(json_real_value(v)));
	double recovery = 0;
	for (size_t i = 0; i < r->nrecoveries; i++)
		recovery += r->recoveries[i];
	json_t *secs = json_pack("{s:f}", "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION",
				 micro(recovery));
	return json_pack("{s:o,s:o,s:o}", "badput_chip_hours", hours, "badput_seconds", secs,
			 "mapping", map);
}
