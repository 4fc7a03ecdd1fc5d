/*
 * Cloud TPU Node bodies (providers/gcp/gcp_node.h), as nodes.get returns
 * one and nodes.list returns pages of them ({"nodes": [...],
 * "nextPageToken", "unreachable"}, docs/cloud-tpu-api.md section 3). A page
 * is walked as providers/gcp/gcp_api.c list_all and each_node do: keep the
 * fleet's nodes, parse each into a live node, read the page token and the
 * unreachable locations. A body without "nodes" is taken as one Node.
 */
#include "tests/fuzz/fuzz.h"
#include "model/live.h"
#include "providers/gcp/tpu/gcp_node.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static void one_node(json_t *node, struct tpf_live_set *set)
{
	const char *name = json_string_value(json_object_get(node, "name"));
	free(tpf_gcp_name_zone(name));
	(void)tpf_gcp_last_segment(name);
	if (!tpf_gcp_node_in_fleet(node, "fz"))
		return;
	struct tpf_live_node *n = tpf_live_set_add(set);
	if (tpf_gcp_node_parse(node, "us-central2-b", 22, n) < 0) {
		tpf_live_node_release(n);
		set->n--;
		return;
	}
	if (!n->name || tpf_live_set_find(set, n->name) == NULL)
		abort(); /* a parsed node has a name that finds it */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *root = json_loadb((const char *)data, size, 0, NULL);
	struct tpf_live_set set = { 0 };
	json_t *nodes = json_object_get(root, "nodes");
	if (nodes) {
		size_t i;
		json_t *it;
		json_array_foreach(nodes, i, it)
			one_node(it, &set);
		(void)json_string_value(json_object_get(root, "nextPageToken"));
		(void)json_string_value(json_array_get(json_object_get(root, "unreachable"), 0));
	} else if (root) {
		one_node(root, &set);
	}
	tpf_live_set_release(&set);
	json_decref(root);
	return 0;
}
