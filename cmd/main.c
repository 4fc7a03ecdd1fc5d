/*
 * tpuform: keep fleets of Cloud TPU VMs in a declared state.
 * The command table and dispatch (libgit2 src/cli, git.c pattern).
 */
#include "cmd/cmd.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tpf_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct tpf_cmd cmds[] = {
	{ "validate", cmd_validate, "Check the fleet file without touching anything" },
	{ "plan", cmd_plan, "Show what apply would change" },
	{ "apply", cmd_apply, "Create, replace or delete nodes and provision workers" },
	{ "destroy", cmd_destroy, "Delete every node the fleet owns" },
	{ "watch", cmd_watch, "Keep the fleet alive: refresh, replace, restart, in a loop" },
	{ "show", cmd_show, "Show nodes, workers, commits and job status" },
	{ "logs", cmd_logs, "Print the job log of a node's workers" },
	{ "exec", cmd_exec, "Run a command on every worker of a node (or all nodes)" },
	{ "ssh", cmd_ssh, "Open a shell on a worker" },
	{ "state", cmd_state, "Inspect or edit the state (list, show, rm, pull)" },
	{ "local", cmd_local, "Act on the embedded local provider (preempt, terminate)" },
	{ "version", cmd_version, "Print the tpuform version" },
	{ NULL, NULL, NULL },
};

volatile int tpf_interrupted;

static void on_signal(int sig)
{
	static const char msg[] =
		"\nInterrupt received.\nPlease wait for tpuform to exit or data loss may occur.\n"
		"Gracefully shutting down...\n";
	if (!tpf_interrupted) {
		ssize_t ignored = write(STDERR_FILENO, msg, sizeof(msg) - 1);
		(void)ignored;
	}
	tpf_interrupted = 1;
	(void)sig;
}

void tpf_install_signal_handlers(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("tpuform v%s\n", TPF_VERSION);
	return TPF_EXIT_OK;
}

static void usage(FILE *out)
{
	fprintf(out, "Usage: tpuform [-chdir=DIR] <command> [options]\n\n"
		     "Keep a fleet of Cloud TPU VMs in the state its fleet file declares.\n\n"
		     "Commands:\n");
	for (const struct tpf_cmd *c = cmds; c->name; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->summary);
	fprintf(out, "\nRun 'tpuform <command> -help' for a command's options.\n");
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	int i = 1;
	/* Global option, as Terraform's -chdir. */
	if (i < argc && !strncmp(argv[i], "-chdir=", 7)) {
		if (chdir(argv[i] + 7) < 0) {
			fprintf(stderr, "Error: cannot change to directory '%s'\n", argv[i] + 7);
			return TPF_EXIT_ERROR;
		}
		i++;
	}
	if (i >= argc || !strcmp(argv[i], "-help") || !strcmp(argv[i], "--help") ||
	    !strcmp(argv[i], "-h") || !strcmp(argv[i], "help")) {
		usage(i >= argc ? stderr : stdout);
		return i >= argc ? TPF_EXIT_ERROR : TPF_EXIT_OK;
	}
	if (!strcmp(argv[i], "-version") || !strcmp(argv[i], "--version"))
		return cmd_version(0, NULL);
	for (const struct tpf_cmd *c = cmds; c->name; c++)
		if (!strcmp(c->name, argv[i]))
			return c->fn(argc - i - 1, argv + i + 1);
	fprintf(stderr, "Error: unknown command '%s'\n\n", argv[i]);
	usage(stderr);
	return TPF_EXIT_ERROR;
}
