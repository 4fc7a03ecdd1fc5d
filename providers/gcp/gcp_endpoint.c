#include "providers/gcp/gcp_endpoint.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int tpf_gcp_host_is_loopback(const char *host)
{
	if (!host || !*host)
		return 0;
	if (!strcasecmp(host, "localhost") || !strcasecmp(host, "localhost."))
		return 1;
	char buf[64];
	size_t n = strlen(host);
	if (host[0] == '[' && n >= 2 && host[n - 1] == ']') {
		if (n - 2 >= sizeof(buf))
			return 0;
		memcpy(buf, host + 1, n - 2);
		buf[n - 2] = '\0';
		host = buf;
	}
	struct in_addr a4;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	struct in6_addr a6;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return 0;
}

int tpf_gcp_endpoint_check(const char *url, const char *what, char **normalized,
			   struct tpf_diags *d)
{
	int rc = TPF_ERROR;
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *part = NULL;
	if (!u)
		return tpf_error(d, "out of memory parsing %s", what);
	if (!url || !*url || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
		tpf_errorx(d, NULL, "write it like https://tpu.googleapis.com",
			   "%s '%s' is not a valid URL: expected https://HOST[:PORT][/PATH]",
			   what, url ? url : "");
		goto done;
	}
	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		tpf_error(d, "%s '%s' has no scheme or host: expected https://HOST[:PORT]", what, url);
		goto done;
	}
	if (curl_url_get(u, CURLUPART_QUERY, &part, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_FRAGMENT, &part, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_USER, &part, 0) == CURLUE_OK) {
		tpf_error(d, "%s '%s' has a query, fragment or user part: expected https://HOST[:PORT][/PATH]",
			  what, url);
		goto done;
	}
	if (!strcasecmp(scheme, "http")) {
		if (!tpf_gcp_host_is_loopback(host)) {
			tpf_errorx(d, NULL,
				   "use https://, or run the emulator on 127.0.0.1; tokens must "
				   "never travel in clear text",
				   "%s '%s' uses plain http to host '%s': http is allowed only to "
				   "loopback hosts (127.0.0.0/8, ::1, localhost)", what, url, host);
			goto done;
		}
	} else if (strcasecmp(scheme, "https")) {
		tpf_error(d, "%s '%s' has scheme '%s': expected https (or http to a loopback host)",
			  what, url, scheme);
		goto done;
	}
	if (normalized) {
		size_t n = strlen(url);
		while (n > 0 && url[n - 1] == '/')
			n--;
		*normalized = xstrndup(url, n);
	}
	rc = 0;
done:
	curl_free(scheme);
	curl_free(host);
	curl_free(part);
	curl_url_cleanup(u);
	return rc;
}

int tpf_gcp_endpoint_resolve(const char *configured, char **out, struct tpf_diags *d)
{
	const char *url = configured;
	const char *what = "provider.gcp.endpoint";
	if (!url || !*url) {
		url = getenv("TPUFORM_TPU_ENDPOINT");
		what = "TPUFORM_TPU_ENDPOINT";
	}
	if (!url || !*url) {
		url = TPF_GCP_DEFAULT_ENDPOINT;
		what = "endpoint";
	}
	return tpf_gcp_endpoint_check(url, what, out, d);
}
