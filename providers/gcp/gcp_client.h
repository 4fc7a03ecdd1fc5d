/*
 * The Google client of the gcp provider, shared by its two API back-ends
 * (tpu/: Cloud TPU v2, docs/cloud-tpu-api.md sections 2, 3 and 6; compute/:
 * Compute Engine, docs/compute-engine.md).
 *
 * Every call blocks its thread until done and is thread-safe: many calls
 * may run at once from different threads, sharing one HTTP engine
 * (gcp_http.h) and one token cache (gcp_auth.h). Every request goes
 * through the one Google REST client (google/gapi.h), which owns the
 * retries (429 rate limits, 408, 500, 502, 503, 504, dropped connections,
 * timeouts; backoff, jitter and Retry-After; at most settings.tries
 * attempts; POST and PATCH only when safe to repeat), the 401 token
 * refresh, pages and the polling of long-running operations (poll_min
 * growing to poll_max seconds). The machinery is in gcp_client.c; the
 * resources are in the back-ends (tpu/gcp_api.h, compute/compute_engine.h).
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
#ifndef TPF_GCP_CLIENT_H
#define TPF_GCP_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include "model/recipe.h"
#include "google/gcp_auth.h"
#include "google/gcp_http.h"
#include "google/gcp_retry.h"
#include "providers/gcp/gcp_backend.h"
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
 * What the SSH access layer (gcp_access.h) learns of a node a back-end
 * read: typed facts, filled by the back-end from the API's own object
 * (Cloud TPU Node, Compute Engine Instance, a slice's MIG and members).
 * Everything is borrowed for the call.
 */
struct tpf_gcp_seen {
	const char *name;           /* the node's name (last segment) */
	const char *id;             /* NULL: not known */
	json_t *metadata;           /* object of strings, NULL: none */
	int nendpoints;             /* its workers' network endpoints */
	int multislice;             /* Cloud TPU: Node.multisliceNode (a slice of a unit) */
	enum tpf_gcp_shape shape;   /* what the node is (gcp_backend.h) */
	const char *const *members; /* SLICE: its members' instance names, worker order */
	size_t nmembers;
};

/*
 * Called with every node a back-end reads (the fleet's nodes of a list, a
 * get), in the calling thread, so that a layer above (gcp_access.h)
 * learns a node's metadata without asking for it again. zone: the zone
 * the call was about. Set once, before any call; fn must be thread-safe.
 */
typedef void (*tpf_gcp_node_seen_fn)(void *ctx, const char *zone, const struct tpf_gcp_seen *n);
void tpf_gcp_client_on_node(struct tpf_gcp_client *c, tpf_gcp_node_seen_fn fn, void *ctx);

/* Borrowed internals, for tests and benchmarks. */
struct tpf_gcp_http *tpf_gcp_client_http(struct tpf_gcp_client *c);
struct tpf_gcp_auth *tpf_gcp_client_auth(struct tpf_gcp_client *c);
const struct tpf_gcp_settings *tpf_gcp_client_settings(struct tpf_gcp_client *c);

#endif
