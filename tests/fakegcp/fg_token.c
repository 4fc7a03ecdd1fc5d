/*
 * The OAuth2 token endpoint (POST /token) as google-auth libraries use it
 * (docs/cloud-tpu-api.md section 7): the JWT-bearer grant for
 * service-account keys and the refresh-token grant for authorized users.
 * Both answer {"access_token","expires_in","token_type":"Bearer"}; failures
 * are 400 {"error":"invalid_grant","error_description":...}. Issued tokens
 * are what --auth token accepts on API requests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

#define JWT_GRANT "urn:ietf:params:oauth:grant-type:jwt-bearer"
#define SKEW 300 /* seconds of clock skew allowed on iat */

struct user {
	char *id, *secret, *refresh;
};

struct token {
	char *value;
	double expires; /* monotonic */
};

static EVP_PKEY **keys;
static size_t n_keys, a_keys;
static struct user *users;
static size_t n_users, a_users;
static struct token *tokens;
static size_t n_tokens, a_tokens;

int fg_token_add_key(const char *pem_path, char *err, size_t errlen)
{
	FILE *f = fopen(pem_path, "r");
	EVP_PKEY *k = NULL;

	if (!f) {
		snprintf(err, errlen, "cannot open '%s': %m", pem_path);
		return -1;
	}
	/* A public key, or the private key or certificate that holds it. */
	k = PEM_read_PUBKEY(f, NULL, NULL, NULL);
	if (!k) {
		rewind(f);
		k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	}
	if (!k) {
		rewind(f);
		X509 *cert = PEM_read_X509(f, NULL, NULL, NULL);
		if (cert)
			k = X509_get_pubkey(cert);
		X509_free(cert);
	}
	fclose(f);
	if (!k || EVP_PKEY_base_id(k) != EVP_PKEY_RSA) {
		EVP_PKEY_free(k);
		snprintf(err, errlen, "'%s' holds no RSA key in PEM form; expected the output of "
				      "'openssl pkey -pubout'", pem_path);
		return -1;
	}
	XGROW(keys, n_keys + 1, a_keys);
	keys[n_keys++] = k;
	return 0;
}

int fg_token_add_user(const char *spec)
{
	const char *c1 = strchr(spec, ':');
	const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

	if (!c1 || !c2 || c1 == spec || c2 == c1 + 1 || !c2[1])
		return -1;
	XGROW(users, n_users + 1, a_users);
	users[n_users++] = (struct user){ xstrndup(spec, (size_t)(c1 - spec)),
					  xstrndup(c1 + 1, (size_t)(c2 - c1 - 1)), xstrdup(c2 + 1) };
	return 0;
}

char *fg_token_issue(void)
{
	unsigned char raw[24];
	char hex[sizeof(raw) * 2 + 1];
	double now = fg_mono();
	size_t k = 0;

	RAND_bytes(raw, sizeof(raw));
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	/* Forget expired tokens so the list stays short. */
	for (size_t i = 0; i < n_tokens; i++) {
		if (tokens[i].expires > now)
			tokens[k++] = tokens[i];
		else
			free(tokens[i].value);
	}
	n_tokens = k;
	XGROW(tokens, n_tokens + 1, a_tokens);
	tokens[n_tokens].value = xasprintf("ya29.fakegcp.%s", hex);
	tokens[n_tokens].expires = now + fg_opt.token_ttl;
	return xstrdup(tokens[n_tokens++].value);
}

/* 1 valid, 0 unknown, -1 expired. Lock held. */
static int token_state(const char *t)
{
	for (size_t i = 0; i < n_tokens; i++)
		if (!strcmp(tokens[i].value, t))
			return tokens[i].expires > fg_mono() ? 1 : -1;
	int fed = fg_fed_token_state(t); /* issued by STS or IAM (fg_sts.c) */
	return fed > 0 ? 1 : fed;
}

int fg_token_valid(const char *t)
{
	return token_state(t) == 1;
}

void fg_token_revoke_all(void)
{
	for (size_t i = 0; i < n_tokens; i++)
		free(tokens[i].value);
	n_tokens = 0;
	fg_fed_tokens_revoke();
}

void fg_token_free(void)
{
	fg_token_revoke_all();
	free(tokens);
	for (size_t i = 0; i < n_keys; i++)
		EVP_PKEY_free(keys[i]);
	free(keys);
	for (size_t i = 0; i < n_users; i++) {
		free(users[i].id);
		free(users[i].secret);
		free(users[i].refresh);
	}
	free(users);
	tokens = NULL;
	keys = NULL;
	users = NULL;
	n_tokens = a_tokens = n_keys = a_keys = n_users = a_users = 0;
}

static void oauth_error(struct fg_req *r, unsigned status, const char *error, const char *desc)
{
	fg_reply_json(r, status, json_pack("{s:s, s:s}", "error", error, "error_description", desc));
}

static void grant(struct fg_req *r)
{
	fg_lock();
	char *t = fg_token_issue();
	fg_unlock();
	fg_reply_json(r, 200, json_pack("{s:s, s:i, s:s}", "access_token", t, "expires_in",
					 (int)fg_opt.token_ttl, "token_type", "Bearer"));
	free(t);
}

/* The audiences Google accepts, plus this emulator's own /token URL. */
static int audience_ok(struct fg_req *r, const char *aud)
{
	static const char *const google[] = {
		"https://oauth2.googleapis.com/token",
		"https://www.googleapis.com/oauth2/v4/token",
		"https://accounts.google.com/o/oauth2/token",
	};
	const char *host = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Host");
	int ok = 0;

	for (size_t i = 0; i < sizeof(google) / sizeof(google[0]); i++)
		ok |= !strcmp(aud, google[i]);
	int port = fg_req_local_port(r);
	char *own[3] = {
		host ? xasprintf("http://%s/token", host) : NULL,
		xasprintf("http://127.0.0.1:%d/token", port),
		xasprintf("http://localhost:%d/token", port),
	};
	for (size_t i = 0; i < 3; i++) {
		ok |= own[i] && !strcmp(aud, own[i]);
		free(own[i]);
	}
	return ok;
}

static void jwt_grant(struct fg_req *r, const char *assertion)
{
	char err[256];
	json_t *claims;

	if (!assertion || !*assertion) {
		oauth_error(r, 400, "invalid_request", "Missing required parameter: assertion");
		return;
	}
	claims = fg_jwt_verify(assertion, (void *const *)keys, n_keys, err, sizeof(err));
	if (!claims) {
		oauth_error(r, 400, "invalid_grant", err);
		return;
	}
	const char *iss = json_string_value(json_object_get(claims, "iss"));
	const char *aud = json_string_value(json_object_get(claims, "aud"));
	const char *scope = json_string_value(json_object_get(claims, "scope"));
	json_t *iat = json_object_get(claims, "iat"), *exp = json_object_get(claims, "exp");
	double now = (double)time(NULL);

	if (!iss || !*iss || (fg_opt.sa_email && strcmp(iss, fg_opt.sa_email))) {
		oauth_error(r, 400, "invalid_grant", "Invalid grant: account not found");
	} else if (!aud || !audience_ok(r, aud)) {
		oauth_error(r, 400, "invalid_grant", "Invalid JWT: Failed audience check. The "
			    "expected value was https://oauth2.googleapis.com/token or this "
			    "emulator's /token URL");
	} else if (!json_is_number(iat) || !json_is_number(exp) ||
		   json_number_value(exp) <= now || json_number_value(iat) > now + SKEW ||
		   json_number_value(exp) <= json_number_value(iat) ||
		   json_number_value(exp) - json_number_value(iat) > 3600) {
		oauth_error(r, 400, "invalid_grant", "Invalid JWT: Token must be a short-lived "
			    "token (60 minutes) and in a reasonable timeframe. Check your iat and exp "
			    "values in the JWT claim.");
	} else if (!scope || !*scope) {
		oauth_error(r, 400, "invalid_scope", "Invalid OAuth scope or ID token audience "
			    "provided.");
	} else {
		grant(r);
	}
	json_decref(claims);
}

static void refresh_grant(struct fg_req *r, json_t *form)
{
	const char *id = json_string_value(json_object_get(form, "client_id"));
	const char *secret = json_string_value(json_object_get(form, "client_secret"));
	const char *refresh = json_string_value(json_object_get(form, "refresh_token"));

	for (size_t i = 0; i < n_users; i++) {
		if (!id || strcmp(users[i].id, id))
			continue;
		if (!secret || strcmp(users[i].secret, secret))
			oauth_error(r, 401, "invalid_client", "Unauthorized");
		else if (!refresh || strcmp(users[i].refresh, refresh))
			oauth_error(r, 400, "invalid_grant", "Bad Request");
		else
			grant(r);
		return;
	}
	oauth_error(r, 401, "invalid_client", "The OAuth client was not found.");
}

static enum MHD_Result form_field(void *cls, enum MHD_ValueKind kind, const char *key,
				  const char *filename, const char *content_type,
				  const char *transfer_encoding, const char *data, uint64_t off,
				  size_t size)
{
	json_t *fields = cls;
	json_t *old = json_object_get(fields, key);
	struct tpf_buf b = TPF_BUF_INIT;

	/* Long values arrive in pieces: append to what came before. */
	if (old && off)
		tpf_buf_adds(&b, json_string_value(old));
	tpf_buf_add(&b, data, size);
	json_object_set_new(fields, key, json_stringn(b.buf, b.len));
	tpf_buf_release(&b);
	return MHD_YES;
}

json_t *fg_form_parse(struct fg_req *r)
{
	json_t *fields = json_object();
	struct MHD_PostProcessor *pp = MHD_create_post_processor(r->conn, 1024, form_field, fields);

	if (!pp) {
		json_decref(fields);
		return NULL;
	}
	if (r->body.len && MHD_post_process(pp, r->body.buf, r->body.len) != MHD_YES) {
		MHD_destroy_post_processor(pp);
		json_decref(fields);
		return NULL;
	}
	MHD_destroy_post_processor(pp);
	return fields;
}

/* Secrets never reach the request log. */
static json_t *redacted(json_t *form)
{
	static const char *const secret[] = { "assertion", "client_secret", "refresh_token" };
	json_t *copy = json_deep_copy(form);

	for (size_t i = 0; i < sizeof(secret) / sizeof(secret[0]); i++)
		if (json_object_get(copy, secret[i]))
			json_object_set_new(copy, secret[i], json_string("<redacted>"));
	return copy;
}

void fg_token_endpoint(struct fg_req *r)
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
	r->log_body = redacted(form);
	const char *gt = json_string_value(json_object_get(form, "grant_type"));
	if (gt && !strcmp(gt, JWT_GRANT)) {
		jwt_grant(r, json_string_value(json_object_get(form, "assertion")));
	} else if (gt && !strcmp(gt, "refresh_token")) {
		refresh_grant(r, form);
	} else {
		char *msg = xasprintf("Invalid grant_type: %s", gt ? gt : "");
		oauth_error(r, 400, "unsupported_grant_type", msg);
		free(msg);
	}
	json_decref(form);
}

int fg_auth_check(struct fg_req *r)
{
	const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
	const char *q = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "access_token");
	const char *tok = NULL;
	int state = 0;

	if (!fg_opt.auth_token)
		return 0;
	if (h && !strncasecmp(h, "Bearer ", 7))
		tok = h + 7;
	else if (q)
		tok = q;
	if (tok) {
		fg_lock();
		state = token_state(tok);
		fg_unlock();
		if (state == 1)
			return 0;
	}
	const char *reason = !tok ? "CREDENTIALS_MISSING"
			   : state < 0 ? "ACCESS_TOKEN_EXPIRED" : "ACCESS_TOKEN_TYPE_UNSUPPORTED";
	json_t *info = json_pack("{s:s, s:s, s:s, s:{s:s}}", "@type",
				 "type.googleapis.com/google.rpc.ErrorInfo", "reason", reason,
				 "domain", "googleapis.com", "metadata", "service", "tpu.googleapis.com");
	/* Google's two wordings: no credential at all, or one it does not accept. */
	fg_reply_error(r, 401, "UNAUTHENTICATED", json_pack("[o]", info), "%s",
		       !tok ? "Request is missing required authentication credential. Expected OAuth "
			      "2 access token, login cookie or other valid authentication credential. "
			      "See https://developers.google.com/identity/sign-in/web/devconsole-project."
			    : "Request had invalid authentication credentials. Expected OAuth 2 access "
			      "token, login cookie or other valid authentication credential. See "
			      "https://developers.google.com/identity/sign-in/web/devconsole-project.");
	fg_reply_header(r, "WWW-Authenticate", "Bearer realm=\"https://accounts.google.com/\"");
	return -1;
}
