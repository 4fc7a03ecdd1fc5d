/*
 * Local port forwards (OpenSSH's -L) over the worker's own connection
 * (providers/transport.h forward): every accepted local connection gets a
 * direct-tcpip channel (RFC 4254 section 7.2, libssh2_channel_direct_tcpip_ex
 * (3); libssh2's example/direct_tcpip.c is the model), so the traffic goes
 * through the connection whose host key was checked against the pin. One
 * thread drives every channel: a libssh2 session is not to be used from
 * two threads at once.
 *
 * And ssh_info: what ssh(1) needs to reach the same worker (ssh-config).
 */
#include "providers/ssh/ssh_internal.h"
#include "util/xalloc.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_PAIRS 64
#define MAX_FORWARDS 16

struct pair {
	int fd;
	LIBSSH2_CHANNEL *ch;
	char buf[16384]; /* from fd, not yet written to the channel */
	size_t len, off;
	int fd_eof;
};

/* One accepted connection on fw: a channel to its target, or a warning. */
static void open_pair(struct tpf_conn *c, const struct tpf_forward *fw, struct pair *p,
		      size_t *np, struct tpf_diags *d)
{
	int fd = accept4(fw->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	LIBSSH2_CHANNEL *ch;
	double deadline = tpf_ssh_io_deadline(c);
	while (!(ch = libssh2_channel_direct_tcpip_ex(c->s, fw->host, fw->port, "127.0.0.1", 0)) &&
	       tpf_ssh_again(c, libssh2_session_last_errno(c->s), deadline))
		;
	if (!ch) {
		int code = 0;
		tpf_warn(d, c->where, "forward to %s port %d on worker '%s' refused: %s", fw->host,
			 fw->port, c->where, tpf_ssh_errmsg(c, &code));
		close(fd);
		return;
	}
	memset(&p[*np], 0, sizeof(p[*np]));
	p[*np].fd = fd;
	p[*np].ch = ch;
	(*np)++;
}

/* Relay what can move now; 0 while the pair lives, 1 when it ended. */
static int relay(struct pair *p, int fd_readable)
{
	char buf[16384];
	for (;;) {
		ssize_t n = libssh2_channel_read(p->ch, buf, sizeof(buf));
		if (n == LIBSSH2_ERROR_EAGAIN)
			break;
		if (n <= 0)
			return 1;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = send(p->fd, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return 1;
			off += w;
		}
	}
	if (libssh2_channel_eof(p->ch))
		return 1;
	if (p->off == p->len && fd_readable && !p->fd_eof) {
		ssize_t n = recv(p->fd, p->buf, sizeof(p->buf), MSG_DONTWAIT);
		if (n > 0) {
			p->len = (size_t)n;
			p->off = 0;
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			p->fd_eof = 1;
		}
	}
	while (p->off < p->len) {
		ssize_t w = libssh2_channel_write(p->ch, p->buf + p->off, p->len - p->off);
		if (w == LIBSSH2_ERROR_EAGAIN)
			return 0;
		if (w < 0)
			return 1;
		p->off += (size_t)w;
	}
	if (p->fd_eof) {
		int rc = libssh2_channel_send_eof(p->ch);
		return rc != LIBSSH2_ERROR_EAGAIN;
	}
	return 0;
}

static void close_pair(struct tpf_conn *c, struct pair *p)
{
	close(p->fd);
	if (c->broken)
		return; /* freed with the session */
	double deadline = tpf_ssh_io_deadline(c);
	int rc;
	while ((rc = libssh2_channel_free(p->ch)) == LIBSSH2_ERROR_EAGAIN &&
	       tpf_ssh_again(c, rc, deadline))
		;
}

int tpf_ssh_forward(struct tpf_conn *c, const struct tpf_forward *fw, size_t n,
		    const volatile int *stop, struct tpf_diags *d)
{
	struct pair *pairs;
	struct pollfd p[MAX_FORWARDS + MAX_PAIRS + 1];
	size_t np = 0;
	if (n > MAX_FORWARDS)
		return tpf_errorx(d, c->where, NULL, "at most %d forwards at once (got %zu)",
				  MAX_FORWARDS, n);
	pairs = xcalloc(MAX_PAIRS, sizeof(*pairs));
	while (!*stop && !c->broken) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			p[k++] = (struct pollfd){ .fd = np < MAX_PAIRS ? fw[i].listen_fd : -1,
						  .events = POLLIN };
		for (size_t i = 0; i < np; i++)
			p[k++] = (struct pollfd){ .fd = pairs[i].off < pairs[i].len || pairs[i].fd_eof
								? -1 : pairs[i].fd,
						  .events = POLLIN };
		p[k++] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
		if (libssh2_session_block_directions(c->s) & LIBSSH2_SESSION_BLOCK_OUTBOUND)
			p[k - 1].events |= POLLOUT;
		poll(p, k, 100);
		if (p[k - 1].revents & (POLLERR | POLLNVAL)) {
			c->broken = 1;
			break;
		}
		int next = 0;
		libssh2_keepalive_send(c->s, &next);
		for (size_t i = 0; i < n; i++)
			if (p[i].revents & POLLIN)
				open_pair(c, &fw[i], pairs, &np, d);
		size_t kept = 0;
		for (size_t i = 0; i < np; i++) {
			int readable = i + n < k - 1 && (p[n + i].revents & (POLLIN | POLLHUP | POLLERR));
			if (relay(&pairs[i], readable))
				close_pair(c, &pairs[i]);
			else
				pairs[kept++] = pairs[i];
		}
		np = kept;
	}
	for (size_t i = 0; i < np; i++)
		close_pair(c, &pairs[i]);
	free(pairs);
	if (c->broken)
		return tpf_errorx(d, c->where, "run the command again to reconnect",
				  "the connection to worker '%s' was lost: forwards stopped", c->where);
	return 0;
}

int tpf_ssh_info(struct tpf_conn *c, struct tpf_ssh_info *info, struct tpf_diags *d)
{
	memset(info, 0, sizeof(*info));
	info->host = c->host;
	info->port = c->port;
	info->user = c->user;
	info->known_line = c->known_line;
	info->identity_file = c->t->o.private_key;
	if (c->jump) {
		info->jump_host = c->t->o.jump_host;
		info->jump_user = c->t->o.jump_user ? c->t->o.jump_user : c->user;
		info->jump_port = c->t->o.jump_port > 0 ? c->t->o.jump_port : 22;
		info->jump_known_line = tpf_ssh_jump_known_line(c->jump);
	}
	return 0;
}
