/*
 * Help texts, all generated from the command table, so that what -help
 * says is what the parser accepts: usage lines, options with their ranges
 * and defaults, subcommands; and finding a command in a table. The table is
 * always a parameter: this file sits below the commands (the `help` command
 * itself is cmd/cmd_help.c) and the table (cmd/commands.c) that list it.
 */
#include "cmd/cmd.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

const struct tpf_cmd *tpf_cmd_find(const struct tpf_cmd *const *cmds, const char *name)
{
	for (; *cmds; cmds++)
		if (!strcmp((*cmds)->name, name))
			return *cmds;
	return NULL;
}

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

void tpf_help_overview(FILE *out, const struct tpf_cmd *const *cmds)
{
	fprintf(out, "Usage: tpuform [global options] <command> [options] [args]\n\n"
		     "  Keep a fleet of Cloud TPU VMs in the state its fleet file declares.\n\n"
		     "Commands:\n");
	list_commands(out, cmds);
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
