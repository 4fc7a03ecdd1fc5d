/*
 * tpuform ssh-config [-out FILE] [-install]: Host entries NODE-wN for
 * ssh(1) and VSCode Remote-SSH (engine/ssh_config.c does the work).
 */
#include "cmd/cmd.h"

static int run_ssh_config(struct tpf_cmd_ctx *ctx)
{
	tpf_error(ctx->d, "ssh-config is not implemented yet");
	return TPF_EXIT_ERROR;
}

const struct tpf_cmd tpf_cmd_ssh_config = {
	.name = "ssh-config",
	.summary = "Write ssh_config entries for every worker",
	.hidden = 1,
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_PROVIDER,
	.signals = TPF_SIG_STOP,
	.run = run_ssh_config,
};
