/*
 * Shared between the files of providers/ssh: the transport's private data,
 * the connection, and the non-blocking wait helpers.
 */
#ifndef TPF_SSH_INTERNAL_H
#define TPF_SSH_INTERNAL_H

#include <libssh2.h>
#include <libssh2_sftp.h>
#include <netdb.h>
#include <pthread.h>

#include "providers/ssh/ssh.h"
#include "util/buf.h"

/* Authentication refused (an error diagnostic was added). Retried before
 * the first contact; reported as TPF_ERROR. Never leaves providers/ssh. */
#define TPF_SSH_EREFUSED (-100)
/* A tunnel's open was moved off a bastion connection whose session is
 * held by another, late open: try another (ssh_jump_hub.c). Never leaves
 * providers/ssh. */
#define TPF_SSH_HUB_MOVED (-101)

struct tpf_ssh {
	struct tpf_ssh_options o; /* strings owned (copied) */
	char *user;
	/* The private key, read once (ssh.private_key); wiped on free. */
	pthread_mutex_t key_mu;
	int key_loaded;
	struct tpf_buf key;
	char *key_error; /* why it could not be read, NULL if read */
	/* Its public half as a .pub line ("TYPE BASE64\n"), derived once with
	 * the key; NULL when it cannot be (libssh2 then derives it itself). */
	char *key_pub;
	/* The bastion connections (ssh.proxy_jump), made on first use. */
	pthread_mutex_t hub_mu;
	struct tpf_ssh_hub *hub;
};

struct tpf_conn {
	struct tpf_ssh *t;
	char *user;         /* login user: the access's, else the transport's */
	int fd;
	LIBSSH2_SESSION *s;
	LIBSSH2_SFTP *sftp; /* opened by the first put */
	char *where;        /* "NODE/wN", for messages */
	char *host;         /* address connected to */
	int port;
	char *host_key;     /* fingerprint seen */
	char *known_line;   /* "TYPE BASE64" of the host key, for ssh(1) */
	char *dir_made;     /* last parent directory made by put */
	int broken;         /* a timeout left the session in an unknown state */
	int timed_out;      /* set by tpf_ssh_again when a deadline passed */
	const char *role;   /* for messages: NULL "worker", else "the bastion of worker" */
	struct tpf_ssh_jump *jump; /* ssh.proxy_jump: the tunnel c->fd runs through */
	/* A long command (ssh_watch.c): its channel, its state (0: none),
	 * its exec line until it started and the deadline for that, the idle
	 * limit and when silence since the last byte passes it (monotonic
	 * seconds). */
	LIBSSH2_CHANNEL *watch_ch;
	struct tpf_buf watch_cmd;
	const char *watch_in; /* the command's stdin, borrowed; watch_in_off sent */
	size_t watch_in_len, watch_in_off;
	int watch_state;
	double watch_setup_by, watch_idle, watch_quiet_until;
};

/* What a connection is, for messages: "worker" or its role. */
#define TPF_SSH_ROLE(c) ((c)->role ? (c)->role : "worker")

/*
 * The loop helper for non-blocking libssh2 calls:
 *	do rc = libssh2_xxx(...); while (tpf_ssh_again(c, rc, deadline));
 * Returns 1 after waiting for the socket when rc is LIBSSH2_ERROR_EAGAIN
 * and the deadline (tpf_now_mono seconds; 0: none) has not passed;
 * otherwise 0, setting c->timed_out when it gave up on the deadline.
 * Keepalives are sent while waiting.
 */
int tpf_ssh_again(struct tpf_conn *c, int rc, double deadline);

/* The session's last error message (borrowed from libssh2) and code. */
const char *tpf_ssh_errmsg(struct tpf_conn *c, int *code);

/* Did the last error come from the network (socket gone, timeout)? */
int tpf_ssh_net_error(int code);

/* Open TCP + SSH handshake + host key check (no authentication). a (may
 * be NULL) names the user and the host keys the worker must present. */
int tpf_ssh_open(struct tpf_ssh *t, const struct tpf_worker_ref *w, const struct tpf_ssh_access *a,
		 struct tpf_conn **out, double deadline, struct tpf_diags *d);
/* A non-blocking TCP connection to host:port within the deadline (seconds,
 * tpf_now_mono), with keepalive socket options. Returns the socket, or -1
 * with *err set to errno (or, for a name that does not resolve, to -1 and
 * *gai_err to getaddrinfo's code). */
int tpf_ssh_tcp_connect(const char *host, int port, double deadline, double keepalive, int *err,
			int *gai_err);
/* getaddrinfo(3) of host:port for a TCP connection: 0 and *res (free with
 * freeaddrinfo), or -1 with *err and *gai_err as tpf_ssh_tcp_connect sets
 * them. Blocks while a name is looked up (an IP address does not). */
int tpf_ssh_resolve(const char *host, int port, struct addrinfo **res, int *err, int *gai_err);
/* A non-blocking socket to ai with the keepalive options, its connect(2)
 * started: the socket, or -1 with *err set (errno). */
int tpf_ssh_tcp_start(const struct addrinfo *ai, double keepalive, int *err);
/* Has fd's connect finished? Never blocks: 1 connected, 0 not yet (poll
 * for POLLOUT), -1 failed with *err set (SO_ERROR). */
int tpf_ssh_tcp_done(int fd, int *err);
/* The error for a TCP connection to c that failed (syserr: errno; -1:
 * the name did not resolve, gai: getaddrinfo's code): TPF_EUNREACHABLE
 * with a diagnostic and a hint (ssh_connect.c). */
int tpf_ssh_tcp_fail(struct tpf_conn *c, int syserr, int gai, struct tpf_diags *d);
/* A connection to worker w, not connected yet (fd -1): its user, address
 * and port picked as tpf_ssh_open does (ssh_connect.c). 0, or TPF_ERROR
 * with a diagnostic (no endpoint, no such address, a bad address). */
int tpf_ssh_conn_new(struct tpf_ssh *t, const struct tpf_worker_ref *w,
		     const struct tpf_ssh_access *a, struct tpf_conn **out, struct tpf_diags *d);
/* The first half of tpf_ssh_handshake: c->s made, non-blocking, with the
 * host key preference and keepalives (0, or TPF_ERROR: out of memory). */
int tpf_ssh_session_start(struct tpf_conn *c, const char *known_pref, struct tpf_diags *d);
/* The error for a handshake that failed (or timed out: c->timed_out):
 * TPF_EUNREACHABLE with a diagnostic. */
int tpf_ssh_handshake_fail(struct tpf_conn *c, struct tpf_diags *d);
/* Start c->s on c->fd and do the SSH handshake (RFC 4253) within the
 * deadline. known_pref: host key algorithms to ask for (empty or NULL: the
 * default preference). 0, TPF_EUNREACHABLE or TPF_ERROR with a diagnostic. */
int tpf_ssh_handshake(struct tpf_conn *c, const char *known_pref, double deadline,
		      struct tpf_diags *d);

/*
 * ssh.proxy_jump (ssh_jump.c): reach c->host port c->port through the
 * bastion. Takes a place on a bastion connection of the transport's hub
 * with room, else connects one (checks its host key: configured, pinned
 * or first use; authenticates), opens a direct-tcpip channel to the worker
 * (RFC 4254 section 7.2) and relays it to a socketpair whose one end
 * becomes c->fd, so the worker's own session runs over it unchanged. Sets
 * c->jump. Errors: TPF_EHOSTKEY (the bastion's key differs: nothing reached
 * the worker), TPF_EUNREACHABLE (retried), TPF_ERROR.
 */
int tpf_ssh_jump_open(struct tpf_conn *c, double deadline, struct tpf_diags *d);
/* Release the tunnel to the hub (NULL: nothing); the bastion connection
 * stays for others. Call after the inner session's socket is closed. */
void tpf_ssh_jump_free(struct tpf_ssh_jump *j);
/* The bastion's "TYPE BASE64" host key line and "user@host" / port, for
 * ssh(1)'s ProxyCommand (ssh_interactive.c). Borrowed from j. */
const char *tpf_ssh_jump_known_line(const struct tpf_ssh_jump *j);

/*
 * The bastion connections of a transport and their one relay thread
 * (ssh_jump_hub.c; ssh_jump.c says how tunnels share them). Every call on
 * a bastion session after tpf_ssh_hub_add is the hub thread's.
 */
#define TPF_SSH_HUB_CHANNELS 64 /* tunnels per bastion connection */
struct tpf_ssh_hub;
struct tpf_ssh_hub_bastion;
struct tpf_ssh_hub_chan;
/* A hub with no bastion yet, its thread started; keepalive: seconds
 * between keepalives to each bastion (0: none). NULL (errno set) when
 * the thread or its descriptors cannot be had. Free with tpf_ssh_hub_free
 * after every tunnel was released: it closes the bastion connections
 * (politely, within 2 s each) and joins the thread. */
struct tpf_ssh_hub *tpf_ssh_hub_new(double keepalive);
void tpf_ssh_hub_free(struct tpf_ssh_hub *h);
/* t's hub, made on first use (thread-safe; NULL as tpf_ssh_hub_new). */
struct tpf_ssh_hub *tpf_ssh_hub_of(struct tpf_ssh *t);
/* A live bastion connection with room for one more tunnel, the room
 * taken (tpf_ssh_hub_open uses it), or NULL when none has room. */
struct tpf_ssh_hub_bastion *tpf_ssh_hub_take(struct tpf_ssh_hub *h);
/* Hand an authenticated bastion connection b to the hub (it owns b from
 * now on), one room taken for the caller's tunnel. */
struct tpf_ssh_hub_bastion *tpf_ssh_hub_add(struct tpf_ssh_hub *h, struct tpf_conn *b);
/* lock 1/0: take/give the mutex under which callers connect a new
 * bastion, so that a burst of callers shares one. */
void tpf_ssh_hub_dial_lock(struct tpf_ssh_hub *h, int lock);
/* A copy of hb's host key line "TYPE BASE64" (caller frees; NULL: none). */
char *tpf_ssh_hub_known_line(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb);
/* Open a tunnel to host:port through hb, in the room taken; blocks until
 * the bastion answers or the deadline (monotonic seconds) passes. 0:
 * *fd is the caller's end of a socketpair relayed to the channel (the
 * caller closes it, then releases *out). Else TPF_EUNREACHABLE (refused,
 * timed out, the bastion lost: retry), TPF_SSH_HUB_MOVED (take another
 * bastion connection at once) or TPF_ERROR, *why the reason (caller
 * frees), the room given back. */
int tpf_ssh_hub_open(struct tpf_ssh_hub *h, struct tpf_ssh_hub_bastion *hb, const char *host,
		     int port, double deadline, struct tpf_ssh_hub_chan **out, int *fd, char **why);
/* Seconds since an open to host:port, whose caller gave up waiting,
 * passed its deadline on a bastion connection and still waits for the
 * bastion's answer; 0: none. A second attempt would only hold another
 * bastion connection the same way. */
double tpf_ssh_hub_stuck_for(struct tpf_ssh_hub *h, const char *host, int port);
/* The caller is done with tunnel c (its socket closed): the hub flushes
 * what the worker session last wrote, closes the channel (within 2 s)
 * and frees c. NULL: nothing. */
void tpf_ssh_hub_release(struct tpf_ssh_hub *h, struct tpf_ssh_hub_chan *c);

/* Authenticate an opened connection (private key or agent): 0,
 * TPF_SSH_EREFUSED, TPF_EUNREACHABLE or TPF_ERROR (bad configuration). */
int tpf_ssh_auth(struct tpf_conn *c, double deadline, struct tpf_diags *d);
/* Authentication with ssh.private_key in steps, for an event loop
 * (ssh_dial.c): _load reads the key once per transport (0 or TPF_ERROR);
 * _try is one call of libssh2_userauth_publickey_frommemory (repeat it on
 * LIBSSH2_ERROR_EAGAIN); _result turns its final rc into what
 * tpf_ssh_auth returns. */
int tpf_ssh_auth_key_load(struct tpf_conn *c, struct tpf_diags *d);
int tpf_ssh_auth_key_try(struct tpf_conn *c);
int tpf_ssh_auth_key_result(struct tpf_conn *c, int rc, struct tpf_diags *d);
/* Connecting in steps (ssh_dial.c; providers/transport.h dial_start,
 * dial_step, dial_finish, dial_free, with their contracts). a (may be
 * NULL) is copied. */
int tpf_ssh_dial_new(struct tpf_ssh *t, const struct tpf_worker_ref *w,
		     const struct tpf_ssh_access *a, struct tpf_dial **out, struct tpf_diags *d);
int tpf_ssh_dial_step(struct tpf_dial *g, struct pollfd *pfd, struct tpf_diags *d);
int tpf_ssh_dial_finish(struct tpf_dial *g, struct tpf_conn **out, char **host_key_out);
void tpf_ssh_dial_free(struct tpf_dial *g);
/* Free everything of c (disconnecting politely when not broken), then the
 * tunnel it ran through, if any (ssh_connect.c). NULL: nothing. */
void tpf_ssh_conn_free(struct tpf_conn *c);
/* The same but not the tunnel (ssh_session.c): for a connection reached
 * directly (the bastion's own), and the first step of tpf_ssh_conn_free.
 * NULL: nothing. */
void tpf_ssh_conn_close(struct tpf_conn *c);

/* Read the host key the peer presented into c->host_key (fingerprint) and
 * c->known_line ("TYPE BASE64"). 0 or TPF_ERROR (no usable key). */
int tpf_ssh_read_host_key(struct tpf_conn *c, struct tpf_diags *d);

/* Host key: fill c->host_key and c->known_line, then compare with the pin,
 * else with the keys the access names (a may be NULL), else trust it. */
int tpf_ssh_check_host_key(struct tpf_conn *c, const struct tpf_worker_ref *w,
			   const struct tpf_ssh_access *a, struct tpf_diags *d);

/* The host key algorithms to offer for a's known keys: those of their types
 * that this libssh2 supports, comma-separated into out. Empty when a names
 * none (then the default preference applies). */
void tpf_ssh_hostkey_pref(const struct tpf_ssh_access *a, char *out, size_t size);

/* Transport ops implemented in their own files. */
int tpf_ssh_put(struct tpf_conn *c, const char *path, const void *data, size_t len,
		mode_t mode, struct tpf_diags *d);
int tpf_ssh_exec(struct tpf_conn *c, const char *command, struct tpf_buf *out, int *status,
		 double timeout, struct tpf_diags *d);
int tpf_ssh_interactive(struct tpf_transport *t, const struct tpf_worker_ref *w,
			struct tpf_diags *d);
/* Connect with retries (the transport's connect op without the pin out;
 * ssh_connect.c, as is tpf_ssh_open). */
int tpf_ssh_connect_retry(struct tpf_ssh *t, const struct tpf_worker_ref *w,
			  const struct tpf_ssh_access *a, int authenticate, struct tpf_conn **out,
			  struct tpf_diags *d);
/* The wait, seconds, before the next attempt after attempt number
 * `attempt` (from 1) failed: tpf_ssh_backoff with a random jitter; -1 when
 * that was the last attempt allowed (attempts are bounded by count too,
 * whatever the budget says). One rule for tpf_ssh_connect_retry and the
 * dials (ssh_dial.c). */
double tpf_ssh_retry_delay(int attempt);

/* ssh_sftp.c, shared with ssh_files.c: the SFTP subsystem (opened once
 * per connection), the error for a failed SFTP call (TPF_EUNREACHABLE when
 * the network is to blame), replacing path with tmp where SFTP's rename
 * will not (mv -f over an exec channel), and the deadline of one I/O step
 * (now + ssh io_timeout). */
int tpf_ssh_sftp_open(struct tpf_conn *c, struct tpf_diags *d);
int tpf_ssh_sftp_fail(struct tpf_conn *c, int rc, const char *what, const char *path,
		      struct tpf_diags *d);
int tpf_ssh_rename_over(struct tpf_conn *c, const char *tmp, const char *path,
			struct tpf_diags *d);
double tpf_ssh_io_deadline(struct tpf_conn *c);
/* Best effort: remove a temporary file of ours (no stray files in the
 * home); does nothing on a broken connection, reports nothing. */
void tpf_ssh_sftp_unlink_quiet(struct tpf_conn *c, const char *path);

/* Chore ops (providers/transport.h): ssh_files.c, ssh_stream.c,
 * ssh_forward.c. */
int tpf_ssh_file_stat(struct tpf_conn *c, const char *path, struct tpf_remote_stat *st,
		      struct tpf_diags *d);
int tpf_ssh_file_list(struct tpf_conn *c, const char *path, char ***names, size_t *n,
		      struct tpf_diags *d);
int tpf_ssh_file_mkdir(struct tpf_conn *c, const char *path, mode_t mode, struct tpf_diags *d);
int tpf_ssh_file_send(struct tpf_conn *c, int fd, const char *path, mode_t mode,
		      tpf_progress_fn progress, void *arg, struct tpf_diags *d);
int tpf_ssh_file_recv(struct tpf_conn *c, const char *path, int fd, tpf_progress_fn progress,
		      void *arg, struct tpf_diags *d);
/* An exec channel (ssh_exec.c) that runs `command` under /bin/sh, its
 * output merged and its stdin at end of file: *ch is the channel (also on
 * an error after it opened: free it with tpf_ssh_exec_free). 0, or
 * TPF_EUNREACHABLE / TPF_ERROR with a diagnostic. */
int tpf_ssh_exec_open(struct tpf_conn *c, const char *command, double setup_deadline,
		      LIBSSH2_CHANNEL **ch, struct tpf_diags *d);
/* The line an exec channel runs for `command` (appended to cmd): the
 * command under /bin/sh, whatever the login shell. */
void tpf_ssh_exec_line(struct tpf_buf *cmd, const char *command);
/* The error for a failed libssh2 call on c while `doing` (a phrase for
 * the message): TPF_EUNREACHABLE (c->broken set) when the network or a
 * deadline is to blame (c->timed_out; timeout: the command's, seconds, for
 * the message, 0: none), else TPF_ERROR. Adds the diagnostic. */
int tpf_ssh_exec_fail(struct tpf_conn *c, int rc, const char *doing, double timeout,
		      struct tpf_diags *d);
/* Close a channel whose output ended and read its exit status into *status. */
int tpf_ssh_exec_close(struct tpf_conn *c, LIBSSH2_CHANNEL *ch, int *status, struct tpf_diags *d);
/* Free a channel (NULL: nothing) unless the connection broke. */
void tpf_ssh_exec_free(struct tpf_conn *c, LIBSSH2_CHANNEL *ch);
/* providers/transport.h watch_open, watch_step, watch_close (ssh_watch.c). */
int tpf_ssh_watch_open(struct tpf_conn *c, const char *command, const void *input,
		       size_t input_len, double idle, struct tpf_diags *d);
int tpf_ssh_watch_step(struct tpf_conn *c, const struct tpf_watch_io *io, struct pollfd *pfd,
		       double *due, struct tpf_diags *d);
int tpf_ssh_watch_close(struct tpf_conn *c, int *status, struct tpf_diags *d);
int tpf_ssh_exec_stream(struct tpf_conn *c, const char *command, const struct tpf_exec_io *io,
			int *status, struct tpf_diags *d);
int tpf_ssh_forward(struct tpf_conn *c, const struct tpf_forward *fw, size_t n,
		    const volatile int *stop, struct tpf_diags *d);
int tpf_ssh_info(struct tpf_conn *c, struct tpf_ssh_info *info, struct tpf_diags *d);
/* The exit status of a finished channel (a signal's as a shell says it). */
int tpf_ssh_channel_status(struct tpf_conn *c, LIBSSH2_CHANNEL *ch);

/* "NODE/wN" for w; caller frees. */
char *tpf_ssh_where(const struct tpf_worker_ref *w);

/*
 * The decoded blob of a "TYPE BASE64 [comment]" key line (caller frees;
 * *len its length in bytes), or NULL when the line is not one, or the type
 * in front is not the blob's own. One decoder for host keys
 * (ssh_hostkey.c) and .pub files, kept with the wire format in ssh_pubkey.c.
 */
unsigned char *tpf_ssh_key_blob(const char *key, size_t *len);

#endif
