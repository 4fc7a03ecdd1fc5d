/*
 * Which part of the emulator answers a request, and the order in which an
 * API request meets the front end: latency, injected fault, authentication,
 * path (from the discovery document), project, query parameters, body
 * validation, and finally the method's handler.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

typedef void (*handler_fn)(struct fg_req *, struct fg_match *);

static const struct {
	const char *id;
	handler_fn fn;
	int vflags;
} handlers[] = {
	{ "tpu.projects.locations.nodes.create", fg_nodes_create, FG_V_REQUIRED | FG_V_STRIP_RO },
	{ "tpu.projects.locations.nodes.get", fg_nodes_get, 0 },
	{ "tpu.projects.locations.nodes.list", fg_nodes_list, 0 },
	{ "tpu.projects.locations.nodes.delete", fg_nodes_delete, 0 },
	{ "tpu.projects.locations.nodes.patch", fg_nodes_patch, FG_V_STRIP_RO },
	{ "tpu.projects.locations.nodes.stop", fg_nodes_stop, 0 },
	{ "tpu.projects.locations.nodes.start", fg_nodes_start, 0 },
	{ "tpu.projects.locations.nodes.getGuestAttributes", fg_nodes_guest_attributes, 0 },
	{ "tpu.projects.locations.queuedResources.create", fg_qr_create,
	  FG_V_REQUIRED | FG_V_STRIP_RO },
	{ "tpu.projects.locations.queuedResources.get", fg_qr_get, 0 },
	{ "tpu.projects.locations.queuedResources.list", fg_qr_list, 0 },
	{ "tpu.projects.locations.queuedResources.delete", fg_qr_delete, 0 },
	{ "tpu.projects.locations.queuedResources.reset", fg_qr_reset, 0 },
	{ "tpu.projects.locations.operations.get", fg_operations_get, 0 },
	{ "tpu.projects.locations.operations.list", fg_operations_list, 0 },
	{ "tpu.projects.locations.operations.cancel", fg_operations_cancel, 0 },
	{ "tpu.projects.locations.operations.delete", fg_operations_delete, 0 },
	{ "tpu.projects.locations.acceleratorTypes.list", fg_accel_list, 0 },
	{ "tpu.projects.locations.acceleratorTypes.get", fg_accel_get, 0 },
	{ "tpu.projects.locations.runtimeVersions.list", fg_runtime_list, 0 },
	{ "tpu.projects.locations.runtimeVersions.get", fg_runtime_get, 0 },
	{ "tpu.projects.locations.list", fg_locations_list, 0 },
	{ "tpu.projects.locations.get", fg_locations_get, 0 },
};

/* The body as JSON ({} when empty); NULL after answering 400. */
static json_t *parse_body(struct fg_req *r)
{
	json_error_t je;
	json_t *v;

	if (!r->body.len)
		return json_object();
	v = json_loadb(r->body.buf, r->body.len, JSON_DECODE_ANY, &je);
	if (!v)
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
			       "Invalid JSON payload received. %s at line %d column %d.", je.text,
			       je.line, je.column);
	return v;
}

static void api(struct fg_req *r)
{
	struct fg_match mt;
	const char *kind;
	json_t *body = NULL;
	int rc;

	if (fg_opt.latency_ms > 0)
		fg_sleep(fg_opt.latency_ms / 1000.0);
	kind = fg_fault_pick();
	if (kind && fg_fault_apply(r, kind))
		return;
	if (fg_auth_check(r) < 0 || fg_user_project_check(r) < 0)
		return;
	rc = fg_discovery_match(r->method, r->path, &mt);
	if (rc < 0) {
		fg_reply_error(r, 404, "NOT_FOUND", NULL, rc == -2
			       ? "Method %s is not allowed on %s."
			       : "%s %s: the requested URL was not found on this server.",
			       r->method, r->path);
		return;
	}
	const char *project = fg_match_var(&mt, "projectsId");
	const char *zone = fg_match_var(&mt, "locationsId");
	if (project && strcmp(project, fg_opt.project) && strcmp(project, fg_opt.project_number)) {
		json_t *info = json_pack("{s:s, s:s, s:s, s:{s:s+, s:s}}", "@type",
					 "type.googleapis.com/google.rpc.ErrorInfo", "reason",
					 "CONSUMER_INVALID", "domain", "googleapis.com", "metadata",
					 "consumer", "projects/", project, "service", "tpu.googleapis.com");
		fg_reply_error(r, 403, "PERMISSION_DENIED", json_pack("[o]", info),
			       "Permission denied on resource project %s.", project);
		goto done;
	}
	if (zone && fg_zone_fault(zone, "unauthorized")) {
		/* A zone the project cannot use (fg_faults.c: the real wording). */
		fg_reply_error(r, 403, "PERMISSION_DENIED", NULL,
			       "Location %s is not found or access is unauthorized.", zone);
		goto done;
	}
	if (zone) {
		fg_lock();
		fg_zone_seen(zone);
		fg_unlock();
	}
	if (fg_check_query(r, mt.m) < 0)
		goto done;
	r->fields_type = fg_method_response(mt.m);
	size_t i, n = sizeof(handlers) / sizeof(handlers[0]);
	for (i = 0; i < n && strcmp(handlers[i].id, mt.id); i++)
		;
	if (fg_method_request(mt.m)) {
		body = parse_body(r);
		if (!body || fg_validate_body(r, mt.m, body, i < n ? handlers[i].vflags : 0) < 0)
			goto done;
		mt.body = body;
	}
	if (i == n) {
		fg_reply_error(r, 501, "UNIMPLEMENTED", NULL,
			       "Method %s is outside what fakegcp emulates "
			       "(tests/fakegcp/README.md lists what it serves).",
			       mt.id);
		goto done;
	}
	handlers[i].fn(r, &mt);
done:
	json_decref(body);
	fg_match_release(&mt);
}

void fg_route(struct fg_req *r)
{
	const char *pp = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "prettyPrint");

	r->pretty = !(pp && !strcmp(pp, "false"));
	if (!strncmp(r->path, "/__admin/", 9)) {
		fg_admin_serve(r);
		return;
	}
	if (fg_gcs_serve(r)) {
		/* answered: Cloud Storage JSON API (fg_gcs*.c), its own 413 included */
	} else if (r->body_too_large) {
		fg_reply_error(r, 413, "INVALID_ARGUMENT", NULL,
			       "The request body is larger than %u bytes.", FG_BODY_MAX);
	} else if (!strcmp(r->path, "/token")) {
		fg_token_endpoint(r);
	} else if (fg_sts_serve(r) || fg_iam_serve(r)) {
		/* answered: STS, IAM Credentials (fg_sts.c, fg_iam.c) */
	} else if (fg_guest_md_serve(r)) {
		/* answered: a worker's own metadata server (fg_guest_md.c) */
	} else if (fg_metadata_serve(r)) {
		/* answered */
	} else if (fg_compute_serve(r)) {
		/* answered: the Compute Engine v1 subset (fg_compute*.c) */
	} else if (fg_account_serve(r)) {
		/* answered: Compute projects.get, tokeninfo, OS Login */
	} else if (fg_monitoring_serve(r)) {
		/* answered: Cloud Monitoring v3 (fg_monitoring.c) */
	} else if (fg_billing_serve(r)) {
		/* answered: Cloud Billing Catalog v1 (fg_billing.c) */
	} else if (!strncmp(r->path, "/v2/", 4)) {
		api(r);
	} else if (fg_gcs_xml_serve(r)) {
		/* answered: XML API read of an existing bucket's object */
	} else {
		fg_reply_error(r, 404, "NOT_FOUND", NULL,
			       "%s %s: the requested URL was not found on this server.", r->method,
			       r->path);
	}
	fg_reqlog_add(r);
}
