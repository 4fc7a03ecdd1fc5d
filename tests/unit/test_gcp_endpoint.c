/*
 * Cloud TPU client: endpoint policy (https anywhere, http only to loopback).
 */
#include "google/gcp_endpoint.h"
#include "tests/unit/unit.h"
#include "util/diag.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

static void test_gcp_endpoint__loopback(void)
{
	CHECK(tpf_gcp_host_is_loopback("127.0.0.1"));
	CHECK(tpf_gcp_host_is_loopback("127.1.2.3"));
	CHECK(tpf_gcp_host_is_loopback("::1"));
	CHECK(tpf_gcp_host_is_loopback("[::1]"));
	CHECK(tpf_gcp_host_is_loopback("localhost"));
	CHECK(tpf_gcp_host_is_loopback("LocalHost"));
	CHECK(!tpf_gcp_host_is_loopback("128.0.0.1"));
	CHECK(!tpf_gcp_host_is_loopback("10.0.0.1"));
	CHECK(!tpf_gcp_host_is_loopback("::2"));
	CHECK(!tpf_gcp_host_is_loopback("localhost.example.com"));
	CHECK(!tpf_gcp_host_is_loopback("127.0.0.1.nip.io"));
	CHECK(!tpf_gcp_host_is_loopback(""));
	CHECK(!tpf_gcp_host_is_loopback(NULL));
}

struct ep_case {
	const char *url;
	int ok;
	const char *normalized;
	const char *says; /* substring of the diagnostic */
};

static const struct ep_case cases[] = {
	{ "https://tpu.googleapis.com", 1, "https://tpu.googleapis.com", NULL },
	{ "https://tpu.googleapis.com/", 1, "https://tpu.googleapis.com", NULL },
	{ "https://private.example.com:8443/prefix/", 1, "https://private.example.com:8443/prefix", NULL },
	{ "http://127.0.0.1:8080", 1, "http://127.0.0.1:8080", NULL },
	{ "http://127.9.9.9:1/", 1, "http://127.9.9.9:1", NULL },
	{ "http://localhost:9000", 1, "http://localhost:9000", NULL },
	{ "http://[::1]:9000", 1, "http://[::1]:9000", NULL },
	{ "http://tpu.googleapis.com", 0, NULL, "http is allowed only to loopback hosts" },
	{ "http://10.1.2.3:8080", 0, NULL, "http is allowed only to loopback hosts" },
	{ "http://127.0.0.1.nip.io", 0, NULL, "http is allowed only to loopback hosts" },
	{ "ftp://127.0.0.1/", 0, NULL, "has scheme 'ftp'" },
	{ "tpu.googleapis.com", 0, NULL, "not a valid URL" },
	{ "https://user:pw@tpu.googleapis.com", 0, NULL, "user part" },
	{ "https://tpu.googleapis.com/?x=1", 0, NULL, "query" },
	{ "", 0, NULL, "not a valid URL" },
};

static void test_gcp_endpoint__policy(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tpf_diags d = TPF_DIAGS_INIT;
		char *norm = NULL;
		int rc = tpf_gcp_endpoint_check(cases[i].url, "endpoint", &norm, &d);
		CHECKF((rc == 0) == cases[i].ok, "'%s': rc %d", cases[i].url, rc);
		if (cases[i].ok) {
			CHECK_STR(norm, cases[i].normalized);
			CHECK_INT(d.n, 0);
		} else {
			CHECK(norm == NULL);
			CHECKF(d.n == 1 && strstr(d.items[0].summary, cases[i].says),
			       "'%s': diagnostic '%s'", cases[i].url, d.n ? d.items[0].summary : "");
		}
		free(norm);
		tpf_diags_release(&d);
	}
}

static void test_gcp_endpoint__resolve_order(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *u = NULL;
	unsetenv("TPUFORM_TPU_ENDPOINT");
	CHECK_INT(tpf_gcp_endpoint_resolve(NULL, &u, &d), 0);
	CHECK_STR(u, "https://tpu.googleapis.com");
	free(u);
	setenv("TPUFORM_TPU_ENDPOINT", "http://127.0.0.1:4444", 1);
	CHECK_INT(tpf_gcp_endpoint_resolve(NULL, &u, &d), 0);
	CHECK_STR(u, "http://127.0.0.1:4444");
	free(u);
	/* the fleet file wins over the environment */
	CHECK_INT(tpf_gcp_endpoint_resolve("https://tpu.example.com/", &u, &d), 0);
	CHECK_STR(u, "https://tpu.example.com");
	free(u);
	u = NULL;
	setenv("TPUFORM_TPU_ENDPOINT", "http://192.168.1.5:4444", 1);
	CHECK_INT(tpf_gcp_endpoint_resolve(NULL, &u, &d), TPF_ERROR);
	CHECK(u == NULL);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "TPUFORM_TPU_ENDPOINT 'http://192.168.1.5:4444'"));
	unsetenv("TPUFORM_TPU_ENDPOINT");
	tpf_diags_release(&d);
}

int main(void)
{
	RUN(test_gcp_endpoint__loopback);
	RUN(test_gcp_endpoint__policy);
	RUN(test_gcp_endpoint__resolve_order);
	curl_global_cleanup();
	return unit_done();
}
