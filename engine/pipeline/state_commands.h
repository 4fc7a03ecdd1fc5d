/*
 * The state commands that act on the pipeline's backend: Terraform's
 * force-unlock and state push (docs/terraform-behaviour.md).
 */
#ifndef TPF_ENGINE_STATE_COMMANDS_H
#define TPF_ENGINE_STATE_COMMANDS_H

#include "engine/pipeline/pipeline.h"

/* Terraform's force-unlock on the pipeline's backend (opened here when the
 * pipeline has none). 0 when unlocked, else a diagnostic in s->d. */
int tpf_pipeline_force_unlock(struct tpf_pipeline *s, const char *id);

/*
 * Terraform's state push, and tpuform's way to move state between
 * backends: read the state at `source` (a file, or gs://BUCKET[/PREFIX] as
 * tpf_source_backend_open says; it must exist and belong to this fleet)
 * and write it to the pipeline's backend, whose lock the pipeline holds.
 * Lineage and serial are checked unless force (tpf_state_push_check).
 * The source is left as it was. *serial_out (may be NULL): the serial written.
 */
int tpf_pipeline_state_push(struct tpf_pipeline *s, const char *source, int force,
			   long *serial_out);

#endif
