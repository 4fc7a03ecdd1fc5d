#include "google/gcp_endpoint.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <regex.h>
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

/* One DNS label: no dot, slash, backslash or space (the "[^\.\s\/\\]+" of
 * the Go and Java patterns). */
#define LABEL "[^./\\[:space:]]+"

static const char *const sts_hosts[] = {
	"^" LABEL "\\.sts\\.googleapis\\.com$",
	"^sts\\.googleapis\\.com$",
	"^sts\\." LABEL "\\.googleapis\\.com$",
	"^" LABEL "-sts\\.googleapis\\.com$",
	"^sts\\." LABEL "\\.rep\\.googleapis\\.com$",
	NULL,
};
static const char *const iam_hosts[] = {
	"^" LABEL "\\.iamcredentials\\.googleapis\\.com$",
	"^iamcredentials\\.googleapis\\.com$",
	"^iamcredentials\\." LABEL "\\.googleapis\\.com$",
	"^" LABEL "-iamcredentials\\.googleapis\\.com$",
	"^iamcredentials\\." LABEL "\\.rep\\.googleapis\\.com$",
	NULL,
};

int tpf_gcp_google_host_ok(const char *host, enum tpf_gcp_cred_url kind)
{
	const char *const *pats = kind == TPF_GCP_URL_STS ? sts_hosts
				  : kind == TPF_GCP_URL_IAMCREDENTIALS ? iam_hosts : NULL;
	int ok = 0;
	for (size_t i = 0; host && pats && pats[i] && !ok; i++) {
		regex_t re;
		if (regcomp(&re, pats[i], REG_EXTENDED | REG_ICASE | REG_NOSUB))
			continue;
		ok = regexec(&re, host, 0, NULL, 0) == 0;
		regfree(&re);
	}
	return ok;
}

static const char *cred_url_hosts(enum tpf_gcp_cred_url kind)
{
	return kind == TPF_GCP_URL_STS
		       ? "sts.googleapis.com (or a regional or private form such as "
			 "sts.us-east7.rep.googleapis.com)"
		       : "iamcredentials.googleapis.com (or a regional or private form such as "
			 "iamcredentials.us-east7.rep.googleapis.com)";
}

/* The parts of a URL that the policy looks at; curl_free'd by the caller. */
struct url_parts {
	char *scheme, *host, *user, *query, *fragment;
};

static int url_split(const char *url, struct url_parts *p)
{
	CURLU *u = curl_url();
	int rc = -1;
	memset(p, 0, sizeof(*p));
	if (u && url && *url && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, &p->scheme, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &p->host, 0) == CURLUE_OK) {
		curl_url_get(u, CURLUPART_USER, &p->user, 0);
		curl_url_get(u, CURLUPART_QUERY, &p->query, 0);
		curl_url_get(u, CURLUPART_FRAGMENT, &p->fragment, 0);
		rc = 0;
	}
	curl_url_cleanup(u);
	return rc;
}

static void url_parts_free(struct url_parts *p)
{
	curl_free(p->scheme);
	curl_free(p->host);
	curl_free(p->user);
	curl_free(p->query);
	curl_free(p->fragment);
}

int tpf_gcp_credential_url_check(const char *url, enum tpf_gcp_cred_url kind, const char *what,
				 struct tpf_diags *d)
{
	struct url_parts p;
	int rc = TPF_ERROR;
	if (url_split(url, &p) < 0) {
		tpf_error(d, "%s '%s' is not a valid URL: expected https://HOST/PATH", what,
			  url ? url : "");
		goto done;
	}
	int loopback = tpf_gcp_host_is_loopback(p.host);
	if (p.user || p.fragment || (p.query && kind != TPF_GCP_URL_SOURCE)) {
		tpf_error(d, "%s '%s' has a %s part: expected https://HOST/PATH", what, url,
			  p.user ? "user:password" : p.fragment ? "fragment" : "query");
	} else if (strcasecmp(p.scheme, "https") && !(loopback && !strcasecmp(p.scheme, "http"))) {
		tpf_errorx(d, NULL,
			   "tokens must never travel in clear text: use https (http is allowed "
			   "only to loopback hosts, for an emulator)",
			   "%s '%s' uses scheme '%s' with host '%s'", what, url, p.scheme, p.host);
	} else if (!loopback && kind != TPF_GCP_URL_SOURCE && !tpf_gcp_google_host_ok(p.host, kind)) {
		tpf_errorx(d, NULL,
			   "a credentials file must not be able to send tokens elsewhere; "
			   "regenerate it with 'gcloud iam workload-identity-pools create-cred-config'",
			   "%s '%s' points at host '%s', which is not a Google %s host: expected %s",
			   what, url, p.host,
			   kind == TPF_GCP_URL_STS ? "Security Token Service" : "IAM Credentials",
			   cred_url_hosts(kind));
	} else {
		rc = 0;
	}
done:
	url_parts_free(&p);
	return rc;
}
