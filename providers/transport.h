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
	 * before every save (engine/session.c sets it as the state's
	 * before_save hook), so no save site can forget it. NULL: nothing to
	 * keep.
	 */
	void (*sync_state)(struct tpf_transport *t, struct tpf_state *st);
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
 * The diagnostic for a command whose output passed `limit` bytes on worker
 * `address` (see exec above). Returns TPF_ERROR.
 */
int tpf_transport_output_too_large(const char *address, size_t limit, struct tpf_diags *d);

#endif
