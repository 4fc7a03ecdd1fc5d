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
#include "providers/ssh/ssh_jump_hub_internal.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* Seconds an idle bastion connection (no tunnel) is kept for the next. */
#define IDLE_KEEP 60.0
/* Ready descriptors taken per wait. */
#define READY_MAX 256

static void hub_wake(struct tpf_ssh_hub *h)
{
	uint64_t one = 1;
	if (write(h->wake, &one, sizeof(one)) < 0) {
		/* The counter is full: the hub has wakes pending anyway. */
	}
}



















/* ---- the hub's thread ----------------------------------------------------- */


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




/* One turn of bastion hb: the call holding a half-sent packet first, then
 * one open, the session's socket read when it was ready, the tunnels
 * that need it, a keepalive when due. */
static void bastion_turn(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb, double now)
{
	if (hb->pending != P_NONE && tpf_ssh_tunnel_pending_turn(h, hb, now))
		return;
	if (!hb->dead)
		tpf_ssh_tunnel_open_step(h, hb, now, 0);
	if (hb->ready && !hb->dead && hb->pending == P_NONE && tpf_ssh_tunnel_session_pull(hb, NULL))
		return;
	/* Released tunnels wait for the bastion's CLOSE, which comes with
	 * its readiness, or for their grace to pass: a walk every 0.1 s. */
	int sweep = hb->n_released && (now >= hb->sweep_at || h->stop);
	if (sweep)
		hb->sweep_at = now + 0.1;
	int all = hb->ready || sweep;
	if (all || hb->used || hb->again) {
		hb->used = hb->again = 0;
		unsigned long long r0 = tpf_ssh_tunnel_received();
		for (struct tpf_ssh_hub_chan *c = hb->chans, *next; c; c = next) {
			next = c->next;
			if (hb->pending != P_NONE)
				return; /* the rest wait for the session to drain */
			if (tpf_ssh_tunnel_chan_due(c, all)) {
				c->ready = 0;
				tpf_ssh_tunnel_chan_turn(h, c, now);
			}
		}
		/* The walk's calls may have read an open's answer. */
		if (hb->opening && hb->pending == P_NONE)
			tpf_ssh_tunnel_open_step(h, hb, now, 1);
		/* What the walk's own calls read for tunnels it had passed
		 * (nothing read: nothing to look for). */
		for (struct tpf_ssh_hub_chan *c = tpf_ssh_tunnel_received() != r0 ? hb->chans : NULL;
		     c && !hb->again; c = c->next)
			hb->again = tpf_ssh_tunnel_chan_actionable(c);
	}
	hb->ready = 0;
	if (!hb->dead && hb->chans && h->keepalive > 0 && now >= hb->keepalive_at &&
	    hb->pending == P_NONE) {
		int next = 0;
		int rc = libssh2_keepalive_send(hb->b->s, &next);
		if (rc < 0 && rc != LIBSSH2_ERROR_EAGAIN)
			tpf_ssh_tunnel_bastion_fail(hb);
		else
			tpf_ssh_tunnel_half_sent(hb, rc, P_KEEPALIVE, NULL);
		hb->keepalive_at = now + (next > 0 ? next : h->keepalive);
	}
}

static void bastion_free(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb)
{
	while (hb->chans)
		tpf_ssh_tunnel_chan_drop(h, hb->chans);
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
		if (only_abandoned(hb) || (h->stop && hb->chans)) {
			/* Nothing left but an open no one waits for, or the
			 * transport going while one is in flight: the session
			 * can serve nothing else (no goodbye: it is inside
			 * that open). */
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
			tpf_ssh_tunnel_chan_queue(h, ready[i]);
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
		unsigned long long r0 = tpf_ssh_tunnel_received();
		tpf_ssh_tunnel_chan_turn(h, c, now);
		hb->used |= tpf_ssh_tunnel_received() != r0;
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
						tpf_ssh_tunnel_chan_release(h, c, now);
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
	tpf_ssh_tunnel_count_recv(b->s);
	pthread_mutex_lock(&h->mu);
	hb->next = h->bastions;
	h->bastions = hb;
	pthread_mutex_unlock(&h->mu);
	return hb;
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
		tpf_ssh_tunnel_chan_release(h, c, 0);
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
	tpf_ssh_tunnel_chan_release(h, c, tpf_now_mono() + CLOSE_GRACE);
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
