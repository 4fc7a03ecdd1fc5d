/*
 * One tunnel's life on a shared bastion session (ssh_jump_hub.c says how
 * the sessions are shared and driven): its channel opened (one open at a
 * time per session, and what happens when the bastion does not answer),
 * the bytes relayed both ways between the channel and the worker
 * session's socketpair, and its channel closed. Every call here is made
 * by the hub thread under h->mu, so libssh2's rule for non-blocking
 * sessions (a call that left a packet half sent is repeated before any
 * other sends) is kept by one owner: half_sent and pending_turn.
 */
#include "providers/ssh/ssh_jump_hub_internal.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bytes libssh2 received on this thread's counted sessions. */
static _Thread_local unsigned long long received;

/* libssh2's recv, counting (LIBSSH2_RECV_FUNC; returns -errno on error as
 * libssh2's own does). */
static LIBSSH2_RECV_FUNC(counted_recv)
{
	(void)abstract;
	ssize_t n = recv(socket, buffer, length, flags);
	if (n > 0)
		received += (unsigned long long)n;
	return n < 0 ? -errno : n;
}

void tpf_ssh_tunnel_count_recv(LIBSSH2_SESSION *s)
{
	libssh2_session_callback_set(s, LIBSSH2_CALLBACK_RECV, (void *)counted_recv);
}

unsigned long long tpf_ssh_tunnel_received(void)
{
	return received;
}

/* Queue c for the next turn (once). */
void tpf_ssh_tunnel_chan_queue(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c)
{
	if (c->ready)
		return;
	c->ready = 1;
	XGROW(h->work, h->nwork + 1, h->awork);
	h->work[h->nwork++] = c;
}
/* c's caller let it go (once): it closes from now on. */
void tpf_ssh_tunnel_chan_release(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c, double by)
{
	if (!c->released) {
		c->released = 1;
		c->hb->n_released++;
	}
	c->release_by = by;
	tpf_ssh_tunnel_chan_queue(h, c);
}
/* c's open ended (state set): wake its caller alone. A broadcast to every
 * caller at every turn woke dozens of threads waiting for their own opens
 * (a third of apply's CPU at 256 workers). */
static void open_ended(struct tpf_ssh_hub_chan *c, enum chan_state state)
{
	if (c->hb->opening == c)
		c->hb->opening = NULL;
	if (c->state == CH_OPENING && c->hb->n_opening)
		c->hb->n_opening--;
	c->state = state;
	pthread_cond_signal(&c->opened);
}
/* After a call on hb's session returned rc: 1 when it must be repeated
 * before anything else is sent (EAGAIN with a packet half out). */
int tpf_ssh_tunnel_half_sent(struct tpf_ssh_hub_bastion *hb, long rc, enum pending_op op,
		     struct tpf_ssh_hub_chan *c)
{
	if (rc != LIBSSH2_ERROR_EAGAIN ||
	    !(libssh2_session_block_directions(hb->b->s) & LIBSSH2_SESSION_BLOCK_OUTBOUND))
		return 0;
	hb->pending = op;
	hb->pending_ch = c;
	return 1;
}
/* A session-level failure: every tunnel through hb ends (their worker
 * sessions see the end of their sockets). */
void tpf_ssh_tunnel_bastion_fail(struct tpf_ssh_hub_bastion *hb)
{
	hb->dead = 1;
	hb->b->broken = 1;
	hb->pending = P_NONE;
	for (struct tpf_ssh_hub_chan *c = hb->chans; c; c = c->next) {
		if (c->state == CH_OPENING) {
			if (!c->gave_up) {
				c->err = TPF_EUNREACHABLE;
				free(c->why);
				c->why = xstrdup("the connection to the bastion was lost");
			}
			open_ended(c, CH_FAILED);
		}
		if (c->local >= 0)
			shutdown(c->local, SHUT_RDWR);
		c->local_eof = c->remote_eof = 1;
	}
}
/* An error rc from a call on c's channel: the session's when the network
 * is to blame, else c's alone. */
static void chan_error(struct tpf_ssh_hub_chan *c, long rc)
{
	if (tpf_ssh_net_error((int)rc) && rc != LIBSSH2_ERROR_EAGAIN) {
		tpf_ssh_tunnel_bastion_fail(c->hb);
		return;
	}
	if (c->local >= 0)
		shutdown(c->local, SHUT_RDWR);
	c->local_eof = c->remote_eof = 1;
}
/* Tell c's caller its open failed (why) without waiting for libssh2. */
static void give_up(struct tpf_ssh_hub_chan *c, const char *why)
{
	c->gave_up = 1;
	c->err = TPF_EUNREACHABLE;
	free(c->why);
	c->why = xstrdup(why);
	pthread_cond_signal(&c->opened);
}
/* The next tunnel of hb to open, oldest first; those whose callers gave
 * up before it started end here. */
static struct tpf_ssh_hub_chan *next_to_open(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb)
{
	for (struct tpf_ssh_hub_chan *c = hb->chans; c; c = c->next) {
		if (c->state != CH_OPENING)
			continue;
		if (!c->gave_up)
			return c;
		open_ended(c, CH_FAILED);
		tpf_ssh_tunnel_chan_queue(h, c); /* released: its turn frees it */
	}
	return NULL;
}
/* An open libssh2 has not finished by c's deadline. Its state is the
 * session's (another open would continue this one), so it goes on: the
 * caller stops waiting, the bastion takes no new tunnel until it ends
 * (hb->stuck), and the tunnels queued behind it are moved: their callers
 * try another bastion connection (TPF_SSH_HUB_MOVED). The others keep relaying: one worker that
 * does not answer the bastion must not cut 63 others. */
static void open_late(struct tpf_ssh_hub_bastion *hb, struct tpf_ssh_hub_chan *c, double now)
{
	give_up(c, "timed out");
	c->deadline = now + 1e9; /* from now on, only the bastion's answer */
	hb->stuck = 1;
	hb->stuck_since = now;
	for (struct tpf_ssh_hub_chan *o = hb->chans; o; o = o->next)
		if (o != c && o->state == CH_OPENING && !o->gave_up) {
			o->moved = 1;
			give_up(o, "another channel's open holds the bastion connection");
		}
}
/* Tunnels of hb waiting to open, one at a time (libssh2 keeps a channel
 * open's state in the session). An open sent waits for the bastion's
 * answer, which comes with the session's readiness or with any call on
 * it (used), or for its deadline; force: call all the same (it holds a
 * half-sent packet, or a walk may have read the answer). */
void tpf_ssh_tunnel_open_step(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb, double now,
		      int force)
{
	while (hb->n_opening && !hb->dead) {
		struct tpf_ssh_hub_chan *c = hb->opening;
		if (c && !force && !hb->ready && !hb->used && now < c->deadline)
			return;
		force = 0;
		if (!c && !(c = next_to_open(h, hb)))
			return;
		hb->opening = c;
		/* The originator fields are informational (RFC 4254 section
		 * 7.2); ssh(1) -W sends these too. */
		unsigned long long r0 = received;
		c->ch = libssh2_channel_direct_tcpip_ex(hb->b->s, c->host, c->port, "127.0.0.1", 0);
		hb->used |= received != r0;
		if (c->ch) {
			hb->stuck = 0;
			open_ended(c, CH_OPEN);
			tpf_ssh_tunnel_chan_watch(h, c);
			if (c->gave_up)
				tpf_ssh_tunnel_chan_queue(h, c); /* released: its turn closes it */
			continue;
		}
		int rc = libssh2_session_last_errno(hb->b->s);
		if (rc == LIBSSH2_ERROR_EAGAIN) {
			if (now >= c->deadline && !c->gave_up)
				open_late(hb, c, now);
			tpf_ssh_tunnel_half_sent(hb, rc, P_OPEN, c);
			return;
		}
		hb->stuck = 0;
		if (!c->gave_up) {
			char *msg = NULL;
			libssh2_session_last_error(hb->b->s, &msg, NULL, 0);
			c->err = TPF_EUNREACHABLE;
			c->why = xstrdup(msg && *msg ? msg : "refused");
		}
		/* A refused channel is the worker's sshd not up yet, as a
		 * refused TCP connection would be: retried by the caller. */
		open_ended(c, CH_FAILED);
		if (c->gave_up)
			tpf_ssh_tunnel_chan_queue(h, c);
		if (tpf_ssh_net_error(rc))
			tpf_ssh_tunnel_bastion_fail(hb);
		if (hb->pending != P_NONE)
			return;
	}
}
/* The worker session's bytes into the channel. 0, or 1 when a half-sent
 * packet stops the session. */
static int relay_up(struct tpf_ssh_hub_chan *c)
{
	struct pump *p = &c->up;
	if (!p->buf && !c->local_eof) {
		p->buf = xmalloc(RELAY_BUF);
		ssize_t n = recv(c->local, p->buf, RELAY_BUF, 0);
		if (n > 0)
			p->len = (size_t)n, p->off = 0;
		else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			c->local_eof = 1;
	}
	while (p->off < p->len) {
		ssize_t w = libssh2_channel_write(c->ch, p->buf + p->off, p->len - p->off);
		if (w == LIBSSH2_ERROR_EAGAIN)
			return tpf_ssh_tunnel_half_sent(c->hb, w, P_WRITE, c);
		if (w < 0) {
			chan_error(c, w);
			break;
		}
		p->off += (size_t)w;
	}
	if (p->off >= p->len) {
		free(p->buf);
		memset(p, 0, sizeof(*p));
	}
	return 0;
}
/* The channel's bytes to the worker session. 0, or 1 as relay_up. */
static int relay_down(struct tpf_ssh_hub_chan *c)
{
	struct pump *p = &c->down;
	if (!p->buf && !c->remote_eof) {
		p->buf = xmalloc(RELAY_BUF);
		ssize_t r = libssh2_channel_read(c->ch, p->buf, RELAY_BUF);
		if (r > 0) {
			p->len = (size_t)r, p->off = 0;
		} else if (r == LIBSSH2_ERROR_EAGAIN) {
			if (tpf_ssh_tunnel_half_sent(c->hb, r, P_READ, c)) {
				free(p->buf);
				memset(p, 0, sizeof(*p));
				return 1;
			}
		} else if (r < 0) {
			chan_error(c, r);
		}
		if (!p->len && !c->remote_eof && libssh2_channel_eof(c->ch)) {
			/* The worker closed: its session sees the end. */
			c->remote_eof = 1;
			shutdown(c->local, SHUT_WR);
		}
	}
	while (p->off < p->len) {
		ssize_t n = send(c->local, p->buf + p->off, p->len - p->off, MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n < 0) {
			c->local_eof = c->remote_eof = 1;
			p->off = p->len;
			break;
		}
		p->off += (size_t)n;
	}
	if (p->off >= p->len) {
		free(p->buf);
		memset(p, 0, sizeof(*p));
	}
	return 0;
}
/* Close a finished tunnel's channel (libssh2_channel_free: CLOSE both
 * ways). 1 when it is done (or given up: the session frees what is left
 * when it ends), 0 not yet. */
static int close_step(struct tpf_ssh_hub_chan *c, double now)
{
	if (!c->ch || c->hb->dead)
		return 1;
	int rc = libssh2_channel_free(c->ch);
	if (rc == LIBSSH2_ERROR_EAGAIN && now < c->release_by) {
		tpf_ssh_tunnel_half_sent(c->hb, rc, P_FREE, c);
		return 0;
	}
	if (rc == LIBSSH2_ERROR_EAGAIN)
		c->hb->b->broken = 1; /* a close half done: no polite goodbye */
	c->ch = rc ? c->ch : NULL;
	return 1;
}
void tpf_ssh_tunnel_chan_drop(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c)
{
	struct tpf_ssh_hub_bastion *hb = c->hb;
	for (struct tpf_ssh_hub_chan **pp = &hb->chans; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	if (hb->pending_ch == c)
		hb->pending = P_NONE, hb->pending_ch = NULL;
	if (c->released && hb->n_released)
		hb->n_released--;
	/* A walk may have given c its turn while it sat in the work list:
	 * no entry may outlive it. */
	for (size_t i = 0; i < h->nwork; i++)
		if (h->work[i] == c)
			h->work[i] = NULL;
	if (c->state == CH_OPENING && hb->n_opening)
		hb->n_opening--;
	if (hb->opening == c)
		hb->opening = NULL;
	if (c->local >= 0) {
		tpf_evset_forget(h->es, c->local);
		close(c->local);
	}
	free(c->up.buf);
	free(c->down.buf);
	free(c->host);
	free(c->why);
	pthread_cond_destroy(&c->opened);
	free(c);
	if (hb->room_taken)
		hb->room_taken--;
}
/* One tunnel's turn: relay, and end it once its caller released it and
 * its worker session's last bytes went out. 1 when c was freed. */
int tpf_ssh_tunnel_chan_turn(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c, double now)
{
	if (c->state == CH_OPEN && !c->hb->dead) {
		if (relay_up(c) || relay_down(c))
			return 0; /* a half-sent packet stops the session */
	}
	/* An open libssh2 may still be making stays until it ends: the
	 * session's open state is its, and a next open would be handed its
	 * channel, another worker's (open_step, next_to_open). */
	if (c->released && c->state != CH_OPENING) {
		int flushed = c->local_eof && !c->up.len;
		if ((c->state != CH_OPEN || flushed || now >= c->release_by) && close_step(c, now)) {
			c->state = CH_CLOSED;
			tpf_ssh_tunnel_chan_drop(h, c);
			return 1;
		}
	}
	tpf_ssh_tunnel_chan_watch(h, c);
	return 0;
}
/* Repeat the call holding a half-sent packet on hb's session. 1 while it
 * still holds one. */
int tpf_ssh_tunnel_pending_turn(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb, double now)
{
	struct tpf_ssh_hub_chan *c = hb->pending_ch;
	enum pending_op op = hb->pending;
	hb->pending = P_NONE;
	hb->pending_ch = NULL;
	unsigned long long r0 = received;
	int next = 0;
	switch (op) {
	case P_OPEN:
		tpf_ssh_tunnel_open_step(h, hb, now, 1);
		break;
	case P_PULL:
		tpf_ssh_tunnel_session_pull(hb, c);
		break;
	case P_WRITE:
		relay_up(c);
		break;
	case P_READ:
		relay_down(c);
		break;
	case P_FREE:
		if (close_step(c, now)) {
			c->state = CH_CLOSED;
			tpf_ssh_tunnel_chan_drop(h, c);
		}
		break;
	case P_KEEPALIVE:
		tpf_ssh_tunnel_half_sent(hb, libssh2_keepalive_send(hb->b->s, &next), P_KEEPALIVE, NULL);
		break;
	case P_NONE:
		break;
	}
	hb->used |= received != r0;
	return hb->pending != P_NONE;
}
/* What tunnel c's socket is waited on for. */
void tpf_ssh_tunnel_chan_watch(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c)
{
	if (c->local < 0 || c->state != CH_OPEN || c->ev == -2)
		return;
	if (c->local_eof && c->remote_eof) {
		/* Both ways ended: a hung-up socket would be reported ready
		 * on every wait. */
		tpf_evset_forget(h->es, c->local);
		c->ev = -2;
		return;
	}
	/* Quiet when the bytes it has cannot move yet: the session's
	 * readiness brings it back. */
	short want = (short)((!c->up.len && !c->local_eof ? POLLIN : 0) | (c->down.len ? POLLOUT : 0));
	if (want != c->ev && !tpf_evset_watch(h->es, c->local, want, c))
		c->ev = want;
}
/* Read what hb's session has: libssh2 reads the socket only inside a
 * call, and queues what it read per channel. A zero-length read of one
 * channel drains the socket into those queues (and sends the channel's
 * window adjustment when due), whatever state the other tunnels are in,
 * so a readable socket never stays readable, which would wake the hub
 * again and again. 1 when that left a packet half sent. */
int tpf_ssh_tunnel_session_pull(struct tpf_ssh_hub_bastion *hb, struct tpf_ssh_hub_chan *only)
{
	for (struct tpf_ssh_hub_chan *c = only ? only : hb->chans; c; c = only ? NULL : c->next) {
		if (!c->ch || c->state != CH_OPEN)
			continue;
		char none;
		ssize_t r = libssh2_channel_read(c->ch, &none, 0);
		if (r < 0 && r != LIBSSH2_ERROR_EAGAIN)
			chan_error(c, r);
		return tpf_ssh_tunnel_half_sent(hb, r, P_PULL, c);
	}
	return 0;
}
/* Has libssh2 something for tunnel c that a turn would move? Data or
 * the end queued for it while its worker side can take them
 * (libssh2_poll_channel_read and libssh2_channel_eof look at the
 * session's queue, no system call), or its bytes waiting for a window
 * that opened. Any call on a session may read packets for every tunnel of
 * it, so this is asked of every tunnel of a session that was used: a
 * tunnel whose data a neighbour's call read would otherwise wait for the
 * socket's next readiness, which may never come. */
int tpf_ssh_tunnel_chan_actionable(const struct tpf_ssh_hub_chan *c)
{
	if (c->state != CH_OPEN || !c->ch || c->hb->dead)
		return 0;
	if (!c->down.len && !c->remote_eof &&
	    (libssh2_poll_channel_read(c->ch, 0) || libssh2_channel_eof(c->ch)))
		return 1;
	return c->up.len && libssh2_channel_window_write_ex(c->ch, NULL) > 0;
}
/* Does tunnel c need a turn? Queued, actionable, or (all: its session's
 * socket was ready, or a sweep) holding bytes or closing. */
int tpf_ssh_tunnel_chan_due(const struct tpf_ssh_hub_chan *c, int all)
{
	if (c->ready)
		return 1;
	if (all && (c->released || c->up.len || c->down.len))
		return 1;
	return tpf_ssh_tunnel_chan_actionable(c);
}
