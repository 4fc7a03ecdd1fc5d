/*
 * `tpuform ssh -L`: local port forwards to a worker (engine/chores/chores.h), in
 * OpenSSH's syntax, through the transport's forward op (libssh2
 * direct-tcpip channels over the pinned connection on VMs).
 */
#include "engine/chores/chores.h"
#include "util/xalloc.h"

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_PARTS 4

/* Split spec at ':' outside [brackets]; brackets are removed. */
static size_t split(const char *spec, char *parts[MAX_PARTS + 1])
{
	size_t n = 0;
	const char *s = spec;
	while (n <= MAX_PARTS) {
		const char *end;
		if (*s == '[') {
			const char *close = strchr(s, ']');
			if (!close || (close[1] && close[1] != ':'))
				return 0;
			parts[n++] = xstrndup(s + 1, (size_t)(close - s - 1));
			end = close + 1;
		} else {
			end = strchr(s, ':');
			if (!end)
				end = s + strlen(s);
			parts[n++] = xstrndup(s, (size_t)(end - s));
		}
		if (!*end)
			return n;
		s = end + 1;
	}
	return n;
}

static int port_of(const char *s, int zero_ok)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < (zero_ok ? 0 : 1) || v > 65535)
		return -1;
	return (int)v;
}

int tpf_forward_spec_parse(const char *spec, struct tpf_forward_spec *out, struct tpf_diags *d)
{
	char *parts[MAX_PARTS + 1] = { 0 };
	size_t n = split(spec, parts);
	int err = 0;
	memset(out, 0, sizeof(*out));
	if (n == 3 || n == 4) {
		size_t k = n - 3;
		out->bind = k ? xstrdup(parts[0]) : NULL;
		out->port = port_of(parts[k], 1);
		out->host = xstrdup(parts[k + 1]);
		out->hostport = port_of(parts[k + 2], 0);
	}
	if ((n != 3 && n != 4) || out->port < 0 || out->hostport < 0 || !out->host || !*out->host) {
		err = tpf_errorx(d, NULL,
				 "write it as ssh -L does: [bind_address:]port:host:hostport, e.g. "
				 "-L 6006:localhost:6006 (IPv6 addresses in brackets)",
				 "bad port forward '%s'", spec);
		tpf_forward_spec_release(out);
	}
	for (size_t i = 0; i < MAX_PARTS + 1; i++)
		free(parts[i]);
	return err;
}

void tpf_forward_spec_release(struct tpf_forward_spec *f)
{
	free(f->bind);
	free(f->host);
	f->bind = f->host = NULL;
}

/* A listening socket for spec (its port filled in when 0), or -1. */
static int listen_on(struct tpf_forward_spec *f, struct tpf_diags *d)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE }, *res, *r;
	char ps[16];
	const char *bind_to = f->bind && *f->bind && strcmp(f->bind, "*") ? f->bind : NULL;
	snprintf(ps, sizeof(ps), "%d", f->port);
	/* ssh(1) without GatewayPorts: loopback only, unless a bind address
	 * is given ("*" or "" is every address). */
	int gai = getaddrinfo(bind_to ? bind_to : (f->bind ? NULL : "localhost"), ps, &hints, &res);
	if (gai) {
		tpf_errorx(d, NULL, NULL, "cannot listen on '%s': %s", f->bind ? f->bind : "localhost",
			   gai_strerror(gai));
		return -1;
	}
	int fd = -1, e = 0;
	for (r = res; r && fd < 0; r = r->ai_next) {
		fd = socket(r->ai_family, r->ai_socktype | SOCK_CLOEXEC, r->ai_protocol);
		int one = 1;
		if (fd >= 0)
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (fd >= 0 && (bind(fd, r->ai_addr, r->ai_addrlen) < 0 || listen(fd, 16) < 0)) {
			e = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd < 0) {
		tpf_errorx(d, NULL, "pick another local port, or stop what uses it",
			   "cannot listen on port %d for -L %d:%s:%d: %s", f->port, f->port, f->host,
			   f->hostport, strerror(e));
		return -1;
	}
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (!f->port && !getsockname(fd, (struct sockaddr *)&ss, &len)) {
		char host[64], serv[16];
		if (!getnameinfo((struct sockaddr *)&ss, len, host, sizeof(host), serv, sizeof(serv),
				 NI_NUMERICHOST | NI_NUMERICSERV))
			f->port = atoi(serv);
	}
	return fd;
}

int tpf_chore_forward(const struct tpf_chore_target *t, struct tpf_forward_spec *specs, size_t n,
		      const volatile int *stop, void (*on_ready)(void *arg), void *arg,
		      struct tpf_diags *d)
{
	struct tpf_forward *fw = xcalloc(n ? n : 1, sizeof(*fw));
	struct tpf_conn *c = NULL;
	int err = 0;
	size_t opened = 0;
	if (!t->t->ops->forward) {
		err = tpf_errorx(d, t->sn->name, NULL, "this provider's transport cannot forward ports");
		goto done;
	}
	for (; opened < n; opened++) {
		fw[opened] = (struct tpf_forward){ .listen_fd = listen_on(&specs[opened], d),
						   .host = specs[opened].host,
						   .port = specs[opened].hostport };
		if (fw[opened].listen_fd < 0) {
			err = TPF_ERROR;
			goto done;
		}
	}
	if ((err = tpf_chore_connect(t, &c, d)))
		goto done;
	if (on_ready)
		on_ready(arg);
	err = t->t->ops->forward(c, fw, n, stop, d);
	t->t->ops->close(c);
done:
	for (size_t i = 0; i < opened; i++)
		close(fw[i].listen_fd);
	free(fw);
	return err;
}
