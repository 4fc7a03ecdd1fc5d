/*
 * Help texts, all generated from the command table, so that what -help
 * says is what the parser accepts: usage lines, options with their ranges
 * and defaults, subcommands. Also the `help` command itself.
 */
#include "cmd/cmd.h"
#include "cmd/gen.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* The flags the needs bring, in the order help lists them. */
static size_t common_flags(unsigned needs, struct tpf_common_opts *o, struct tpf_flag *out)
{
	size_t n = 0;
	if (needs & (TPF_CMD_FILE | TPF_CMD_FLEET))
		out[n++] = (struct tpf_flag){ .name = "file", .alias = "f", .type = TPF_FLAG_STRING,
					      .target = &o->file, .help = "the fleet file",
					      .value = "FILE" };
	if (needs & TPF_CMD_JSON)
		out[n++] = (struct tpf_flag)TPF_BOOL("json", &o->json,
						     "machine-readable output: one JSON document");
	if (needs & TPF_CMD_JSON_LINES)
		out[n++] = (struct tpf_flag)TPF_BOOL("json", &o->json,
						     "machine-readable output: JSON Lines");
	if (needs & TPF_CMD_LOCK) {
		out[n++] = (struct tpf_flag)TPF_BOOL("lock", &o->lock,
						     "hold the state lock (false: do not lock)");
		out[n++] = (struct tpf_flag)TPF_DUR("lock-timeout", &o->lock_timeout,
						    "wait this long for the state lock (0s: fail at once)");
	}
	if (needs & TPF_CMD_REFRESH)
		out[n++] = (struct tpf_flag)TPF_BOOL("refresh", &o->refresh,
						     "ask the provider and workers first (false: "
						     "believe the state)");
	if (needs & TPF_CMD_PARALLELISM)
		out[n++] = (struct tpf_flag)TPF_INT("parallelism", 1, TPF_PARALLELISM_MAX,
						    &o->parallelism,
						    "concurrent node operations and worker probes");
	out[n++] = (struct tpf_flag)TPF_BOOL("no-color", &o->no_color, "no ANSI colour");
	return n;
}

struct tpf_flag *tpf_cmd_flags(const struct tpf_cmd *c, struct tpf_common_opts *o, int *help)
{
	size_t own = 0;
	for (const struct tpf_flag *f = c->flags; f && f->name; f++)
		own++;
	struct tpf_flag *all = xcalloc(own + 12, sizeof(*all));
	size_t n = common_flags(c->needs, o, all);
	for (size_t i = 0; i < own; i++)
		all[n++] = c->flags[i];
	all[n++] = (struct tpf_flag){ .name = "help", .alias = "h", .type = TPF_FLAG_BOOL,
				      .target = help, .help = "show this help" };
	return all; /* calloc'd: the entry after the last is the end marker */
}

void tpf_help_usage_line(const struct tpf_cmd *c, const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "tpuform %s%s [options]%s%s%s%s%s", path, c->subs ? " <subcommand>" : "",
		 c->args_name ? " " : "", c->args_name ? c->args_name : "",
		 (c->needs & TPF_CMD_REST_OPTIONAL) ? " [-- " : (c->needs & TPF_CMD_REST) ? " -- " : "",
		 (c->needs & TPF_CMD_REST) ? c->rest_name : "",
		 (c->needs & TPF_CMD_REST_OPTIONAL) ? "]" : "");
}

static void list_commands(FILE *out, const struct tpf_cmd *const *cmds)
{
	for (; *cmds; cmds++)
		if (!(*cmds)->hidden)
			fprintf(out, "  %-12s %s\n", (*cmds)->name, (*cmds)->summary);
}

void tpf_help_usage(FILE *out)
{
	fprintf(out, "Usage: tpuform [global options] <command> [options] [args]\n\n"
		     "  Keep a fleet of Cloud TPU VMs in the state its fleet file declares.\n\n"
		     "Commands:\n");
	list_commands(out, tpf_commands);
	fprintf(out, "\nGlobal options (before the command):\n"
		     "  -chdir=DIR   switch to directory DIR first\n"
		     "  -no-color    no ANSI colour\n"
		     "  -help        this help\n"
		     "  -version     the version\n\n"
		     "'tpuform help COMMAND' or 'tpuform COMMAND -help' shows a command's options.\n");
}

void tpf_help_command(FILE *out, const struct tpf_cmd *c, const char *path)
{
	char usage[256];
	tpf_help_usage_line(c, path, usage, sizeof(usage));
	fprintf(out, "Usage: %s\n\n", usage);
	fprintf(out, "%s\n", c->description ? c->description : "");
	if (c->subs) {
		fprintf(out, "Subcommands:\n");
		list_commands(out, c->subs);
		fprintf(out, "\n'tpuform %s <subcommand> -help' shows a subcommand's options.\n", path);
		return;
	}
	/* Defaults are read from the targets: fresh ones for the common flags. */
	struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
	int help = 0;
	struct tpf_flag *flags = tpf_cmd_flags(c, &o, &help);
	fprintf(out, "Options:\n");
	tpf_print_flags(out, flags);
	free(flags);
	if (c->footer)
		fprintf(out, "\n%s", c->footer);
}

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
		list_table(tpf_commands, "");
		return TPF_EXIT_OK;
	}
	if (help_o.complete_names)
		return tpf_complete_names(stdout, help_o.complete_names);
	if (help_o.completion) {
		if (tpf_completion_script(stdout, help_o.completion) == 0)
			return TPF_EXIT_OK;
		tpf_errorx(ctx->d, NULL, "The shells are bash, zsh and fish.",
			   "no completion for shell '%s'", help_o.completion);
		return TPF_EXIT_ERROR;
	}
	if (!help_o.man)
		return -1;
	const struct tpf_cmd *c = ctx->nargs ? tpf_cmd_find(tpf_commands, ctx->args[0]) : NULL;
	if (ctx->nargs && (!c || ctx->nargs > 1)) {
		tpf_errorx(ctx->d, NULL, "Man pages are per top-level command: 'tpuform help -man "
			   "COMMAND'.", "no man page for '%s%s%s'", ctx->args[0],
			   ctx->nargs > 1 ? " " : "", ctx->nargs > 1 ? ctx->args[1] : "");
		return TPF_EXIT_ERROR;
	}
	tpf_man_page(stdout, c);
	return TPF_EXIT_OK;
}

static int run_help(struct tpf_cmd_ctx *ctx)
{
	int rc = run_generator(ctx);
	if (rc >= 0)
		return rc;
	if (!ctx->nargs) {
		tpf_help_usage(stdout);
		return TPF_EXIT_OK;
	}
	const struct tpf_cmd *c = tpf_cmd_find(tpf_commands, ctx->args[0]);
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
	.run = run_help,
};
