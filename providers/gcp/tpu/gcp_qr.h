/*
 * Cloud TPU queued resources (docs/cloud-tpu-api.md section 5; discovery schema
 * "QueuedResource"): the JSON (gcp_qr.c) and the API calls (gcp_qr_api.c).
 *
 * tpuform asks for one node per queued resource and names the queued
 * resource after the node, so a node name finds its queued resource. The
 * queued resource's state is an object {"state", "stateInitiator",
 * "failedData": {"error": Status}}; the tier is chosen by which empty
 * message is present ("spot": {}); the node spec carries the node's
 * accelerator type, runtime version, labels and scheduling.
 */
#ifndef TPF_GCP_QR_H
#define TPF_GCP_QR_H

#include <jansson.h>
#include <stddef.h>
#include "model/recipe.h"
#include "providers/gcp/tpu/gcp_api.h"
#include "providers/provider.h"
#include "util/diag.h"

/* A queued resource as tpuform sees it. */
struct tpf_gcp_qr {
	char *id;        /* last segment of its name */
	char *node_id;   /* tpu.nodeSpec[0].nodeId */
	char *state;     /* state.state; "STATE_UNSPECIFIED" when absent */
	int error_code;  /* state.failedData.error.code, 0 if none */
	char *error;     /* state.failedData.error.message, may be NULL */
	/* tpu.nodeSpec[0].node: type, runtime, scheduling (spot also from the
	 * spot tier), labels; zone from the name (else the given one);
	 * workers from the accelerator table; queued = 1. */
	struct tpf_recipe recipe;
};

/*
 * Parse a QueuedResource into *out (released first; caller releases).
 * Returns 0, or -1 when qr is not an object with a name and one node spec
 * with a nodeId (a multislice request is not one of tpuform's).
 */
int tpf_gcp_qr_parse(json_t *qr, const char *zone, struct tpf_gcp_qr *out);

/* Every field of a QueuedResource tpf_gcp_qr_parse and tpf_gcp_qr_in_fleet
 * read (gcp_multislice.h's too), asked for by queuedResources.list and .get
 * as a partial response (the `fields` system parameter); the node spec's
 * node as a Node (gcp_node.h TPF_GCP_NODE_FIELDS). Checked by
 * tests/unit/test_gcp_fields.c. */
#define TPF_GCP_QR_FIELDS                                                                 \
	"name,state(state,failedData/error(code,message)),spot,reservationName,"          \
	"tpu/nodeSpec(parent,nodeId,multisliceParams(nodeCount,nodeIdPrefix),"           \
	"node(" TPF_GCP_NODE_FIELDS "))"
void tpf_gcp_qr_release(struct tpf_gcp_qr *q);

/* 1 if the queued resource's node spec carries tpuform-fleet == fleet. */
int tpf_gcp_qr_in_fleet(json_t *qr, const char *fleet);

/*
 * "6h" (tpuform's durations, util/timeutil.h) as a google-duration
 * ("21600s"; fractions kept: "1.5s"). Caller frees; NULL when text is not
 * a duration.
 */
char *tpf_gcp_duration(const char *text);

/*
 * The queuedResources.create body for node `name` of recipe r in project
 * (new reference; caller decrefs): tpu.nodeSpec[{parent
 * "projects/P/locations/ZONE", nodeId name, node: tpf_gcp_node_body(r,
 * external_ips, metadata) without schedulingConfig.spot}], "spot": {} for a spot recipe,
 * queueingPolicy.validUntilDuration from r->valid_until. NULL with a
 * diagnostic when valid_until is not a duration.
 */
json_t *tpf_gcp_qr_body(const char *project, const char *name, const struct tpf_recipe *r,
			int external_ips, json_t *metadata, struct tpf_diags *d);

/*
 * The live node a queued resource stands for when its node does not exist
 * (yet): name node_id, state and queued_state the queued resource's, no id,
 * no endpoints, recipe from the node spec. *out is released first.
 */
void tpf_gcp_qr_live(const struct tpf_gcp_qr *q, struct tpf_live_node *out);

/*
 * Merge one zone's queued resources into that zone's live nodes: a node
 * of a queued resource gets queued_state and recipe.queued, and takes the
 * queued resource's state when that is FAILED or SUSPENDED (the node is
 * then on its way out); a queued resource whose node does not exist is
 * added as tpf_gcp_qr_live.
 */
void tpf_gcp_qr_merge(struct tpf_live_set *set, const struct tpf_gcp_qr *qrs, size_t n);

/* ---- API calls (gcp_qr_api.c); errors as in gcp_api.h ---- */

/* queuedResources.list in zone, every page, keeping the fleet's; *out
 * (caller frees each with tpf_gcp_qr_release, then the array). */
int tpf_gcp_list_qrs(struct tpf_gcp_client *c, const char *zone, const char *fleet,
		     struct tpf_gcp_qr **out, size_t *n, struct tpf_diags *d);

/* queuedResources.get. TPF_ENOTFOUND (no diagnostic) if there is none. */
int tpf_gcp_get_qr(struct tpf_gcp_client *c, const char *zone, const char *id,
		   struct tpf_gcp_qr *out, struct tpf_diags *d);

/*
 * queuedResources.create ?queuedResourceId=name in r->zone with
 * tpf_gcp_qr_body (metadata: the node's, may be NULL), wait for the operation, then follow the queued resource
 * while it is CREATING or PROVISIONING (at most the operation timeout):
 *  - ACCEPTED or WAITING_FOR_RESOURCES (or still provisioning at the
 *    timeout): 0, *out = tpf_gcp_qr_live (state = the queued resource's;
 *    the caller must not provision workers: it is not READY);
 *  - ACTIVE: 0, *out = the node once it left CREATING, with queued_state;
 *  - FAILED or SUSPENDED: the queued resource is deleted (nothing is left
 *    behind) and the failure returned: TPF_ECAPACITY for codes 4
 *    (valid-until passed), 8 and 9, else as gcp_api.h classifies it.
 * A 409 on a retried POST (an earlier attempt went through) is followed
 * like a fresh one; quota is TPF_EQUOTA, as for nodes.create.
 */
int tpf_gcp_create_qr(struct tpf_gcp_client *c, const char *name, const struct tpf_recipe *r,
		      json_t *metadata, struct tpf_live_node *out, struct tpf_diags *d);

/*
 * Is Cloud TPU node `name` (or its queued resource `qr`, NULL: none) this
 * state's now? Read just before the delete, since nodes.delete and
 * queuedResources.delete take no precondition (tests/fakegcp/
 * tpu.v2.discovery.json: `name` is their only parameter, besides force).
 * The node decides when it exists; a queued resource whose node is not
 * made yet is judged by the labels of its node spec (it has no id).
 * 0: delete; TPF_ENOTFOUND: neither exists; TPF_EFOREIGN or an error.
 * *deleting: 1 when the node is DELETING already (a delete an earlier run
 * sent): the caller waits for it rather than sending another.
 */
int tpf_gcp_owned_now(struct tpf_gcp_client *c, const char *zone, const char *name,
		      const char *qr, const struct tpf_delete_guard *guard, int *deleting,
		      struct tpf_diags *d);

/*
 * queuedResources.delete ?force=true (its node goes first), wait for the
 * operation and until a get says 404, then make sure node `node` (may be
 * NULL) is gone too. A queued resource already gone is success. With
 * `lineage` (the tpuform-lineage value of this state; NULL: no check), a
 * node still under that name is deleted only when tpf_delete_check allows
 * it (providers/provider.h), else TPF_EFOREIGN with its diagnostic.
 */
int tpf_gcp_delete_qr(struct tpf_gcp_client *c, const char *zone, const char *id,
		      const char *node, const char *lineage, struct tpf_diags *d);

/*
 * reservationName of a queued resource body b (discovery document schema
 * QueuedResource): `reservation: NAME` as
 * projects/P/locations/ZONE/reservations/NAME (a full path as written),
 * `reserved: true` alone as ".../reservations/-", any reservation, which
 * is what `gcloud compute tpus queued-resources create --reserved` sends.
 * Nothing when neither is set.
 */
void tpf_gcp_qr_reservation(json_t *b, const char *project, const struct tpf_recipe *r);

#endif
