/*
 * `tpuform import NODE ZONE/NAME` (engine/pipeline/targeted.h): read one node the
 * fleet does not know yet, label it as the fleet's, record it.
 */
#include "engine/pipeline/targeted.h"
#include "model/chips.h"
#include "model/node_state.h"
#include "plan/ownership.h"
#include "plan/refresh_only.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* "ZONE/NAME" -> zone and name (caller frees both). 0, or TPF_ERROR. */
static int parse_id(struct tpf_pipeline *s, const char *node, const char *id, char **zone,
		    char **name)
{
	const char *slash = strchr(id, '/');
	if (!slash || slash == id || !slash[1] || strchr(slash + 1, '/')) {
		char *hint = xasprintf("The ID is the node's zone and name: tpuform import %s "
				       "us-central2-b/%s",
				       node, node);
		tpf_errorx(&s->d, NULL, hint, "invalid import ID '%s': expected ZONE/NAME", id);
		free(hint);
		return TPF_ERROR;
	}
	*zone = xstrndup(id, (size_t)(slash - id));
	*name = xstrdup(slash + 1);
	if (strcmp(*name, node))
		return tpf_errorx(&s->d, NULL,
				  "tpuform finds a fleet's nodes by name, so a node is imported under "
				  "its own name: declare a group and count that give that name.",
				  "cannot import TPU '%s' as node '%s': the names differ", *name, node);
	return 0;
}

/* The declared node called `node` (borrowed from *set, which the caller
 * releases), or NULL with an error. */
static const struct tpf_desired_node *declared(struct tpf_pipeline *s, const char *node,
					       struct tpf_desired_set *set)
{
	struct tpf_diags quiet = TPF_DIAGS_INIT; /* quota placement notes do not matter here */
	int rc = tpf_desired_compute(set, &s->fleet, NULL, &s->state, &quiet);
	tpf_diags_release(&quiet);
	const struct tpf_desired_node *dn = rc ? NULL : tpf_desired_find(set, node);
	if (!dn)
		tpf_errorx(&s->d, NULL,
			   "Before importing a node, declare it: a node of fleet F, group G and "
			   "index I is called F-G-I, for I below the group's count.",
			   "node '%s' is not declared by fleet '%s'", node, s->fleet.name);
	return dn;
}

/* A live field that is set and is not the declared one (NULL declared: a
 * Compute Engine group has no accelerator type or runtime version). */
static int differs(const char *live, const char *declared)
{
	return live && (!declared || strcmp(live, declared));
}

/* A node found: refuse another fleet's or another state's; warn when the next plan will
 * replace it (the same fields tpf_diff says force replacement). */
static int check_found(struct tpf_pipeline *s, const struct tpf_desired_node *dn,
		       const struct tpf_live_node *ln)
{
	const char *owner = tpf_kvlist_get(&ln->recipe.labels, TPF_LABEL_FLEET);
	if (owner && strcmp(owner, s->fleet.name))
		return tpf_errorx(&s->d, dn->name, "A node belongs to one fleet only.",
				  "node '%s' carries the label %s=%s: it belongs to fleet '%s'",
				  dn->name, TPF_LABEL_FLEET, owner, owner);
	if (tpf_owner_of(ln, &s->state) == TPF_OWNER_OTHER)
		return tpf_errorx(&s->d, dn->name,
				  "A node belongs to one state only: run tpuform with the state that "
				  "owns it, or rename 'fleet' in this fleet file.",
				  "node '%s' carries the label %s=%s: another state of fleet '%s' owns it",
				  dn->name, TPF_LABEL_LINEAGE,
				  tpf_kvlist_get(&ln->recipe.labels, TPF_LABEL_LINEAGE),
				  s->fleet.name);
	int zone_ok = 0;
	for (size_t i = 0; i < dn->nzones; i++)
		zone_ok |= ln->recipe.zone && !strcmp(dn->zones[i], ln->recipe.zone);
	const char *why = !zone_ok ? "its zone is not among its group's zones"
			  : differs(tpf_recipe_type(&ln->recipe), tpf_recipe_type(&dn->recipe))
				  ? dn->recipe.compute.api == TPF_API_COMPUTE
					    ? "its machine type differs from its group's"
					    : "its accelerator type differs from its group's"
			  : differs(ln->recipe.runtime_version, dn->recipe.runtime_version)
				  ? "its runtime version differs from its group's"
				  : NULL;
	if (why)
		tpf_warn(&s->d, dn->name, "node '%s' is imported, but %s: the next plan replaces it",
			 dn->name, why);
	return 0;
}

int tpf_pipeline_import(struct tpf_pipeline *s, const char *node, const char *id,
		       struct tpf_live_node *out)
{
	char *zone = NULL, *name = NULL;
	struct tpf_desired_set set = { 0 };
	const struct tpf_desired_node *dn = NULL;
	int rc = TPF_ERROR;
	if (tpf_state_find(&s->state, node)) {
		char *hint = xasprintf("tpuform is already managing a remote object for %s. To import "
				       "to this address you must first remove the existing object "
				       "from the state ('tpuform state rm %s').",
				       node, node);
		tpf_errorx(&s->d, NULL, hint, "Resource already managed by tpuform");
		free(hint);
		goto done;
	}
	if (!(dn = declared(s, node, &set)) || parse_id(s, node, id, &zone, &name))
		goto done;
	if (!s->prov->ops->get) {
		tpf_error(&s->d, "the %s provider cannot import nodes", s->prov->ops->name);
		goto done;
	}
	rc = s->prov->ops->get(s->prov, zone, name, out, &s->d);
	if (rc == TPF_ENOTFOUND) {
		char *hint = xasprintf("While attempting to import an existing object to \"%s\", the "
				       "provider found no node '%s' in zone '%s'. Only existing "
				       "nodes can be imported; check the zone and the name, or use "
				       "\"tpuform apply\" to create it.",
				       node, name, zone);
		tpf_errorx(&s->d, NULL, hint, "Cannot import non-existent remote object");
		free(hint);
	}
	if (rc || (rc = check_found(s, dn, out)))
		goto done;
	/* Labelled first, recorded second: if the save fails, the next plan
	 * finds the node by its labels and adopts it. */
	rc = s->prov->ops->set_labels(s->prov, zone, name, &dn->recipe.labels, &s->d);
	if (rc)
		goto done;
	tpf_kvlist_release(&out->recipe.labels);
	tpf_kvlist_copy(&out->recipe.labels, &dn->recipe.labels);
	tpf_state_record_live(&s->state, dn->group, dn->index, out, &dn->recipe);
	if (!s->state.fleet)
		s->state.fleet = xstrdup(s->fleet.name);
	rc = tpf_state_save(&s->state, &s->d);
done:
	free(zone);
	free(name);
	tpf_desired_release(&set);
	return rc;
}
