/*
 * The transport interface: how tpuform reaches a worker.
 *
 * Implementations: providers/local (worker = a private HOME directory on
 * this machine, commands run with /bin/sh) and providers/ssh (libssh2:
 * SFTP upload, exec channel). Paths given to put() are relative to the
 * worker's home directory. A connection may be used by one thread at a
 * time; different connections may be used from different threads.
 */
#ifndef TPF_TRANSPORT_H
#define TPF_TRANSPORT_H

#include <poll.h>
#include <stddef.h>
#include <sys/types.h>
#include "providers/provider.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/diag.h"

/* Which worker to reach. All pointers borrowed for the call. */
struct tpf_worker_ref {
	const char *node;     /* node name */
	const char *node_id;  /* provider node id (a new id starts a new host key pin) */
	int worker;           /* worker index, 0-based */
	int nworkers;
	const struct tpf_endpoint *endpoint; /* NULL for local */
	const char *host_key; /* pinned fingerprint, NULL: trust on first use */
	int read_only;        /* reach it without changing its node (status probes,
			       * stops before a delete): the gcp provider adds no
			       * SSH key to the node's metadata for it */
	int once;             /* one attempt at a worker whose host key is pinned,
			       * no retry budget: a status probe that `watch`
			       * repeats every -session-check must not keep the
			       * round waiting for a daemon that is down */
};

/*
 * Output kept of one command run with exec(), bytes (64 MiB, util/buf.h
 * TPF_BUF_INPUT_MAX). `tpuform logs -n 0` of a chatty job is the largest
 * output tpuform asks for, and many workers may answer at once; past this
 * the command is stopped and exec fails (see exec below), rather than
 * memory running out.
 */
#define TPF_TRANSPORT_OUTPUT_MAX TPF_BUF_INPUT_MAX

/* Longest path put() and put_source() accept, bytes: far below PATH_MAX
 * (4096) once joined to a home directory. */
#define TPF_REMOTE_PATH_MAX 1024

struct tpf_conn; /* opaque, per implementation */
struct tpf_dial; /* a connection being made (dial_start), per implementation */

/* Called during a transfer with the bytes moved so far (by the thread that
 * moves them). */
typedef void (*tpf_progress_fn)(void *arg, unsigned long long bytes);

/* What a remote path is (file_stat). */
struct tpf_remote_stat {
	int is_dir, is_reg;
	mode_t mode;              /* permission bits */
	unsigned long long size;  /* bytes */
};

/* The command's input, output and cancellation (exec_stream). */
struct tpf_exec_io {
	int in_fd;                 /* stdin, read to end of file; -1: none */
	void (*out)(void *arg, const char *data, size_t len);
	void *arg;
	const volatile int *cancel; /* may be NULL; 1: SIGINT, 2: SIGKILL */
};

/* A command that answers for a long time (watch_open, watch_step). */
struct tpf_watch_io {
	/* Output as it arrives (stdout and stderr merged); borrowed. */
	void (*out)(void *arg, const char *data, size_t len);
	void *arg;
};

/* One local port forward (forward). */
struct tpf_forward {
	int listen_fd;    /* a listening socket */
	const char *host; /* as the worker resolves it ("localhost") */
	int port;
};

/* ssh_info: what an ssh_config(5) Host entry needs. Borrowed. */
struct tpf_ssh_info {
	const char *host, *user, *known_line; /* known_line: "TYPE BASE64" */
	int port;
	const char *identity_file;             /* NULL: the agent */
	const char *jump_host, *jump_user, *jump_known_line; /* NULL: direct */
	int jump_port;
};
struct tpf_transport;

struct tpf_transport_ops {
	/*
	 * Reach the worker. On success *out is an open connection and, when
	 * host_key_out is not NULL, *host_key_out the fingerprint seen (caller
	 * frees; NULL for local). Errors: TPF_EUNREACHABLE (could not connect
	 * within the timeout, after retries), TPF_EHOSTKEY (key differs from
	 * the pin: the diagnostic names the worker and both fingerprints),
	 * TPF_ERROR.
	 */
	int (*connect)(struct tpf_transport *t, const struct tpf_worker_ref *w,
		       struct tpf_conn **out, char **host_key_out, struct tpf_diags *d);

	/* Write data to path (relative to the worker's home, as
	 * tpf_remote_path_check accepts; parent directories created) with the
	 * given mode, replacing it atomically. */
	int (*put)(struct tpf_conn *c, const char *path, const void *data, size_t len,
		   mode_t mode, struct tpf_diags *d);

	/*
	 * Run `command` with /bin/sh in the worker's home. stdout and stderr
	 * are appended to out (may be NULL); *status gets the exit status
	 * (127 when the shell could not run it). timeout: seconds, 0 = none.
	 * Returns 0 when the command ran (whatever its status), TPF_ERROR or
	 * TPF_EUNREACHABLE when it could not be run or timed out. Output
	 * past TPF_TRANSPORT_OUTPUT_MAX (counted only when out is not NULL)
	 * stops the command (local: its process group is killed; ssh: the
	 * connection is dropped) and is TPF_ERROR with a diagnostic naming
	 * the worker and the limit; out is then left as it was.
	 */
	int (*exec)(struct tpf_conn *c, const char *command, struct tpf_buf *out, int *status,
		    double timeout, struct tpf_diags *d);

	/*
	 * Optional (NULL if unsupported): make directory `dest` (relative to
	 * home) a checkout of `repo` at `commit`, done by tpuform itself
	 * (local provider: libgit2 clone + checkout). When NULL the bootstrap
	 * script fetches the source on the worker.
	 */
	int (*put_source)(struct tpf_conn *c, const char *repo, const char *commit,
			  const char *dest, struct tpf_diags *d);

	void (*close)(struct tpf_conn *c);

	/*
	 * Replace the current process with an interactive shell on the worker
	 * (`tpuform ssh`). Returns only on failure (TPF_ERROR with diagnostic).
	 */
	int (*interactive)(struct tpf_transport *t, const struct tpf_worker_ref *w,
			   struct tpf_diags *d);
	/*
	 * Keep in step with st what the transport learned that the state must
	 * carry: the bastion's pinned host key (state/state.h proxy_jump_host,
	 * proxy_jump_host_key). Called once after the state is loaded and
	 * before every save (engine/pipeline/pipeline.c sets it as the state's
	 * before_save hook), so no save site can forget it. NULL: nothing to
	 * keep.
	 */
	void (*sync_state)(struct tpf_transport *t, struct tpf_state *st);

	/*
	 * The everyday chores (`tpuform cp`, `exec`, `ssh -L`, `ssh-config`;
	 * engine/chores/chores.h). Paths given to the file ops are absolute, or
	 * relative to the worker's home, as scp's and sftp's are; they are
	 * checked with tpf_remote_file_path_check, not the stricter rule of
	 * put(), because a user names them. Every op returns 0, or TPF_ERROR /
	 * TPF_EUNREACHABLE with a diagnostic naming the worker and the path.
	 */

	/* What path is: TPF_ENOTFOUND (no diagnostic) when nothing is there.
	 * Symbolic links are followed (SFTP STAT, stat(2)). */
	int (*file_stat)(struct tpf_conn *c, const char *path, struct tpf_remote_stat *st,
			 struct tpf_diags *d);
	/* The names in directory path, without "." and "..", sorted; the
	 * caller frees each and the array. */
	int (*file_list)(struct tpf_conn *c, const char *path, char ***names, size_t *n,
			 struct tpf_diags *d);
	/* mkdir path with mode; an existing directory is success. */
	int (*file_mkdir)(struct tpf_conn *c, const char *path, mode_t mode, struct tpf_diags *d);
	/* Copy everything readable from fd to file path (mode as given),
	 * replacing it atomically (temporary file + rename: a job that has
	 * the old file open keeps reading it). progress (may be NULL) is
	 * called with the bytes sent so far. */
	int (*file_send)(struct tpf_conn *c, int fd, const char *path, mode_t mode,
			 tpf_progress_fn progress, void *arg, struct tpf_diags *d);
	/* Copy file path into fd; progress as for file_send. */
	int (*file_recv)(struct tpf_conn *c, const char *path, int fd, tpf_progress_fn progress,
			 void *arg, struct tpf_diags *d);

	/*
	 * Run command as exec() does, streaming: io->out gets stdout and
	 * stderr as they arrive (merged, no cap: nothing is kept); the
	 * command's stdin is io->in_fd read until end of file (-1: end of
	 * file at once). The command runs in a process group of its own
	 * (setsid), so that when *io->cancel rises to 1 the group gets
	 * SIGINT, and at 2 SIGKILL (ssh: over a second channel of the same
	 * connection, by the pgid the command recorded). *status as exec().
	 */
	int (*exec_stream)(struct tpf_conn *c, const char *command, const struct tpf_exec_io *io,
			   int *status, struct tpf_diags *d);

	/*
	 * Serve local port forwards (OpenSSH's -L) until *stop is set or the
	 * listeners fail: every connection accepted on fw[i].listen_fd is
	 * relayed to fw[i].host port fw[i].port as the worker sees it (ssh:
	 * a direct-tcpip channel, RFC 4254 section 7.2, over this connection,
	 * so through the same pinned host key; local: a TCP connection from
	 * this machine, where the worker lives). The listening sockets stay
	 * the caller's.
	 */
	int (*forward)(struct tpf_conn *c, const struct tpf_forward *fw, size_t n,
		       const volatile int *stop, struct tpf_diags *d);

	/*
	 * Optional (all three NULL: use exec with a window). A command
	 * driven by the caller's event loop (a job wait that lasts the job's
	 * life and sends a heartbeat; apply's provisioning steps, issue 28):
	 * watch_open asks for `command` on c with `input` (input_len bytes,
	 * borrowed until watch_close; NULL: none) as its stdin, and never
	 * blocks (0, or TPF_ERROR when c is broken or busy); watch_step never
	 * blocks: it starts the command as exec() does (a channel, the exec
	 * request; failures to do so within the connection's I/O timeout are
	 * its errors, as exec()'s), sends the input and then end-of-file (the
	 * I/O timeout counts from the last progress), hands the output there
	 * is to io->out,
	 * sends a keepalive when one is due, and returns 1 while the command
	 * runs on (*pfd then says what to poll(2) for, and *due the monotonic
	 * second, util/timeutil.h tpf_now_mono, by which to step again even
	 * when *pfd stays quiet: the next keepalive, the silence limit, the
	 * setup's timeout; 0: no such moment), 0 when its output
	 * ended (then watch_close, blocking, reads *status as exec() does), or
	 * TPF_EUNREACHABLE when the connection broke or no byte came for
	 * `idle` seconds (0: no limit). After an error, close c. watch_close
	 * of a command whose output has not ended (a stop) waits for nothing:
	 * c is then done (close it; ssh: without a word to the worker). One
	 * command at a time per connection; a connection is used by one
	 * thread at a time.
	 */
	int (*watch_open)(struct tpf_conn *c, const char *command, const void *input,
			  size_t input_len, double idle, struct tpf_diags *d);
	int (*watch_step)(struct tpf_conn *c, const struct tpf_watch_io *io, struct pollfd *pfd,
			  double *due, struct tpf_diags *d);
	int (*watch_close)(struct tpf_conn *c, int *status, struct tpf_diags *d);

	/*
	 * Optional (all four NULL: use connect). The connect op in steps, for
	 * an event loop that makes many connections at once (watch's job
	 * waits, issue 28): dial_start prepares the first attempt at w and may
	 * block for a moment (a provider's lookups of the node, a name to
	 * resolve; ssh through a bastion or with ssh-agent: the whole
	 * connection, as connect makes it for w, retries included). 0 and
	 * *out, or an error as connect's (no dial then). dial_step never
	 * blocks: 1 while the dial goes on (*pfd then says what to poll(2)
	 * for; step again when it is ready, and at least every 2 s: the
	 * connect timeout is checked there), 0 when connected (then
	 * dial_finish), or an error as connect's (TPF_EUNREACHABLE,
	 * TPF_EHOSTKEY: the same host key rules, TPF_ERROR) with a
	 * diagnostic. Retries as connect's: with w->once 0, what time may fix
	 * (a daemon not up yet, a key not installed yet) is tried again within
	 * connect's budget while dial_step returns 1; between two attempts it
	 * backs off with nothing to poll (*pfd fd -1): step it again within
	 * 0.25 s then. Only the last attempt's diagnostics are reported, with
	 * how many attempts were made. With w->once 1: one attempt, the
	 * caller backs off.
	 * dial_finish hands over the connection (*out, close it with close)
	 * and, host_key_out not NULL, the fingerprint seen (caller frees).
	 * dial_free frees the dial (NULL: nothing), closing a connection not
	 * handed over. A dial is used by one thread at a time.
	 */
	int (*dial_start)(struct tpf_transport *t, const struct tpf_worker_ref *w,
			  struct tpf_dial **out, struct tpf_diags *d);
	int (*dial_step)(struct tpf_dial *g, struct pollfd *pfd, struct tpf_diags *d);
	int (*dial_finish)(struct tpf_dial *g, struct tpf_conn **out, char **host_key_out);
	void (*dial_free)(struct tpf_dial *g);

	/* How ssh(1) reaches this connection's worker (ssh-config); borrowed
	 * from c. TPF_ERROR (with a diagnostic) when it is not reached over
	 * SSH (the local provider). */
	int (*ssh_info)(struct tpf_conn *c, struct tpf_ssh_info *info, struct tpf_diags *d);
};

struct tpf_transport {
	const struct tpf_transport_ops *ops;
	void *impl;
};

/*
 * The one rule for paths given to put() and put_source(), so that they stay
 * inside the worker's home on every transport: not empty, relative (no
 * leading '/'), no empty part ("a//b", a trailing '/'), no '.' or '..'
 * part, no control character (bytes below 0x20 and 0x7f), at most
 * TPF_REMOTE_PATH_MAX bytes. This is the union of the checks the local and
 * ssh transports each had (ssh alone refused a trailing '/'); control
 * characters and the length limit are new. Returns 0, or TPF_ERROR with a
 * diagnostic naming the worker `address` and the path.
 */
int tpf_remote_path_check(const char *path, const char *address, struct tpf_diags *d);

/*
 * The rule for paths a user names (tpuform cp NODE:PATH): not empty, no
 * control character, at most TPF_REMOTE_PATH_MAX bytes. Absolute paths and
 * ".." are the user's to use, as with scp. Returns 0, or TPF_ERROR with a
 * diagnostic naming the worker `address` and the path.
 */
int tpf_remote_file_path_check(const char *path, const char *address, struct tpf_diags *d);

/*
 * The diagnostic for a command whose output passed `limit` bytes on worker
 * `address` (see exec above). Returns TPF_ERROR.
 */
int tpf_transport_output_too_large(const char *address, size_t limit, struct tpf_diags *d);

#endif
