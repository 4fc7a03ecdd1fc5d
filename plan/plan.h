/*
 * Desired nodes and the plan: desired x state x live -> ordered actions.
 *
 * The plan carries everything apply needs (each action's full desired
 * recipe and job, with the commit already pinned), so `apply PLANFILE`
 * executes exactly what was shown, as Terraform's saved plans do
 * (docs/terraform-behaviour.md section 3).
 */
#ifndef TPF_PLAN_H
#define TPF_PLAN_H

#include <stddef.h>
#include <jansson.h>
#include "config/config.h"
#include "model/recipe.h"
#include "model/live.h"
#include "plan/reason_code.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/diag.h"

/* ---- desired nodes ---------------------------------------------------- */

struct tpf_desired_node {
	char *name;   /* "<fleet>-<group>-<index>" */
	char *group;
	int index;
	struct tpf_recipe recipe; /* zone: the one chosen within quota */
	struct tpf_job job;
	char **zones;     /* the group's zones in fallback order (copy) */
	size_t nzones;
	int deferred;     /* beyond quota in every zone: not created now */
	/* The state says it completed (TPF_NODE_COMPLETED): it is not
	 * created again and holds no quota. */
	int completed;
	/* When deferred: why, for people, naming each zone's full rule:
	 * "waiting for quota: on_demand cap 0 in z1 (quota[0], v2-8)". */
	char *waiting;
	/* Deferred because its scope's budget is reached (plan/budget.h):
	 * TPF_OVER_BUDGET_STOP, or _DELETE with on_budget: delete (the diff
	 * then deletes the live node). 0: not over budget. */
	int over_budget;
	/* The group's elastic settings (config.h; zeroed: not elastic), for
	 * plan/diff_elastic.c. Not part of the recipe: no state records it. */
	struct tpf_elastic elastic;
};
#define TPF_OVER_BUDGET_STOP 1
#define TPF_OVER_BUDGET_DELETE 2

struct tpf_desired_set {
	struct tpf_desired_node *nodes;
	size_t n;
};

/*
 * Expand groups x count into desired nodes. Zones: a node already in state
 * keeps its zone while that zone is still in its group's list; otherwise
 * the first zone of the group's list whose quota (zone x accelerator type x
 * scheduling, from f->quota) has room. Nodes that fit nowhere are marked
 * deferred and reported as a warning ("deferred: quota"), never an error.
 * `commit` (may be NULL) is the pinned source commit for every job.
 * Every node's labels carry tpuform-fleet, -group, -index and, when st has
 * a lineage, tpuform-lineage (model/recipe.h tpf_lineage_label): what the
 * state owns is what carries its lineage (plan/ownership.h).
 * Caller releases *out with tpf_desired_release.
 */
int tpf_desired_compute(struct tpf_desired_set *out, const struct tpf_fleet *f,
			const char *commit, const struct tpf_state *st, struct tpf_diags *d);
void tpf_desired_release(struct tpf_desired_set *s);
/* The desired node called `name`, or NULL. Borrowed from s. */
const struct tpf_desired_node *tpf_desired_find(const struct tpf_desired_set *s, const char *name);
/* Deep copy of src into dst (dst must be zeroed or a valid node: it is
 * released first). The caller owns dst's contents. */
void tpf_desired_node_copy(struct tpf_desired_node *dst, const struct tpf_desired_node *src);
/* sha256 over the sorted secret names and values (NULL if none). Caller frees. */
char *tpf_secrets_hash(const struct tpf_kvlist *secrets);

/* ---- what workers report (filled by refresh when sessions are probed) - */

struct tpf_job_fact {
	char *node;
	int worker;
	/* What the worker said of its job (model/job_state.h): NONE, ALIVE,
	 * EXITED, DEAD (UNKNOWN: a word this tpuform does not know), or
	 * UNREACHABLE: the probe could not reach it. */
	enum tpf_job_state state;
	int exit_code;
	char *script_hash;
	char *last_log;
	/* A running job ("alive"): seconds since its log last grew or it
	 * last touched $TPUFORM_HEARTBEAT, whichever is later, as the worker
	 * measured it (templates/bootstrap.sh status). < 0: not known. */
	double stalled_for;
	/* The job's step and its last checkpoint's step, as it reported them
	 * (engine/workers/provision.h); only meaningful with have_progress. */
	int have_progress;
	long step, checkpoint_step;
	/* The job's last checkpoint (a "TPUFORM_CHECKPOINT=<step or path>"
	 * line of its log, or $TPUFORM_CHECKPOINT_FILE) and the disruption it
	 * was told of ("preempted", "maintenance:...", "replaced"), as the
	 * worker reported them; NULL: none. */
	char *checkpoint;
	char *disruption;
};

struct tpf_job_facts_ix;
struct tpf_job_facts {
	struct tpf_job_fact *items;
	size_t n, alloc;
	/* A lookup index for tpf_job_facts_find, present only between
	 * tpf_job_facts_index and tpf_job_facts_unindex; NULL otherwise. */
	struct tpf_job_facts_ix *ix;
};
/* Free one fact's strings and zero it (the fact itself is not freed). */
void tpf_job_fact_release(struct tpf_job_fact *f);
/* Free every fact, the array and any index; *s is zeroed. */
void tpf_job_facts_release(struct tpf_job_facts *s);
/* The first fact of worker `worker` of node `node`, or NULL. Borrowed from
 * s. A linear scan, or a hash lookup while s is indexed. */
const struct tpf_job_fact *tpf_job_facts_find(const struct tpf_job_facts *s,
						      const char *node, int worker);
/*
 * Index s for tpf_job_facts_find until tpf_job_facts_unindex(s): a plan
 * looks up every worker's fact, several times, which a scan made
 * quadratic in workers (at 4,096 workers, a tenth of watch's CPU; issue
 * 28). s must not change while indexed: the caller indexes around one
 * read-only use (tpf_pipeline_plan's diff). The index is only trusted
 * while s has the same array and count it was built for, and a hit is
 * checked against the fact itself; anything else falls back to the scan.
 */
void tpf_job_facts_index(struct tpf_job_facts *s);
/* Drop s's index (none: nothing). */
void tpf_job_facts_unindex(struct tpf_job_facts *s);
/* The key a fact is indexed by, "WORKER/NODE" (node NULL: ""), for
 * callers that keep an index of their own (watch's take_waits). Caller
 * frees. */
char *tpf_job_fact_key(const char *node, int worker);

/* ---- what the restart policy makes of a job --------------------------- */

enum tpf_job_verdict {
	TPF_JOB_FINE,          /* running, finished as the policy wants, or not known */
	TPF_JOB_RESTART,       /* the policy restarts it now */
	TPF_JOB_EXHAUSTED,     /* the policy would restart it, but max_restarts are used up */
	TPF_JOB_NOT_RESTARTED, /* it failed or its session died, and `restart: never`; or
				* it exited with a code restart_on_exit_codes does not
				* choose (struct tpf_unit_verdict by_code) */
	TPF_JOB_WAITING,       /* the policy restarts it once its backoff has passed */
};

/* The one stall rule: is sf a running job ("alive") whose log and
 * heartbeat have been still for at least pol->stall_timeout (> 0) seconds,
 * as the worker measured it? 0 when pol is NULL or has no timeout. Used by
 * the diff (a restart) and by watch (restarts_exhausted for stalls). */
int tpf_job_stalled(const struct tpf_job_policy *pol, const struct tpf_job_fact *sf);

/*
 * The fleet-wide job policy (f->policy: `restart`, `max_restarts`,
 * restart_on_exit_codes; docs/fleet-file.md, "The fleet file") applied to
 * one worker as a unit of its own, without stalls or backoff
 * (tpf_unit_verdict): sf is what the worker reported (NULL or an
 * unreachable worker: TPF_JOB_FINE, nothing is known), sw its state (NULL:
 * no restarts yet). A dead session is restarted unless `never`; a job that
 * exited is restarted by `always`, and by `on-failure` when the policy
 * restarts on its status; either only while sw->restarts < max_restarts.
 * Pure. A node's worker in a group: tpf_worker_note.
 */
enum tpf_job_verdict tpf_job_verdict(const struct tpf_fleet *f, const struct tpf_job_fact *sf,
				     const struct tpf_state_worker *sw);

/* ---- restart units -------------------------------------------------------- */

/*
 * A restart unit: the jobs that fail and restart together (docs/design.md
 * section 5, "Restart units"). A multi-host JAX or PyTorch/XLA job is one
 * program over every worker of a node: when one worker's part dies the
 * others block in a collective, so they must restart with it. Today a unit
 * is one node's workers (restart_scope: node) or one worker
 * (restart_scope: worker); a multislice group would be one unit of several
 * nodes' workers, which is why members name their node.
 */
struct tpf_unit_member {
	const char *node;
	int worker;
	const struct tpf_job_fact *sf;  /* what it reported; NULL: nothing known */
	const struct tpf_state_worker *sw;  /* its state; NULL: no restarts yet */
};

struct tpf_restart_unit {
	struct tpf_unit_member *members; /* in worker order */
	size_t n;
	const struct tpf_job_policy *policy; /* the group's */
};

struct tpf_unit_verdict {
	enum tpf_job_verdict verdict;
	int trigger;    /* index in members of the job that calls for a restart; -1: none */
	/* 1: NOT_RESTARTED because the trigger's exit code is not one the
	 * policy restarts on (restart_on_exit_codes, never_restart_on): the
	 * job ended its run on purpose, and failed. */
	int by_code;
	int restarts;   /* restarts of the unit so far: the most any member had */
	double due;     /* TPF_JOB_WAITING: wall-clock seconds when the restart is due */
	/* Why, for people, naming the trigger: "worker 2 job failed (exit 1)",
	 * "worker 0 has a dead session", "worker 1 stalled: no output for
	 * 31m"; NULL when FINE. Owned: release with tpf_unit_verdict_release. */
	char *why;
};

/*
 * The one restart rule for one job, before restarts are counted: does sf
 * call for a restart under pol (its group's policy: tpf_fleet_job_policy;
 * not NULL)? 1 when pol->restart is not `never` and the job stalled
 * (tpf_job_stalled), its session died, it exited with a code pol restarts
 * on (tpf_policy_restarts_on: restart_on_exit_codes / never_restart_on,
 * default any code but 0), or it exited 0 under `restart: always`. 0 for
 * a running job, a job never started, nothing known (sf NULL or
 * unreachable), an exit 0 otherwise, and a failing code pol does not
 * restart on (the run ended on purpose: not_restarted, never
 * restarts_exhausted). tpf_unit_verdict applies it to each member of a
 * unit; watch's hooks ask it through tpf_worker_exhausted. Pure.
 */
int tpf_job_calls_restart(const struct tpf_job_policy *pol, const struct tpf_job_fact *sf);

/*
 * The one restart rule applied to a unit at wall-clock time `now`
 * (seconds since the epoch). A member calls for a restart when its session
 * died, its job failed (or, with `restart: always`, exited), or it stalled
 * (alive, stalled_for >= policy->stall_timeout > 0); members that did not
 * answer count as nothing known. The first such member (by worker index)
 * is the trigger. A job that exited with a code the policy does not
 * restart on (tpf_policy_restarts_on: restart_on_exit_codes, as xpk's
 * restart-on-exit-codes; default any code but 0) ends the unit's run when
 * no member calls for a restart: NOT_RESTARTED with by_code set. Then, for
 * the unit, under u->policy (the group's: its own `restart` and
 * `max_restarts` over the fleet's): `restart: never` gives NOT_RESTARTED;
 * restarts >= max_restarts gives EXHAUSTED; a restart before its backoff
 * (tpf_restart_backoff) from the unit's last restart gives WAITING; else
 * RESTART. u->policy must not be NULL. Pure. *out is overwritten.
 */
void tpf_unit_verdict(const struct tpf_restart_unit *u, double now, struct tpf_unit_verdict *out);
void tpf_unit_verdict_release(struct tpf_unit_verdict *v);

/* Did sf's job exit with a failing code that policy pol does not restart
 * on (restart_on_exit_codes), so its run ended on purpose? Pure. */
int tpf_job_ended_by_code(const struct tpf_job_policy *pol, const struct tpf_job_fact *sf);

/*
 * Seconds a unit that has been restarted `restarts` times waits after its
 * last restart before the next one: 0 for the first restart, then
 * restart_backoff, 2 x, 4 x ... capped at TPF_RESTART_BACKOFF_CAP (or
 * restart_backoff itself, when it is larger).
 */
double tpf_restart_backoff(const struct tpf_job_policy *p, int restarts);

/* "31m", "45s", "2h5m": a stall or a wait, for people. out: >= 16 bytes. */
void tpf_fmt_stall(double seconds, char *out, size_t outlen);

/*
 * 1 when each of the node's `nworkers` workers reported that its job
 * exited 0, and its group's policy pol (tpf_fleet_job_policy) leaves such
 * a job be (not `restart: always`): the node's job is done.
 */
int tpf_node_succeeded(const struct tpf_job_policy *pol, const char *node, int nworkers,
		       const struct tpf_job_facts *facts);

/*
 * The restart unit of worker w of node `node` (nworkers workers, restart
 * scope `scope`, already resolved: tpf_group_restart_scope): the node's
 * workers (node) or w alone (worker). members (caller frees u->members)
 * carry the facts and the state workers of sn (may be NULL).
 */
void tpf_unit_of(struct tpf_restart_unit *u, const char *node, int nworkers, int w,
		 enum tpf_restart_scope scope, const struct tpf_job_policy *policy,
		 const struct tpf_state_node *sn, const struct tpf_job_facts *facts);

/* ---- what is not as declared ------------------------------------------- */

/*
 * Something that leaves the fleet not as its file declares and that no
 * action can change now. These are not actions: apply does nothing about
 * them. `plan` lists them in a section of their own ("Not as declared"),
 * and with -detailed-exitcode exits 3 when they are all there is
 * (docs/commands.md, "Exit codes").
 */
enum tpf_unconverged_kind {
	TPF_UNCONV_RESTARTS_EXHAUSTED, /* worker: TPF_JOB_EXHAUSTED */
	TPF_UNCONV_NOT_RESTARTED,      /* worker: TPF_JOB_NOT_RESTARTED */
	TPF_UNCONV_QUOTA,              /* node: deferred, no zone of its group has declared quota */
	TPF_UNCONV_QUEUED,             /* node: its queued resource waits (ACCEPTED, WAITING_FOR_RESOURCES...) */
	TPF_UNCONV_UNREACHABLE,        /* worker: did not answer, so its session is not known */
	/* worker, or node for a unit of several workers: the restart waits
	 * for its backoff (restart_backoff) */
	TPF_UNCONV_RESTART_WAITING,
};

/* RESTARTS_EXHAUSTED and NOT_RESTARTED name the worker, or the node
 * (worker -1) when its restart unit is the node: then the node is
 * "failed", kept for debugging. */
struct tpf_unconverged {
	enum tpf_unconverged_kind kind;
	char *node;
	int worker;      /* -1: the node as a whole */
	int exit_code;   /* the job's last exit status; -1: none (dead session, node kinds) */
	char *reason;    /* for people: "job failed (exit 1) after 3 restarts; ..." */
};

/* For machines: "restarts_exhausted" "not_restarted" "quota" "queued"
 * "unreachable" "restart_waiting" (static). The reverse is tpf_unconverged_kind_from (0, or
 * -1 for an unknown code). */
const char *tpf_unconverged_code(enum tpf_unconverged_kind k);
int tpf_unconverged_kind_from(const char *code, enum tpf_unconverged_kind *k);
/* A few words for `show`: "restarts exhausted", "waiting for quota"... (static) */
const char *tpf_unconverged_mark(enum tpf_unconverged_kind k);

/*
 * For `show`, which marks workers without planning: the kind of "not as
 * declared" worker sw is in, by tpf_job_verdict (restarts exhausted, not
 * restarted), or -1 when it is as declared or nothing is known.
 */
int tpf_worker_unconverged(const struct tpf_fleet *f, const struct tpf_job_fact *sf,
			   const struct tpf_state_worker *sw);

/*
 * For `show`: what the plan's rules make of worker w of state node sn at
 * wall-clock time `now`, by its restart unit (tpf_unit_verdict): the kind
 * of "not as declared" entry (restarts exhausted, not restarted, restart
 * waiting) or -1, and in *words (caller frees; NULL when there is nothing
 * to say) a few words: "restarts exhausted", "stalled: no output for 31m",
 * "restart in 8s (backoff)". A stalled job that will be restarted is
 * described although it is not an entry (-1).
 */
int tpf_worker_note(const struct tpf_fleet *f, const struct tpf_state_node *sn, int w,
		    const struct tpf_job_facts *facts, double now, char **words);

/*
 * For `watch`'s restarts_exhausted (engine/watch/watch_hooks.c): are worker w of
 * state node sn's restarts used up by the plan's rule? 1 when its own job
 * calls for a restart (tpf_job_calls_restart under its group's policy:
 * restart_on_exit_codes, `restart: never` and stalls included) and its
 * restart unit's verdict (tpf_unit_verdict, backoff aside) is
 * TPF_JOB_EXHAUSTED: the unit's restarts reached the group's max_restarts
 * (else the fleet's). A job that exited with a code the policy does not
 * restart on is never exhausted: it was never to be restarted. Pure.
 */
int tpf_worker_exhausted(const struct tpf_fleet *f, const struct tpf_state_node *sn, int w,
			 const struct tpf_job_facts *facts);

/*
 * For `show` and `watch`: "completed" (state: TPF_NODE_COMPLETED),
 * "succeeded" (every worker's job exited 0: tpf_node_succeeded), "failed"
 * (its restart unit is the node and restarts are used up or `restart:
 * never`), or NULL. Static string.
 */
const char *tpf_node_outcome(const struct tpf_fleet *f, const struct tpf_state_node *sn,
			     const struct tpf_job_facts *facts, double now);

/* ---- actions ------------------------------------------------------------ */

enum tpf_action_kind {
	TPF_ACT_CREATE,      /* +   */
	TPF_ACT_DELETE,      /* -   */
	TPF_ACT_REPLACE,     /* -/+ delete, then create (generation + 1) */
	TPF_ACT_UPDATE,      /* ~   labels in place and/or re-provision workers */
	TPF_ACT_RESTART,     /* ~   restart dead sessions on some workers */
	TPF_ACT_WAIT,        /*     node is CREATING/REPAIRING...: wait, then provision */
	TPF_ACT_FORGET,      /*     in state, gone from the provider, not desired: drop from state */
};

enum { TPF_ELASTIC_SHRINK = 1, TPF_ELASTIC_RECREATE, TPF_ELASTIC_GROW };

/* One attribute line of a block. */
struct tpf_change {
	char *field;
	char *before;    /* rendered value (quoted as shown), NULL: none */
	char *after;     /* NULL: none */
	int forces;      /* "# forces replacement" */
	int sensitive;   /* "(sensitive value)" */
};

struct tpf_action {
	enum tpf_action_kind kind;
	char *node;
	char *reason;         /* why, for people: "the node was preempted" */
	/* For machines: "preempted" "not_in_config" "orphan" ..., and its
	 * parsed value (plan/reason_code.h); both set only by
	 * tpf_action_set_reason_code. Code decides by reason_kind. */
	char *reason_code;
	enum tpf_reason_code reason_kind;
	char *zone;           /* where the node is now (delete/replace/update), may be NULL */
	char *id;             /* provider id of the existing node, may be NULL */
	int adopt;            /* node found by labels but missing from state: record it */
	/* TPF_ACT_RESTART: the workers are one restart unit: all are stopped,
	 * then all started with the same new TPUFORM_RETRY (every worker's
	 * restarts set to the unit's + 1). 0: each worker restarts on its own. */
	int gang;
	int update_labels;    /* TPF_ACT_UPDATE: labels differ */
	/* TPF_ACT_REPLACE of a Compute Engine multislice node that lost some of
	 * its slices (docs/compute-engine.md "Multislice"): nothing is deleted
	 * first; the create makes the lost slices again and keeps the others.
	 * The node still starts a new generation, so every worker of every
	 * slice restarts with one new TPUFORM_RETRY. */
	int keep_parts;
	/* With keep_parts: the lost slices, "1" or "0,2" (the live node's
	 * lost_slices, providers/gcp/compute/compute_engine.h), which the run
	 * ledger's slice-scoped `preempted` line names (docs/ledger.md).
	 * NULL otherwise. Owned. */
	char *lost_slices;
	/*
	 * Elastic slices (plan/diff_elastic.c; docs/recovery.md "Elastic
	 * slices"), 0 without:
	 *   TPF_ELASTIC_SHRINK (a RESTART, gang, of the workers of the slices
	 *     in elastic_slices): record elastic_slices in the state, restart
	 *     those workers as a job of that many slices, then make the lost
	 *     slices again in the background as TPF_ELASTIC_RECREATE does;
	 *   TPF_ELASTIC_RECREATE (a REPLACE with keep_parts): the job runs on
	 *     elastic_slices already; only the lost slices are made again, and
	 *     nothing else changes (no worker restarts, the same generation; a
	 *     refused create leaves the node as it is);
	 *   TPF_ELASTIC_GROW (a RESTART, gang, of every worker): every slice
	 *     is READY again: with elastic_checkpoint (grow: checkpoint) the
	 *     running jobs get the disruption signal and grace first
	 *     (reason "resize"), then every worker restarts on every slice.
	 */
	int elastic;
	char *elastic_slices;
	int elastic_checkpoint;
	/* TPF_ACT_UPDATE: other fields nodes.patch changes in place
	 * (TPF_PATCH_TAGS, _METADATA, _EXTERNAL_IPS; model/node_fields.h) */
	unsigned patch;
	int *workers;         /* UPDATE/RESTART: worker indices to (re)provision */
	size_t nworkers;
	struct tpf_change *changes;
	size_t nchanges;
	/* The desired node (create, replace, update, restart, wait); NULL for
	 * delete/forget. Owned copy. */
	struct tpf_desired_node *desired;
};

/* A node whose job is done (docs/design.md section 8, "Completion"). */
struct tpf_completed {
	char *node;
	int deleted;     /* 1: on_success: delete (state: completed); 0: kept */
	int exit_code;   /* 0 */
	char *at;        /* RFC 3339 of the completion when known, else NULL */
};

struct tpf_plan {
	char *fleet;
	char *lineage;       /* of the state the plan was made from */
	long serial;         /* of that state */
	char *commit;        /* pinned commit, may be NULL */
	char *fleet_sha256;  /* of the fleet file's bytes, for saved plans */
	int destroy;         /* a destroy plan */
	int refresh_only;    /* state updates only, no node is touched (plan/refresh_only.h) */
	char **targets;      /* -target: only these nodes were planned (plan/target.h); owned */
	size_t ntargets;
	struct tpf_action *actions;
	size_t n, alloc;
	size_t add, change, destroyed; /* Terraform's summary counts */
	size_t deferred;     /* desired nodes waiting for quota */
	/* What is not as declared and no action can change now, in the
	 * order of the desired nodes, then workers. Owned. */
	struct tpf_unconverged *unconverged;
	size_t nunconverged, unconverged_alloc;
	/* Nodes whose job completed: no action, not missing. Owned. */
	struct tpf_completed *completed;
	size_t ncompleted, completed_alloc;
};

void tpf_plan_release(struct tpf_plan *p);

/* Append a completed node (node and at are copied). */
struct tpf_completed *tpf_plan_add_completed(struct tpf_plan *p, const char *node, int deleted,
					     int exit_code, const char *at);

/* Append an entry (node and reason are copied; worker -1: the node). */
struct tpf_unconverged *tpf_plan_add_unconverged(struct tpf_plan *p, enum tpf_unconverged_kind kind,
						 const char *node, int worker, const char *reason);

/* Append a zeroed action of the given kind for `node` (copied) and return
 * it; it lives in p->actions, so the pointer is valid until the next append.
 * Counts are not updated: call tpf_plan_recount when done. */
struct tpf_action *tpf_plan_add(struct tpf_plan *p, enum tpf_action_kind kind, const char *node);
/* Free what an action owns (not the action itself, which lives in an array). */
void tpf_action_release(struct tpf_action *a);

/* Inputs of the diff, all borrowed. facts may be NULL (sessions not probed). */
struct tpf_diff_input {
	const struct tpf_fleet *fleet;
	const struct tpf_desired_set *desired;
	const struct tpf_state *state;
	const struct tpf_live_set *live;
	const struct tpf_job_facts *facts;
	int destroy;    /* plan to delete everything the fleet owns */
	/* Wall-clock seconds since the epoch: restart backoffs are measured
	 * against it. 0: every backoff has passed. */
	double now;
};

/*
 * Compute the plan (docs/design.md sections 6 and 8, "Node lifecycle").
 * Actions are sorted: deletes first (they free quota), then replaces,
 * creates, updates, restarts, by node name within each kind.
 */
int tpf_diff(struct tpf_plan *out, const struct tpf_diff_input *in, struct tpf_diags *d);

/* Recompute add/change/destroyed from the actions. */
void tpf_plan_recount(struct tpf_plan *p);

/*
 * `watch` heals, and only heals: replace dead nodes (preempted, terminated,
 * stopped, tainted), create missing or waiting ones, restart sessions,
 * provision workers that are not up, adopt, forget, delete orphans, and
 * delete nodes whose job completed (on_success: delete). A changed recipe or job, changed labels, or a lower count is not healing:
 * it waits for `watch -apply-all` or `apply`. Returns 1 for healing.
 */
int tpf_action_is_healing(const struct tpf_action *a);
/* Move every action that is not healing from p to *rest (zeroed by the
 * caller); both plans' counts are recomputed. */
void tpf_plan_split_healing(struct tpf_plan *p, struct tpf_plan *rest);

/* 1 if the plan changes anything (Terraform's !PlanEmpty). */
int tpf_plan_has_changes(const struct tpf_plan *p);
/* 1 if the plan changes nothing and nothing is left not as declared:
 * only then does the fleet match its file. */
int tpf_plan_converged(const struct tpf_plan *p);

/*
 * The fleet is done (`watch -exit-when-done`, docs/watch.md): the plan changes
 * nothing and every desired node of ds has completed (p->completed) or
 * failed (its node-wide restarts are used up, or `restart: never`: a
 * worker -1 entry; or, for a node of one worker, that worker's entry).
 * Counts go to *ncompleted and *nfailed (may be NULL). Returns 1 when
 * done, 0 otherwise. An empty fleet is done.
 */
int tpf_plan_done(const struct tpf_plan *p, const struct tpf_desired_set *ds, size_t *ncompleted,
		  size_t *nfailed);

/* 1 if action a deletes a node because its job completed (on_success:
 * delete): apply records it as TPF_NODE_COMPLETED instead of forgetting it. */
int tpf_action_completes(const struct tpf_action *a);

/* ---- rendering -------------------------------------------------------- */

/*
 * Human rendering, Terraform style (docs/terraform-behaviour.md section 1):
 * legend of the symbols used, "# NAME will be created" blocks, "# forces
 * replacement", "(sensitive value)", then what is not as declared
 * ("Not as declared (tpuform cannot change these now):", one "  - NODE[/wN]:
 * reason" line each), then the closing sentence of tpf_plan_closing.
 * color: 1 to add ANSI colour.
 */
void tpf_plan_render_human(const struct tpf_plan *p, int color, struct tpf_buf *out);

/*
 * The plan's closing sentence, which pipelines match:
 *   changes:            "Plan: A to add, C to change, D to destroy."
 *   none, as declared:  "No changes. Your infrastructure matches the configuration."
 *                       ("No changes. No objects need to be destroyed." for -destroy,
 *                       "... still matches the configuration." for -refresh-only)
 *   none, not as declared: "No changes can be made now, but the fleet is not as
 *                       declared: see above."
 * The first two are Terraform's own wording.
 */
void tpf_plan_closing(const struct tpf_plan *p, struct tpf_buf *out);

/* Terraform's change summary line ("Plan: 1 to add, 0 to change, 2 to destroy."). */
void tpf_plan_summary(const struct tpf_plan *p, struct tpf_buf *out);

/* The action word machines see: "create" "delete" "replace" "update" "noop" ... (static) */
const char *tpf_action_name(enum tpf_action_kind k);

/* ---- saved plans -------------------------------------------------------- */

/* JSON form of a plan (new reference). */
json_t *tpf_plan_to_json(const struct tpf_plan *p);
/* JSON form of one entry (new reference): {"kind": tpf_unconverged_code,
 * "node", "worker" (absent for a node), "exit_code" (absent when -1),
 * "reason"}. Saved plans and `plan -json` ("unconverged" messages) use it. */
json_t *tpf_unconverged_to_json(const struct tpf_unconverged *u);
/* Parse the JSON form; errors name `what` (the plan file path). */
int tpf_plan_from_json(struct tpf_plan *out, json_t *root, const char *what, struct tpf_diags *d);

/*
 * Whether saved plan p may still be applied to the state it is checked
 * against, as Terraform decides for `apply PLANFILE`
 * (docs/terraform-behaviour.md section 3). Rules, in this order:
 *   - p->lineage differs from state_lineage: "Saved plan does not match the
 *     given state". A plan made before the state was first written carries
 *     no lineage (Terraform's first-plan exception), so only its serial 0
 *     is checked;
 *   - p->serial differs from state_serial (another operation wrote the
 *     state since): "Saved plan is stale";
 *   - both fleet file hashes are known and differ ("sha256:<hex>" of the
 *     file's bytes): "Saved plan is stale: the fleet file changed ...".
 * state_lineage and fleet_sha256 may be NULL (unknown). Pure: no I/O.
 * Returns 0 when the plan fits, else TPF_ESTALE with one error diagnostic
 * (summary as above, detail a hint) appended to d.
 */
int tpf_plan_check_stale(const struct tpf_plan *p, const char *state_lineage, long state_serial,
			 const char *fleet_sha256, struct tpf_diags *d);

#endif
