/*
 * Workload identity federation, the emulator's side:
 *  - POST /v1/token: the Security Token Service token exchange (RFC 8693;
 *    https://cloud.google.com/iam/docs/reference/sts/rest/v1/TopLevel/token),
 *    a form body with grant_type, audience, scope, requested_token_type,
 *    subject_token and subject_token_type. It accepts the one audience of
 *    --wif-audience and the one subject token of --wif-subject-token (the
 *    OIDC token a test writes to a file or serves below), and answers
 *    {"access_token","issued_token_type","token_type":"Bearer","expires_in"};
 *  - GET /oidc/idtoken: a stand-in for GitHub Actions' ID-token endpoint
 *    (ACTIONS_ID_TOKEN_REQUEST_URL): with "Authorization: Bearer
 *    <--oidc-request-token>" it answers {"value": <--wif-subject-token>};
 *  - the tokens that STS and IAM Credentials (fg_iam.c) issue: kept here,
 *    valid for min(their lifetime, --token-ttl), accepted on the TPU API
 *    through fg_token.c's check, revoked with the others.
 * OAuth2 errors are {"error","error_description"}; the invalid_target and
 * invalid_request ("Invalid value for \"audience\"") texts are the real
 * service's (quoted in google-github-actions/auth issues #161 and #60);
 * the others are ours.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/rand.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

#define TOKEN_EXCHANGE "urn:ietf:params:oauth:grant-type:token-exchange"
#define ACCESS_TOKEN_TYPE "urn:ietf:params:oauth:token-type:access_token"
#define CLOUD_PLATFORM "https://www.googleapis.com/auth/cloud-platform"

struct fed_token {
	char *value;
	int kind;       /* enum fg_fed_kind */
	double expires; /* monotonic */
};

static struct fed_token *fed;
static size_t n_fed, a_fed;

char *fg_fed_token_issue(enum fg_fed_kind kind, double lifetime)
{
	unsigned char raw[24];
	char hex[sizeof(raw) * 2 + 1];
	double now = fg_mono();
	size_t k = 0;

	RAND_bytes(raw, sizeof(raw));
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	for (size_t i = 0; i < n_fed; i++) { /* forget expired ones */
		if (fed[i].expires > now)
			fed[k++] = fed[i];
		else
			free(fed[i].value);
	}
	n_fed = k;
	XGROW(fed, n_fed + 1, a_fed);
	fed[n_fed].value = xasprintf("ya29.fakegcp.%s.%s", kind == FG_FED_STS ? "sts" : "iam", hex);
	fed[n_fed].kind = kind;
	fed[n_fed].expires = now + (lifetime < fg_opt.token_ttl ? lifetime : fg_opt.token_ttl);
	return xstrdup(fed[n_fed++].value);
}

int fg_fed_token_state(const char *t)
{
	for (size_t i = 0; t && i < n_fed; i++)
		if (!strcmp(fed[i].value, t))
			return fed[i].expires > fg_mono() ? fed[i].kind : -1;
	return 0;
}

void fg_fed_tokens_revoke(void)
{
	for (size_t i = 0; i < n_fed; i++)
		free(fed[i].value);
	free(fed);
	fed = NULL;
	n_fed = a_fed = 0;
}

static void oauth_error(struct fg_req *r, unsigned status, const char *error, const char *desc)
{
	fg_reply_json(r, status, json_pack("{s:s, s:s}", "error", error, "error_description", desc));
}

/* 1 if the space-separated list has the scope. */
static int has_scope(const char *list, const char *scope)
{
	size_t n = strlen(scope);
	for (const char *p = list; p && *p;) {
		size_t len = strcspn(p, " ");
		if (len == n && !strncmp(p, scope, n))
			return 1;
		p += len;
		p += strspn(p, " ");
	}
	return 0;
}

/* The first thing wrong with the exchange, answered; 0 if none. */
static int sts_refuse(struct fg_req *r, json_t *form)
{
	const char *gt = json_string_value(json_object_get(form, "grant_type"));
	const char *aud = json_string_value(json_object_get(form, "audience"));
	const char *rtt = json_string_value(json_object_get(form, "requested_token_type"));
	const char *st = json_string_value(json_object_get(form, "subject_token"));
	const char *stt = json_string_value(json_object_get(form, "subject_token_type"));
	const char *scope = json_string_value(json_object_get(form, "scope"));

	if (!gt || strcmp(gt, TOKEN_EXCHANGE))
		oauth_error(r, 400, "unsupported_grant_type", "Invalid value for \"grant_type\".");
	else if (!aud || strncmp(aud, "//iam.googleapis.com/", 21))
		oauth_error(r, 400, "invalid_request", "Invalid value for \"audience\". This value "
			    "should be the full resource name of the Identity Provider. See "
			    "https://cloud.google.com/iam/docs/reference/sts/rest/v1/TopLevel/token "
			    "for the list of possible formats.");
	else if (!rtt || strcmp(rtt, ACCESS_TOKEN_TYPE))
		oauth_error(r, 400, "invalid_request", "Invalid value for \"requested_token_type\".");
	else if (!stt || (strcmp(stt, "urn:ietf:params:oauth:token-type:jwt") &&
			  strcmp(stt, "urn:ietf:params:oauth:token-type:id_token")))
		oauth_error(r, 400, "invalid_request", "Invalid value for \"subject_token_type\".");
	else if (!fg_opt.wif_audience || strcmp(aud, fg_opt.wif_audience))
		oauth_error(r, 400, "invalid_target", "The target service indicated by the "
			    "\"audience\" parameters is invalid. This might either be because the "
			    "pool or provider is disabled or deleted or because it doesn't exist.");
	else if (!st || !fg_opt.wif_subject_token || strcmp(st, fg_opt.wif_subject_token))
		oauth_error(r, 400, "invalid_grant", "The subject token is not accepted by the "
			    "identity provider of this audience.");
	else if (!scope || !has_scope(scope, CLOUD_PLATFORM))
		oauth_error(r, 400, "invalid_scope", "The scope must include " CLOUD_PLATFORM ".");
	else
		return 0;
	return 1;
}

static void sts_token(struct fg_req *r)
{
	json_t *form;

	if (strcmp(r->method, "POST")) {
		oauth_error(r, 405, "invalid_request", "The token endpoint takes POST only.");
		return;
	}
	form = fg_form_parse(r);
	if (!form) {
		oauth_error(r, 400, "invalid_request", "Expected an "
			    "application/x-www-form-urlencoded body.");
		return;
	}
	json_decref(r->log_body);
	r->log_body = json_deep_copy(form);
	if (json_object_get(r->log_body, "subject_token"))
		json_object_set_new(r->log_body, "subject_token", json_string("<redacted>"));
	if (!sts_refuse(r, form)) {
		fg_lock();
		char *t = fg_fed_token_issue(FG_FED_STS, 3600);
		fg_unlock();
		int ttl = fg_opt.token_ttl < 3600 ? (int)fg_opt.token_ttl : 3600;
		fg_reply_json(r, 200, json_pack("{s:s, s:s, s:s, s:i}", "access_token", t,
						 "issued_token_type", ACCESS_TOKEN_TYPE, "token_type",
						 "Bearer", "expires_in", ttl));
		free(t);
	}
	json_decref(form);
}

/* GitHub's ID-token endpoint, as far as a credential_source.url needs it. */
static void oidc_token(struct fg_req *r)
{
	const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
	if (strcmp(r->method, "GET")) {
		fg_reply_text(r, 405, "text/plain; charset=utf-8", "GET only.\n");
	} else if (!fg_opt.oidc_request_token || !h || strncasecmp(h, "Bearer ", 7) ||
		   strcmp(h + 7, fg_opt.oidc_request_token)) {
		fg_reply_json(r, 401, json_pack("{s:s}", "message", "Unauthorized"));
	} else {
		fg_reply_json(r, 200, json_pack("{s:i, s:s}", "count", 1, "value",
						 fg_opt.wif_subject_token ? fg_opt.wif_subject_token
									  : ""));
	}
}

int fg_sts_serve(struct fg_req *r)
{
	if (!strcmp(r->path, "/v1/token"))
		sts_token(r);
	else if (!strcmp(r->path, "/oidc/idtoken"))
		oidc_token(r);
	else
		return 0;
	return 1;
}
