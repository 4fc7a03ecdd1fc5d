/*
 * tpuform's badput in the words of Google's ml-goodput-measurement
 * (github.com/AI-Hypercomputer/ml-goodput-measurement, `BadputType`), so a
 * team that uses both can put the figures side by side. One table
 * (ml_goodput.c) maps each of tpuform's badput buckets to one category;
 * docs/ledger.md gives it and where the two definitions differ.
 */
#ifndef TPF_ENGINE_LEDGER_ML_GOODPUT_H
#define TPF_ENGINE_LEDGER_ML_GOODPUT_H

#include "engine/ledger/report.h"

#include <jansson.h>

/* The category of tpuform's badput bucket b (TPF_RB_SETUP ...): static
 * text such as "TRAINING_PREP"; NULL for TPF_RB_GOODPUT. */
const char *tpf_ml_goodput_category(enum tpf_report_bucket b);

/*
 * The "ml_goodput" object of `report -json` (new reference): 
 *   "badput_chip_hours": {CATEGORY: chip-hours} from tpuform's buckets
 *     (by: chip-hours per bucket, as the totals have them);
 *   "badput_seconds": {"INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION": the sum
 *     of r's preemption-to-running times, wall seconds, as the library
 *     measures it (time from the disruption until the job runs again)};
 *   "mapping": {tpuform bucket: CATEGORY}.
 */
json_t *tpf_ml_goodput_json(const struct tpf_report *r, const double by[TPF_RB_N]);

#endif
