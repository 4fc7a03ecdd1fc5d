/*
 * One SSH connection: TCP connect with a deadline, the libssh2 handshake
 * and authentication, all non-blocking with poll(2), plus the waiting
 * helper every other file uses. Putting them together for a worker, direct
 * or through the bastion (ssh_jump.c, which uses these for the bastion's
 * own connection), is ssh_connect.c.
 */
#include "providers/ssh/ssh_alloc.h"
#include "providers/ssh/ssh_internal.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Preferred host key algorithms, strongest and most common first, so the
 * key pinned for a worker does not depend on libssh2's default order.
 * Only those this libssh2 supports are passed on: libssh2 1.10 copies
 * with overlapping memcpy when it drops an unknown name (rsa-sha2-* came
 * in 1.11). */
static const char *const hostkey_wanted[] = {
	"ssh-ed25519",	       "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
	"ecdsa-sha2-nistp521", "rsa-sha2-512",	      "rsa-sha2-256",
	"ssh-rsa",
};
static pthread_once_t pref_once = PTHREAD_ONCE_INIT;
static char hostkey_pref[256];

static void build_pref(void)
{
	LIBSSH2_SESSION *s = libssh2_session_init();
	const char **algs = NULL;
	int n = s ? libssh2_session_supported_algs(s, LIBSSH2_METHOD_HOSTKEY, &algs) : 0;
	size_t len = 0;
	for (size_t i = 0; i < sizeof(hostkey_wanted) / sizeof(hostkey_wanted[0]); i++) {
		for (int k = 0; k < n; k++) {
			if (strcmp(algs[k], hostkey_wanted[i]))
				continue;
			size_t add = strlen(hostkey_wanted[i]) + (len ? 1 : 0);
			if (len + add < sizeof(hostkey_pref)) {
				snprintf(hostkey_pref + len, sizeof(hostkey_pref) - len, "%s%s",
					 len ? "," : "", hostkey_wanted[i]);
				len += add;
			}
			break;
		}
	}
	if (n > 0)
		libssh2_free(s, algs);
	if (s)
		libssh2_session_free(s);
}

char *tpf_ssh_where(const struct tpf_worker_ref *w)
{
	return xasprintf("%s/w%d", w->node ? w->node : "?", w->worker);
}

const char *tpf_ssh_errmsg(struct tpf_conn *c, int *code)
{
	char *msg = NULL;
	int rc = libssh2_session_last_error(c->s, &msg, NULL, 0);
	if (code)
		*code = rc;
	return msg && *msg ? msg : "unknown libssh2 error";
}

int tpf_ssh_net_error(int code)
{
	switch (code) {
	case LIBSSH2_ERROR_SOCKET_DISCONNECT:
	case LIBSSH2_ERROR_SOCKET_SEND:
	case LIBSSH2_ERROR_SOCKET_RECV:
	case LIBSSH2_ERROR_SOCKET_TIMEOUT:
	case LIBSSH2_ERROR_TIMEOUT:
	case LIBSSH2_ERROR_BANNER_RECV:
	case LIBSSH2_ERROR_BANNER_SEND:
	case LIBSSH2_ERROR_KEX_FAILURE:
	case LIBSSH2_ERROR_EAGAIN:
		return 1;
	}
	return 0;
}

int tpf_ssh_again(struct tpf_conn *c, int rc, double deadline)
{
	if (rc != LIBSSH2_ERROR_EAGAIN)
		return 0;
	double keepalive = c->t->o.keepalive;
	for (;;) {
		double now = tpf_now_mono();
		if (deadline > 0 && now >= deadline) {
			c->timed_out = 1;
			return 0;
		}
		double wait = deadline > 0 ? deadline - now : 3600;
		int ka_due = 0;
		if (keepalive > 0 && wait > keepalive) {
			wait = keepalive;
			ka_due = 1;
		}
		int dir = libssh2_session_block_directions(c->s);
		struct pollfd p = { .fd = c->fd, .events = 0 };
		if (dir & LIBSSH2_SESSION_BLOCK_INBOUND)
			p.events |= POLLIN;
		if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
			p.events |= POLLOUT;
		if (!p.events)
			p.events = POLLIN;
		int n = poll(&p, 1, (int)(wait * 1000) + 1);
		if (n != 0)
			return 1; /* ready, an error or EINTR: the call tells */
		if (ka_due) {
			/* Idle while a long command runs: a keepalive makes a
			 * dead peer show up (TCP_USER_TIMEOUT) instead of a
			 * silent wait until the command's own timeout. */
			int next = 0;
			libssh2_keepalive_send(c->s, &next);
		}
	}
}

/* libssh2 writes with plain send(): a peer that went away would raise
 * SIGPIPE in a process that does not ignore it (unit tests, library
 * users). */
static LIBSSH2_SEND_FUNC(send_nosignal)
{
	(void)abstract;
	ssize_t n = send(socket, buffer, length, flags | MSG_NOSIGNAL);
	return n < 0 ? -errno : n;
}

int tpf_ssh_tcp_start(const struct addrinfo *ai, double keepalive, int *err)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			ai->ai_protocol);
	if (fd < 0) {
		*err = errno;
		return -1;
	}
	int one = 1;
	/* Many small SSH packets each way: Nagle would add delays. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	if (keepalive > 0) {
		/* Unacknowledged data (our keepalives) for this long ends the
		 * connection: a preempted VM never answers. */
		unsigned int ms = (unsigned int)(keepalive * 4 * 1000);
		setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS)
		return fd;
	*err = errno;
	close(fd);
	return -1;
}

int tpf_ssh_tcp_done(int fd, int *err)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int n = poll(&p, 1, 0);
	if (n == 0)
		return 0;
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	if (n > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
		return 1;
	*err = soerr ? soerr : n < 0 ? errno : ECONNREFUSED;
	return -1;
}

int tpf_ssh_tcp_connect(const char *host, int port, double deadline, double keepalive, int *err,
			int *gai_err)
{
	struct addrinfo *res = NULL;
	int fd = -1;

	*err = 0;
	if (tpf_ssh_resolve(host, port, &res, err, gai_err))
		return -1;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		fd = tpf_ssh_tcp_start(ai, keepalive, err);
		if (fd < 0)
			continue;
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int n;
		do {
			double left = deadline - tpf_now_mono();
			n = left > 0 ? poll(&p, 1, (int)(left * 1000) + 1) : 0;
		} while (n < 0 && errno == EINTR);
		if (n > 0 && tpf_ssh_tcp_done(fd, err) > 0)
			break;
		if (n == 0)
			*err = ETIMEDOUT;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd >= 0)
		*err = 0;
	return fd;
}

int tpf_ssh_resolve(const char *host, int port, struct addrinfo **res, int *err, int *gai_err)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	char portstr[16];
	snprintf(portstr, sizeof(portstr), "%d", port);
	*res = NULL;
	int gai = getaddrinfo(host, portstr, &hints, res);
	if (!gai)
		return 0;
	*err = gai == EAI_SYSTEM ? errno : -1;
	*gai_err = gai;
	*res = NULL;
	return -1;
}

void tpf_ssh_conn_close(struct tpf_conn *c)
{
	if (!c)
		return;
	if (c->s) {
		/* Closing must not hang on a dead peer: blocking mode with a
		 * short timeout, and no I/O at all once a timeout left the
		 * session in an unknown state. */
		if (c->broken && c->fd >= 0)
			shutdown(c->fd, SHUT_RDWR);
		libssh2_session_set_blocking(c->s, 1);
		libssh2_session_set_timeout(c->s, 2000);
		if (c->sftp)
			libssh2_sftp_shutdown(c->sftp);
		if (!c->broken)
			libssh2_session_disconnect(c->s, "tpuform done");
		tpf_ssh_session_free(c->s);
	}
	if (c->fd >= 0)
		close(c->fd);
	tpf_buf_release(&c->watch_cmd);
	free(c->where);
	free(c->user);
	free(c->host);
	free(c->host_key);
	free(c->known_line);
	free(c->dir_made);
	free(c);
}

int tpf_ssh_session_start(struct tpf_conn *c, const char *known_pref, struct tpf_diags *d)
{
	struct tpf_ssh *t = c->t;
	c->s = tpf_ssh_session_new();
	if (!c->s)
		return tpf_errorx(d, c->where, NULL, "cannot start an SSH session for %s '%s': out of memory",
				  TPF_SSH_ROLE(c), c->where);
	libssh2_session_callback_set(c->s, LIBSSH2_CALLBACK_SEND, (void *)send_nosignal);
	libssh2_session_set_blocking(c->s, 0);
	pthread_once(&pref_once, build_pref);
	if (known_pref && known_pref[0])
		libssh2_session_method_pref(c->s, LIBSSH2_METHOD_HOSTKEY, known_pref);
	else if (hostkey_pref[0])
		libssh2_session_method_pref(c->s, LIBSSH2_METHOD_HOSTKEY, hostkey_pref);
	if (t->o.keepalive > 0)
		libssh2_keepalive_config(c->s, 1, (unsigned)t->o.keepalive);
	return 0;
}

int tpf_ssh_handshake_fail(struct tpf_conn *c, struct tpf_diags *d)
{
	int code = 0;
	const char *msg = c->timed_out ? "no SSH greeting before the connect timeout"
				       : tpf_ssh_errmsg(c, &code);
	tpf_errorx(d, c->where, c->role ? "is sshd running on the bastion (ssh.proxy_jump)?" : "is sshd running and reachable on the worker?",
		   "SSH handshake with %s '%s' at %s port %d failed: %s", TPF_SSH_ROLE(c),
		   c->where, c->host, c->port, msg);
	/* A daemon still starting accepts and drops connections. */
	return TPF_EUNREACHABLE;
}

int tpf_ssh_handshake(struct tpf_conn *c, const char *known_pref, double deadline,
		      struct tpf_diags *d)
{
	int rc = tpf_ssh_session_start(c, known_pref, d);
	if (rc)
		return rc;
	do
		rc = libssh2_session_handshake(c->s, c->fd);
	while (tpf_ssh_again(c, rc, deadline));
	return rc ? tpf_ssh_handshake_fail(c, d) : 0;
}

/*
 * The public half of the key, as libssh2 reads a .pub file, or NULL. Given
 * to libssh2_userauth_publickey_frommemory, it spares libssh2 deriving it
 * from the private key at every login: a second parse of the private key,
 * which with OpenSSL 3 sets up its key decoders each time (measured: about
 * 4 million instructions per login, as much as the rest of the
 * authentication; tests/bench/ssh_bench.sh). Taken from the private key
 * itself, never from a .pub file that might not match it. The trailing
 * newline matters: libssh2 1.10 reads one byte past a line without it.
 */
static char *key_pub_line(const struct tpf_buf *key)
{
	struct tpf_diags quiet = TPF_DIAGS_INIT;
	char *line = NULL, *pub = NULL;
	if (tpf_ssh_public_key_of_private(key->buf, key->len, NULL, &pub, &quiet) == 0)
		line = xasprintf("%s\n", pub);
	free(pub);
	tpf_diags_release(&quiet);
	return line;
}

/* Read ssh.private_key once per transport. */
static int load_key(struct tpf_ssh *t, struct tpf_conn *c, struct tpf_diags *d)
{
	pthread_mutex_lock(&t->key_mu);
	if (!t->key_loaded) {
		struct tpf_diags why = TPF_DIAGS_INIT;
		int rc = tpf_read_file(t->o.private_key, &t->key, &why);
		if (rc == TPF_ENOTFOUND)
			t->key_error = xstrdup(strerror(ENOENT));
		else if (rc)
			t->key_error = xstrdup(why.n ? why.items[0].summary : "cannot read it");
		else
			t->key_pub = key_pub_line(&t->key);
		tpf_diags_release(&why);
		t->key_loaded = 1;
	}
	char *e = xstrdup(t->key_error);
	pthread_mutex_unlock(&t->key_mu);
	if (!e)
		return 0;
	tpf_errorx(d, c->where, "set ssh.private_key to a readable private key file, or leave it out to use ssh-agent",
		   "cannot read the SSH private key '%s' for worker '%s': %s", t->o.private_key,
		   c->where, e);
	free(e);
	return TPF_ERROR;
}

static int auth_agent(struct tpf_conn *c, const char *user, double deadline, struct tpf_diags *d)
{
	const char *sock = getenv("SSH_AUTH_SOCK");
	int err = 0, tried = 0, rc;
	if (!sock || !*sock)
		return tpf_errorx(d, c->where, "set ssh.private_key in the fleet file, or start ssh-agent and add a key (ssh-add)",
				  "cannot authenticate to worker '%s': no ssh.private_key is set and "
				  "SSH_AUTH_SOCK is not set (no ssh-agent)", c->where);
	LIBSSH2_AGENT *agent = libssh2_agent_init(c->s);
	if (!agent)
		return tpf_errorx(d, c->where, NULL, "cannot use ssh-agent for worker '%s': %s",
				  c->where, tpf_ssh_errmsg(c, NULL));
	if (libssh2_agent_connect(agent) || libssh2_agent_list_identities(agent)) {
		err = tpf_errorx(d, c->where, "is ssh-agent running? 'ssh-add -l' lists its keys",
				 "cannot use ssh-agent at '%s' for worker '%s': %s", sock, c->where,
				 tpf_ssh_errmsg(c, NULL));
		goto done;
	}
	struct libssh2_agent_publickey *id = NULL, *prev = NULL;
	for (;;) {
		rc = libssh2_agent_get_identity(agent, &id, prev);
		if (rc != 0)
			break;
		tried++;
		do
			rc = libssh2_agent_userauth(agent, user, id);
		while (tpf_ssh_again(c, rc, deadline));
		if (rc == 0)
			goto done;
		if (c->timed_out || tpf_ssh_net_error(rc)) {
			tpf_errorx(d, c->where, NULL,
				   "authentication to %s '%s' at %s port %d did not finish: %s",
				   TPF_SSH_ROLE(c), c->where, c->host, c->port,
				   c->timed_out ? "timed out" : tpf_ssh_errmsg(c, NULL));
			err = TPF_EUNREACHABLE;
			goto done;
		}
		prev = id;
	}
	tpf_errorx(d, c->where,
			 tried ? "add the key's public half to the user's ~/.ssh/authorized_keys on the worker, or set ssh.user (Cloud TPU: tpuform adds it to the node's ssh-keys metadata, which the VM ignores when OS Login is on: if the project requires OS Login, set ssh.os_login: true)"
			       : "add a key with ssh-add, or set ssh.private_key",
			 "public key authentication as '%s' to %s '%s' at %s port %d failed: "
			 "%s", user, TPF_SSH_ROLE(c), c->where, c->host, c->port,
			 tried ? "the worker accepted none of the keys in ssh-agent"
			       : "ssh-agent holds no keys");
	err = TPF_SSH_EREFUSED;
done:
	libssh2_agent_disconnect(agent);
	libssh2_agent_free(agent);
	return err;
}

int tpf_ssh_auth_key_load(struct tpf_conn *c, struct tpf_diags *d)
{
	return load_key(c->t, c, d) ? TPF_ERROR : 0;
}

int tpf_ssh_auth_key_try(struct tpf_conn *c)
{
	struct tpf_ssh *t = c->t;
	return libssh2_userauth_publickey_frommemory(c->s, c->user, strlen(c->user), t->key_pub,
						     t->key_pub ? strlen(t->key_pub) : 0,
						     t->key.buf, t->key.len, NULL);
}

int tpf_ssh_auth_key_result(struct tpf_conn *c, int rc, struct tpf_diags *d)
{
	struct tpf_ssh *t = c->t;
	int code = 0;
	if (rc == 0)
		return 0;
	const char *msg = c->timed_out ? "timed out" : tpf_ssh_errmsg(c, &code);
	if (c->timed_out || tpf_ssh_net_error(rc)) {
		tpf_errorx(d, c->where, NULL, "authentication to %s '%s' at %s port %d did not finish: %s",
			   TPF_SSH_ROLE(c), c->where, c->host, c->port, msg);
		return TPF_EUNREACHABLE;
	}
	if (rc != LIBSSH2_ERROR_AUTHENTICATION_FAILED && rc != LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED)
		return tpf_errorx(d, c->where, "the key must be an unencrypted OpenSSH or PEM private key; for a key with a passphrase, add it to ssh-agent and leave ssh.private_key out",
				  "cannot use SSH private key '%s' for worker '%s': %s", t->o.private_key,
				  c->where, msg);
	tpf_errorx(d, c->where, "add the key's public half to the user's ~/.ssh/authorized_keys on the worker, or set ssh.user (Cloud TPU: tpuform adds it to the node's ssh-keys metadata, which the VM ignores when OS Login is on: if the project requires OS Login, set ssh.os_login: true)",
		   "public key authentication as '%s' to %s '%s' at %s port %d failed: "
		   "it refused key '%s'", c->user, TPF_SSH_ROLE(c), c->where, c->host, c->port,
		   t->o.private_key);
	return TPF_SSH_EREFUSED;
}

int tpf_ssh_auth(struct tpf_conn *c, double deadline, struct tpf_diags *d)
{
	int rc;
	if (!c->t->o.private_key)
		return auth_agent(c, c->user, deadline, d);
	if (tpf_ssh_auth_key_load(c, d))
		return TPF_ERROR;
	do
		rc = tpf_ssh_auth_key_try(c);
	while (tpf_ssh_again(c, rc, deadline));
	return tpf_ssh_auth_key_result(c, rc, d);
}
