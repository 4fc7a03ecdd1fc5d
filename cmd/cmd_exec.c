/*
 * tpuform exec NODE|-all -- COMMAND...: run COMMAND with /bin/sh on every
 * worker at once (the workers of a multi-host job must all get it), print
 * its output line by line as it comes, prefixed "NODE/wN | ", then each
 * worker's exit status. stdin is copied to every worker; Ctrl-C interrupts
 * the remote commands (engine/chores/chores.h tpf_chore_exec).
 */
#include "cmd/cmd.h"
#include "engine/chores/chores.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
	int all, secrets;
	struct tpf_worker_set workers;
} exec_o;

static const struct tpf_flag exec_flags[] = {
	TPF_BOOL("all", &exec_o.all, "every node of the fleet (then no NODE)"),
	TPF_WORKERS("worker", &exec_o.workers,
		    "only these workers: N, A-B, A,B or all (default: every worker)"),
	TPF_BOOL("secrets", &exec_o.secrets, "give the command the job's secrets too"),
	TPF_FLAGS_END,
};

/* Each line as it comes, prefixed with its worker. */
static void on_line(void *arg, size_t i, const char *data, size_t len)
{
	const struct tpf_chore_target *t = arg;
	tpf_ui_say("%s/w%d | %.*s\n", t[i].sn->name, t[i].worker, (int)len, data);
}

/* One status line per worker; the exit code is the worst status. */
static int report(const struct tpf_chore_target *t, size_t n, const int *status,
		  const int *failure)
{
	int worst = 0;
	tpf_ui_say("\n");
	for (size_t i = 0; i < n; i++) {
		if (status[i] == TPF_CHORE_STATUS_FAILED)
			tpf_ui_say("%s/w%d : %s\n", t[i].sn->name, t[i].worker,
				   failure[i] == TPF_EUNREACHABLE ? "unreachable (see below)"
				   : failure[i] == TPF_EHOSTKEY
					   ? "refused: host key changed (see below)"
					   : "failed (see below)");
		else
			tpf_ui_say("%s/w%d : exit=%d\n", t[i].sn->name, t[i].worker, status[i]);
		if (status[i] > worst)
			worst = status[i];
	}
	return worst > 255 ? 255 : worst;
}

int tpf_cmd_exec_on(struct tpf_cmd_ctx *ctx, struct tpf_chore_target *t, size_t n, int secrets)
{
	char *command = tpf_cmd_rest_command(ctx);
	/* stdin goes to every worker, unless it is the terminal: typing to
	 * many workers at once is not what a terminal is for, and reading it
	 * would stop a background tpuform (SIGTTIN). */
	struct tpf_exec_opts o = {
		.command = command, .secrets = secrets,
		.in_fd = isatty(STDIN_FILENO) ? -1 : STDIN_FILENO,
		.out = on_line, .arg = t, .cancel = &tpf_interrupted,
	};
	int *status = xcalloc(n, sizeof(*status)), *failure = xcalloc(n, sizeof(*failure));
	o.failure = failure;
	tpf_chore_exec(t, n, &o, status, ctx->d);
	int code = report(t, n, status, failure);
	free(failure);
	free(status);
	free(command);
	return code;
}

/* NODE or -all, before the dispatcher lists what is live. */
static int check_exec(struct tpf_cmd_ctx *ctx)
{
	const char *node = ctx->nargs ? ctx->args[0] : NULL;
	if (!node == !exec_o.all) {
		tpf_errorx(ctx->d, NULL, "Usage: tpuform exec [options] NODE|-all -- COMMAND...",
			   node ? "exec takes NODE or -all, not both (got '%s' and -all)"
				: "exec needs NODE or -all%s",
			   node ? node : "");
		return TPF_EXIT_ERROR;
	}
	return TPF_EXIT_OK;
}

static int run_exec(struct tpf_cmd_ctx *ctx)
{
	const char *node = ctx->nargs ? ctx->args[0] : NULL;
	struct tpf_chore_target *t = NULL;
	size_t n = 0;
	int code = TPF_EXIT_ERROR;
	if (!tpf_chore_targets(&ctx->s, node, &exec_o.workers, &t, &n))
		code = tpf_cmd_exec_on(ctx, t, n, exec_o.secrets);
	free(t);
	return code;
}

/* What run_exec and the dispatcher return (cmd/dispatch.c: any error
 * diagnostic, such as a worker that could not be reached, makes it 1). */
static const char *const exec_exit_status[] = {
	"0", "The command exited 0 on every worker.",
	"1-255", "The highest of the workers' exit statuses, when every worker ran the command.",
	"1", "A worker could not run it (unreachable, or its host key changed: why is on "
	     "standard error), or an error before anything ran (no such node, no READY worker).",
	NULL,
};

const struct tpf_cmd tpf_cmd_exec = {
	.name = "exec",
	.summary = "Run a command on every worker of a node (or all nodes)",
	.description = "  Run COMMAND with /bin/sh in the home of every worker at once; its output\n"
		       "  lines are printed as they come, prefixed NODE/wN |, then each worker's\n"
		       "  exit status is listed. The command goes after \"--\"; its words are\n"
		       "  joined with spaces. It sees the job's TPUFORM_* variables and env (with\n"
		       "  -secrets, its secrets too). stdin, unless it is a terminal, is copied\n"
		       "  to every worker. Ctrl-C sends SIGINT to the command's process group on\n"
		       "  every worker, a second Ctrl-C SIGKILL. -worker picks workers as gcloud's\n"
		       "  --worker does: N, A-B, A,B (such as 0,2-3) or all.\n",
	.footer = "Examples:\n"
		  "  tpuform exec my-node -- 'cat > cfg.yaml' < cfg.yaml\n"
		  "  tpuform exec -all -- nvidia-smi\n"
		  "  tpuform exec my-node -worker 0,2-3 -- 'df -h /'\n\n"
		  "Exit status: the highest of the workers' exit statuses when each ran the\n"
		  "command; 1 when a worker could not run it (why is on standard error) or\n"
		  "for an error before anything ran.\n",
	.exit_status = exec_exit_status,
	.flags = exec_flags,
	.min_args = 0,
	.max_args = 1,
	.args_name = "NODE|-all",
	.args = TPF_ARGS_NODE,
	.rest_name = "COMMAND...",
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_PROVIDER | TPF_CMD_LIVE | TPF_CMD_REST,
	.signals = TPF_SIG_FORWARD,
	.check = check_exec,
	.run = run_exec,
};
