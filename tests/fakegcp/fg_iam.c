/*
 * IAM Credentials projects.serviceAccounts.generateAccessToken
 * (https://cloud.google.com/iam/docs/reference/credentials/rest/v1/projects.serviceAccounts/generateAccessToken):
 *
 *   POST /v1/projects/-/serviceAccounts/EMAIL:generateAccessToken
 *   Authorization: Bearer <caller>
 *   {"scope": [...], "lifetime": "3600s", "delegates": [...]}
 *   -> {"accessToken", "expireTime"}
 *
 * Checks: a bearer issued here and not expired (with --impersonate-caller
 * sts, one issued by STS, fg_sts.c; with --auth none and the default
 * caller "any", any bearer), EMAIL equal to --impersonate-sa (else the
 * real 403, quoted in google-github-actions/auth issue #340), known body
 * fields only, a scope list with cloud-platform, a lifetime "Ns" with
 * 0 < N <= 3600 (the default maximum). The token lasts the lifetime asked
 * for, capped by --token-ttl. Messages for the body checks are ours.
 *
 * Also the quota project rule of --require-user-project: API requests must
 * carry "x-goog-user-project: P" (texts ours, after the real service's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

#define PREFIX "/v1/projects/-/serviceAccounts/"
#define GENERATE ":generateAccessToken"
#define CLOUD_PLATFORM "https://www.googleapis.com/auth/cloud-platform"

static void unauthenticated(struct fg_req *r, int missing)
{
	fg_reply_error(r, 401, "UNAUTHENTICATED", NULL, "%s",
		       missing ? "Request is missing required authentication credential. Expected "
				 "OAuth 2 access token, login cookie or other valid authentication "
				 "credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
			       : "Request had invalid authentication credentials. Expected OAuth 2 "
				 "access token, login cookie or other valid authentication credential. "
				 "See https://developers.google.com/identity/sign-in/web/devconsole-project.");
	fg_reply_header(r, "WWW-Authenticate", "Bearer realm=\"https://accounts.google.com/\"");
}

static void permission_denied(struct fg_req *r)
{
	json_t *info = json_pack("{s:s, s:s, s:s, s:{s:s}}", "@type",
				 "type.googleapis.com/google.rpc.ErrorInfo", "reason",
				 "IAM_PERMISSION_DENIED", "domain", "iam.googleapis.com", "metadata",
				 "permission", "iam.serviceAccounts.getAccessToken");
	fg_reply_error(r, 403, "PERMISSION_DENIED", json_pack("[o]", info),
		       "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it "
		       "may not exist).");
}

/* The caller's bearer: 0 if it may impersonate, else answered. */
static int caller_refused(struct fg_req *r)
{
	const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
	const char *tok = h && !strncasecmp(h, "Bearer ", 7) && h[7] ? h + 7 : NULL;
	if (!tok) {
		unauthenticated(r, 1);
		return 1;
	}
	fg_lock();
	int fed = fg_fed_token_state(tok);
	int valid = fg_token_valid(tok);
	fg_unlock();
	if (fg_opt.impersonate_sts_only) {
		if (fed == FG_FED_STS)
			return 0;
		if (fed == FG_FED_IAM)
			permission_denied(r); /* a service account on itself: no TokenCreator */
		else
			unauthenticated(r, 0);
		return 1;
	}
	if (valid || (!fg_opt.auth_token && fed >= 0))
		return 0;
	unauthenticated(r, 0);
	return 1;
}

/* proto3 Duration JSON: "3600s", "0.5s". Seconds, or -1. */
static double duration(const char *s)
{
	char *end;
	double v = s ? strtod(s, &end) : -1;
	return s && end != s && end[0] == 's' && !end[1] ? v : -1;
}

/* The body's fields: 0 with *lifetime, else answered 400. */
static int body_refused(struct fg_req *r, double *lifetime)
{
	json_t *b = r->body.len ? json_loadb(r->body.buf, r->body.len, 0, NULL) : NULL;
	const char *k;
	json_t *v;
	int has_cp = 0;
	*lifetime = 3600;
	if (!json_is_object(b)) {
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
			       "Invalid JSON payload received. Expected an object.");
		json_decref(b);
		return 1;
	}
	json_object_foreach(b, k, v) {
		if (strcmp(k, "scope") && strcmp(k, "lifetime") && strcmp(k, "delegates")) {
			fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "Invalid JSON payload "
				       "received. Unknown name \"%s\": Cannot find field.", k);
			json_decref(b);
			return 1;
		}
	}
	size_t i;
	json_array_foreach(json_object_get(b, "scope"), i, v)
		has_cp |= json_is_string(v) && !strcmp(json_string_value(v), CLOUD_PLATFORM);
	json_t *lt = json_object_get(b, "lifetime");
	if (lt)
		*lifetime = duration(json_string_value(lt));
	int bad = 1;
	if (!has_cp)
		fg_bad_request(r, "scope", "The scope must be a list that includes " CLOUD_PLATFORM ".");
	else if (*lifetime <= 0 || *lifetime > 3600)
		fg_bad_request(r, "lifetime", "The lifetime must be a duration such as \"3600s\", "
			       "more than 0 and at most 3600 seconds.");
	else
		bad = 0;
	json_decref(b);
	return bad;
}

static void generate_access_token(struct fg_req *r, const char *email)
{
	double lifetime;
	if (strcmp(r->method, "POST")) {
		fg_reply_error(r, 404, "NOT_FOUND", NULL, "Method %s is not allowed on %s.",
			       r->method, r->path);
		return;
	}
	if (caller_refused(r))
		return;
	if (!fg_opt.impersonate_sa || strcmp(email, fg_opt.impersonate_sa)) {
		permission_denied(r);
		return;
	}
	if (body_refused(r, &lifetime))
		return;
	fg_lock();
	char *t = fg_fed_token_issue(FG_FED_IAM, lifetime);
	fg_unlock();
	double life = lifetime < fg_opt.token_ttl ? lifetime : fg_opt.token_ttl;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	double when = (double)ts.tv_sec + ts.tv_nsec / 1e9 + life;
	time_t secs = (time_t)when;
	struct tm tm;
	char base[24], exp[48];
	gmtime_r(&secs, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(exp, sizeof(exp), "%s.%09ldZ", base, (long)((when - (double)secs) * 1e9));
	fg_reply_json(r, 200, json_pack("{s:s, s:s}", "accessToken", t, "expireTime", exp));
	free(t);
}

int fg_iam_serve(struct fg_req *r)
{
	size_t n = strlen(r->path), plen = strlen(PREFIX), glen = strlen(GENERATE);
	if (strncmp(r->path, PREFIX, plen))
		return 0;
	if (n > plen + glen && !strcmp(r->path + n - glen, GENERATE)) {
		char *email = xstrndup(r->path + plen, n - plen - glen);
		generate_access_token(r, email);
		free(email);
	} else {
		fg_reply_error(r, 404, "NOT_FOUND", NULL,
			       "%s %s: the requested URL was not found on this server.", r->method,
			       r->path);
	}
	return 1;
}

int fg_user_project_check(struct fg_req *r)
{
	const char *want = fg_opt.require_user_project;
	const char *got = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "x-goog-user-project");
	if (!want || (got && !strcmp(got, want)))
		return 0;
	if (!got) {
		fg_reply_error(r, 403, "PERMISSION_DENIED", NULL,
			       "Your application is authenticating by using local Application "
			       "Default Credentials. The tpu.googleapis.com API requires a quota "
			       "project, which is not set by default.");
		return -1;
	}
	json_t *info = json_pack("{s:s, s:s, s:s, s:{s:s+}}", "@type",
				 "type.googleapis.com/google.rpc.ErrorInfo", "reason",
				 "USER_PROJECT_DENIED", "domain", "googleapis.com", "metadata",
				 "consumer", "projects/", got);
	fg_reply_error(r, 403, "PERMISSION_DENIED", json_pack("[o]", info),
		       "Caller does not have required permission to use project %s. Grant the "
		       "caller the roles/serviceusage.serviceUsageConsumer role.", got);
	return -1;
}
