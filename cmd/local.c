/*
 * tpuform local preempt|terminate NODE...: what a preemption does to a
 * real TPU, on the embedded local provider, so the replace path can be
 * seen.
 */
#include "cmd/cmd.h"
#include "providers/local/local.h"

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
	.needs = TPF_CMD_FLEET,
	.signals = TPF_SIG_GRACEFUL,
	.run = run_terminate,
};

static const struct tpf_cmd *const local_subs[] = { &local_preempt, &local_terminate, NULL };

const struct tpf_cmd tpf_cmd_local = {
	.name = "local",
	.summary = "Act on the embedded local provider (preempt, terminate)",
	.description = "  What Cloud TPU does to nodes, done to the local provider's nodes, so that\n"
		       "  tpuform's answer to it can be seen on one machine.\n",
	.subs = local_subs,
};
