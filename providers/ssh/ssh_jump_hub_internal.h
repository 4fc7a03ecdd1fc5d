/*
 * Inside the bastion hub (ssh_jump_hub.c, the thread and the callers' side;
 * ssh_jump_tunnel.c, one tunnel's life on a shared bastion session:
 * opening, relaying, closing). Shared by those two files only; every
 * function here runs on the hub thread under h->mu, except where a
 * comment says otherwise.
 */
#ifndef TPF_SSH_JUMP_HUB_INTERNAL_H
#define TPF_SSH_JUMP_HUB_INTERNAL_H

#include "providers/ssh/ssh_internal.h"
#include "util/evset.h"

/* Bytes buffered each way per tunnel while the other end is not ready;
 * allocated only then (SSH packets carry at most 32 KiB, RFC 4253 6.1). */
#define RELAY_BUF 32768
/* Seconds a released tunnel has to flush the inner session's goodbye and
 * close its channel politely. */
#define CLOSE_GRACE 2.0

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
void tpf_ssh_tunnel_chan_queue(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c);

/* c's caller let it go (once): it closes from now on. */
void tpf_ssh_tunnel_chan_release(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c, double by);

/* After a call on hb's session returned rc: 1 when it must be repeated
 * before anything else is sent (EAGAIN with a packet half out). */
int tpf_ssh_tunnel_half_sent(struct tpf_ssh_hub_bastion *hb, long rc, enum pending_op op,
		     struct tpf_ssh_hub_chan *c);

/* A session-level failure: every tunnel through hb ends (their worker
 * sessions see the end of their sockets). */
void tpf_ssh_tunnel_bastion_fail(struct tpf_ssh_hub_bastion *hb);

/* Tunnels of hb waiting to open, one at a time (libssh2 keeps a channel
 * open's state in the session). An open sent waits for the bastion's
 * answer, which comes with the session's readiness or with any call on
 * it (used), or for its deadline; force: call all the same (it holds a
 * half-sent packet, or a walk may have read the answer). */
void tpf_ssh_tunnel_open_step(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb, double now,
		      int force);

/* One tunnel's turn: relay, and end it once its caller released it and
 * its worker session's last bytes went out. 1 when c was freed. */
int tpf_ssh_tunnel_chan_turn(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c, double now);

/* Repeat the call holding a half-sent packet on hb's session. 1 while it
 * still holds one. */
int tpf_ssh_tunnel_pending_turn(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb, double now);

/* What tunnel c's socket is waited on for. */
void tpf_ssh_tunnel_chan_watch(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c);

/* Read what hb's session has: libssh2 reads the socket only inside a
 * call, and queues what it read per channel. A zero-length read of one
 * channel drains the socket into those queues (and sends the channel's
 * window adjustment when due), whatever state the other tunnels are in,
 * so a readable socket never stays readable, which would wake the hub
 * again and again. 1 when that left a packet half sent. */
int tpf_ssh_tunnel_session_pull(struct tpf_ssh_hub_bastion *hb, struct tpf_ssh_hub_chan *only);

/* Has libssh2 something for tunnel c that a turn would move? Data or
 * the end queued for it while its worker side can take them
 * (libssh2_poll_channel_read and libssh2_channel_eof look at the
 * session's queue, no system call), or its bytes waiting for a window
 * that opened. Any call on a session may read packets for every tunnel of
 * it, so this is asked of every tunnel of a session that was used: a
 * tunnel whose data a neighbour's call read would otherwise wait for the
 * socket's next readiness, which may never come. */
int tpf_ssh_tunnel_chan_actionable(const struct tpf_ssh_hub_chan *c);

/* Does tunnel c need a turn? Queued, actionable, or (all: its session's
 * socket was ready, or a sweep) holding bytes or closing. */
int tpf_ssh_tunnel_chan_due(const struct tpf_ssh_hub_chan *c, int all);
/* Free tunnel c (its socket, buffers, record), out of its bastion's list
 * and the work list; its libssh2 channel, if not freed, goes with the
 * session. */
void tpf_ssh_tunnel_chan_drop(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c);

/* Count what libssh2 receives on bastion session s (its recv callback),
 * and the count so far on this thread: a call after which it has not
 * grown read nothing, so it left nothing queued for other tunnels, and
 * their walk (ssh_jump_hub.c bastion_turn) can be skipped. */
void tpf_ssh_tunnel_count_recv(LIBSSH2_SESSION *s);
unsigned long long tpf_ssh_tunnel_received(void);

#endif
