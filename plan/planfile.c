/*
 * Saved plans: the plan as JSON (`plan -out=FILE`, `apply FILE`).
 *
 * Like Terraform's plan file (docs/terraform-behaviour.md section 3) it embeds the
 * lineage and serial of the state it was made from, so apply can refuse a
 * stale plan, and each action's full desired node, so apply needs nothing
 * from the fleet file but its secrets and provider settings. Secrets are
 * never written: only their hash.
 */
#include "plan/plan.h"
#include "model/json_field.h"
#include "plan/plan_internal.h"
#include "util/xalloc.h"

#include <string.h>

#define PLAN_FORMAT "tpuform-plan/1"

static json_t *desired_to_json(const struct tpf_desired_node *n)
{
	json_t *o = json_object();
	json_object_set_new(o, "name", json_string(n->name));
	json_object_set_new(o, "group", json_string(n->group));
	json_object_set_new(o, "index", json_integer(n->index));
	json_object_set_new(o, "recipe", tpf_recipe_to_json(&n->recipe));
	json_object_set_new(o, "job", tpf_job_to_json(&n->job));
	json_t *z = json_array();
	for (size_t i = 0; i < n->nzones; i++)
		json_array_append_new(z, json_string(n->zones[i]));
	json_object_set_new(o, "zones", z);
	return o;
}

static const char *kind_key(enum tpf_action_kind k)
{
	switch (k) {
	case TPF_ACT_CREATE: return "create";
	case TPF_ACT_DELETE: return "delete";
	case TPF_ACT_REPLACE: return "replace";
	case TPF_ACT_UPDATE: return "update";
	case TPF_ACT_RESTART: return "restart";
	case TPF_ACT_WAIT: return "wait";
	case TPF_ACT_FORGET: return "forget";
	}
	return "?";
}

json_t *tpf_unconverged_to_json(const struct tpf_unconverged *u)
{
	json_t *o = json_object();
	json_object_set_new(o, "kind", json_string(tpf_unconverged_code(u->kind)));
	json_object_set_new(o, "node", json_string(u->node));
	if (u->worker >= 0)
		json_object_set_new(o, "worker", json_integer(u->worker));
	if (u->exit_code >= 0)
		json_object_set_new(o, "exit_code", json_integer(u->exit_code));
	tpf_json_set_str(o, "reason", u->reason);
	return o;
}

json_t *tpf_plan_to_json(const struct tpf_plan *p)
{
	json_t *o = json_object();
	json_object_set_new(o, "format", json_string(PLAN_FORMAT));
	json_object_set_new(o, "tpuform_version", json_string(TPF_VERSION));
	tpf_json_set_str(o, "fleet", p->fleet);
	tpf_json_set_str(o, "lineage", p->lineage);
	json_object_set_new(o, "serial", json_integer(p->serial));
	tpf_json_set_str(o, "commit", p->commit);
	tpf_json_set_str(o, "fleet_sha256", p->fleet_sha256);
	json_object_set_new(o, "destroy", json_boolean(p->destroy));
	json_object_set_new(o, "refresh_only", json_boolean(p->refresh_only));
	json_t *targets = json_array();
	for (size_t i = 0; i < p->ntargets; i++)
		json_array_append_new(targets, json_string(p->targets[i]));
	json_object_set_new(o, "targets", targets);
	json_t *acts = json_array();
	for (size_t i = 0; i < p->n; i++) {
		const struct tpf_action *a = &p->actions[i];
		json_t *j = json_object();
		json_object_set_new(j, "kind", json_string(kind_key(a->kind)));
		json_object_set_new(j, "node", json_string(a->node));
		tpf_json_set_str(j, "reason", a->reason);
		tpf_json_set_str(j, "reason_code", a->reason_code);
		tpf_json_set_str(j, "zone", a->zone);
		tpf_json_set_str(j, "id", a->id);
		json_object_set_new(j, "adopt", json_boolean(a->adopt));
		json_object_set_new(j, "update_labels", json_boolean(a->update_labels));
		if (a->patch)
			json_object_set_new(j, "patch", json_integer(a->patch));
		if (a->gang)
			json_object_set_new(j, "gang", json_true());
		if (a->keep_parts)
			json_object_set_new(j, "keep_parts", json_true());
		tpf_json_set_str(j, "lost_slices", a->lost_slices);
		if (a->elastic) /* plan.h: 1 shrink, 2 recreate, 3 grow */
			json_object_set_new(j, "elastic", json_integer(a->elastic));
		tpf_json_set_str(j, "elastic_slices", a->elastic_slices);
		if (a->elastic_checkpoint)
			json_object_set_new(j, "elastic_checkpoint", json_true());
		json_t *w = json_array();
		for (size_t k = 0; k < a->nworkers; k++)
			json_array_append_new(w, json_integer(a->workers[k]));
		json_object_set_new(j, "workers", w);
		json_t *ch = json_array();
		for (size_t k = 0; k < a->nchanges; k++) {
			const struct tpf_change *c = &a->changes[k];
			json_t *cj = json_object();
			json_object_set_new(cj, "field", json_string(c->field));
			tpf_json_set_str(cj, "before", c->before);
			tpf_json_set_str(cj, "after", c->after);
			json_object_set_new(cj, "forces", json_boolean(c->forces));
			json_object_set_new(cj, "sensitive", json_boolean(c->sensitive));
			json_array_append_new(ch, cj);
		}
		json_object_set_new(j, "changes", ch);
		if (a->desired)
			json_object_set_new(j, "desired", desired_to_json(a->desired));
		json_array_append_new(acts, j);
	}
	json_object_set_new(o, "actions", acts);
	json_t *unconv = json_array();
	for (size_t i = 0; i < p->nunconverged; i++)
		json_array_append_new(unconv, tpf_unconverged_to_json(&p->unconverged[i]));
	json_object_set_new(o, "unconverged", unconv);
	json_t *done = json_array();
	for (size_t i = 0; i < p->ncompleted; i++) {
		const struct tpf_completed *c = &p->completed[i];
		json_t *cj = json_pack("{s:s,s:b,s:i}", "node", c->node, "deleted", c->deleted,
				       "exit_code", c->exit_code);
		tpf_json_set_str(cj, "at", c->at);
		json_array_append_new(done, cj);
	}
	json_object_set_new(o, "completed", done);
	json_object_set_new(o, "counts",
			    json_pack("{s:I,s:I,s:I}", "add", (json_int_t)p->add, "change",
				      (json_int_t)p->change, "destroy", (json_int_t)p->destroyed));
	return o;
}

static const char *jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static int desired_from_json(struct tpf_desired_node *n, json_t *j, const char *what,
			     struct tpf_diags *d)
{
	if (!json_is_object(j) || !jstr(j, "name") || !jstr(j, "group"))
		return tpf_error(d, "saved plan '%s' is malformed: an action's desired node has no name",
				 what);
	n->name = xstrdup(jstr(j, "name"));
	n->group = xstrdup(jstr(j, "group"));
	n->index = (int)json_integer_value(json_object_get(j, "index"));
	if (tpf_recipe_from_json(&n->recipe, json_object_get(j, "recipe"), what, d) < 0 ||
	    tpf_job_from_json(&n->job, json_object_get(j, "job"), what, d) < 0)
		return TPF_ERROR;
	json_t *z = json_object_get(j, "zones");
	n->nzones = json_array_size(z);
	n->zones = xcalloc(n->nzones ? n->nzones : 1, sizeof(char *));
	for (size_t i = 0; i < n->nzones; i++)
		n->zones[i] = xstrdup(json_string_value(json_array_get(z, i)));
	return 0;
}

static int kind_from(const char *s, enum tpf_action_kind *k)
{
	static const enum tpf_action_kind all[] = { TPF_ACT_CREATE, TPF_ACT_DELETE, TPF_ACT_REPLACE,
						    TPF_ACT_UPDATE, TPF_ACT_RESTART, TPF_ACT_WAIT,
						    TPF_ACT_FORGET };
	for (size_t i = 0; s && i < sizeof(all) / sizeof(all[0]); i++) {
		if (!strcmp(kind_key(all[i]), s)) {
			*k = all[i];
			return 0;
		}
	}
	return -1;
}

int tpf_plan_from_json(struct tpf_plan *p, json_t *root, const char *what, struct tpf_diags *d)
{
	memset(p, 0, sizeof(*p));
	if (!json_is_object(root) || !jstr(root, "format") || strcmp(jstr(root, "format"), PLAN_FORMAT))
		return tpf_error(d, "'%s' is not a tpuform saved plan (expected format '%s')", what,
				 PLAN_FORMAT);
	p->fleet = xstrdup(jstr(root, "fleet"));
	p->lineage = xstrdup(jstr(root, "lineage"));
	p->serial = (long)json_integer_value(json_object_get(root, "serial"));
	p->commit = xstrdup(jstr(root, "commit"));
	p->fleet_sha256 = xstrdup(jstr(root, "fleet_sha256"));
	p->destroy = json_is_true(json_object_get(root, "destroy"));
	p->refresh_only = json_is_true(json_object_get(root, "refresh_only"));
	size_t i;
	json_t *j;
	/* -target (plan/target.h); older plans have none. */
	json_t *targets = json_object_get(root, "targets");
	p->targets = xcalloc(json_array_size(targets) + 1, sizeof(char *));
	json_array_foreach(targets, i, j) {
		if (json_is_string(j))
			p->targets[p->ntargets++] = xstrdup(json_string_value(j));
	}
	json_t *acts = json_object_get(root, "actions");
	json_array_foreach(acts, i, j) {
		enum tpf_action_kind kind;
		if (kind_from(jstr(j, "kind"), &kind) < 0 || !jstr(j, "node")) {
			tpf_plan_release(p);
			return tpf_error(d, "saved plan '%s' is malformed: action %zu has no valid kind "
					    "or node", what, i);
		}
		struct tpf_action *a = tpf_plan_add(p, kind, jstr(j, "node"));
		a->reason = xstrdup(jstr(j, "reason"));
		tpf_action_set_reason_code(a, jstr(j, "reason_code"));
		a->zone = xstrdup(jstr(j, "zone"));
		a->id = xstrdup(jstr(j, "id"));
		a->adopt = json_is_true(json_object_get(j, "adopt"));
		a->update_labels = json_is_true(json_object_get(j, "update_labels"));
		a->patch = (unsigned)json_integer_value(json_object_get(j, "patch")) &
			   (TPF_PATCH_TAGS | TPF_PATCH_METADATA | TPF_PATCH_EXTERNAL_IPS);
		a->gang = json_is_true(json_object_get(j, "gang"));
		a->keep_parts = json_is_true(json_object_get(j, "keep_parts"));
		a->lost_slices = xstrdup(jstr(j, "lost_slices"));
		json_int_t el = json_integer_value(json_object_get(j, "elastic"));
		a->elastic = el >= TPF_ELASTIC_SHRINK && el <= TPF_ELASTIC_GROW ? (int)el : 0;
		a->elastic_slices = xstrdup(jstr(j, "elastic_slices"));
		a->elastic_checkpoint = json_is_true(json_object_get(j, "elastic_checkpoint"));
		json_t *w = json_object_get(j, "workers");
		a->nworkers = json_array_size(w);
		a->workers = xcalloc(a->nworkers ? a->nworkers : 1, sizeof(int));
		for (size_t k = 0; k < a->nworkers; k++)
			a->workers[k] = (int)json_integer_value(json_array_get(w, k));
		size_t k;
		json_t *c;
		json_array_foreach(json_object_get(j, "changes"), k, c) {
			tpf_action_change(a, jstr(c, "field") ? jstr(c, "field") : "?", jstr(c, "before"),
					  jstr(c, "after"), json_is_true(json_object_get(c, "forces")),
					  json_is_true(json_object_get(c, "sensitive")));
		}
		json_t *dj = json_object_get(j, "desired");
		if (dj) {
			a->desired = xcalloc(1, sizeof(*a->desired));
			if (desired_from_json(a->desired, dj, what, d) < 0) {
				tpf_plan_release(p);
				return TPF_ERROR;
			}
		}
	}
	/* Informational (apply does nothing about them); older plans have none. */
	json_array_foreach(json_object_get(root, "unconverged"), i, j) {
		enum tpf_unconverged_kind kind;
		if (tpf_unconverged_kind_from(jstr(j, "kind"), &kind) < 0 || !jstr(j, "node"))
			continue;
		json_t *w = json_object_get(j, "worker"), *x = json_object_get(j, "exit_code");
		struct tpf_unconverged *u = tpf_plan_add_unconverged(
			p, kind, jstr(j, "node"), w ? (int)json_integer_value(w) : -1, jstr(j, "reason"));
		u->exit_code = x ? (int)json_integer_value(x) : -1;
	}
	json_array_foreach(json_object_get(root, "completed"), i, j) {
		if (jstr(j, "node"))
			tpf_plan_add_completed(p, jstr(j, "node"), json_is_true(json_object_get(j, "deleted")),
					       (int)json_integer_value(json_object_get(j, "exit_code")),
					       jstr(j, "at"));
	}
	json_t *counts = json_object_get(root, "counts");
	p->add = (size_t)json_integer_value(json_object_get(counts, "add"));
	p->change = (size_t)json_integer_value(json_object_get(counts, "change"));
	p->destroyed = (size_t)json_integer_value(json_object_get(counts, "destroy"));
	return 0;
}

/* The summaries are Terraform's own (docs/terraform-behaviour.md section 3),
 * so people and pipelines recognise them. */
int tpf_plan_check_stale(const struct tpf_plan *p, const char *state_lineage, long state_serial,
			 const char *fleet_sha256, struct tpf_diags *d)
{
	if (p->lineage && (!state_lineage || strcmp(p->lineage, state_lineage))) {
		tpf_errorx(d, NULL, "The given plan file was created from a different state lineage.",
			   "Saved plan does not match the given state");
		return TPF_ESTALE;
	}
	if (p->serial != state_serial) {
		tpf_errorx(d, NULL,
			   "The given plan file can no longer be applied because the state was "
			   "changed by another operation after the plan was created.",
			   "Saved plan is stale");
		return TPF_ESTALE;
	}
	if (p->fleet_sha256 && fleet_sha256 && strcmp(p->fleet_sha256, fleet_sha256)) {
		tpf_errorx(d, NULL,
			   "Run 'tpuform plan -out=FILE' again to plan with the current fleet file.",
			   "Saved plan is stale: the fleet file changed after the plan was created");
		return TPF_ESTALE;
	}
	return 0;
}
