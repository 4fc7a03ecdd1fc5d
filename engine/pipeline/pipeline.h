/*
 * The pipeline every planning command shares: fleet file -> state lock ->
 * state -> provider -> refresh -> pinned source -> desired nodes -> diff
 * (docs/ARCHITECTURE.md). A command opens a pipeline, refreshes it, plans,
 * maybe applies, and closes it:
 *
 *   struct tpf_pipeline s;
 *   if (tpf_pipeline_open(&s, &opts, "OperationTypeApply") ||
 *       tpf_pipeline_refresh(&s, 1) || tpf_pipeline_plan(&s, 0, &plan))
 *           ...print s.d...
 *   tpf_pipeline_close(&s);
 *
 * The pipeline never prints: progress ("Refreshing state...") goes to the
 * on_progress callback, problems to the diagnostics in s.d. Every function
 * returns 0, or TPF_ERROR / a TPF_E* code with a diagnostic in s->d.
 */
#ifndef TPF_ENGINE_PIPELINE_H
#define TPF_ENGINE_PIPELINE_H

#include "config/config.h"
#include "engine/apply/apply.h"
#include "engine/pipeline/refresh.h"
#include "plan/budget.h"
#include "plan/plan.h"
#include "providers/provider.h"
#include "providers/registry/registry.h"
#include "providers/transport.h"
#include "state/lock.h"
#include "state/state.h"
#include "util/diag.h"

enum tpf_pipeline_progress_kind {
	/* The state lock may be waited for (lock_timeout > 0): Terraform's
	 * "Acquiring state lock. This may take a few moments..." */
	TPF_PIPELINE_LOCKING,
	/* About to refresh one node of the state: Terraform's
	 * "NAME: Refreshing state... [id=ID]" */
	TPF_PIPELINE_REFRESHING,
};

struct tpf_pipeline_progress {
	enum tpf_pipeline_progress_kind kind;
	const char *node; /* TPF_PIPELINE_REFRESHING: the node's name, else NULL */
	const char *id;   /* TPF_PIPELINE_REFRESHING: its provider id, else NULL */
};

/* Called on the thread that called the pipeline function. */
typedef void (*tpf_pipeline_progress_fn)(const struct tpf_pipeline_progress *ev, void *ctx);

struct tpf_budget_cache; /* engine/ledger/budget_spend.h */
struct tpf_pipeline_opts {
	const char *file;    /* the fleet file (borrowed; must outlive the pipeline) */
	int no_lock;         /* -lock=false: never take the state lock */
	double lock_timeout; /* seconds to wait for the state lock (<= 0: fail at once) */
	/* 0 (-refresh=false): believe the state instead of asking the
	 * provider, as Terraform does: every node with an id counts as READY
	 * with its recorded recipe, and workers are not probed. */
	int refresh;
	int parallelism;     /* concurrent worker probes and node actions (< 1: 1) */
	int no_source;       /* destroy: do not pin the source (a vanished repo must not block it) */
	/* A commit resolved recently (40 hex digits, borrowed): used instead of
	 * resolving the source ref again, a network round trip (watch). NULL:
	 * resolve. */
	const char *pinned;
	tpf_pipeline_progress_fn on_progress; /* may be NULL */
	void *ctx;                           /* passed to on_progress */
	/* For commands that need less than a plan (cmd/ decides, per command):
	 * no_state: load the fleet file only (no lock, no state, no provider);
	 * no_provider: load the fleet and the state (and take the lock) but do
	 * not open the provider, so `state list` needs no cloud credentials.
	 * Such a pipeline can be neither refreshed nor planned. */
	int no_state;
	int no_provider;
	/* Probe each pinned worker once, with no retry budget (watch: it asks
	 * again at the next session check). */
	int probe_once;
	/* Budgets (engine/ledger/budget_spend.h): NULL measures them from the ledger at
	 * every refresh; watch passes its cache, so a quiet round does not
	 * read the whole ledger. no_budgets: do not measure (watch's session
	 * prober, which wants job facts only). */
	struct tpf_budget_cache *budget_cache;
	int no_budgets;
	/* Workers tpf_pipeline_probe leaves out (engine/pipeline/refresh.h
	 * tpf_probe_jobs; watch's session check: those its job waits cover).
	 * NULL: probe all. */
	tpf_probe_skip_fn probe_skip;
	void *probe_skip_arg;
};
#define TPF_PIPELINE_OPTS_INIT                                                                  \
	{ "tpuform.yaml", 0, 0, 1, 10, 0, NULL, NULL, NULL, 0, 0, 0, NULL, 0, NULL, NULL }

struct tpf_pipeline {
	struct tpf_pipeline_opts o; /* a copy of what open was given */
	struct tpf_fleet fleet;
	int have_fleet;
	char *fleet_sha256;        /* "sha256:<hex>" of the fleet file's bytes */
	struct tpf_state state;
	int have_state;
	struct tpf_backend *backend; /* where the state lives (engine/state_store.h) */
	struct tpf_lock lock;
	struct tpf_provider *prov;
	struct tpf_live_set live;  /* after refresh */
	struct tpf_job_facts facts; /* after refresh with probe */
	char commit[41];           /* the pinned source commit, when have_commit */
	int have_commit;
	struct tpf_desired_set desired; /* after refresh */
	/* The fleet file's budgets and their spend this period (after
	 * refresh; engine/ledger/budget_spend.h), already applied to desired. Owned. */
	struct tpf_budget_status *budgets;
	size_t nbudgets;
	struct tpf_diags d;        /* everything that went wrong or deserves a warning */
};

/* An empty pipeline (no fleet, no state, no lock, empty diagnostics): what
 * tpf_pipeline_open starts from. tpf_pipeline_close is safe on it. */
void tpf_pipeline_init(struct tpf_pipeline *s);

/*
 * Load the fleet file, take the state lock for `lock_op` (Terraform's
 * operation names: "OperationTypeApply", ...) unless lock_op is NULL or
 * o->no_lock, load the state (refusing one that belongs to another fleet)
 * and open the provider (each step skipped as o->no_state and
 * o->no_provider say). *o is copied. *s is always initialised, so
 * tpf_pipeline_close is safe after any outcome. Errors: a missing fleet file
 * (with a hint), a fleet file that does not parse, TPF_ELOCKED, state and
 * provider errors.
 */
int tpf_pipeline_open(struct tpf_pipeline *s, const struct tpf_pipeline_opts *o, const char *lock_op);

/*
 * Fill s->live from the provider (or from the state with o.refresh 0), ask
 * every worker for its session when `probe` is set (and refresh is on),
 * pin the source commit (unless o.no_source) and compute the desired
 * nodes, deferring those of scopes over their budget (s->budgets,
 * measured from the run ledger unless o.no_source). A failed refresh is an error: nothing may be planned from it.
 * TPF_EFOREIGN when another state owns a node named as this fleet's
 * (engine/pipeline/refresh.h); TPF_ERROR for any other failure.
 */
int tpf_pipeline_refresh(struct tpf_pipeline *s, int probe);

/*
 * Ask every provisioned worker of every READY node of s->live for its
 * session (engine/pipeline/refresh.h tpf_probe_jobs, one attempt per worker
 * when o.probe_once) and append the answers to s->facts; nothing with
 * o.refresh 0. For a caller that acts on the nodes first and asks the
 * workers after (watch): call it after tpf_pipeline_refresh(s, 0), then plan
 * again. Unreachable workers are facts, not errors.
 */
int tpf_pipeline_probe(struct tpf_pipeline *s);

/*
 * What the diff reads, borrowed from s (valid while s is unchanged).
 * now: wall seconds for restart backoffs (plan/plan.h), or 0 where the
 * plan made does not restart jobs (-refresh-only, -replace, -target).
 */
struct tpf_diff_input tpf_pipeline_diff_input(struct tpf_pipeline *s, int destroy, double now);

/*
 * Diff the refreshed pipeline into *p (zeroed or released by the caller;
 * the caller releases it). destroy: plan to delete everything the fleet
 * owns. The plan carries the pinned commit and the fleet file's hash, so it
 * can be saved and applied later.
 */
int tpf_pipeline_plan(struct tpf_pipeline *s, int destroy, struct tpf_plan *p);

/*
 * Load the saved plan at `path` (engine/saved_plan.h) into *p (caller
 * releases) and check that it still fits this pipeline: its state's lineage
 * and serial and the fleet file's hash (tpf_plan_check_stale, TPF_ESTALE)
 * and the fleet's name. Then refresh s->live from the provider (whatever
 * o.refresh says), for the worker addresses of existing nodes: a saved plan
 * is applied as planned, never re-planned.
 */
int tpf_pipeline_load_plan(struct tpf_pipeline *s, const char *path, struct tpf_plan *p);

/*
 * Apply settings read from the environment, into *opts (other fields
 * untouched): TPUFORM_HEARTBEAT, seconds between "Still creating..." events
 * (default 10), and TPUFORM_WAIT_TIMEOUT, seconds a node may take to become
 * READY (default 1200). Both accept what util/env.h tpf_env_seconds does.
 * A bad value is TPF_ERROR with a diagnostic in s->d naming it; read these
 * before asking for approval, so a typo does not waste a "yes".
 */
int tpf_pipeline_apply_env(struct tpf_pipeline *s, struct tpf_apply_opts *opts);

/*
 * An apply whose plan changes nothing: the job exits its refresh saw go to
 * the run ledger all the same (engine/ledger/ledger_losses.h
 * tpf_ledger_job_exits), so a job that ended with no `watch` running is
 * not counted as goodput. Nothing when the refresh saw no job exit, or
 * probed no job (a saved plan's apply: tpf_pipeline_load_plan refreshes
 * the nodes only); a ledger that cannot be opened is a warning in s->d.
 */
void tpf_pipeline_apply_nothing(struct tpf_pipeline *s);

/*
 * Carry out plan p on the pipeline's fleet, provider and state (saved to
 * the fleet's state path after every transition), with opts (parallelism 0:
 * the pipeline's). *res is filled whatever happens (caller releases it);
 * failures are diagnostics in s->d. Returns what engine/apply/apply.h tpf_apply
 * returns.
 */
int tpf_pipeline_apply(struct tpf_pipeline *s, const struct tpf_plan *p,
		      const struct tpf_apply_opts *opts, struct tpf_apply_result *res);

/*
 * For commands that act on a node's workers (logs, exec, ssh): find node
 * `name` in the state and among the live nodes (after a refresh), and the
 * provider's transport. Borrowed pointers, valid until close. Errors (with
 * a hint): the node is not in state, not live, or the provider has no
 * transport.
 */
int tpf_pipeline_target(struct tpf_pipeline *s, const char *name, struct tpf_state_node **sn,
		       const struct tpf_live_node **ln, struct tpf_transport **t);

/*
 * tpf_pipeline_target for one worker: `worker` (0-based; -1: every worker,
 * nothing to check) must exist on the node. The worker count comes from
 * the state, so a worker out of range is said first, whatever the node's
 * state: "node 'n' has 1 worker (0): there is no worker 5" (TPF_ERROR,
 * with a hint).
 */
int tpf_pipeline_target_worker(struct tpf_pipeline *s, const char *name, int worker,
			      struct tpf_state_node **sn, const struct tpf_live_node **ln,
			      struct tpf_transport **t);

/* Release everything and unlock the state. Safe after a failed open. */
void tpf_pipeline_close(struct tpf_pipeline *s);

#endif
