/*
 * The Cloud TPU v2 REST client (docs/cloud-tpu-api.md sections 2, 3 and 6).
 *
 * Every call blocks its thread until done and is thread-safe: many calls
 * may run at once from different threads, sharing one HTTP engine
 * (gcp_http.h) and one token cache (gcp_auth.h). Every request goes
 * through the one Google REST client (google/gapi.h), which owns the
 * retries (429 rate limits, 408, 500, 502, 503, 504, dropped connections,
 * timeouts; backoff, jitter and Retry-After; at most settings.tries
 * attempts; POST and PATCH only when safe to repeat), the 401 token
 * refresh, pages and the polling of long-running operations (poll_min
 * growing to poll_max seconds). The machinery is in gcp_client.c; this
 * file's functions are the nodes resource (gcp_api.c).
 *
 * Errors: 0 on success, else a negative TPF_E* code with a diagnostic of
 * the form "<what>: HTTP 400 INVALID_ARGUMENT: <the API's message>" or
 * "<what>: operation failed with code 8 (RESOURCE_EXHAUSTED): <message>",
 * plus a hint where one helps. TPF_EQUOTA: a named chip quota is
 * exhausted (no waiting: try another zone). TPF_ECAPACITY: no capacity
 * (operation code 8) or reservation short (9). TPF_ETRANSIENT: still
 * failing after every retry. TPF_ENOTFOUND where a function says so.
 * TPF_ERROR: anything else.
 */
#ifndef TPF_GCP_API_H
#define TPF_GCP_API_H

#include <jansson.h>
#include <stddef.h>
#include "model/recipe.h"
#include "google/gcp_auth.h"
#include "google/gcp_http.h"
#include "google/gcp_retry.h"
#include "providers/provider.h"
#include "util/diag.h"
#include "util/kv.h"

struct tpf_gcp_client;

struct tpf_gcp_client_config {
	const char *project;     /* required */
	const char *endpoint;    /* provider.gcp.endpoint or NULL (then env, then default) */
	const char *credentials; /* provider.gcp.credentials or NULL (ADC order) */
	const char *impersonate_service_account; /* provider.gcp.*, or NULL (gcp_auth.h) */
	const char *quota_project; /* provider.gcp.quota_project or NULL (gcp_auth.h) */
	int ssh_port;            /* port for endpoints that report none (0: 22) */
	int external_ips;        /* create nodes with networkConfig.enableExternalIps */
};

/* Check the endpoint, load settings (TPUFORM_GCP_* env) and credentials,
 * start the HTTP engine. No request is sent yet. Caller frees. */
int tpf_gcp_client_open(struct tpf_gcp_client **out, const struct tpf_gcp_client_config *cfg,
			struct tpf_diags *d);
void tpf_gcp_client_free(struct tpf_gcp_client *c);
/* tpf_gcp_client_open with the fleet file's provider.gcp settings and
 * ssh.port / ssh.address: the one way a gcp client is made from a fleet. */
int tpf_gcp_client_open_fleet(struct tpf_gcp_client **out, const struct tpf_fleet *f,
			      struct tpf_diags *d);
/* Make the client's operation polls watch **flag (the provider's
 * interrupted field, providers/provider.h; borrowed): once set, a wait
 * for an operation or a node returns TPF_EINTERRUPTED, no diagnostic,
 * within 0.2 s. Call before any request. */
void tpf_gcp_client_watch_interrupt(struct tpf_gcp_client *c, volatile int *const *flag);

/*
 * Called with every Node object the client reads (the fleet's nodes of
 * nodes.list, nodes.get), in the calling thread, so that a layer above
 * (gcp_access.h) learns a node's metadata without asking for it again.
 * zone: the zone the call was about. Set once, before any call; fn must be
 * thread-safe and must not keep `node` beyond the call.
 */
typedef void (*tpf_gcp_node_seen_fn)(void *ctx, const char *zone, json_t *node);
void tpf_gcp_client_on_node(struct tpf_gcp_client *c, tpf_gcp_node_seen_fn fn, void *ctx);

/* Borrowed internals, for tests and benchmarks. */
struct tpf_gcp_http *tpf_gcp_client_http(struct tpf_gcp_client *c);
struct tpf_gcp_auth *tpf_gcp_client_auth(struct tpf_gcp_client *c);
const struct tpf_gcp_settings *tpf_gcp_client_settings(struct tpf_gcp_client *c);

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

#endif
