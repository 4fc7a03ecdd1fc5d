/*
 * Security checks that need no server: the warning for secret files open to
 * other users (util/fs.h tpf_warn_if_readable_by_others, as OpenSSH warns
 * "UNPROTECTED PRIVATE KEY FILE"), raised where tpuform reads a Google
 * credentials file, and the redaction of secrets from workers' last log
 * lines (engine/workers/provision.h tpf_job_facts_redact).
 */
#include "engine/workers/provision.h"
#include "google/gcp_auth.h"
#include "plan/plan.h"
#include "providers/gcp/gcp_oslogin.h"
#include "tests/unit/unit.h"
#include "util/fs.h"
#include "util/kv.h"
#include "util/redact.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *file_with_mode(const char *dir, const char *name, const char *text, mode_t mode)
{
	char *p = xasprintf("%s/%s", dir, name);
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_write_file_atomic(p, text, strlen(text), 0600, &d);
	tpf_diags_release(&d);
	chmod(p, mode);
	return p;
}

/* The warnings in d mentioning `needle`. */
static int warnings_with(const struct tpf_diags *d, const char *needle)
{
	int n = 0;
	for (size_t i = 0; i < d->n; i++)
		n += d->items[i].severity == TPF_SEV_WARNING && strstr(d->items[i].summary, needle);
	return n;
}

static void test_security__warn_modes(void)
{
	char *dir = unit_tmpdir();
	static const struct { mode_t mode; int warns; } cases[] = {
		{ 0600, 0 }, { 0400, 0 }, { 0700, 0 }, { 0644, 1 }, { 0640, 1 },
		{ 0604, 1 }, { 0620, 1 }, { 0602, 1 }, { 0610, 1 }, { 0666, 1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char name[32];
		snprintf(name, sizeof(name), "key-%zu", i);
		char *p = file_with_mode(dir, name, "secret\n", cases[i].mode);
		struct tpf_diags d = TPF_DIAGS_INIT;
		int got = tpf_warn_if_readable_by_others(p, "ssh.private_key", &d);
		CHECKF(got == cases[i].warns, "mode %04o: got %d", (unsigned)cases[i].mode, got);
		CHECK_INT(d.n, cases[i].warns);
		CHECK_INT(tpf_diags_errors(&d), 0);
		if (d.n) {
			char *want = xasprintf("Permissions %04o for '%s' (from ssh.private_key) are too open",
					       (unsigned)cases[i].mode, p);
			CHECKF(strstr(d.items[0].summary, want), "%s", d.items[0].summary);
			CHECK(strstr(d.items[0].summary, "UNPROTECTED PRIVATE KEY FILE"));
			char *hint = xasprintf("chmod 600 %s", p);
			CHECK_STR(d.items[0].detail, hint);
			free(hint);
			free(want);
		}
		tpf_diags_release(&d);
		free(p);
	}
	free(dir);
}

static void test_security__warn_once_and_not_for_others(void)
{
	char *dir = unit_tmpdir();
	char *p = file_with_mode(dir, "open.json", "{}", 0644);
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_warn_if_readable_by_others(p, "GOOGLE_APPLICATION_CREDENTIALS", &d), 1);
	/* watch reopens its provider every round: one warning per process */
	CHECK_INT(tpf_warn_if_readable_by_others(p, "GOOGLE_APPLICATION_CREDENTIALS", &d), 0);
	CHECK_INT(d.n, 1);
	char *missing = xasprintf("%s/missing", dir);
	CHECK_INT(tpf_warn_if_readable_by_others(missing, "ssh.private_key", &d), 0);
	CHECK_INT(tpf_warn_if_readable_by_others(dir, "ssh.private_key", &d), 0); /* a directory */
	CHECK_INT(tpf_warn_if_readable_by_others(NULL, "ssh.private_key", &d), 0);
	CHECK_INT(d.n, 1);
	tpf_diags_release(&d);
	free(missing);
	free(p);
	free(dir);
}

static const char user_json[] =
	"{\"type\":\"authorized_user\",\"client_id\":\"cid\",\"client_secret\":\"CS\","
	"\"refresh_token\":\"RT\"}";

/* Opening the credentials in `path` (from `env`, or the fleet file when
 * env is NULL): 0 or TPF_ERROR, the diagnostics in d. */
static int open_auth(const char *path, const char *env, struct tpf_diags *d)
{
	unsetenv("TPUFORM_ACCESS_TOKEN");
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	if (env)
		setenv(env, path, 1);
	struct tpf_gcp_settings s;
	tpf_gcp_settings_default(&s);
	struct tpf_gcp_http_opts o = { 1, 1, 1, 0 };
	struct tpf_gcp_http *h = NULL;
	struct tpf_gcp_auth *a = NULL;
	struct tpf_gcp_auth_config cfg = { .credentials = env ? NULL : path };
	int rc = tpf_gcp_http_new(&h, &o, d);
	if (rc == 0)
		rc = tpf_gcp_auth_open(&a, h, &s, &cfg, d);
	tpf_gcp_auth_free(a);
	tpf_gcp_http_free(h);
	return rc;
}

static void test_security__credentials_files_warn(void)
{
	char *dir = unit_tmpdir();
	char *gac = file_with_mode(dir, "gac.json", user_json, 0644);
	char *cfg = file_with_mode(dir, "cfg.json", user_json, 0640);
	char *tight = file_with_mode(dir, "tight.json", user_json, 0600);
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(open_auth(gac, "GOOGLE_APPLICATION_CREDENTIALS", &d), 0);
	CHECK_INT(warnings_with(&d, "(from GOOGLE_APPLICATION_CREDENTIALS) are too open"), 1);
	tpf_diags_release(&d);
	CHECK_INT(open_auth(cfg, NULL, &d), 0);
	CHECK_INT(warnings_with(&d, "Permissions 0640"), 1);
	CHECK_INT(warnings_with(&d, "(from provider.gcp.credentials)"), 1);
	tpf_diags_release(&d);
	CHECK_INT(open_auth(tight, "GOOGLE_APPLICATION_CREDENTIALS", &d), 0);
	CHECK_INT(d.n, 0);
	tpf_diags_release(&d);
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	free(gac);
	free(cfg);
	free(tight);
	free(dir);
}

static void test_security__last_log_redacted(void)
{
	struct tpf_job_facts f = { 0 };
	f.items = xcalloc(3, sizeof(*f.items));
	f.n = f.alloc = 3;
	f.items[0].node = xstrdup("n");
	f.items[0].last_log = xstrdup("token=hunter2-XYZ and again hunter2-XYZ.");
	f.items[1].node = xstrdup("n");
	f.items[1].last_log = NULL;
	f.items[2].node = xstrdup("n");
	f.items[2].last_log = xstrdup("short abc stays"); /* under 4 bytes: not redacted */
	struct tpf_kvlist secrets = { 0 };
	tpf_kvlist_set(&secrets, "TOKEN", "hunter2-XYZ");
	tpf_kvlist_set(&secrets, "TINY", "abc");
	tpf_job_facts_redact(&f, &secrets);
	CHECK_STR(f.items[0].last_log, "token=*** and again ***.");
	CHECK(f.items[1].last_log == NULL);
	CHECK_STR(f.items[2].last_log, "short abc stays");
	tpf_kvlist_release(&secrets);
	tpf_job_facts_release(&f);
}

/* The one redaction (util/redact.h): every occurrence becomes "***",
 * short or absent secrets are left alone, and a list applies each value. */
static void test_security__redact_util(void)
{
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_buf_adds(&b, "Bearer ya29.SECRET ya29.SECRETya29.SECRET end");
	tpf_redact(&b, "ya29.SECRET");
	CHECK_STR(b.buf, "Bearer *** ****** end");
	tpf_redact(&b, "end"); /* under TPF_REDACT_MIN bytes */
	tpf_redact(&b, NULL);
	CHECK_STR(b.buf, "Bearer *** ****** end");
	struct tpf_kvlist secrets = { 0 };
	tpf_kvlist_set(&secrets, "A", "Bearer");
	tpf_kvlist_set(&secrets, "B", "");
	tpf_redact_kv(&b, &secrets);
	CHECK_STR(b.buf, "*** *** ****** end");
	tpf_kvlist_release(&secrets);
	tpf_buf_release(&b);
	struct tpf_buf e = TPF_BUF_INIT; /* the shared empty string is never written */
	tpf_redact(&e, "ya29.SECRET");
	CHECK_STR(e.buf, "");
	unsigned char w[5] = { 1, 2, 3, 4, 5 };
	tpf_wipe(w, sizeof(w));
	CHECK(w[0] == 0 && w[4] == 0);
	tpf_wipe(NULL, 3);
}

/* The other Google endpoints (OS Login, Compute, tokeninfo) follow the TPU
 * endpoint's policy: https, or http to loopback only. */
static void test_security__service_endpoints_refuse_http(void)
{
	static const char *const envs[] = { "TPUFORM_OSLOGIN_ENDPOINT", "TPUFORM_COMPUTE_ENDPOINT",
					    "TPUFORM_TOKENINFO_ENDPOINT" };
	for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++) {
		struct tpf_diags d = TPF_DIAGS_INIT;
		char *out = NULL;
		setenv(envs[i], "http://192.0.2.1", 1);
		CHECK_INT(tpf_gcp_service_endpoint(envs[i], "https://x.googleapis.com", envs[i], &out, &d),
			  TPF_ERROR);
		CHECKF(d.n && strstr(d.items[0].summary, "http is allowed only to loopback hosts"), "%s",
		       d.n ? d.items[0].summary : "(none)");
		CHECK(out == NULL);
		tpf_diags_release(&d);
		setenv(envs[i], "http://127.0.0.1:9", 1);
		CHECK_INT(tpf_gcp_service_endpoint(envs[i], "https://x.googleapis.com", envs[i], &out, &d), 0);
		CHECK_STR(out, "http://127.0.0.1:9");
		free(out);
		out = NULL;
		setenv(envs[i], "https://private.googleapis.com", 1);
		CHECK_INT(tpf_gcp_service_endpoint(envs[i], "https://x.googleapis.com", envs[i], &out, &d), 0);
		free(out);
		unsetenv(envs[i]);
		tpf_diags_release(&d);
	}
}

int main(void)
{
	RUN(test_security__service_endpoints_refuse_http);
	RUN(test_security__warn_modes);
	RUN(test_security__warn_once_and_not_for_others);
	RUN(test_security__credentials_files_warn);
	RUN(test_security__last_log_redacted);
	RUN(test_security__redact_util);
	return unit_done();
}
