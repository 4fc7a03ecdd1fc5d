#include "google/gcp_errors.h"
#include "util/diag.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* google/rpc/code.proto */
static const char *const code_names[] = {
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
	"UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
};

const char *tpf_gcp_code_name(int code)
{
	if (code < 0 || code >= (int)(sizeof(code_names) / sizeof(code_names[0])))
		return NULL;
	return code_names[code];
}

/* The canonical code for an HTTP status when a body gave none (code.proto's
 * HTTP mapping). */
static int code_from_http(long http)
{
	switch (http) {
	case 400: return 3;
	case 401: return 16;
	case 403: return 7;
	case 404: return 5;
	case 409: return 6;
	case 429: return 8;
	case 499: return 1;
	case 500: return 13;
	case 501: return 12;
	case 503: return 14;
	case 504: return 4;
	default: return 2;
	}
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static double parse_duration_s(const char *s)
{
	/* protobuf Duration JSON: "3s", "1.5s" */
	char *end;
	double x = strtod(s, &end);
	if (end == s || strcmp(end, "s") || x < 0)
		return -1;
	return x;
}

static void parse_details(struct tpf_gcp_error *e, json_t *details)
{
	size_t i;
	json_t *it;
	if (!json_is_array(details))
		return;
	json_array_foreach(details, i, it) {
		const char *type = json_string_value(json_object_get(it, "@type"));
		if (!type)
			continue;
		if (ends_with(type, "google.rpc.QuotaFailure")) {
			e->quota_failure = 1;
		} else if (ends_with(type, "google.rpc.ErrorInfo")) {
			const char *r = json_string_value(json_object_get(it, "reason"));
			if (r && !e->reason)
				e->reason = xstrdup(r);
		} else if (ends_with(type, "google.rpc.RetryInfo")) {
			const char *rd = json_string_value(json_object_get(it, "retryDelay"));
			if (rd)
				e->retry_delay = parse_duration_s(rd);
		}
	}
}

static void fill_from_status(struct tpf_gcp_error *e, json_t *st)
{
	json_t *c = json_object_get(st, "code");
	if (json_is_integer(c))
		e->code = (int)json_integer_value(c);
	const char *m = json_string_value(json_object_get(st, "message"));
	if (m && *m)
		e->message = xstrdup(m);
	const char *s = json_string_value(json_object_get(st, "status"));
	if (s && *s)
		e->status = xstrdup(s);
	parse_details(e, json_object_get(st, "details"));
	/* The legacy shape of Google's older APIs (Compute Engine, Cloud
	 * Storage JSON): "errors": [{"domain", "reason": "quotaExceeded",
	 * "message"}] beside code and message, and no ErrorInfo detail
	 * (https://cloud.google.com/compute/docs/reference/rest/v1 "Errors";
	 * docs/compute-engine.md reference section 3.3). */
	const char *lr = json_string_value(json_object_get(json_array_get(json_object_get(st,
		"errors"), 0), "reason"));
	if (lr && *lr && !e->reason)
		e->reason = xstrdup(lr);
}

static char *first_line(const char *body, size_t len)
{
	size_t i = 0;
	while (i < len && (body[i] == ' ' || body[i] == '\n' || body[i] == '\r' || body[i] == '\t'))
		i++;
	size_t j = i;
	while (j < len && body[j] != '\n' && body[j] != '\r' && body[j] != '\0' && j - i < 300)
		j++;
	return j > i ? xstrndup(body + i, j - i) : NULL;
}

void tpf_gcp_error_parse_http(struct tpf_gcp_error *e, long http, const char *body, size_t len)
{
	tpf_gcp_error_release(e);
	e->http = http;
	json_t *root = body && len ? json_loadb(body, len, 0, NULL) : NULL;
	json_t *err = json_object_get(root, "error");
	if (json_is_object(err)) {
		fill_from_status(e, err);
	} else if (json_is_string(err)) {
		/* OAuth2 token endpoint (RFC 6749 section 5.2) */
		e->status = xstrdup(json_string_value(err));
		const char *desc = json_string_value(json_object_get(root, "error_description"));
		if (desc && *desc)
			e->message = xstrdup(desc);
	}
	if (!e->message && !root && body)
		e->message = first_line(body, len);
	if (!e->message)
		e->message = xstrdup("no message");
	if (!e->code)
		e->code = code_from_http(http);
	if (!e->status) {
		const char *n = tpf_gcp_code_name(e->code);
		e->status = xstrdup(n ? n : "UNKNOWN");
	}
	json_decref(root);
}

void tpf_gcp_error_parse_status(struct tpf_gcp_error *e, json_t *status)
{
	tpf_gcp_error_release(e);
	if (json_is_object(status))
		fill_from_status(e, status);
	if (!e->code && !json_is_integer(json_object_get(status, "code")))
		e->code = 2;
	if (!e->message)
		e->message = xstrdup("no message");
	if (!e->status) {
		const char *n = tpf_gcp_code_name(e->code);
		e->status = xstrdup(n ? n : "UNKNOWN");
	}
}

void tpf_gcp_error_parse_compute(struct tpf_gcp_error *e, json_t *op)
{
	tpf_gcp_error_release(e);
	struct tpf_buf m = TPF_BUF_INIT;
	size_t i;
	json_t *it;
	json_array_foreach(json_object_get(json_object_get(op, "error"), "errors"), i, it) {
		const char *msg = json_string_value(json_object_get(it, "message"));
		const char *code = json_string_value(json_object_get(it, "code"));
		if (msg && *msg)
			tpf_buf_addf(&m, "%s%s", m.len ? "; " : "", msg);
		if (code && *code && !e->reason)
			e->reason = xstrdup(code);
	}
	json_t *h = json_object_get(op, "httpErrorStatusCode");
	e->code = json_is_integer(h) ? code_from_http((long)json_integer_value(h)) : 2;
	const char *hm = json_string_value(json_object_get(op, "httpErrorMessage"));
	e->message = xstrdup(m.len ? m.buf : hm && *hm ? hm : "no message");
	const char *n = tpf_gcp_code_name(e->code);
	e->status = xstrdup(n ? n : "UNKNOWN");
	tpf_buf_release(&m);
}

void tpf_gcp_error_release(struct tpf_gcp_error *e)
{
	free(e->status);
	free(e->message);
	free(e->reason);
	struct tpf_gcp_error z = TPF_GCP_ERROR_INIT;
	*e = z;
}

static int names_chip_quota(const char *m)
{
	return m && (strstr(m, "ForTPUAPI") || strstr(m, "PerProjectPerZone") ||
		     strstr(m, "PerProjectPerRegion"));
}

static int is_rate_limit(const struct tpf_gcp_error *e)
{
	if (e->reason && (!strcmp(e->reason, "RATE_LIMIT_EXCEEDED") ||
			  !strcmp(e->reason, "rateLimitExceeded")))
		return 1;
	return e->message && (strcasestr(e->message, "per minute") || strstr(e->message, "PerMinute"));
}

int tpf_gcp_error_quota_exceeded(const struct tpf_gcp_error *e)
{
	const char *r = e->reason, *m = e->message;
	return e->http == 403 &&
	       ((r && (!strcmp(r, "quotaExceeded") || !strcmp(r, "QUOTA_EXCEEDED"))) ||
		(m && !strncmp(m, "Quota '", 7) && strstr(m, "' exceeded")));
}

/* The real wording (quoted in SkyPilot's failover handler, see the header). */
static int names_unusable_location(const char *m)
{
	return m && strstr(m, "is not found or access is unauthorized");
}

enum tpf_gcp_class tpf_gcp_error_classify(const struct tpf_gcp_error *e)
{
	if (names_unusable_location(e->message))
		return TPF_GCP_LOCATION;
	if (!e->http && e->reason && !strcmp(e->reason, "QUOTA_EXCEEDED"))
		return TPF_GCP_QUOTA;
	if (!e->http && e->reason &&
	    (strstr(e->reason, "RESOURCE_POOL_EXHAUSTED") || strstr(e->reason, "STOCKOUT")))
		return TPF_GCP_CAPACITY;
	/* Compute Engine's "The resource '...' is not ready": another
	 * operation on it (a delete) still runs; it clears on its own. */
	if (e->http == 400 && e->reason && !strcmp(e->reason, "resourceNotReady"))
		return TPF_GCP_TRANSIENT;
	if (e->http) {
		switch (e->http) {
		case 429:
			if (names_chip_quota(e->message))
				return TPF_GCP_QUOTA;
			if (is_rate_limit(e))
				return TPF_GCP_TRANSIENT;
			return e->quota_failure ? TPF_GCP_QUOTA : TPF_GCP_TRANSIENT;
		case 408: case 500: case 502: case 503: case 504:
			return TPF_GCP_TRANSIENT;
		case 404:
			return TPF_GCP_NOTFOUND;
		case 409:
			/* ABORTED is a concurrency conflict that clears on retry */
			if ((e->status && !strcmp(e->status, "ABORTED")) ||
			    (e->message && strstr(e->message, "operationInProgress")))
				return TPF_GCP_TRANSIENT;
			return TPF_GCP_CONFLICT;
		case 401:
			return TPF_GCP_AUTH;
		case 412:
			return TPF_GCP_STALE;
		default:
			return TPF_GCP_PERMANENT;
		}
	}
	switch (e->code) {
	case 8:
		return names_chip_quota(e->message) || e->quota_failure ? TPF_GCP_QUOTA
									  : TPF_GCP_CAPACITY;
	case 9:
		return TPF_GCP_CAPACITY;
	case 5:
		return TPF_GCP_NOTFOUND;
	case 6:
		return TPF_GCP_CONFLICT;
	case 16:
		return TPF_GCP_AUTH;
	case 4: case 10: case 13: case 14:
		return TPF_GCP_TRANSIENT;
	default:
		return TPF_GCP_PERMANENT;
	}
}

int tpf_gcp_class_rc(enum tpf_gcp_class c)
{
	switch (c) {
	case TPF_GCP_QUOTA: return TPF_EQUOTA;
	case TPF_GCP_CAPACITY: return TPF_ECAPACITY;
	case TPF_GCP_LOCATION: return TPF_EZONE;
	case TPF_GCP_NOTFOUND: return TPF_ENOTFOUND;
	case TPF_GCP_TRANSIENT: return TPF_ETRANSIENT;
	case TPF_GCP_STALE: return TPF_ESTALE;
	default: return TPF_ERROR;
	}
}

void tpf_gcp_error_format(const struct tpf_gcp_error *e, struct tpf_buf *b)
{
	const char *msg = e->message ? e->message : "no message";
	if (e->http)
		tpf_buf_addf(b, "HTTP %ld %s: %s", e->http, e->status ? e->status : "UNKNOWN", msg);
	else
		tpf_buf_addf(b, "operation failed with code %d (%s): %s", e->code,
			     e->status ? e->status : "UNKNOWN", msg);
}

char *tpf_gcp_error_hint(const struct tpf_gcp_error *e, enum tpf_gcp_class c,
			 const char *project)
{
	const char *p = project ? project : "?";
	switch (c) {
	case TPF_GCP_QUOTA:
		return xstrdup("the quota named above is exhausted in this zone; if the group "
			       "has another zone, tpuform tries the group's next zone; or request "
			       "more quota in the Cloud console (IAM & Admin > Quotas)");
	case TPF_GCP_CAPACITY:
		if (e->code == 9)
			return xstrdup("the reservation has too few free TPUs; if the group has "
				       "another zone, tpuform tries the group's next zone; or retry "
				       "later");
		return xstrdup("the zone has no free TPUs of this type right now; if the group "
			       "has another zone, tpuform tries the group's next zone; or retry "
			       "later");
	case TPF_GCP_LOCATION:
		return xasprintf("project '%s' cannot use this zone (no such zone, or no access "
				 "to it); if the group has another zone, tpuform tries the group's "
				 "next zone; check the group's "
				 "'zones' against 'gcloud compute tpus locations list'", p);
	case TPF_GCP_AUTH:
		return xstrdup("the access token was rejected; check provider.gcp.credentials, "
			       "GOOGLE_APPLICATION_CREDENTIALS or run 'gcloud auth application-default login'");
	case TPF_GCP_TRANSIENT:
		if (e->reason && !strcmp(e->reason, "resourceNotReady"))
			return xstrdup("Compute Engine is still changing this resource (a delete "
				       "under way: a TPU slice's managed instance group deletes its "
				       "VMs first, which takes minutes); run the command again once "
				       "it is done");
		return xstrdup("the API kept failing with a temporary error; retry later");
	default:
		break;
	}
	if (e->http == 403 || e->code == 7)
		return xasprintf("the credentials need the role roles/tpu.admin on project '%s', "
				 "and the Cloud TPU API must be enabled "
				 "(gcloud services enable tpu.googleapis.com --project %s)", p, p);
	if (e->http == 400 || e->code == 3)
		return xstrdup("check accelerator_type and runtime_version with "
			       "'tpuform validate -remote'");
	return NULL;
}
