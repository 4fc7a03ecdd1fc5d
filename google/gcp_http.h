/*
 * HTTP engine of the Cloud TPU client: libcurl's multi interface driven by
 * one thread, shared by every caller thread.
 *
 * Why this shape: provider ops run concurrently from plan/apply's thread
 * pool. One multi handle keeps one connection cache, DNS cache and TLS
 * session cache for all of them, so a request reuses whatever connection
 * is idle, and over HTTPS (tpu.googleapis.com speaks HTTP/2) concurrent
 * requests are multiplexed as streams on one TLS connection
 * (CURLOPT_PIPEWAIT, set for https URLs only: plain http is HTTP/1.1,
 * where waiting to multiplex only queues requests behind the first
 * answer). A CURLSH-shared connection cache with one
 * curl_easy_perform per thread also reuses connections but cannot
 * multiplex: each transfer in flight holds a connection of its own.
 * Measured against the emulator (HTTP/1.1 on loopback, 20 ms per request,
 * 8 threads x 25 GETs): this engine 0.53 s with 7 new connections; CURLSH
 * 0.52 s with 8, but 198 with libcurl's default CURLOPT_MAXCONNECTS
 * (5 idle connections, fewer than the threads, so returned connections
 * were closed); one handle per request without sharing: 200. Throughput
 * is the same on loopback; over TLS the difference is handshakes and, with
 * HTTP/2, one multiplexed connection instead of one per thread.
 * Only the engine thread touches the multi handle; callers hand an easy
 * handle over through a mutex-protected queue and curl_multi_wakeup(), then
 * block on a condition variable until it is done. A caller that blocks
 * (polling sleep, retry backoff) never holds up the others.
 *
 * Policy applied to every request: TLS peer and host verification stay on
 * (libcurl's defaults are never changed), only http and https, no
 * redirects, CURLOPT_CONNECTTIMEOUT, a stall timeout
 * (CURLOPT_LOW_SPEED_LIMIT 1 byte/s for LOW_SPEED_TIME), a whole-request
 * timeout, "User-Agent: tpuform/TPF_VERSION", and a cap on the response
 * body (TPF_GCP_MAX_BODY below).
 */
#ifndef TPF_GCP_HTTP_H
#define TPF_GCP_HTTP_H

#include <curl/curl.h>
#include <stddef.h>
#include "util/buf.h"
#include "util/diag.h"

#ifndef TPF_VERSION
#define TPF_VERSION "dev"
#endif
#define TPF_GCP_USER_AGENT "tpuform/" TPF_VERSION

/*
 * Largest response body kept, bytes (64 MiB, util/buf.h TPF_BUF_INPUT_MAX).
 * A Cloud TPU API or token answer is a few kilobytes (a page of nodes.list
 * is at most 1000 nodes); a longer body is a wrong endpoint or a broken
 * server, and is refused rather than buffered until memory runs out.
 * TPUFORM_GCP_MAX_BODY overrides it (tests use a small one).
 */
#define TPF_GCP_MAX_BODY TPF_BUF_INPUT_MAX

struct tpf_gcp_http;

struct tpf_gcp_http_opts {
	double connect_timeout; /* seconds */
	double stall_timeout;   /* seconds without a byte before aborting */
	double request_timeout; /* seconds for the whole request */
	size_t max_body;        /* bytes of one response body; 0: TPF_GCP_MAX_BODY */
};

/* Start the engine thread. Returns 0 or TPF_ERROR with a diagnostic. */
int tpf_gcp_http_new(struct tpf_gcp_http **out, const struct tpf_gcp_http_opts *o,
		     struct tpf_diags *d);
/* Stop the thread and free everything. No request may be in flight. NULL ok. */
void tpf_gcp_http_free(struct tpf_gcp_http *h);

struct tpf_gcp_request {
	const char *method;       /* "GET" "POST" "PATCH" "DELETE" */
	const char *url;          /* absolute */
	const char *body;         /* may be NULL */
	size_t body_len;
	const char *content_type; /* for a body; NULL: application/json */
	const char *bearer;       /* token for "Authorization: Bearer", may be NULL */
	int metadata_flavor;      /* send "Metadata-Flavor: Google" (GCE metadata server) */
	double connect_timeout;   /* overrides the engine's when > 0 */
	const char *const *headers; /* more "Name: value" lines, NULL-terminated; may be NULL.
				     * Wiped after use, like the bearer (they may hold secrets). */
};

struct tpf_gcp_response {
	long status;            /* HTTP status, 0 if no response arrived */
	struct tpf_buf body;
	char *retry_after;      /* Retry-After header value or NULL */
	int metadata_flavor;    /* response carried "Metadata-Flavor: Google" */
	CURLcode curl_code;     /* CURLE_OK when a response arrived */
	char error[CURL_ERROR_SIZE]; /* libcurl's message when curl_code != CURLE_OK */
	int too_large;          /* the body went past max_body: transfer aborted */
};

#define TPF_GCP_RESPONSE_INIT { 0, TPF_BUF_INIT, NULL, 0, CURLE_OK, "", 0 }
void tpf_gcp_response_release(struct tpf_gcp_response *r);

/*
 * Perform one request, blocking the calling thread only (thread-safe).
 * Returns 0 when an HTTP response arrived, whatever its status (rs filled).
 * Returns TPF_ETRANSIENT when the transfer failed in a way a retry may fix
 * (connect refused/timed out, reset, empty reply, stall, DNS), TPF_ERROR
 * for failures a retry will not fix (TLS verification, bad URL, a body
 * longer than max_body: then rs->too_large is set and the transfer was
 * aborted as soon as the body passed the cap); in all these cases
 * rs->curl_code/rs->error say why. No diagnostic is added: the caller
 * knows what the request was for. rs is released first.
 */
int tpf_gcp_http_do(struct tpf_gcp_http *h, const struct tpf_gcp_request *rq,
		    struct tpf_gcp_response *rs);

/*
 * The diagnostic for a response that was too large (rs->too_large):
 * "<what>: the answer to <METHOD> <url> is larger than the limit of
 * 64 MiB", with a hint naming TPUFORM_GCP_MAX_BODY. `address` may be
 * NULL. Returns TPF_ERROR.
 */
int tpf_gcp_http_too_large(const struct tpf_gcp_http *h, const struct tpf_gcp_request *rq,
			   const char *what, const char *address, struct tpf_diags *d);

/* Counters since start: requests performed and new connections opened
 * (CURLINFO_NUM_CONNECTS summed). For benchmarks and tests. */
void tpf_gcp_http_stats(struct tpf_gcp_http *h, long *requests, long *connects);

/*
 * An observer of every request's outcome, process-wide (metrics:
 * engine/telemetry/metrics.h): called on the requesting thread after each
 * tpf_gcp_http_do with the method and the HTTP status (0: no response).
 * NULL clears it. Set it before requests start and clear it after they end.
 */
typedef void (*tpf_gcp_http_observer_fn)(const char *method, long status, void *ctx);
void tpf_gcp_http_set_observer(tpf_gcp_http_observer_fn fn, void *ctx);

/* Percent-encode s for a URL query or form value (curl_easy_escape).
 * Caller frees with free(). */
char *tpf_gcp_escape(const char *s);

/* Process-wide curl_global_init, once (pthread_once). */
void tpf_gcp_curl_init(void);

#endif
