/*
 * nodes.create / get / list / delete / patch / stop / start, and what their
 * operations do when they finish (shared/reference/gcp-tpu-api.md sections
 * 2-4 and 10). The resource is kept as the JSON the API serves.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

#define NODE_TYPE "type.googleapis.com/google.cloud.tpu.v2.Node"
#define CLOUD_PLATFORM "https://www.googleapis.com/auth/cloud-platform"

/* Fields nodes.patch may change (the contract; the API documents these
 * plus network_config.enable_external_ips). */
static const char *const patchable[] = { "labels", "metadata", "tags", "description" };

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

static void bad_request(struct fg_req *r, const char *field, const char *msg)
{
	json_t *v = json_pack("{s:s, s:s}", "field", field, "description", msg);

	fg_reply_error(r, 400, "INVALID_ARGUMENT",
		       json_pack("[{s:s, s:[o]}]", "@type", "type.googleapis.com/google.rpc.BadRequest",
				 "fieldViolations", v),
		       "%s", msg);
}

char *fg_page_token(const char *key)
{
	return fg_b64url_encode(key, strlen(key));
}

int fg_page_params(struct fg_req *r, int *size, char **after)
{
	const char *ps = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "pageSize");
	const char *pt = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "pageToken");
	long n = ps && *ps ? strtol(ps, NULL, 10) : 0;

	*after = NULL;
	if (n < 0) {
		bad_request(r, "page_size", "Invalid value for page_size: must not be negative.");
		return -1;
	}
	*size = n == 0 || n > fg_opt.page_size ? fg_opt.page_size : (int)n;
	if (pt && *pt) {
		size_t len;
		unsigned char *raw = fg_b64url_decode(pt, strlen(pt), &len);
		if (!raw || !len || memchr(raw, 0, len)) {
			free(raw);
			bad_request(r, "page_token", "The page token is invalid.");
			return -1;
		}
		*after = xstrndup((const char *)raw, len);
		free(raw);
	}
	return 0;
}

/* The node as a Node resource with @type first, for operation responses. */
static json_t *typed(json_t *res)
{
	json_t *out = json_pack("{s:s}", "@type", NODE_TYPE);

	json_object_update(out, res);
	return out;
}

static char *ip_string(uint32_t ip)
{
	struct in_addr a = { htonl(ip) };
	char buf[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a, buf, sizeof(buf));
	return xstrdup(buf);
}

static json_t *endpoints(const struct fg_node *n)
{
	json_t *arr = json_array();
	int external = fg_opt.external_ips ||
		       json_is_true(json_object_get(json_object_get(n->res, "networkConfig"),
						    "enableExternalIps"));

	for (int i = 0; i < n->workers; i++) {
		char *ip = ip_string(n->first_ip + (uint32_t)i);
		json_t *e = json_pack("{s:s, s:i}", "ipAddress", ip, "port", fg_opt.worker_port);
		if (external)
			json_object_set_new(e, "accessConfig", json_pack("{s:s}", "externalIp", ip));
		json_array_append_new(arr, e);
		free(ip);
	}
	return arr;
}

void fg_node_set_state(struct fg_node *n, const char *state)
{
	json_object_set_new(n->res, "state", json_string(state));
	if (!strcmp(state, "READY")) {
		json_object_set_new(n->res, "health", json_string("HEALTHY"));
		json_object_set_new(n->res, "networkEndpoints", endpoints(n));
	} else {
		json_object_del(n->res, "health");
	}
}

/* GCE label rules: key [a-z][a-z0-9_-]{0,62}, value [a-z0-9_-]{0,63}, <= 64 labels. */
static int label_ok(const char *s, int is_key)
{
	size_t n = strlen(s);

	if (n > 63 || (is_key && (!n || !islower((unsigned char)s[0]))))
		return 0;
	for (; *s; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_' &&
		    *s != '-')
			return 0;
	return 1;
}

/* Our wording: the real API's text for bad labels is not on record. */
static int check_labels(struct fg_req *r, json_t *labels)
{
	const char *k;
	json_t *v;
	char *msg = NULL;

	if (json_object_size(labels) > 64)
		msg = xstrdup("Cloud TPU received a bad request. A node can have at most 64 labels.");
	json_object_foreach(labels, k, v) {
		if (msg)
			break;
		if (!label_ok(k, 1))
			msg = xasprintf("Cloud TPU received a bad request. Invalid label key \"%s\": a "
					"key must start with a lowercase letter and use only lowercase "
					"letters, digits, '_' and '-' (at most 63 characters).", k);
		else if (!label_ok(json_string_value(v), 0))
			msg = xasprintf("Cloud TPU received a bad request. Invalid value \"%s\" for label "
					"\"%s\": use only lowercase letters, digits, '_' and '-' (at "
					"most 63 characters).", json_string_value(v), k);
	}
	if (!msg)
		return 0;
	bad_request(r, "node.labels", msg);
	free(msg);
	return -1;
}

static int id_ok(const char *id)
{
	size_t n = strlen(id);

	if (!n || n > 63 || !islower((unsigned char)id[0]) || id[n - 1] == '-')
		return 0;
	for (const char *p = id; *p; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '-')
			return 0;
	return 1;
}

static enum fg_sched sched_of(json_t *body)
{
	json_t *sc = json_object_get(body, "schedulingConfig");

	if (json_is_true(json_object_get(sc, "spot")))
		return FG_SPOT;
	if (json_is_true(json_object_get(sc, "preemptible")))
		return FG_PREEMPTIBLE;
	return FG_ON_DEMAND;
}

/* Short network names are returned as full resource paths, as GCE does. */
static void expand_network(json_t *res, const char *zone)
{
	json_t *nc = json_object_get(res, "networkConfig");
	const char *net, *sub;
	char *region = xstrdup(zone);
	char *dash = strrchr(region, '-');

	if (dash)
		*dash = '\0';
	if (!nc && !json_object_get(res, "networkConfigs")) {
		nc = json_object();
		json_object_set_new(res, "networkConfig", nc);
	}
	if (nc) {
		net = json_string_value(json_object_get(nc, "network"));
		sub = json_string_value(json_object_get(nc, "subnetwork"));
		if (!net || !strchr(net, '/'))
			json_object_set_new(nc, "network",
					    json_pack("s+++", "projects/", fg_opt.project,
						      "/global/networks/", net ? net : "default"));
		if (!sub || !strchr(sub, '/')) {
			char *s = xasprintf("projects/%s/regions/%s/subnetworks/%s", fg_opt.project,
					    region, sub ? sub : (net && !strchr(net, '/') ? net : "default"));
			json_object_set_new(nc, "subnetwork", json_string(s));
			free(s);
		}
	}
	free(region);
}

static void default_service_account(json_t *res)
{
	json_t *sa = json_object_get(res, "serviceAccount");

	if (!sa) {
		sa = json_object();
		json_object_set_new(res, "serviceAccount", sa);
	}
	if (!json_string_value(json_object_get(sa, "email"))) {
		char *email = xasprintf("%s-compute@developer.gserviceaccount.com",
					fg_opt.project_number);
		json_object_set_new(sa, "email", json_string(email));
		free(email);
	}
	if (!json_array_size(json_object_get(sa, "scope")))
		json_object_set_new(sa, "scope", json_pack("[s]", CLOUD_PLATFORM));
}

static char *new_id(void)
{
	/* 19 decimal digits, like real node ids (int64 as a JSON string). */
	uint64_t v = 1000000000000000000ULL + fg_rand_id() % 8999999999999999999ULL;

	return xasprintf("%llu", (unsigned long long)v);
}

void fg_nodes_create(struct fg_req *r, struct fg_match *mt)
{
	const char *zone = fg_match_var(mt, "locationsId");
	const char *id = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "nodeId");
	json_t *body = mt->body;
	char *type = NULL, *name = NULL, *quota = NULL, *nid = NULL;
	char ts[40];

	if (!id || !*id) {
		/* The API does not require it, but every client sends it and we do. */
		bad_request(r, "node_id", "Cloud TPU received a bad request. The node_id query "
					  "parameter is required by this emulator.");
		return;
	}
	if (!id_ok(id)) {
		bad_request(r, "node_id", "Cloud TPU received a bad request. Node ID must match "
					  "regex ^[a-z]([-a-z0-9]*[a-z0-9])?$ and be at most 63 characters.");
		return;
	}
	json_t *cfg = json_object_get(body, "acceleratorConfig");
	const char *at = json_string_value(json_object_get(body, "acceleratorType"));
	if (at && cfg) {
		bad_request(r, "node.accelerator_type", "Cloud TPU received a bad request. "
			    "accelerator_type and accelerator_config cannot both be set.");
		return;
	}
	if (json_object_get(body, "networkConfig") && json_object_get(body, "networkConfigs")) {
		bad_request(r, "node.network_configs", "Cloud TPU received a bad request. "
			    "network_config and network_configs cannot both be set.");
		return;
	}
	if (sched_of(body) == FG_SPOT &&
	    json_is_true(json_object_get(json_object_get(body, "schedulingConfig"), "preemptible"))) {
		bad_request(r, "node.scheduling_config", "Cloud TPU received a bad request. "
			    "spot and preemptible cannot both be set.");
		return;
	}
	const char *desc = json_string_value(json_object_get(body, "description"));
	if (desc && strlen(desc) > 512) {
		bad_request(r, "node.description", "Cloud TPU received a bad request. The "
			    "description must be at most 512 characters.");
		return;
	}
	if (check_labels(r, json_object_get(body, "labels")) < 0)
		return;
	type = cfg ? fg_type_from_config(cfg) : xstrdup(at ? at : "v2-8");
	if (!type || !fg_type_workers(type) || !fg_type_offered(zone, type)) {
		/* The real API's message (reference section 6). */
		char *msg = xasprintf("Cloud TPU received a bad request. The requested accelerator "
				      "configuration for accelerator type, \"%s\", could not be found "
				      "in the zonal accelerator configurations for \"%s\".",
				      type ? type : "(accelerator_config)", zone);
		bad_request(r, "node.accelerator_type", msg);
		free(msg);
		free(type);
		return;
	}

	fg_lock();
	fg_ops_tick();
	name = fg_node_name(zone, id);
	if (fg_node_find(zone, id)) {
		fg_reply_error(r, 409, "ALREADY_EXISTS", json_pack("[o]", fg_resource_info(name)),
			       "Resource '%s' already exists", name);
		goto done;
	}
	struct fg_node *n = xcalloc(1, sizeof(*n));
	n->zone = xstrdup(zone);
	n->id = xstrdup(id);
	n->type = type;
	type = NULL;
	n->workers = fg_type_workers(n->type);
	n->sched = sched_of(body);
	quota = fg_quota_exceeded(zone, n->type, n->sched, n->workers);
	if (quota) {
		json_t *qf = json_pack("{s:s, s:[{s:s+, s:s}]}", "@type",
				       "type.googleapis.com/google.rpc.QuotaFailure", "violations",
				       "subject", "project:", fg_opt.project, "description", quota);
		fg_reply_error(r, 429, "RESOURCE_EXHAUSTED", json_pack("[o]", qf), "%s", quota);
		fg_node_free(n);
		goto done;
	}
	n->doomed = fg_capacity_full(zone);
	n->first_ip = fg_alloc_ips(n->workers);

	/* name and id first, as the API prints them, then what was asked for. */
	nid = new_id();
	json_t *res = json_pack("{s:s, s:s}", "name", name, "id", nid);
	json_object_update(res, body);
	json_object_set_new(res, "acceleratorType", json_string(n->type));
	json_object_set_new(res, "acceleratorConfig", fg_type_config(n->type));
	json_object_set_new(res, "state", json_string("CREATING"));
	fg_timestamp(ts);
	json_object_set_new(res, "createTime", json_string(ts));
	json_object_set_new(res, "apiVersion", json_string("V2"));
	expand_network(res, zone);
	default_service_account(res);
	fg_proto3_prune("Node", res);
	n->res = res;

	struct fg_op *op = fg_op_start(zone, id, "create");
	n->create_op = xstrdup(op->name);
	fg_node_add(n);
	fg_reply_json(r, 200, fg_op_json(op));
done:
	fg_unlock();
	free(type);
	free(name);
	free(quota);
	free(nid);
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
	for (; i < count && json_array_size(arr) < (size_t)size; i++)
		json_array_append_new(arr, json_deep_copy(v[i]->res));
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
	fg_unlock();
	free(after);
	fg_reply_json(r, 200, out);
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
		bad_request(r, "update_mask", "Cloud TPU received a bad request. update_mask is "
					      "required.");
		json_decref(out);
		return NULL;
	}
	copy = xstrdup(m);
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		size_t i, n = sizeof(patchable) / sizeof(patchable[0]);
		for (i = 0; i < n && strcmp(patchable[i], tok); i++)
			;
		if (i == n) {
			char *msg = xasprintf("Cloud TPU received a bad request. update_mask contains "
					      "a field that cannot be updated: \"%s\". Updatable "
					      "fields: labels, metadata, tags, description.", tok);
			bad_request(r, "update_mask", msg);
			free(msg);
			json_decref(out);
			free(copy);
			return NULL;
		}
		json_array_append_new(out, json_string(tok));
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
	if (check_labels(r, json_object_get(mt->body, "labels")) < 0) {
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
		bad_request(r, "node", state && !strcmp(state, "PREEMPTED")
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
		bad_request(r, "name", stop ? "stop: only available with single TPU nodes"
					    : "start: only available with single TPU nodes");
	} else if (strcmp(state, stop ? "READY" : "STOPPED")) {
		char *msg = xasprintf("Cloud TPU received a bad request. %s is not supported while "
				      "in state %s", stop ? "stop" : "start", state);
		bad_request(r, "name", msg);
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

static void finish_create(struct fg_op *op, struct fg_node *n)
{
	if (!n || !n->create_op || strcmp(n->create_op, op->name)) {
		op->error = fg_status_new(10, "The node was deleted before its creation finished.");
		return;
	}
	free(n->create_op);
	n->create_op = NULL;
	if (n->doomed) {
		/* Stockout: a successful POST, then this (reference sections 3, 6). */
		char *msg = xasprintf("There is no more capacity in the zone \"%s\"; you can try in "
				      "another zone where Cloud TPU Nodes are offered (see "
				      "https://cloud.google.com/tpu/docs/regions)", op->zone);
		op->error = fg_status_new(8, msg);
		free(msg);
		fg_node_remove(n);
		return;
	}
	/* A node preempted or re-stated by the admin while creating keeps that state. */
	if (!strcmp(json_string_value(json_object_get(n->res, "state")), "CREATING"))
		fg_node_set_state(n, "READY");
	op->response = typed(n->res);
}

static void finish_update(struct fg_op *op, struct fg_node *n)
{
	size_t i;
	json_t *f;

	if (!n) {
		char *name = fg_node_name(op->zone, op->node_id);
		char *msg = xasprintf("Resource '%s' was not found", name);
		op->error = fg_status_new(5, msg);
		free(msg);
		free(name);
		return;
	}
	json_array_foreach(op->mask, i, f) {
		const char *k = json_string_value(f);
		json_t *v = json_object_get(op->patch, k);
		if (v)
			json_object_set(n->res, k, v);
		else
			json_object_del(n->res, k);
	}
	fg_proto3_prune("Node", n->res);
	op->response = typed(n->res);
}

void fg_node_op_finish(struct fg_op *op)
{
	struct fg_node *n = fg_node_find(op->zone, op->node_id);
	const char *state = n ? json_string_value(json_object_get(n->res, "state")) : "";

	if (!strcmp(op->verb, "create")) {
		finish_create(op, n);
	} else if (!strcmp(op->verb, "delete")) {
		if (n && !strcmp(state, "DELETING"))
			fg_node_remove(n);
		op->response = json_pack("{s:s}", "@type", "type.googleapis.com/google.protobuf.Empty");
	} else if (!strcmp(op->verb, "update")) {
		finish_update(op, n);
	} else if (!n) {
		op->error = fg_status_new(5, "The node no longer exists.");
	} else {
		int stop = !strcmp(op->verb, "stop");
		if (!strcmp(state, stop ? "STOPPING" : "STARTING"))
			fg_node_set_state(n, stop ? "STOPPED" : "READY");
		op->response = typed(n->res);
	}
}
