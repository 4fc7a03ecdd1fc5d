/*
 * The one Google REST client: every request tpuform sends to a Google API
 * (Cloud TPU, Cloud Storage, the token endpoints, OS Login, and Compute
 * Engine next) goes through tpf_gapi_send, the only retry loop.
 *
 * What it owns:
 *  - one request with a bearer token from the credentials plugged in
 *    (tpf_gapi_set_creds; google/gcp_auth.h plugs itself in), the quota
 *    project header, and the size cap of the HTTP engine (gcp_http.h);
 *  - retries, the same everywhere: at most settings.tries attempts
 *    (TPUFORM_GCP_TRIES), exponential backoff with equal jitter between
 *    settings.retry_base and retry_cap (gcp_retry.h tpf_gcp_backoff),
 *    never shorter than the answer's Retry-After (delta-seconds or an
 *    HTTP-date, RFC 9110 section 10.2.3) or RetryInfo.retryDelay, capped
 *    at TPF_GCP_RETRY_AFTER_MAX. Retried: answers of class
 *    TPF_GCP_TRANSIENT (gcp_errors.h: 408, 429 rate limits, 500, 502, 503,
 *    504, 409 ABORTED) and transfers that failed in a way a retry may fix
 *    (a dropped connection, a reset, a timeout: gcp_http.h TPF_ETRANSIENT).
 *    A 401 fetches a new token once. A request that is not idempotent
 *    (POST, PATCH) is retried only when it says it may be: it carries a
 *    requestId (TPF_GAPI_REQUEST_ID), a precondition
 *    (TPF_GAPI_PRECONDITION), or repeating it is harmless
 *    (TPF_GAPI_IDEMPOTENT). This is AIP-194's rule (https://google.aip.dev/194:
 *    retry only when the request is safe to repeat) and Cloud Storage's
 *    (https://cloud.google.com/storage/docs/retry-strategy: writes are
 *    "conditionally idempotent" with ifGenerationMatch);
 *  - Google's error bodies parsed into message, status and reason
 *    (gcp_errors.h, AIP-193) and turned into a diagnostic for people:
 *    "<what>: HTTP 403 PERMISSION_DENIED: <the API's message>" and a hint;
 *  - long-running operations of both shapes (tpf_gapi_wait);
 *  - pagination (tpf_gapi_pages: nextPageToken, a callback per page);
 *  - requestId idempotency (tpf_uuid4_try in util/hash.h: a UUID from libcrypto's
 *    random bytes, one per logical request, the same on every attempt).
 *
 * Thread-safe: calls may run concurrently on one client. Calls block the
 * calling thread only.
 */
#ifndef TPF_GAPI_H
#define TPF_GAPI_H

#include <jansson.h>
#include <stddef.h>
#include "google/gcp_errors.h"
#include "google/gcp_http.h"
#include "google/gcp_retry.h"
#include "util/diag.h"

struct tpf_gapi;

/*
 * Where tokens come from (google/gcp_auth.h tpf_gcp_auth_creds fills one).
 * token: a token into *out (freed with token_free), or an error with a
 * diagnostic. invalidate: the API rejected `used`; 1 if a new token may
 * differ (then the request is sent once more). header: one more request
 * header line ("x-goog-user-project: P") or NULL. reject_hint: what to do
 * when tokens are rejected (borrowed). Every function is thread-safe.
 */
struct tpf_gapi_creds {
	int (*token)(void *ctx, char **out, struct tpf_diags *d);
	void (*token_free)(char *token);
	int (*invalidate)(void *ctx, const char *used);
	const char *(*header)(void *ctx);
	const char *(*reject_hint)(void *ctx);
	void *ctx;
};

/*
 * Time, injectable for tests: sleep(ctx, seconds) for retry backoff and
 * operation polls, now_wall(ctx) in epoch seconds for Retry-After dates.
 * NULL members use the real ones (util/timeutil.h).
 */
struct tpf_gapi_clock {
	void (*sleep)(void *ctx, double seconds);
	double (*now_wall)(void *ctx);
	void *ctx;
};

struct tpf_gapi_config {
	const char *endpoint; /* the API's root, for messages ("cannot reach '<endpoint>'"); may be NULL */
	const char *project;  /* for hints; may be NULL */
	/* The HTTP engine to send on (borrowed, outlives the client); NULL:
	 * the client starts one of its own from the settings. */
	struct tpf_gcp_http *http;
	/* Timing and limits (copied); NULL: tpf_gcp_settings_load (the
	 * TPUFORM_GCP_* environment variables). */
	const struct tpf_gcp_settings *settings;
};

/* Open a client. No request is sent. 0, or TPF_ERROR with a diagnostic
 * (a bad TPUFORM_GCP_* variable, no HTTP engine). Free with tpf_gapi_free
 * (NULL ok) after every call has returned. */
int tpf_gapi_open(struct tpf_gapi **out, const struct tpf_gapi_config *cfg, struct tpf_diags *d);
void tpf_gapi_free(struct tpf_gapi *api);

/* Plug in credentials (copied; ctx borrowed). Before any call. Without
 * them requests carry no token unless the call sets rq.bearer. */
void tpf_gapi_set_creds(struct tpf_gapi *api, const struct tpf_gapi_creds *creds);
/* Replace the clock (copied; ctx borrowed). Before any call; for tests. */
void tpf_gapi_set_clock(struct tpf_gapi *api, const struct tpf_gapi_clock *clock);

/*
 * An API's own hint for an error answer (malloc'd; "" for none; NULL for
 * the default: gcp_errors.h tpf_gcp_error_hint with the project, or the
 * credentials' reject_hint for a 401). Called on the requesting thread.
 */
typedef char *(*tpf_gapi_hint_fn)(void *ctx, const struct tpf_gcp_error *e,
				  enum tpf_gcp_class cls);
void tpf_gapi_set_hint(struct tpf_gapi *api, tpf_gapi_hint_fn fn, void *ctx);

/* Send an API key (copied; NULL: none) with every request, in the
 * X-goog-api-key header, which Google's APIs take as they take the key=
 * query parameter (https://cloud.google.com/docs/authentication/api-keys-use):
 * a header keeps the key out of URLs, and so out of error messages and
 * logs that print them. Before any call. */
void tpf_gapi_set_api_key(struct tpf_gapi *api, const char *key);

/* Make operation waits and tpf_gapi_sleep watch **flag (borrowed; the
 * provider's interrupted field, providers/provider.h): once set they
 * return TPF_EINTERRUPTED, no diagnostic, within 0.2 s. Retry backoff
 * sleeps are not cut short. Before any call. */
void tpf_gapi_watch_interrupt(struct tpf_gapi *api, volatile int *const *flag);

/* Borrowed internals. */
struct tpf_gcp_http *tpf_gapi_http(struct tpf_gapi *api);
const struct tpf_gcp_settings *tpf_gapi_settings(const struct tpf_gapi *api);
const char *tpf_gapi_endpoint(const struct tpf_gapi *api);
/* Requests sent so far, every attempt counted (tests, benchmarks). */
long tpf_gapi_requests(struct tpf_gapi *api);

/* Sleep `seconds` through the clock, looking at the interrupt flag at
 * least every 0.2 s: 0, or TPF_EINTERRUPTED (no diagnostic). */
int tpf_gapi_sleep(struct tpf_gapi *api, double seconds);

/* The requestId is util/hash.h's tpf_uuid4_try: Compute Engine's and Cloud
 * TPU's requestId is "a valid UUID"
 * (https://cloud.google.com/compute/docs/reference/rest/v1/instances/insert). */
#define TPF_GAPI_REQUEST_ID_SIZE 37

/* ---- one request ---- */

/* Flags of a call. */
#define TPF_GAPI_IDEMPOTENT   (1u << 0) /* repeating it is harmless: a read sent as POST,
					 * a PATCH of absolute values under an updateMask */
#define TPF_GAPI_PRECONDITION (1u << 1) /* it carries a precondition: ifGenerationMatch,
					 * or a client-chosen resource id whose repeat is 409 */
#define TPF_GAPI_REQUEST_ID   (1u << 2) /* add requestId=<UUID> to the URL, one for every attempt */
#define TPF_GAPI_NO_AUTH      (1u << 3) /* no token from the credentials (token requests) */
#define TPF_GAPI_CONNECT_ONCE (1u << 4) /* a failed connect is final (probing a metadata server
					 * that is absent off Google Cloud) */

/* Bit for `quiet`: errors of that class get no diagnostic (the caller
 * handles them). TPF_GAPI_QUIET_ALL: no diagnostic at all, transfer
 * failures included; the caller reads the outcome. */
#define TPF_GAPI_QUIET(cls) (1u << (cls))
#define TPF_GAPI_QUIET_ALL (~0u)

struct tpf_gapi_call {
	/* in: the request. rq.url absolute; rq.bearer, when set, is sent as
	 * it is instead of a token of the credentials. */
	struct tpf_gcp_request rq;
	unsigned flags;          /* TPF_GAPI_* above */
	unsigned quiet;          /* TPF_GAPI_QUIET bits */
	const char *what;        /* "get node 'a' in zone 'z'", for messages */
	const char *address;     /* the diagnostic's address (a node name), may be NULL */
	/* out */
	struct tpf_gcp_response rs; /* the last answer */
	int attempts;            /* requests sent, retries included */
	int api_error;           /* 1: the API answered with an error: cls and err hold it */
	enum tpf_gcp_class cls;
	struct tpf_gcp_error err;
	char request_id[TPF_GAPI_REQUEST_ID_SIZE]; /* with TPF_GAPI_REQUEST_ID, the id sent */
};

#define TPF_GAPI_CALL_INIT { .rs = TPF_GCP_RESPONSE_INIT, .err = TPF_GCP_ERROR_INIT }
/* Release the outcome (rs, err); the inputs are the caller's. */
void tpf_gapi_call_release(struct tpf_gapi_call *c);

/*
 * Send c->rq with the retries above. 0 when a 2xx answer is in c->rs.
 * Otherwise: the class's code (gcp_errors.h tpf_gcp_class_rc; HTTP 412 is
 * TPF_ESTALE), TPF_ETRANSIENT when still failing after every retry (or a
 * transient failure of a request that may not be repeated), TPF_ERROR for
 * a transfer a retry will not fix; each with a diagnostic naming c->what,
 * except for classes in c->quiet. c's outcome is overwritten; release it
 * with tpf_gapi_call_release.
 */
int tpf_gapi_send(struct tpf_gapi *api, struct tpf_gapi_call *c, struct tpf_diags *d);

/*
 * tpf_gapi_send with a JSON body (borrowed; NULL: none) and a JSON answer:
 * on 2xx, *out is the answer's object (new reference; {} for an empty
 * body); an answer that is not a JSON object is TPF_ERROR with a
 * diagnostic. Releases c's outcome buffer but keeps c->err for the caller.
 */
int tpf_gapi_json(struct tpf_gapi *api, struct tpf_gapi_call *c, json_t *body, json_t **out,
		  struct tpf_diags *d);

/* ---- pagination ---- */

/* Called with each page (borrowed); a negative return stops the walk and
 * is returned (with the callback's diagnostic). */
typedef int (*tpf_gapi_page_fn)(json_t *page, void *ctx, struct tpf_diags *d);

/*
 * GET url, then url with pageToken=<nextPageToken> (added with '?' or
 * '&'), until a page has no token: AIP-158 (https://google.aip.dev/158).
 * A token repeated is an error (a server loop must not hang us). Errors
 * as tpf_gapi_json; classes in `quiet` get no diagnostic.
 */
int tpf_gapi_pages(struct tpf_gapi *api, const char *url, const char *what, const char *address,
		   unsigned quiet, tpf_gapi_page_fn page, void *ctx, struct tpf_diags *d);

/* ---- long-running operations ---- */

enum tpf_gapi_op_shape {
	/* google.longrunning.Operation (AIP-151, the Cloud TPU API): polled
	 * with GET <root><name> until "done": true; "error" is a
	 * google.rpc.Status. An operation with no name is synchronous. */
	TPF_GAPI_OP_LRO,
	/* Compute Engine's Operation
	 * (https://cloud.google.com/compute/docs/reference/rest/v1/zoneOperations/wait):
	 * POST <selfLink>/wait, which answers when the operation is DONE or
	 * after about two minutes, in a loop until "status": "DONE";
	 * "error": {"errors": [{"code", "message"}]} with httpErrorStatusCode. */
	TPF_GAPI_OP_COMPUTE,
};

struct tpf_gapi_op {
	enum tpf_gapi_op_shape shape;
	const char *root; /* LRO: the URL prefix of names ("https://tpu.googleapis.com/v2/") */
};

/*
 * Wait for operation `op` (the answer of a mutating call, borrowed) until
 * it is done, at most settings.op_timeout seconds, polling from
 * settings.poll_min growing to poll_max (LRO), or through .../wait.
 * Returns 0 when it succeeded. When the operation itself failed: *failed
 * set, a diagnostic "<what>: operation failed with code 8
 * (RESOURCE_EXHAUSTED): <message>" with the class's hint, and the class's
 * code (TPF_EQUOTA, TPF_ECAPACITY, ...; never TPF_ENOTFOUND). An error
 * polling it (*failed stays 0): its diagnostic; a 404 poll is retried
 * three times first (Terraform's OperationWait does the same);
 * TPF_EINTERRUPTED with no diagnostic once the interrupt flag is set (the
 * operation goes on without us).
 */
int tpf_gapi_wait(struct tpf_gapi *api, const struct tpf_gapi_op *how, json_t *op,
		  const char *what, const char *address, int *failed, struct tpf_diags *d);

#endif
