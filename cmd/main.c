/*
 * tpuform: keep fleets of Cloud TPU VMs in a declared state.
 *
 * main() handles only the global options that may come before the command
 * (-chdir=DIR as Terraform's, -no-color, -help, -version) and hands the
 * rest to the dispatcher (cmd/dispatch.c). At the end it checks that what
 * went to stdout was written, as git's main does.
 */
#include "cmd/cmd.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int global_error(int argc, char **argv, const char *detail, const char *message)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_ui_init(0, tpf_cmd_wants_json(argc, argv));
	tpf_errorx(&d, NULL, detail, "%s", message);
	tpf_ui_diags(&d);
	tpf_diags_release(&d);
	return TPF_EXIT_ERROR;
}

static int is_flag(const char *a, const char *name)
{
	return a[0] == '-' && !strcmp(a + 1 + (a[1] == '-'), name);
}

/* One global option at argv[*i] (may take the next argument). Returns -1
 * to go on, else the exit code to end with. */
static int global_option(int argc, char **argv, int *i, int *no_color)
{
	const char *a = argv[*i];
	const char *name = a + 1 + (a[1] == '-');
	char msg[512];
	if (!strncmp(name, "chdir", 5) && (name[5] == '=' || !name[5])) {
		const char *dir = name[5] == '=' ? name + 6 : *i + 1 < argc ? argv[++*i] : NULL;
		if (!dir || !*dir)
			return global_error(argc, argv, NULL, "-chdir needs a directory: -chdir=DIR");
		if (chdir(dir) < 0) {
			snprintf(msg, sizeof(msg), "cannot change to directory '%s'", dir);
			return global_error(argc, argv, strerror(errno), msg);
		}
		return -1;
	}
	if (is_flag(a, "no-color")) {
		*no_color = 1;
		return -1;
	}
	if (is_flag(a, "help") || is_flag(a, "h")) {
		tpf_help_usage(stdout);
		return TPF_EXIT_OK;
	}
	if (is_flag(a, "version") || is_flag(a, "v")) {
		/* As Terraform's -version: the version command's own output
		 * (commit, build, libraries), from one place. */
		char *version[] = { "version", NULL };
		return tpf_cmd_dispatch(1, version, *no_color);
	}
	snprintf(msg, sizeof(msg), "unknown global option '%s'", a);
	return global_error(argc, argv,
			    "Before the command tpuform takes -chdir=DIR, -no-color, -help and "
			    "-version; the command's own options go after it ('tpuform help "
			    "COMMAND' lists them).",
			    msg);
}

/* A failed write or close of stdout (a full disk, an I/O error) turns the
 * exit code into an error, with a message on stderr, as git.c's
 * run_builtin: output that was lost is not a success. As there, a pipe or
 * socket whose reader left (`| head`), or a stdout that was never open, is
 * not an error. */
static int check_stdout(int code)
{
	struct stat st;
	if (fstat(fileno(stdout), &st) < 0 || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))
		return code;
	const char *what = NULL;
	int err = 0;
	if (fflush(stdout)) {
		what = "write failure on standard output";
		err = errno;
	} else if (ferror(stdout)) {
		what = "unknown write failure on standard output";
	}
	errno = 0;
	if (fclose(stdout) && !what) {
		what = "close failed on standard output";
		err = errno;
	}
	if (!what)
		return code;
	if (err)
		fprintf(stderr, "Error: %s: %s\n", what, strerror(err));
	else
		fprintf(stderr, "Error: %s\n", what);
	return TPF_EXIT_ERROR;
}

static int run(int argc, char **argv)
{
	int no_color = 0, i = 1;
	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		int code = global_option(argc, argv, &i, &no_color);
		if (code >= 0)
			return code;
	}
	if (i >= argc) {
		tpf_help_usage(stderr);
		return TPF_EXIT_ERROR;
	}
	return tpf_cmd_dispatch(argc - i, argv + i, no_color);
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	return check_stdout(run(argc, argv));
}
