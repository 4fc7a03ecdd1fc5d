/*
 * Cloud TPU client: token cache expiry, the ADC search order and
 * credentials-file errors (without a server; the token flows themselves are
 * exercised against the emulator in test_gcp_e2e.c).
 */
#include "google/gcp_auth.h"
#include "tests/unit/unit.h"
#include "util/fs.h"
#include "util/xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_gcp_auth__refresh_at(void)
{
	/* an hour-long token is replaced 4 minutes early */
	CHECK(tpf_gcp_token_refresh_at(100, 3600, 240) == 100 + 3600 - 240);
	/* a short-lived one is used for at least half its life */
	CHECK(tpf_gcp_token_refresh_at(100, 60, 240) == 100 + 30);
	CHECK(tpf_gcp_token_refresh_at(100, 10, 0) == 110);
	CHECK(tpf_gcp_token_refresh_at(0, 4, 1) == 3);
	CHECK(tpf_gcp_token_refresh_at(5, 0, 240) == 5);
	CHECK(isinf(tpf_gcp_token_refresh_at(0, INFINITY, 240)));

	double ra = tpf_gcp_token_refresh_at(1000, 3600, 240);
	CHECK(tpf_gcp_token_fresh("t", ra, 1000));
	CHECK(tpf_gcp_token_fresh("t", ra, ra - 0.001));
	CHECK(!tpf_gcp_token_fresh("t", ra, ra));
	CHECK(!tpf_gcp_token_fresh("t", ra, 1000 + 3600)); /* expired */
	CHECK(!tpf_gcp_token_fresh(NULL, ra, 1000));
	CHECK(!tpf_gcp_token_fresh("", ra, 1000));
	CHECK(tpf_gcp_token_fresh("t", INFINITY, 1e12));
}

static void clear_env(void)
{
	unsetenv("TPUFORM_ACCESS_TOKEN");
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	unsetenv("CLOUDSDK_CONFIG");
	unsetenv("GCE_METADATA_HOST");
	unsetenv("GCE_METADATA_ROOT");
}

static char *write_tmp(const char *dir, const char *name, const char *text)
{
	char *p = xasprintf("%s/%s", dir, name);
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_write_file_atomic(p, text, strlen(text), 0600, &d);
	tpf_diags_release(&d);
	return p;
}

static const char sa_json[] =
	"{\"type\":\"service_account\",\"project_id\":\"p\",\"private_key_id\":\"k1\","
	"\"private_key\":\"-----BEGIN PRIVATE KEY-----\\nSECRETKEYMATERIAL\\n-----END PRIVATE KEY-----\\n\","
	"\"client_email\":\"sa@p.iam.gserviceaccount.com\",\"token_uri\":\"http://127.0.0.1:9/token\"}";
static const char user_json[] =
	"{\"type\":\"authorized_user\",\"client_id\":\"cid\",\"client_secret\":\"CLIENTSECRETXYZ\","
	"\"refresh_token\":\"REFRESHTOKENXYZ\"}";

/* Opens with the current environment and returns the source description
 * (or the first diagnostic with "ERR: " in front). */
static char *source_of(struct tpf_gcp_http *h, const struct tpf_gcp_settings *s, const char *cred)
{
	struct tpf_gcp_auth *a = NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *r;
	struct tpf_gcp_auth_config cfg = { .credentials = cred };
	if (tpf_gcp_auth_open(&a, h, s, &cfg, &d) == 0)
		r = xstrdup(tpf_gcp_auth_source(a));
	else
		r = xasprintf("ERR: %s", d.n ? d.items[0].summary : "(no diagnostic)");
	tpf_gcp_auth_free(a);
	tpf_diags_release(&d);
	return r;
}

static void test_gcp_auth__adc_order(void)
{
	char *dir = unit_tmpdir();
	char *sa = write_tmp(dir, "sa.json", sa_json);
	char *user = write_tmp(dir, "user.json", user_json);
	char *gdir = xasprintf("%s/gcloud", dir);
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_mkdir_p(gdir, 0700, &d);
	char *adc = write_tmp(gdir, "application_default_credentials.json", user_json);
	struct tpf_gcp_settings s;
	tpf_gcp_settings_default(&s);
	struct tpf_gcp_http_opts o = { 1, 1, 1, 0 };
	struct tpf_gcp_http *h = NULL;
	CHECK_INT(tpf_gcp_http_new(&h, &o, &d), 0);
	char *got;
	char *want;

	clear_env();
	setenv("HOME", dir, 1); /* no ~/.config/gcloud there */
	got = source_of(h, &s, NULL);
	CHECK_STR(got, "the metadata server 'metadata.google.internal'");
	free(got);

	setenv("GCE_METADATA_HOST", "127.0.0.1:8999", 1);
	got = source_of(h, &s, NULL);
	CHECK_STR(got, "the metadata server '127.0.0.1:8999'");
	free(got);

	setenv("CLOUDSDK_CONFIG", gdir, 1);
	got = source_of(h, &s, NULL);
	want = xasprintf("authorized user credentials '%s'", adc);
	CHECK_STR(got, want);
	free(want);
	free(got);

	setenv("GOOGLE_APPLICATION_CREDENTIALS", sa, 1);
	got = source_of(h, &s, NULL);
	want = xasprintf("service account key '%s' (sa@p.iam.gserviceaccount.com)", sa);
	CHECK_STR(got, want);
	free(want);
	free(got);

	/* provider.gcp.credentials beats the environment */
	got = source_of(h, &s, user);
	want = xasprintf("authorized user credentials '%s'", user);
	CHECK_STR(got, want);
	free(want);
	free(got);

	/* TPUFORM_ACCESS_TOKEN beats everything, and is used as is */
	setenv("TPUFORM_ACCESS_TOKEN", "ya29.READYTOKEN", 1);
	got = source_of(h, &s, user);
	CHECK_STR(got, "the access token in TPUFORM_ACCESS_TOKEN");
	free(got);
	struct tpf_gcp_auth *a = NULL;
	CHECK_INT(tpf_gcp_auth_open(&a, h, &s, NULL, &d), 0);
	char *tok = NULL;
	CHECK_INT(tpf_gcp_auth_token(a, &tok, &d), 0);
	CHECK_STR(tok, "ya29.READYTOKEN");
	CHECK_INT(tpf_gcp_auth_invalidate(a, tok), 0); /* cannot be refreshed */
	tpf_gcp_auth_token_free(tok);
	CHECK_INT(tpf_gcp_auth_fetches(a), 0);
	tpf_gcp_auth_free(a);
	CHECK_INT(d.n, 0);

	clear_env();
	free(adc);
	free(gdir);
	free(sa);
	free(user);
	tpf_gcp_http_free(h);
	tpf_remove_tree(dir, &d);
	free(dir);
	tpf_diags_release(&d);
}

static void test_gcp_auth__bad_files(void)
{
	char *dir = unit_tmpdir();
	struct tpf_gcp_settings s;
	tpf_gcp_settings_default(&s);
	struct tpf_gcp_http_opts o = { 1, 1, 1, 0 };
	struct tpf_gcp_http *h = NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_gcp_http_new(&h, &o, &d), 0);
	clear_env();

	struct {
		const char *name, *text, *says;
	} cases[] = {
		{ "other.json", "{\"type\":\"impersonated_service_account\"}",
		  "has type 'impersonated_service_account': expected 'service_account', "
		  "'authorized_user' or 'external_account'" },
		{ "notjson.json", "{\"type\":\"service_account\", \"private_key\": \"SECRETKEYMATERIAL",
		  "is not a JSON object" },
		{ "nokey.json", "{\"type\":\"service_account\",\"client_email\":\"a@b\"}",
		  "without 'private_key'" },
		{ "user.json", "{\"type\":\"authorized_user\",\"client_id\":\"x\",\"client_secret\":\"CLIENTSECRETXYZ\"}",
		  "without client_id, client_secret or refresh_token" },
		{ "http.json",
		  "{\"type\":\"service_account\",\"client_email\":\"a@b\",\"private_key\":\"SECRETKEYMATERIAL\","
		  "\"token_uri\":\"http://oauth.example.com/token\"}",
		  "token_uri 'http://oauth.example.com/token' uses plain http" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *p = write_tmp(dir, cases[i].name, cases[i].text);
		char *got = source_of(h, &s, p);
		CHECKF(strstr(got, cases[i].says) != NULL, "%s: '%s'", cases[i].name, got);
		CHECKF(!strstr(got, "SECRETKEYMATERIAL") && !strstr(got, "CLIENTSECRETXYZ"),
		       "%s leaks a secret: '%s'", cases[i].name, got);
		free(got);
		free(p);
	}
	char *missing = xasprintf("%s/nope.json", dir);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", missing, 1);
	char *got = source_of(h, &s, NULL);
	char *want = xasprintf("ERR: credentials file '%s' (from GOOGLE_APPLICATION_CREDENTIALS) does not exist",
			       missing);
	CHECK_STR(got, want);
	free(want);
	free(got);
	free(missing);
	clear_env();
	tpf_gcp_http_free(h);
	tpf_remove_tree(dir, &d);
	free(dir);
	tpf_diags_release(&d);
}

static void test_gcp_auth__metadata_unreachable(void)
{
	struct tpf_gcp_settings s;
	tpf_gcp_settings_default(&s);
	s.tries = 2;
	s.retry_base = 0.01;
	struct tpf_gcp_http_opts o = { 1, 1, 2, 0 };
	struct tpf_gcp_http *h = NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_gcp_http_new(&h, &o, &d), 0);
	clear_env();
	setenv("HOME", "/nonexistent", 1);
	setenv("GCE_METADATA_HOST", "127.0.0.1:1", 1); /* nothing listens on port 1 */
	struct tpf_gcp_auth *a = NULL;
	CHECK_INT(tpf_gcp_auth_open(&a, h, &s, NULL, &d), 0);
	char *tok = NULL;
	int rc = a ? tpf_gcp_auth_token(a, &tok, &d) : TPF_ERROR;
	CHECK_INT(rc, TPF_ETRANSIENT);
	CHECK(tok == NULL);
	CHECK(d.n == 1 && strstr(d.items[0].summary,
				 "get an access token from the metadata server '127.0.0.1:1'"));
	tpf_gcp_auth_free(a);
	tpf_gcp_http_free(h);
	clear_env();
	tpf_diags_release(&d);
}

int main(void)
{
	RUN(test_gcp_auth__refresh_at);
	RUN(test_gcp_auth__adc_order);
	RUN(test_gcp_auth__bad_files);
	RUN(test_gcp_auth__metadata_unreachable);
	return unit_done();
}
