/*
 * A node's life: its states, the worker endpoints it shows once READY, and
 * what each operation does to it when the operation finishes
 * (docs/cloud-tpu-api.md sections 3, 4 and 6).
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

#define NODE_TYPE "type.googleapis.com/google.cloud.tpu.v2.Node"

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
		fg_agent_sync(n); /* the VMs boot: their agents install the keys */
	} else {
		json_object_del(n->res, "health");
	}
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
	if (fg_zone_fault(op->zone, "preempted")) {
		/* --zone-fault ZONE=preempted: lost while creating (fg_faults.c). */
		fg_node_set_state(n, "PREEMPTED");
		op->error = fg_status_new(3, "Cloud TPU received a bad request. update is not "
					     "supported while in state PREEMPTED");
		return;
	}
	/* A node preempted or re-stated by the admin while creating keeps that state. */
	if (!strcmp(json_string_value(json_object_get(n->res, "state")), "CREATING"))
		fg_node_set_state(n, "READY");
	op->response = typed(n->res);
}

/* One FieldMask path ("labels", "networkConfig.enableExternalIps"): copy
 * the patch's value at that path into res, or clear it there when the
 * patch has none (AIP-134: a masked field absent from the body is cleared). */
static void apply_mask_path(json_t *res, json_t *patch, const char *path)
{
	const char *dot = strchr(path, '.');
	if (!dot) {
		json_t *v = json_object_get(patch, path);
		if (v)
			json_object_set(res, path, v);
		else
			json_object_del(res, path);
		return;
	}
	char *head = xstrndup(path, (size_t)(dot - path));
	json_t *sub = json_object_get(res, head);
	if (!json_is_object(sub)) {
		sub = json_object();
		json_object_set_new(res, head, sub);
	}
	apply_mask_path(sub, json_object_get(patch, head), dot + 1);
	free(head);
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
	json_array_foreach(op->mask, i, f)
		apply_mask_path(n->res, op->patch, json_string_value(f));
	fg_proto3_prune("Node", n->res);
	if (json_object_get(n->res, "networkEndpoints")) /* enableExternalIps may have changed */
		json_object_set_new(n->res, "networkEndpoints", endpoints(n));
	fg_agent_sync(n); /* the agents follow metadata changes */
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
