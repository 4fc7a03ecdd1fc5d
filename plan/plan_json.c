/*
 * A saved plan in the shape of Terraform's `show -json` (plan/plan_json.h).
 */
#include "plan/plan_json.h"

#include <string.h>

static json_t *actions_of(const struct tpf_action *a, int drift)
{
	switch (a->kind) {
	case TPF_ACT_CREATE: return json_pack("[s]", "create");
	case TPF_ACT_DELETE: return json_pack("[s]", "delete");
	case TPF_ACT_REPLACE: return json_pack("[s,s]", "delete", "create");
	case TPF_ACT_FORGET: return json_pack("[s]", drift ? "delete" : "forget");
	case TPF_ACT_UPDATE:
		if (drift && a->adopt)
			return json_pack("[s]", "create");
		return json_pack("[s]", "update");
	case TPF_ACT_RESTART:
	case TPF_ACT_WAIT: return json_pack("[s]", "update");
	}
	return json_pack("[s]", "no-op");
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* The declared node's attributes (what the node will be). */
static json_t *after_of(const struct tpf_desired_node *dn)
{
	json_t *labels = json_object();
	for (size_t i = 0; i < dn->recipe.labels.n; i++)
		json_object_set_new(labels, dn->recipe.labels.items[i].key,
				    str_or_null(dn->recipe.labels.items[i].value));
	return json_pack("{s:s,s:i,s:o,s:o,s:s,s:o,s:i,s:b,s:o}", "group", dn->group, "index",
			 dn->index, "accelerator_type", str_or_null(dn->recipe.accelerator_type),
			 "runtime_version", str_or_null(dn->recipe.runtime_version), "scheduling",
			 tpf_recipe_scheduling(&dn->recipe), "zone", str_or_null(dn->recipe.zone),
			 "workers", dn->recipe.workers, "queued", dn->recipe.queued, "labels", labels);
}

static json_t *change_of(const struct tpf_action *a, int drift)
{
	int exists = a->kind != TPF_ACT_CREATE && !(drift && a->adopt);
	int goes = a->kind == TPF_ACT_DELETE || a->kind == TPF_ACT_FORGET;
	json_t *before = exists ? json_pack("{s:o,s:o}", "id", str_or_null(a->id), "zone",
					    str_or_null(a->zone))
				: json_null();
	json_t *after = goes || !a->desired ? json_null() : after_of(a->desired);
	json_t *paths = json_array();
	for (size_t i = 0; i < a->nchanges; i++)
		if (a->changes[i].forces)
			json_array_append_new(paths, json_pack("[s]", a->changes[i].field));
	return json_pack("{s:o,s:o,s:o,s:o}", "actions", actions_of(a, drift), "before", before,
			 "after", after, "replace_paths", paths);
}

static json_t *resource_change(const struct tpf_action *a, int drift)
{
	json_t *rc = json_pack("{s:s,s:s,s:s,s:o}", "address", a->node, "type", "node", "name",
			       a->node, "change", change_of(a, drift));
	const char *tr = tpf_reason_info(a->reason_kind)->terraform;
	if (tr)
		json_object_set_new(rc, "action_reason", json_string(tr));
	if (a->reason_code)
		json_object_set_new(rc, "reason", json_string(a->reason_code));
	if (a->reason)
		json_object_set_new(rc, "reason_text", json_string(a->reason));
	json_t *w = json_array();
	for (size_t i = 0; i < a->nworkers; i++)
		json_array_append_new(w, json_integer(a->workers[i]));
	json_object_set_new(rc, "workers", w);
	return rc;
}

json_t *tpf_plan_show_json(const struct tpf_plan *p)
{
	json_t *changes = json_array(), *drift = json_array();
	for (size_t i = 0; i < p->n; i++)
		json_array_append_new(p->refresh_only ? drift : changes,
				      resource_change(&p->actions[i], p->refresh_only));
	json_t *targets = json_array();
	for (size_t i = 0; i < p->ntargets; i++)
		json_array_append_new(targets, json_string(p->targets[i]));
	json_t *unconv = json_array();
	for (size_t i = 0; i < p->nunconverged; i++)
		json_array_append_new(unconv, tpf_unconverged_to_json(&p->unconverged[i]));
	const char *mode = p->refresh_only ? "refresh-only" : p->destroy ? "destroy" : "normal";
	json_t *o = json_pack("{s:s,s:s,s:o,s:o,s:I,s:o,s:o,s:s,s:o}", "format_version",
			      TPF_PLAN_SHOW_FORMAT, "tpuform_version", TPF_VERSION, "fleet",
			      str_or_null(p->fleet), "lineage", str_or_null(p->lineage), "serial",
			      (json_int_t)p->serial, "commit", str_or_null(p->commit), "fleet_sha256",
			      str_or_null(p->fleet_sha256), "plan_mode", mode, "targets", targets);
	json_object_set_new(o, "resource_changes", changes);
	json_object_set_new(o, "resource_drift", drift);
	json_object_set_new(o, "unconverged", unconv);
	json_object_set_new(o, "applyable", json_boolean(tpf_plan_has_changes(p)));
	json_object_set_new(o, "complete", json_boolean(p->ntargets == 0));
	json_object_set_new(o, "errored", json_false());
	return o;
}
