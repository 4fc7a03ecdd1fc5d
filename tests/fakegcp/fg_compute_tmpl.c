/*
 * Instance templates (global or regional) and resource policies (regional,
 * workload policies only): insert (requestId), get, list, delete. Sources
 * in docs/compute-engine.md sections 1.4 and 4.
 *   - A template's properties pass the instance checks
 *     (fg_compute_inst.c) with the machine type as a bare name; a URL there
 *     ends the insert operation with INTERNAL_ERROR, as
 *     InstanceProperties.machineType's documentation says it does.
 *   - A workload policy: type required; acceleratorTopology only with
 *     HIGH_THROUGHPUT, never with maxTopologyDistance (nor with
 *     acceleratorTopologyMode); topology AxB or AxBxC.
 *   - Neither can be deleted while a MIG uses it (one being deleted too):
 *     400 resourceInUseByAnotherResource. A delete is gone at once, its
 *     operation DONE --delete-seconds later.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fg_compute.h"
#include "util/xalloc.h"

static const char *sget(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void set_str(json_t *o, const char *k, char *fresh)
{
	json_object_set_new(o, k, json_string(fresh));
	free(fresh);
}

/* The MIG (any zone) whose key (e.g. "__tmpl") is value, or NULL. */
const char *ce_used_by(const char *key, const char *value)
{
	const char *z, *n;
	json_t *zone, *mig;

	json_object_foreach(ce.migs, z, zone)
		json_object_foreach(zone, n, mig)
			if (sget(mig, key) && !strcmp(sget(mig, key), value))
				return sget(mig, "selfLink"); /* till the MIG is gone */
	return NULL;
}

static void in_use(struct fg_req *r, const char *kind, const char *rel, const char *user)
{
	const char *p = strstr(user, "/projects/");
	ce_error(r, 400, "resourceInUseByAnotherResource", "The %s resource 'projects/%s/%s' is "
		 "already being used by '%s'", kind, fg_opt.project, rel, p ? p + 1 : user);
}

/* List the resources of one scope map (sorted by name). */
static void list_scope(struct fg_req *r, json_t *scope, const char *kind, const char *rel)
{
	static const char *const ok[] = { "filter", "maxResults", "pageToken", "orderBy",
					  "returnPartialSuccess", NULL };
	struct ce_filter *f;
	json_t *items = json_array(), *v, *page;
	const char *k;
	char *next;

	if (ce_check_query(r, ok) < 0 || ce_filter_parse(r, ce_arg(r, "filter"), &f) < 0) {
		json_decref(items);
		return;
	}
	json_object_foreach(scope, k, v)
		if (ce_filter_match(f, v))
			json_array_append(items, v);
	ce_filter_free(f);
	ce_sort(items);
	if (ce_page(r, items, &page, &next) == 0)
		fg_reply_json(r, 200, ce_list_json(kind, rel, page, next));
}

/* requestId and body for an insert; 1 when answered (replayed or 400). */
static int insert_start(struct ce_req *q, const char *msg)
{
	static const char *const ok[] = { "requestId", NULL };
	json_t *op;

	if (ce_check_query(q->r, ok) < 0 || ce_request_id(q->r, &op) < 0)
		return 1;
	if (op) {
		ce_reply_op(q->r, op);
		return 1;
	}
	if (ce_validate(q->r, msg, q->body, "resource") < 0)
		return 1;
	const char *name = sget(q->body, "name");
	if (!name) {
		ce_error(q->r, 400, "required", "Required field 'resource.name' not specified");
		return 1;
	}
	if (!ce_name_ok(name)) {
		ce_invalid(q->r, "resource.name", name,
			   "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'");
		return 1;
	}
	return 0;
}

static void answer_op(struct ce_req *q, json_t *op)
{
	ce_request_id_keep(q->r, op);
	ce_reply_op(q->r, op);
}

/* ----------------------------------------------------------- templates */

static void template_insert(struct ce_req *q, const char *scope, json_t *map, const char *rel0)
{
	const struct ce_mtype *mt;
	json_t *props = json_object_get(q->body, "properties");
	const char *name = sget(q->body, "name");

	if (!props) {
		ce_error(q->r, 400, "required", "Required field 'resource.properties' not specified");
		return;
	}
	char *rel = xasprintf("%s/%s", rel0, name);
	const char *mtv = sget(props, "machineType");
	if (json_object_get(map, name)) {
		ce_error(q->r, 409, "alreadyExists", "The resource 'projects/%s/%s' already exists",
			 fg_opt.project, rel);
	} else if (mtv && strchr(mtv, '/')) {
		json_t *op = ce_op_new(scope, "insert", rel, NULL, fg_opt.op_seconds);
		json_object_set_new(op, "__error", json_pack("{s:[o]}", "errors", ce_op_errors(
			"INTERNAL_ERROR", "Internal error. Please try again or contact Google "
			"Support.")));
		json_object_set_new(op, "__http", json_integer(500));
		answer_op(q, op);
	} else if (ce_instance_check(q->r, props, NULL, "resource.properties", 1, &mt) == 0) {
		char ts[40];
		ce_timestamp(ts);
		json_t *t = json_pack("{s:s, s:s, s:s, s:O}", "kind", "compute#instanceTemplate",
				      "creationTimestamp", ts, "name", name, "properties", props);
		set_str(t, "id", ce_new_id());
		if (sget(q->body, "description"))
			json_object_set(t, "description", json_object_get(q->body, "description"));
		set_str(t, "selfLink", ce_url(rel));
		if (strcmp(scope, "global"))
			set_str(t, "region", ce_url(scope));
		json_object_set_new(map, name, t);
		answer_op(q, ce_op_new(scope, "insert", rel, sget(t, "id"), fg_opt.op_seconds));
	}
	free(rel);
}

void ce_templates(struct ce_req *q, const char *scope)
{
	int at = strcmp(scope, "global") ? 3 : 2;
	json_t *map = ce_scope(ce.tmpl, scope, 1);
	const char *m = q->r->method;
	char *rel0 = xasprintf("%s/instanceTemplates", scope);

	if (q->nseg == at && !strcmp(m, "GET")) {
		list_scope(q->r, map, "compute#instanceTemplateList", rel0);
	} else if (q->nseg == at && !strcmp(m, "POST")) {
		if (!insert_start(q, "InstanceTemplate"))
			template_insert(q, scope, map, rel0);
	} else if (q->nseg == at + 1) {
		const char *name = q->seg[at];
		char *rel = xasprintf("%s/%s", rel0, name), *key = xasprintf("%s/%s", scope, name);
		json_t *t = json_object_get(map, name), *op = NULL;
		const char *user = t ? ce_used_by("__tmpl", key) : NULL;
		static const char *const rid[] = { "requestId", NULL };
		if (!strcmp(m, "DELETE") && (ce_check_query(q->r, rid) < 0 ||
					     ce_request_id(q->r, &op) < 0)) {
			/* answered */
		} else if (op) {
			ce_reply_op(q->r, op);
		} else if (!t) {
			ce_not_found(q->r, rel);
		} else if (!strcmp(m, "GET")) {
			fg_reply_json(q->r, 200, ce_public(t));
		} else if (!strcmp(m, "DELETE") && user) {
			in_use(q->r, "instance_template", rel, user);
		} else if (!strcmp(m, "DELETE")) {
			op = ce_op_new(scope, "delete", rel, sget(t, "id"), ce.delete_s);
			json_object_del(map, name);
			answer_op(q, op);
		} else {
			ce_error(q->r, 405, "methodNotAllowed", "Method not allowed.");
		}
		free(rel);
		free(key);
	} else {
		ce_error(q->r, 404, "notFound", "The requested URL was not found on this server.");
	}
	free(rel0);
}

/* ---------------------------------------------------- resource policies */

static int topology_form(const char *t)
{
	int dims = 0;
	const char *p = t;

	for (;;) {
		if (!isdigit((unsigned char)*p) || *p == '0')
			return 0;
		while (isdigit((unsigned char)*p))
			p++;
		dims++;
		if (!*p)
			return dims >= 2 && dims <= 3 ? dims : 0;
		if (*p++ != 'x')
			return 0;
	}
}

static int policy_check(struct fg_req *r, json_t *b, const char *region)
{
	json_t *wp = json_object_get(b, "workloadPolicy");
	const char *type = sget(wp, "type"), *t = sget(wp, "acceleratorTopology");
	const char *rg = sget(b, "region");

	if (!wp) {
		ce_invalid(r, "resource", "", "fakegcp serves workload policies only: "
			   "workloadPolicy is required.");
		return -1;
	}
	if (rg && strcmp(ce_basename(rg), region)) {
		ce_invalid(r, "resource.region", rg, "The region must be the request's region.");
		return -1;
	}
	if (!type) {
		ce_error(r, 400, "required",
			 "Required field 'resource.workloadPolicy.type' not specified");
		return -1;
	}
	if (t && sget(wp, "maxTopologyDistance")) {
		ce_invalid(r, "resource.workloadPolicy.acceleratorTopology", t, "acceleratorTopology "
			   "and maxTopologyDistance cannot both be set.");
		return -1;
	}
	if (sget(wp, "acceleratorTopologyMode") && !t) {
		ce_invalid(r, "resource.workloadPolicy.acceleratorTopologyMode",
			   sget(wp, "acceleratorTopologyMode"),
			   "acceleratorTopologyMode needs acceleratorTopology.");
		return -1;
	}
	if (t && strcmp(type, "HIGH_THROUGHPUT")) {
		ce_invalid(r, "resource.workloadPolicy.type", type,
			   "acceleratorTopology can be set only when the type is HIGH_THROUGHPUT.");
		return -1;
	}
	if (t && !topology_form(t)) {
		ce_invalid(r, "resource.workloadPolicy.acceleratorTopology", t,
			   "Must be a topology such as 4x4 or 2x2x2.");
		return -1;
	}
	return 0;
}

static void policy_insert(struct ce_req *q, const char *region, json_t *map, const char *rel0)
{
	const char *name = sget(q->body, "name");
	char *rel = xasprintf("%s/%s", rel0, name), *scope = xasprintf("regions/%s", region);

	if (json_object_get(map, name)) {
		ce_error(q->r, 409, "alreadyExists", "The resource 'projects/%s/%s' already exists",
			 fg_opt.project, rel);
	} else if (policy_check(q->r, q->body, region) == 0) {
		char ts[40];
		ce_timestamp(ts);
		json_t *p = json_pack("{s:s, s:s, s:s, s:O, s:s}", "kind", "compute#resourcePolicy",
				      "creationTimestamp", ts, "name", name, "workloadPolicy",
				      json_object_get(q->body, "workloadPolicy"), "status", "READY");
		set_str(p, "id", ce_new_id());
		if (sget(q->body, "description"))
			json_object_set(p, "description", json_object_get(q->body, "description"));
		set_str(p, "region", ce_url(scope));
		set_str(p, "selfLink", ce_url(rel));
		json_object_set_new(map, name, p);
		answer_op(q, ce_op_new(scope, "insert", rel, sget(p, "id"), fg_opt.op_seconds));
	}
	free(rel);
	free(scope);
}

void ce_policies(struct ce_req *q, const char *region)
{
	json_t *map = ce_scope(ce.rp, region, 1);
	const char *m = q->r->method;
	char *rel0 = xasprintf("regions/%s/resourcePolicies", region);

	if (q->nseg == 3 && !strcmp(m, "GET")) {
		list_scope(q->r, map, "compute#resourcePolicyList", rel0);
	} else if (q->nseg == 3 && !strcmp(m, "POST")) {
		if (!insert_start(q, "ResourcePolicy"))
			policy_insert(q, region, map, rel0);
	} else if (q->nseg == 4) {
		const char *name = q->seg[3];
		char *rel = xasprintf("%s/%s", rel0, name), *key = xasprintf("%s/%s", region, name);
		char *scope = xasprintf("regions/%s", region);
		json_t *p = json_object_get(map, name), *op = NULL;
		const char *user = p ? ce_used_by("__wp", key) : NULL;
		static const char *const rid[] = { "requestId", NULL };
		if (!strcmp(m, "DELETE") && (ce_check_query(q->r, rid) < 0 ||
					     ce_request_id(q->r, &op) < 0)) {
			/* answered */
		} else if (op) {
			ce_reply_op(q->r, op);
		} else if (!p) {
			ce_not_found(q->r, rel);
		} else if (!strcmp(m, "GET")) {
			fg_reply_json(q->r, 200, ce_public(p));
		} else if (!strcmp(m, "DELETE") && user) {
			in_use(q->r, "resource_policy", rel, user);
		} else if (!strcmp(m, "DELETE")) {
			op = ce_op_new(scope, "delete", rel, sget(p, "id"), ce.delete_s);
			json_object_del(map, name);
			answer_op(q, op);
		} else {
			ce_error(q->r, 405, "methodNotAllowed", "Method not allowed.");
		}
		free(rel);
		free(key);
		free(scope);
	} else {
		ce_error(q->r, 404, "notFound", "The requested URL was not found on this server.");
	}
	free(rel0);
}
