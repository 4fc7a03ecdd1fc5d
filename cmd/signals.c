/*
 * SIGINT and SIGTERM, as Terraform treats them (docs/terraform-behaviour.md):
 *
 * - A command that changes things (apply, destroy, watch, state rm, local)
 *   stops gracefully on the first one: it says so, starts nothing new and
 *   records the state of what is in flight. A second one exits at once with
 *   status 1; the state stays consistent, because it is written atomically
 *   after every transition (tests/e2e/t150-crash.sh kills tpuform anywhere).
 * - A read-only command (plan, show, validate, logs, exec, ssh, state
 *   list/show/pull) just stops: the first signal ends the process by its
 *   default action, so the shell reports 130 (SIGINT) or 143 (SIGTERM).
 *
 * Handlers use only async-signal-safe calls (write, _exit).
 */
#include "cmd/cmd.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

volatile int tpf_interrupted;

static void say(const char *msg, size_t len)
{
	ssize_t ignored = write(STDERR_FILENO, msg, len);
	(void)ignored;
}

static void on_graceful(int sig)
{
	static const char first[] =
		"\nInterrupt received.\nPlease wait for tpuform to exit or data loss may occur.\n"
		"Gracefully shutting down...\n";
	static const char second[] =
		"\nTwo interrupts received. Exiting immediately. Note that data loss may have "
		"occurred.\n";
	(void)sig;
	if (tpf_interrupted) {
		say(second, sizeof(second) - 1);
		_exit(TPF_EXIT_ERROR);
	}
	tpf_interrupted = 1;
	say(first, sizeof(first) - 1);
}

/* exec, ssh -- CMD: Ctrl-C goes to the remote commands (engine/chores/chores.h). */
static void on_forward(int sig)
{
	static const char first[] = "\nInterrupt: sending SIGINT to the remote command "
				    "(again: SIGKILL)\n";
	static const char second[] = "\nInterrupt: sending SIGKILL to the remote command "
				     "(again: exit at once)\n";
	(void)sig;
	if (tpf_interrupted >= 2)
		_exit(130);
	tpf_interrupted++;
	if (tpf_interrupted == 1)
		say(first, sizeof(first) - 1);
	else
		say(second, sizeof(second) - 1);
}

void tpf_signals_install(enum tpf_cmd_signals kind)
{
	if (kind == TPF_SIG_NONE)
		return;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	/* The default action even where the parent ignored the signals (a
	 * script's background job starts with SIGINT ignored). */
	sa.sa_handler = kind == TPF_SIG_GRACEFUL ? on_graceful
			: kind == TPF_SIG_FORWARD ? on_forward
						  : SIG_DFL;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}
