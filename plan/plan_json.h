/*
 * `tpuform show -json PLANFILE`: a saved plan as Terraform's machine-
 * readable plan (`terraform show -json PLANFILE`, docs/terraform-
 * behaviour.md section 5), for pipelines that read plans, e.g. a policy
 * check between `plan -out` and `apply PLANFILE`. Pure.
 */
#ifndef TPF_PLAN_JSON_H
#define TPF_PLAN_JSON_H

#include <jansson.h>
#include "plan/plan.h"

/* The show format's version: Terraform's plan JSON version whose keys it
 * mirrors. Readers reject an unknown major version. */
#define TPF_PLAN_SHOW_FORMAT "1.2"

/*
 * The JSON document (new reference; caller json_decref):
 *   format_version, tpuform_version, fleet, lineage, serial, commit,
 *   fleet_sha256, plan_mode ("normal", "destroy", "refresh-only"),
 *   targets (the -target names, [] when none),
 *   resource_changes: one per action, {address, type "node", name,
 *     change: {actions, before, after, replace_paths}, action_reason
 *     (Terraform's, where one fits: "replace_because_tainted",
 *     "replace_because_cannot_update", "replace_by_request",
 *     "delete_because_count_index", "delete_because_no_resource_config"),
 *     reason (tpuform's code), reason_text, workers (to provision)};
 *     actions are Terraform's: ["create"], ["delete"], ["delete","create"]
 *     (a replace), ["update"] (updates, restarts, waits), ["forget"]
 *     (dropped from the state only);
 *   resource_drift: for a refresh-only plan, its actions in the same form
 *     (["delete"] gone, ["update"] changed, ["create"] found), and
 *     resource_changes is then [];
 *   unconverged: what is not as declared (tpf_unconverged_to_json);
 *   applyable (the plan changes something), complete (no -target),
 *   errored (false: an errored plan is never saved).
 * before is {"id", "zone"} of the existing node (null for a create),
 * after the declared node's attributes (null for a delete or forget).
 */
json_t *tpf_plan_show_json(const struct tpf_plan *p);

#endif
