/*
 * The Cloud TPU v2 nodes resource (gcp_api.c) and the zone's offerings,
 * over the gcp provider's client (providers/gcp/gcp_client.h: its error
 * contract holds for every function here).
 */
#ifndef TPF_GCP_API_H
#define TPF_GCP_API_H

#include <jansson.h>
#include <stddef.h>
#include "model/recipe.h"
#include "providers/gcp/gcp_client.h"
#include "providers/provider.h"
#include "util/diag.h"
#include "util/kv.h"

/*
 * nodes.list in `zone`, every page (pageToken), keeping the nodes whose
 * label tpuform-fleet equals `fleet` (the API has no filter), appended to
 * out. A response naming unreachable locations is an error (a partial list
 * must not be mistaken for absence).
 */
int tpf_gcp_list_nodes(struct tpf_gcp_client *c, const char *zone, const char *fleet,
		       struct tpf_live_set *out, struct tpf_diags *d);

/* nodes.get. TPF_ENOTFOUND (no diagnostic) if there is no such node. */
int tpf_gcp_get_node(struct tpf_gcp_client *c, const char *zone, const char *name,
		     struct tpf_live_node *out, struct tpf_diags *d);

/*
 * nodes.create ?nodeId=name in r->zone with the body of tpf_gcp_node_body
 * (metadata: the node's, may be NULL), wait for the operation, then get
 * the node into *out. A 409 on a retried
 * POST (an earlier attempt whose answer was lost went through) is success:
 * the node is fetched and waited for, not created twice. When the
 * operation fails, a node left behind is deleted so nothing leaks.
 */
int tpf_gcp_create_node(struct tpf_gcp_client *c, const char *name, const struct tpf_recipe *r,
			json_t *metadata, struct tpf_live_node *out, struct tpf_diags *d);

/* nodes.get as the API's Node object (*out: new reference). TPF_ENOTFOUND
 * (no diagnostic) if there is no such node. */
int tpf_gcp_get_node_json(struct tpf_gcp_client *c, const char *zone, const char *name,
			  json_t **out, struct tpf_diags *d);

/*
 * nodes.patch ?updateMask=metadata with `body` ({"metadata": {...}}: the
 * whole map, which the API replaces; gcp_sshkeys.h builds it), then wait
 * for the operation.
 */
int tpf_gcp_patch_metadata(struct tpf_gcp_client *c, const char *zone, const char *name,
			   json_t *body, struct tpf_diags *d);

/*
 * nodes.getGuestAttributes {"queryPath": query_path} for every worker (no
 * workerIds: the discovery document's "empty means all"); *out: the
 * GetGuestAttributesResponse (new reference), guestAttributes in worker
 * order. TPF_ENOTFOUND (no diagnostic) if there is no such node.
 */
int tpf_gcp_get_guest_attributes(struct tpf_gcp_client *c, const char *zone, const char *name,
				 const char *query_path, json_t **out, struct tpf_diags *d);

/* nodes.delete, wait for the operation and until a get says 404. A node
 * already gone is success. */
int tpf_gcp_delete_node(struct tpf_gcp_client *c, const char *zone, const char *name,
			struct tpf_diags *d);
/* Poll nodes.get until node `name` is gone (404: 0), at most the client's
 * op_timeout (then an error naming `what`); TPF_EINTERRUPTED when the
 * interrupt flag is set. A node already DELETING (a delete sent by an
 * earlier run) is waited for so, with no second nodes.delete. */
int tpf_gcp_wait_node_gone(struct tpf_gcp_client *c, const char *zone, const char *name,
			   const char *what, struct tpf_diags *d);

/* nodes.patch ?updateMask=labels with {"labels": labels}; waits. */
/* nodes.patch?updateMask=MASK with body (borrowed), one request, then wait
 * for its operation: MASK lists the fields the body carries
 * ("tags,metadata"; model/node_fields.h tpf_patch_mask). 0 or an error
 * with a diagnostic quoting the API. */
int tpf_gcp_patch_node(struct tpf_gcp_client *c, const char *zone, const char *name,
		       json_t *body, const char *mask, struct tpf_diags *d);

int tpf_gcp_patch_labels(struct tpf_gcp_client *c, const char *zone, const char *name,
			 const struct tpf_kvlist *labels, struct tpf_diags *d);

/* acceleratorTypes.list / runtimeVersions.list in zone, every page: the
 * "type" / "version" strings into *out (caller frees each and the array). */
int tpf_gcp_list_accelerator_types(struct tpf_gcp_client *c, const char *zone, char ***out,
				   size_t *n, struct tpf_diags *d);
int tpf_gcp_list_runtime_versions(struct tpf_gcp_client *c, const char *zone, char ***out,
				  size_t *n, struct tpf_diags *d);

/*
 * 1 if `type` and `runtime` are both offered in `zone` (0 with one
 * diagnostic for each that is not, listing what is offered), negative on
 * API errors. Either may be NULL (not checked).
 */
int tpf_gcp_check_offering(struct tpf_gcp_client *c, const char *zone, const char *type,
			   const char *runtime, const char *address, struct tpf_diags *d);

/* Poll node `name` until it leaves CREATING. TPF_ENOTFOUND if it is gone. */
int tpf_gcp_wait_node_settled(struct tpf_gcp_client *c, const char *zone, const char *name,
			      const char *what, struct tpf_live_node *out, struct tpf_diags *d);

#endif
