/*
 * Serving the metrics (engine/telemetry/metrics.h): the listen address, the socket,
 * and a libmicrohttpd daemon that answers GET /metrics.
 */
#include "engine/telemetry/metrics_internal.h"
#include "google/gcp_http.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char addr_hint[] =
	"give HOST:PORT with HOST an IP address, e.g. 127.0.0.1:9100 (this machine only) or "
	"0.0.0.0:9100 (every interface)";

/* PORT: 0..65535, digits only. */
static int parse_port(const char *s, unsigned *port)
{
	char *end;
	if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 5)
		return -1;
	unsigned long v = strtoul(s, &end, 10);
	if (v > 65535)
		return -1;
	*port = (unsigned)v;
	return 0;
}

/* Split "HOST:PORT" / "[V6]:PORT" into host (caller frees) and port. */
static int split_addr(const char *addr, char **host, unsigned *port, struct tpf_diags *d)
{
	const char *colon;
	*host = NULL;
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close || close[1] != ':')
			return tpf_errorx(d, NULL, addr_hint, "-metrics-addr '%s': expected [IPV6]:PORT",
					  addr);
		*host = xstrndup(addr + 1, (size_t)(close - addr - 1));
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return tpf_errorx(d, NULL, addr_hint, "-metrics-addr '%s': expected HOST:PORT",
					  addr);
		*host = xstrndup(addr, (size_t)(colon - addr));
		if (strchr(*host, ':')) {
			free(*host);
			*host = NULL;
			return tpf_errorx(d, NULL, "write an IPv6 address in brackets: [::1]:9100",
					  "-metrics-addr '%s': expected HOST:PORT", addr);
		}
	}
	if (parse_port(colon + 1, port) == 0 && **host)
		return 0;
	int empty = !**host;
	free(*host);
	*host = NULL;
	if (empty)
		return tpf_errorx(d, NULL, addr_hint,
				  "-metrics-addr '%s' has no host: metrics are never served on every "
				  "interface unless asked",
				  addr);
	return tpf_errorx(d, NULL, addr_hint, "-metrics-addr '%s': the port must be 0 to 65535",
			  addr);
}

int tpf_metrics_parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len,
			   int *loopback, struct tpf_diags *d)
{
	char *host;
	unsigned port;
	if (split_addr(addr, &host, &port, d))
		return TPF_ERROR;
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
	const char *literal = strcmp(host, "localhost") ? host : "127.0.0.1";
	int rc = 0;
	if (inet_pton(AF_INET, literal, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		*len = sizeof(*v4);
		*loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
	} else if (inet_pton(AF_INET6, literal, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*v6);
		*loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
	} else {
		rc = tpf_errorx(d, NULL, addr_hint,
				"-metrics-addr '%s': '%s' is not an IP address (names are not "
				"resolved, so the metrics are bound exactly where asked)",
				addr, host);
	}
	free(host);
	return rc;
}

/* A listening socket bound to ss; -1 with a diagnostic. */
static int listen_on(const char *addr, const struct sockaddr_storage *ss, socklen_t len,
		     struct tpf_diags *d)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0) {
		tpf_errorx(d, NULL, NULL, "-metrics-addr %s: socket: %s", addr, strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, len) || listen(fd, 16)) {
		int e = errno;
		close(fd);
		tpf_errorx(d, NULL,
			   e == EADDRINUSE ? "another program listens there: pick another port"
			   : e == EADDRNOTAVAIL ? "the address is not one of this machine's"
						: NULL,
			   "cannot serve metrics on %s: %s", addr, strerror(e));
		return -1;
	}
	return fd;
}

/* "HOST:PORT" of a bound socket; caller frees. */
static char *bound_name(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	memset(&ss, 0, sizeof(ss));
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof(host));
			port = ntohs(v6->sin6_port);
			return xasprintf("[%s]:%u", host, port);
		}
		struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &v4->sin_addr, host, sizeof(host));
		port = ntohs(v4->sin_port);
	}
	return xasprintf("%s:%u", host, port);
}

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, char *body,
			      size_t len, const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	enum MHD_Result ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct tpf_metrics *m = cls;
	(void)version, (void)upload, (void)con_cls;
	if (*upload_size) {
		*upload_size = 0; /* a body is not expected: ignore it */
		return MHD_YES;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return answer(conn, MHD_HTTP_METHOD_NOT_ALLOWED, xstrdup("GET /metrics\n"),
			      strlen("GET /metrics\n"), "text/plain");
	if (!strcmp(url, "/")) {
		/* The report's page (engine/telemetry/metrics_ledger.c), rebuilt from the
		 * run ledger every few minutes. */
		pthread_mutex_lock(&m->mu);
		char *page = m->page ? xmalloc(m->page_len + 1) : NULL;
		if (page)
			memcpy(page, m->page, m->page_len);
		size_t plen = m->page_len;
		pthread_mutex_unlock(&m->mu);
		if (page)
			return answer(conn, MHD_HTTP_OK, page, plen, "text/html; charset=utf-8");
		return answer(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
			      xstrdup("the report page is not built yet; the metrics are at /metrics\n"),
			      strlen("the report page is not built yet; the metrics are at /metrics\n"),
			      "text/plain");
	}
	if (strcmp(url, "/metrics"))
		return answer(conn, MHD_HTTP_NOT_FOUND,
			      xstrdup("the metrics are at /metrics, the report's page at /\n"),
			      strlen("the metrics are at /metrics, the report's page at /\n"),
			      "text/plain");
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_metrics_render(m, &b);
	size_t len;
	char *text = tpf_buf_detach(&b, &len);
	return answer(conn, MHD_HTTP_OK, text, len, TPF_METRICS_CONTENT_TYPE);
}

int tpf_metrics_serve(struct tpf_metrics *m, const char *addr, char **bound, int *loopback,
		      struct tpf_diags *d)
{
	struct sockaddr_storage ss;
	socklen_t len;
	*bound = NULL;
	if (tpf_metrics_parse_addr(addr, &ss, &len, loopback, d))
		return TPF_ERROR;
	int fd = listen_on(addr, &ss, len, d);
	if (fd < 0)
		return TPF_ERROR;
	/* No MHD_USE_ERROR_LOG: library code never prints. */
	struct MHD_Daemon *daemon = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, m, MHD_OPTION_LISTEN_SOCKET,
		fd, MHD_OPTION_CONNECTION_LIMIT, 32u, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
		MHD_OPTION_END);
	if (!daemon) {
		close(fd);
		return tpf_errorx(d, NULL, NULL, "cannot serve metrics on %s: libmicrohttpd did not start",
				  addr);
	}
	*bound = bound_name(fd);
	m->daemon = daemon;
	tpf_gcp_http_set_observer(tpf_metrics_api_request, m);
	return 0;
}

void tpf_metrics_free(struct tpf_metrics *m)
{
	if (!m)
		return;
	if (m->daemon) {
		tpf_gcp_http_set_observer(NULL, NULL);
		MHD_stop_daemon(m->daemon);
	}
	tpf_metrics_release_data(m);
}
