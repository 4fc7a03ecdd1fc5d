/*
 * Keyless credentials without a server: the credential URL policy,
 * external_account files (file and URL sources, text and JSON formats, and
 * every refusal), subject token parsing, impersonation settings, the quota
 * project order, TPUFORM_ACCESS_TOKEN's refresh rules, RFC 3339, and the
 * fleet file keys. The token flows themselves run against the emulator in
 * tests/e2e/t340-gcp-keyless.sh.
 */
#include "config/config.h"
#include "google/gcp_auth.h"
#include "google/gcp_auth_internal.h"
#include "google/gcp_endpoint.h"
#include "tests/unit/unit.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define AUD "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/p/providers/gh"
#define SA "deployer@test-project.iam.gserviceaccount.com"
#define IMP_URL "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/" SA \
		":generateAccessToken"

static char *tmpdir;
static struct tpf_gcp_http *http;
static struct tpf_gcp_settings settings;

static void clear_env(void)
{
	static const char *const vars[] = {
		"TPUFORM_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG",
		"GCE_METADATA_HOST", "GCE_METADATA_ROOT", "TPUFORM_IMPERSONATE_SERVICE_ACCOUNT",
		"TPUFORM_IAMCREDENTIALS_ENDPOINT", "GOOGLE_CLOUD_QUOTA_PROJECT",
	};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	setenv("HOME", "/nonexistent", 1);
}

/* Write JSON (stolen) to tmpdir/name; returns the path (caller frees). */
static char *write_json(const char *name, json_t *v)
{
	char *p = xasprintf("%s/%s", tmpdir, name);
	char *s = json_dumps(v, JSON_COMPACT);
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_write_file_atomic(p, s, strlen(s), 0600, &d);
	tpf_diags_release(&d);
	free(s);
	json_decref(v);
	return p;
}

/* An external_account object with a file source; callers change it. */
static json_t *ext_json(void)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:{s:s}}", "type", "external_account", "audience",
			 AUD, "subject_token_type", "urn:ietf:params:oauth:token-type:jwt",
			 "token_url", "https://sts.googleapis.com/v1/token", "credential_source",
			 "file", "/var/run/oidc/token");
}

/* Open with cfg; the source description, or "ERR: summary | detail". */
static char *open_with(const struct tpf_gcp_auth_config *cfg, struct tpf_gcp_auth **keep)
{
	struct tpf_gcp_auth *a = NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *r;
	if (tpf_gcp_auth_open(&a, http, &settings, cfg, &d) == 0)
		r = xstrdup(tpf_gcp_auth_source(a));
	else
		r = xasprintf("ERR: %s | %s", d.n ? d.items[0].summary : "(none)",
			      d.n && d.items[0].detail ? d.items[0].detail : "");
	if (keep)
		*keep = a;
	else
		tpf_gcp_auth_free(a);
	tpf_diags_release(&d);
	return r;
}

static char *open_file(json_t *v)
{
	char *p = write_json("cred.json", v);
	struct tpf_gcp_auth_config cfg = { .credentials = p };
	char *r = open_with(&cfg, NULL);
	free(p);
	return r;
}

static void test_gcp_external__url_policy(void)
{
	struct {
		const char *url;
		enum tpf_gcp_cred_url kind;
		int ok;
	} cases[] = {
		{ "https://sts.googleapis.com/v1/token", TPF_GCP_URL_STS, 1 },
		{ "https://STS.googleapis.com/v1/token", TPF_GCP_URL_STS, 1 },
		{ "https://sts.us-east7.rep.googleapis.com/v1/token", TPF_GCP_URL_STS, 1 },
		{ "https://us-east1.sts.googleapis.com/v1/token", TPF_GCP_URL_STS, 1 },
		{ "https://sts.europe-west1.googleapis.com/v1/token", TPF_GCP_URL_STS, 1 },
		{ "https://private-sts.googleapis.com/v1/token", TPF_GCP_URL_STS, 1 },
		{ "http://127.0.0.1:8080/v1/token", TPF_GCP_URL_STS, 1 },
		{ "http://localhost:9/v1/token", TPF_GCP_URL_STS, 1 },
		{ "http://[::1]:9/v1/token", TPF_GCP_URL_STS, 1 },
		{ "https://sts.googleapis.com.evil.example/v1/token", TPF_GCP_URL_STS, 0 },
		{ "https://evil.example/v1/token", TPF_GCP_URL_STS, 0 },
		{ "https://evilsts.googleapis.com/v1/token", TPF_GCP_URL_STS, 0 },
		{ "https://a.b.sts.googleapis.com/v1/token", TPF_GCP_URL_STS, 0 },
		{ "https://sts.a.b.googleapis.com/v1/token", TPF_GCP_URL_STS, 0 },
		{ "https://iamcredentials.googleapis.com/v1/token", TPF_GCP_URL_STS, 0 },
		{ "https://sts.googleapis.com@evil.example/v1/token", TPF_GCP_URL_STS, 0 },
		{ "http://sts.googleapis.com/v1/token", TPF_GCP_URL_STS, 0 },
		{ "https://sts.googleapis.com/v1/token?x=1", TPF_GCP_URL_STS, 0 },
		{ "ftp://sts.googleapis.com/v1/token", TPF_GCP_URL_STS, 0 },
		{ "sts.googleapis.com/v1/token", TPF_GCP_URL_STS, 0 },
		{ IMP_URL, TPF_GCP_URL_IAMCREDENTIALS, 1 },
		{ "https://iamcredentials.us-east7.rep.googleapis.com/v1/x", TPF_GCP_URL_IAMCREDENTIALS, 1 },
		{ "https://sts.googleapis.com/v1/x", TPF_GCP_URL_IAMCREDENTIALS, 0 },
		{ "https://iamcredentials.googleapis.com.evil.example/v1/x", TPF_GCP_URL_IAMCREDENTIALS, 0 },
		{ "http://10.0.0.1/v1/x", TPF_GCP_URL_IAMCREDENTIALS, 0 },
		{ "https://pipelines.actions.githubusercontent.com/abc/idtoken?api-version=2.0&audience=x",
		  TPF_GCP_URL_SOURCE, 1 },
		{ "http://127.0.0.1:5/oidc/idtoken?audience=x", TPF_GCP_URL_SOURCE, 1 },
		{ "http://169.254.169.254/metadata/identity/oauth2/token", TPF_GCP_URL_SOURCE, 0 },
		{ "https://user:pw@idp.example/token", TPF_GCP_URL_SOURCE, 0 },
		{ "file:///etc/passwd", TPF_GCP_URL_SOURCE, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tpf_diags d = TPF_DIAGS_INIT;
		int rc = tpf_gcp_credential_url_check(cases[i].url, cases[i].kind, "url", &d);
		CHECKF((rc == 0) == cases[i].ok, "%s: rc %d, %s", cases[i].url, rc,
		       d.n ? d.items[0].summary : "no diagnostic");
		CHECKF(cases[i].ok || d.n == 1, "%s: one diagnostic when refused", cases[i].url);
		tpf_diags_release(&d);
	}
	/* the message names the host and what would have been accepted */
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_gcp_credential_url_check("https://tokens.evil.example/v1/token", TPF_GCP_URL_STS,
				     "token_url in 'c.json'", &d);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "token_url in 'c.json'") &&
	      strstr(d.items[0].summary, "host 'tokens.evil.example'") &&
	      strstr(d.items[0].summary, "expected sts.googleapis.com"));
	tpf_diags_release(&d);
}

static void test_gcp_external__sources(void)
{
	clear_env();
	char *got = open_file(ext_json());
	CHECKF(strstr(got, "external account credentials '") &&
	       strstr(got, "subject token from file '/var/run/oidc/token')"), "%s", got);
	CHECKF(!strstr(got, "impersonating"), "%s", got);
	free(got);

	/* GitHub Actions' form: URL, Authorization header, JSON field "value" */
	json_t *v = ext_json();
	json_object_set_new(v, "credential_source",
			    json_pack("{s:s, s:{s:s}, s:{s:s, s:s}}", "url",
				      "https://pipelines.actions.githubusercontent.com/x/idtoken?api-version=2.0&audience=y",
				      "headers", "Authorization", "Bearer GITHUBREQTOKEN", "format",
				      "type", "json", "subject_token_field_name", "value"));
	json_object_set_new(v, "service_account_impersonation_url", json_string(IMP_URL));
	struct tpf_gcp_auth *a = NULL;
	char *p = write_json("gh.json", v);
	struct tpf_gcp_auth_config cfg = { .credentials = p };
	got = open_with(&cfg, &a);
	CHECKF(strstr(got, "subject token from URL "
			   "'https://pipelines.actions.githubusercontent.com/x/idtoken'), "
			   "impersonating " SA), "%s", got);
	CHECKF(!strstr(got, "GITHUBREQTOKEN") && !strstr(got, "api-version"), "%s", got);
	if (a) {
		CHECK_STR(a->ext->json_field, "value");
		CHECK(a->ext->headers && a->ext->headers[0] && !a->ext->headers[1]);
		CHECK_STR(a->ext->headers ? a->ext->headers[0] : NULL,
			  "Authorization: Bearer GITHUBREQTOKEN");
		CHECK_STR(a->ext->imp->url, IMP_URL);
		CHECK_INT(a->ext->imp->lifetime, 3600);
		CHECK_STR(tpf_gcp_auth_email(a), SA);
		/* a token for the API comes from impersonation: it can be refreshed */
		CHECK_INT(tpf_gcp_auth_invalidate(a, "x"), 1);
	}
	tpf_gcp_auth_free(a);
	free(got);
	free(p);

	/* token_lifetime_seconds is honoured */
	v = ext_json();
	json_object_set_new(v, "service_account_impersonation_url", json_string(IMP_URL));
	json_object_set_new(v, "service_account_impersonation",
			    json_pack("{s:i}", "token_lifetime_seconds", 900));
	p = write_json("lt.json", v);
	cfg.credentials = p;
	got = open_with(&cfg, &a);
	CHECK(a && a->ext->imp->lifetime == 900);
	tpf_gcp_auth_free(a);
	free(got);
	free(p);
}

/* Set o[k] = val (stolen; NULL deletes) in a copy of ext_json(); open it;
 * check that it is refused with `says` in the message. */
static void refused(const char *k, json_t *val, const char *says)
{
	json_t *v = ext_json();
	if (val)
		json_object_set_new(v, k, val);
	else
		json_object_del(v, k);
	char *got = open_file(v);
	CHECKF(!strncmp(got, "ERR: ", 5) && strstr(got, says), "%s: '%s'", k, got);
	CHECKF(!strstr(got, "SECRETHEADERVALUE"), "%s leaks a header: '%s'", k, got);
	free(got);
}

static void test_gcp_external__refusals(void)
{
	clear_env();
	refused("audience", NULL, "is an external_account without 'audience'");
	refused("credential_source", NULL, "needs a 'credential_source' object");
	refused("credential_source", json_pack("{s:s, s:s}", "file", "/a", "url", "https://idp.example/t"),
		"needs exactly one of 'file' or 'url', not both");
	refused("credential_source", json_pack("{s:{s:s}}", "executable", "command", "/bin/x"),
		"credential_source.executable (executable, AWS and certificate sources) is not supported");
	refused("credential_source", json_pack("{s:s, s:s}", "environment_id", "aws1", "url",
					       "https://169.254.169.254/x"), "is not supported");
	refused("credential_source", json_pack("{s:s, s:{s:s}}", "file", "/a", "format", "type", "json"),
		"needs 'subject_token_field_name'");
	refused("credential_source", json_pack("{s:s, s:{s:s}}", "file", "/a", "format", "type", "xml"),
		"must be 'text' or 'json'");
	refused("credential_source", json_pack("{s:s, s:{s:s}}", "url", "https://idp.example/t",
						"headers", "X-A", "SECRETHEADERVALUE\r\nHost: evil"),
		"is not a valid HTTP header");
	refused("credential_source", json_pack("{s:s}", "url", "http://169.254.169.254/token"),
		"credential_source.url in '");
	/* a credentials file must not be able to send tokens elsewhere */
	refused("token_url", json_string("https://sts.googleapis.com.evil.example/v1/token"),
		"which is not a Google Security Token Service host");
	refused("token_url", json_string("http://sts.example.com/v1/token"), "uses scheme 'http'");
	refused("service_account_impersonation_url",
		json_string("https://evil.example/v1/projects/-/serviceAccounts/" SA ":generateAccessToken"),
		"which is not a Google IAM Credentials host");
	refused("service_account_impersonation_url",
		json_string("https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/" SA),
		"does not end in /serviceAccounts/EMAIL:generateAccessToken");
	refused("universe_domain", json_string("example.goog"), "universe_domain 'example.goog' is not supported");
	refused("workforce_pool_user_project", json_string("123"),
		"workforce identity federation (a workforcePools audience) is not supported");
	/* token_lifetime_seconds goes with an impersonation URL (AIP-4117: 600 to 43200) */
	static const int lifetimes[] = { 60, 50000 };
	for (size_t i = 0; i < 2; i++) {
		json_t *v = ext_json();
		json_object_set_new(v, "service_account_impersonation_url", json_string(IMP_URL));
		json_object_set_new(v, "service_account_impersonation",
				    json_pack("{s:i}", "token_lifetime_seconds", lifetimes[i]));
		char *got = open_file(v);
		CHECKF(strstr(got, "ERR: ") && strstr(got, "token_lifetime_seconds must be a whole "
							   "number from 600 to 43200"), "%s", got);
		free(got);
	}
}

static void test_gcp_external__subject_token(void)
{
	struct {
		const char *text, *field, *want, *err;
	} cases[] = {
		{ "eyJhbGciOi.TOKEN.sig\n", NULL, "eyJhbGciOi.TOKEN.sig", NULL },
		{ "  \t\nTOK\r\n\n", NULL, "TOK", NULL },
		{ "\n \n", NULL, NULL, "is empty" },
		{ "{\"value\":\"JWTVALUE\",\"count\":1}", "value", "JWTVALUE", NULL },
		{ "{\"access_token\":\"AZURETOK\"}", "value", NULL, "has no non-empty string field 'value'" },
		{ "{\"value\":\"\"}", "value", NULL, "has no non-empty string field 'value'" },
		{ "{\"value\":42}", "value", NULL, "has no non-empty string field 'value'" },
		{ "SECRETPLAINTOKEN", "value", NULL, "is not a JSON object (error at line 1" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tpf_diags d = TPF_DIAGS_INIT;
		char *out = NULL;
		int rc = tpf_gcp_subject_token_parse(cases[i].text, strlen(cases[i].text),
						     cases[i].field, "file 't'", &out, &d);
		if (cases[i].want) {
			CHECK_INT(rc, 0);
			CHECK_STR(out, cases[i].want);
		} else {
			CHECK_INT(rc, TPF_ERROR);
			CHECKF(d.n == 1 && strstr(d.items[0].summary, cases[i].err) &&
			       strstr(d.items[0].summary, "the subject token from file 't'"),
			       "case %zu: %s", i, d.n ? d.items[0].summary : "none");
			CHECKF(d.n == 1 && !strstr(d.items[0].summary, "SECRETPLAINTOKEN") &&
			       !strstr(d.items[0].summary, "AZURETOK"), "case %zu quotes the token", i);
		}
		free(out);
		tpf_diags_release(&d);
	}
}

static void test_gcp_external__impersonation_settings(void)
{
	clear_env();
	setenv("TPUFORM_ACCESS_TOKEN", "ya29.STATICTOKEN", 1);
	struct tpf_gcp_auth *a = NULL;
	char *got = open_with(NULL, &a);
	CHECK_STR(got, "the access token in TPUFORM_ACCESS_TOKEN");
	/* alone it cannot be refreshed, and a 401 says so */
	CHECK_INT(a ? tpf_gcp_auth_invalidate(a, "ya29.STATICTOKEN") : -1, 0);
	const char *hint = a ? tpf_gcp_auth_reject_hint(a) : "";
	CHECKF(strstr(hint, "TPUFORM_ACCESS_TOKEN cannot be refreshed") &&
	       strstr(hint, "gcloud auth print-access-token") && strstr(hint, "unset it"), "%s", hint);
	CHECK(a && tpf_gcp_auth_email(a) == NULL);
	tpf_gcp_auth_free(a);
	free(got);

	/* impersonation works on it too: then it is the caller, and tokens refresh */
	setenv("TPUFORM_IMPERSONATE_SERVICE_ACCOUNT", SA, 1);
	got = open_with(NULL, &a);
	CHECK_STR(got, "the access token in TPUFORM_ACCESS_TOKEN, impersonating " SA);
	CHECK_INT(a ? tpf_gcp_auth_invalidate(a, "x") : -1, 1);
	CHECK_STR(a ? a->imp->url : NULL, IMP_URL);
	CHECK_STR(a ? tpf_gcp_auth_email(a) : NULL, SA);
	tpf_gcp_auth_free(a);
	free(got);

	/* the fleet file wins over the variable; the endpoint can be moved for tests */
	setenv("TPUFORM_IAMCREDENTIALS_ENDPOINT", "http://127.0.0.1:9/", 1);
	struct tpf_gcp_auth_config cfg = { .impersonate = "other@p.iam.gserviceaccount.com" };
	got = open_with(&cfg, &a);
	CHECK_STR(got, "the access token in TPUFORM_ACCESS_TOKEN, impersonating "
		       "other@p.iam.gserviceaccount.com");
	CHECK_STR(a ? a->imp->url : NULL, "http://127.0.0.1:9/v1/projects/-/serviceAccounts/"
					   "other@p.iam.gserviceaccount.com:generateAccessToken");
	tpf_gcp_auth_free(a);
	free(got);

	/* ... under the same policy as the URLs of a credentials file */
	setenv("TPUFORM_IAMCREDENTIALS_ENDPOINT", "https://iam.evil.example", 1);
	got = open_with(&cfg, NULL);
	CHECKF(strstr(got, "ERR: TPUFORM_IAMCREDENTIALS_ENDPOINT") &&
	       strstr(got, "not a Google IAM Credentials host"), "%s", got);
	free(got);
	unsetenv("TPUFORM_IAMCREDENTIALS_ENDPOINT");
	cfg.impersonate = "not-an-email";
	got = open_with(&cfg, NULL);
	CHECKF(strstr(got, "ERR: provider.gcp.impersonate_service_account names service account "
			   "'not-an-email', which is not an email address"), "%s", got);
	free(got);
	cfg.impersonate = "a/../b@p.iam.gserviceaccount.com";
	got = open_with(&cfg, NULL);
	CHECKF(!strncmp(got, "ERR: ", 5), "%s", got);
	free(got);
	clear_env();
}

static void test_gcp_external__quota_project(void)
{
	clear_env();
	json_t *v = ext_json();
	json_object_set_new(v, "quota_project_id", json_string("file-proj"));
	char *p = write_json("q.json", v);
	struct tpf_gcp_auth_config cfg = { .credentials = p };
	struct tpf_gcp_auth *a = NULL;
	free(open_with(&cfg, &a));
	CHECK_STR(a ? tpf_gcp_auth_quota_project(a) : NULL, "file-proj");
	CHECK_STR(a ? tpf_gcp_auth_quota_header(a) : NULL, "x-goog-user-project: file-proj");
	tpf_gcp_auth_free(a);

	setenv("GOOGLE_CLOUD_QUOTA_PROJECT", "env-proj", 1);
	free(open_with(&cfg, &a));
	CHECK_STR(a ? tpf_gcp_auth_quota_project(a) : NULL, "env-proj");
	tpf_gcp_auth_free(a);

	cfg.quota_project = "fleet-proj";
	free(open_with(&cfg, &a));
	CHECK_STR(a ? tpf_gcp_auth_quota_header(a) : NULL, "x-goog-user-project: fleet-proj");
	tpf_gcp_auth_free(a);

	setenv("GOOGLE_CLOUD_QUOTA_PROJECT", "bad\r\nX-Injected: 1", 1);
	cfg.quota_project = NULL;
	char *got = open_with(&cfg, NULL);
	CHECKF(strstr(got, "ERR: quota project") && strstr(got, "GOOGLE_CLOUD_QUOTA_PROJECT"), "%s",
	       got);
	free(got);

	/* none anywhere: no header */
	clear_env();
	setenv("TPUFORM_ACCESS_TOKEN", "ya29.X", 1);
	free(open_with(NULL, &a));
	CHECK(a && !tpf_gcp_auth_quota_header(a) && !tpf_gcp_auth_quota_project(a));
	tpf_gcp_auth_free(a);
	clear_env();
	free(p);
}

static void test_gcp_external__token_cache(void)
{
	char *t = NULL;
	double ra = 0;
	char key[16];
	tpf_gcp_auth_cache_clear();
	CHECK(!tpf_gcp_token_cache_get("k1", &t, &ra));
	tpf_gcp_token_cache_put("k1", "tok1", 10);
	CHECK(tpf_gcp_token_cache_get("k1", &t, &ra) && !strcmp(t, "tok1") && ra == 10);
	free(t);
	tpf_gcp_token_cache_put("k1", "tok2", 20);
	CHECK(tpf_gcp_token_cache_get("k1", &t, &ra) && !strcmp(t, "tok2") && ra == 20);
	free(t);
	tpf_gcp_token_cache_drop("k1", "tok1"); /* an older token: nothing to drop */
	CHECK(tpf_gcp_token_cache_get("k1", &t, &ra));
	free(t);
	tpf_gcp_token_cache_drop("k1", "tok2");
	CHECK(!tpf_gcp_token_cache_get("k1", &t, &ra));
	/* full: the least recently used entry goes */
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		tpf_gcp_token_cache_put(key, key, i);
	}
	CHECK(tpf_gcp_token_cache_get("k0", &t, &ra));
	free(t);
	tpf_gcp_token_cache_put("k8", "k8", 8);
	CHECK(tpf_gcp_token_cache_get("k0", &t, &ra));
	free(t);
	CHECK(!tpf_gcp_token_cache_get("k1", &t, &ra));
	CHECK(tpf_gcp_token_cache_get("k8", &t, &ra));
	free(t);
	tpf_gcp_auth_cache_clear();
	CHECK(!tpf_gcp_token_cache_get("k8", &t, &ra));

	/* a later client with the same credentials takes the token over;
	 * different credentials do not */
	clear_env();
	setenv("TPUFORM_ACCESS_TOKEN", "ya29.CALLER", 1);
	setenv("TPUFORM_IAMCREDENTIALS_ENDPOINT", "http://127.0.0.1:1", 1); /* never reached */
	struct tpf_gcp_auth_config cfg = { .impersonate = SA };
	struct tpf_gcp_auth *a = NULL, *b = NULL, *c = NULL;
	free(open_with(&cfg, &a));
	CHECK(a && a->cache_key[0]);
	if (a)
		tpf_gcp_token_cache_put(a->cache_key, "ya29.IMPERSONATED", 1e18);
	free(open_with(&cfg, &b));
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *tok = NULL;
	CHECK_INT(b ? tpf_gcp_auth_token(b, &tok, &d) : -1, 0);
	CHECK_STR(tok, "ya29.IMPERSONATED");
	CHECK_INT(b ? tpf_gcp_auth_fetches(b) : -1, 0);
	tpf_gcp_auth_token_free(tok);
	cfg.impersonate = "other@test-project.iam.gserviceaccount.com";
	free(open_with(&cfg, &c));
	CHECK(a && c && strcmp(a->cache_key, c->cache_key) != 0);
	setenv("TPUFORM_ACCESS_TOKEN", "ya29.ANOTHERCALLER", 1);
	tpf_gcp_auth_free(c);
	cfg.impersonate = SA;
	free(open_with(&cfg, &c));
	CHECK(a && c && strcmp(a->cache_key, c->cache_key) != 0);
	/* a 401 drops the shared token too */
	CHECK_INT(b ? tpf_gcp_auth_invalidate(b, "ya29.IMPERSONATED") : -1, 1);
	CHECK(a && !tpf_gcp_token_cache_get(a->cache_key, &tok, &ra));
	tpf_gcp_auth_free(a);
	tpf_gcp_auth_free(b);
	tpf_gcp_auth_free(c);
	tpf_diags_release(&d);
	tpf_gcp_auth_cache_clear();
	clear_env();
}

static void test_gcp_external__rfc3339(void)
{
	CHECK(tpf_parse_rfc3339("1970-01-01T00:00:00Z") == 0);
	CHECK(tpf_parse_rfc3339("2014-10-02T15:01:23Z") == 1412262083);
	CHECK(fabs(tpf_parse_rfc3339("2014-10-02T15:01:23.045123456Z") - 1412262083.045123456) < 1e-6);
	CHECK(tpf_parse_rfc3339("2014-10-02T17:01:23+02:00") == 1412262083);
	CHECK(tpf_parse_rfc3339("2014-10-02T14:31:23-00:30") == 1412262083);
	CHECK(tpf_parse_rfc3339("2014-10-02 15:01:23Z") < 0);
	CHECK(tpf_parse_rfc3339("2014-10-02T15:01:23") < 0);
	CHECK(tpf_parse_rfc3339("2014-10-02T15:01:23Zjunk") < 0);
	CHECK(tpf_parse_rfc3339("2014-10-02T15:01:23.Z") < 0);
	CHECK(tpf_parse_rfc3339(NULL) < 0);
}

static void test_gcp_external__fleet_keys(void)
{
	const char *ok = "fleet: f\nprovider:\n  gcp: { project: p, impersonate_service_account: "
			 SA ", quota_project: billing-proj }\nrun: x\ngroups: [{ name: a, "
			 "accelerator_type: v2-8, runtime_version: r, zones: [z], count: 1 }]\n";
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_fleet_parse(&f, "fleet.yaml", ok, strlen(ok), &d), 0);
	CHECK_STR(f.gcp.impersonate_service_account, SA);
	CHECK_STR(f.gcp.quota_project, "billing-proj");
	tpf_fleet_release(&f);
	tpf_diags_release(&d);

	const char *bad = "fleet: f\nprovider:\n  gcp: { project: p, impersonate_service_account: "
			  "deployer, quota_project: \"Bad Proj\" }\nrun: x\ngroups: [{ name: a, "
			  "accelerator_type: v2-8, runtime_version: r, zones: [z], count: 1 }]\n";
	CHECK(tpf_fleet_parse(&f, "fleet.yaml", bad, strlen(bad), &d) < 0);
	int seen_sa = 0, seen_q = 0;
	for (size_t i = 0; i < d.n; i++) {
		seen_sa |= strstr(d.items[i].summary, "'impersonate_service_account' must be a "
						      "service account email") != NULL;
		seen_q |= strstr(d.items[i].summary, "'quota_project' must be a Google Cloud "
						     "project ID") != NULL;
	}
	CHECK(seen_sa);
	CHECK(seen_q);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

int main(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_gcp_http_opts o = { 1, 1, 1, 0 };
	tmpdir = unit_tmpdir();
	tpf_gcp_settings_default(&settings);
	if (tpf_gcp_http_new(&http, &o, &d) < 0)
		return 1;
	RUN(test_gcp_external__url_policy);
	RUN(test_gcp_external__sources);
	RUN(test_gcp_external__refusals);
	RUN(test_gcp_external__subject_token);
	RUN(test_gcp_external__impersonation_settings);
	RUN(test_gcp_external__quota_project);
	RUN(test_gcp_external__token_cache);
	RUN(test_gcp_external__rfc3339);
	RUN(test_gcp_external__fleet_keys);
	tpf_gcp_http_free(http);
	tpf_remove_tree(tmpdir, &d);
	free(tmpdir);
	tpf_diags_release(&d);
	return unit_done();
}
