/*
 * The everyday chores on workers of a refreshed session (issue 19): run a
 * command interactively (`exec`, `ssh -- CMD`), copy files (`cp`), forward
 * ports (`ssh -L`), and write an ssh_config(5) for plain ssh(1) and VSCode
 * (`ssh-config`). None changes the state or restarts a job. They go
 * through the transport (providers/transport.h), so they work the same on
 * every provider. Nothing here prints: output goes to the callbacks, what
 * went wrong to diagnostics.
 */
#ifndef TPF_ENGINE_CHORES_H
#define TPF_ENGINE_CHORES_H

#include <stddef.h>
#include "engine/pipeline/pipeline.h"
#include "model/worker_set.h"

/* One worker to act on. Pointers borrowed from the session. */
struct tpf_chore_target {
	struct tpf_state_node *sn;
	const struct tpf_live_node *ln;
	struct tpf_transport *t;
	int worker;
};

/*
 * The workers a chore acts on: the workers of node `node` (or of every
 * node of the state when node is NULL) that `workers` takes (NULL, not
 * given, or "all": every worker; model/worker_set.h). A worker the set
 * names beyond a node's count is an error naming the count ("node 'n' has
 * no worker 5: it has 4 workers (0 to 3)"), as gcloud's --worker refuses
 * an index beyond the node's. Nodes that are not READY are errors for a
 * named node and skipped (with a warning) for all nodes. *out is
 * caller-freed (free()); *n may be 0 only on error. 0 or TPF_ERROR with a
 * diagnostic in s->d.
 */
int tpf_chore_targets(struct tpf_pipeline *s, const char *node, const struct tpf_worker_set *workers,
		      struct tpf_chore_target **out, size_t *n);

/* An interactive shell on target (the transport's interactive op, as
 * `ssh HOST` and `gcloud compute tpus tpu-vm ssh` give): returns only on
 * failure, with a diagnostic in d. */
void tpf_chore_interactive(const struct tpf_chore_target *t, struct tpf_diags *d);

/* Connect to target (the worker ref filled from the state and live node).
 * The transport's connect results. */
int tpf_chore_connect(const struct tpf_chore_target *t, struct tpf_conn **c,
		      struct tpf_diags *d);

/* "NODE/wN" of a target; caller frees. */
char *tpf_chore_name(const struct tpf_chore_target *t);

/* ---- exec --------------------------------------------------------------- */

/* The worker's exit status when the command could not be run there, as
 * ssh(1) reports its own errors. */
#define TPF_CHORE_STATUS_FAILED 255

struct tpf_exec_opts {
	const char *command; /* for /bin/sh, in the worker's home */
	int secrets;         /* also source the job's secrets.env */
	int in_fd;           /* copied to every worker's stdin; -1: none */
	/* Output, on the worker's own thread, one line at a time (raw: 0;
	 * without its newline, len bytes) or as it comes (raw: 1). */
	void (*out)(void *arg, size_t target, const char *data, size_t len);
	void *arg;
	int raw;
	const volatile int *cancel; /* 1: SIGINT to every command, 2: SIGKILL */
	/* Caller-allocated, one per target, or NULL: why a target whose status
	 * is TPF_CHORE_STATUS_FAILED failed (TPF_EUNREACHABLE, TPF_EHOSTKEY:
	 * refused for a changed host key, TPF_ERROR), else 0. */
	int *failure;
};

/*
 * Run opts->command on every target at once, streaming. The command sees
 * the job's TPUFORM_* variables and env (exported from the worker's
 * tpuform/bootstrap.sh, as the bootstrap exports them for the job) and,
 * with opts->secrets, its secrets. status[i] (caller-allocated, n) gets
 * target i's exit status, or TPF_CHORE_STATUS_FAILED when it could not be
 * run (diagnostics say why). Returns the worst (highest) status.
 */
int tpf_chore_exec(const struct tpf_chore_target *t, size_t n, const struct tpf_exec_opts *o,
		   int *status, struct tpf_diags *d);

/* The shell text that exports the job's variables before a command (the
 * head of the worker's bootstrap.sh; with secrets, secrets.env). Caller
 * frees. */
char *tpf_chore_env_prefix(int secrets);

/* ---- cp ----------------------------------------------------------------- */

/* Where a relative remote path of `cp` is: the job's checkout
 * (templates/bootstrap.sh: tpf_src = ~/tpuform/src). "~" and "~/x" are the
 * home, an absolute path is itself (scp's rules). */
#define TPF_CHORE_CHECKOUT "tpuform/src"

/* A remote path as the transport takes it (relative to the home, or
 * absolute). Caller frees. */
char *tpf_chore_remote_path(const char *path);

struct tpf_copy_opts {
	const char *const *src; /* local paths (upload) or remote paths (download) */
	size_t nsrc;
	const char *dest;       /* remote path (upload) or a local directory (download) */
	int download;           /* workers to local: DEST/NODE/wN/... */
	int recursive;          /* -r: directories too */
	/* progress: bytes moved so far by target i (its own thread) */
	void (*progress)(void *arg, size_t target, unsigned long long bytes);
	void *arg;
};

/* What one target's copy did. */
struct tpf_copy_result {
	int rc;                   /* 0, or the first error's code */
	size_t files;
	unsigned long long bytes;
	struct tpf_diags d;       /* caller releases */
};

/*
 * scp for every target at once (gcloud compute tpus tpu-vm scp
 * --worker=all): upload each of o->src to o->dest on every target, or
 * download each remote o->src into o->dest/NODE/wN/. As cp(1) and scp(1):
 * a source directory needs recursive; into an existing directory (or when
 * several sources are given, or dest ends with '/') each source goes in
 * under its own name, else it becomes dest. Modes are kept. Files are
 * replaced atomically, so the running job is undisturbed; a download's
 * local files follow util/outfile.h (a device or FIFO there is written in
 * place, never replaced), and its DEST must exist or have an existing
 * parent (tpf_outdir_check: every target fails at once otherwise). res (caller
 * allocated, n) gets each target's outcome. Returns 0 when every target
 * succeeded, else TPF_ERROR.
 */
int tpf_chore_copy(const struct tpf_chore_target *t, size_t n, const struct tpf_copy_opts *o,
		   struct tpf_copy_result *res);

/* ---- ssh -L ------------------------------------------------------------- */

/* One -L spec: [bind_address:]port:host:hostport (ssh(1) -L). */
struct tpf_forward_spec {
	char *bind;  /* NULL: localhost, as ssh(1) without GatewayPorts */
	int port;    /* local port; 0: any free one (then filled in) */
	char *host;
	int hostport;
};

/* Parse spec ("8080:localhost:80", "127.0.0.1:8080:localhost:80",
 * "[::1]:8080:[::1]:80"). 0, or TPF_ERROR with a diagnostic showing the
 * syntax. Release with tpf_forward_spec_release. */
int tpf_forward_spec_parse(const char *spec, struct tpf_forward_spec *out, struct tpf_diags *d);
void tpf_forward_spec_release(struct tpf_forward_spec *f);

/*
 * Listen on every spec (all of them, before anything runs, so that a port
 * in use fails at once), then serve the forwards to target over its own
 * connection until *stop is set. on_ready (may be NULL) is called once
 * when listening. 0, or an error with a diagnostic.
 */
int tpf_chore_forward(const struct tpf_chore_target *t, struct tpf_forward_spec *specs, size_t n,
		      const volatile int *stop, void (*on_ready)(void *arg), void *arg,
		      struct tpf_diags *d);

/* ---- ssh-config --------------------------------------------------------- */

/*
 * The ssh_config(5) text for every READY worker of the session's state, as
 * SkyPilot writes its cluster entries: "Host NODE-wN" with HostName, Port,
 * User, IdentityFile (ssh.private_key), HostKeyAlias, StrictHostKeyChecking
 * yes and UserKnownHostsFile `known_hosts_path`; ProxyJump for
 * ssh.proxy_jump (the bastion's key is in the same file). The host keys are
 * read from each worker (the state keeps only fingerprints) and must match
 * the pins. *config and *known_hosts are caller-freed. Workers that cannot
 * be reached are left out with a warning; when the state has workers but
 * none gives an entry, TPF_ERROR with one error for the fleet (the local
 * provider's workers are never SSH hosts: that error alone) and nothing is
 * returned. 0 or TPF_ERROR.
 */
int tpf_chore_ssh_config(struct tpf_pipeline *s, const char *known_hosts_path, char **config,
			 char **known_hosts, struct tpf_diags *d);

/* The files `ssh-config -install` writes: ~/.ssh/tpuform/FLEET.config and
 * FLEET.known_hosts. Caller frees; NULL without $HOME. */
char *tpf_ssh_config_installed_path(const char *fleet, const char *ext);

/*
 * Write the session's config to `config_path` (and its known hosts to
 * known_hosts_path) under util/outfile.h's rule: atomically over a regular
 * file, through a symbolic link, in place on a device; their directories
 * must exist (the caller creates ~/.ssh/tpuform for -install, never the
 * directory of a file named with -out). 0 or TPF_ERROR.
 */
int tpf_chore_ssh_config_write(struct tpf_pipeline *s, const char *config_path,
			       const char *known_hosts_path, struct tpf_diags *d);

/*
 * `apply`: rewrite the installed files of the fleet (FLEET.config and
 * FLEET.known_hosts), if `ssh-config -install` made them: the config file
 * must exist, it is never created here. The session's live nodes are
 * refreshed first (apply may have replaced some). Each file is replaced
 * atomically (util/fs.h). Problems are warnings in s->d: apply's outcome
 * stands.
 */
void tpf_ssh_config_refresh_installed(struct tpf_pipeline *s);

/*
 * `watch`: the same, from a session that is already refreshed (a round's),
 * without a new refresh. Returns 1 when the files were rewritten, 0 when
 * none is installed, -1 when they could not be (warnings in d, which the
 * caller owns).
 */
int tpf_ssh_config_rewrite_installed(struct tpf_pipeline *s, struct tpf_diags *d);

/* Add "Include FILE" to ~/.ssh/config (created 0600 if missing) at its top,
 * unless the line is there already. *added: 1 if it was added. */
int tpf_ssh_config_include(const char *file, int *added, struct tpf_diags *d);

#endif
