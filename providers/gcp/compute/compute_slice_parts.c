/*
 * A slice's three parts -- instance template N-t (global), workload policy
 * N-wp (regional), MIG N (zonal) -- made and deleted with ownership checks
 * (providers/gcp/compute/compute_engine.h; docs/compute-engine.md "Undo and ownership of a
 * slice's parts"; docs/design.md section 4).
 *
 * The names are derived from the node's, so a name alone says nothing of
 * whose a part is: another state's slice of the same name, or a leftover
 * of this state's crashed apply, answers an insert with 409 alreadyExists.
 * So each part carries this state's lineage (the template in its
 * properties.labels, the MIG and the policy in their description, which
 * is all a resource policy has: ResourcePolicy has no labels field,
 * https://cloud.google.com/compute/docs/reference/rest/v1/resourcePolicies),
 * a create reuses an existing part only when it is ours (crash recovery)
 * and refuses it otherwise, and the undo of a failed create deletes only
 * the parts that create made or proved ours, never one it refused. Deletes read each part first: none of the
 * three delete methods takes a precondition (no etag, no id; reference:
 * instanceTemplates.delete, resourcePolicies.delete,
 * instanceGroupManagers.delete take only requestId).
 */
#include "providers/gcp/compute/compute_engine.h"
#include "providers/gcp/compute/compute_internal.h"
#include "providers/gcp/gcp_client_internal.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* POST body to <base>/<path> with a requestId, then wait for its
 * operation. *conflict: 1 when the API answered 409 (the name is taken),
 * then without a diagnostic. */
static int insert(struct tpf_compute_client *cc, const char *path, json_t *body,
		  const char *what, const char *address, int *conflict, struct tpf_diags *d)
{
	char *url = xasprintf("%s/%s", cc->base, path);
	json_t *op = NULL;
	struct tpf_gcp_outcome res = { .err = TPF_GCP_ERROR_INIT };
	int rc = tpf_gcp_call(cc->c, "POST", url, body, what, address,
			      TPF_GCP_QUIET(TPF_GCP_CONFLICT) | TPF_GCP_REQUEST_ID, &op, &res, d);
	*conflict = rc < 0 && res.api_error && res.cls == TPF_GCP_CONFLICT;
	tpf_gcp_error_release(&res.err);
	if (rc == 0)
		rc = tpf_compute_wait_op(cc, op, what, address, d);
	json_decref(op);
	free(url);
	return rc;
}

/* GET <base>/<path> into *out; TPF_ENOTFOUND without a diagnostic. */
static int read_part(struct tpf_compute_client *cc, const char *path, const char *fields,
		     const char *what, const char *address, json_t **out, struct tpf_diags *d)
{
	char *q = tpf_gcp_fields_query('?', fields);
	char *url = xasprintf("%s/%s%s", cc->base, path, q);
	free(q);
	int rc = tpf_gcp_call(cc->c, "GET", url, NULL, what, address,
			      TPF_GCP_QUIET(TPF_GCP_NOTFOUND), out, NULL, d);
	free(url);
	return rc;
}

/* DELETE <base>/<path> and wait; gone already is 0; a delete already
 * under way (400 resourceNotReady) is waited for (compute_internal.h). */
static int delete_path(struct tpf_compute_client *cc, const char *path, const char *what,
		       const char *address, struct tpf_diags *d)
{
	char *url = xasprintf("%s/%s", cc->base, path);
	int rc = tpf_compute_delete_url(cc, url, what, address, d);
	free(url);
	return rc;
}

char *tpf_compute_part_lineage(json_t *part)
{
	const char *l = json_string_value(json_object_get(
		json_object_get(json_object_get(part, "properties"), "labels"), TPF_LABEL_LINEAGE));
	if (l)
		return xstrdup(l);
	json_t *desc = json_loads(json_string_value(json_object_get(part, "description")) ?: "", 0,
				  NULL);
	l = json_string_value(json_object_get(desc, TPF_LABEL_LINEAGE));
	char *out = l ? xstrdup(l) : NULL;
	json_decref(desc);
	return out;
}

char *tpf_compute_policy_description(const char *slice, const struct tpf_recipe *r)
{
	json_t *o = json_object();
	const char *keep[] = { TPF_LABEL_FLEET, TPF_LABEL_LINEAGE };
	for (size_t i = 0; i < sizeof(keep) / sizeof(*keep); i++)
		if (tpf_kvlist_get(&r->labels, keep[i]))
			json_object_set_new(o, keep[i], json_string(tpf_kvlist_get(&r->labels, keep[i])));
	json_object_set_new(o, TPF_COMPUTE_SLICE_LABEL, json_string(slice));
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

/* The parts, in the order they are made. */
struct part {
	unsigned bit;
	const char *kind;   /* for people */
	char *path;         /* the collection, <base>-relative */
	char *pname;        /* the part's own name */
	const char *fields; /* what is read of it (tpf_compute_part_lineage, may_delete) */
};

static void parts_of(struct part p[3], const char *zone, const char *name)
{
	char *region = tpf_compute_region(zone);
	p[0] = (struct part){ TPF_SLICE_TEMPLATE, "instance template", xstrdup("global/instanceTemplates"),
			      tpf_compute_slice_part(name, "t"), "name,description,properties/labels" };
	p[1] = (struct part){ TPF_SLICE_POLICY, "workload policy",
			      xasprintf("regions/%s/resourcePolicies", region),
			      tpf_compute_slice_part(name, "wp"), "name,description" };
	p[2] = (struct part){ TPF_SLICE_MIG, "managed instance group",
			      xasprintf("zones/%s/instanceGroupManagers", zone), xstrdup(name),
			      TPF_COMPUTE_MIG_FIELDS };
	free(region);
}

static void parts_free(struct part p[3])
{
	for (int i = 0; i < 3; i++) {
		free(p[i].path);
		free(p[i].pname);
	}
}

/*
 * Part p of slice `name` exists already (409): reuse it when it carries
 * this state's lineage `want` (a crashed apply made it), else refuse:
 * TPF_EFOREIGN, and it is left as it is.
 */
static int existing_part(struct tpf_compute_client *cc, const struct part *p, const char *name,
			 const char *want, const char *what, struct tpf_diags *d)
{
	char *path = xasprintf("%s/%s", p->path, p->pname);
	json_t *obj = NULL;
	int rc = read_part(cc, path, p->fields, what, name, &obj, d);
	free(path);
	if (rc == TPF_ENOTFOUND)
		return tpf_errorx(d, name, "apply again", "%s: its %s '%s' already existed, then "
				  "vanished", what, p->kind, p->pname);
	if (rc < 0)
		return rc;
	char *got = tpf_compute_part_lineage(obj);
	json_decref(obj);
	if (got && want && !strcmp(got, want)) {
		free(got);
		return 0; /* ours, from an apply that stopped half-way: reused */
	}
	rc = tpf_errorx(d, name,
			"Another state's slice of the same name may use it, so tpuform neither "
			"reuses nor deletes it. Rename 'fleet' (or the group) in this fleet file, or "
			"delete the part by hand if you know it is a leftover nobody uses.",
			"%s: its %s '%s' already exists and is not this state's: it carries %s=%s, "
			"and this state's is %s", what, p->kind, p->pname, TPF_LABEL_LINEAGE,
			got ? got : "nothing", want ? want : "none");
	free(got);
	return rc < 0 ? TPF_EFOREIGN : rc;
}

static json_t *part_body(const struct part *p, const char *name, const struct tpf_recipe *r,
			 json_t *metadata, struct tpf_compute_client *cc)
{
	if (p->bit == TPF_SLICE_TEMPLATE)
		return tpf_compute_template_body(name, r, metadata,
						 tpf_gcp_client_external_ips(cc->c));
	if (p->bit == TPF_SLICE_MIG)
		return tpf_compute_mig_body(name, r, tpf_gcp_client_project(cc->c));
	char *region = tpf_compute_region(r->zone);
	char *desc = tpf_compute_policy_description(name, r);
	json_t *b = json_pack("{s:s, s:s, s:s, s:{s:s, s:s}}", "name", p->pname, "region", region,
			      "description", desc, "workloadPolicy", "type", "HIGH_THROUGHPUT",
			      "acceleratorTopology", r->node.topology ? r->node.topology : "");
	free(desc);
	free(region);
	return b;
}

int tpf_compute_create_slice(struct tpf_compute_client *cc, const char *name,
			     const struct tpf_recipe *r, json_t *metadata, unsigned *ours,
			     struct tpf_diags *d)
{
	struct part parts[3];
	const char *want = tpf_kvlist_get(&r->labels, TPF_LABEL_LINEAGE);
	char *what = xasprintf("create slice '%s' (%d x %s, topology %s) in zone '%s'", name,
			       tpf_recipe_slice_workers(r), r->compute.machine_type,
			       r->node.topology ? r->node.topology : "?", r->zone);
	int rc = 0;
	*ours = 0;
	parts_of(parts, r->zone, name);
	for (int i = 0; i < 3 && rc == 0; i++) {
		json_t *body = part_body(&parts[i], name, r, metadata, cc);
		int conflict = 0;
		rc = insert(cc, parts[i].path, body, what, name, &conflict, d);
		json_decref(body);
		if (conflict)
			rc = existing_part(cc, &parts[i], name, want, what, d);
		if (rc == 0)
			*ours |= parts[i].bit;
	}
	parts_free(parts);
	free(what);
	return rc;
}

/* 1 when the MIG refers to workload policy `wp` (its last segment). */
static int names_policy(json_t *mig, const char *wp)
{
	const char *u = json_string_value(json_object_get(
		json_object_get(mig, "resourcePolicies"), "workloadPolicy"));
	const char *slash = u ? strrchr(u, '/') : NULL;
	return slash && !strcmp(slash + 1, wp);
}

/*
 * May part p, read as obj, be deleted? The MIG is the node: it is judged
 * by the guard (id included), and refusing it refuses the whole delete.
 * The template and the policy cost nothing once the MIG is gone: one that
 * is not provably ours is left with a warning, not an error, so that a
 * delete is never stuck on a part someone else made under our name. A
 * policy made before policies carried a lineage is ours when this
 * state's MIG, checked just now, referred to it (legacy_policy).
 * 1: delete; 0: leave; < 0: refuse the delete.
 */
static int may_delete(const struct part *p, json_t *obj, const char *zone, const char *name,
		      const struct tpf_delete_guard *guard, int legacy_policy, struct tpf_diags *d)
{
	char *got = tpf_compute_part_lineage(obj);
	int rc;
	if (p->bit == TPF_SLICE_MIG) {
		const char *id = json_string_value(json_object_get(obj, "id"));
		rc = tpf_delete_check(guard, "slice", name, zone, got, id, d);
		free(got);
		return rc < 0 ? rc : 1;
	}
	if (!got && p->bit == TPF_SLICE_POLICY && legacy_policy) {
		free(got);
		return 1;
	}
	struct tpf_delete_guard g = { guard->lineage, NULL, NULL, NULL, NULL };
	struct tpf_diags why = TPF_DIAGS_INIT;
	rc = tpf_delete_check(&g, p->kind, p->pname, NULL, got, NULL, &why);
	if (rc < 0)
		tpf_warn(d, name, "slice '%s': %s; it is left as it is", name,
			 why.n ? why.items[0].summary : "not this state's");
	tpf_diags_release(&why);
	free(got);
	return rc == 0;
}

int tpf_compute_delete_slice(struct tpf_compute_client *cc, const char *zone, const char *name,
			     unsigned which, const struct tpf_delete_guard *guard,
			     struct tpf_diags *d)
{
	struct part parts[3];
	char *what = xasprintf("delete slice '%s' in zone '%s'", name, zone);
	int rc = 0, legacy_policy = 0;
	parts_of(parts, zone, name);
	/* The MIG first (it deletes its members, and refers to the others),
	 * then the template, then the policy, as gcloud would be run. */
	static const int order[3] = { 2, 0, 1 };
	for (int k = 0; k < 3 && rc == 0; k++) {
		int i = order[k];
		if (!(which & parts[i].bit))
			continue;
		char *path = xasprintf("%s/%s", parts[i].path, parts[i].pname);
		int del = 1;
		if (guard) { /* read it just before: is it (still) ours? */
			json_t *obj = NULL;
			rc = read_part(cc, path, parts[i].fields, what, name, &obj, d);
			if (rc == 0) {
				del = may_delete(&parts[i], obj, zone, name, guard, legacy_policy, d);
				if (parts[i].bit == TPF_SLICE_MIG && del > 0)
					legacy_policy = names_policy(obj, parts[1].pname);
			}
			json_decref(obj);
			if (rc == TPF_ENOTFOUND)
				del = rc = 0; /* gone already */
			if (del < 0)
				rc = del;
		}
		if (rc == 0 && del > 0)
			rc = delete_path(cc, path, what, name, d);
		free(path);
	}
	parts_free(parts);
	free(what);
	return rc;
}
