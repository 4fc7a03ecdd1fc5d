/*
 * The command table: every command, in the order 'tpuform help' lists
 * them. Each entry lives in its own file (cmd/NAME.c) with its options,
 * needs and body; cmd/dispatch.c runs them, and hands the table to each
 * (ctx->commands) so that no command file reaches back up to this one.
 */
#include "cmd/cmd.h"

const struct tpf_cmd *const tpf_commands[] = {
	&tpf_cmd_validate, &tpf_cmd_plan, &tpf_cmd_apply, &tpf_cmd_destroy, &tpf_cmd_watch,
	&tpf_cmd_report,   &tpf_cmd_prices,   &tpf_cmd_show,     &tpf_cmd_logs, &tpf_cmd_exec, &tpf_cmd_cp,
	&tpf_cmd_ssh,      &tpf_cmd_ssh_config, &tpf_cmd_state, &tpf_cmd_import,
	&tpf_cmd_force_unlock, &tpf_cmd_accelerators, &tpf_cmd_local, &tpf_cmd_version,
	&tpf_cmd_help,
	NULL,
};

void tpf_help_usage(FILE *out)
{
	tpf_help_overview(out, tpf_commands);
}
