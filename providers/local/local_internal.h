/*
 * Internals shared by the local provider's files (not a public interface).
 * The on-disk layout is described in local.h.
 */
#ifndef TPF_LOCAL_INTERNAL_H
#define TPF_LOCAL_INTERNAL_H

#include <stddef.h>
#include "model/recipe.h"
#include "providers/provider.h"
#include "providers/transport.h"
#include "util/buf.h"
#include "util/diag.h"

/* The provider's private data; also the transport's impl. */
struct tpf_local {
	char *root; /* absolute */
	double create_delay;
	const struct tpf_fleet *fleet;
	struct tpf_transport transport;
};

/* local_transport.c */
extern const struct tpf_transport_ops tpf_local_transport_ops;

/* A connection to a local worker (local_transport.c). */
struct tpf_conn {
	char *root;
	char *node;
	char *home;
	int worker;
	char *address; /* "<node>/w<i>", for messages */
	char **env;
};

/* local_reach.c. tpf_local_locate: can worker `worker` of node `node_name`
 * be reached now (the node READY, the worker in range, its home there)?
 * 0 with *home_out its home (caller frees), else TPF_EUNREACHABLE or
 * TPF_ERROR (TPF_ENOTFOUND's are TPF_EUNREACHABLE) with a diagnostic naming
 * `address` ("<node>/w<i>"). tpf_local_still_reachable: the same for an
 * open connection, 0 or an error (an SSH session dies with its VM too). */
int tpf_local_locate(const char *root, const char *node_name, int worker, const char *address,
		     char **home_out, struct tpf_diags *d);
int tpf_local_still_reachable(struct tpf_conn *c, struct tpf_diags *d);

/* local_chores.c: the transport's chore ops (providers/transport.h). */
int tpf_local_file_stat(struct tpf_conn *c, const char *path, struct tpf_remote_stat *st,
			struct tpf_diags *d);
int tpf_local_file_list(struct tpf_conn *c, const char *path, char ***names, size_t *n,
			struct tpf_diags *d);
int tpf_local_file_mkdir(struct tpf_conn *c, const char *path, mode_t mode, struct tpf_diags *d);
int tpf_local_file_send(struct tpf_conn *c, int fd, const char *path, mode_t mode,
			tpf_progress_fn progress, void *arg, struct tpf_diags *d);
int tpf_local_file_recv(struct tpf_conn *c, const char *path, int fd, tpf_progress_fn progress,
			void *arg, struct tpf_diags *d);
int tpf_local_exec_stream(struct tpf_conn *c, const char *command, const struct tpf_exec_io *io,
			  int *status, struct tpf_diags *d);
int tpf_local_forward(struct tpf_conn *c, const struct tpf_forward *fw, size_t n,
		      const volatile int *stop, struct tpf_diags *d);
int tpf_local_ssh_info(struct tpf_conn *c, struct tpf_ssh_info *info, struct tpf_diags *d);

/* node.json in memory. */
struct tpf_local_node {
	char *name;
	char *id;
	char *state;
	char *health;      /* NULL when not HEALTHY */
	char *create_time; /* RFC 3339 */
	double ready_at;   /* epoch seconds when CREATING turns READY */
	struct tpf_recipe recipe; /* zone, type, runtime, scheduling, workers, labels */
};

void tpf_local_node_release(struct tpf_local_node *n);

/* 1 if name is an RFC 1035 label as Cloud TPU node ids are
 * ([a-z]([-a-z0-9]{0,61}[a-z0-9])?), hence safe as a directory name. */
int tpf_local_name_valid(const char *name);

/* Absolute root from the fleet (caller frees), or NULL with a diagnostic. */
char *tpf_local_root(const struct tpf_fleet *f, struct tpf_diags *d);

/* Paths; caller frees. */
char *tpf_local_node_dir(const char *root, const char *name);
char *tpf_local_node_file(const char *root, const char *name);
char *tpf_local_home_path(const char *root, const char *name, int worker);

/*
 * Read nodes/<name>/node.json. TPF_ENOTFOUND (no diagnostic) when there is
 * no node.json; TPF_ERROR with a diagnostic naming the file when it is
 * corrupt. When settle is set, a CREATING node whose readyAt has passed
 * becomes READY/HEALTHY, persisted under the node's lock.
 */
int tpf_local_node_load(const char *root, const char *name, int settle,
			struct tpf_local_node *out, struct tpf_diags *d);
/* Write node.json atomically (mode 0600). */
int tpf_local_node_save(const char *root, const struct tpf_local_node *n, struct tpf_diags *d);

/* A node's exclusive lock (flock on locks/<name>.lock): *fd_out >= 0 on
 * success; release with tpf_local_unlock. */
int tpf_local_lock(const char *root, const char *name, int *fd_out, struct tpf_diags *d);
void tpf_local_unlock(int fd);

/* A random node id: 19 decimal digits, no leading zero (Node.id). */
void tpf_local_new_id(char out[20]);

/* Make dir and chmod it 0700 whatever the umask (screen insists on it for
 * SCREENDIR; homes are private as on a VM). */
int tpf_local_mkdir_private(const char *path, struct tpf_diags *d);

/* Where short SCREENDIR links live: this prefix, then 16 hex digits. */
#define TPF_LOCAL_LINK_PREFIX "/tmp/tpuform-screen-"

/*
 * The worker's SCREENDIR (caller frees): <home>/.screen, or, when that is
 * too long for screen's socket paths, /tmp/tpuform-screen-<sha256(home)
 * prefix>, a symbolic link to <home>/.screen. Sockets live in
 * <home>/.screen either way.
 */
char *tpf_local_screendir(const char *home);
/*
 * 1 if screen cannot find its user rc file under `home`: screen builds
 * "$HOME/.screenrc" in a 256-byte buffer and refuses to start ("home too
 * large") when HOME is longer than 244 bytes, unless SCREENRC names the
 * file. tpf_local_env then sets SCREENRC=<home>/.screenrc.
 */
int tpf_local_home_needs_screenrc(const char *home);
/* Create the home (0700) and what its environment names: SCREENDIR (0700,
 * ours), <home>/tmp, <root>/bucket. Idempotent. A home too long for
 * screen and the job's files (TPF_LOCAL_HOME_MAX) is an error naming its
 * length, with a hint to shorten provider.local.root; nothing is made. */
int tpf_local_prepare_home(const char *root, const char *home, struct tpf_diags *d);
/* The longest worker home (bytes): screen refuses a HOME longer than
 * MAXPATHLEN - 25 (4071) with "$HOME too long", and the files under it
 * (job logs, the source checkout) must still fit in PATH_MAX (4096). */
#define TPF_LOCAL_HOME_MAX 2048
/* Remove what a worker keeps outside its home (a short SCREENDIR link). */
int tpf_local_forget_home(const char *home, struct tpf_diags *d);

/*
 * The node a worker home belongs to (caller frees): `home` must be exactly
 * <root>/nodes/<name>/workers/<index> with a valid node name; else NULL.
 */
char *tpf_local_home_node(const char *root, const char *home);

/* A list of strings (worker homes), each owned by the list. */
struct tpf_local_homes {
	char **items;
	size_t n, alloc;
};
/* Append home unless it is listed already. */
void tpf_local_homes_add(struct tpf_local_homes *h, const char *home);
void tpf_local_homes_release(struct tpf_local_homes *h);

/* Worker homes under root that a short SCREENDIR link of this user in
 * /tmp points into (the link's target is <home>/.screen). */
void tpf_local_linked_homes(const char *root, struct tpf_local_homes *out);
/* Worker homes under root that a running process names in its
 * environment (HOME, or SCREENDIR directly or through its link). */
void tpf_local_running_homes(const char *root, struct tpf_local_homes *out);

/*
 * Stop every process whose environment names worker `home` (HOME or its
 * SCREENDIR): SIGSTOP then SIGKILL, until none is left. Works whether or
 * not the home still exists. *killed (may be NULL): how many processes
 * were found. TPF_ERROR naming `address` if some survived SIGKILL for 10 s.
 */
int tpf_local_kill_strays(const char *home, const char *address, size_t *killed,
			  struct tpf_diags *d);

/*
 * Workers whose node is gone (no node.json: its directory was removed
 * behind tpuform's back, as the hint for a corrupt node.json suggests):
 * stop their processes (tpf_local_kill_strays) and remove their short
 * SCREENDIR links. only: that node's workers only (NULL: every node under
 * root). locked: the caller holds only's lock (else each node's lock is
 * taken, and node.json checked again under it). A warning names each node
 * whose processes were stopped. Returns 0 or TPF_ERROR (some survived).
 */
int tpf_local_reap_orphans(const char *root, const char *only, int locked, struct tpf_diags *d);

/*
 * The environment a worker's commands get (NULL-terminated, caller frees
 * with tpf_local_env_free): PATH (inherited), HOME, USER, LOGNAME, SHELL,
 * LANG=C.UTF-8, TERM=xterm, SCREENDIR, TMPDIR, TPUFORM_LIBTPU_LOCKFILE,
 * TPUFORM_BUCKET, TPUFORM_LOCAL_GCS (<root>/gcs: gs://B/P is its B/P) and
 * TPUFORM_LOCAL_MOUNT_ROOT (<home>/mnt: where mounts go; docs/storage.md).
 */
char **tpf_local_env(const char *root, const char *home, const char *shell);
void tpf_local_env_free(char **env);

/*
 * Run `/bin/sh -c command` in `home` with envp, in a new process group,
 * stdin from /dev/null, stdout and stderr appended to out (may be NULL).
 * *status (status may be NULL): exit status, 128+N for signal N. timeout seconds (0: none): on
 * expiry the process group is killed and TPF_ERROR returned naming
 * `address`. Once the shell exits, output is read until EOF or for at most
 * a short grace period, so a background process that kept the pipe open
 * does not hold the caller. Output past TPF_TRANSPORT_OUTPUT_MAX (when out
 * is not NULL) kills the process group too: TPF_ERROR, out unchanged.
 */
/* tpf_local_run streaming (transport.h exec_stream): stdin from io->in_fd,
 * output to io->out as it comes, the command in a session of its own whose
 * group gets SIGINT / SIGKILL as *io->cancel rises. */
int tpf_local_run_stream(const char *home, char *const envp[], const char *command,
			 const struct tpf_exec_io *io, int *status, const char *address,
			 struct tpf_diags *d);
int tpf_local_run(const char *home, char *const envp[], const char *command,
		  struct tpf_buf *out, int *status, double timeout, const char *address,
		  struct tpf_diags *d);

/*
 * Stop everything running as worker `home`: the process groups recorded in
 * <home>/tpuform/run/ *.pid, its screen sessions (quit), then any process
 * whose environment has HOME=<home> or its SCREENDIR (SIGSTOP,
 * then SIGKILL, until none is left), and finally dead screen sockets.
 */
int tpf_local_kill_worker(const char *root, const char *home, const char *address,
			  struct tpf_diags *d);

#endif
