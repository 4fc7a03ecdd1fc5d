/*
 * The fleet's goodput in Cloud Monitoring (docs/watch.md "Cloud
 * Monitoring"): with `monitoring: { project: P }` in the fleet file,
 * `watch` (the leader, each round) writes the run ledger's report as
 * user-defined metrics of project P, at most once a minute
 * ($TPUFORM_MONITORING_INTERVAL, for tests only), through google/monitoring.h:
 *   custom.googleapis.com/tpuform/goodput_ratio        goodput / billed chip-hours
 *   custom.googleapis.com/tpuform/chip_hours           billed chip-hours
 *   custom.googleapis.com/tpuform/badput_chip_hours    by `category`: Google's
 *       ml-goodput-measurement badput categories that tpuform measures
 *       (engine/ledger/report.h tpf_ml_badput_of)
 *   custom.googleapis.com/tpuform/cost_usd             list-price estimate
 * each a GAUGE of DOUBLE over the whole ledger as of now, labelled fleet,
 * group and zone, on the monitored resource `global` (project_id P), one
 * of the types Cloud Monitoring accepts for user-defined metrics. The
 * metric descriptors are created once per process, before the first write.
 */
#ifndef TPF_ENGINE_MONITORING_EXPORT_H
#define TPF_ENGINE_MONITORING_EXPORT_H

#include "config/config.h"
#include "util/diag.h"

struct tpf_monitoring_export;

/*
 * For fleet f (NULL *out and 0 when f has no `monitoring:`): a client
 * with the fleet's provider.gcp credentials; nothing sent yet. TPF_ERROR
 * with a diagnostic (a bad endpoint or credentials). Free with
 * tpf_monitoring_export_free (NULL ok).
 */
int tpf_monitoring_export_open(struct tpf_monitoring_export **out, const struct tpf_fleet *f,
			       struct tpf_diags *d);
void tpf_monitoring_export_free(struct tpf_monitoring_export *e);

/*
 * When the last write is at least the interval old (monotonic now_mono):
 * read what the ledger gained (engine/ledger/report_follow.h), compute the
 * report and write its series. Problems are warnings in d; the next round
 * tries again after the interval. Not thread-safe (watch's loop).
 */
void tpf_monitoring_export_round(struct tpf_monitoring_export *e, const struct tpf_fleet *f,
				 double now_mono, struct tpf_diags *d);

#endif
