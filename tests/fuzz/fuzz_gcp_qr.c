/*
 * Cloud TPU QueuedResource bodies (providers/gcp/gcp_qr.h), as
 * queuedResources.get returns one and queuedResources.list returns pages
 * ({"queuedResources": [...]}, docs/cloud-tpu-api.md section 5). The
 * fleet's queued resources are parsed and merged into the zone's live nodes
 * as the provider's refresh does; the live nodes come from the same body's
 * "nodes" array (one input then holds both lists of a zone, so the merge
 * sees names that match). A body with neither array is taken as one
 * QueuedResource.
 */
#include "model/node_state.h"
#include "tests/fuzz/fuzz.h"
#include "model/live.h"
#include "providers/gcp/tpu/gcp_node.h"
#include "providers/gcp/tpu/gcp_qr.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <stdlib.h>

#define ZONE "us-central2-b"

static void add_qr(json_t *qr, struct tpf_gcp_qr **qrs, size_t *n, size_t *alloc)
{
	if (!tpf_gcp_qr_in_fleet(qr, "fz"))
		return;
	XGROW(*qrs, *n + 1, *alloc);
	struct tpf_gcp_qr *q = &(*qrs)[*n];
	*q = (struct tpf_gcp_qr){ 0 };
	if (tpf_gcp_qr_parse(qr, ZONE, q) < 0) {
		tpf_gcp_qr_release(q);
		return;
	}
	(void)tpf_queued_state_dead(q->state);
	(*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *root = json_loadb((const char *)data, size, 0, NULL);
	struct tpf_live_set set = { 0 };
	struct tpf_gcp_qr *qrs = NULL;
	size_t n = 0, alloc = 0, i;
	json_t *it, *list = json_object_get(root, "queuedResources");
	json_array_foreach(json_object_get(root, "nodes"), i, it) {
		struct tpf_live_node *ln = tpf_live_set_add(&set);
		if (tpf_gcp_node_parse(it, ZONE, 22, ln) < 0) {
			tpf_live_node_release(ln);
			set.n--;
		}
	}
	if (list) {
		json_array_foreach(list, i, it)
			add_qr(it, &qrs, &n, &alloc);
	} else if (root && !json_object_get(root, "nodes")) {
		add_qr(root, &qrs, &n, &alloc);
	}
	tpf_gcp_qr_merge(&set, qrs, n);
	for (i = 0; i < n; i++)
		tpf_gcp_qr_release(&qrs[i]);
	free(qrs);
	tpf_live_set_release(&set);
	json_decref(root);
	return 0;
}
