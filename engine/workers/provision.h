/*
 * Provisioning a worker: render its bootstrap script, upload it with the
 * secrets env file, run it, and read back what it reports. Also the read-
 * only probes used by refresh, show and logs. Transport-neutral: works the
 * same over providers/local and providers/ssh.
 *
 * Protocol with the script (templates/bootstrap.sh): it is run as
 * `sh tpuform/bootstrap.sh <verb>` and prints lines "TPUFORM key=value":
 *   start   -> "TPUFORM result=started" or "TPUFORM result=unchanged"
 *              (unchanged: the same script is already running in a live session)
 *   restart -> "TPUFORM result=started" (kills the session first)
 *   status  -> "TPUFORM session=alive|exited|dead|none", "TPUFORM exit_code=N",
 *              "TPUFORM script=sha256:<hex of the running script>", "TPUFORM last_log=<line>",
 *              "TPUFORM checkpoint=<the job's last TPUFORM_CHECKPOINT>" and
 *              "TPUFORM disruption=<reason>" when there are some,
 *              and while the session is alive "TPUFORM stalled_for=S": whole seconds
 *              since the job's log last grew or it last touched $TPUFORM_HEARTBEAT,
 *              whichever is later (the script reports, tpuform judges against
 *              stall_timeout: the timeout can change without re-provisioning)
 *   stop [REASON] -> "TPUFORM result=stopped"; with a REASON (a planned
 *              replacement or delete), $TPUFORM_DISRUPTION is written first;
 *              the job gets on_disruption's signal and grace before SIGKILL
 *   disrupt REASON DEADLINE -> "TPUFORM result=told|unchanged|no_job": a
 *              notice tpuform learnt from the API (upcoming maintenance) passed
 *              to the running job as a metadata notice is: $TPUFORM_DISRUPTION
 *              (reason=, deadline=DEADLINE) and on_disruption's signal, once
 *              per reason and deadline (unchanged: said already); nothing is
 *              stopped (tpf_provision_disrupt below)
 *   wait TOKEN SECONDS -> blocks until the job's token differs from TOKEN or
 *              SECONDS pass, then what status prints and "TPUFORM token=..."
 *              (tpf_provision_wait below)
 *   logs N  -> the last N lines of the job log (0: all), no TPUFORM lines
 *   setup-log N -> the same for the setup log (setup.log)
 * A failing start/restart prints "TPUFORM result=failed step=STEP exit_code=N"
 * (STEP: lock, secrets, session, source, setup, preflight, mount: docs/storage.md), preceded by a "tpuform: <why>"
 * line and the tail of the step's log, and exits 1. start/restart may also
 * print "TPUFORM warning=<word>" (libtpu-lockfile-in-use,
 * libtpu-lockfile-not-removed); provisioning turns them into warnings.
 *
 * Files on the worker (under ~/tpuform/, see templates/render.h):
 * bootstrap.sh, secrets.env, src/, source.bundle, run/ (script.sha256,
 * exit_code, job.pid, retry, heartbeat, setup.<hash> markers, lock, mounts:
 * the FUSE mounts to unmount) and logs/ (run-<retry>-<UTC time>.log,
 * current.log -> the newest, setup.log, source.log, mount.log,
 * gcsfuse-install.log).
 */
#ifndef TPF_PROVISION_H
#define TPF_PROVISION_H

#include "config/config.h"
#include "plan/worker_script.h"
#include "providers/transport.h"
#include "state/state.h"
#include "util/diag.h"

/* What a worker reports about its job. */
struct tpf_worker_report {
	int reachable;     /* 0: could not connect */
	/* The session line's word, parsed (model/job_state.h): NONE (never
	 * started), ALIVE, EXITED, DEAD, UNKNOWN (a word not in the table);
	 * UNREACHABLE when it could not connect. */
	enum tpf_job_state state;
	int exit_code;     /* -1 unknown / still running */
	char *script_hash; /* "sha256:..." of the script the session runs, may be NULL */
	char *last_log;    /* last line of the job log, may be NULL */
	char *host_key;    /* fingerprint seen (ssh), may be NULL */
	double stalled_for; /* seconds without output or heartbeat (alive only); -1 unknown */
	/* The job's own progress (templates/bootstrap.sh status, docs/ledger.md):
	 * its step and the step of its last checkpoint; -1 unknown. */
	long step, checkpoint_step;
	char *checkpoint;   /* the job's last TPUFORM_CHECKPOINT, may be NULL */
	char *disruption;   /* the notice the job was given (reason=), may be NULL */
};
void tpf_worker_report_release(struct tpf_worker_report *r);

/*
 * Replace every secret value (4 bytes or more) in each fact's last_log by
 * "***", as notifications do (engine/telemetry/notify.h), so that a job that prints
 * its secret does not put it into show, watch or -json output. The old
 * text is wiped. secrets: the fleet's resolved values (f->secrets).
 */
struct tpf_job_facts;
void tpf_job_facts_redact(struct tpf_job_facts *facts, const struct tpf_kvlist *secrets);

/*
 * Provision worker `worker` of node n (whose job and generation are what
 * to run) on the node `live` (for endpoints). force: restart even if the
 * same script runs. On success updates n->workers[worker] (script_hash,
 * session, job_state TPF_JOB_STATE_ALIVE, recorded as "running",
 * provisioned_at, host_key, address) and sets *changed (0: already running
 * this script, Ansible's "ok"). Errors: TPF_EUNREACHABLE, TPF_EHOSTKEY,
 * TPF_ERROR; n->workers[worker].job_state is then
 * TPF_JOB_STATE_UNREACHABLE or TPF_JOB_STATE_FAILED. A failed preflight
 * (step "preflight": a held or missing TPU, the group's preflight
 * command) adds one to n->workers[worker].preflight_failures and keeps the script's message in
 * preflight_error; a start that passes it sets them to 0 and NULL.
 */
int tpf_provision_worker(struct tpf_transport *t, const struct tpf_fleet *f,
			 struct tpf_state_node *n, const struct tpf_live_node *live, int worker,
			 int force, int *changed, struct tpf_diags *d);

/*
 * Ask worker `worker` for its status (read-only). Fills *r (caller
 * releases). An unreachable worker is a normal outcome: returns 0 with
 * r->reachable = 0 and the reason as a warning. TPF_EHOSTKEY and a script
 * that does not answer are errors. last_log is cleaned (valid UTF-8, no
 * control characters, at most 300 bytes). once: a single connection attempt
 * at a pinned worker (providers/transport.h tpf_worker_ref.once), for
 * `watch`, which probes again at the next session check.
 */
int tpf_provision_probe(struct tpf_transport *t, const struct tpf_state_node *n,
			const struct tpf_live_node *live, int worker, int once,
			struct tpf_worker_report *r, struct tpf_diags *d);

/*
 * Watching a job without probing it (watch, issue 21): a connection held
 * to worker `worker` (read-only, one attempt; the caller closes it with
 * t->ops->close), on which tpf_provision_wait runs the bootstrap's wait
 * verb: it blocks until the job's token (its process group and state:
 * "none", "PGID:alive", "PGID:exited:CODE", "PGID:dead") differs from
 * `token` ("" or NULL: answers at once), or `window` seconds pass, then
 * fills *r as tpf_provision_probe does and *token_out with the new token
 * (caller frees; NULL if the script printed none, e.g. an older script).
 * The exec's timeout is window + the status probe's, so a silently
 * dropped network ends the call. Errors: TPF_EUNREACHABLE (the connection
 * broke: reconnect), TPF_ERROR (an answer without a session line).
 */
int tpf_provision_connect(struct tpf_transport *t, const struct tpf_state_node *n,
			  const struct tpf_live_node *live, int worker, struct tpf_conn **c,
			  struct tpf_diags *d);
int tpf_provision_wait(struct tpf_transport *t, struct tpf_conn *c, const char *node, int worker,
		       const char *token, int window, struct tpf_worker_report *r, char **token_out,
		       struct tpf_diags *d);
/*
 * tpf_provision_connect in steps, for an event loop (watch's job waits,
 * issue 28): the transport's dial ops (providers/transport.h dial_start,
 * with their contract), when it has them (tpf_provision_can_dial: ssh).
 * dial_start may block briefly (a provider's lookups); the caller steps the
 * dial with t->ops->dial_step, takes the connection with dial_finish and
 * frees the dial with dial_free.
 */
int tpf_provision_can_dial(const struct tpf_transport *t);
int tpf_provision_dial_start(struct tpf_transport *t, const struct tpf_state_node *n,
			     const struct tpf_live_node *live, int worker, struct tpf_dial **out,
			     struct tpf_diags *d);

/*
 * The wait that lasts the job's life (issue 28; docs/watch.md "Job
 * waits"), driven by the caller's event loop, on transports that have
 * watch_open/step/close (tpf_provision_can_watch: ssh; the local
 * transport has only the window). tpf_provision_watch_open asks, on
 * connection c (never blocks: the first step starts it), the bootstrap's `wait TOKEN WINDOW
 * BEAT`: it lasts until the job's token differs from `token` ("" or NULL:
 * at once) and prints its record (the status and "TPUFORM token=...")
 * then, and every `beat` seconds meanwhile as a heartbeat; an older
 * bootstrap ignores BEAT and answers within `window` seconds. *out: the
 * wait (freed by tpf_provision_watch_close). tpf_provision_watch_step
 * never blocks: cb->record gets each whole record that arrived (report
 * and token borrowed for the call; the token NULL from an older script);
 * it returns 1 while the wait goes on (*pfd: what to poll(2) for; step
 * again when it is ready, and by *due, monotonic seconds, for keepalives
 * and the silence limit: providers/transport.h watch_step), 0 when the wait ended (the job changed: close,
 * then open again with the last token), TPF_EUNREACHABLE when the
 * connection broke or was silent for beat (or window) + 30 s, TPF_ERROR
 * for a record without a session line. tpf_provision_watch_close (blocking,
 * briefly) frees the wait; `ended`: the step said 0, so the exit status is
 * read and an answer without a token line delivered. After an error close
 * the wait (ended 0), then the connection.
 */
struct tpf_provision_watch_cb {
	void (*record)(void *arg, const struct tpf_worker_report *r, const char *token);
	void *arg;
};
struct tpf_job_watch;
int tpf_provision_can_watch(const struct tpf_transport *t);
int tpf_provision_watch_open(struct tpf_transport *t, struct tpf_conn *c, const char *node,
			     int worker, const char *token, int window, int beat,
			     const struct tpf_provision_watch_cb *cb, struct tpf_job_watch **out,
			     struct tpf_diags *d);
int tpf_provision_watch_step(struct tpf_job_watch *w, struct pollfd *pfd, double *due,
			     struct tpf_diags *d);
int tpf_provision_watch_close(struct tpf_job_watch *w, int ended, struct tpf_diags *d);

/* The last `lines` lines of the worker's job log (0: all), appended to out.
 * Errors (nothing appended): unreachable, never provisioned, no log yet. */
int tpf_provision_logs(struct tpf_transport *t, const struct tpf_state_node *n,
		       const struct tpf_live_node *live, int worker, int lines,
		       struct tpf_buf *out, struct tpf_diags *d);

/* The same for the output of the group's `setup` script (and of the
 * source checkout) on the worker, ~/tpuform/logs/setup.log: what to read
 * when a worker fails at step "setup". Errors: as tpf_provision_logs; a
 * worker provisioned by an older tpuform, whose script lacks the verb, is
 * an error saying so. */
int tpf_provision_setup_log(struct tpf_transport *t, const struct tpf_state_node *n,
			    const struct tpf_live_node *live, int worker, int lines,
			    struct tpf_buf *out, struct tpf_diags *d);

/* Stop the worker's session and job: the group's on_disruption signal
 * (default SIGTERM) to the job's process group, SIGKILL after its grace
 * (default 15 s). reason (a word: "replaced", "deleted"; NULL: none)
 * writes $TPUFORM_DISRUPTION first, as a preemption notice does; used
 * before a planned replacement or delete of a running node, and for the
 * members of a restart unit. A worker never provisioned counts as stopped. */
int tpf_provision_stop(struct tpf_transport *t, const struct tpf_state_node *n,
		       const struct tpf_live_node *live, int worker, const char *reason,
		       struct tpf_diags *d);

/* The bootstrap's "TPUFORM result=WORD" (the protocol above), read once
 * where the script's output is parsed (engine/workers/provision_output.c). */
enum tpf_script_result {
	TPF_SCRIPT_NONE = 0, /* no result line */
	TPF_SCRIPT_OTHER,    /* a word this tpuform does not know */
	TPF_SCRIPT_STARTED,
	TPF_SCRIPT_UNCHANGED,
	TPF_SCRIPT_STOPPED,
	TPF_SCRIPT_TOLD,
	TPF_SCRIPT_NO_JOB,
	TPF_SCRIPT_FAILED,
};

/*
 * Tell the job on worker `worker` that its VM is disrupted at `deadline`
 * (seconds since the epoch) for `reason` (a word of tpuform's: [a-z_],
 * e.g. "maintenance"), with the bootstrap's disrupt verb: it writes
 * $TPUFORM_DISRUPTION and sends on_disruption's signal, and stops nothing.
 * *result: TPF_SCRIPT_TOLD, TPF_SCRIPT_UNCHANGED (the job had this notice)
 * or TPF_SCRIPT_NO_JOB. Errors: TPF_EUNREACHABLE (a warning in d), TPF_ERROR (a
 * script without the verb, or a reason that is not a word: a bug).
 */
int tpf_provision_disrupt(struct tpf_transport *t, const struct tpf_state_node *n,
			  const struct tpf_live_node *live, int worker, const char *reason,
			  long deadline, enum tpf_script_result *result, struct tpf_diags *d);

/*
 * Apply's provisioning fan-out on one event loop (issue 28; docs/watch.md
 * "Threads and connections"; engine/workers/provision_fanout.c): every
 * worker's connection and commands driven by one thread with non-blocking
 * libssh2, and FANOUT_HELPERS (4) helper threads for what may block (a
 * dial's start, where the provider looks the node up and installs the
 * login key; a command's exit status; a close). At most `in_flight`
 * workers are being provisioned at once (apply's -parallelism): a limit
 * on work in flight, not on threads.
 *
 * tpf_fanout_can: whether n's workers can go through it (the transport has
 * the dial and watch ops: ssh; the source mode moves no source: "none" or
 * "clone"); otherwise tpf_provision_worker, on threads.
 * tpf_fanout_new: NULL when threads or epoll cannot be had (use the
 * threads then). tpf_fanout_free: after every tpf_fanout_provision
 * returned.
 * tpf_fanout_provision: provision workers[i] of copies[i] (a private copy
 * of the node per worker, written as tpf_provision_worker writes it; live
 * is the node's live record) as tpf_provision_worker does, the same
 * steps but the files written by `cat` over a command's stdin instead of
 * SFTP. Blocks until all n are done; done(arg, i, rc, changed, d) runs on
 * the caller's thread as each finishes, with rc and changed as
 * tpf_provision_worker's and d that worker's diagnostics (borrowed: move
 * them). Several threads may call it at once on one fan-out.
 */
struct tpf_fanout;
typedef void (*tpf_fanout_done_fn)(void *arg, size_t i, int rc, int changed,
				   struct tpf_diags *d);
int tpf_fanout_can(const struct tpf_transport *t, const struct tpf_fleet *f,
		   const struct tpf_state_node *n);
struct tpf_fanout *tpf_fanout_new(struct tpf_transport *t, int in_flight);
void tpf_fanout_free(struct tpf_fanout *fo);
void tpf_fanout_provision(struct tpf_fanout *fo, const struct tpf_fleet *f,
			  struct tpf_state_node *const *copies, const struct tpf_live_node *live,
			  const int *workers, size_t n, int force, tpf_fanout_done_fn done,
			  void *arg);

#endif
