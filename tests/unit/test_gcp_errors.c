/*
 * Cloud TPU client: error parsing and classification, Retry-After,
 * backoff bounds, settings from the environment.
 */
#include "google/gcp_errors.h"
#include "google/gcp_http.h"
#include "google/gcp_retry.h"
#include "tests/unit/unit.h"
#include "util/diag.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

struct http_case {
	long http;
	const char *body;
	enum tpf_gcp_class cls;
	int rc;
	const char *formatted; /* tpf_gcp_error_format */
};

static const struct http_case http_cases[] = {
	/* chip quota by name (skypilot's message, no details) */
	{ 429, "{\"error\":{\"code\":429,\"message\":\"Quota 'TPUV2sPreemptiblePodPerProjectPerZoneForTPUAPI' exhausted. Limit 32 in zone europe-west4-a\",\"status\":\"RESOURCE_EXHAUSTED\"}}",
	  TPF_GCP_QUOTA, TPF_EQUOTA,
	  "HTTP 429 RESOURCE_EXHAUSTED: Quota 'TPUV2sPreemptiblePodPerProjectPerZoneForTPUAPI' exhausted. Limit 32 in zone europe-west4-a" },
	/* marin's per-region wording */
	{ 429, "{\"error\":{\"code\":429,\"message\":\"Quota limit 'TPUV6EPreemptiblePerProjectPerRegionForTPUAPI' has been exceeded. Limit: 0 in region us-east5.\",\"status\":\"RESOURCE_EXHAUSTED\"}}",
	  TPF_GCP_QUOTA, TPF_EQUOTA, NULL },
	/* QuotaFailure detail without a name in the message */
	{ 429, "{\"error\":{\"code\":429,\"message\":\"Quota exhausted\",\"status\":\"RESOURCE_EXHAUSTED\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.QuotaFailure\",\"violations\":[{\"subject\":\"x\"}]}]}}",
	  TPF_GCP_QUOTA, TPF_EQUOTA, NULL },
	/* request-rate limit: waits clear it */
	{ 429, "{\"error\":{\"code\":429,\"message\":\"Quota exceeded for quota metric 'Read requests' and limit 'Read requests per minute' of service 'tpu.googleapis.com'\",\"status\":\"RESOURCE_EXHAUSTED\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"RATE_LIMIT_EXCEEDED\"},{\"@type\":\"type.googleapis.com/google.rpc.QuotaFailure\"}]}}",
	  TPF_GCP_TRANSIENT, TPF_ETRANSIENT, NULL },
	/* bare 429 */
	{ 429, "{\"error\":{\"code\":429,\"message\":\"Too many requests\",\"status\":\"RESOURCE_EXHAUSTED\"}}",
	  TPF_GCP_TRANSIENT, TPF_ETRANSIENT, NULL },
	{ 500, "{\"error\":{\"code\":500,\"message\":\"Internal error encountered.\",\"status\":\"INTERNAL\"}}",
	  TPF_GCP_TRANSIENT, TPF_ETRANSIENT, "HTTP 500 INTERNAL: Internal error encountered." },
	/* a proxy's HTML page: first line, status from the HTTP code */
	{ 502, "<html><head><title>502 Bad Gateway</title></head>\n<body>...</body></html>",
	  TPF_GCP_TRANSIENT, TPF_ETRANSIENT,
	  "HTTP 502 UNKNOWN: <html><head><title>502 Bad Gateway</title></head>" },
	{ 503, "", TPF_GCP_TRANSIENT, TPF_ETRANSIENT, "HTTP 503 UNAVAILABLE: no message" },
	{ 504, NULL, TPF_GCP_TRANSIENT, TPF_ETRANSIENT, "HTTP 504 DEADLINE_EXCEEDED: no message" },
	{ 400, "{\"error\":{\"code\":400,\"message\":\"Cloud TPU received a bad request. The requested accelerator configuration for accelerator type, \\\"v5litepod-8\\\", could not be found\",\"status\":\"INVALID_ARGUMENT\"}}",
	  TPF_GCP_PERMANENT, TPF_ERROR,
	  "HTTP 400 INVALID_ARGUMENT: Cloud TPU received a bad request. The requested accelerator configuration for accelerator type, \"v5litepod-8\", could not be found" },
	{ 403, "{\"error\":{\"code\":403,\"message\":\"Permission 'tpu.nodes.create' denied\",\"status\":\"PERMISSION_DENIED\"}}",
	  TPF_GCP_PERMANENT, TPF_ERROR, NULL },
	{ 404, "{\"error\":{\"code\":404,\"message\":\"Resource 'projects/p/locations/z/nodes/x' was not found\",\"status\":\"NOT_FOUND\"}}",
	  TPF_GCP_NOTFOUND, TPF_ENOTFOUND, NULL },
	/* a zone the project cannot use (the wording SkyPilot's failover quotes): next zone */
	{ 403, "{\"error\":{\"code\":403,\"message\":\"Location us-east1-d is not found or access is unauthorized.\",\"status\":\"PERMISSION_DENIED\"}}",
	  TPF_GCP_LOCATION, TPF_EZONE,
	  "HTTP 403 PERMISSION_DENIED: Location us-east1-d is not found or access is unauthorized." },
	{ 404, "{\"error\":{\"code\":404,\"message\":\"Location z9 is not found or access is unauthorized.\",\"status\":\"NOT_FOUND\"}}",
	  TPF_GCP_LOCATION, TPF_EZONE, NULL },
	{ 409, "{\"error\":{\"code\":409,\"message\":\"Resource already exists\",\"status\":\"ALREADY_EXISTS\"}}",
	  TPF_GCP_CONFLICT, TPF_ERROR, NULL },
	{ 409, "{\"error\":{\"code\":409,\"message\":\"The operation was aborted\",\"status\":\"ABORTED\"}}",
	  TPF_GCP_TRANSIENT, TPF_ETRANSIENT, NULL },
	{ 401, "{\"error\":{\"code\":401,\"message\":\"Request had invalid authentication credentials.\",\"status\":\"UNAUTHENTICATED\"}}",
	  TPF_GCP_AUTH, TPF_ERROR, NULL },
	/* the OAuth2 token endpoint's shape (RFC 6749 5.2) */
	{ 400, "{\"error\":\"invalid_grant\",\"error_description\":\"Invalid JWT Signature.\"}",
	  TPF_GCP_PERMANENT, TPF_ERROR, "HTTP 400 invalid_grant: Invalid JWT Signature." },
};

static void test_gcp_errors__http_table(void)
{
	for (size_t i = 0; i < sizeof(http_cases) / sizeof(http_cases[0]); i++) {
		const struct http_case *c = &http_cases[i];
		struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
		tpf_gcp_error_parse_http(&e, c->http, c->body, c->body ? strlen(c->body) : 0);
		enum tpf_gcp_class cls = tpf_gcp_error_classify(&e);
		CHECKF(cls == c->cls, "case %zu (HTTP %ld): class %d, want %d", i, c->http, cls, c->cls);
		CHECKF(tpf_gcp_class_rc(cls) == c->rc, "case %zu: rc %d, want %d", i,
		       tpf_gcp_class_rc(cls), c->rc);
		CHECKF(e.message && *e.message, "case %zu has a message", i);
		if (c->formatted) {
			struct tpf_buf b = TPF_BUF_INIT;
			tpf_gcp_error_format(&e, &b);
			CHECK_STR(b.buf, c->formatted);
			tpf_buf_release(&b);
		}
		tpf_gcp_error_release(&e);
	}
}

static void test_gcp_errors__details(void)
{
	const char *body = "{\"error\":{\"code\":503,\"message\":\"busy\",\"status\":\"UNAVAILABLE\","
			   "\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.RetryInfo\",\"retryDelay\":\"2.5s\"},"
			   "{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"SERVICE_BUSY\",\"domain\":\"googleapis.com\"}]}}";
	struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
	tpf_gcp_error_parse_http(&e, 503, body, strlen(body));
	CHECK_INT(e.code, 503);
	CHECK_STR(e.status, "UNAVAILABLE");
	CHECK_STR(e.reason, "SERVICE_BUSY");
	CHECK(e.retry_delay > 2.49 && e.retry_delay < 2.51);
	CHECK(!e.quota_failure);
	/* parsing again releases the previous contents (ASan would catch a leak) */
	tpf_gcp_error_parse_http(&e, 404, "{}", 2);
	CHECK_INT(e.code, 5);
	CHECK_STR(e.status, "NOT_FOUND");
	CHECK_STR(e.message, "no message");
	CHECK(e.reason == NULL);
	CHECK(e.retry_delay < 0);
	tpf_gcp_error_release(&e);
}

struct op_case {
	const char *status;
	enum tpf_gcp_class cls;
	int rc;
	const char *formatted;
};

static const struct op_case op_cases[] = {
	{ "{\"code\":8,\"message\":\"There is no more capacity in the zone \\\"us-central2-b\\\"; you can try in another zone where Cloud TPU Nodes are offered (see https://cloud.google.com/tpu/docs/regions) [EID: 0x9f48947a7d57c8d]\"}",
	  TPF_GCP_CAPACITY, TPF_ECAPACITY,
	  "operation failed with code 8 (RESOURCE_EXHAUSTED): There is no more capacity in the zone \"us-central2-b\"; you can try in another zone where Cloud TPU Nodes are offered (see https://cloud.google.com/tpu/docs/regions) [EID: 0x9f48947a7d57c8d]" },
	{ "{\"code\":9,\"message\":\"Insufficient reserved capacity. Contact customer support to increase your reservation.\"}",
	  TPF_GCP_CAPACITY, TPF_ECAPACITY, NULL },
	{ "{\"code\":8,\"message\":\"Quota 'TPUV4PodPerProjectPerZoneForTPUAPI' exhausted\"}",
	  TPF_GCP_QUOTA, TPF_EQUOTA, NULL },
	{ "{\"code\":3,\"message\":\"update is not supported while in state PREEMPTED\"}",
	  TPF_GCP_PERMANENT, TPF_ERROR,
	  "operation failed with code 3 (INVALID_ARGUMENT): update is not supported while in state PREEMPTED" },
	{ "{\"code\":13,\"message\":\"internal\"}", TPF_GCP_TRANSIENT, TPF_ETRANSIENT, NULL },
	{ "{\"message\":\"no code\"}", TPF_GCP_PERMANENT, TPF_ERROR,
	  "operation failed with code 2 (UNKNOWN): no code" },
};

static void test_gcp_errors__operation_table(void)
{
	for (size_t i = 0; i < sizeof(op_cases) / sizeof(op_cases[0]); i++) {
		const struct op_case *c = &op_cases[i];
		json_t *st = json_loads(c->status, 0, NULL);
		CHECKF(st != NULL, "case %zu parses", i);
		struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
		tpf_gcp_error_parse_status(&e, st);
		enum tpf_gcp_class cls = tpf_gcp_error_classify(&e);
		CHECKF(cls == c->cls, "op case %zu: class %d, want %d", i, cls, c->cls);
		CHECK_INT(tpf_gcp_class_rc(cls), c->rc);
		CHECK_INT(e.http, 0);
		if (c->formatted) {
			struct tpf_buf b = TPF_BUF_INIT;
			tpf_gcp_error_format(&e, &b);
			CHECK_STR(b.buf, c->formatted);
			tpf_buf_release(&b);
		}
		tpf_gcp_error_release(&e);
		json_decref(st);
	}
}

static void test_gcp_errors__hints(void)
{
	struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
	const char *b403 = "{\"error\":{\"code\":403,\"message\":\"denied\",\"status\":\"PERMISSION_DENIED\"}}";
	tpf_gcp_error_parse_http(&e, 403, b403, strlen(b403));
	char *h = tpf_gcp_error_hint(&e, tpf_gcp_error_classify(&e), "my-proj");
	CHECK(h && strstr(h, "roles/tpu.admin") && strstr(h, "'my-proj'"));
	free(h);
	const char *bloc = "{\"error\":{\"code\":403,\"message\":\"Location z is not found or access is unauthorized.\",\"status\":\"PERMISSION_DENIED\"}}";
	tpf_gcp_error_parse_http(&e, 403, bloc, strlen(bloc));
	h = tpf_gcp_error_hint(&e, tpf_gcp_error_classify(&e), "my-proj");
	CHECK(h && strstr(h, "next zone") && strstr(h, "'my-proj'") && !strstr(h, "roles/tpu.admin"));
	free(h);
	tpf_gcp_error_parse_http(&e, 404, "{}", 2);
	h = tpf_gcp_error_hint(&e, tpf_gcp_error_classify(&e), "p");
	CHECK(h == NULL);
	free(h);
	tpf_gcp_error_release(&e);
}

/* Compute Engine's 400 resourceNotReady (a delete of a MIG whose delete
 * runs, the body as the API sends it): retried, with a Compute Engine
 * hint, never the Cloud TPU one about accelerator_type. */
static void test_gcp_errors__resource_not_ready(void)
{
	struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
	const char *b = "{\"error\":{\"code\":400,\"message\":\"The resource 'projects/p/zones/"
			"us-central1-c/instanceGroupManagers/n' is not ready\",\"errors\":[{\"message\":"
			"\"The resource 'projects/p/zones/us-central1-c/instanceGroupManagers/n' is not "
			"ready\",\"domain\":\"global\",\"reason\":\"resourceNotReady\"}]}}";
	tpf_gcp_error_parse_http(&e, 400, b, strlen(b));
	CHECK_STR(e.reason, "resourceNotReady");
	CHECK_INT(tpf_gcp_error_classify(&e), TPF_GCP_TRANSIENT);
	CHECK_INT(tpf_gcp_class_rc(tpf_gcp_error_classify(&e)), TPF_ETRANSIENT);
	char *h = tpf_gcp_error_hint(&e, tpf_gcp_error_classify(&e), "p");
	CHECK(h && strstr(h, "Compute Engine") && strstr(h, "delete") &&
	      !strstr(h, "accelerator_type"));
	free(h);
	/* Any other 400 stays permanent. */
	const char *o = "{\"error\":{\"code\":400,\"message\":\"bad\",\"errors\":[{\"reason\":"
			"\"invalid\"}]}}";
	tpf_gcp_error_parse_http(&e, 400, o, strlen(o));
	CHECK_INT(tpf_gcp_error_classify(&e), TPF_GCP_PERMANENT);
	tpf_gcp_error_release(&e);
}

static void test_gcp_errors__code_names(void)
{
	CHECK_STR(tpf_gcp_code_name(0), "OK");
	CHECK_STR(tpf_gcp_code_name(8), "RESOURCE_EXHAUSTED");
	CHECK_STR(tpf_gcp_code_name(16), "UNAUTHENTICATED");
	CHECK(tpf_gcp_code_name(17) == NULL);
	CHECK(tpf_gcp_code_name(-1) == NULL);
}

static void test_gcp_errors__retry_after(void)
{
	double now = 1700000000.0; /* 2023-11-14T22:13:20Z */
	CHECK(tpf_gcp_parse_retry_after("120", now) == 120);
	CHECK(tpf_gcp_parse_retry_after(" 7 ", now) == 7);
	CHECK(tpf_gcp_parse_retry_after("0", now) == 0);
	CHECK(tpf_gcp_parse_retry_after(NULL, now) == -1);
	CHECK(tpf_gcp_parse_retry_after("", now) == -1);
	CHECK(tpf_gcp_parse_retry_after("soon", now) == -1);
	CHECK(tpf_gcp_parse_retry_after("-5", now) == -1);
	CHECK(tpf_gcp_parse_retry_after("12abc", now) == -1);
	/* HTTP-date (IMF-fixdate), 30 s after now */
	CHECK(tpf_gcp_parse_retry_after("Tue, 14 Nov 2023 22:13:50 GMT", now) == 30);
	/* a date in the past means "now" */
	CHECK(tpf_gcp_parse_retry_after("Tue, 14 Nov 2023 22:00:00 GMT", now) == 0);
}

static void test_gcp_errors__backoff_bounds(void)
{
	const double base = 1, cap = 30;
	for (int retry = 0; retry < 70; retry++) {
		double d = retry > 10 ? cap : base * (double)(1 << retry);
		if (d > cap)
			d = cap;
		double lo = 1e9, hi = -1;
		for (double u = 0; u < 1; u += 0.125) {
			double x = tpf_gcp_backoff(retry, base, cap, u);
			lo = x < lo ? x : lo;
			hi = x > hi ? x : hi;
		}
		CHECKF(lo >= d / 2 && hi <= d, "retry %d: [%.3f, %.3f] not in [%.3f, %.3f]", retry,
		       lo, hi, d / 2, d);
	}
	/* it grows until the cap */
	CHECK(tpf_gcp_backoff(1, 1, 30, 0) > tpf_gcp_backoff(0, 1, 30, 0));
	CHECK(tpf_gcp_backoff(6, 1, 30, 0.999) <= 30);
	/* u outside [0,1) is clamped */
	CHECK(tpf_gcp_backoff(0, 2, 30, -1) == 1);
	CHECK(tpf_gcp_backoff(0, 2, 30, 5) <= 2);

	struct tpf_gcp_settings s;
	tpf_gcp_settings_default(&s);
	s.retry_base = 0.01;
	s.retry_cap = 0.02;
	/* Retry-After wins over a shorter backoff, capped */
	CHECK(tpf_gcp_retry_delay(&s, 0, 3) == 3);
	CHECK(tpf_gcp_retry_delay(&s, 0, 1e6) == TPF_GCP_RETRY_AFTER_MAX);
	double r = tpf_gcp_retry_delay(&s, 3, -1);
	CHECK(r >= 0.01 && r <= 0.02);
	int in_range = 1;
	double first = tpf_gcp_random_unit(), differs = 0;
	for (int i = 0; i < 100; i++) {
		double u = tpf_gcp_random_unit();
		in_range &= u >= 0 && u < 1;
		differs += u != first;
	}
	CHECK(in_range);
	CHECK(differs > 0); /* jitter actually varies */
}

static void test_gcp_errors__poll_interval(void)
{
	struct tpf_gcp_settings s;
	tpf_gcp_settings_default(&s);
	double i = s.poll_min, prev = 0;
	int steps = 0;
	while (i < s.poll_max && steps < 100) {
		CHECK(i > prev);
		prev = i;
		i = tpf_gcp_next_poll(&s, i);
		steps++;
	}
	CHECK(i == s.poll_max);
	CHECK(steps > 2); /* starts fast: several polls before the cap */
	CHECK(tpf_gcp_next_poll(&s, s.poll_max) == s.poll_max);
}

static void test_gcp_errors__settings_env(void)
{
	struct tpf_gcp_settings s;
	struct tpf_diags d = TPF_DIAGS_INIT;
	setenv("TPUFORM_GCP_POLL_MIN", "0.05", 1);
	setenv("TPUFORM_GCP_POLL_MAX", "0.2", 1);
	setenv("TPUFORM_GCP_TRIES", "3", 1);
	CHECK_INT(tpf_gcp_settings_load(&s, &d), 0);
	CHECK(s.poll_min == 0.05 && s.poll_max == 0.2);
	CHECK_INT(s.tries, 3);
	CHECK(s.retry_base == 1); /* untouched default */
	CHECK(s.max_body == TPF_GCP_MAX_BODY && s.max_body == (size_t)64 << 20);
	/* Durations as the fleet file writes them; the body cap in bytes. */
	setenv("TPUFORM_GCP_OP_TIMEOUT", "2m", 1);
	setenv("TPUFORM_GCP_CONNECT_TIMEOUT", "500ms", 1);
	setenv("TPUFORM_GCP_MAX_BODY", "4096", 1);
	CHECK_INT(tpf_gcp_settings_load(&s, &d), 0);
	CHECK(s.op_timeout == 120 && s.connect_timeout == 0.5);
	CHECK(s.max_body == 4096);
	CHECK_INT(d.n, 0);
	setenv("TPUFORM_GCP_RETRY_BASE", "fast", 1);
	setenv("TPUFORM_GCP_TRIES", "0", 1);
	setenv("TPUFORM_GCP_MAX_BODY", "0", 1);
	CHECK_INT(tpf_gcp_settings_load(&s, &d), TPF_ERROR);
	CHECK_INT(d.n, 3);
	CHECK(d.n >= 1 && strstr(d.items[0].summary, "'TPUFORM_GCP_RETRY_BASE' is 'fast'"));
	CHECK(d.n >= 2 && strstr(d.items[1].summary, "'TPUFORM_GCP_TRIES' is '0'") &&
	      strstr(d.items[1].summary, "from 1 to 100"));
	CHECK(d.n >= 3 && strstr(d.items[2].summary, "'TPUFORM_GCP_MAX_BODY' is '0'"));
	CHECK(s.tries == 6 && s.max_body == TPF_GCP_MAX_BODY); /* bad values keep defaults */
	unsetenv("TPUFORM_GCP_POLL_MIN");
	unsetenv("TPUFORM_GCP_POLL_MAX");
	unsetenv("TPUFORM_GCP_TRIES");
	unsetenv("TPUFORM_GCP_RETRY_BASE");
	unsetenv("TPUFORM_GCP_OP_TIMEOUT");
	unsetenv("TPUFORM_GCP_CONNECT_TIMEOUT");
	unsetenv("TPUFORM_GCP_MAX_BODY");
	tpf_diags_release(&d);
}

/* Compute Engine's 403 quotaExceeded (its legacy errors[] shape): the one
 * home of that rule (tpf_gcp_error_quota_exceeded), which the Compute
 * Engine create turns into TPF_EQUOTA for the zone fallback. */
static void test_gcp_errors__compute_quota_exceeded(void)
{
	struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
	const char *legacy = "{\"error\":{\"code\":403,\"message\":\"Quota 'TPUS_PER_TPU_FAMILY' "
			     "exceeded.  Limit: 0.0 in region us-central1.\",\"errors\":[{\"reason\":"
			     "\"quotaExceeded\",\"domain\":\"usageLimits\",\"message\":\"Quota "
			     "exceeded\"}]}}";
	tpf_gcp_error_parse_http(&e, 403, legacy, strlen(legacy));
	CHECK_STR(e.reason, "quotaExceeded"); /* the legacy errors[0].reason is kept */
	CHECK_INT(tpf_gcp_error_quota_exceeded(&e), 1);
	/* 403 stays PERMANENT for every other API: only the create asks */
	CHECK_INT(tpf_gcp_error_classify(&e), TPF_GCP_PERMANENT);
	/* by the reason alone */
	const char *bare = "{\"error\":{\"code\":403,\"message\":\"no\",\"errors\":[{\"reason\":"
			   "\"quotaExceeded\"}]}}";
	tpf_gcp_error_parse_http(&e, 403, bare, strlen(bare));
	CHECK_INT(tpf_gcp_error_quota_exceeded(&e), 1);
	/* by the message alone */
	const char *msg = "{\"error\":{\"code\":403,\"message\":\"Quota 'CPUS' exceeded.  Limit: 8.0 "
			  "in region us-east5.\"}}";
	tpf_gcp_error_parse_http(&e, 403, msg, strlen(msg));
	CHECK_INT(tpf_gcp_error_quota_exceeded(&e), 1);
	/* an ErrorInfo reason wins over the legacy array */
	const char *both = "{\"error\":{\"code\":403,\"message\":\"denied\",\"errors\":[{\"reason\":"
			   "\"quotaExceeded\"}],\"details\":[{\"@type\":\"type.googleapis.com/"
			   "google.rpc.ErrorInfo\",\"reason\":\"ACCESS_DENIED\"}]}}";
	tpf_gcp_error_parse_http(&e, 403, both, strlen(both));
	CHECK_STR(e.reason, "ACCESS_DENIED");
	CHECK_INT(tpf_gcp_error_quota_exceeded(&e), 0);
	/* not a quota: a permission 403, and a quotaExceeded that is not a 403 */
	const char *perm = "{\"error\":{\"code\":403,\"message\":\"Required 'compute.instances.create' "
			   "permission\",\"errors\":[{\"reason\":\"forbidden\"}]}}";
	tpf_gcp_error_parse_http(&e, 403, perm, strlen(perm));
	CHECK_INT(tpf_gcp_error_quota_exceeded(&e), 0);
	tpf_gcp_error_parse_http(&e, 429, bare, strlen(bare));
	CHECK_INT(tpf_gcp_error_quota_exceeded(&e), 0);
	tpf_gcp_error_release(&e);
}

int main(void)
{
	RUN(test_gcp_errors__compute_quota_exceeded);
	RUN(test_gcp_errors__http_table);
	RUN(test_gcp_errors__details);
	RUN(test_gcp_errors__operation_table);
	RUN(test_gcp_errors__hints);
	RUN(test_gcp_errors__resource_not_ready);
	RUN(test_gcp_errors__code_names);
	RUN(test_gcp_errors__retry_after);
	RUN(test_gcp_errors__backoff_bounds);
	RUN(test_gcp_errors__poll_interval);
	RUN(test_gcp_errors__settings_env);
	curl_global_cleanup();
	return unit_done();
}
