/*
 * The pipeline's targeted operations (docs/ARCHITECTURE.md,
 * engine/pipeline/pipeline.h): plans with -target, -replace and -refresh-only, the
 * state-only apply of a refresh-only plan, and `tpuform import`. The rules
 * are pure and live in plan/ (plan/target.h, plan/refresh_only.h); this
 * file only feeds them the pipeline and writes the state.
 */
#ifndef TPF_ENGINE_TARGETED_H
#define TPF_ENGINE_TARGETED_H

#include "engine/pipeline/pipeline.h"
#include "plan/target.h"

/*
 * tpf_pipeline_plan for a plan mode (after tpf_pipeline_refresh): the
 * normal or destroy plan, or a refresh-only one, then -replace, then
 * -target applied to it. Errors: the diff's, and unknown -target or
 * -replace names (plan/target.h). Call tpf_plan_mode_check before the
 * refresh so that a bad combination costs nothing.
 */
int tpf_pipeline_plan_mode(struct tpf_pipeline *s, const struct tpf_plan_mode *m,
			  struct tpf_plan *p);

/*
 * Carry out refresh-only plan p: write what it records into the state
 * and save it; no provider call. *res is zeroed (nothing is added,
 * changed or destroyed, as Terraform counts a refresh-only apply).
 * Returns 0 or the state save's error, with diagnostics in s->d (nodes
 * that changed again since the plan are warnings: plan/refresh_only.h).
 */
int tpf_pipeline_apply_refresh_only(struct tpf_pipeline *s, const struct tpf_plan *p,
				   struct tpf_apply_result *res);

/*
 * `tpuform import NODE ZONE/NAME` (Terraform's import, docs/terraform-
 * behaviour.md section 5): adopt a node created outside tpuform. NODE
 * must be declared by the fleet and not in its state; `id` is "ZONE/NAME"
 * and NAME must be NODE (tpuform finds nodes by name). The node is read
 * with the provider's get op (the only read of an unlabelled node), given
 * the declared node's labels (tpuform-fleet, -group, -index and the
 * group's own; labels it had are replaced, as a created node's are), and
 * recorded in the state (plan/refresh_only.h tpf_state_record_live), which
 * is saved. *out receives the node as recorded (caller releases). Refused,
 * with a diagnostic and nothing changed: NODE already in state ("Resource
 * already managed by tpuform"), not declared, a malformed id, no such node
 * ("Cannot import non-existent remote object"), a node labelled for
 * another fleet, a provider without get. A declared recipe that differs
 * (accelerator type, runtime version, a zone outside the group's) is a
 * warning: the next plan replaces the node.
 */
int tpf_pipeline_import(struct tpf_pipeline *s, const char *node, const char *id,
		       struct tpf_live_node *out);

/*
 * Carry out refresh-only plan p on st, in memory (the caller saves):
 * forget the deleted nodes, record the found ones (state/state.h
 * tpf_state_record_live,
 * from their live node in `live`, the nodes refreshed now), and write the
 * changed ids and zones. An action whose node is no longer as planned (a
 * found node gone from `live`, or live under another id; a changed node
 * gone from the state) is skipped with a warning naming it. Returns the
 * number of nodes whose state entry changed.
 */
size_t tpf_refresh_only_apply(struct tpf_state *st, const struct tpf_plan *p,
			      const struct tpf_live_set *live, struct tpf_diags *d);

#endif
