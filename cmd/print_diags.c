/*
 * tpf_cmd_print_diags: a command body printing its diagnostics early. It is
 * here, not in cmd/dispatch.c beside the printing after the body, because
 * the command files call it and the dispatcher calls the command files (no
 * call circle in cmd/, see tests/lint/calls.sh).
 */
#include "cmd/cmd.h"

void tpf_cmd_print_diags(struct tpf_cmd_ctx *ctx)
{
	tpf_ui_diags(ctx->d);
	ctx->printed_errors += tpf_diags_errors(ctx->d);
	tpf_diags_release(ctx->d);
}
