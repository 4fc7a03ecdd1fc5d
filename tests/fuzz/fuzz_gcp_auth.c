/*
 * OAuth2 and STS answers and the credentials files behind them
 * (google/gcp_auth_internal.h). Each input is taken as:
 *   - a token endpoint's 2xx answer (RFC 6749 section 5.1; the STS token
 *     exchange of RFC 8693 answers in the same shape): tpf_gcp_token_parse;
 *   - an IAM Credentials generateAccessToken answer ({"accessToken",
 *     "expireTime"}): tpf_gcp_impersonate_parse;
 *   - a subject token from a workload identity provider, as text and as
 *     JSON with a named field: tpf_gcp_subject_token_parse;
 *   - a credentials file of any "type" (service_account, authorized_user,
 *     external_account): tpf_gcp_auth_load_file reads it from a memfd, so
 *     nothing is written to disk and no request is sent.
 * Cloud Storage answers get a harness of their own (tests/fuzz/README.md).
 */
#include "tests/fuzz/fuzz.h"
#include "google/gcp_auth_internal.h"
#include "util/diag.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static void token_answers(const uint8_t *data, size_t size)
{
	struct tpf_gcp_token_request t = { .what = TPF_BUF_INIT };
	struct tpf_gcp_response rs = TPF_GCP_RESPONSE_INIT;
	struct tpf_gcp_impersonation imp = { .email = "sa@p.iam.gserviceaccount.com",
					     .lifetime = 3600, .from = "fuzz" };
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *token = NULL;
	double lifetime = -1;
	tpf_buf_adds(&t.what, "get an access token from fuzz");
	rs.status = 200;
	tpf_buf_add(&rs.body, data, size);
	if (tpf_gcp_token_parse(&t, &rs, &token, &lifetime, &d) == 0 && (!token || lifetime < 0))
		abort(); /* success promises a token and a lifetime */
	tpf_gcp_wipe_free(token);
	token = NULL;
	if (tpf_gcp_impersonate_parse(&t, &rs, &imp, 1.7e9, &token, &lifetime, &d) == 0 &&
	    (!token || lifetime < 0 || lifetime > 3600))
		abort();
	tpf_gcp_wipe_free(token);
	tpf_gcp_response_release(&rs);
	tpf_gcp_token_request_release(&t);
	tpf_diags_release(&d);
}

static void subject_tokens(const uint8_t *data, size_t size)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *out = NULL;
	tpf_gcp_subject_token_parse((const char *)data, size, NULL, "fuzz", &out, &d);
	tpf_gcp_wipe_free(out);
	out = NULL;
	tpf_gcp_subject_token_parse((const char *)data, size, "id_token", "fuzz", &out, &d);
	tpf_gcp_wipe_free(out);
	tpf_diags_release(&d);
}

static void credentials_file(const uint8_t *data, size_t size)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	int fd = memfd_create("fuzz-credentials", 0);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct tpf_gcp_auth *a = xcalloc(1, sizeof(*a));
	pthread_mutex_init(&a->mu, NULL);
	pthread_mutex_init(&a->refresh_mu, NULL);
	tpf_gcp_auth_load_file(a, path, "fuzz", &d);
	tpf_gcp_auth_free(a);
	close(fd);
	tpf_diags_release(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	token_answers(data, size);
	subject_tokens(data, size);
	credentials_file(data, size);
	return 0;
}
