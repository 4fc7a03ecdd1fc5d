/*
 * The bastion connections of one transport, shared (ssh.proxy_jump; the
 * tunnels themselves are ssh_jump.c's): one thread, the hub, owns every
 * bastion session once it is authenticated and relays every worker
 * tunnel through it, so a fleet of thousands of workers behind a bastion
 * costs one thread and a few bastion connections, not a thread and a
 * connection per worker (issue 28).
 *
 * Sharing: at most TPF_SSH_HUB_CHANNELS tunnels (direct-tcpip channels,
 * RFC 4254 section 7.2) per bastion connection; a tunnel asked for when
 * every connection is full makes a new one. OpenSSH's sshd limits
 * sessions per connection (MaxSessions, 10 by default) but not
 * direct-tcpip channels; the limit here keeps a dropped bastion
 * connection from taking more than that many workers' commands with it,
 * and keeps libssh2's per-packet channel lookup (a list walk) short.
 * 2,304 workers' job waits go through 36 bastion connections.
 *
 * libssh2 sessions are not thread-safe, so after the hand-over (a caller
 * thread connects and authenticates a bastion session in blocking steps,
 * then gives it to the hub) every call on it is made by the hub thread,
 * under h->mu; callers only queue requests and wait for their own. The hub
 * follows libssh2's rule for non-blocking sessions: a call that returned
 * LIBSSH2_ERROR_EAGAIN with a packet half sent (the session blocked
 * outbound) is repeated, with the same arguments, before any other call
 * that sends on that session (libssh2 1.10 transport.c send_existing
 * answers LIBSSH2_ERROR_BAD_USE otherwise), and channel opens, whose
 * state libssh2 keeps per session, go one at a time.
 */
#include "providers/ssh/ssh_internal.h"
#include "util/evset.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bytes buffered each way per tunnel while the other end is not ready;
 * allocated only then (SSH packets carry at most 32 KiB, RFC 4253 6.1). */
#define RELAY_BUF 32768
/* Seconds a released tunnel has to flush the inner session's goodbye and
 * close its channel politely. */
#define CLOSE_GRACE 2.0
/* Seconds an idle bastion connection (no tunnel) is kept for the next. */
#define IDLE_KEEP 60.0
/* Ready descriptors taken per wait. */
#define READY_MAX 256

enum tag { TAG_WAKE = 1, TAG_BASTION, TAG_CHAN };
enum chan_state { CH_OPENING, CH_OPEN, CH_FAILED, CH_CLOSED };
/* The call that holds a half-sent packet on a bastion session. */
enum pending_op { P_NONE, P_OPEN, P_PULL, P_WRITE, P_READ, P_FREE, P_KEEPALIVE };

struct pump {
	char *buf; /* NULL while empty */
	size_t len, off;
};

struct tpf_ssh_hub_chan {
	enum tag tag;
	struct tpf_ssh_hub_bastion *hb;
	LIBSSH2_CHANNEL *ch;
	enum chan_state state;
	int local;             /* the hub's end of the socketpair */
	char *host;            /* where the bastion connects */
	int port;
	double deadline;       /* of the open */
	int err;               /* a failed open: TPF_EUNREACHABLE or TPF_ERROR */
	char *why;             /* and its message */
	int released;          /* the caller is done with it */
	double release_by;     /* monotonic: give up the polite close */
	int local_eof, remote_eof;
	struct pump up, down;  /* worker session -> channel, channel -> session */
	short ev;              /* events asked of the evset; -1 none yet, -2 forgotten */
	int ready;             /* queued for a turn (h->work), or due one */
	pthread_cond_t opened; /* signalled when state leaves CH_OPENING */
	int gave_up;           /* its caller was told the open failed; the
				* open itself may go on (open_step) */
	int moved;             /* ...because another's open holds the session:
				* the caller tries another bastion connection */
	struct tpf_ssh_hub_chan *next;
};

struct tpf_ssh_hub_bastion {
	enum tag tag;
	struct tpf_conn *b;
	size_t room_taken;     /* tunnels open or asked for */
	int dead;              /* its session failed: no new tunnel */
	enum pending_op pending;
	struct tpf_ssh_hub_chan *pending_ch;
	struct tpf_ssh_hub_chan *chans;
	double idle_since;     /* monotonic, 0: in use */
	double keepalive_at;
	size_t n_opening;      /* tunnels in CH_OPENING */
	struct tpf_ssh_hub_chan *opening; /* the one whose open was sent */
	int stuck;             /* that open passed its deadline: no new tunnel */
	double stuck_since;    /* monotonic */
	size_t n_released;     /* tunnels released, not yet dropped */
	double sweep_at;       /* next walk over released tunnels (monotonic) */
	short ev;
	int ready;             /* its socket was ready this turn */
	int used;              /* a call was made on its session this turn */
	int again;             /* libssh2 holds what a tunnel's turn would move */
	struct tpf_ssh_hub_bastion *next;
};

struct tpf_ssh_hub {
	pthread_mutex_t mu, dial_mu;
	enum tag wake_tag;
	int wake;              /* eventfd */
	struct tpf_evset *es;
	pthread_t thread;
	int stop;
	double keepalive;      /* seconds, 0: none */
	struct tpf_ssh_hub_bastion *bastions;
	/* Tunnels due a turn: their sockets were ready, or their callers
	 * released them. Only these, and the tunnels of a session that was
	 * ready, get a turn: a turn costs what happened, not the number of
	 * tunnels. */
	struct tpf_ssh_hub_chan **work;
	size_t nwork, awork;
};

/* Queue c for the next turn (once). */
static void chan_queue(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c)
{
	if (c->ready)
		return;
	c->ready = 1;
	XGROW(h->work, h->nwork + 1, h->awork);
	h->work[h->nwork++] = c;
}

/* c's caller let it go (once): it closes from now on. */
static void chan_release(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c, double by)
{
	if (!c->released) {
		c->released = 1;
		c->hb->n_released++;
	}
	c->release_by = by;
	chan_queue(h, c);
}

static void hub_wake(struct tpf_ssh_hub *h)
{
	uint64_t one = 1;
	if (write(h->wake, &one, sizeof(one)) < 0) {
		/* The counter is full: the hub has wakes pending anyway. */
	}
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

/* ---- what a session call left behind ------------------------------------ */

/* After a call on hb's session returned rc: 1 when it must be repeated
 * before anything else is sent (EAGAIN with a packet half out). */
static int half_sent(struct tpf_ssh_hub_bastion *hb, long rc, enum pending_op op,
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
static void bastion_fail(struct tpf_ssh_hub_bastion *hb)
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
		bastion_fail(c->hb);
		return;
	}
	if (c->local >= 0)
		shutdown(c->local, SHUT_RDWR);
	c->local_eof = c->remote_eof = 1;
}

static int session_pull(struct tpf_ssh_hub_bastion *hb, struct tpf_ssh_hub_chan *only);
static void chan_watch(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c);

/* ---- opening ------------------------------------------------------------- */

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
		chan_queue(h, c); /* released: its turn frees it */
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
static void open_step(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb, double now,
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
		c->ch = libssh2_channel_direct_tcpip_ex(hb->b->s, c->host, c->port, "127.0.0.1", 0);
		hb->used = 1;
		if (c->ch) {
			hb->stuck = 0;
			open_ended(c, CH_OPEN);
			chan_watch(h, c);
			if (c->gave_up)
				chan_queue(h, c); /* released: its turn closes it */
			continue;
		}
		int rc = libssh2_session_last_errno(hb->b->s);
		if (rc == LIBSSH2_ERROR_EAGAIN) {
			if (now >= c->deadline && !c->gave_up)
				open_late(hb, c, now);
			half_sent(hb, rc, P_OPEN, c);
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
			chan_queue(h, c);
		if (tpf_ssh_net_error(rc))
			bastion_fail(hb);
		if (hb->pending != P_NONE)
			return;
	}
}

/* ---- relaying ------------------------------------------------------------- */

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
			return half_sent(c->hb, w, P_WRITE, c);
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
			if (half_sent(c->hb, r, P_READ, c)) {
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
		half_sent(c->hb, rc, P_FREE, c);
		return 0;
	}
	if (rc == LIBSSH2_ERROR_EAGAIN)
		c->hb->b->broken = 1; /* a close half done: no polite goodbye */
	c->ch = rc ? c->ch : NULL;
	return 1;
}

static void chan_drop(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c)
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
static int chan_turn(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c, double now)
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
			chan_drop(h, c);
			return 1;
		}
	}
	chan_watch(h, c);
	return 0;
}

/* Repeat the call holding a half-sent packet on hb's session. 1 while it
 * still holds one. */
static int pending_turn(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb, double now)
{
	struct tpf_ssh_hub_chan *c = hb->pending_ch;
	enum pending_op op = hb->pending;
	hb->pending = P_NONE;
	hb->used = 1;
	hb->pending_ch = NULL;
	int next = 0;
	switch (op) {
	case P_OPEN:
		open_step(h, hb, now, 1);
		break;
	case P_PULL:
		session_pull(hb, c);
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
			chan_drop(h, c);
		}
		break;
	case P_KEEPALIVE:
		half_sent(hb, libssh2_keepalive_send(hb->b->s, &next), P_KEEPALIVE, NULL);
		break;
	case P_NONE:
		break;
	}
	return hb->pending != P_NONE;
}

/* ---- the hub's thread ----------------------------------------------------- */

/* What tunnel c's socket is waited on for. */
static void chan_watch(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c)
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

/* What hb's session's socket is waited on for. */
static void bastion_watch(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb)
{
	/* Without a tunnel nothing reads the session: its socket is not
	 * waited on for input (keepalives ask for no reply, below). */
	short ev = hb->chans ? POLLIN : 0;
	if (!hb->dead && (libssh2_session_block_directions(hb->b->s) & LIBSSH2_SESSION_BLOCK_OUTBOUND))
		ev |= POLLOUT;
	if (ev != hb->ev && !tpf_evset_watch(h->es, hb->b->fd, ev, hb))
		hb->ev = ev;
}

/* Read what hb's session has: libssh2 reads the socket only inside a
 * call, and queues what it read per channel. A zero-length read of one
 * channel drains the socket into those queues (and sends the channel's
 * window adjustment when due), whatever state the other tunnels are in,
 * so a readable socket never stays readable, which would wake the hub
 * again and again. 1 when that left a packet half sent. */
static int session_pull(struct tpf_ssh_hub_bastion *hb, struct tpf_ssh_hub_chan *only)
{
	for (struct tpf_ssh_hub_chan *c = only ? only : hb->chans; c; c = only ? NULL : c->next) {
		if (!c->ch || c->state != CH_OPEN)
			continue;
		char none;
		ssize_t r = libssh2_channel_read(c->ch, &none, 0);
		if (r < 0 && r != LIBSSH2_ERROR_EAGAIN)
			chan_error(c, r);
		return half_sent(hb, r, P_PULL, c);
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
static int chan_actionable(const struct tpf_ssh_hub_chan *c)
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
static int chan_due(const struct tpf_ssh_hub_chan *c, int all)
{
	if (c->ready)
		return 1;
	if (all && (c->released || c->up.len || c->down.len))
		return 1;
	return chan_actionable(c);
}

/* One turn of bastion hb: the call holding a half-sent packet first, then
 * one open, the session's socket read when it was ready, the tunnels
 * that need it, a keepalive when due. */
static void bastion_turn(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb, double now)
{
	if (hb->pending != P_NONE && pending_turn(h, hb, now))
		return;
	if (!hb->dead)
		open_step(h, hb, now, 0);
	if (hb->ready && !hb->dead && hb->pending == P_NONE && session_pull(hb, NULL))
		return;
	/* Released tunnels wait for the bastion's CLOSE, which comes with
	 * its readiness, or for their grace to pass: a walk every 0.1 s. */
	int sweep = hb->n_released && (now >= hb->sweep_at || h->stop);
	if (sweep)
		hb->sweep_at = now + 0.1;
	int all = hb->ready || sweep;
	if (all || hb->used || hb->again) {
		hb->used = hb->again = 0;
		for (struct tpf_ssh_hub_chan *c = hb->chans, *next; c; c = next) {
			next = c->next;
			if (hb->pending != P_NONE)
				return; /* the rest wait for the session to drain */
			if (chan_due(c, all)) {
				c->ready = 0;
				chan_turn(h, c, now);
			}
		}
		/* The walk's calls may have read an open's answer. */
		if (hb->opening && hb->pending == P_NONE)
			open_step(h, hb, now, 1);
		/* What the walk's own calls read for tunnels it had passed. */
		for (struct tpf_ssh_hub_chan *c = hb->chans; c && !hb->again; c = c->next)
			hb->again = chan_actionable(c);
	}
	hb->ready = 0;
	if (!hb->dead && hb->chans && h->keepalive > 0 && now >= hb->keepalive_at &&
	    hb->pending == P_NONE) {
		int next = 0;
		int rc = libssh2_keepalive_send(hb->b->s, &next);
		if (rc < 0 && rc != LIBSSH2_ERROR_EAGAIN)
			bastion_fail(hb);
		else
			half_sent(hb, rc, P_KEEPALIVE, NULL);
		hb->keepalive_at = now + (next > 0 ? next : h->keepalive);
	}
}

static void bastion_free(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb)
{
	while (hb->chans)
		chan_drop(h, hb->chans);
	tpf_evset_forget(h->es, hb->b->fd);
	tpf_ssh_conn_close(hb->b); /* blocking with a short timeout */
	free(hb);
}

/* Is all that is left of stuck bastion hb opens whose callers gave up? */
static int only_abandoned(const struct tpf_ssh_hub_bastion *hb)
{
	if (!hb->stuck || !hb->chans)
		return 0;
	for (const struct tpf_ssh_hub_chan *c = hb->chans; c; c = c->next)
		if (c->state != CH_OPENING || !c->released)
			return 0;
	return 1;
}

/* Bastions with no tunnel left: a dead one at once, a live one after
 * IDLE_KEEP (the next round's tunnels reuse it meanwhile). */
static void bastions_reap(struct tpf_ssh_hub *h, double now)
{
	for (struct tpf_ssh_hub_bastion **pp = &h->bastions; *pp;) {
		struct tpf_ssh_hub_bastion *hb = *pp;
		if (hb->chans || hb->room_taken) {
			hb->idle_since = 0;
		} else if (!hb->idle_since) {
			hb->idle_since = now;
		}
		if (!hb->chans && !hb->room_taken &&
		    (hb->dead || h->stop || now - hb->idle_since >= IDLE_KEEP)) {
			*pp = hb->next;
			bastion_free(h, hb);
			continue;
		}
		if (only_abandoned(hb)) {
			/* Nothing left but an open no one waits for: the
			 * session can serve nothing else (no goodbye: it is
			 * inside that open). */
			hb->b->broken = 1;
			*pp = hb->next;
			bastion_free(h, hb);
			continue;
		}
		pp = &hb->next;
	}
}

/* Milliseconds until the hub must turn without an event: a keepalive, an
 * open's deadline or a release's grace (checked every 0.1 s), an idle
 * bastion's end. */
static int hub_wait_ms(struct tpf_ssh_hub *h, double now)
{
	double due = now + 5.0;
	for (struct tpf_ssh_hub_bastion *hb = h->bastions; hb; hb = hb->next) {
		if (hb->again)
			return 0;
		if (h->keepalive > 0 && hb->chans && hb->keepalive_at < due)
			due = hb->keepalive_at;
		if (hb->n_opening || hb->n_released)
			due = due < now + 0.1 ? due : now + 0.1;
		if (!hb->chans && !hb->room_taken)
			due = due < now + 1.0 ? due : now + 1.0;
	}
	double ms = (due - now) * 1000.0;
	return ms < 1 ? 1 : ms > 5000 ? 5000 : (int)ms;
}

/* Mark what the wait found ready. */
static void hub_mark(struct tpf_ssh_hub *h, void **ready, int n)
{
	for (int i = 0; i < n; i++) {
		enum tag *tag = ready[i];
		if (*tag == TAG_WAKE) {
			uint64_t v;
			if (read(h->wake, &v, sizeof(v)) < 0) {
				/* EAGAIN: nothing more to take */
			}
		} else if (*tag == TAG_BASTION) {
			((struct tpf_ssh_hub_bastion *)ready[i])->ready = 1;
		} else {
			chan_queue(h, ready[i]);
		}
	}
}

/* The queued tunnels' turns. One whose session holds a half-sent packet
 * stays queued for the turn after that session drains. */
static void work_turn(struct tpf_ssh_hub *h, double now)
{
	size_t n = h->nwork, keep = 0;
	for (size_t i = 0; i < n; i++) {
		struct tpf_ssh_hub_chan *c = h->work[i];
		if (!c)
			continue; /* freed meanwhile */
		struct tpf_ssh_hub_bastion *hb = c->hb;
		if (hb->pending != P_NONE) {
			h->work[keep++] = c; /* after the session drains */
			continue;
		}
		c->ready = 0;
		h->work[i] = NULL; /* chan_turn may free c */
		chan_turn(h, c, now);
		hb->used = 1;
	}
	h->nwork = keep;
}

static void *hub_main(void *arg)
{
	struct tpf_ssh_hub *h = arg;
	void *ready[READY_MAX];
	pthread_mutex_lock(&h->mu);
	for (;;) {
		double now = tpf_now_mono();
		if (h->stop)
			/* Tunnels still open when the transport goes are the
			 * callers' bugs; their worker sessions see the end. */
			for (struct tpf_ssh_hub_bastion *hb = h->bastions; hb; hb = hb->next)
				for (struct tpf_ssh_hub_chan *c = hb->chans; c; c = c->next)
					if (!c->released || c->release_by > now)
						chan_release(h, c, now);
		work_turn(h, now);
		for (struct tpf_ssh_hub_bastion *hb = h->bastions; hb; hb = hb->next)
			bastion_turn(h, hb, now);
		bastions_reap(h, now);
		if (h->stop && !h->bastions)
			break;
		for (struct tpf_ssh_hub_bastion *hb = h->bastions; hb; hb = hb->next)
			bastion_watch(h, hb);
		int ms = h->stop ? 10 : hub_wait_ms(h, now);
		pthread_mutex_unlock(&h->mu);
		int n = tpf_evset_wait(h->es, ready, READY_MAX, ms);
		pthread_mutex_lock(&h->mu);
		hub_mark(h, ready, n);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* ---- the callers' side ------------------------------------------------------ */

struct tpf_ssh_hub *tpf_ssh_hub_new(double keepalive)
{
	struct tpf_ssh_hub *h = xcalloc(1, sizeof(*h));
	h->wake_tag = TAG_WAKE;
	h->keepalive = keepalive;
	h->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	h->es = tpf_evset_new();
	if (h->wake < 0 || !h->es || tpf_evset_watch(h->es, h->wake, POLLIN, &h->wake_tag)) {
		if (h->wake >= 0)
			close(h->wake);
		tpf_evset_free(h->es);
		free(h);
		return NULL;
	}
	pthread_mutex_init(&h->mu, NULL);
	pthread_mutex_init(&h->dial_mu, NULL);
	if (pthread_create(&h->thread, NULL, hub_main, h)) {
		pthread_mutex_destroy(&h->mu);
		pthread_mutex_destroy(&h->dial_mu);
		close(h->wake);
		tpf_evset_free(h->es);
		free(h);
		return NULL;
	}
	return h;
}

void tpf_ssh_hub_free(struct tpf_ssh_hub *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->stop = 1;
	pthread_mutex_unlock(&h->mu);
	hub_wake(h);
	pthread_join(h->thread, NULL);
	pthread_mutex_destroy(&h->mu);
	pthread_mutex_destroy(&h->dial_mu);
	close(h->wake);
	tpf_evset_free(h->es);
	free(h->work);
	free(h);
}

struct tpf_ssh_hub_bastion *tpf_ssh_hub_take(struct tpf_ssh_hub *h)
{
	pthread_mutex_lock(&h->mu);
	struct tpf_ssh_hub_bastion *hb = h->bastions;
	while (hb && (hb->dead || hb->stuck || hb->room_taken >= TPF_SSH_HUB_CHANNELS))
		hb = hb->next;
	if (hb)
		hb->room_taken++;
	pthread_mutex_unlock(&h->mu);
	return hb;
}

void tpf_ssh_hub_dial_lock(struct tpf_ssh_hub *h, int lock)
{
	if (lock)
		pthread_mutex_lock(&h->dial_mu);
	else
		pthread_mutex_unlock(&h->dial_mu);
}

struct tpf_ssh_hub_bastion *tpf_ssh_hub_add(struct tpf_ssh_hub *h, struct tpf_conn *b)
{
	struct tpf_ssh_hub_bastion *hb = xcalloc(1, sizeof(*hb));
	hb->tag = TAG_BASTION;
	hb->b = b;
	hb->room_taken = 1;
	hb->ev = -1;
	hb->keepalive_at = tpf_now_mono() + h->keepalive;
	/* Keepalives that want no reply: an idle bastion session, which
	 * nothing reads, must not fill with replies. A dead bastion shows as
	 * a failed send (TCP_USER_TIMEOUT on its socket, ssh_connect.c). */
	if (h->keepalive > 0)
		libssh2_keepalive_config(b->s, 0, (unsigned)h->keepalive);
	pthread_mutex_lock(&h->mu);
	hb->next = h->bastions;
	h->bastions = hb;
	pthread_mutex_unlock(&h->mu);
	return hb;
}

size_t tpf_ssh_hub_count(struct tpf_ssh_hub *h)
{
	size_t n = 0;
	pthread_mutex_lock(&h->mu);
	for (struct tpf_ssh_hub_bastion *hb = h->bastions; hb; hb = hb->next)
		n++;
	pthread_mutex_unlock(&h->mu);
	return n;
}

int tpf_ssh_hub_open(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb, const char *host,
		     int port, double deadline, struct tpf_ssh_hub_chan **out, int *fd, char **why)
{
	int sv[2];
	*out = NULL;
	*fd = -1;
	*why = NULL;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv)) {
		*why = xasprintf("cannot make a socketpair: %s", strerror(errno));
		pthread_mutex_lock(&h->mu);
		hb->room_taken--;
		pthread_mutex_unlock(&h->mu);
		return TPF_ERROR;
	}
	struct tpf_ssh_hub_chan *c = xcalloc(1, sizeof(*c));
	c->tag = TAG_CHAN;
	c->hb = hb;
	c->state = CH_OPENING;
	c->local = sv[1];
	c->host = xstrdup(host);
	c->port = port;
	c->deadline = deadline;
	c->ev = -1;
	pthread_cond_init(&c->opened, NULL);
	pthread_mutex_lock(&h->mu);
	if (hb->dead) {
		c->state = CH_FAILED;
		c->err = TPF_EUNREACHABLE;
		c->why = xstrdup("the connection to the bastion was lost");
	} else {
		hb->n_opening++;
	}
	/* At the end of the list: opens go oldest first. */
	struct tpf_ssh_hub_chan **pp = &hb->chans;
	while (*pp)
		pp = &(*pp)->next;
	*pp = c;
	hub_wake(h);
	while (c->state == CH_OPENING && !c->gave_up)
		pthread_cond_wait(&c->opened, &h->mu);
	int err = 0;
	if (c->state != CH_OPEN || c->gave_up) {
		err = c->moved ? TPF_SSH_HUB_MOVED : c->err ? c->err : TPF_EUNREACHABLE;
		*why = c->why ? xstrdup(c->why) : NULL;
		chan_release(h, c, 0);
		close(sv[0]);
		hub_wake(h);
	} else {
		*out = c;
		*fd = sv[0];
	}
	pthread_mutex_unlock(&h->mu);
	return err;
}

void tpf_ssh_hub_release(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&h->mu);
	chan_release(h, c, tpf_now_mono() + CLOSE_GRACE);
	pthread_mutex_unlock(&h->mu);
	hub_wake(h);
}

char *tpf_ssh_hub_known_line(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb)
{
	pthread_mutex_lock(&h->mu);
	char *line = hb->b->known_line ? xstrdup(hb->b->known_line) : NULL;
	pthread_mutex_unlock(&h->mu);
	return line;
}

struct tpf_ssh_hub *tpf_ssh_hub_of(struct tpf_ssh *t)
{
	pthread_mutex_lock(&t->hub_mu);
	if (!t->hub)
		t->hub = tpf_ssh_hub_new(t->o.keepalive);
	struct tpf_ssh_hub *h = t->hub;
	pthread_mutex_unlock(&t->hub_mu);
	return h;
}

double tpf_ssh_hub_stuck_for(struct tpf_ssh_hub *h, const char *host, int port)
{
	double since = 0, now = tpf_now_mono();
	pthread_mutex_lock(&h->mu);
	for (struct tpf_ssh_hub_bastion *hb = h->bastions; hb && !since; hb = hb->next) {
		const struct tpf_ssh_hub_chan *c = hb->opening;
		if (hb->stuck && !hb->dead && c && c->port == port && !strcmp(c->host, host))
			since = hb->stuck_since;
	}
	pthread_mutex_unlock(&h->mu);
	return since ? now - since : 0;
}
