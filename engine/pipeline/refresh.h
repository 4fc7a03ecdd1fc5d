/*
 * Refresh: what is live now. One provider list per zone (the fleet's zones
 * plus any zone a state node is in, so a node in a zone the fleet file no
 * longer names is still found), then optionally a session probe per
 * provisioned worker.
 */
#ifndef TPF_REFRESH_H
#define TPF_REFRESH_H

#include "plan/plan.h"
#include "providers/provider.h"

/* Fill *live (caller releases) with the fleet's nodes that this state owns
 * (plan/ownership.h). Errors: the provider's, with diagnostics; callers
 * must not plan deletions on a failed refresh. TPF_EFOREIGN when a node
 * with the fleet's label belongs to another state: it is left out of
 * *live, and the caller stops (a watch stops for good). */
int tpf_refresh(struct tpf_provider *prov, const struct tpf_fleet *f, const struct tpf_state *st,
		struct tpf_live_set *live, struct tpf_diags *d);

/*
 * Ask every provisioned worker of every READY node for its session status
 * (engine/workers/provision.h tpf_provision_probe), up to `parallelism` at once.
 * Facts are appended to *out (caller releases). An unreachable worker gives
 * a fact with session NULL, not an error. Providers without a transport
 * give no facts. once: one connection attempt per pinned worker
 * (tpf_provision_probe), so a worker that is down costs one connect, not
 * the transport's retry budget. skip (may be NULL) leaves out the workers
 * it returns 1 for, with no fact: watch's session check skips the workers
 * whose job wait answered lately (engine/watch/watch_attach.c), as the wait
 * already says what a probe would.
 */
typedef int (*tpf_probe_skip_fn)(void *arg, const struct tpf_state_node *sn, int worker);
int tpf_probe_jobs(struct tpf_provider *prov, const struct tpf_state *st,
		       const struct tpf_live_set *live, int parallelism, int once,
		       tpf_probe_skip_fn skip, void *skip_arg, struct tpf_job_facts *out,
		       struct tpf_diags *d);

#endif
