/*
 * The dispatcher: everything commands have in common happens here, once.
 * Find the command (and subcommand), parse its flags, check its positional
 * arguments, set up the interface and the signals, open the pipeline
 * as the command's needs say, run the body, print the diagnostics, close,
 * and turn all of it into one exit code (git.c's run_builtin with
 * RUN_SETUP, libgit2's cli dispatch).
 */
#include "cmd/cmd.h"
#include "util/similar.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Is one of `names` among the arguments before "--"? */
static int has_arg(int argc, char **argv, const char *const *names)
{
	for (int i = 0; i < argc && strcmp(argv[i], "--"); i++)
		for (const char *const *n = names; *n; n++)
			if (!strcmp(argv[i], *n))
				return 1;
	return 0;
}

int tpf_cmd_wants_json(int argc, char **argv)
{
	static const char *const names[] = { "-json", "--json", "-json=true", "--json=true", NULL };
	return has_arg(argc, argv, names);
}

static int wants_help(int argc, char **argv)
{
	static const char *const names[] = { "-help", "--help", "-h", "--h", NULL };
	return has_arg(argc, argv, names);
}

/* "no positional arguments", "at most one positional argument (NODE)" */
static void describe_takes(const struct tpf_cmd *c, char *buf, size_t len)
{
	if (c->max_args == 0)
		snprintf(buf, len, "no positional arguments");
	else if (c->max_args == 1)
		snprintf(buf, len, "at most one positional argument (%s)", c->args_name);
	else
		snprintf(buf, len, "at most %d positional arguments (%s)", c->max_args, c->args_name);
}

/* The hint under "Too many command line arguments". */
static char *stray_hint(const struct tpf_cmd *c, const char *path, const struct tpf_parsed *p,
			const char *stray, const char *usage)
{
	char takes[128];
	describe_takes(c, takes, sizeof(takes));
	size_t n = strlen(stray);
	int fleetish = (n > 5 && !strcmp(stray + n - 5, ".yaml")) ||
		       (n > 4 && !strcmp(stray + n - 4, ".yml")) || !access(stray, F_OK);
	char *tip = NULL;
	if (c->needs & TPF_CMD_REST)
		tip = xasprintf("\nPut the command after \"--\": tpuform %s %s -- %s", path,
				p->nargs > 1 ? p->args[0] : c->args_name, stray);
	else if ((c->needs & (TPF_CMD_FILE | TPF_CMD_FLEET)) && fleetish)
		tip = xasprintf("\nTo name the fleet file, use -f FILE: tpuform %s -f %s", path, stray);
	char *hint = xasprintf("'tpuform %s' takes %s, but got '%s'.%s\nUsage: %s", path, takes,
			       stray, tip ? tip : "", usage);
	free(tip);
	return hint;
}

/* Terraform's "Too many command line arguments" and its opposite. */
static int check_args(const struct tpf_cmd *c, const char *path, const struct tpf_parsed *p,
		      struct tpf_diags *d)
{
	char usage[256];
	tpf_help_usage_line(c, path, usage, sizeof(usage));
	const char *stray = NULL;
	if (c->max_args >= 0 && p->nargs > c->max_args)
		stray = p->args[c->max_args];
	else if (!(c->needs & TPF_CMD_REST) && p->nrest)
		stray = p->rest[0];
	/* `apply FLEET.yaml`: a fleet file where a saved plan or a node name
	 * goes. Not where a file is the argument (cp copies YAML files too). */
	size_t n0 = p->nargs ? strlen(p->args[0]) : 0;
	int named = c->args == TPF_ARGS_PLANFILE || c->args == TPF_ARGS_NODE;
	if (!stray && named && (c->needs & TPF_CMD_FLEET) && n0 &&
	    ((n0 > 5 && !strcmp(p->args[0] + n0 - 5, ".yaml")) ||
	     (n0 > 4 && !strcmp(p->args[0] + n0 - 4, ".yml")))) {
		char what[64];
		size_t k = 0;
		for (const char *q = c->args_name; q && *q && k + 1 < sizeof(what); q++)
			if (*q != '[' && *q != ']')
				what[k++] = *q;
		what[k] = '\0';
		char *hint = xasprintf("'tpuform %s' takes %s there. To name the fleet file, use -f "
				       "FILE: tpuform %s -f %s\nUsage: %s",
				       path, what, path, p->args[0], usage);
		tpf_errorx(d, NULL, hint, "'%s' looks like a fleet file, not a %s", p->args[0], what);
		free(hint);
		return TPF_ERROR;
	}
	if (stray) {
		char *hint = stray_hint(c, path, p, stray, usage);
		tpf_errorx(d, NULL, hint, "Too many command line arguments");
		free(hint);
		return TPF_ERROR;
	}
	if (p->nargs < c->min_args || ((c->needs & TPF_CMD_REST) && !(c->needs & TPF_CMD_REST_OPTIONAL) && !p->nrest)) {
		const char *missing = p->nargs < c->min_args ? c->args_name : c->rest_name;
		char *hint = xasprintf("Usage: %s", usage);
		tpf_errorx(d, NULL, hint, "Not enough command line arguments: 'tpuform %s' needs %s",
			   path, missing);
		free(hint);
		return TPF_ERROR;
	}
	return 0;
}

/* After the session opened: the command's own check, then what is live
 * (TPF_CMD_LIVE; git's RUN_SETUP). */
static int prepare(struct tpf_cmd_ctx *ctx)
{
	struct tpf_pipeline *s = &ctx->s;
	int code = ctx->cmd->check ? ctx->cmd->check(ctx) : TPF_EXIT_OK;
	if (code == TPF_EXIT_OK && (ctx->needs & TPF_CMD_LIVE) &&
	    tpf_refresh(s->prov, &s->fleet, &s->state, &s->live, &s->d))
		code = TPF_EXIT_ERROR;
	return code;
}

/* Flags, positional arguments, interface, signals, session: everything
 * before the body. */
static int set_up(struct tpf_cmd_ctx *ctx, const struct tpf_flag *flags, int argc, char **argv,
		  struct tpf_parsed *parsed)
{
	const struct tpf_cmd *c = ctx->cmd;
	if (tpf_parse_flags(ctx->path, argc, argv, flags, parsed, ctx->d) ||
	    check_args(c, ctx->path, parsed, ctx->d))
		return TPF_EXIT_ERROR;
	ctx->args = parsed->args;
	ctx->nargs = parsed->nargs;
	ctx->rest = parsed->rest;
	ctx->nrest = parsed->nrest;
	tpf_ui_init(ctx->o.no_color, ctx->o.json);
	tpf_signals_install(c->signals);
	if (ctx->o.json && (c->needs & TPF_CMD_JSON_LINES))
		tpf_ui_json_version();
	if (c->needs & TPF_CMD_FLEET) {
		struct tpf_pipeline_opts so = tpf_cmd_session_opts(&ctx->o, c->needs);
		if (tpf_pipeline_open(&ctx->s, &so, (c->needs & TPF_CMD_LOCK) ? c->lock_op : NULL))
			return TPF_EXIT_ERROR;
	}
	return prepare(ctx);
}

static int run_command(const struct tpf_cmd *c, const char *path, int argc, char **argv,
		       int no_color)
{
	struct tpf_cmd_ctx ctx;
	memset(&ctx, 0, sizeof(ctx));
	ctx.cmd = c;
	ctx.commands = tpf_commands;
	ctx.needs = c->needs;
	snprintf(ctx.path, sizeof(ctx.path), "%s", path);
	struct tpf_common_opts defaults = TPF_COMMON_OPTS_INIT;
	ctx.o = defaults;
	ctx.o.no_color = no_color;
	tpf_pipeline_init(&ctx.s);
	ctx.d = &ctx.s.d;
	tpf_ui_init(no_color, tpf_cmd_wants_json(argc, argv));
	if (wants_help(argc, argv)) {
		tpf_help_command(stdout, c, path);
		tpf_pipeline_close(&ctx.s);
		return TPF_EXIT_OK;
	}
	int help = 0;
	struct tpf_flag *flags = tpf_cmd_flags(c, &ctx.o, &help);
	struct tpf_parsed parsed;
	memset(&parsed, 0, sizeof(parsed));
	int code = set_up(&ctx, flags, argc, argv, &parsed);
	if (code == TPF_EXIT_OK && help)
		tpf_help_command(stdout, c, path);
	else if (code == TPF_EXIT_OK)
		code = c->run(&ctx);
	tpf_ui_diags(ctx.d);
	if (tpf_diags_errors(ctx.d) || ctx.printed_errors)
		code = TPF_EXIT_ERROR;
	tpf_pipeline_close(&ctx.s);
	tpf_parsed_release(&parsed);
	for (const struct tpf_flag *f = flags; f->name; f++)
		if (f->type == TPF_FLAG_LIST)
			tpf_flag_list_release(f->target);
	free(flags);
	return code;
}

/* A usage error before any command could run: printed as a diagnostic. */
static int usage_error(int argc, char **argv, int no_color, const char *detail,
		       const char *message)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_ui_init(no_color, tpf_cmd_wants_json(argc, argv));
	tpf_errorx(&d, NULL, detail, "%s", message);
	tpf_ui_diags(&d);
	tpf_diags_release(&d);
	return TPF_EXIT_ERROR;
}

/* "validate, plan, ... or version" */
static char *list_names(const struct tpf_cmd *const *cmds)
{
	struct tpf_buf b = TPF_BUF_INIT;
	for (const struct tpf_cmd *const *c = cmds; *c; c++)
		if (!(*c)->hidden)
			tpf_buf_addf(&b, "%s%s", b.len ? ", " : "", (*c)->name);
	return tpf_buf_detach(&b, NULL);
}

/* "tpuform state" without a subcommand: its help, then exit 0 when asked
 * for (-h), else 1. */
static int group_without_sub(const struct tpf_cmd *c, const char *path, int argc, char **argv,
			     int no_color)
{
	if (wants_help(argc, argv)) {
		tpf_help_command(stdout, c, path);
		return TPF_EXIT_OK;
	}
	char *names = list_names(c->subs);
	char *detail = xasprintf("The subcommands are: %s. Run 'tpuform %s -help' for more.", names,
				 path);
	char *what = xasprintf(argc ? "'tpuform %s' needs a subcommand before its flags (got '%s')"
				    : "'tpuform %s' needs a subcommand%s",
			       path, argc ? argv[0] : "");
	usage_error(argc, argv, no_color, detail, what);
	free(names);
	free(detail);
	free(what);
	return TPF_EXIT_ERROR;
}

static int unknown(const struct tpf_cmd *const *cmds, const char *kind, const char *help,
		   const char *name, int argc, char **argv, int no_color)
{
	char *names = list_names(cmds);
	char *detail = xasprintf("The %ss are: %s. '%s' tells more.", kind, names, help);
	/* Terraform: 'Terraform has no command named "aply". Did you mean
	 * "apply"?' (its didyoumean package; git's help.c likewise). */
	size_t n = 0;
	while (cmds[n])
		n++;
	const char **visible = xcalloc(n + 1, sizeof(*visible));
	for (size_t i = 0; i < n; i++)
		visible[i] = cmds[i]->hidden ? NULL : cmds[i]->name;
	const char *near = tpf_similar_name(name, visible, n);
	char *what = near ? xasprintf("unknown %s '%s'. Did you mean '%s'?", kind, name, near)
			  : xasprintf("unknown %s '%s'", kind, name);
	free(visible);
	usage_error(argc, argv, no_color, detail, what);
	free(names);
	free(detail);
	free(what);
	return TPF_EXIT_ERROR;
}

int tpf_cmd_dispatch(int argc, char **argv, int no_color)
{
	const struct tpf_cmd *c = tpf_cmd_find(tpf_commands, argv[0]);
	if (!c)
		return unknown(tpf_commands, "command", "tpuform help", argv[0], argc, argv, no_color);
	char path[64];
	snprintf(path, sizeof(path), "%s", c->name);
	int i = 1;
	while (c->subs) {
		if (i >= argc || argv[i][0] == '-')
			return group_without_sub(c, path, argc - i, argv + i, no_color);
		const struct tpf_cmd *sub = tpf_cmd_find(c->subs, argv[i]);
		if (!sub) {
			char kind[80], help[96];
			snprintf(kind, sizeof(kind), "%s subcommand", path);
			snprintf(help, sizeof(help), "tpuform %s -help", path);
			return unknown(c->subs, kind, help, argv[i], argc, argv, no_color);
		}
		size_t len = strlen(path);
		snprintf(path + len, sizeof(path) - len, " %s", sub->name);
		c = sub;
		i++;
	}
	return run_command(c, path, argc - i, argv + i, no_color);
}
