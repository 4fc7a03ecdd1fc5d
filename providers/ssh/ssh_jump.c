/*
 * ssh.proxy_jump: workers on internal addresses, reached through a bastion
 * as `ssh -J` does (ssh_config(5) ProxyJump), with libssh2 alone.
 *
 * For each worker connection: TCP to the bastion, the SSH handshake, the
 * bastion's host key checked (below), authentication with the same key or
 * agent as the workers, then a "direct-tcpip" channel to the worker's
 * address (RFC 4254 section 7.2; libssh2_channel_direct_tcpip_ex(3)).
 * libssh2 runs a session only over a socket, so the worker's own session
 * cannot sit on the channel directly: a socketpair(2) stands in for the
 * worker's socket and a relay thread pumps bytes between its other end
 * and the channel. That is the shape of libssh2's own forwarding example
 * (https://github.com/libssh2/libssh2/blob/master/example/direct_tcpip.c:
 * a local socket pumped into a direct-tcpip channel), with a socketpair
 * instead of a listening port, so nothing else on the machine can connect
 * to the tunnel; paramiko's `sock=channel` (ProxyJump in Ansible, Fabric)
 * is the same layering in a library whose sessions accept any stream.
 *
 * Why one bastion connection per worker connection, not one shared:
 *   - a libssh2 session is not safe to use from several threads at once,
 *     and connections here are driven by the caller's thread (ssh.h); a
 *     shared session would need one lock around every call on every
 *     channel, and one slow upload would stall every other worker;
 *   - the count stays bounded: one bastion connection and one relay thread
 *     per worker connection in flight, which the executor bounds with
 *     -parallelism (util/pool.c); OpenSSH's sshd accepts 10 unauthenticated
 *     connections at once by default (MaxStartups 10:30:100), the default
 *     -parallelism is 10, and the handshakes happen one after the other in
 *     each thread;
 *   - a bastion that drops one connection loses one worker's command, not
 *     all of them.
 * The cost is one more handshake per worker connection (milliseconds).
 *
 * The bastion's host key: one pin per process (ssh.h,
 * tpf_ssh_jump_pin_sync), kept in the state; ssh.proxy_jump_host_key, when
 * set, is the key and wins over the pin (the way to accept a rebuilt
 * bastion). It is checked right after the handshake, before any credential
 * is offered to the bastion and before the channel to the worker is asked
 * for: a bastion with another key never learns which worker was wanted.
 */
#include "providers/ssh/ssh_internal.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bytes buffered each way by the relay; SSH packets are at most 32 KiB of
 * payload (RFC 4253 section 6.1). */
#define RELAY_BUF 32768
/* Longest the relay goes on after it was told to stop (seconds): the inner
 * session's goodbye is flushed if the bastion takes it. */
#define RELAY_STOP_GRACE 2.0

struct tpf_ssh_jump {
	struct tpf_conn *bastion; /* its own session and TCP socket */
	LIBSSH2_CHANNEL *ch;
	int local;                /* the relay's end of the socketpair */
	pthread_t relay;
	int relay_started;
	atomic_int stop;
	atomic_int failed;        /* the relay ended on an error: no polite close */
};

/* ---- the pin ------------------------------------------------------------- */

static pthread_mutex_t pin_mu = PTHREAD_MUTEX_INITIALIZER;
static char *pin_host; /* "host:port" */
static char *pin_key;  /* "SHA256:..." */

void tpf_ssh_jump_pin_sync(char **host, char **key)
{
	pthread_mutex_lock(&pin_mu);
	if (!pin_key && *host && *key) {
		pin_host = xstrdup(*host);
		pin_key = xstrdup(*key);
	} else if (pin_key) {
		xstrset(host, pin_host);
		xstrset(key, pin_key);
	}
	pthread_mutex_unlock(&pin_mu);
}

static char *jump_hostport(const struct tpf_ssh *t)
{
	int port = t->o.jump_port > 0 ? t->o.jump_port : 22;
	return strchr(t->o.jump_host, ':') ? xasprintf("[%s]:%d", t->o.jump_host, port)
					   : xasprintf("%s:%d", t->o.jump_host, port);
}

/* The configured key (ssh.proxy_jump_host_key) against the one presented. */
static int check_configured(struct tpf_conn *b, const char *hostport, struct tpf_diags *d)
{
	const char *want = b->t->o.jump_host_key;
	char *want_fp = tpf_ssh_key_fingerprint(want);
	if (!want_fp)
		return tpf_errorx(d, b->where, "copy a line of 'ssh-keyscan BASTION' without the host name",
				  "ssh.proxy_jump_host_key is not an SSH public key ('TYPE BASE64'): '%.40s'",
				  want);
	int same = !strcmp(want_fp, b->host_key);
	if (same) {
		pthread_mutex_lock(&pin_mu);
		xstrset(&pin_host, hostport);
		xstrset(&pin_key, want_fp);
		pthread_mutex_unlock(&pin_mu);
	} else {
		tpf_errorx(d, b->where,
			   "the bastion presents a key other than the one the fleet file names: a "
			   "machine answering at its address may be impersonating it. Nothing was sent "
			   "to it or to the worker. If the bastion's keys were changed on purpose, put "
			   "its new key in ssh.proxy_jump_host_key (ssh-keyscan BASTION)",
			   "host key of the bastion %s (ssh.proxy_jump) is not ssh.proxy_jump_host_key: "
			   "expected %s, the bastion presents %s; refusing to connect to worker '%s'",
			   hostport, want_fp, b->host_key, b->where);
	}
	free(want_fp);
	return same ? 0 : TPF_EHOSTKEY;
}

/* The bastion's key: configured, else pinned, else trusted on first use. */
static int check_bastion_key(struct tpf_conn *b, struct tpf_diags *d)
{
	if (tpf_ssh_read_host_key(b, d))
		return TPF_ERROR;
	char *hostport = jump_hostport(b->t);
	int err = 0;
	if (b->t->o.jump_host_key) {
		err = check_configured(b, hostport, d);
		free(hostport);
		return err;
	}
	pthread_mutex_lock(&pin_mu);
	if (pin_key && pin_host && !strcmp(pin_host, hostport)) {
		if (strcmp(pin_key, b->host_key))
			err = tpf_errorx(
				d, b->where,
				"tpuform pinned the bastion's key when it first went through it (the "
				"state's proxy_jump_host_key) and will not use a bastion that presents "
				"another: someone may be impersonating it. Nothing was sent to it or to "
				"the worker. If the bastion was rebuilt on purpose, put its new key in "
				"ssh.proxy_jump_host_key (ssh-keyscan BASTION)",
				"host key of the bastion %s (ssh.proxy_jump) has changed: pinned %s, the "
				"bastion presents %s; refusing to connect to worker '%s'",
				hostport, pin_key, b->host_key, b->where);
	} else {
		/* First use, or ssh.proxy_jump now names another bastion. */
		xstrset(&pin_host, hostport);
		xstrset(&pin_key, b->host_key);
		tpf_warn(d, b->where,
			 "trusting the host key %s of the bastion %s on first use; it is pinned in the "
			 "state from now on (set ssh.proxy_jump_host_key: \"%s\" to pin it in the fleet "
			 "file)", b->host_key, hostport, b->known_line);
	}
	pthread_mutex_unlock(&pin_mu);
	free(hostport);
	return err;
}

/* ---- the relay ------------------------------------------------------------ */

struct pump {
	char buf[RELAY_BUF];
	size_t len, off;
};

/* One pass each way; returns 1 if bytes moved, 0 if not, -1 when done
 * (either end closed) or failed (j->failed set). */
static int relay_pass(struct tpf_ssh_jump *j, struct pump *up, struct pump *down)
{
	int moved = 0;
	if (!up->len) {
		ssize_t n = recv(j->local, up->buf, sizeof(up->buf), 0);
		if (n == 0)
			return -1; /* the worker's session was closed */
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (n > 0) {
			up->len = (size_t)n;
			up->off = 0;
			moved = 1;
		}
	}
	while (up->off < up->len) {
		ssize_t w = libssh2_channel_write(j->ch, up->buf + up->off, up->len - up->off);
		if (w == LIBSSH2_ERROR_EAGAIN)
			break;
		if (w < 0)
			return atomic_store(&j->failed, 1), -1;
		up->off += (size_t)w;
		moved = 1;
	}
	if (up->off == up->len)
		up->len = up->off = 0;
	if (!down->len) {
		ssize_t r = libssh2_channel_read(j->ch, down->buf, sizeof(down->buf));
		if (r > 0) {
			down->len = (size_t)r;
			down->off = 0;
			moved = 1;
		} else if (r != LIBSSH2_ERROR_EAGAIN && r < 0) {
			return atomic_store(&j->failed, 1), -1;
		} else if (libssh2_channel_eof(j->ch)) {
			return -1; /* the worker closed: its session sees the end */
		}
	}
	while (down->off < down->len) {
		ssize_t n = send(j->local, down->buf + down->off, down->len - down->off, MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n < 0)
			return -1;
		down->off += (size_t)n;
		moved = 1;
	}
	if (down->off == down->len)
		down->len = down->off = 0;
	return moved;
}

/* Wait until either end can move, at most `ms`. */
static int relay_wait(struct tpf_ssh_jump *j, const struct pump *up, const struct pump *down,
		      int ms)
{
	LIBSSH2_SESSION *s = j->bastion->s;
	int dir = libssh2_session_block_directions(s);
	struct pollfd p[2] = { { .fd = j->bastion->fd }, { .fd = j->local } };
	/* Input from the bastion only when there is room for it, or when a
	 * write waits for the window to open (inbound packets). */
	if (!down->len || up->len || (dir & LIBSSH2_SESSION_BLOCK_INBOUND))
		p[0].events |= POLLIN;
	if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
		p[0].events |= POLLOUT;
	if (!up->len)
		p[1].events |= POLLIN;
	if (down->len)
		p[1].events |= POLLOUT;
	return poll(p, 2, ms);
}

static void *relay_main(void *arg)
{
	struct tpf_ssh_jump *j = arg;
	struct pump *up = xcalloc(1, sizeof(*up)), *down = xcalloc(1, sizeof(*down));
	double keepalive = j->bastion->t->o.keepalive;
	double stop_at = 0;
	for (;;) {
		if (atomic_load(&j->stop)) {
			double now = tpf_now_mono();
			if (!stop_at)
				stop_at = now + RELAY_STOP_GRACE;
			else if (now >= stop_at)
				break;
		}
		int moved = relay_pass(j, up, down);
		if (moved < 0)
			break;
		if (moved)
			continue;
		int ms = stop_at ? 100 : keepalive > 0 && keepalive < 1 ? (int)(keepalive * 1000) : 1000;
		int n = relay_wait(j, up, down, ms);
		if (n == 0 && keepalive > 0) {
			/* Idle: the bastion's session needs keepalives of its own
			 * (the worker's travel inside the channel). */
			int next = 0;
			libssh2_keepalive_send(j->bastion->s, &next);
		}
	}
	/* Whatever ended the relay, the worker's session must see it. */
	shutdown(j->local, SHUT_RDWR);
	free(up);
	free(down);
	return NULL;
}

void tpf_ssh_jump_free(struct tpf_ssh_jump *j)
{
	if (!j)
		return;
	if (j->relay_started) {
		atomic_store(&j->stop, 1);
		pthread_join(j->relay, NULL);
	}
	if (j->local >= 0)
		close(j->local);
	struct tpf_conn *b = j->bastion;
	if (b && b->s && j->ch) {
		if (atomic_load(&j->failed))
			b->broken = 1;
		libssh2_session_set_blocking(b->s, 1);
		libssh2_session_set_timeout(b->s, 2000);
		if (!b->broken)
			libssh2_channel_close(j->ch);
		libssh2_channel_free(j->ch);
	}
	tpf_ssh_conn_close(b); /* a bastion is reached directly: no tunnel */
	free(j);
}

const char *tpf_ssh_jump_known_line(const struct tpf_ssh_jump *j)
{
	return j && j->bastion ? j->bastion->known_line : NULL;
}

/* ---- opening ------------------------------------------------------------ */

/* TCP, handshake, host key and authentication to the bastion, for worker
 * connection c. */
static int bastion_open(struct tpf_conn *c, struct tpf_conn **out, double deadline,
			struct tpf_diags *d)
{
	struct tpf_ssh *t = c->t;
	struct tpf_conn *b = xcalloc(1, sizeof(*b));
	int syserr = 0, gai = 0, err;
	b->t = t;
	b->fd = -1;
	b->role = "the bastion (ssh.proxy_jump) of worker";
	b->user = xstrdup(t->o.jump_user ? t->o.jump_user : c->user);
	b->where = xstrdup(c->where);
	b->host = xstrdup(t->o.jump_host);
	b->port = t->o.jump_port > 0 ? t->o.jump_port : 22;
	b->fd = tpf_ssh_tcp_connect(b->host, b->port, deadline, t->o.keepalive, &syserr, &gai);
	if (b->fd < 0) {
		tpf_errorx(d, c->where, "is the bastion up, and may this machine reach it? (ssh.proxy_jump in the fleet file)",
			   "cannot connect to the bastion %s port %d (ssh.proxy_jump) for worker '%s': %s",
			   b->host, b->port, c->where,
			   syserr == -1 ? gai_strerror(gai) : strerror(syserr));
		err = TPF_EUNREACHABLE;
		goto done;
	}
	err = tpf_ssh_handshake(b, NULL, deadline, d);
	if (!err)
		err = check_bastion_key(b, d);
	if (err)
		goto done;
	struct tpf_diags why = TPF_DIAGS_INIT;
	err = tpf_ssh_auth(b, deadline, &why);
	if (err == TPF_SSH_EREFUSED) {
		/* The worker's hints (metadata, OS Login) do not apply here:
		 * the bastion is no node of the fleet. */
		for (size_t i = 0; i < why.n; i++) {
			free(why.items[i].detail);
			why.items[i].detail = xstrdup(
				"add the key's public half to ~/.ssh/authorized_keys of the bastion's "
				"user, or name the user as ssh.proxy_jump: USER@HOST");
		}
		err = TPF_ERROR; /* the bastion is up: waiting will not help */
	}
	tpf_diags_move(d, &why);
	tpf_diags_release(&why);
done:
	if (err) {
		b->broken = 1;
		tpf_ssh_conn_close(b);
		return err;
	}
	*out = b;
	return 0;
}

/* The direct-tcpip channel from the bastion to the worker. */
static LIBSSH2_CHANNEL *open_channel(struct tpf_conn *b, struct tpf_conn *c, double deadline,
				     int *err, struct tpf_diags *d)
{
	LIBSSH2_CHANNEL *ch;
	/* The originator fields are informational (RFC 4254 section 7.2);
	 * ssh(1) -W sends these too. */
	do
		ch = libssh2_channel_direct_tcpip_ex(b->s, c->host, c->port, "127.0.0.1", 0);
	while (!ch && tpf_ssh_again(b, libssh2_session_last_errno(b->s), deadline));
	if (ch)
		return ch;
	int code = 0;
	const char *msg = b->timed_out ? "timed out" : tpf_ssh_errmsg(b, &code);
	tpf_errorx(d, c->where,
		   "is the worker's VM up and its sshd listening there? The bastion must be able to "
		   "reach the worker's internal address (firewall rules of the network) and allow "
		   "forwarding (sshd_config AllowTcpForwarding)",
		   "the bastion %s port %d could not open a connection to worker '%s' at %s port %d: %s",
		   b->host, b->port, c->where, c->host, c->port, msg);
	/* A refused channel is the worker's sshd not up yet, as a refused
	 * TCP connection would be: retried. */
	*err = TPF_EUNREACHABLE;
	return NULL;
}

int tpf_ssh_jump_open(struct tpf_conn *c, double deadline, struct tpf_diags *d)
{
	struct tpf_ssh_jump *j = xcalloc(1, sizeof(*j));
	int sv[2] = { -1, -1 }, err = 0;
	j->local = -1;
	atomic_init(&j->stop, 0);
	atomic_init(&j->failed, 0);
	err = bastion_open(c, &j->bastion, deadline, d);
	if (err)
		goto fail;
	j->ch = open_channel(j->bastion, c, deadline, &err, d);
	if (!j->ch)
		goto fail;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv)) {
		err = tpf_errorx(d, c->where, NULL, "cannot make a socketpair for worker '%s': %s",
				 c->where, strerror(errno));
		goto fail;
	}
	j->local = sv[1];
	if (pthread_create(&j->relay, NULL, relay_main, j)) {
		err = tpf_errorx(d, c->where, NULL, "cannot start the relay thread for worker '%s'",
				 c->where);
		close(sv[0]);
		goto fail;
	}
	j->relay_started = 1;
	c->fd = sv[0];
	c->jump = j;
	return 0;
fail:
	/* A channel request that timed out left the bastion's session in an
	 * unknown state: no polite goodbye then. */
	if (j->bastion && j->bastion->timed_out)
		j->bastion->broken = 1;
	tpf_ssh_jump_free(j);
	return err ? err : TPF_ERROR;
}
