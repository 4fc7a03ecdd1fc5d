/*
 * Rendering a worker's bootstrap script (templates/bootstrap.sh) for a
 * state node: pure, no I/O. Used by plan/diff.c (is the running script the
 * one the worker would get now?) and engine/workers/provision.c (upload it).
 */
#ifndef TPF_WORKER_SCRIPT_H
#define TPF_WORKER_SCRIPT_H

#include "config/config.h"
#include "model/live.h"
#include "state/state.h"

/* Session name for a fleet: "tpuform-<fleet>" (docs/design.md section 5). Caller frees. */
char *tpf_session_name(const char *fleet);

/*
 * Render the script worker `worker` of node `n` would get now (from n->job,
 * n->generation, the fleet's name, session and secrets). TPUFORM_RETRY is
 * n->generation + n->workers[worker].restarts (docs/design.md section 5: +1 at each
 * re-creation or restart; the workers of a restart unit share one count). The hash covers the secrets file's hash, so a
 * changed secret changes it. Caller frees the script; *hash_out (caller
 * frees) gets its "sha256:..." hash (of the exact bytes, the same form the
 * script records in run/script.sha256).
 */
char *tpf_provision_render(const struct tpf_fleet *f, const struct tpf_state_node *n,
			   const struct tpf_live_node *live, int worker, char **hash_out);

/*
 * The "sha256:..." hash tpf_provision_render would give in *hash_out, the
 * same string for the same arguments, without building the whole script
 * (only its per-worker head; the fixed body is hashed where it lies, and
 * only the first time this head is seen: plan/script_hash_memo.h). For
 * plan/diff.c, which needs only the hash. Caller frees.
 */
char *tpf_provision_hash(const struct tpf_fleet *f, const struct tpf_state_node *n,
			 const struct tpf_live_node *live, int worker);

/* How the worker gets its source: "none" (no commit), "present" (local
 * provider: tpuform checks it out), "bundle" or "clone" (source.transfer).
 * Static string. */
const char *tpf_worker_source_mode(const struct tpf_fleet *f, const struct tpf_state_node *n);

/* Workers of the node per its recipe, at least 1. */
int tpf_node_worker_count(const struct tpf_state_node *n);

#endif
