/*
 * Multislice on Cloud TPU (docs/design.md section 9): a group with
 * `slices: N` is ONE queued resource whose single node spec carries
 * multisliceParams {nodeCount: N, nodeIdPrefix: NODE} instead of a nodeId
 * (discovery document, schema MultisliceParams; also
 * https://cloud.google.com/tpu/docs/queued-resources and
 * https://cloud.google.com/tpu/docs/multislice-introduction). Google then
 * creates the nodes NODE-0 .. NODE-(N-1) ("If node_count = 3 and
 * node_id_prefix = "np", node ids of nodes created will be "np-0", "np-1",
 * "np-2"", the discovery document).
 *
 * tpuform keeps NODE as its unit: refresh folds the N slice nodes into one
 * live node named NODE whose endpoints are slice 0's workers, then slice
 * 1's, and so on, so restart units, replacement and TPUFORM_RETRY cover
 * every worker of every slice at once.
 */
#ifndef TPF_GCP_MULTISLICE_H
#define TPF_GCP_MULTISLICE_H

#include <jansson.h>
#include "model/live.h"
#include "providers/gcp/tpu/gcp_api.h"
#include "providers/gcp/tpu/gcp_qr.h"
#include "util/diag.h"

/* The name of slice `k` of unit `node` ("NODE-K"). Caller frees. */
char *tpf_gcp_slice_name(const char *node, int k);

/*
 * Turn the single-node spec of a queuedResources.create body (as
 * tpf_gcp_qr_body built it, with nodeId `name`) into a multislice one when
 * r->slices > 1: nodeId removed, multisliceParams {nodeCount: r->slices,
 * nodeIdPrefix: name} added. Nothing changes for a single slice.
 */
void tpf_gcp_multislice_body(json_t *body, const char *name, const struct tpf_recipe *r);

/*
 * For a QueuedResource node spec: the prefix its nodes are named from
 * (multisliceParams.nodeIdPrefix, else the queued resource's id, as the
 * discovery document says) and *count = nodeCount; NULL (and *count 0)
 * when the spec has no multisliceParams. Borrowed from spec or qr_id.
 */
const char *tpf_gcp_multislice_prefix(json_t *spec, const char *qr_id, int *count);

/*
 * Fold the slice nodes of multislice queued resource q (q->recipe.slices >
 * 1, q->node_id the prefix) found in set into one live node named
 * q->node_id, in place: the slices leave the set, the unit joins it. The
 * unit: id, create time and health of slice 0 (health: the first slice
 * that is not HEALTHY, when one is not); recipe q's; endpoints every
 * slice's in slice order; state READY only when every slice is READY,
 * else the first dead slice's state (PREEMPTED, ...), else the first busy
 * one's; with a slice missing, the queued resource's state (so ACTIVE with
 * a slice gone is re-queued by the diff, and PROVISIONING waits). No
 * slice in set: nothing happens (the queued resource stands for the unit).
 */
void tpf_gcp_multislice_fold(struct tpf_live_set *set, const struct tpf_gcp_qr *q);

/*
 * After a multislice queued resource went ACTIVE: wait until each slice
 * node left CREATING, then fold them into *out (released first) as
 * tpf_gcp_multislice_fold does. TPF_ENOTFOUND when a slice is missing;
 * other errors as gcp_api.h.
 */
int tpf_gcp_multislice_settled(struct tpf_gcp_client *c, const char *zone,
			       const struct tpf_gcp_qr *q, const char *what,
			       struct tpf_live_node *out, struct tpf_diags *d);

#endif
