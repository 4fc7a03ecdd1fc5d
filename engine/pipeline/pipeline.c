/*
 * The pipeline (engine/pipeline/pipeline.h): fleet -> lock -> state ->
 * provider -> refresh -> pin source -> desired -> diff.
 */
#include "engine/pipeline/pipeline.h"
#include "engine/checkpoints.h"
#include "engine/ledger/budget_spend.h"
#include "engine/ledger/ledger_losses.h"
#include "engine/ledger/ledger_writer.h"
#include "engine/workers/provision.h"
#include "engine/pipeline/refresh.h"
#include "engine/saved_plan.h"
#include "engine/state_store.h"
#include "model/node_state.h"
#include "source/source.h"
#include "util/env.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void progress(const struct tpf_pipeline *s, enum tpf_pipeline_progress_kind kind,
		     const char *node, const char *id)
{
	struct tpf_pipeline_progress ev = { kind, node, id };
	if (s->o.on_progress)
		s->o.on_progress(&ev, s->o.ctx);
}

/* Read and parse the fleet file, remembering the hash of its bytes. */
static int load_fleet(struct tpf_pipeline *s)
{
	struct tpf_buf raw = TPF_BUF_INIT;
	int rc = tpf_read_file_max(s->o.file, TPF_FLEET_FILE_MAX, "fleet file", &raw, &s->d);
	if (rc == TPF_ENOTFOUND)
		tpf_errorx(&s->d, NULL,
			   "Run tpuform in the directory of your fleet file, or name it with -f FILE.\n"
			   "examples/local.yaml is a fleet that runs on this machine.",
			   "fleet file '%s' does not exist", s->o.file);
	if (rc) {
		tpf_buf_release(&raw);
		return TPF_ERROR;
	}
	s->fleet_sha256 = tpf_sha256_tagged(raw.buf, raw.len);
	rc = tpf_fleet_parse(&s->fleet, s->o.file, raw.buf, raw.len, &s->d);
	tpf_buf_release(&raw);
	if (rc)
		return TPF_ERROR;
	s->have_fleet = 1;
	return 0;
}

void tpf_pipeline_init(struct tpf_pipeline *s)
{
	memset(s, 0, sizeof(*s));
	struct tpf_pipeline_opts none = TPF_PIPELINE_OPTS_INIT;
	s->o = none;
	tpf_diags_init(&s->d);
	struct tpf_lock unlocked = TPF_LOCK_INIT;
	s->lock = unlocked;
}

/* The state's before_save hook: the transport's sync_state. */
static void before_save(struct tpf_state *st, void *ctx)
{
	struct tpf_transport *t = ctx;
	t->ops->sync_state(t, st);
}

/* What the transport learned (the bastion's pin) and the state carry stay
 * in step: taken from the state now, given back before every save. */
static void sync_transport_state(struct tpf_pipeline *s)
{
	struct tpf_transport *t = s->prov->ops->transport ? s->prov->ops->transport(s->prov) : NULL;
	if (!t || !t->ops->sync_state)
		return;
	t->ops->sync_state(t, &s->state);
	tpf_state_set_before_save(&s->state, before_save, t);
}

int tpf_pipeline_open(struct tpf_pipeline *s, const struct tpf_pipeline_opts *o, const char *lock_op)
{
	tpf_pipeline_init(s);
	s->o = *o;

	if (load_fleet(s))
		return TPF_ERROR;
	if (o->no_state)
		return 0;
	if (tpf_fleet_backend_open(&s->backend, &s->fleet, &s->d))
		return TPF_ERROR;
	if (lock_op && !o->no_lock) {
		if (o->lock_timeout > 0)
			progress(s, TPF_PIPELINE_LOCKING, NULL, NULL);
		int rc = tpf_backend_lock(s->backend, &s->lock, lock_op, o->lock_timeout, &s->d);
		if (rc)
			return rc;
	}
	int rc = tpf_backend_load(s->backend, &s->state, &s->d);
	s->have_state = 1;
	if (rc)
		return rc;
	if (s->state.fleet && strcmp(s->state.fleet, s->fleet.name))
		return tpf_errorx(&s->d, NULL,
				  "Each fleet needs its own state file: set state.path in the fleet file.",
				  "state file '%s' belongs to fleet '%s', not '%s'", s->fleet.state_path,
				  s->state.fleet, s->fleet.name);
	if (o->no_provider)
		return 0;
	rc = tpf_provider_open(&s->prov, &s->fleet, &s->d);
	/* What the state records stays listed (providers/provider.h recorded). */
	for (size_t i = 0; !rc && i < s->state.nnodes; i++)
		tpf_provider_recorded(s->prov, &s->state.nodes[i].recipe);
	if (!rc)
		sync_transport_state(s);
	return rc;
}

/* -refresh=false: believe the state (Terraform's behaviour): every node
 * with a provider id is taken as READY with the recipe recorded. */
static void live_from_state(struct tpf_pipeline *s)
{
	for (size_t i = 0; i < s->state.nnodes; i++) {
		const struct tpf_state_node *sn = &s->state.nodes[i];
		if (!sn->id)
			continue;
		struct tpf_live_node *ln = tpf_live_set_add(&s->live);
		ln->name = xstrdup(sn->name);
		ln->id = xstrdup(sn->id);
		ln->state = xstrdup("READY");
		tpf_recipe_copy(&ln->recipe, &sn->recipe);
	}
}

/* The commit every job runs: the pinned one when given, else the source
 * ref resolved now. No source (or o.no_source): no commit. */
static int pin_source(struct tpf_pipeline *s)
{
	if (!s->fleet.source.repo || s->o.no_source)
		return 0;
	if (s->o.pinned)
		snprintf(s->commit, sizeof(s->commit), "%s", s->o.pinned);
	else if (tpf_source_resolve(s->fleet.source.repo, s->fleet.source.ref, s->commit, &s->d))
		return TPF_ERROR;
	s->have_commit = 1;
	return 0;
}

/* The engine measures each budget's spend from the ledger; the plan's rule
 * (plan/budget.h) defers what is over. Not for destroy or -refresh-only
 * (no_source), which create nothing. */
static int pipeline_budgets(struct tpf_pipeline *s)
{
	free(s->budgets);
	s->budgets = NULL;
	s->nbudgets = 0;
	if (s->o.no_source || s->o.no_budgets)
		return 0;
	double every = 60;
	if (s->o.budget_cache && tpf_env_seconds("TPUFORM_BUDGET_REFRESH", &every, &s->d))
		return TPF_ERROR;
	if (tpf_budget_measure_cached(&s->fleet, tpf_now_wall(), tpf_now_mono(), every,
				      s->o.budget_cache, &s->budgets, &s->nbudgets, &s->d))
		return TPF_ERROR;
	tpf_budget_defer(&s->desired, s->budgets, s->nbudgets, s->fleet.name, &s->d);
	return 0;
}

/*
 * A refresh that found another state's node, read by a pipeline whose state
 * had never been written (serial 0: a fresh lineage made up at load) and
 * that holds no lock: the state may have been written since, by the apply
 * or watch heal that made the node (watch's rounds, its session check and
 * `plan -lock=false` read without the lock). Load it again; 1 when it now
 * has a serial, and s->state is replaced by it (the refresh must run
 * again), 0 when nothing changed (the node is another state's).
 */
static int state_written_since(struct tpf_pipeline *s)
{
	if (s->state.serial || !s->backend || s->lock.fd >= 0 || s->lock.backend)
		return 0;
	struct tpf_state now;
	struct tpf_diags d = TPF_DIAGS_INIT;
	int rc = tpf_backend_load(s->backend, &now, &d);
	tpf_diags_release(&d);
	if (rc || !now.serial) {
		tpf_state_release(&now);
		return 0;
	}
	tpf_state_release(&s->state);
	s->state = now;
	if (s->prov)
		sync_transport_state(s);
	tpf_live_set_release(&s->live);
	return 1;
}

/* tpf_refresh, once more after a state written meanwhile
 * (state_written_since): the first answer's errors are dropped then. */
static int refresh_live(struct tpf_pipeline *s)
{
	struct tpf_diags first = TPF_DIAGS_INIT;
	int rc = tpf_refresh(s->prov, &s->fleet, &s->state, &s->live, &first);
	if (rc == TPF_EFOREIGN && state_written_since(s)) {
		tpf_diags_release(&first);
		return tpf_refresh(s->prov, &s->fleet, &s->state, &s->live, &s->d);
	}
	tpf_diags_move(&s->d, &first);
	tpf_diags_release(&first);
	return rc;
}

int tpf_pipeline_refresh(struct tpf_pipeline *s, int probe)
{
	for (size_t i = 0; i < s->state.nnodes; i++)
		if (s->state.nodes[i].id)
			progress(s, TPF_PIPELINE_REFRESHING, s->state.nodes[i].name,
				 s->state.nodes[i].id);
	int rc;
	if (!s->o.refresh)
		live_from_state(s);
	else if ((rc = refresh_live(s)))
		return rc == TPF_EFOREIGN ? rc : TPF_ERROR;
	if (probe && tpf_pipeline_probe(s))
		return TPF_ERROR;
	/* Secrets are needed where scripts are rendered: plan, apply, watch.
	 * destroy (no_source) renders none, so it never asks for them. */
	if (!s->o.no_source && !s->fleet.secrets_resolved &&
	    tpf_fleet_resolve_secrets(&s->fleet, &s->d))
		return TPF_ERROR;
	tpf_job_facts_redact(&s->facts, &s->fleet.secrets);
	if (pin_source(s))
		return TPF_ERROR;
	if (tpf_desired_compute(&s->desired, &s->fleet, s->have_commit ? s->commit : NULL,
				&s->state, &s->d))
		return TPF_ERROR;
	return pipeline_budgets(s);
}

int tpf_pipeline_probe(struct tpf_pipeline *s)
{
	if (!s->o.refresh)
		return 0;
	if (tpf_probe_jobs(s->prov, &s->state, &s->live, s->o.parallelism, s->o.probe_once,
			       s->o.probe_skip, s->o.probe_skip_arg, &s->facts, &s->d))
		return TPF_ERROR;
	/* A job's last log line may hold a secret; after a refresh that
	 * resolved them, hide them now (tpf_pipeline_refresh does it later). */
	if (s->fleet.secrets_resolved)
		tpf_job_facts_redact(&s->facts, &s->fleet.secrets);
	return 0;
}

struct tpf_diff_input tpf_pipeline_diff_input(struct tpf_pipeline *s, int destroy, double now)
{
	struct tpf_diff_input in = {
		.fleet = &s->fleet,
		.desired = &s->desired,
		.state = &s->state,
		.live = &s->live,
		.facts = &s->facts,
		.destroy = destroy,
		.now = now,
	};
	return in;
}

int tpf_pipeline_plan(struct tpf_pipeline *s, int destroy, struct tpf_plan *p)
{
	struct tpf_diff_input in = tpf_pipeline_diff_input(s, destroy, tpf_now_wall());
	/* The diff looks up every worker's fact (read-only): indexed for it. */
	tpf_job_facts_index(&s->facts);
	int rc = tpf_diff(p, &in, &s->d);
	tpf_job_facts_unindex(&s->facts);
	if (rc)
		return TPF_ERROR;
	/* tpf_diff knows neither: a saved plan needs both to be applied. */
	xstrset(&p->commit, s->have_commit ? s->commit : NULL);
	xstrset(&p->fleet_sha256, s->fleet_sha256);
	return 0;
}

int tpf_pipeline_load_plan(struct tpf_pipeline *s, const char *path, struct tpf_plan *p)
{
	int rc = tpf_saved_plan_read(p, path, &s->d);
	if (rc)
		return rc;
	rc = tpf_plan_check_stale(p, s->state.lineage, s->state.serial, s->fleet_sha256, &s->d);
	if (rc)
		return rc;
	if (p->fleet && strcmp(p->fleet, s->fleet.name))
		return tpf_error(&s->d, "saved plan '%s' is for fleet '%s', not '%s'", path, p->fleet,
				 s->fleet.name);
	/* A saved plan that provisions workers renders their scripts. */
	if (!p->destroy && !p->refresh_only && !s->fleet.secrets_resolved &&
	    tpf_fleet_resolve_secrets(&s->fleet, &s->d))
		return TPF_ERROR;
	return tpf_refresh(s->prov, &s->fleet, &s->state, &s->live, &s->d);
}

int tpf_pipeline_apply_env(struct tpf_pipeline *s, struct tpf_apply_opts *opts)
{
	double heartbeat = 10, wait_timeout = 1200;
	if (tpf_env_seconds("TPUFORM_HEARTBEAT", &heartbeat, &s->d) ||
	    tpf_env_seconds("TPUFORM_WAIT_TIMEOUT", &wait_timeout, &s->d))
		return TPF_ERROR;
	opts->heartbeat = heartbeat;
	opts->wait_timeout = wait_timeout;
	return 0;
}

/* A changed checkpoint, as a CHECKPOINT event through the apply's chain. */
static void checkpoint_event(const struct tpf_state_node *sn, void *ctx)
{
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_CHECKPOINT);
	ev.node = sn->name;
	ev.generation = sn->generation;
	ev.checkpoint = sn->last_checkpoint;
	tpf_run_ledger_chain(&ev, ctx);
}

void tpf_pipeline_apply_nothing(struct tpf_pipeline *s)
{
	size_t ended = 0;
	for (size_t i = 0; i < s->facts.n; i++)
		ended += s->facts.items[i].state == TPF_JOB_STATE_EXITED ||
			 s->facts.items[i].state == TPF_JOB_STATE_DEAD;
	if (!ended)
		return;
	struct tpf_run_ledger *r = tpf_run_ledger_open(&s->fleet, &s->state, "apply", &s->d);
	tpf_ledger_job_exits(r, &s->facts, &s->state);
	tpf_run_ledger_close(r, &s->d);
}

int tpf_pipeline_apply(struct tpf_pipeline *s, const struct tpf_plan *p,
		      const struct tpf_apply_opts *opts, struct tpf_apply_result *res)
{
	struct tpf_apply_opts o = *opts;
	if (o.parallelism == 0)
		o.parallelism = s->o.parallelism;
	/* Every event of the apply goes to the run ledger first. */
	struct tpf_ledger_chain chain = {
		tpf_run_ledger_open(&s->fleet, &s->state, p->destroy ? "destroy" : "apply", &s->d),
		o.on_event, o.ctx, NULL
	};
	/* The lost nodes it replaces or deletes: preempted and replaced lines,
	 * as watch writes them (engine/ledger/ledger_losses.h). */
	if (chain.r)
		chain.losses = tpf_ledger_losses_new(p, &s->live, tpf_now_mono());
	o.on_event = tpf_run_ledger_chain;
	o.ctx = &chain;
	/* The checkpoints the refresh's probe learnt go into the state the
	 * apply saves (engine/checkpoints.h): a node replaced now hands its
	 * job's last one to the new VM. */
	char now[40];
	tpf_rfc3339(tpf_now_wall(), now, sizeof(now));
	tpf_checkpoints_record(&s->state, &s->facts, now, checkpoint_event, &chain);
	/* The jobs that ended with no watch to see it (a watch wrote them
	 * already: the report reads a repeated exit as nothing new). */
	tpf_ledger_job_exits(chain.r, &s->facts, &s->state);
	int rc = tpf_apply(p, &s->fleet, s->prov, &s->live, &s->state, &o, res, &s->d);
	tpf_run_ledger_close(chain.r, &s->d);
	tpf_ledger_losses_free(chain.losses);
	return rc;
}

int tpf_pipeline_target(struct tpf_pipeline *s, const char *name, struct tpf_state_node **sn,
		       const struct tpf_live_node **ln, struct tpf_transport **t)
{
	return tpf_pipeline_target_worker(s, name, -1, sn, ln, t);
}

int tpf_pipeline_target_worker(struct tpf_pipeline *s, const char *name, int worker,
			      struct tpf_state_node **sn, const struct tpf_live_node **ln,
			      struct tpf_transport **t)
{
	*ln = NULL;
	*t = NULL;
	*sn = tpf_state_find(&s->state, name);
	if (!*sn)
		return tpf_errorc(&s->d, TPF_DIAG_NOT_IN_STATE, NULL,
				  "'tpuform state list' shows the nodes in state.",
				  "node '%s' is not in the state of fleet '%s'", name, s->fleet.name);
	/* Known from the state, READY or not: said before anything else. */
	if (tpf_state_node_check_worker(*sn, worker, &s->d))
		return TPF_ERROR;
	*ln = tpf_live_set_find(&s->live, name);
	if (!*ln || tpf_node_class((*ln)->state) != TPF_NODE_READY)
		return tpf_errorc(&s->d, TPF_DIAG_NOT_READY, NULL,
				  "'tpuform plan' shows what apply would do about it.",
				  "node '%s' is %s, not READY", name,
				  *ln && (*ln)->state ? (*ln)->state : "missing");
	*t = s->prov->ops->transport ? s->prov->ops->transport(s->prov) : NULL;
	if (!*t)
		return tpf_error(&s->d, "the %s provider cannot reach workers yet", s->prov->ops->name);
	return 0;
}

void tpf_pipeline_close(struct tpf_pipeline *s)
{
	tpf_lock_release(&s->lock); /* before the backend it may belong to */
	if (s->prov)
		tpf_provider_free(s->prov);
	tpf_live_set_release(&s->live);
	tpf_job_facts_release(&s->facts);
	tpf_desired_release(&s->desired);
	free(s->budgets);
	s->budgets = NULL;
	s->nbudgets = 0;
	if (s->have_state)
		tpf_state_release(&s->state);
	if (s->have_fleet)
		tpf_fleet_release(&s->fleet);
	free(s->fleet_sha256);
	tpf_backend_free(s->backend);
	tpf_diags_release(&s->d);
}
