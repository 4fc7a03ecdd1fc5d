/*
 * nodes.create / get / list / delete / patch / stop / start
 * (docs/cloud-tpu-api.md sections 2, 4 and 10). The resource is
 * kept as the JSON the API serves; fg_node_state.c has what the
 * operations do when they finish.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

/* Fields nodes.patch may change: the discovery document's updateMask list
 * ("Supported fields: [description, tags, labels, metadata,
 * network_config.enable_external_ips]"). */
static const char *const patchable[] = { "labels", "metadata", "tags", "description",
					 "network_config.enable_external_ips" };

char *fg_node_name(const char *zone, const char *id)
{
	return xasprintf("projects/%s/locations/%s/nodes/%s", fg_opt.project, zone, id);
}

static void not_found(struct fg_req *r, const char *zone, const char *id)
{
	char *name = fg_node_name(zone, id);

	fg_reply_error(r, 404, "NOT_FOUND", json_pack("[o]", fg_resource_info(name)),
		       "Resource '%s' was not found", name);
	free(name);
}

/* fg_bad_request with the field named under `at`. */
static void bad_field(struct fg_req *r, const char *at, const char *field, const char *msg)
{
	char *f = xasprintf("%s.%s", at, field);

	fg_bad_request(r, f, msg);
	free(f);
}

int fg_node_body_check(struct fg_req *r, const char *zone, json_t *body, const char *at,
		       char **type_out)
{
	json_t *cfg = json_object_get(body, "acceleratorConfig");
	const char *at_type = json_string_value(json_object_get(body, "acceleratorType"));
	char *type;

	*type_out = NULL;
	if (at_type && cfg) {
		bad_field(r, at, "accelerator_type", "Cloud TPU received a bad request. "
			  "accelerator_type and accelerator_config cannot both be set.");
		return -1;
	}
	if (json_object_get(body, "networkConfig") && json_object_get(body, "networkConfigs")) {
		bad_field(r, at, "network_configs", "Cloud TPU received a bad request. "
			  "network_config and network_configs cannot both be set.");
		return -1;
	}
	if (fg_sched_of(body) == FG_SPOT &&
	    json_is_true(json_object_get(json_object_get(body, "schedulingConfig"), "preemptible"))) {
		bad_field(r, at, "scheduling_config", "Cloud TPU received a bad request. "
			  "spot and preemptible cannot both be set.");
		return -1;
	}
	const char *desc = json_string_value(json_object_get(body, "description"));
	if (desc && strlen(desc) > 512) {
		bad_field(r, at, "description", "Cloud TPU received a bad request. The "
			  "description must be at most 512 characters.");
		return -1;
	}
	if (fg_check_labels(r, json_object_get(body, "labels")) < 0)
		return -1;
	type = cfg ? fg_type_from_config(cfg) : xstrdup(at_type ? at_type : "v2-8");
	if (!type || !fg_type_workers(type) || !fg_type_offered(zone, type)) {
		/* The real API's message (reference section 6). */
		char *msg = xasprintf("Cloud TPU received a bad request. The requested accelerator "
				      "configuration for accelerator type, \"%s\", could not be found "
				      "in the zonal accelerator configurations for \"%s\".",
				      type ? type : "(accelerator_config)", zone);
		bad_field(r, at, "accelerator_type", msg);
		free(msg);
		free(type);
		return -1;
	}
	*type_out = type;
	return 0;
}

struct fg_node *fg_node_new(const char *zone, const char *id, json_t *body, const char *type)
{
	struct fg_node *n = xcalloc(1, sizeof(*n));
	char *name = fg_node_name(zone, id), *nid = fg_new_node_id();
	char ts[40];

	n->zone = xstrdup(zone);
	n->id = xstrdup(id);
	n->type = xstrdup(type);
	n->workers = fg_type_workers(n->type);
	n->sched = fg_sched_of(body);
	n->first_ip = fg_alloc_ips(n->workers);

	/* name and id first, as the API prints them, then what was asked for. */
	json_t *res = json_pack("{s:s, s:s}", "name", name, "id", nid);
	json_object_update(res, body);
	json_object_set_new(res, "acceleratorType", json_string(n->type));
	json_object_set_new(res, "acceleratorConfig", fg_type_config(n->type));
	json_object_set_new(res, "state", json_string("CREATING"));
	fg_timestamp(ts);
	json_object_set_new(res, "createTime", json_string(ts));
	json_object_set_new(res, "apiVersion", json_string("V2"));
	fg_expand_network(res, zone);
	fg_default_service_account(res);
	fg_proto3_prune("Node", res);
	n->res = res;
	free(name);
	free(nid);
	return n;
}

char *fg_quota_refusal(struct fg_req *r, const char *zone, const char *type, enum fg_sched s,
		       int workers)
{
	char *quota = fg_quota_exceeded(zone, type, s, workers);

	if (quota) {
		json_t *qf = json_pack("{s:s, s:[{s:s+, s:s}]}", "@type",
				       "type.googleapis.com/google.rpc.QuotaFailure", "violations",
				       "subject", "project:", fg_opt.project, "description", quota);
		fg_reply_error(r, 429, "RESOURCE_EXHAUSTED", json_pack("[o]", qf), "%s", quota);
	}
	return quota;
}

void fg_nodes_create(struct fg_req *r, struct fg_match *mt)
{
	const char *zone = fg_match_var(mt, "locationsId");
	const char *id = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "nodeId");
	json_t *body = mt->body;
	char *type = NULL, *name = NULL, *quota = NULL;

	if (!id || !*id) {
		/* The API does not require it, but every client sends it and we do. */
		fg_bad_request(r, "node_id", "Cloud TPU received a bad request. The node_id query "
					  "parameter is required by this emulator.");
		return;
	}
	if (!fg_node_id_ok(id)) {
		fg_bad_request(r, "node_id", "Cloud TPU received a bad request. Node ID must match "
					  "regex ^[a-z]([-a-z0-9]*[a-z0-9])?$ and be at most 63 characters.");
		return;
	}
	if (fg_node_body_check(r, zone, body, "node", &type) < 0)
		return;

	fg_lock();
	fg_ops_tick();
	name = fg_node_name(zone, id);
	if (fg_node_find(zone, id)) {
		fg_reply_error(r, 409, "ALREADY_EXISTS", json_pack("[o]", fg_resource_info(name)),
			       "Resource '%s' already exists", name);
		goto done;
	}
	quota = fg_quota_refusal(r, zone, type, fg_sched_of(body), fg_type_workers(type));
	if (quota)
		goto done;
	struct fg_node *n = fg_node_new(zone, id, body, type);
	n->doomed = fg_capacity_full(zone);
	struct fg_op *op = fg_op_start(zone, id, "create");
	n->create_op = xstrdup(op->name);
	fg_node_add(n);
	fg_reply_json(r, 200, fg_op_json(op));
done:
	fg_unlock();
	free(type);
	free(name);
	free(quota);
}

void fg_nodes_get(struct fg_req *r, struct fg_match *mt)
{
	const char *zone = fg_match_var(mt, "locationsId"), *id = fg_match_var(mt, "nodesId");

	fg_lock();
	fg_ops_tick();
	struct fg_node *n = fg_node_find(zone, id);
	if (n)
		fg_reply_json(r, 200, json_deep_copy(n->res));
	else
		not_found(r, zone, id);
	fg_unlock();
}

void fg_nodes_list(struct fg_req *r, struct fg_match *mt)
{
	const char *zone = fg_match_var(mt, "locationsId");
	int size;
	char *after = NULL;
	size_t count, i = 0;

	if (fg_page_params(r, &size, &after) < 0)
		return;
	fg_lock();
	fg_ops_tick();
	struct fg_node **v = fg_nodes_in(zone, &count);
	json_t *out = json_object(), *arr = json_array();
	if (after)
		while (i < count && strcmp(v[i]->id, after) <= 0)
			i++;
	/* The nodes themselves, not copies: the answer is written out before
	 * the lock is let go, as fg_nodes_get does (a page of 50 copied and
	 * freed was half the emulator's time, tests/bench/gcp_bench.sh). */
	for (; i < count && json_array_size(arr) < (size_t)size; i++)
		json_array_append(arr, v[i]->res);
	/* proto3 JSON: an empty list is absent, so the answer may be {}. */
	if (json_array_size(arr))
		json_object_set(out, "nodes", arr);
	if (i < count) {
		char *tok = fg_page_token(v[i - 1]->id);
		json_object_set_new(out, "nextPageToken", json_string(tok));
		free(tok);
	}
	json_decref(arr);
	free(v);
	fg_reply_json(r, 200, out);
	fg_unlock();
	free(after);
}

void fg_nodes_delete(struct fg_req *r, struct fg_match *mt)
{
	const char *zone = fg_match_var(mt, "locationsId"), *id = fg_match_var(mt, "nodesId");

	fg_lock();
	fg_ops_tick();
	struct fg_node *n = fg_node_find(zone, id);
	if (!n) {
		not_found(r, zone, id);
	} else {
		fg_node_set_state(n, "DELETING");
		fg_reply_json(r, 200, fg_op_json(fg_op_start(zone, id, "delete")));
	}
	fg_unlock();
}

/* updateMask "labels,metadata" -> ["labels","metadata"]; NULL after a 400. */
static json_t *parse_mask(struct fg_req *r)
{
	const char *m = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "updateMask");
	json_t *out = json_array();
	char *copy, *save = NULL;

	if (!m || !*m) {
		fg_bad_request(r, "update_mask", "Cloud TPU received a bad request. update_mask is "
					      "required.");
		json_decref(out);
		return NULL;
	}
	copy = xstrdup(m);
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		size_t i, n = sizeof(patchable) / sizeof(patchable[0]);
		char *snake = fg_snake(tok);
		for (i = 0; i < n && strcmp(patchable[i], snake); i++)
			;
		free(snake);
		if (i == n) {
			char *msg = xasprintf("Cloud TPU received a bad request. update_mask contains "
					      "a field that cannot be updated: \"%s\". Updatable "
					      "fields: labels, metadata, tags, description, "
					      "network_config.enable_external_ips.", tok);
			fg_bad_request(r, "update_mask", msg);
			free(msg);
			json_decref(out);
			free(copy);
			return NULL;
		}
		json_array_append_new(out, fg_camel_path(tok));
	}
	free(copy);
	return out;
}

void fg_nodes_patch(struct fg_req *r, struct fg_match *mt)
{
	const char *zone = fg_match_var(mt, "locationsId"), *id = fg_match_var(mt, "nodesId");
	json_t *mask = parse_mask(r);

	if (!mask)
		return;
	if (fg_check_labels(r, json_object_get(mt->body, "labels")) < 0) {
		json_decref(mask);
		return;
	}
	fg_lock();
	fg_ops_tick();
	struct fg_node *n = fg_node_find(zone, id);
	const char *state = n ? json_string_value(json_object_get(n->res, "state")) : NULL;
	if (!n) {
		not_found(r, zone, id);
	} else if (strcmp(state, "READY") && strcmp(state, "STOPPED")) {
		/* Wording quoted from a real answer for PREEMPTED (reference section 4). */
		fg_bad_request(r, "node", state && !strcmp(state, "PREEMPTED")
			    ? "update is not supported while in state PREEMPTED"
			    : "Cloud TPU received a bad request. update is not supported while "
			      "the node is not READY or STOPPED.");
	} else {
		struct fg_op *op = fg_op_start(zone, id, "update");
		op->patch = json_deep_copy(mt->body);
		op->mask = mask;
		mask = NULL;
		fg_reply_json(r, 200, fg_op_json(op));
	}
	fg_unlock();
	json_decref(mask);
}

static void stop_start(struct fg_req *r, struct fg_match *mt, int stop)
{
	const char *zone = fg_match_var(mt, "locationsId"), *id = fg_match_var(mt, "nodesId");

	fg_lock();
	fg_ops_tick();
	struct fg_node *n = fg_node_find(zone, id);
	const char *state = n ? json_string_value(json_object_get(n->res, "state")) : "";
	if (!n) {
		not_found(r, zone, id);
	} else if (n->workers > 1) {
		/* The API documents stop/start for single-host nodes only. */
		fg_bad_request(r, "name", stop ? "stop: only available with single TPU nodes"
					    : "start: only available with single TPU nodes");
	} else if (strcmp(state, stop ? "READY" : "STOPPED")) {
		char *msg = xasprintf("Cloud TPU received a bad request. %s is not supported while "
				      "in state %s", stop ? "stop" : "start", state);
		fg_bad_request(r, "name", msg);
		free(msg);
	} else {
		fg_node_set_state(n, stop ? "STOPPING" : "STARTING");
		fg_reply_json(r, 200, fg_op_json(fg_op_start(zone, id, stop ? "stop" : "start")));
	}
	fg_unlock();
}

void fg_nodes_stop(struct fg_req *r, struct fg_match *mt)
{
	stop_start(r, mt, 1);
}

void fg_nodes_start(struct fg_req *r, struct fg_match *mt)
{
	stop_start(r, mt, 0);
}
