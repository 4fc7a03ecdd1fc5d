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
 * Sharing the bastion (ssh_jump_hub.c): the bastion connections belong to
 * the transport, not to a worker connection. A worker connection takes a
 * place on a bastion connection that has room (at most
 * TPF_SSH_HUB_CHANNELS = 64 tunnels each), else connects a new one (one at
 * a time per transport, so a burst of connections shares the first); one
 * thread relays every tunnel of every bastion connection. An idle bastion
 * connection is kept 60 s for the next command. So a watch holding 2,304
 * job waits behind a bastion holds 36 bastion connections and one relay
 * thread; before, it held 2,304 of each. A bastion that drops one
 * connection loses at most 64 workers' commands, which reconnect as after
 * any drop. OpenSSH's sshd does not count direct-tcpip channels against
 * MaxSessions (10), only shells, commands and subsystems.
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
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct tpf_ssh_jump {
	struct tpf_ssh_hub *hub;
	struct tpf_ssh_hub_chan *chan; /* the tunnel, the hub's */
	char *known_line;              /* the bastion's host key, "TYPE BASE64" */
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

/* ---- a tunnel ------------------------------------------------------------ */

void tpf_ssh_jump_free(struct tpf_ssh_jump *j)
{
	if (!j)
		return;
	tpf_ssh_hub_release(j->hub, j->chan);
	free(j->known_line);
	free(j);
}

const char *tpf_ssh_jump_known_line(const struct tpf_ssh_jump *j)
{
	return j ? j->known_line : NULL;
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

/* A bastion connection with room for c's tunnel: one that has room, else
 * a new one, connected by one caller at a time (the others then share
 * it). */
static int bastion_take(struct tpf_ssh_hub *h, struct tpf_conn *c, double deadline,
			struct tpf_ssh_hub_bastion **out, struct tpf_diags *d)
{
	int err = 0;
	*out = tpf_ssh_hub_take(h);
	if (*out)
		return 0;
	tpf_ssh_hub_dial_lock(h, 1);
	*out = tpf_ssh_hub_take(h);
	if (!*out) {
		struct tpf_conn *b = NULL;
		err = bastion_open(c, &b, deadline, d);
		if (!err)
			*out = tpf_ssh_hub_add(h, b);
	}
	tpf_ssh_hub_dial_lock(h, 0);
	return err;
}

int tpf_ssh_jump_open(struct tpf_conn *c, double deadline, struct tpf_diags *d)
{
	struct tpf_ssh_hub *h = tpf_ssh_hub_of(c->t);
	if (!h)
		return tpf_errorx(d, c->where, NULL, "cannot start the bastion relay for worker '%s': %s",
				  c->where, strerror(errno));
	double late = tpf_ssh_hub_stuck_for(h, c->host, c->port);
	if (late > 0)
		return tpf_errorx(d, c->where,
				  "is the worker's VM up? The bastion still tries to reach its internal "
				  "address for an earlier attempt",
				  "the bastion %s port %d could not open a connection to worker '%s' at %s "
				  "port %d: timed out (no answer for %.0f s)", c->t->o.jump_host,
				  c->t->o.jump_port > 0 ? c->t->o.jump_port : 22, c->where, c->host,
				  c->port, late),
		       TPF_EUNREACHABLE;
	struct tpf_ssh_hub_chan *chan = NULL;
	char *why = NULL, *known = NULL;
	int fd = -1, err = TPF_SSH_HUB_MOVED;
	/* Moved: the bastion connection it waited on is held by a late open
	 * of another worker; the next take skips that connection. */
	for (int tries = 0; err == TPF_SSH_HUB_MOVED && tries < 8; tries++) {
		struct tpf_ssh_hub_bastion *hb = NULL;
		free(why);
		free(known);
		why = known = NULL;
		err = bastion_take(h, c, deadline, &hb, d);
		if (err)
			return err;
		known = tpf_ssh_hub_known_line(h, hb);
		err = tpf_ssh_hub_open(h, hb, c->host, c->port, deadline, &chan, &fd, &why);
	}
	if (err) {
		tpf_errorx(d, c->where,
			   "is the worker's VM up and its sshd listening there? The bastion must be able "
			   "to reach the worker's internal address (firewall rules of the network) and "
			   "allow forwarding (sshd_config AllowTcpForwarding)",
			   "the bastion %s port %d could not open a connection to worker '%s' at %s port "
			   "%d: %s", c->t->o.jump_host, c->t->o.jump_port > 0 ? c->t->o.jump_port : 22,
			   c->where, c->host, c->port, why ? why : "refused");
		free(why);
		free(known);
		return err == TPF_SSH_HUB_MOVED ? TPF_EUNREACHABLE : err;
	}
	struct tpf_ssh_jump *j = xcalloc(1, sizeof(*j));
	j->hub = h;
	j->chan = chan;
	j->known_line = known;
	c->fd = fd;
	c->jump = j;
	return 0;
}
