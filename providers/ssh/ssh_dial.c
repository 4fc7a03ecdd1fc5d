/*
 * Connecting to a worker in steps that never block, for an event loop
 * (providers/transport.h dial_start, dial_step, dial_finish, dial_free;
 * issue 28): the same connection tpf_ssh_connect_retry makes in one
 * attempt (ssh_connect.c), cut where it would wait for the network.
 *   TCP: a non-blocking connect(2); done when poll(2) says POLLOUT and
 *        SO_ERROR is 0 (each address getaddrinfo gave, in turn).
 *   HANDSHAKE: libssh2_session_handshake on a non-blocking session, called
 *        again after each LIBSSH2_ERROR_EAGAIN when the socket is ready in
 *        the directions libssh2_session_block_directions names (libssh2's
 *        rule for non-blocking calls: the same call, the same arguments,
 *        until it returns something else); then the host key check, the
 *        same function and so the same rules as every other connection
 *        (ssh_hostkey.c: the pin, else the published keys, else first use).
 *   AUTH: libssh2_userauth_publickey_frommemory, called again the same way.
 * Each attempt has the connect timeout (ssh_transport.c,
 * TPUFORM_SSH_CONNECT_TIMEOUT), checked at every step: the loop must step
 * a dial at least every few seconds.
 *   RETRY: with w->once 0 (apply's provisioning), an attempt that failed
 *        for what time may fix is made again after a backoff, within the
 *        budget tpf_ssh_connect_retry has, by the same rules (a daemon not
 *        up yet: network errors; a key refused before the first contact
 *        or right after the key was installed), so that a fresh VM needs
 *        no retry loop of the caller's. While it backs off there is
 *        nothing to poll (fd -1); the next step after the backoff starts
 *        the next attempt on a new connection, to the addresses resolved
 *        at the start (resolving again could block). Only the last attempt's
 *        diagnostics reach the caller, as connect's do. With w->once 1
 *        (watch's probes, repeated every round anyway): one attempt, the
 *        caller backs off.
 * Through a bastion (ssh.proxy_jump) or with ssh-agent (no
 * ssh.private_key), dial_start makes the whole connection as connect does
 * (blocking, on the caller's thread), and the dial is done at its first
 * step: the bastion's tunnels are its hub's (ssh_jump_hub.c) and the
 * agent's socket is not driven by a loop.
 */
#include "providers/ssh/ssh_internal.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An attempt goes D_TCP, D_HANDSHAKE, D_AUTH, D_DONE in that order (the
 * step functions advance with phase++); D_BACKOFF waits between two. */
enum { D_TCP, D_HANDSHAKE, D_AUTH, D_DONE, D_FAILED, D_BACKOFF };

struct tpf_dial {
	struct tpf_conn *c;
	int phase;
	double deadline;           /* the attempt's, tpf_now_mono seconds */
	/* Retries (w->once 0): the first attempt's start, the budget
	 * (seconds, -1: no retry), whether a refused key may be retried, the
	 * number of the current attempt, the end of the backoff, and the
	 * current attempt's diagnostics (the caller gets only the last). */
	double start, budget;
	int key_pending;
	int attempt;
	double wake;
	struct tpf_diags last;
	struct addrinfo *res, *ai; /* the addresses, the next one to try */
	int syserr;                /* the last TCP error (errno) */
	/* Copies of what the host key check reads: the worker's pin and
	 * node name, and the access's published keys. */
	char *pin, *node;
	char **keys;
	size_t nkeys;
	char *keys_from;
	char known_pref[256];
};

/* Copy a's host keys into g (the caller's access lives only for the
 * start). */
static void keep_access(struct tpf_dial *g, const struct tpf_worker_ref *w,
			const struct tpf_ssh_access *a)
{
	g->pin = xstrdup(w->host_key);
	g->node = xstrdup(w->node);
	tpf_ssh_hostkey_pref(w->host_key ? NULL : a, g->known_pref, sizeof(g->known_pref));
	if (!a)
		return;
	g->keys_from = xstrdup(a->host_keys_from);
	g->nkeys = a->nhost_keys;
	g->keys = g->nkeys ? xcalloc(g->nkeys, sizeof(*g->keys)) : NULL;
	for (size_t i = 0; i < g->nkeys; i++)
		g->keys[i] = xstrdup(a->host_keys[i]);
}

/* The retry rule of tpf_ssh_connect_retry (ssh_connect.c) for g: before
 * the first contact, or right after a key was installed, a refused key may
 * be one the guest agent has not installed yet. Only with w->once 0: a
 * dial with w->once makes one attempt, pin or not. */
static void keep_retry(struct tpf_dial *g, struct tpf_ssh *t, const struct tpf_worker_ref *w,
		       const struct tpf_ssh_access *a)
{
	g->start = tpf_now_mono();
	g->attempt = 1;
	g->key_pending = !w->host_key || (a && a->fresh_key);
	g->budget = w->once ? -1 : g->key_pending ? t->o.retry_first : t->o.retry_pinned;
}

int tpf_ssh_dial_new(struct tpf_ssh *t, const struct tpf_worker_ref *w,
		     const struct tpf_ssh_access *a, struct tpf_dial **out, struct tpf_diags *d)
{
	*out = NULL;
	struct tpf_dial *g = xcalloc(1, sizeof(*g));
	tpf_diags_init(&g->last);
	keep_retry(g, t, w, a);
	int err;
	if (t->o.jump_host || !t->o.private_key) {
		/* Not driven by the loop: connect as before (see above). */
		err = tpf_ssh_connect_retry(t, w, a, 1, &g->c, d);
		g->phase = D_DONE;
	} else {
		err = tpf_ssh_conn_new(t, w, a, &g->c, d);
		if (!err) {
			int gai = 0;
			if (tpf_ssh_resolve(g->c->host, g->c->port, &g->res, &g->syserr, &gai))
				err = tpf_ssh_tcp_fail(g->c, g->syserr, gai, d);
		}
		g->ai = g->res;
		g->phase = D_TCP;
		g->deadline = tpf_now_mono() + t->o.connect_timeout;
		keep_access(g, w, a);
	}
	if (err) {
		g->phase = D_FAILED;
		tpf_ssh_dial_free(g);
		return err == TPF_SSH_EREFUSED ? TPF_ERROR : err;
	}
	*out = g;
	return 0;
}

/* What to poll(2) for while libssh2 waits on the socket. */
static void poll_libssh2(struct tpf_conn *c, struct pollfd *pfd)
{
	int dir = libssh2_session_block_directions(c->s);
	pfd->fd = c->fd;
	pfd->events = 0;
	if (dir & LIBSSH2_SESSION_BLOCK_INBOUND)
		pfd->events |= POLLIN;
	if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
		pfd->events |= POLLOUT;
	if (!pfd->events)
		pfd->events = POLLIN;
	pfd->revents = 0;
}

/* The TCP connection: 0 connected, 1 not yet, or an error. */
static int step_tcp(struct tpf_dial *g, struct pollfd *pfd, struct tpf_diags *d)
{
	struct tpf_conn *c = g->c;
	for (;;) {
		while (c->fd < 0) {
			if (!g->ai)
				return tpf_ssh_tcp_fail(c, g->syserr ? g->syserr : ECONNREFUSED, 0, d);
			c->fd = tpf_ssh_tcp_start(g->ai, c->t->o.keepalive, &g->syserr);
			g->ai = g->ai->ai_next;
		}
		int done = tpf_ssh_tcp_done(c->fd, &g->syserr);
		if (done > 0)
			return 0;
		if (done == 0) {
			*pfd = (struct pollfd){ .fd = c->fd, .events = POLLOUT };
			return 1;
		}
		close(c->fd); /* refused: the next address */
		c->fd = -1;
	}
}

/* The handshake and the host key check: 0 done, 1 not yet, or an error. */
static int step_handshake(struct tpf_dial *g, struct pollfd *pfd, struct tpf_diags *d)
{
	struct tpf_conn *c = g->c;
	int rc;
	if (!c->s && (rc = tpf_ssh_session_start(c, g->known_pref, d)))
		return rc;
	rc = libssh2_session_handshake(c->s, c->fd);
	if (rc == LIBSSH2_ERROR_EAGAIN) {
		poll_libssh2(c, pfd);
		return 1;
	}
	if (rc)
		return tpf_ssh_handshake_fail(c, d);
	struct tpf_worker_ref w = { .node = g->node, .host_key = g->pin };
	struct tpf_ssh_access a = {
		.host_keys = (const char *const *)g->keys,
		.nhost_keys = g->nkeys,
		.host_keys_from = g->keys_from,
	};
	return tpf_ssh_check_host_key(c, &w, g->nkeys ? &a : NULL, d);
}

/* Authentication: 0 done, 1 not yet, or an error. */
static int step_auth(struct tpf_dial *g, struct pollfd *pfd, struct tpf_diags *d)
{
	struct tpf_conn *c = g->c;
	if (tpf_ssh_auth_key_load(c, d))
		return TPF_ERROR;
	int rc = tpf_ssh_auth_key_try(c);
	if (rc == LIBSSH2_ERROR_EAGAIN) {
		poll_libssh2(c, pfd);
		return 1;
	}
	/* TPF_SSH_EREFUSED as it is: the retry rule tells it apart. */
	return tpf_ssh_auth_key_result(c, rc, d);
}

/* The error for an attempt past its deadline, in the words of the step it
 * was at. */
static int timed_out(struct tpf_dial *g, struct tpf_diags *d)
{
	struct tpf_conn *c = g->c;
	c->timed_out = 1;
	if (g->phase == D_TCP)
		return tpf_ssh_tcp_fail(c, ETIMEDOUT, 0, d);
	if (g->phase == D_HANDSHAKE)
		return tpf_ssh_handshake_fail(c, d);
	return tpf_ssh_auth_key_result(c, LIBSSH2_ERROR_TIMEOUT, d);
}

/* The current attempt as far as it goes without waiting, its diagnostics
 * into g->last: 1 not yet (*pfd set), 0 connected, or its error
 * (TPF_SSH_EREFUSED unmapped). */
static int step_attempt(struct tpf_dial *g, struct pollfd *pfd)
{
	int rc = 0;
	while (g->phase != D_DONE && !rc) {
		if (tpf_now_mono() >= g->deadline)
			return timed_out(g, &g->last);
		rc = g->phase == D_TCP	     ? step_tcp(g, pfd, &g->last)
		     : g->phase == D_HANDSHAKE ? step_handshake(g, pfd, &g->last)
					       : step_auth(g, pfd, &g->last);
		if (!rc)
			g->phase++;
	}
	return rc;
}

/* A new connection to c's worker, not connected yet: what
 * tpf_ssh_conn_new picked for it, copied (the next attempt's). */
static struct tpf_conn *conn_again(const struct tpf_conn *c)
{
	struct tpf_conn *n = xcalloc(1, sizeof(*n));
	n->t = c->t;
	n->user = xstrdup(c->user);
	n->fd = -1;
	n->where = xstrdup(c->where);
	n->host = xstrdup(c->host);
	n->port = c->port;
	return n;
}

/* After attempt g->attempt failed with err: whether to try again (then
 * g->wake is when), by tpf_ssh_connect_retry's rules. Never a changed
 * host key nor a bad configuration; a refused key only while it may not
 * be installed yet. */
static int retry_later(struct tpf_dial *g, int err)
{
	if (g->budget < 0)
		return 0;
	int retryable = err == TPF_EUNREACHABLE || (err == TPF_SSH_EREFUSED && g->key_pending);
	double delay = tpf_ssh_retry_delay(g->attempt);
	double now = tpf_now_mono();
	if (!retryable || delay < 0 || now + delay - g->start > g->budget)
		return 0;
	g->wake = now + delay;
	return 1;
}

/* The last attempt failed for good: its diagnostics to d, saying how long
 * we tried when it was not the first (as tpf_ssh_connect_retry says it). */
static void report_failure(struct tpf_dial *g, struct tpf_diags *d)
{
	for (size_t i = 0; g->attempt > 1 && i < g->last.n; i++) {
		struct tpf_diag *it = &g->last.items[i];
		if (it->severity != TPF_SEV_ERROR)
			continue;
		char *s = xasprintf("%s (after %d attempts over %.0f s)", it->summary, g->attempt,
				    tpf_now_mono() - g->start);
		free(it->summary);
		it->summary = s;
	}
	tpf_diags_move(d, &g->last);
}

int tpf_ssh_dial_step(struct tpf_dial *g, struct pollfd *pfd, struct tpf_diags *d)
{
	*pfd = (struct pollfd){ .fd = -1 };
	if (g->phase == D_FAILED)
		return tpf_errorx(d, NULL, NULL, "this connection attempt failed already");
	if (g->phase == D_BACKOFF) {
		if (tpf_now_mono() < g->wake)
			return 1;
		/* The next attempt: the same addresses, its own timeout. */
		g->attempt++;
		g->ai = g->res;
		g->syserr = 0;
		g->deadline = tpf_now_mono() + g->c->t->o.connect_timeout;
		g->phase = D_TCP;
	}
	int rc = step_attempt(g, pfd);
	if (rc == 0)
		tpf_diags_move(d, &g->last); /* what the attempt noted, if anything */
	if (rc >= 0)
		return rc;
	/* Nothing polite to say to a peer that failed us, and the loop must
	 * not wait on it: no disconnect message. */
	*pfd = (struct pollfd){ .fd = -1 };
	int again = retry_later(g, rc);
	struct tpf_conn *next = again ? conn_again(g->c) : NULL;
	g->c->broken = 1;
	tpf_ssh_conn_free(g->c);
	g->c = next;
	if (again) {
		tpf_diags_release(&g->last); /* a failure the caller need not see */
		g->phase = D_BACKOFF;
		return 1;
	}
	g->phase = D_FAILED;
	report_failure(g, d);
	return rc == TPF_SSH_EREFUSED ? TPF_ERROR : rc;
}

int tpf_ssh_dial_finish(struct tpf_dial *g, struct tpf_conn **out, char **host_key_out)
{
	*out = NULL;
	if (host_key_out)
		*host_key_out = NULL;
	if (g->phase != D_DONE || !g->c)
		return TPF_ERROR;
	if (host_key_out)
		*host_key_out = xstrdup(g->c->host_key);
	*out = g->c;
	g->c = NULL;
	return 0;
}

void tpf_ssh_dial_free(struct tpf_dial *g)
{
	if (!g)
		return;
	if (g->c) {
		g->c->broken = 1;
		tpf_ssh_conn_free(g->c);
	}
	if (g->res)
		freeaddrinfo(g->res);
	tpf_diags_release(&g->last);
	for (size_t i = 0; i < g->nkeys; i++)
		free(g->keys[i]);
	free(g->keys);
	free(g->keys_from);
	free(g->pin);
	free(g->node);
	free(g);
}
