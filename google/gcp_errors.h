/*
 * Cloud TPU API errors: parsing and classification.
 *
 * Two shapes (docs/cloud-tpu-api.md section 6, AIP-193):
 *  - an HTTP error body {"error":{"code","message","status","details"}}
 *    (the OAuth2 token endpoint uses {"error","error_description"});
 *  - an operation's bare google.rpc.Status {"code","message","details"},
 *    which carries no "status" string;
 *  - Compute Engine's: the HTTP shape with the legacy "errors" array
 *    (reason quotaExceeded, ...), and its Operation's error.errors[].
 * The class decides what the client does: retry inside the client
 * (transient), move on to the group's next zone (quota, capacity), or give
 * up with the API's own words (permanent).
 */
#ifndef TPF_GCP_ERRORS_H
#define TPF_GCP_ERRORS_H

#include <jansson.h>
#include <stddef.h>
#include "util/buf.h"

enum tpf_gcp_class {
	TPF_GCP_PERMANENT = 0, /* anything else: report, do not retry */
	TPF_GCP_TRANSIENT,     /* 429 rate limit, 408, 5xx gateways, resets: retry with backoff */
	TPF_GCP_QUOTA,         /* a named chip quota is exhausted: next zone, no waiting */
	TPF_GCP_CAPACITY,      /* operation code 8 (no capacity) or 9 (reservation short) */
	TPF_GCP_NOTFOUND,      /* 404 / code 5 */
	TPF_GCP_CONFLICT,      /* 409 ALREADY_EXISTS / code 6 */
	TPF_GCP_AUTH,          /* 401 / code 16: token rejected */
	TPF_GCP_LOCATION,      /* "Location Z is not found or access is unauthorized.": next zone */
	TPF_GCP_STALE,         /* HTTP 412: a precondition (ifGenerationMatch) failed */
};

struct tpf_gcp_error {
	long http;        /* HTTP status, 0 for an operation's Status */
	int code;         /* google.rpc.Code, 0 if the body had none */
	char *status;     /* "RESOURCE_EXHAUSTED"; derived from code/http if absent */
	char *message;    /* the API's message; never NULL after parsing */
	char *reason;     /* ErrorInfo.reason, else the legacy errors[0].reason; may be NULL */
	int quota_failure; /* a google.rpc.QuotaFailure detail was present */
	double retry_delay; /* RetryInfo.retryDelay in seconds, -1 if absent */
};

#define TPF_GCP_ERROR_INIT { 0, 0, NULL, NULL, NULL, 0, -1 }

/*
 * Parse an HTTP error response. `body` may be anything (JSON of either
 * shape, HTML from a proxy, empty): e->message is the API's message, else
 * the first line of the body (at most 300 bytes), else "no message".
 * e must be TPF_GCP_ERROR_INIT or released.
 */
void tpf_gcp_error_parse_http(struct tpf_gcp_error *e, long http, const char *body, size_t len);

/* Parse an operation's error (a google.rpc.Status object; NULL gives an
 * "unknown error" with code 2). */
void tpf_gcp_error_parse_status(struct tpf_gcp_error *e, json_t *status);

/*
 * Parse a Compute Engine Operation's error
 * (https://cloud.google.com/compute/docs/reference/rest/v1/zoneOperations:
 * "error": {"errors": [{"code": "QUOTA_EXCEEDED", "message": ...}]},
 * "httpErrorStatusCode": 403): message is every errors[].message joined
 * with "; ", reason the first errors[].code, code the canonical code of
 * httpErrorStatusCode (2 without one), http 0 (an operation's error).
 * A reason of QUOTA_EXCEEDED classifies as QUOTA, one naming
 * RESOURCE_POOL_EXHAUSTED or STOCKOUT as CAPACITY.
 */
void tpf_gcp_error_parse_compute(struct tpf_gcp_error *e, json_t *op);

void tpf_gcp_error_release(struct tpf_gcp_error *e);

/*
 * Classify. HTTP 429: a message naming a chip quota ("...ForTPUAPI",
 * "PerProjectPerZone", "PerProjectPerRegion") is QUOTA; a rate limit
 * (ErrorInfo reason RATE_LIMIT_EXCEEDED, "per minute") is TRANSIENT; a
 * QuotaFailure detail is QUOTA; any other 429 is TRANSIENT (Terraform's
 * error_retry_predicates.go retries 429). 408/500/502/503/504 and 409
 * ABORTED are TRANSIENT, and so is Compute Engine's 400 with reason
 * resourceNotReady ("The resource '...' is not ready": another operation
 * on it, such as a delete, still runs; the body as quoted in
 * opstrace/opstrace issue 1218, and retried so by Spinnaker's clouddriver,
 * pull request 256). Operation code 8 is CAPACITY unless it names a
 * quota; 9 is CAPACITY.
 *
 * Zone failover, as SkyPilot's GCP handler blocks a zone
 * (skypilot-org/skypilot sky/backends/cloud_vm_ray_backend.py,
 * FailoverCloudErrorHandlerV2._gcp_handler): any answer whose message says
 * "is not found or access is unauthorized" (HTTP 403, "Location us-east1-d
 * is not found or access is unauthorized.", a zone the project cannot use)
 * is LOCATION. (A create whose node is lost while creating is a stockout
 * too, but only the create knows that: providers/gcp/gcp_api.c.)
 */
enum tpf_gcp_class tpf_gcp_error_classify(const struct tpf_gcp_error *e);

/*
 * 1 when e is Compute Engine's refusal of a request for quota: HTTP 403
 * with reason quotaExceeded (legacy errors[].reason, which the parse
 * keeps when there is no ErrorInfo) or QUOTA_EXCEEDED, or a message
 * "Quota 'METRIC' exceeded.  Limit: N in region R." (reference section
 * 3.3 of docs/compute-engine.md; the API's own 403 body). Not part of
 * tpf_gcp_error_classify, whose 403 stays PERMANENT for every other API:
 * the Compute Engine create asks for this by itself.
 */
int tpf_gcp_error_quota_exceeded(const struct tpf_gcp_error *e);

/* TPF_EQUOTA, TPF_ECAPACITY, TPF_EZONE, TPF_ENOTFOUND, TPF_ETRANSIENT, TPF_ESTALE or TPF_ERROR. */
int tpf_gcp_class_rc(enum tpf_gcp_class c);

/* Canonical google.rpc.Code name ("NOT_FOUND") or NULL if out of range. */
const char *tpf_gcp_code_name(int code);

/*
 * Append "HTTP 400 INVALID_ARGUMENT: <message>" (HTTP errors) or
 * "operation failed with code 8 (RESOURCE_EXHAUSTED): <message>"
 * (operation errors) to b.
 */
void tpf_gcp_error_format(const struct tpf_gcp_error *e, struct tpf_buf *b);

/* A hint for people, or NULL. `project` may be NULL. Caller frees. */
char *tpf_gcp_error_hint(const struct tpf_gcp_error *e, enum tpf_gcp_class c,
			 const char *project);

#endif
