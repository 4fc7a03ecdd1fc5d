/*
 * Workload identity federation: "external_account" credentials (AIP-4117;
 * google-auth-library-python external_account.py and identity_pool.py;
 * golang.org/x/oauth2/google/externalaccount).
 *
 *   1. the subject token (the identity provider's OIDC token) is read from
 *      credential_source.file or fetched from credential_source.url with
 *      credential_source.headers, as text or as a field of a JSON object
 *      (format {type: json, subject_token_field_name: F}), the form
 *      google-github-actions/auth writes (URL = the runner's ID-token
 *      endpoint, header Authorization, field "value");
 *   2. it is exchanged at token_url (the Security Token Service) for a
 *      Google access token, RFC 8693: a form POST with grant_type
 *      urn:ietf:params:oauth:grant-type:token-exchange, audience, scope,
 *      requested_token_type, subject_token and subject_token_type;
 *   3. with service_account_impersonation_url, that token calls IAM
 *      Credentials generateAccessToken (gcp_auth_impersonate.c), and the
 *      service account's token is the one used.
 * The subject token is read afresh for every exchange: file sources are
 * rotated by whoever writes them, URL sources mint a new one per request.
 * Not supported (an error says so): executable and AWS sources, X.509
 * certificate sources, workforce pools, universes other than googleapis.com.
 */
#include "google/gcp_auth_internal.h"
#include "google/gcp_endpoint.h"
#include "google/gcp_jwt.h"
#include "util/fs.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#define STS_GRANT "urn:ietf:params:oauth:grant-type:token-exchange"
#define STS_ACCESS_TOKEN "urn:ietf:params:oauth:token-type:access_token"
/* A subject token is a JWT of a few kilobytes; a larger file is not one. */
#define SUBJECT_TOKEN_MAX ((size_t)1 << 20)

void tpf_gcp_external_free(struct tpf_gcp_external *x)
{
	if (!x)
		return;
	free(x->audience);
	free(x->subject_token_type);
	free(x->token_url);
	free(x->source_file);
	free(x->source_url);
	for (size_t i = 0; x->headers && x->headers[i]; i++)
		tpf_gcp_wipe_free(x->headers[i]);
	free(x->headers);
	free(x->json_field);
	tpf_gcp_impersonation_free(x->imp);
	free(x);
}

/* RFC 9110 section 5.6.2 token characters. */
static int header_name_ok(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+-.^_`|~", *s))
			return 0;
	return 1;
}

/* credential_source.headers into x->headers. */
static int load_headers(struct tpf_gcp_external *x, json_t *h, const char *path,
			struct tpf_diags *d)
{
	const char *k;
	json_t *v;
	size_t n = 0;
	if (!h)
		return 0;
	if (!json_is_object(h))
		return tpf_error(d, "credentials file '%s': credential_source.headers must be an "
				 "object of strings", path);
	x->headers = xcalloc(json_object_size(h) + 1, sizeof(char *));
	json_object_foreach(h, k, v) {
		const char *s = json_string_value(v);
		if (!header_name_ok(k) || !s || strlen(s) != json_string_length(v) ||
		    strpbrk(s, "\r\n"))
			return tpf_error(d, "credentials file '%s': credential_source.headers['%s'] "
					 "is not a valid HTTP header (a name of token characters and "
					 "a string value on one line)", path, k);
		x->headers[n++] = xasprintf("%s: %s", k, s);
	}
	return 0;
}

/* credential_source: file or url, format, headers. */
static int load_source(struct tpf_gcp_external *x, json_t *cs, const char *path,
		       struct tpf_diags *d)
{
	static const char *const unsupported[] = { "executable", "environment_id", "certificate" };
	if (!json_is_object(cs))
		return tpf_error(d, "credentials file '%s': an external_account needs a "
				 "'credential_source' object", path);
	for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
		if (json_object_get(cs, unsupported[i]))
			return tpf_errorx(d, NULL, "use a file or URL credential source (the form "
					  "GitHub Actions and Kubernetes use)",
					  "credentials file '%s': credential_source.%s (executable, "
					  "AWS and certificate sources) is not supported", path,
					  unsupported[i]);
	x->source_file = tpf_gcp_jstr(cs, "file");
	x->source_url = tpf_gcp_jstr(cs, "url");
	if (!x->source_file == !x->source_url)
		return tpf_error(d, "credentials file '%s': credential_source needs exactly one of "
				 "'file' or 'url'%s", path, x->source_file ? ", not both" : "");
	json_t *fmt = json_object_get(cs, "format");
	const char *type = json_string_value(json_object_get(fmt, "type"));
	if (fmt && (!json_is_object(fmt) || (type && strcmp(type, "text") && strcmp(type, "json"))))
		return tpf_error(d, "credentials file '%s': credential_source.format.type must be "
				 "'text' or 'json'", path);
	if (type && !strcmp(type, "json") &&
	    !(x->json_field = tpf_gcp_jstr(fmt, "subject_token_field_name")))
		return tpf_error(d, "credentials file '%s': credential_source.format of type 'json' "
				 "needs 'subject_token_field_name'", path);
	if (x->source_file && json_object_get(cs, "headers"))
		return tpf_error(d, "credentials file '%s': credential_source.headers goes with "
				 "'url', not 'file'", path);
	if (load_headers(x, json_object_get(cs, "headers"), path, d) < 0)
		return TPF_ERROR;
	if (x->source_url) {
		char *what = xasprintf("credential_source.url in '%s'", path);
		int rc = tpf_gcp_credential_url_check(x->source_url, TPF_GCP_URL_SOURCE, what, d);
		free(what);
		return rc;
	}
	return 0;
}

/* The optional service_account_impersonation_url and its token lifetime. */
static int load_impersonation(struct tpf_gcp_external *x, json_t *root, const char *path,
			      struct tpf_diags *d)
{
	const char *url = json_string_value(json_object_get(root, "service_account_impersonation_url"));
	if (!url || !*url)
		return 0;
	char *from = xasprintf("service_account_impersonation_url in '%s'", path);
	x->imp = tpf_gcp_impersonation_new(url, 1, from, d);
	free(from);
	if (!x->imp)
		return TPF_ERROR;
	/* AIP-4117: token_lifetime_seconds, 600 to 43200 */
	json_t *lt = json_object_get(json_object_get(root, "service_account_impersonation"),
				     "token_lifetime_seconds");
	if (lt && (!json_is_integer(lt) || json_integer_value(lt) < 600 ||
		   json_integer_value(lt) > 43200))
		return tpf_error(d, "credentials file '%s': service_account_impersonation."
				 "token_lifetime_seconds must be a whole number from 600 to 43200",
				 path);
	if (lt)
		x->imp->lifetime = (long)json_integer_value(lt);
	return 0;
}

/* What federation this file does not do, as an error; 0 if none. */
static int refuse_unsupported(json_t *root, const char *aud, const char *path,
			      struct tpf_diags *d)
{
	const char *ud = json_string_value(json_object_get(root, "universe_domain"));
	if (ud && strcmp(ud, "googleapis.com"))
		return tpf_error(d, "credentials file '%s': universe_domain '%s' is not supported "
				 "(only googleapis.com)", path, ud);
	if (json_object_get(root, "workforce_pool_user_project") || strstr(aud, "/workforcePools/"))
		return tpf_errorx(d, NULL, "use a workload identity pool, a service account, or "
				  "'gcloud auth application-default login'",
				  "credentials file '%s': workforce identity federation (a "
				  "workforcePools audience) is not supported", path);
	return 0;
}

static void describe(struct tpf_gcp_auth *a, const char *path)
{
	struct tpf_gcp_external *x = a->ext;
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_buf_addf(&b, "external account credentials '%s' (workload identity federation, "
		     "subject token from ", path);
	if (x->source_file) {
		tpf_buf_addf(&b, "file '%s'", x->source_file);
	} else { /* the URL without its query */
		size_t n = strcspn(x->source_url, "?#");
		tpf_buf_addf(&b, "URL '%.*s'", (int)n, x->source_url);
	}
	tpf_buf_adds(&b, ")");
	if (x->imp)
		tpf_buf_addf(&b, ", impersonating %s", x->imp->email);
	a->base_source = tpf_buf_detach(&b, NULL);
}

int tpf_gcp_external_load(struct tpf_gcp_auth *a, json_t *root, const char *path,
			  struct tpf_diags *d)
{
	struct tpf_gcp_external *x = a->ext = xcalloc(1, sizeof(*x));
	a->kind = CRED_EXTERNAL;
	x->audience = tpf_gcp_jstr(root, "audience");
	x->subject_token_type = tpf_gcp_jstr(root, "subject_token_type");
	x->token_url = tpf_gcp_jstr(root, "token_url");
	if (!x->audience || !x->subject_token_type)
		return tpf_errorx(d, NULL, "regenerate it with 'gcloud iam workload-identity-pools "
				  "create-cred-config'",
				  "credentials file '%s' is an external_account without '%s'", path,
				  x->audience ? "subject_token_type" : "audience");
	if (refuse_unsupported(root, x->audience, path, d) < 0)
		return TPF_ERROR;
	if (!x->token_url)
		x->token_url = xstrdup(TPF_GCP_DEFAULT_STS_URL);
	char *what = xasprintf("token_url in '%s'", path);
	int rc = tpf_gcp_credential_url_check(x->token_url, TPF_GCP_URL_STS, what, d);
	free(what);
	if (rc < 0 || load_source(x, json_object_get(root, "credential_source"), path, d) < 0 ||
	    load_impersonation(x, root, path, d) < 0)
		return TPF_ERROR;
	describe(a, path);
	return 0;
}

int tpf_gcp_subject_token_parse(const char *text, size_t len, const char *json_field,
				const char *where, char **out, struct tpf_diags *d)
{
	if (json_field) {
		json_error_t je;
		json_t *root = json_loadb(text, len, 0, &je);
		json_t *f = json_object_get(root, json_field);
		const char *v = json_string_value(f);
		int rc = 0;
		if (!json_is_object(root))
			rc = tpf_error(d, "the subject token from %s is not a JSON object (error at "
				       "line %d, column %d)", where, je.line, je.column);
		else if (!v || !*v)
			rc = tpf_errorx(d, NULL, "check credential_source.format.subject_token_field_name",
					"the subject token from %s has no non-empty string field '%s'",
					where, json_field);
		else
			*out = xstrdup(v);
		if (v)
			OPENSSL_cleanse((char *)v, strlen(v));
		json_decref(root);
		return rc;
	}
	while (len && isspace((unsigned char)*text)) {
		text++;
		len--;
	}
	while (len && isspace((unsigned char)text[len - 1]))
		len--;
	if (!len)
		return tpf_error(d, "the subject token from %s is empty", where);
	if (memchr(text, '\0', len))
		return tpf_error(d, "the subject token from %s is not text", where);
	*out = xstrndup(text, len);
	return 0;
}

static int subject_from_file(struct tpf_gcp_auth *a, char **out, struct tpf_diags *d)
{
	struct tpf_gcp_external *x = a->ext;
	struct tpf_buf text = TPF_BUF_INIT;
	char *where = xasprintf("file '%s' (credential_source.file in '%s')", x->source_file,
				a->path);
	int rc = tpf_read_file_max(x->source_file, SUBJECT_TOKEN_MAX, "subject token file", &text,
				   d);
	if (rc == TPF_ENOTFOUND)
		rc = tpf_errorx(d, NULL, "the identity provider (or the CI job's set-up step) "
				"writes this file; check that it ran",
				"the subject token %s does not exist", where);
	else if (rc == 0)
		rc = tpf_gcp_subject_token_parse(text.buf, text.len, x->json_field, where, out, d);
	if (text.alloc)
		OPENSSL_cleanse(text.buf, text.len);
	tpf_buf_release(&text);
	free(where);
	return rc;
}

static int subject_from_url(struct tpf_gcp_auth *a, char **out, struct tpf_diags *d)
{
	struct tpf_gcp_external *x = a->ext;
	struct tpf_gcp_token_request t = { .what = TPF_BUF_INIT };
	struct tpf_gcp_response rs = TPF_GCP_RESPONSE_INIT;
	struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
	size_t n = strcspn(x->source_url, "?#");
	t.rq.method = "GET";
	t.rq.url = x->source_url;
	t.rq.headers = (const char *const *)x->headers;
	tpf_buf_addf(&t.what, "get the subject token from '%.*s' (credential_source.url in '%s')",
		     (int)n, x->source_url, a->path);
	int rc = tpf_gcp_token_send(a, &t, &rs, &e, d);
	if (rc < 0 && e.http)
		tpf_gcp_token_refused(&t, &e,
				      "check credential_source.url and .headers (in GitHub Actions "
				      "the job needs 'permissions: id-token: write', and the "
				      "request token lasts only as long as the job)", rc, d);
	if (rc == 0)
		rc = tpf_gcp_subject_token_parse(rs.body.buf, rs.body.len, x->json_field,
						 t.what.buf + strlen("get the subject token from "),
						 out, d);
	tpf_gcp_error_release(&e);
	tpf_gcp_response_wipe(&rs);
	tpf_gcp_token_request_release(&t);
	return rc;
}

static const char *sts_hint(const struct tpf_gcp_error *e)
{
	const char *s = e->status ? e->status : "";
	if (!strcmp(s, "invalid_target"))
		return "check 'audience' in the credentials file: the workload identity pool and "
		       "provider must exist and be enabled ('gcloud iam workload-identity-pools "
		       "providers describe')";
	if (!strcmp(s, "invalid_grant"))
		return "the identity provider's token was refused: check the provider's issuer, "
		       "allowed audiences and attribute condition, and that the token has not "
		       "expired";
	if (!strcmp(s, "invalid_request"))
		return "check 'audience' and 'subject_token_type' in the credentials file";
	return NULL;
}

/* RFC 8693 token exchange of `subject` at token_url. */
static int sts_exchange(struct tpf_gcp_auth *a, const char *subject, char **token,
			double *lifetime, struct tpf_diags *d)
{
	struct tpf_gcp_external *x = a->ext;
	struct tpf_gcp_token_request t = { .what = TPF_BUF_INIT };
	struct tpf_gcp_response rs = TPF_GCP_RESPONSE_INIT;
	struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
	char *aud = tpf_gcp_escape(x->audience), *scope = tpf_gcp_escape(TPF_GCP_SCOPE);
	char *rtt = tpf_gcp_escape(STS_ACCESS_TOKEN), *stt = tpf_gcp_escape(x->subject_token_type);
	char *gt = tpf_gcp_escape(STS_GRANT);
	tpf_gcp_token_request_keep(&t, xstrdup(subject));
	char *sub = tpf_gcp_token_request_keep(&t, tpf_gcp_escape(subject));
	t.body = xasprintf("grant_type=%s&audience=%s&scope=%s&requested_token_type=%s"
			   "&subject_token=%s&subject_token_type=%s", gt, aud, scope, rtt, sub, stt);
	free(aud);
	free(scope);
	free(rtt);
	free(stt);
	free(gt);
	t.rq.method = "POST";
	t.rq.url = x->token_url;
	t.rq.content_type = "application/x-www-form-urlencoded";
	t.rq.body = t.body;
	t.rq.body_len = strlen(t.body);
	tpf_buf_addf(&t.what, "exchange the subject token at '%s' for %s", x->token_url, a->path);
	int rc = tpf_gcp_token_send(a, &t, &rs, &e, d);
	if (rc < 0 && e.http)
		tpf_gcp_token_refused(&t, &e, sts_hint(&e), rc, d);
	return tpf_gcp_token_finish(rc, &t, &rs, &e, token, lifetime, d);
}

int tpf_gcp_external_fetch(struct tpf_gcp_auth *a, char **token, double *lifetime,
			   struct tpf_diags *d)
{
	char *subject = NULL, *sts = NULL;
	int rc = a->ext->source_file ? subject_from_file(a, &subject, d)
				     : subject_from_url(a, &subject, d);
	if (rc == 0)
		rc = sts_exchange(a, subject, a->ext->imp ? &sts : token, lifetime, d);
	if (rc == 0 && a->ext->imp) {
		int rejected = 0;
		rc = tpf_gcp_impersonate(a, a->ext->imp, sts, token, lifetime, &rejected, d);
	}
	tpf_gcp_wipe_free(subject);
	tpf_gcp_wipe_free(sts);
	return rc;
}
