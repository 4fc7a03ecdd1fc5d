/*
 * A job's checkpoint outlives its VM (issue 21, docs/recovery.md): what
 * the workers report as their job's last checkpoint (job facts, from the
 * probe or the job waits: templates/bootstrap.sh status, "TPUFORM
 * checkpoint=...") is recorded per node in the state (state/state.h
 * last_checkpoint, checkpoint_at), so that the job on a replacement VM,
 * whose disk is new, starts with TPUFORM_LAST_CHECKPOINT set from it
 * (engine/workers/provision.c).
 */
#ifndef TPF_ENGINE_CHECKPOINTS_H
#define TPF_ENGINE_CHECKPOINTS_H

#include "plan/plan.h"
#include "state/state.h"

/*
 * The checkpoint facts says for node `node`: the report of its
 * lowest-numbered worker that reported one (the workers of a multi-host
 * job checkpoint together; worker 0 normally writes). Borrowed from
 * facts; NULL: none reported.
 */
const char *tpf_checkpoint_of(const struct tpf_job_facts *facts, const char *node);

/* How many nodes of st the facts would give a new last_checkpoint (0: a
 * save would change nothing). Pure. */
size_t tpf_checkpoints_news(const struct tpf_state *st, const struct tpf_job_facts *facts);

/*
 * Record each node's reported checkpoint in st (state/state.h
 * tpf_state_record_checkpoint; at: RFC 3339, when tpuform learnt it) and
 * call on_change (may be NULL) with each node whose record changed, after
 * the change. Returns the number changed. Memory only: the caller holds
 * the state's lock and saves.
 */
size_t tpf_checkpoints_record(struct tpf_state *st, const struct tpf_job_facts *facts,
			      const char *at,
			      void (*on_change)(const struct tpf_state_node *sn, void *ctx),
			      void *ctx);

/*
 * "last checkpoint 1200, 4m ago" for node sn at wall-clock time `now`
 * (seconds since the epoch), the words events add when a node is lost
 * (caller frees); "no checkpoint reported" when it has none; the age is
 * left out when checkpoint_at cannot be read.
 */
char *tpf_checkpoint_words(const struct tpf_state_node *sn, double now);

#endif
