/*
 * libmicrohttpd glue: one thread per connection (handlers may sleep for
 * --latency-ms or a "slow" fault without holding up other clients),
 * HTTP/1.1 keep-alive, bodies collected whole before routing, and
 * "drop" faults answered by closing the connection (MHD_NO).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

#define IDLE_TIMEOUT 120 /* seconds before an idle keep-alive connection closes */

static struct MHD_Daemon *daemon_handle;

void fg_request_shutdown(void)
{
	/* main() waits for SIGUSR1 along with SIGTERM and SIGINT (sigwait). */
	kill(getpid(), SIGUSR1);
}

/* Called when the request line arrives: the raw URI, before any decoding. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct fg_req *r = xcalloc(1, sizeof(*r));
	char *q;

	tpf_buf_init(&r->body);
	r->raw_uri = xstrdup(uri);
	q = strchr(r->raw_uri, '?');
	r->query = q && q[1] ? q + 1 : NULL;
	r->conn = conn;
	r->t0 = fg_mono();
	return r;
}

static void req_free(struct fg_req *r)
{
	free(r->method);
	free(r->path);
	free(r->raw_uri);
	free(r->out);
	json_decref(r->pending);
	tpf_buf_release(&r->body);
	for (int i = 0; i < r->nhdr; i++) {
		free(r->hdr_name[i]);
		free(r->hdr_value[i]);
	}
	json_decref(r->log_body);
	free(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct fg_req *r = *con_cls;

	if (!r)
		return;
	if (r->shutdown_after && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		fg_request_shutdown();
	req_free(r);
	*con_cls = NULL;
}

static enum MHD_Result send_answer(struct fg_req *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	fg_reply_flush(r);
	if (!r->status)
		fg_reply_error(r, 500, "INTERNAL", NULL, "fakegcp produced no answer");
	resp = MHD_create_response_from_buffer(r->out_len, r->out, MHD_RESPMEM_MUST_FREE);
	if (!resp)
		return MHD_NO;
	r->out = NULL; /* the response owns it now */
	if (r->ctype)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->ctype);
	for (int i = 0; i < r->nhdr; i++)
		MHD_add_response_header(resp, r->hdr_name[i], r->hdr_value[i]);
	ret = MHD_queue_response(r->conn, r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct fg_req *r = *con_cls;

	if (!r)
		return MHD_NO;
	if (!r->started) {
		/* Headers are in; the body (if any) comes in the next calls. */
		r->started = 1;
		r->method = xstrdup(method);
		r->path = xstrdup(url);
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (r->body.len + *upload_data_size > FG_BODY_MAX)
			r->body_too_large = 1;
		else
			tpf_buf_add(&r->body, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	fg_route(r);
	if (r->drop)
		return MHD_NO;
	return send_answer(r);
}

int fg_server_start(const char *addr, int port, int *bound, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			     MHD_USE_POLL;

	memset(&ss, 0, sizeof(ss));
	if (!strcmp(addr, "localhost"))
		addr = "127.0.0.1";
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		/* Tests only: never listen beyond this machine. */
		if ((ntohl(in4->sin_addr.s_addr) >> 24) != 127) {
			snprintf(err, errlen, "--listen '%s' is not a loopback address; use "
					      "127.0.0.1 or ::1", addr);
			return -1;
		}
	} else if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		flags |= MHD_USE_IPv6;
		if (!IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) {
			snprintf(err, errlen, "--listen '%s' is not a loopback address; use "
					      "127.0.0.1 or ::1", addr);
			return -1;
		}
	} else {
		snprintf(err, errlen, "--listen '%s' is not an IP address; expected e.g. 127.0.0.1",
			 addr);
		return -1;
	}
	if (fg_opt.verbose)
		flags |= MHD_USE_ERROR_LOG;
	daemon_handle = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, NULL,
					 MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
					 MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
					 MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
					 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)IDLE_TIMEOUT,
					 MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned int)1,
					 MHD_OPTION_END);
	if (!daemon_handle) {
		snprintf(err, errlen, "cannot listen on %s port %d: %m", addr, port);
		return -1;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon_handle,
							       MHD_DAEMON_INFO_BIND_PORT);
	*bound = info ? info->port : port;
	return 0;
}

int fg_req_local_port(struct fg_req *r)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (!ci || getsockname(ci->connect_fd, (struct sockaddr *)&ss, &len) < 0)
		return -1;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return -1;
}

void fg_server_stop(void)
{
	/* Waiting metadata requests answer now: the daemon joins their threads. */
	fg_guest_md_stop();
	if (daemon_handle)
		MHD_stop_daemon(daemon_handle);
	daemon_handle = NULL;
}
