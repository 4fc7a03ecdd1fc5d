/*
 * tpuform help [COMMAND [SUBCOMMAND]]: the list of commands, or one
 * command's usage and options (cmd/help.c writes them), and the hidden
 * generators of cmd/gen.h. The command table comes in ctx->commands, set by
 * the dispatcher: this entry is in the table (cmd/commands.c), so it must
 * not reach back up to it.
 */
#include "cmd/cmd.h"
#include "cmd/gen.h"

#include <stdio.h>

/* Every command and subcommand, one a line: "PATH MIN MAX KIND" (tab-
 * separated; KIND: command, group or rest). For tests and completion. */
static void list_table(const struct tpf_cmd *const *cmds, const char *prefix)
{
	for (; *cmds; cmds++) {
		const struct tpf_cmd *c = *cmds;
		char path[64];
		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? " " : "", c->name);
		printf("%s\t%d\t%d\t%s\n", path, c->subs ? 0 : c->min_args, c->subs ? 0 : c->max_args,
		       c->subs ? "group" : (c->needs & TPF_CMD_REST) ? "rest" : "command");
		if (c->subs)
			list_table(c->subs, path);
	}
}

static struct {
	int commands;
	int man;
	const char *completion;
	const char *complete_names;
} help_o;

/* Hidden: for tests, the build (man pages, completions, cmd/gen.h) and the
 * completion scripts themselves. */
static const struct tpf_flag help_flags[] = {
	TPF_BOOL("commands", &help_o.commands, NULL), /* list the whole table */
	TPF_BOOL("man", &help_o.man, NULL),           /* the man page of [COMMAND] */
	TPF_STR("completion", "SHELL", &help_o.completion, NULL),
	TPF_STR("complete-names", "FILE", &help_o.complete_names, NULL),
	TPF_FLAGS_END,
};

/* The generators of cmd/gen.h; -1 when none was asked for. */
static int run_generator(struct tpf_cmd_ctx *ctx)
{
	if (help_o.commands) {
		list_table(ctx->commands, "");
		return TPF_EXIT_OK;
	}
	if (help_o.complete_names)
		return tpf_complete_names(stdout, help_o.complete_names);
	if (help_o.completion) {
		if (tpf_completion_script(stdout, ctx->commands, help_o.completion) == 0)
			return TPF_EXIT_OK;
		tpf_errorx(ctx->d, NULL, "The shells are bash, zsh and fish.",
			   "no completion for shell '%s'", help_o.completion);
		return TPF_EXIT_ERROR;
	}
	if (!help_o.man)
		return -1;
	const struct tpf_cmd *c = ctx->nargs ? tpf_cmd_find(ctx->commands, ctx->args[0]) : NULL;
	if (ctx->nargs && (!c || ctx->nargs > 1)) {
		tpf_errorx(ctx->d, NULL, "Man pages are per top-level command: 'tpuform help -man "
			   "COMMAND'.", "no man page for '%s%s%s'", ctx->args[0],
			   ctx->nargs > 1 ? " " : "", ctx->nargs > 1 ? ctx->args[1] : "");
		return TPF_EXIT_ERROR;
	}
	tpf_man_page(stdout, ctx->commands, c);
	return TPF_EXIT_OK;
}

static int run_help(struct tpf_cmd_ctx *ctx)
{
	int rc = run_generator(ctx);
	if (rc >= 0)
		return rc;
	if (!ctx->nargs) {
		tpf_help_overview(stdout, ctx->commands);
		return TPF_EXIT_OK;
	}
	const struct tpf_cmd *c = tpf_cmd_find(ctx->commands, ctx->args[0]);
	if (!c) {
		tpf_errorx(ctx->d, NULL, "'tpuform help' lists the commands.", "unknown command '%s'",
			   ctx->args[0]);
		return TPF_EXIT_ERROR;
	}
	char path[64];
	snprintf(path, sizeof(path), "%s", c->name);
	if (ctx->nargs > 1) {
		const struct tpf_cmd *sub = c->subs ? tpf_cmd_find(c->subs, ctx->args[1]) : NULL;
		if (!sub) {
			tpf_errorx(ctx->d, NULL, NULL, "'tpuform %s' has no subcommand '%s'", c->name,
				   ctx->args[1]);
			return TPF_EXIT_ERROR;
		}
		snprintf(path, sizeof(path), "%s %s", c->name, sub->name);
		c = sub;
	}
	tpf_help_command(stdout, c, path);
	return TPF_EXIT_OK;
}

const struct tpf_cmd tpf_cmd_help = {
	.name = "help",
	.summary = "Show the commands, or one command's usage and options",
	.description = "  Without COMMAND, list the commands. With COMMAND (and SUBCOMMAND), show\n"
		       "  its usage and options, as 'tpuform COMMAND -help' does.\n",
	.flags = help_flags,
	.min_args = 0,
	.max_args = 2,
	.args_name = "[COMMAND [SUBCOMMAND]]",
	.args = TPF_ARGS_COMMAND,
	.run = run_help,
};
