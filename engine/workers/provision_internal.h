/*
 * The parts of provisioning (engine/workers/provision.h), shared by
 * engine/provision*.c only. The files call each other one way:
 *
 *   provision.c (start, restart), provision_wait.c (wait)
 *     -> provision_probe.c (status),
 *   provision_verbs.c (logs, setup-log, stop, disrupt)
 *     -> provision_conn.c (endpoint, connection, one command)
 *     -> provision_output.c (what the script printed)
 */
#ifndef TPF_ENGINE_PROVISION_INTERNAL_H
#define TPF_ENGINE_PROVISION_INTERNAL_H

#include "engine/workers/provision.h"
#include "templates/render.h"
#include "util/buf.h"
#include "util/kv.h"

/* Seconds. start runs setup, which may install things. */
#define TPF_PROV_START_TIMEOUT 600.0
/* Seconds a status probe (and the disrupt verb) may take. */
#define PROBE_TIMEOUT 60.0
/* The bootstrap, as run on the worker (templates/render.h). */
#define SCRIPT_CMD "sh " TPF_REMOTE_SCRIPT

/* ---- what the script printed (engine/workers/provision_output.c) ---------------- */

/* What the script said: "TPUFORM key=value" lines. A line holds several
 * space-separated pairs, except last_log and script whose value is the
 * rest of the line. Later values win; warnings are collected. */
struct script_said {
	struct tpf_kvlist kv;
	enum tpf_script_result result; /* the "result" key as a value */
	struct tpf_buf warnings; /* one a line */
	const char *message;     /* borrowed: last "tpuform: " line, in text */
	struct tpf_buf text;     /* the output without TPUFORM lines */
};

/* Fill *s from the script's output out (s is overwritten; release it with
 * tpf_prov_said_release). */
void tpf_prov_said_parse(const char *out, struct script_said *s);
void tpf_prov_said_release(struct script_said *s);
/* A non-negative number the script said under key, or -1. */
long tpf_prov_said_number(const struct script_said *s, const char *key);
/* The last lines of text (15), redacted of secrets (NULL: none) and
 * cleaned; caller frees. */
char *tpf_prov_output_tail(const char *text, const struct tpf_kvlist *secrets);
/* The script's "tpuform: " message line alone, redacted and cleaned, or
 * NULL; caller frees. */
char *tpf_prov_message_line(const struct script_said *s, const struct tpf_kvlist *secrets);
/* A copy of s fit for a diagnostic or the state file (JSON needs UTF-8):
 * invalid UTF-8 bytes become '?', control characters other than newline
 * and tab are dropped, and at most max bytes are kept, cut at a character
 * boundary. Caller frees. */
char *tpf_prov_clean_text(const char *s, size_t max);

/* ---- the status report (engine/workers/provision_probe.c) ---------------------- */

/* A report of nothing yet: an unreachable worker, every number unknown. */
void tpf_prov_report_reset(struct tpf_worker_report *r);
/* What the status (or wait) verb printed, with its exit status, into *r
 * (state and the rest; *token_out, when not NULL, the wait verb's token
 * (caller frees), or NULL). An answer without a session line is
 * TPF_ERROR with a diagnostic. */
int tpf_prov_fill_report(const char *out, int status, const char *node, int worker,
			 struct tpf_worker_report *r, char **token_out, struct tpf_diags *d);

/* ---- talking to a worker (engine/workers/provision_conn.c) ---------------------- */

/* Worker `worker`'s endpoint on live, or NULL (no live node, or no such
 * worker); borrowed from live. */
const struct tpf_endpoint *tpf_prov_worker_endpoint(const struct tpf_live_node *live, int worker);
/* Connect to worker `worker` of n, pinned to its recorded host key
 * (providers/transport.h tpf_worker_ref: read_only, once). *c: the
 * connection (NULL on error); *host_key (when not NULL): the key seen,
 * caller frees. Errors: as t->ops->connect. */
int tpf_prov_open_worker(struct tpf_transport *t, const struct tpf_state_node *n,
			 const struct tpf_live_node *live, int worker, int read_only, int once,
			 struct tpf_conn **c, char **host_key, struct tpf_diags *d);
/* tpf_provision_dial_start with read_only and once as given
 * (providers/transport.h tpf_worker_ref): apply's dials may install the
 * login key and retry within the connect budget, as its connect does. */
int tpf_prov_dial_start(struct tpf_transport *t, const struct tpf_state_node *n,
			const struct tpf_live_node *live, int worker, int read_only, int once,
			struct tpf_dial **out, struct tpf_diags *d);
/*
 * Run `command` on the worker; on success out holds its output and
 * *status its exit status. soft: an unreachable worker gives
 * TPF_EUNREACHABLE with the reason as a warning only (a probe of a
 * preempted node is not an error); otherwise the connect diagnostics stay
 * errors. *reachable: 1 once connected and the command ran. read_only,
 * once: see tpf_worker_ref.
 */
int tpf_prov_run(struct tpf_transport *t, const struct tpf_state_node *n,
		 const struct tpf_live_node *live, int worker, const char *command, double timeout,
		 struct tpf_buf *out, int *status, char **host_key, int soft, int read_only,
		 int once, int *reachable, struct tpf_diags *d);

/* ---- the start and what it said (engine/workers/provision.c) ------------------- */

/* The start (or restart, force) command line for n; caller frees. */
char *tpf_prov_start_command(const struct tpf_state_node *n, int force);
/* What the start command printed (out) and its exit status, taken into
 * sw: 0 when the job was started or found running (*started: which),
 * else an error in d with the script's own words (addr names the worker;
 * a preflight failure is counted in sw). */
int tpf_prov_take_start(const struct tpf_fleet *f, struct tpf_state_worker *sw, const char *addr,
			const char *out, int status, int *started, struct tpf_diags *d);
/* Worker `worker`'s job now runs the script `hash`: its facts in sw
 * (session, state, provisioned_at when started, address from live). */
void tpf_prov_mark_running(const struct tpf_fleet *f, const struct tpf_live_node *live,
			   int worker, struct tpf_state_worker *sw, const char *hash, int started);
/* The error (in d, TPF_ERROR) for a worker that n's worker list lacks. */
int tpf_prov_no_such_worker(const struct tpf_state_node *n, int worker, const char *addr,
			    struct tpf_diags *d);

/* ---- provisioning as a list of commands (engine/workers/provision_job.c) ------- */

/*
 * One worker's provisioning as commands with their stdin, for a caller
 * that runs them on an event loop (engine/workers/provision_fanout.c):
 * the secrets and the script each written by a `cat` over the command's
 * stdin (to a temporary name, then renamed: as put() does over SFTP),
 * then the start. For source modes "none" and "clone" only
 * (tpf_prov_job_fits): "present" and "bundle" move the source first,
 * with the transport's blocking ops.
 */
struct tpf_prov_job;
/* The shell command that writes its stdin to path (relative to the home
 * directory; its parent made, 0700) with `mode` (octal digits): a
 * temporary file in the same directory, renamed over path only when it
 * holds exactly len bytes (a lost connection ends stdin early, as an end
 * of file would), removed otherwise; exits non-zero then. Caller frees. */
char *tpf_prov_write_command(const char *path, const char *mode, size_t len);
/* Whether provisioning n's workers fits in commands alone. */
int tpf_prov_job_fits(const struct tpf_fleet *f, const struct tpf_state_node *n);
/* A job for worker `worker` of n (the caller's private copy, written by
 * the job until tpf_prov_job_end), or NULL with an error in d when n has
 * no such worker. Renders the script and the secrets. Free with
 * tpf_prov_job_free. */
struct tpf_prov_job *tpf_prov_job_new(const struct tpf_fleet *f, struct tpf_state_node *n,
				      const struct tpf_live_node *live, int worker, int force,
				      struct tpf_diags *d);
/* The connection is made: host_key (may be NULL) is pinned in the
 * worker's facts at once (trust on first use), even if a later step
 * fails. */
void tpf_prov_job_connected(struct tpf_prov_job *j, const char *host_key);
/* The next command: 1 with *cmd, *input (*len bytes; NULL: none) and
 * *idle (seconds without output before it counts as lost), all borrowed
 * from j until the next call; 0 when there is none left. */
int tpf_prov_job_next(struct tpf_prov_job *j, const char **cmd, const void **input, size_t *len,
		      double *idle);
/* The last command's outcome: its output and exit status. 0 to go on,
 * or an error (in d: the command's words) that ends the job. */
int tpf_prov_job_answer(struct tpf_prov_job *j, const char *out, int status, struct tpf_diags *d);
/* The end: err is the job's error (0: every command went well, or a
 * transport error: TPF_EUNREACHABLE marks the worker unreachable). The
 * worker's facts are written in the node copy; *changed: the job was
 * (re)started. Returns err. */
int tpf_prov_job_end(struct tpf_prov_job *j, int err, int *changed);
void tpf_prov_job_free(struct tpf_prov_job *j);

#endif
