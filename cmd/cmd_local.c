/*
 * tpuform local preempt|terminate NODE...: what a preemption does to a
 * real TPU, on the embedded local provider, so the replace path can be
 * seen.
 */
#include "cmd/cmd.h"
#include "providers/local/local.h"
#include "util/xalloc.h"

#include <string.h>

/* Give each NODE `state`, as Cloud TPU does: its workers' jobs die. */
static int set_state(struct tpf_cmd_ctx *ctx, const char *state)
{
	const struct tpf_fleet *f = &ctx->s.fleet;
	if (f->provider != TPF_PROVIDER_LOCAL) {
		tpf_error(ctx->d, "fleet '%s' does not use the local provider", f->name);
		return TPF_EXIT_ERROR;
	}
	int code = TPF_EXIT_OK;
	for (int i = 0; i < ctx->nargs && !tpf_interrupted; i++) {
		if (tpf_local_preempt(f, ctx->args[i], state, ctx->d))
			code = TPF_EXIT_ERROR;
		else
			printf("%s: %s\n", ctx->args[i], state);
	}
	return tpf_interrupted ? TPF_EXIT_ERROR : code;
}

static int run_preempt(struct tpf_cmd_ctx *ctx)
{
	return set_state(ctx, "PREEMPTED");
}

static int run_terminate(struct tpf_cmd_ctx *ctx)
{
	return set_state(ctx, "TERMINATED");
}

static const struct tpf_cmd local_preempt = {
	.name = "preempt",
	.summary = "Preempt nodes: PREEMPTED, their jobs killed",
	.description = "  Preempt each NODE of the local provider as Cloud TPU would: its state\n"
		       "  becomes PREEMPTED and its workers' jobs are killed. The next plan\n"
		       "  replaces it.\n",
	.min_args = 1,
	.max_args = -1,
	.args_name = "NODE...",
	.args = TPF_ARGS_NODE,
	.needs = TPF_CMD_FLEET,
	.signals = TPF_SIG_GRACEFUL,
	.run = run_preempt,
};

static const struct tpf_cmd local_terminate = {
	.name = "terminate",
	.summary = "Terminate nodes: TERMINATED, their jobs killed",
	.description = "  Terminate each NODE of the local provider as Cloud TPU would: its state\n"
		       "  becomes TERMINATED and its workers' jobs are killed.\n",
	.min_args = 1,
	.max_args = -1,
	.args_name = "NODE...",
	.args = TPF_ARGS_NODE,
	.needs = TPF_CMD_FLEET,
	.signals = TPF_SIG_GRACEFUL,
	.run = run_terminate,
};

static struct {
	const char *zone;
} create_o;

static const struct tpf_flag create_flags[] = {
	TPF_STR("zone", "ZONE", &create_o.zone, "create it in ZONE (default: the node's own)"),
	TPF_FLAGS_END,
};

/* A node made by hand, as someone creates a TPU in the console: the
 * declared node's recipe without any label. For `tpuform import` tests. */
static int run_create_unlabelled(struct tpf_cmd_ctx *ctx)
{
	struct tpf_pipeline *s = &ctx->s;
	if (s->fleet.provider != TPF_PROVIDER_LOCAL)
		return tpf_error(ctx->d, "fleet '%s' does not use the local provider", s->fleet.name),
		       TPF_EXIT_ERROR;
	struct tpf_desired_set set = { 0 };
	struct tpf_diags quiet = TPF_DIAGS_INIT;
	tpf_desired_compute(&set, &s->fleet, NULL, &s->state, &quiet);
	tpf_diags_release(&quiet);
	const struct tpf_desired_node *dn = tpf_desired_find(&set, ctx->args[0]);
	int code = TPF_EXIT_ERROR;
	if (!dn) {
		tpf_error(ctx->d, "node '%s' is not declared by fleet '%s'", ctx->args[0],
			  s->fleet.name);
		goto done;
	}
	struct tpf_recipe r = { 0 };
	tpf_recipe_copy(&r, &dn->recipe);
	tpf_kvlist_release(&r.labels);
	if (create_o.zone)
		xstrset(&r.zone, create_o.zone);
	struct tpf_live_node ln = { 0 };
	if (s->prov->ops->create(s->prov, dn->name, &r, &ln, ctx->d) == 0) {
		printf("%s: created without labels in %s [id=%s]\n", dn->name, r.zone, ln.id);
		code = TPF_EXIT_OK;
	}
	tpf_live_node_release(&ln);
	tpf_recipe_release(&r);
done:
	tpf_desired_release(&set);
	return code;
}

static const struct tpf_cmd local_create_unlabelled = {
	.name = "create-unlabelled",
	.summary = "Create a declared node without labels (for import tests)",
	.description = "  Create NODE as someone outside tpuform would: the declared node's\n"
		       "  recipe, but no label, so that tpuform does not see it until it is\n"
		       "  imported ('tpuform import').\n",
	.flags = create_flags,
	.min_args = 1,
	.max_args = 1,
	.args_name = "NODE",
	.args = TPF_ARGS_NODE,
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_PROVIDER,
	.signals = TPF_SIG_GRACEFUL,
	.run = run_create_unlabelled,
	.hidden = 1,
};

static const struct tpf_cmd *const local_subs[] = { &local_preempt, &local_terminate,
						    &local_create_unlabelled, NULL };

const struct tpf_cmd tpf_cmd_local = {
	.name = "local",
	.summary = "Act on the embedded local provider (preempt, terminate)",
	.description = "  What Cloud TPU does to nodes, done to the local provider's nodes, so that\n"
		       "  tpuform's answer to it can be seen on one machine.\n",
	.subs = local_subs,
};
