/*
 * What `apply` and `destroy` act on, written to the run ledger as `watch`
 * writes it (issue 29: "record what happened, whoever saw it"): a lost
 * node the plan replaces is a `preempted` line, a worker whose job
 * failed or whose session died and that the plan restarts is a
 * `job_failed` line. Never twice for one loss: whoever acts on it (watch's
 * heal, or an apply under the state lock) writes it, and after the act
 * the next plan no longer sees it.
 */
#ifndef TPF_ENGINE_PIPELINE_APPLY_SEEN_H
#define TPF_ENGINE_PIPELINE_APPLY_SEEN_H

#include "engine/ledger/ledger_writer.h"
#include "plan/plan.h"
#include "state/state.h"

/*
 * Write to r (NULL: nothing) a `preempted` line for each replace of p whose
 * reason means a lost node (plan/reason_code.h "lost"), and a `job_failed`
 * line for each worker of a restart of p whose job facts say its job exited
 * non-zero or its session died (exit_code -1), with the retry it ran as
 * (generation + the worker's restarts, as watch counts it). Lines only;
 * nothing else sees these events.
 */
void tpf_apply_seen_write(struct tpf_run_ledger *r, const struct tpf_plan *p,
			  const struct tpf_state *st, const struct tpf_job_facts *facts);

#endif
