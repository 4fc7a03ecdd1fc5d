/*
 * The run ledger's writer: a consumer of the engine's typed events
 * (engine/events.h) that appends each one, as one JSON line, to the
 * fleet's ledger beside its state (state/ledger_store.h says where and how it
 * is stored, bounded and rotated; docs/ledger.md is the format).
 *
 * Every line carries what the event carries plus what the writer knows of
 * the node: group, zone, API, accelerator or machine type, chips, VMs,
 * scheduling class, generation and retry. Events that do not say it (an
 * executor's READY carries only the node) are completed from the last
 * line written for that node, or from the state as it was when the
 * writer opened. `plan`, `apply`, `destroy` and `watch` write it
 * (engine/pipeline/pipeline.c, engine/watch/watch_hooks.c).
 *
 * Heartbeats and per-round notes (PROGRESS, WARNING, LOCKED, REPLAN,
 * METRICS, NOTIFY_PROBLEM) are not written: a quiet `watch` round writes
 * nothing, so the ledger grows with what happens, not with time.
 */
#ifndef TPF_ENGINE_LEDGER_WRITER_H
#define TPF_ENGINE_LEDGER_WRITER_H

#include "config/config.h"
#include "engine/events.h"
#include "state/ledger_store.h"
#include "state/state.h"
#include "util/diag.h"

/* The line format's version (the "v" field); docs/ledger.md. */
#define TPF_LEDGER_FORMAT 1

struct tpf_run_ledger;

/*
 * Where fleet f's ledger lives: beside its local state file, or under its
 * Cloud Storage prefix. *gcs is storage for the Cloud Storage config that
 * w may point to; both borrow from f.
 */
void tpf_fleet_ledger_where(const struct tpf_fleet *f, struct tpf_ledger_where *w,
			    struct tpf_backend_gcs_config *gcs);

/*
 * Open fleet f's ledger for command `command` ("apply", "watch", ...;
 * static), learning the nodes of st (may be NULL; copied, not kept).
 * Returns NULL with a warning in d when it cannot be opened: the caller
 * carries on without a ledger ($TPUFORM_LEDGER=off: NULL and nothing
 * said). Free with tpf_run_ledger_close.
 */
struct tpf_run_ledger *tpf_run_ledger_open(const struct tpf_fleet *f, const struct tpf_state *st,
					   const char *command, struct tpf_diags *d);

/* Learn nodes of st the writer does not know yet (watch: each round). */
void tpf_run_ledger_learn(struct tpf_run_ledger *r, const struct tpf_state *st);

/*
 * Append ev (thread-safe; r NULL: nothing). A failed append is counted
 * and reported by close; the event is lost, never retried out of order.
 */
void tpf_run_ledger_event(struct tpf_run_ledger *r, const struct tpf_event *ev);

/* The line ev makes (new reference), at wall time `at` (seconds since the
 * epoch): for tests and the writer. */
json_t *tpf_run_ledger_line(struct tpf_run_ledger *r, const struct tpf_event *ev, double at);

/* How many events were written and lost so far. */
void tpf_run_ledger_counts(const struct tpf_run_ledger *r, long *written, long *lost);

/*
 * Close (NULL ok). When appends failed, one warning in d (may be NULL)
 * says how many events were lost and the first error.
 */
void tpf_run_ledger_close(struct tpf_run_ledger *r, struct tpf_diags *d);

/*
 * `plan`: write one PLANNED event for plan p of fleet f (state st), its
 * summary line as the message. Problems are warnings in d.
 */
struct tpf_plan;
void tpf_run_ledger_plan(const struct tpf_fleet *f, const struct tpf_state *st,
			 const struct tpf_plan *p, struct tpf_diags *d);

/* "2026-11-26T08:49:55.123Z": UTC to the millisecond (out >= 40 bytes);
 * util/timeutil.h's tpf_rfc3339_fmt with 3 digits. */
void tpf_ledger_time(double wall, char *out, size_t outlen);

#endif
