/*
 * Metrics of `tpuform watch -metrics-addr HOST:PORT` (README.md
 * "Metrics"): a registry the watch loop updates, rendered in the
 * Prometheus text exposition format, version 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/: "# HELP"
 * and "# TYPE" lines, then `name{label="value"} number` samples; label
 * values escape \, " and newline), and served by libmicrohttpd.
 *
 * Families (all prefixed tpuform_):
 *   info{fleet,version}                 gauge, 1
 *   nodes{group,state}                  gauge: desired nodes; state is the
 *       round summary's: alive creating waiting dead missing queued
 *   workers{session}                    gauge, from the last session check:
 *       alive exited dead none unreachable
 *   preemptions_total{reason}           counter: nodes lost and replaced
 *       (preempted terminated stopped stopping queued_failed
 *       queued_suspended queued_node_gone unhealthy)
 *   replacements_total                  counter: replacement nodes created
 *   restarts_total                      counter: worker jobs restarted
 *   detection_latency_seconds           histogram: see tpf_metrics_preemption
 *   api_requests_total{method,code}     counter: Cloud TPU API and token
 *       requests (code: the HTTP status, "none" without a response)
 *   notifications_total{result}         counter: sent failed dropped
 *   rounds_total, round_failures_total  counters
 *   last_round_timestamp_seconds        gauge: unix time the last round ended
 *
 * Thread-safe: every function may be called from any thread.
 */
#ifndef TPF_ENGINE_METRICS_H
#define TPF_ENGINE_METRICS_H

#include <stddef.h>
#include <sys/socket.h>
#include "model/job_state.h"
#include "model/node_state.h"
#include "util/buf.h"
#include "util/diag.h"

struct tpf_metrics;

/* A new, empty registry (not serving). Free with tpf_metrics_free. */
struct tpf_metrics *tpf_metrics_new(void);

/* Stop serving (when serving) and free m. NULL: no-op. */
void tpf_metrics_free(struct tpf_metrics *m);

/* ---- gauges, set once a round ----------------------------------------- */

/* Desired nodes by group and state, counted by the caller. */
struct tpf_metrics_nodes {
	struct tpf_metrics_group_row *rows;
	size_t n, alloc;
};
#define TPF_METRICS_NODES_INIT { NULL, 0, 0 }
/* Count one node of `group` in `state`: the first six conditions of
 * model/node_state.h (alive, creating, waiting, dead, missing, queued);
 * another is ignored. */
void tpf_metrics_nodes_add(struct tpf_metrics_nodes *t, const char *group,
			   enum tpf_node_condition state);
void tpf_metrics_nodes_release(struct tpf_metrics_nodes *t);

/* Replace the node gauges with t's rows (t is emptied) and the fleet's
 * name (borrowed for the call). */
void tpf_metrics_set_nodes(struct tpf_metrics *m, const char *fleet, struct tpf_metrics_nodes *t);

/* Workers by job state, labelled by its name (model/job_state.h): alive,
 * exited, dead, none, and unreachable, which also counts a state not
 * known. */
enum { TPF_METRICS_NSESSIONS = 5 };
int tpf_metrics_session_index(enum tpf_job_state session);
void tpf_metrics_set_workers(struct tpf_metrics *m, const long counts[TPF_METRICS_NSESSIONS]);

/* A round ended at `wall` (unix seconds), or failed. */
void tpf_metrics_round_done(struct tpf_metrics *m, double wall);
void tpf_metrics_round_failed(struct tpf_metrics *m);

/* Notification totals so far (engine/telemetry/notify.h tpf_notifier_stats). */
void tpf_metrics_set_notifications(struct tpf_metrics *m, long sent, long failed, long dropped);

/* ---- counters ----------------------------------------------------------- */

/*
 * A lost node's replacement started. reason: the plan's reason code.
 * latency: detection latency, seconds: from the start of the refresh that
 * saw the node dead to the moment the delete of its replacement was sent
 * (so it counts the list call, planning, the state lock and the heal
 * thread's start, not the time the node was dead before that refresh:
 * the API does not say when a node was preempted). < 0: not observed.
 */
void tpf_metrics_preemption(struct tpf_metrics *m, const char *reason, double latency);
void tpf_metrics_replacement(struct tpf_metrics *m);
void tpf_metrics_restarts(struct tpf_metrics *m, long workers);

/* One API request: method ("GET" ...) and HTTP status (0: no response).
 * Its signature is google/gcp_http.h's observer; ctx is m. */
void tpf_metrics_api_request(const char *method, long status, void *ctx);

/* ---- exposition ---------------------------------------------------------- */

/* Append the exposition text (format 0.0.4) to out. */
void tpf_metrics_render(struct tpf_metrics *m, struct tpf_buf *out);

/* The Content-Type of that text. */
/*
 * The run ledger's families (engine/telemetry/metrics_ledger.c), computed by
 * engine/ledger/report.h from the whole ledger, so they survive a `watch` restart:
 *   tpuform_chip_seconds_total{group,zone,class,chip,state}  counter: billed
 *       chip-seconds, state one of goodput setup restart stalled preempted idle
 *   tpuform_goodput_ratio{group}   gauge: goodput / billed chip-seconds
 *   tpuform_ledger_preemptions_total{group}, tpuform_ledger_restarts_total{group}
 *       counters: preemptions and restarts the ledger holds
 * (Prometheus naming, https://prometheus.io/docs/practices/naming/: base
 * units, _total for counters, _ratio for fractions.) Replaces the previous
 * values and the report's page that GET / serves (page: len bytes, copied;
 * NULL: none). doc: engine/ledger/report.h tpf_report_to_json's object (borrowed).
 */
#include <jansson.h>
void tpf_metrics_set_ledger(struct tpf_metrics *m, json_t *doc, const char *page, size_t len);

/*
 * Read fleet f's run ledger, compute the report over all of it and give
 * its families and page to m (tpf_metrics_set_ledger). Problems reading
 * the ledger are diagnostics in d; m keeps what it had. The first call
 * reads the whole ledger (about 3 s for 50 MB); later ones only what was
 * appended since (engine/ledger/report_follow.h). Not thread-safe: one
 * caller (watch's loop).
 */
struct tpf_fleet;
void tpf_metrics_ledger_refresh(struct tpf_metrics *m, const struct tpf_fleet *f,
				struct tpf_diags *d);

#define TPF_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/*
 * Serve GET /metrics on addr, "HOST:PORT" ("[V6]:PORT" for IPv6), on a
 * libmicrohttpd thread, and observe the Cloud TPU API's requests (see
 * tpf_metrics_api_request) until tpf_metrics_free. HOST must be an IP
 * address or "localhost" (127.0.0.1): names are not resolved, so the
 * socket is bound exactly where asked and never to every interface by
 * default; an empty host (":9100") is refused. A non-loopback address
 * such as 0.0.0.0 or 10.0.0.5 is served only because it was written out.
 * PORT 0 picks a free port. *bound (caller frees) is set to the address
 * actually bound, "HOST:PORT", and *loopback to 1 when it is 127.0.0.0/8
 * or ::1 (0: other machines may scrape it). Errors (TPF_ERROR with a diagnostic): a
 * malformed address, the bind's own error (in use, not this machine's).
 */
int tpf_metrics_serve(struct tpf_metrics *m, const char *addr, char **bound, int *loopback,
		      struct tpf_diags *d);

/* Parse addr as above into a socket address (for tests too). Returns 0, or
 * TPF_ERROR with a diagnostic. *loopback is set to 1 for 127.0.0.0/8 and
 * ::1. */
int tpf_metrics_parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len,
			   int *loopback, struct tpf_diags *d);

#endif
