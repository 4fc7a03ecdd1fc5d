/*
 * fakegcp: an emulator of the Cloud TPU v2 API, the Google OAuth2 token
 * endpoint and the GCE metadata server, for tpuform's tests.
 *
 * The agreed interface (command line, admin endpoints, log format) is
 * tests/fakegcp/README.md; the API it imitates is
 * docs/cloud-tpu-api.md and the discovery document it validates
 * requests against (tests/fakegcp/tpu.v2.discovery.json).
 *
 * This header is private to tests/fakegcp/. Names use the fg_ prefix.
 * Threading: libmicrohttpd runs one thread per connection; all world state
 * (nodes, operations, quotas, faults, tokens) is guarded by one mutex taken
 * with fg_lock()/fg_unlock(). The request log has its own mutex.
 */
#ifndef FAKEGCP_H
#define FAKEGCP_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <microhttpd.h>
#include "util/buf.h"
#include "tests/fakegcp/fg_fields.h"

#define FG_BODY_MAX (4u << 20) /* bytes; larger bodies get 413 */
#define FG_MAX_HDR 8           /* response headers an answer may add */

/* Command-line options (fg_main.c), read-only once the server runs. */
struct fg_opts {
	const char *listen;
	int port;
	const char *port_file;
	const char *project;
	const char *discovery;
	double latency_ms;
	double op_seconds;
	int page_size;
	int auth_token;         /* --auth token */
	double token_ttl;       /* seconds */
	uint32_t worker_ip_base; /* host byte order */
	int worker_port;
	int external_ips;
	const char *log_path;
	const char *sa_email;   /* NULL: any iss accepted */
	uint64_t seed;
	int verbose;
	const char *project_number;
	/* keyless auth (fg_sts.c, fg_iam.c) */
	const char *wif_audience;       /* --wif-audience: the provider STS accepts */
	const char *wif_subject_token;  /* --wif-subject-token: the subject token it accepts */
	const char *oidc_request_token; /* --oidc-request-token: bearer for /oidc/idtoken */
	const char *impersonate_sa;     /* --impersonate-sa: the account IAM will impersonate */
	int impersonate_sts_only;       /* --impersonate-caller sts */
	const char *require_user_project; /* --require-user-project: x-goog-user-project wanted */
	const char *worker_dir;       /* sshd.sh's DIR: the guest agent's files (fg_agent.c) */
	const char *worker_user;      /* the workers' login user (default root) */
	const char *oslogin_username; /* OS Login POSIX user name; NULL: from the email */
	const char *token_email;      /* what /tokeninfo says tokens act for */
	const char *compute_schema;   /* --compute-schema FILE */
	double compute_stage_s;       /* --compute-stage-seconds (< 0: --op-seconds) */
	double delete_s;              /* --delete-seconds: a node's, instance's or MIG's delete
				       * (< 0: --op-seconds) */
	double compute_wait_s;        /* --compute-wait-seconds: most an operations.wait blocks */
	const char *billing_key;      /* --billing-api-key: the one key= the Billing API takes */
	int billing_disabled;         /* --billing-disabled: the Billing API answers 403 */
};
extern struct fg_opts fg_opt;

/* One HTTP request and the answer being built for it (fg_server.c). */
struct fg_req {
	struct MHD_Connection *conn;
	char *method;
	char *path;        /* percent-decoded path as MHD gave it */
	char *raw_uri;     /* as received, for the log */
	const char *query; /* raw query string inside raw_uri, or NULL */
	struct tpf_buf body;
	int body_too_large;
	int started;
	double t0;         /* monotonic seconds at arrival */

	unsigned status;   /* 0: no answer yet */
	char *out;
	size_t out_len;
	const char *ctype;
	char *hdr_name[FG_MAX_HDR], *hdr_value[FG_MAX_HDR];
	int nhdr;
	int pretty;        /* prettyPrint (default true, like the real API) */
	const char *fault; /* injected fault kind, for the log */
	int drop;          /* close the connection without answering */
	int no_log;
	int shutdown_after;
	json_t *log_body;  /* body as logged (owned), or NULL */
	int fields_done;   /* the fields mask was applied (fg_fields.c) */
	json_t *pending;   /* an answer to serialize, owned (fg_reply_flush), or NULL */
	const char *fields_type; /* discovery schema of the answer ("Node"), for fields */
	json_t *args;      /* query arguments of a batch part (fg_compute_batch.c), else
			    * NULL: the connection's */
};

/* A parsed path: which discovery method and the values of its variables. */
struct fg_method;
struct fg_match {
	const struct fg_method *m;
	const char *id;      /* method id, e.g. "tpu.projects.locations.nodes.get" */
	char *var_name[4];
	char *var_value[4];
	size_t nvars;
	json_t *body;        /* validated request body (borrowed), or NULL */
};

/* ---- fg_reply.c: answers, errors, timestamps ---- */
/* Answer with v (stolen) as JSON, pretty unless prettyPrint=false. */
void fg_reply_json(struct fg_req *r, unsigned status, json_t *v);
/* Serialize a partial response fg_reply_json kept for later (it shares
 * nothing with the emulator's state): the server calls it before sending,
 * outside any lock. No-op when there is none. */
void fg_reply_flush(struct fg_req *r);
/* Answer with a copy of len bytes of data (may hold NULs). */
void fg_reply_bytes(struct fg_req *r, unsigned status, const char *ctype, const void *data,
		    size_t len);
/* Answer with a copy of text. */
void fg_reply_text(struct fg_req *r, unsigned status, const char *ctype, const char *text);
/* Add a response header (copied). At most FG_MAX_HDR. */
void fg_reply_header(struct fg_req *r, const char *name, const char *value);
/*
 * AIP-193 error: {"error":{"code":http,"message":...,"status":STATUS,
 * "details":[...]}}. details is stolen and may be NULL (then omitted).
 */
void fg_reply_error(struct fg_req *r, unsigned http, const char *status, json_t *details,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* 400 INVALID_ARGUMENT with msg and one BadRequest field violation. */
void fg_bad_request(struct fg_req *r, const char *field, const char *msg);
/* google.rpc.Status without the status string, for operation errors. */
json_t *fg_status_new(int code, const char *message);
/* {"@type":".../google.rpc.ResourceInfo","resourceName":name} */
json_t *fg_resource_info(const char *name);
/* RFC 3339 UTC with nanoseconds, e.g. "2025-05-01T10:00:00.123456789Z", into out[40]. */
void fg_timestamp(char out[40]);
/* Monotonic seconds. */
double fg_mono(void);
/* Sleep up to `seconds`, returning early when the server stops. */
void fg_sleep(double seconds);
/* Wake every fg_sleep() and make later ones return at once. */
void fg_stop_sleepers(void);

/* ---- fg_world.c: the lock, nodes, random numbers ---- */
void fg_lock(void);
void fg_unlock(void);
/* 64 random bits from the id stream (seeded by --seed). Lock held. */
uint64_t fg_rand_id(void);
void fg_world_init(uint64_t seed);
void fg_world_free(void);

enum fg_sched { FG_ON_DEMAND, FG_PREEMPTIBLE, FG_SPOT };

struct fg_node {
	char *zone;
	char *id;          /* nodeId, the last segment of the name */
	json_t *res;       /* the Node resource as served */
	char *type;        /* accelerator type, e.g. "v4-16" */
	int workers;
	enum fg_sched sched;
	int doomed;        /* the create operation will fail for capacity */
	char *create_op;   /* name of the create operation while it runs */
	uint32_t first_ip; /* first worker address, host byte order */
};

/* Lookups and changes below need the lock. Returned pointers are borrowed. */
struct fg_node *fg_node_find(const char *zone, const char *id);
/* Takes ownership of n. */
void fg_node_add(struct fg_node *n);
void fg_node_remove(struct fg_node *n);
/* Nodes of zone (NULL: all zones), sorted by id, in a fresh array the caller
 * frees (the nodes stay borrowed); *count gets the length. */
struct fg_node **fg_nodes_in(const char *zone, size_t *count);
/* Reserve `count` consecutive worker addresses; returns the first. */
uint32_t fg_alloc_ips(int count);
void fg_node_free(struct fg_node *n);

/* ---- fg_discovery.c: the discovery document, routing, query checks ---- */
/* Load and index the document; on failure writes a reason to err. */
int fg_discovery_load(const char *path, char *err, size_t errlen);
void fg_discovery_free(void);
/* 0 and *out filled; -1 no such path; -2 the path exists but not with that
 * HTTP method. Release with fg_match_release(). */
int fg_discovery_match(const char *http_method, const char *path, struct fg_match *out);
void fg_match_release(struct fg_match *mt);
/* Value of a path variable ("projectsId", "locationsId", ...) or NULL. */
const char *fg_match_var(const struct fg_match *mt, const char *name);
/* The schema named by the method's request $ref, or NULL. */
const char *fg_method_request(const struct fg_method *m);
/* Unknown or ill-typed query parameters: answer 400 and return -1. */
int fg_check_query(struct fg_req *r, const struct fg_method *m);
/* Borrowed schema object by id ("Node"), or NULL. */
json_t *fg_schema(const char *name);

/* The schema of the method's response ("ListNodesResponse"), or NULL. */
const char *fg_method_response(const struct fg_method *m);
/* For fg_fields.c: the type of field `name` of schema `type` (fresh; "" for
 * a scalar, "map:T" for a map of T), *ok 0 if the schema has no such field. */
char *fg_schema_field_type(const char *type, const char *name, int *ok);

/* ---- partial responses (fg_fields.h; the glue in fg_reply.c) ---- */
/* Apply the request's `fields` to a 2xx answer *v (replaced): 0, or -1
 * after answering 400 (*v is still the caller's). Called by fg_reply_json. */
int fg_fields_filter(struct fg_req *r, json_t **v);

/* ---- fg_schema.c: request bodies against the discovery schemas ---- */
enum {
	FG_V_REQUIRED = 1, /* "Required." fields must be present (create) */
	FG_V_STRIP_RO = 2, /* drop output-only fields, as the real API ignores them */
};
/*
 * Validate body against the schema of the method's request type; on error
 * answer 400 INVALID_ARGUMENT in the real API's wording and return -1.
 * May modify body (FG_V_STRIP_RO).
 */
int fg_validate_body(struct fg_req *r, const struct fg_method *m, json_t *body, int flags);
/* "schedulingConfig" -> "scheduling_config" (fresh string). */
char *fg_snake(const char *camel);
/* "network_config.enable_external_ips" -> "networkConfig.enableExternalIps"
 * (a FieldMask path in JSON names); a new reference. */
json_t *fg_camel_path(const char *path);
/* fg_hostkey.c: the guest attribute {namespace: hostkeys, key: ssh-ed25519,
 * value} of a worker with no harness sshd, the same for the same node and
 * worker; a new reference, NULL if libcrypto failed. */
json_t *fg_made_up_host_key(const char *node_name, int worker);
/*
 * Drop what proto3 JSON does not print: false, 0, "", default enum values,
 * empty lists and empty maps (messages stay, even when empty). The real
 * API answers this way, so a sent "preemptible": false reads back absent.
 */
void fg_proto3_prune(const char *schema, json_t *obj);

/* ---- fg_route.c ---- */
/* Answer r (or mark it dropped). Called once the body is complete. */
void fg_route(struct fg_req *r);

/* ---- fg_nodes.c: nodes.* ---- */
void fg_nodes_create(struct fg_req *r, struct fg_match *mt);
void fg_nodes_get(struct fg_req *r, struct fg_match *mt);
void fg_nodes_list(struct fg_req *r, struct fg_match *mt);
void fg_nodes_delete(struct fg_req *r, struct fg_match *mt);
void fg_nodes_patch(struct fg_req *r, struct fg_match *mt);
void fg_nodes_stop(struct fg_req *r, struct fg_match *mt);
void fg_nodes_start(struct fg_req *r, struct fg_match *mt);
/* Change state; READY also sets health HEALTHY and the worker endpoints,
 * any other state drops health. Lock held. */
void fg_node_set_state(struct fg_node *n, const char *state);
/* Full resource name of a node. Caller frees. */
char *fg_node_name(const char *zone, const char *id);
/*
 * Check a Node body as nodes.create does (both accelerator fields, both
 * network fields, spot with preemptible, description, labels, accelerator
 * type offered in zone); `at` names the body in messages ("node" or
 * "queued_resource.tpu.node_spec[0].node"). 0 with *type (fresh), or -1
 * after answering 400.
 */
int fg_node_body_check(struct fg_req *r, const char *zone, json_t *body, const char *at,
		       char **type);
/* A new CREATING node from a checked body, not yet added; worker addresses
 * reserved. Lock held. */
struct fg_node *fg_node_new(const char *zone, const char *id, json_t *body, const char *type);
/* NULL if one more node like this fits every quota; else answers 429
 * RESOURCE_EXHAUSTED and returns the message (fresh). Lock held. */
char *fg_quota_refusal(struct fg_req *r, const char *zone, const char *type, enum fg_sched s,
		       int workers);

/* ---- fg_page.c ---- */
/* A list's page when no pageSize is asked (at most --page-size). */
#define FG_DEFAULT_PAGE 50
/* Parse pageSize/pageToken (AIP-158: absent is FG_DEFAULT_PAGE, above
 * --page-size is --page-size); -1 after answering 400. *after: fresh
 * string or NULL. */
int fg_page_params(struct fg_req *r, int *size, char **after);
/* Opaque page token for "continue after key". Caller frees. */
char *fg_page_token(const char *key);

/* ---- fg_node_rules.c: checks and defaults for a node being created ---- */
/* GCE label rules; -1 after answering 400. */
int fg_check_labels(struct fg_req *r, json_t *labels);
/* 1 if id is a valid node id: [a-z]([-a-z0-9]*[a-z0-9])?, at most 63. */
int fg_node_id_ok(const char *id);
enum fg_sched fg_sched_of(json_t *node);
/* networkConfig with full network/subnetwork paths (default: "default"). */
void fg_expand_network(json_t *res, const char *zone);
/* serviceAccount: the project's default compute account, cloud-platform scope. */
void fg_default_service_account(json_t *res);
/* A 19-digit decimal id (int64 as a JSON string). Caller frees. Lock held. */
char *fg_new_node_id(void);

/* ---- fg_ops.c: long-running operations ---- */
struct fg_op {
	char *name;
	char *zone;
	char *node_id;
	char *verb;        /* create, delete, update, stop, start */
	json_t *metadata;  /* OperationMetadata with @type */
	double done_at;    /* monotonic */
	int done;
	json_t *error;     /* bare google.rpc.Status once failed */
	json_t *response;  /* with @type once succeeded */
	json_t *patch;     /* update: the body */
	json_t *mask;      /* update: array of camelCase top-level fields */
	int qr;            /* on queued resource node_id (fg_qr.c), not on a node */
};
/* New running operation on node zone/id, registered; borrowed. Lock held. */
struct fg_op *fg_op_start(const char *zone, const char *node_id, const char *verb);
/* The Operation resource (fresh). Lock held. */
json_t *fg_op_json(const struct fg_op *op);
/* Finish every operation whose time has come. Lock held. */
void fg_ops_tick(void);
/* Finish every running operation now (admin). Lock held. */
void fg_ops_finish_all(void);
void fg_ops_free(void);
json_t *fg_ops_all_json(void);
void fg_operations_get(struct fg_req *r, struct fg_match *mt);
void fg_operations_list(struct fg_req *r, struct fg_match *mt);
void fg_operations_cancel(struct fg_req *r, struct fg_match *mt);
void fg_operations_delete(struct fg_req *r, struct fg_match *mt);
/* Called by fg_ops_tick for node operations (fg_node_state.c): sets op->error or
 * op->response and changes the node. */
void fg_node_op_finish(struct fg_op *op);

/* ---- fg_multislice.c: multisliceParams of a queued resource's node spec ---- */
/* Check spec's multisliceParams as the service does; 0 with *count (> 1)
 * and *prefix (fresh: nodeIdPrefix, else qr_id), or -1 after answering 400. */
int fg_ms_params(struct fg_req *r, json_t *spec, const char *qr_id, int *count, char **prefix);
/* "<prefix>-<k>", the id of node k of a multislice queued resource. Fresh. */
char *fg_ms_node_id(const char *prefix, int k);

/* ---- fg_qr.c: queuedResources.* (docs/cloud-tpu-api.md section 5) ---- */
void fg_qr_create(struct fg_req *r, struct fg_match *mt);
void fg_qr_get(struct fg_req *r, struct fg_match *mt);
void fg_qr_list(struct fg_req *r, struct fg_match *mt);
void fg_qr_delete(struct fg_req *r, struct fg_match *mt);
void fg_qr_reset(struct fg_req *r, struct fg_match *mt);
/* Move every queued resource on as time, capacity and its node allow.
 * Called by fg_ops_tick. Lock held. */
void fg_qrs_tick(void);
/* Admin operations:finish: provisioning queued resources finish now too.
 * Lock held. */
void fg_qrs_hurry(void);
/* Called by fg_ops_tick for operations with op->qr set. Lock held. */
void fg_qr_op_finish(struct fg_op *op);
/* Admin: POST /__admin/queuedResources/{zone}/{id}:state?value=X (rest
 * starts at {zone}). Answers r. */
void fg_qr_admin(struct fg_req *r, const char *rest);
/* POST /__admin/nodes:seed (fg_seed.c): many READY nodes at once. */
void fg_admin_seed(struct fg_req *r);
/* Every queued resource (all zones) as a JSON array (fresh). Lock held. */
json_t *fg_qrs_all_json(void);
void fg_qrs_free(void);

/* ---- fg_catalog.c: accelerator types, runtime versions, locations ---- */
/* VMs of a slice (reference section 9); 0 if the name is not understood. */
int fg_type_workers(const char *type);
/* {"type":"V4","topology":"2x2x2"} (fresh) or NULL. */
json_t *fg_type_config(const char *type);
/* "v4-16" from {"type":"V4","topology":"2x2x2"} (fresh) or NULL. */
char *fg_type_from_config(json_t *cfg);
/* 1 if the zone offers the type. */
int fg_type_offered(const char *zone, const char *type);
void fg_catalog_add_type(const char *type);
void fg_catalog_free(void);
void fg_zone_seen(const char *zone);
void fg_accel_list(struct fg_req *r, struct fg_match *mt);
void fg_accel_get(struct fg_req *r, struct fg_match *mt);
void fg_runtime_list(struct fg_req *r, struct fg_match *mt);
void fg_runtime_get(struct fg_req *r, struct fg_match *mt);
void fg_locations_list(struct fg_req *r, struct fg_match *mt);
void fg_locations_get(struct fg_req *r, struct fg_match *mt);

/* ---- fg_limits.c: quota and capacity ---- */
/* "ZONE:TYPE:SCHED=N"; -1 if malformed. */
int fg_quota_parse(const char *spec);
/* zone, type ("*" any), sched name; value < 0 removes the limit. -1 if bad. */
int fg_quota_set(const char *zone, const char *type, const char *sched, long value);
/* "ZONE=N"; -1 if malformed. */
int fg_capacity_parse(const char *spec);
void fg_capacity_set(const char *zone, long value);
/* NULL if creating this node fits every quota, else the 429 message (fresh).
 * Lock held. */
char *fg_quota_exceeded(const char *zone, const char *type, enum fg_sched s, int workers);
/* 1 if the zone has no room for one more node. Lock held. */
int fg_capacity_full(const char *zone);
const char *fg_sched_name(enum fg_sched s);
void fg_limits_free(void);
json_t *fg_limits_json(void);

/* ---- fg_faults.c ---- */
/* "429,500,drop"; -1 if a kind is unknown. */
int fg_faults_set(double rate, const char *kinds);
void fg_faults_seed(uint64_t seed);
/* A fault kind to inject into this request, or NULL. */
const char *fg_fault_pick(void);
/* --zone-fault ZONE=unauthorized|preempted (fg_faults.c); -1 if malformed. */
int fg_zone_fault_parse(const char *spec);
/* 1 if zone has the fault `kind`. Set at start only: no lock needed. */
int fg_zone_fault(const char *zone, const char *kind);
void fg_zone_faults_free(void);
/* Apply it: answer r, mark it dropped, or (slow) delay and return 0 to
 * continue normally. Returns 1 if r is finished. */
int fg_fault_apply(struct fg_req *r, const char *kind);
json_t *fg_faults_json(void);

/* ---- fg_token.c: OAuth2 token endpoint and access tokens ---- */
int fg_token_add_key(const char *pem_path, char *err, size_t errlen);
/* "ID:SECRET:REFRESH"; -1 if malformed. */
int fg_token_add_user(const char *spec);
void fg_token_endpoint(struct fg_req *r);
/* New access token (fresh string) valid for --token-ttl. Lock held. */
char *fg_token_issue(void);
/* 1 if token was issued here and has not expired. Lock held. */
int fg_token_valid(const char *token);
void fg_token_revoke_all(void);
void fg_token_free(void);
/* Enforce --auth token on an API request: answer 401 and return -1. */
int fg_auth_check(struct fg_req *r);

/* The fields of an application/x-www-form-urlencoded body, or NULL. */
json_t *fg_form_parse(struct fg_req *r);

/* ---- fg_sts.c: Security Token Service (RFC 8693), tokens of STS and IAM ---- */
enum fg_fed_kind { FG_FED_STS = 1, FG_FED_IAM = 2 };
/* Answer /v1/token (STS) and /oidc/idtoken; 1 if r was one of them. */
int fg_sts_serve(struct fg_req *r);
/* A new token of kind, valid for min(lifetime, --token-ttl) seconds (fresh
 * string). Lock held. */
char *fg_fed_token_issue(enum fg_fed_kind kind, double lifetime);
/* The kind of a valid token issued by fg_fed_token_issue, -1 if expired,
 * 0 if unknown. Lock held. */
int fg_fed_token_state(const char *t);
void fg_fed_tokens_revoke(void);

/* ---- fg_iam.c: IAM Credentials generateAccessToken, quota project ---- */
/* Answer /v1/projects/-/serviceAccounts/...; 1 if r was one. */
int fg_iam_serve(struct fg_req *r);
/* --require-user-project on an API request: answer 403 and return -1. */
int fg_user_project_check(struct fg_req *r);

/* ---- fg_jwt.c ---- */
/* base64url (no padding) decode via libcrypto; NULL if malformed. *len set. */
unsigned char *fg_b64url_decode(const char *s, size_t n, size_t *len);
char *fg_b64url_encode(const void *data, size_t len);
/*
 * Verify an RS256 JWT against the given public keys (EVP_PKEY *). On success
 * returns the claims (caller decrefs); on failure NULL and a message in the
 * words of Google's token endpoint in err.
 */
json_t *fg_jwt_verify(const char *jwt, void *const *keys, size_t nkeys, char *err, size_t errlen);

/* ---- fg_metadata.c: GCE metadata server ---- */
/* 1 if path belongs to the metadata server (and r is answered). */
int fg_metadata_serve(struct fg_req *r);

/* ---- fg_guest_md.c: a metadata server per worker VM (issue 21) ---- */
/* 1 if the path is a worker's metadata (/__worker/IP/computeMetadata/v1/...)
 * and r is answered; may block while a wait_for_change request waits. */
int fg_guest_md_serve(struct fg_req *r);
/* POST /__admin/guest-metadata?worker=IP&key=KEY&value=V. */
void fg_guest_md_admin(struct fg_req *r);
/* End every wait_for_change now, and the ones that come later at once
 * (the server is stopping and joins its connection threads). */
void fg_guest_md_stop(void);

/* ---- fg_agent.c: the guest agent of the workers (authorized_keys, host keys) ---- */
/* Write the authorized_keys of n's workers from its metadata (or OS Login's
 * keys), when n is READY and --worker-dir is set. Lock held. */
void fg_agent_sync(const struct fg_node *n);
/* fg_agent_sync for every node. Lock held. */
void fg_agent_sync_all(void);
/* 1 if OS Login governs SSH to n (node metadata, else project's). Lock held. */
int fg_agent_oslogin(const struct fg_node *n);
void fg_nodes_guest_attributes(struct fg_req *r, struct fg_match *mt);
/* The same for Compute instances (fg_compute_inst.c): OS Login per md (an
 * object of strings, the instance's metadata), authorized_keys of the
 * `count` workers from first_ip, and the hostkeys/ items of the worker at
 * ip (name, k: what a made-up key derives from). Lock held. */
int fg_agent_oslogin_md(json_t *md);
void fg_agent_write(uint32_t first_ip, int count, json_t *md);
json_t *fg_agent_host_keys(uint32_t ip, const char *name, int k);

/* ---- fg_compute*.c: the Compute Engine v1 subset (tests/fakegcp/README.md) ---- */
/* Load the schema and set up; -1 with err. */
int fg_compute_init(const char *schema_path, char *err, size_t errlen);
void fg_compute_free(void);
/* Answer /compute/v1/projects/P/... below the project, and the batch
 * endpoint /batch/compute/v1; 1 if r was one. */
int fg_compute_serve(struct fg_req *r);
/* The same, once the front door (faults, auth) is passed: 1 if answered. */
int fg_compute_request(struct fg_req *r);
/* fg_agent_write for every RUNNING Compute instance (an OS Login key was
 * imported, the policy changed: fg_agent_sync_all). Lock held. */
void fg_compute_agent_sync_all(void);
/* POST /batch/compute/v1 (fg_compute_batch.c); 1 if r was it. */
int fg_compute_batch(struct fg_req *r);
/* /__admin/compute...: rest is what follows "/__admin/". Answers r. */
void fg_compute_admin(struct fg_req *r, const char *rest);

/* ---- fg_account.c: Compute projects.get, tokeninfo, OS Login ---- */
/* 1 if r was one of theirs (and is answered). */
int fg_account_serve(struct fg_req *r);
/* --project-metadata KEY=VALUE; -1 if malformed. */
int fg_project_metadata_add(const char *spec);
/* The project's metadata (object of strings, borrowed) or NULL. */
json_t *fg_project_metadata(void);
/* authorized_keys lines of the unexpired keys imported for POSIX user
 * `username`, appended to out. Lock held. */
void fg_oslogin_keys(const char *username, struct tpf_buf *out);
/* 1 while OS Login is required whatever metadata says (an organization
 * policy: constraints/compute.requireOsLogin). Lock held. */
int fg_oslogin_required(void);
/* GET /__admin/oslogin: {"required", "keys": [imported keys]}; POST
 * ?required=true|false sets the policy (the agents follow). Answers r. */
void fg_oslogin_admin(struct fg_req *r);
void fg_account_free(void);

/* ---- fg_gcs*.c: the Cloud Storage JSON API subset (tests/fakegcp/README.md) ---- */
/* Answer /storage/v1/..., /upload/storage/v1/..., /download/storage/v1/...;
 * 1 if r was one of them. */
int fg_gcs_serve(struct fg_req *r);

/* ---- fg_billing.c: Cloud Billing Catalog services.skus.list ---- */
/* 1 when r was a Billing Catalog request (answered). */
int fg_billing_serve(struct fg_req *r);

/* ---- fg_monitoring.c: Cloud Monitoring v3 timeSeries.create, metricDescriptors.create ---- */
/* Answer /v3/projects/... and return 1; 0 when the path is not Cloud Monitoring's. */
int fg_monitoring_serve(struct fg_req *r);
void fg_monitoring_free(void);
/* Answer the XML API's GET|HEAD /BUCKET/OBJECT when BUCKET exists; 1 if r was
 * one (tried last, so it shadows nothing). */
int fg_gcs_xml_serve(struct fg_req *r);
/* --bucket NAME: create an empty bucket at start; -1 if the name is invalid. */
int fg_gcs_bucket_option(const char *name);
/* /__admin/storage...: rest is what follows "/__admin/". Answers r. */
void fg_gcs_admin(struct fg_req *r, const char *rest);
void fg_gcs_free(void);

/* ---- fg_admin.c ---- */
void fg_admin_serve(struct fg_req *r);

/* ---- fg_reqlog.c ---- */
int fg_reqlog_open(const char *path, char *err, size_t errlen);
/* Record r (after it was answered or dropped). */
void fg_reqlog_add(struct fg_req *r);
json_t *fg_reqlog_json(void);
void fg_reqlog_clear(void);
void fg_reqlog_close(void);

/* ---- fg_server.c ---- */
/* Start listening; the bound port goes to *port. -1 with err on failure. */
int fg_server_start(const char *addr, int port, int *bound, char *err, size_t errlen);
void fg_server_stop(void);
/* The port r arrived on (the bound port, even with --port 0), or -1. */
int fg_req_local_port(struct fg_req *r);
/* Ask main() to shut down (after the current answer is sent). */
void fg_request_shutdown(void);

/* fg_condition.c: admin node actions symptom, healthDescription,
 * maintenance, clearCondition on n (lock held). NULL when done, else a
 * static refusal for the caller's 400. */
const char *fg_node_condition(struct fg_req *r, struct fg_node *n, const char *action);

#endif
