/*
 * tpuform ssh NODE [-worker WORKERS] [-L [bind:]port:host:hostport ...]
 * [-- COMMAND]: an interactive shell on one of the node's workers (ssh(1)
 * with the pinned host key for gcp nodes; a shell in the worker's home for
 * local ones); with -L, port forwards through the same pinned connection
 * (engine/chores/forward.c); with a COMMAND, that command, its exit status
 * returned as ssh(1) returns it. A COMMAND may go to several workers
 * (-worker 0-1, all: gcloud's --worker with --command), run as `exec`
 * runs it; a shell or -L goes to one worker, and more are refused, as
 * gcloud refuses "multiple workers without the --command flag".
 */
#include "cmd/cmd.h"
#include "engine/chores/chores.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static struct {
	struct tpf_worker_set workers;
	struct tpf_flag_list forwards;
} ssh_o;

static const struct tpf_flag ssh_flags[] = {
	TPF_WORKERS("worker", &ssh_o.workers,
		    "the worker to log in to; with a command, N, A-B, A,B or all (default 0)"),
	TPF_LIST("L", "[BIND:]PORT:HOST:HOSTPORT", &ssh_o.forwards,
		 "forward local PORT to HOST:HOSTPORT as the worker sees it (ssh -L)"),
	TPF_FLAGS_END,
};

struct fwd {
	const struct tpf_chore_target *t;
	struct tpf_forward_spec *specs;
	size_t n;
	volatile int stop;
	const volatile int *outer_stop; /* -L alone: Ctrl-C */
	int rc;
	struct tpf_diags d;
};

static void on_ready(void *arg)
{
	struct fwd *f = arg;
	for (size_t i = 0; i < f->n; i++)
		tpf_ui_say("Forwarding %s:%d -> %s:%d on %s/w%d\n",
			   f->specs[i].bind ? f->specs[i].bind : "localhost", f->specs[i].port,
			   f->specs[i].host, f->specs[i].hostport, f->t->sn->name, f->t->worker);
	if (f->outer_stop)
		tpf_ui_say("Press Ctrl-C to stop.\n");
}

static void *fwd_main(void *arg)
{
	struct fwd *f = arg;
	f->rc = tpf_chore_forward(f->t, f->specs, f->n, f->outer_stop ? f->outer_stop : &f->stop,
				  on_ready, f, &f->d);
	return NULL;
}

static void on_output(void *arg, size_t i, const char *data, size_t len)
{
	(void)arg;
	(void)i;
	fwrite(data, 1, len, stdout);
	fflush(stdout);
}

/* The command, with the forwards (if any) open while it runs. */
static int run_command(struct tpf_cmd_ctx *ctx, const struct tpf_chore_target *t, struct fwd *f)
{
	pthread_t th;
	int started = f->n && !pthread_create(&th, NULL, fwd_main, f);
	char *command = tpf_cmd_rest_command(ctx);
	struct tpf_exec_opts o = {
		.command = command, .in_fd = isatty(STDIN_FILENO) ? -1 : STDIN_FILENO,
		.out = on_output, .raw = 1, .cancel = &tpf_interrupted,
	};
	int status = TPF_CHORE_STATUS_FAILED;
	tpf_chore_exec(t, 1, &o, &status, ctx->d);
	if (started) {
		f->stop = 1;
		pthread_join(th, NULL);
	}
	free(command);
	return status > 255 ? 255 : status;
}

/* A shell or -L goes to one worker; a command may go to several. */
static int one_worker(struct tpf_cmd_ctx *ctx, size_t n)
{
	if (n <= 1 || (ctx->nrest && !ssh_o.forwards.n))
		return 0;
	return tpf_errorx(ctx->d, NULL,
			  ctx->nrest ? "Forward through one worker (-worker N), or leave -L out to run "
				       "the command on them all."
				     : "Pick one worker (-worker N), or give a command to run on them all: "
				       "tpuform ssh NODE -worker all -- COMMAND (as gcloud's --command).",
			  "%s goes to one worker, but -worker names %zu workers of node '%s'",
			  ssh_o.forwards.n ? "-L" : "an interactive shell", n, ctx->args[0]);
}

/* The -L specs, before the dispatcher lists what is live; run_ssh parses
 * them again (cheap, and nothing to free if the listing fails). */
static int check_ssh(struct tpf_cmd_ctx *ctx)
{
	for (size_t i = 0; i < ssh_o.forwards.n; i++) {
		struct tpf_forward_spec spec;
		if (tpf_forward_spec_parse(ssh_o.forwards.items[i], &spec, ctx->d))
			return TPF_EXIT_ERROR;
		tpf_forward_spec_release(&spec);
	}
	return TPF_EXIT_OK;
}

static int run_ssh(struct tpf_cmd_ctx *ctx)
{
	struct tpf_pipeline *s = &ctx->s;
	struct tpf_chore_target *t = NULL;
	size_t n = 0;
	struct fwd f = { .n = ssh_o.forwards.n };
	int code = TPF_EXIT_ERROR;
	tpf_diags_init(&f.d);
	f.specs = xcalloc(f.n ? f.n : 1, sizeof(*f.specs));
	for (size_t i = 0; i < f.n; i++)
		if (tpf_forward_spec_parse(ssh_o.forwards.items[i], &f.specs[i], ctx->d))
			goto done;
	struct tpf_worker_set ws = ssh_o.workers;
	char why[160];
	if (!ws.given)
		tpf_worker_set_parse("0", &ws, why, sizeof(why));
	if (tpf_chore_targets(s, ctx->args[0], &ws, &t, &n) || one_worker(ctx, n))
		goto done;
	f.t = t;
	if (ctx->nrest && n > 1) {
		code = tpf_cmd_exec_on(ctx, t, n, 0);
	} else if (ctx->nrest) {
		code = run_command(ctx, t, &f);
	} else if (f.n) {
		/* -L alone: forward until Ctrl-C, as ssh -N -L does. */
		f.outer_stop = &tpf_interrupted;
		fwd_main(&f);
		code = f.rc ? TPF_EXIT_ERROR : TPF_EXIT_OK;
	} else {
		tpf_chore_interactive(t, &s->d); /* returns only on failure */
	}
done:
	tpf_diags_move(ctx->d, &f.d);
	tpf_diags_release(&f.d);
	for (size_t i = 0; i < f.n; i++)
		tpf_forward_spec_release(&f.specs[i]);
	free(f.specs);
	free(t);
	return code;
}

/* What run_ssh, the interactive session and the dispatcher return. */
static const char *const ssh_exit_status[] = {
	"0", "Success: the command or the shell exited 0, or -L alone was stopped by Ctrl-C.",
	"1-255", "With a command: its exit status; for a shell, the shell's.",
	"1", "The command could not be run (the worker unreachable, its host key changed: why is "
	     "on standard error), a forward failed, or an error before anything ran.",
	NULL,
};

const struct tpf_cmd tpf_cmd_ssh = {
	.name = "ssh",
	.summary = "Open a shell on a worker, run a command there, or forward ports",
	.description =
		"  Open an interactive shell on worker 0 of NODE (or -worker N). The job\n"
		"  runs in a screen session there: 'screen -ls' lists it. With a command\n"
		"  after \"--\", run it instead (stdin, unless a terminal, goes to it; Ctrl-C\n"
		"  interrupts it) and exit with its status. A command may go to several\n"
		"  workers, as with gcloud's --worker: -worker A-B, A,B or all runs it as\n"
		"  'tpuform exec' does (lines prefixed NODE/wN |, the worst status); a\n"
		"  shell and -L go to one worker. -L forwards a local port to the\n"
		"  worker, as ssh -L does, over the connection whose host key is pinned:\n"
		"  while the command runs, or, without one, until Ctrl-C (as ssh -N -L).\n",
	.footer = "Examples:\n"
		  "  tpuform ssh my-node -worker 1\n"
		  "  tpuform ssh my-node -L 6006:localhost:6006\n"
		  "  tpuform ssh my-node -- nproc\n"
		  "  tpuform ssh my-node -worker all -- uptime\n\n"
		  "Exit status: the command's (with several workers, the highest); 1 when\n"
		  "it could not be run (why is on standard error) or for errors; a shell's,\n"
		  "for a shell.\n",
	.exit_status = ssh_exit_status,
	.flags = ssh_flags,
	.min_args = 1,
	.max_args = 1,
	.args_name = "NODE",
	.args = TPF_ARGS_NODE,
	.rest_name = "COMMAND...",
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_PROVIDER | TPF_CMD_LIVE | TPF_CMD_REST |
		 TPF_CMD_REST_OPTIONAL,
	.signals = TPF_SIG_FORWARD,
	.check = check_ssh,
	.run = run_ssh,
};
