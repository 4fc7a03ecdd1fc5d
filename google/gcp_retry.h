/*
 * Timing policy of the Cloud TPU client: retries, backoff, Retry-After,
 * operation polling, token refresh margin and HTTP timeouts.
 *
 * Every knob has a production default and an environment override so that
 * tests against the emulator (tests/fakegcp) run in seconds. All durations
 * are seconds (double).
 */
#ifndef TPF_GCP_RETRY_H
#define TPF_GCP_RETRY_H

#include <stddef.h>
#include "util/diag.h"

struct tpf_gcp_settings {
	double poll_min;        /* TPUFORM_GCP_POLL_MIN: first operation poll interval (1) */
	double poll_max;        /* TPUFORM_GCP_POLL_MAX: poll interval cap (10) */
	double retry_base;      /* TPUFORM_GCP_RETRY_BASE: first retry delay (1) */
	double retry_cap;       /* TPUFORM_GCP_RETRY_CAP: largest retry delay (30) */
	int tries;              /* TPUFORM_GCP_TRIES: attempts per request, >= 1 (6) */
	double token_margin;    /* TPUFORM_GCP_TOKEN_MARGIN: refresh this long before expiry (240) */
	double op_timeout;      /* TPUFORM_GCP_OP_TIMEOUT: give up waiting on an operation (1800) */
	double connect_timeout; /* TPUFORM_GCP_CONNECT_TIMEOUT: TCP+TLS connect (10) */
	double stall_timeout;   /* TPUFORM_GCP_STALL_TIMEOUT: no byte for this long aborts (30) */
	double request_timeout; /* TPUFORM_GCP_REQUEST_TIMEOUT: whole request (120) */
	size_t max_body;        /* TPUFORM_GCP_MAX_BODY: bytes of one response body
				 * (TPF_GCP_MAX_BODY, 64 MiB; 1 to 1 GiB) */
};

/* Largest Retry-After we honour: a server asking for more is treated as
 * asking for this much (an apply must not hang for hours on one header). */
#define TPF_GCP_RETRY_AFTER_MAX 120.0

/* The production defaults. */
void tpf_gcp_settings_default(struct tpf_gcp_settings *s);

/*
 * Defaults overridden by the TPUFORM_GCP_* environment variables above,
 * read with util/env.h: durations take seconds ("2", "0.25") or "500ms",
 * "10s", "2m"; TPUFORM_GCP_TRIES and TPUFORM_GCP_MAX_BODY are whole
 * numbers in their ranges. Every variable that is set to anything else
 * gets an error diagnostic naming it, and TPF_ERROR is returned.
 */
int tpf_gcp_settings_load(struct tpf_gcp_settings *s, struct tpf_diags *d);

/*
 * Delay before retry number `retry` (0 for the first retry): exponential
 * with "equal jitter", d = min(cap, base * 2^retry), result in
 * [d/2, d] chosen by u in [0, 1). Pure, so tests can check the bounds.
 */
double tpf_gcp_backoff(int retry, double base, double cap, double u);

/* A uniform random number in [0, 1) from libcrypto's RAND_bytes
 * (thread-safe, unlike rand()). */
double tpf_gcp_random_unit(void);

/*
 * Parse an HTTP Retry-After value (RFC 9110 section 10.2.3): either
 * delta-seconds ("120") or an HTTP-date, parsed by libcurl's curl_getdate.
 * Returns the delay in seconds from `now_wall` (epoch seconds), 0 for a
 * date in the past, or -1 when the value is NULL or malformed.
 */
double tpf_gcp_parse_retry_after(const char *value, double now_wall);

/* The delay to sleep before retry `retry` given a Retry-After delay
 * (-1 if none): the larger of the backoff and Retry-After, the latter
 * capped at TPF_GCP_RETRY_AFTER_MAX. */
double tpf_gcp_retry_delay(const struct tpf_gcp_settings *s, int retry, double retry_after);

/* Next operation poll interval after `cur`: grows by half, capped. */
double tpf_gcp_next_poll(const struct tpf_gcp_settings *s, double cur);

#endif
