/*
 * The state file: what tpuform created and what it knows of it.
 *
 * JSON (jansson), mirroring Terraform's state v4 conventions
 * (docs/terraform-behaviour.md section 4): "version" (schema, TPF_STATE_VERSION),
 * "serial" (rises by one on each write whose content differs),
 * "lineage" (UUID set once when a blank state is created),
 * "tpuform_version", "fleet", then "nodes" sorted by name. Each node keeps
 * its full recipe (so a vanished node can be recreated), its generation and
 * per worker the rendered script's hash and session facts. Secrets are
 * never stored: only job.secrets_hash.
 *
 * Files: <path> (mode 0600), <path>.backup (mode 0600: the file as it was
 * before this struct first replaced it; written once, at the first save
 * whose content differs, and only if a file existed then; Terraform's
 * local backend does the same).
 *
 * The implementation is split: state.c (nodes, load, save),
 * state_json.c (the JSON mapping and its checks) and node_status.c (the
 * names of a node's status).
 */
#ifndef TPF_STATE_H
#define TPF_STATE_H

/* The largest state file tpuform reads (docs/fleet-file.md "Limits"): 64 MiB, about
 * 20,000 nodes of 8 workers each. A larger one is refused, never rewritten. */
#define TPF_STATE_FILE_MAX ((size_t)64 << 20)

#include <stddef.h>
#include <jansson.h>
#include "model/job_state.h"
#include "model/live.h"
#include "model/recipe.h"
#include "model/worker_set.h"
#include "util/diag.h"

/* 2: nodes may be "completed" (deleted after their job succeeded: never
 * created again). A tpuform that knows only version 1 would create them
 * again, so it must refuse the file; version 1 files load as they are. */
#define TPF_STATE_VERSION 2

/* The longest last_checkpoint kept, bytes (docs/recovery.md): a step
 * number or a path. A longer report is cut at a character boundary; a
 * state file with a longer one is refused. */
#define TPF_STATE_CHECKPOINT_MAX 256

/* Node status in state (Terraform's instance status, plus pending). The
 * file holds the name (tpf_node_status_name); it is parsed once, when the
 * state is read (state/state_json.c), and written back by name, so the file
 * stays as it was. One table: state/node_status.c. */
enum tpf_node_status {
	TPF_NODE_STATUS_NONE = 0, /* absent from the file (omitted on save) */
	TPF_NODE_PENDING,   /* "pending": create about to be / was sent, not confirmed */
	TPF_NODE_CREATED,   /* "created": the provider confirmed the node */
	TPF_NODE_TAINTED,   /* "tainted": create failed half-way: replace next time */
	/* "bad_host": a worker failed its preflight (templates/bootstrap.sh: a
	 * held or missing TPU, a failing user preflight) preflight_failures
	 * times in a row: the host is bad, and the node is replaced next time,
	 * not restarted. */
	TPF_NODE_BAD_HOST,
	/* "completed": on_success: delete: every worker's job exited 0, the
	 * node was deleted to free its quota and is not created again
	 * (docs/design.md section 8). */
	TPF_NODE_COMPLETED,
	TPF_NODE_NSTATUS
};

/* The name of s as the state file writes it ("created"); NULL for
 * TPF_NODE_STATUS_NONE or a value out of range. Static. */
const char *tpf_node_status_name(enum tpf_node_status s);

/* The status named `name`, or -1 when it is not one of the names above
 * (NULL gives TPF_NODE_STATUS_NONE). */
int tpf_node_status_from_name(const char *name);

struct tpf_state_worker {
	int index;            /* worker id, 0-based */
	char *script_hash;    /* "sha256:..." of the rendered bootstrap, NULL: never provisioned */
	char *session;        /* screen session name */
	/* The job's state as tpuform last knew it (model/job_state.h): the
	 * file's "status" word, "running" "exited" "dead" "unreachable"
	 * "failed"; TPF_JOB_STATE_UNKNOWN: absent. */
	enum tpf_job_state job_state;
	int exit_code;        /* job's last exit status, -1 unknown */
	/* Restarts by tpuform on this node generation. With restart_scope:
	 * node every worker of the node is restarted together and they all
	 * carry the same count: the restarts of the unit (docs/design.md
	 * section 5); TPUFORM_RETRY is the generation plus this. */
	int restarts;
	char *restarted_at;   /* RFC 3339 of the last restart (for the backoff), may be NULL */
	char *address;        /* last address used to reach it, may be NULL */
	char *host_key;       /* pinned host key fingerprint "SHA256:..." (ssh), may be NULL */
	char *provisioned_at; /* RFC 3339, may be NULL */
	/* Failed preflights in a row on this node generation (0 after a
	 * start that passed it), and the last one's words ("the TPU is in
	 * use: pid 4242 (python3 train.py) holds /dev/accel0; ..."), or NULL. */
	int preflight_failures;
	char *preflight_error;
};

struct tpf_state_node {
	char *name;       /* "<fleet>-<group>-<index>" */
	char *group;
	int index;
	char *id;         /* provider's node id; NULL until created */
	enum tpf_node_status status;
	int generation;   /* 0 at first creation, +1 per re-creation or restart */
	struct tpf_recipe recipe;
	struct tpf_job job;   /* what the workers were last provisioned with */
	char *created_at; /* RFC 3339 */
	/* The job's last checkpoint as a worker reported it (a line
	 * TPUFORM_CHECKPOINT=<step or path> of its log, or
	 * $TPUFORM_CHECKPOINT_FILE; templates/bootstrap.sh), at most
	 * TPF_STATE_CHECKPOINT_MAX bytes, and when tpuform first saw that value
	 * (RFC 3339). Kept across the node's replacement: it belongs to the
	 * node's name, and a new VM's job starts from it
	 * (TPUFORM_LAST_CHECKPOINT, docs/recovery.md). NULL: none seen. */
	char *last_checkpoint;
	char *checkpoint_at;
	/* TPF_NODE_COMPLETED: when it completed (RFC 3339) and its job's exit
	 * status (0); otherwise NULL and -1. */
	char *completed_at;
	int exit_code;
	/* The last time this node was found a bad host: "zone Z, id I: worker
	 * W failed preflight N times: <words>". Kept across its replacement,
	 * so a report can tell bad hosts from bad jobs; NULL: never. */
	char *bad_host;
	/* Times this node (its name, whatever VM holds it) was preempted and
	 * replaced by tpuform: counted by tpf_state_record_preempted when the
	 * replacement starts, kept across every replacement, so `show` can
	 * tell a node that keeps being preempted. 0: never (omitted). */
	int preemptions;
	/* Why the node has no VM now, when its last create was refused by
	 * every zone it could try: "zone us-central1-c is out of capacity"
	 * (`show` and the plan say it), and when `watch` tries again (RFC
	 * 3339; NULL: at the next apply or watch round). Set by
	 * tpf_state_record_refused, kept while it is tried again (a watch
	 * round that finds the zone still backed off writes no new state),
	 * cleared once a create answers or may have left a node; NULL: none. */
	char *refused;
	char *retry_after;
	/* When tpuform sent the delete of this node's VM (RFC 3339): written
	 * and saved just before the delete request (engine/apply/apply.c), so that a
	 * run that dies while the delete is under way leaves the record of it:
	 * the next plan says the node is being deleted by tpuform, waits for
	 * it and creates it again, and never calls it deleted outside tpuform
	 * (plan/diff_going.c). Cleared when the node is recorded again
	 * (pending, created, running, completed). NULL: no delete sent. */
	char *delete_sent_at;
	/* Elastic slices (config.h struct tpf_elastic; docs/recovery.md
	 * "Elastic slices"): the slices of a multislice node the job runs on
	 * while some are lost, as their indexes in order, comma-separated
	 * ("0,2"); the workers of those slices are renumbered as a job of that
	 * many slices (plan/elastic.h). NULL: the job runs on every slice
	 * (omitted from the file, so states without it read and write as
	 * before). Set by apply when the job shrinks, cleared when it grows
	 * back or the node is created again (tpf_state_record_pending). */
	char *elastic_slices;
	struct tpf_state_worker *workers;
	size_t nworkers;
};

struct tpf_backend; /* state/backend.h */
struct tpf_state_doc; /* state/state_doc.c */

struct tpf_state {
	int version;
	long serial;
	char *lineage;
	char *tpuform_version; /* version that last wrote it */
	char *fleet;           /* fleet name, NULL in a blank state */
	/* The pinned host key of ssh.proxy_jump's bastion ("SHA256:...") and
	 * the "host:port" it was seen at (providers/ssh/ssh.h,
	 * tpf_ssh_jump_pin_sync); NULL: none. */
	char *proxy_jump_host;
	char *proxy_jump_host_key;
	struct tpf_state_node *nodes;
	size_t nnodes, alloc;

	/* Private: the canonical JSON last read or written, for "did the
	 * content change" and the backup. Managed by load/save. */
	char *last_json;
	int backup_written;
	/* Private: each node's dumps from the last save, reused for nodes
	 * that did not change (state/state_doc.c). Managed by save. */
	struct tpf_state_doc *doc;
	/* Private: the backend it was loaded through (state/backend.h), or
	 * NULL: then only tpf_state_save_file can write it. */
	struct tpf_backend *backend;
	/* Private: tpf_state_set_before_save. */
	void (*before_save)(struct tpf_state *st, void *ctx);
	void *before_save_ctx;
};

/* A blank state with a fresh lineage (UUID v4) and serial 0. *st is
 * overwritten, not freed. Release with tpf_state_release. */
void tpf_state_init(struct tpf_state *st);
void tpf_state_release(struct tpf_state *st);

/*
 * Load path into *st, which is overwritten, not freed (pass a zeroed or
 * released struct). A missing file gives a blank state (return 0) that the
 * first save writes (serial 1). A file that is not valid JSON (including
 * an empty file and duplicate keys), has no lineage, a field of the wrong
 * type, a node listed twice, or a version newer than TPF_STATE_VERSION is
 * refused: TPF_ERROR with a diagnostic "state file 'PATH' ...; it was left
 * untouched" naming the field, plus a hint; *st is then a blank state that
 * must not be saved over the file (callers stop). Unknown keys are ignored
 * (forward compatibility). Other read errors: TPF_ERROR from util/fs.h.
 */
int tpf_state_load(struct tpf_state *st, const char *path, struct tpf_diags *d);

/*
 * Write st to path atomically (util/fs.h tpf_write_file_atomic, mode 0600;
 * JSON_INDENT(2), sorted keys, trailing newline, NULL fields omitted).
 * If the content (everything but serial and tpuform_version) equals what
 * was last read or written by this struct, nothing is written and serial
 * stays (Terraform: statemgr/filesystem.go). Otherwise serial += 1, the
 * backup is written if due (see above), the file replaced, and
 * tpuform_version set to this build's.
 * On failure (TPF_ERROR, diagnostic "cannot write state file 'PATH': ...")
 * the old file is intact and st is unchanged, so a retry writes the same
 * serial. A string that is not UTF-8 is such a failure.
 * Not thread-safe: callers serialise (engine/apply/apply.c holds a mutex). No
 * global state.
 * This is the local file backend's writer (state/backend.c); product code
 * saves with tpf_state_save, which knows the backend. Tests and tools
 * that hold a state of their own use it directly.
 */
int tpf_state_save_file(struct tpf_state *st, const char *path, struct tpf_diags *d);

/*
 * The one save entry point: write st to the backend it was loaded through
 * (state/backend.h: the local file as tpf_state_save_file says, or Cloud
 * Storage with a generation precondition), after calling its before_save
 * hook if one is set (e.g. to take the bastion's host-key pin the
 * transport learned). TPF_ERROR with a diagnostic when st came through no
 * backend; otherwise the backend's result (TPF_ESTALE: another writer).
 */
int tpf_state_save(struct tpf_state *st, struct tpf_diags *d);

/*
 * Call fn(st, ctx) before every tpf_state_save of st (NULL: none). One
 * hook per state; the caller keeps ctx alive while st is saved.
 */
void tpf_state_set_before_save(struct tpf_state *st, void (*fn)(struct tpf_state *st, void *ctx),
			       void *ctx);

/* JSON form (new reference; caller json_decref). Used by save, saved plans
 * and `show -json`. */
json_t *tpf_state_to_json(const struct tpf_state *st);
/* Parse the JSON form; same refusal rules and messages as load (without
 * the backup hint). `what` names the source in messages (a path). *st is
 * overwritten, not freed; on failure it is a blank state. The parsed
 * content counts as "last read" for save. */
int tpf_state_from_json(struct tpf_state *st, json_t *root, const char *what, struct tpf_diags *d);

/* Borrowed pointer to the node, or NULL (binary search: do not rename
 * nodes in place). Pointers are invalidated by add/remove. */
struct tpf_state_node *tpf_state_find(struct tpf_state *st, const char *name);
/* Add (or return the existing) node named name; new nodes are zeroed with
 * status pending, generation 0, exit_code -1 and no workers. Keeps nodes
 * sorted. */
struct tpf_state_node *tpf_state_add(struct tpf_state *st, const char *name);
/* Remove a node; returns 1 if it was there. */
int tpf_state_remove(struct tpf_state *st, const char *name);
/* Make the node have exactly n workers (indices 0..n-1), keeping existing
 * facts for indices that remain; new workers have exit_code -1. */
void tpf_state_node_set_workers(struct tpf_state_node *n, size_t nworkers);
/*
 * The one worker-range rule (`-worker N` of ssh, exec, logs): 0 when
 * worker is -1 (every worker) or names one of n's workers, else an error
 * in d saying how many workers the state records and a hint. Pure: the
 * state alone answers, so callers check before asking anything live.
 */
int tpf_state_node_check_worker(const struct tpf_state_node *n, int worker, struct tpf_diags *d);
/* Worker w's record in node n, or NULL when n is NULL or w is not one of
 * its workers (model/worker_set.h tpf_worker_in_range). Borrowed from n:
 * valid until its workers are set again (tpf_state_node_set_workers). */
struct tpf_state_worker *tpf_state_node_worker(const struct tpf_state_node *n, int w);
void tpf_state_node_release(struct tpf_state_node *n);

/*
 * Deep copies of a node's record (state/state_record.c), for work done
 * outside the state's lock (stopping workers). Caller frees with
 * tpf_state_node_free (NULL ok).
 */
struct tpf_state_node *tpf_state_node_clone(const struct tpf_state_node *src);
void tpf_state_node_free(struct tpf_state_node *n);

/*
 * ---- Transitions (state/state_record.c) -----------------------------------
 * The only code that changes a node's record; every folder that changes
 * the state calls these (under its own lock) and then tpf_state_save. They
 * write memory only. The lifecycle is docs/design.md section 8.
 */

/* Before a create request is sent: `name` is pending, with the recipe and
 * job asked for and r->workers fresh workers. Its generation (the job's
 * TPUFORM_RETRY) is kept while it stays pending, else goes past every
 * restart the old node had. Returns the node (borrowed). */
struct tpf_state_node *tpf_state_record_pending(struct tpf_state *st, const char *name,
						const char *group, int index,
						const struct tpf_recipe *r, const struct tpf_job *job);
/* A pending node's create is about to be sent to `zone`: recorded first,
 * so that quota counts it there and a crash finds it there. */
void tpf_state_record_zone(struct tpf_state *st, const char *name, const char *zone);
/* The create answered: provider id, status created, created_at (RFC 3339). */
void tpf_state_record_created(struct tpf_state *st, const char *name, const char *id,
			      const char *created_at);
/* Elastic slices (elastic_slices above): the job of node `name` now runs
 * on the slices `running` names (copied; NULL: on every slice). */
void tpf_state_record_elastic(struct tpf_state *st, const char *name, const char *running);
/* The lost slices of node `name`, whose job runs on elastic_slices, were
 * made again in the background: their workers are new VMs, so each is
 * forgotten (tpf_state_worker_forget; its restarts kept, so TPUFORM_RETRY
 * never goes back), and the refusal note is cleared. */
void tpf_state_record_slices_made(struct tpf_state *st, const char *name);
/* Free what w holds and zero it (its index and restarts too). */
void tpf_state_worker_forget(struct tpf_state_worker *w);
/* The create did not succeed. may_exist: a request was sent and may have
 * left a node: tainted (replaced next time). Else nothing exists: the node
 * is forgotten, unless keep_history and it has a generation > 0, when it
 * stays pending so its TPUFORM_RETRY survives the wait. */
void tpf_state_record_not_created(struct tpf_state *st, const char *name, int may_exist,
				  int keep_history);
/* Every zone refused node `name`'s create and nothing of it exists: keep
 * why (copied; e.g. "zone Z is out of capacity") and when it is tried
 * again (RFC 3339, may be NULL). Nothing when the state has no such node
 * (a node without history is forgotten, tpf_state_record_not_created). */
void tpf_state_record_refused(struct tpf_state *st, const char *name, const char *why,
			      const char *retry_after);
/* Deleted because its job completed (on_success: delete): status
 * completed, no id, completed_at `at`, every worker exited 0. */
void tpf_state_record_completed(struct tpf_state *st, const char *name, const char *at);
/* Node `name` was preempted (the plan's reason code "preempted": its
 * state PREEMPTED, or a spot VM Compute Engine deleted) and its
 * replacement starts now: preemptions += 1. Called once per replacement,
 * before tpf_state_record_pending, whose save records it. Nothing when
 * the state has no such node. */
void tpf_state_record_preempted(struct tpf_state *st, const char *name);
/* The delete of node `name` is about to be sent: delete_sent_at `at`
 * (RFC 3339). Nothing when the state has no such node. */
void tpf_state_record_delete_sent(struct tpf_state *st, const char *name, const char *at);
/* Worker `worker` of node `name` failed its preflight too often in a row
 * (its count is in the worker's record): status bad_host (the plan
 * replaces it), bad_host the zone, id and `why`. Nothing when there is no
 * such node or it is not created. */
void tpf_state_record_bad_host(struct tpf_state *st, const char *name, int worker,
			       const char *why);
/*
 * The one "queued" adoption rule: a provider that cannot tell whether a
 * node was queued (local; ln says neither queued nor a queued state) gets
 * the declared value recorded (declared may be NULL: nothing to take).
 */
void tpf_state_adopt_queued(struct tpf_recipe *recorded, const struct tpf_live_node *ln,
			    const struct tpf_recipe *declared);
/* The node answers under id: a different id than recorded means it was
 * re-created outside tpuform, so its workers' pins and facts are dropped
 * (the same count of fresh workers). */
void tpf_state_node_new_id(struct tpf_state_node *sn, const char *id);
/*
 * Record live node ln as ln->name of `group`, index `index` (added, or
 * replacing what st had): status created, its id, create time and recipe
 * as the provider reports them, as many workers as it has, generation 0,
 * no job (never provisioned by tpuform). declared (may be NULL): for the
 * queued rule. Used by refresh-only plans and import. Returns the node.
 */
struct tpf_state_node *tpf_state_record_live(struct tpf_state *st, const char *group, int index,
					     const struct tpf_live_node *ln,
					     const struct tpf_recipe *declared);
/*
 * An apply found the node (ln, may be NULL: not refreshed) and gives it
 * `job`: added from ln's recipe (or the declared one) when the state did
 * not list it (adoption: the declared node fields, the queued rule), then
 * status created, ln's id (tpf_state_node_new_id) and create time,
 * declared->workers workers, and the job. Returns the node.
 */
struct tpf_state_node *tpf_state_record_running(struct tpf_state *st, const char *name,
						const char *group, int index,
						const struct tpf_live_node *ln,
						const struct tpf_recipe *declared,
						const struct tpf_job *job);
/* A refresh-only apply saw the node live under id in zone: status
 * created; a different id than recorded means new VMs, so the workers'
 * facts are dropped and created_at (may be NULL: unknown) is taken. */
void tpf_state_record_refreshed(struct tpf_state *st, const char *name, const char *id,
				const char *zone, const char *created_at);
/* What provisioning worker w->index of `name` learned (script hash, job
 * status, pin, address, times), from a copy it worked on outside the
 * state's lock: 1 if recorded, 0 when the node or worker is gone. */
int tpf_state_record_worker(struct tpf_state *st, const char *name,
			    const struct tpf_state_worker *w);
/*
 * A worker of node `name` reported its job's last checkpoint `ck`: kept as
 * the node's last_checkpoint (cut to TPF_STATE_CHECKPOINT_MAX bytes at a
 * UTF-8 character boundary), with checkpoint_at = at (RFC 3339) when the
 * value differs from the one recorded. Returns 1 when the record changed,
 * 0 when it already said so, the node is gone, or ck is NULL or empty.
 * Changes nothing else: a checkpoint is a fact about the job, not a change
 * to what runs (it never enters a script's hash).
 */
int tpf_state_record_checkpoint(struct tpf_state *st, const char *name, const char *ck,
				const char *at);
/* Would tpf_state_record_checkpoint(.., sn's name, ck, ..) change sn (NULL:
 * no)? Pure. */
int tpf_state_checkpoint_differs(const struct tpf_state_node *sn, const char *ck);
/* Labels and/or node fields were patched in place (NULL: not patched). */
void tpf_state_record_patched(struct tpf_state *st, const char *name,
			      const struct tpf_kvlist *labels, const struct tpf_node_fields *fields);
/* A restart of the listed workers is a new attempt (docs/design.md
 * section 5): with gang, every listed worker gets the unit's count (the
 * most any had) + 1, so they start with one TPUFORM_RETRY; else each
 * listed worker's own count goes up. restarted_at = at (RFC 3339). */
void tpf_state_count_restart(struct tpf_state *st, const char *name, const int *workers,
			     size_t nworkers, int gang, const char *at);
/* The listed workers' new jobs started at `at`: the restart backoff runs
 * from there. */
void tpf_state_stamp_restart(struct tpf_state *st, const char *name, const int *workers,
			     size_t nworkers, const char *at);

#endif
