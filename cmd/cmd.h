/*
 * The command-line layer: one file per subcommand, a table in main.c
 * (the libgit2 src/cli and git builtin pattern). Only cmd/ prints for
 * people and decides exit codes.
 */
#ifndef TPF_CMD_H
#define TPF_CMD_H

#include <stdio.h>
#include "engine/apply.h"
#include "engine/session.h"
#include "config/config.h"
#include "plan/plan.h"
#include "providers/provider.h"
#include "state/lock.h"
#include "state/state.h"
#include "util/diag.h"
#include "providers/transport.h"

/* Exit codes: Terraform's contract (docs/terraform-behaviour.md section 2). */
#define TPF_EXIT_OK 0
#define TPF_EXIT_ERROR 1
#define TPF_EXIT_CHANGES 2 /* only with -detailed-exitcode */
#define TPF_EXIT_NOT_DECLARED 3 /* plan -detailed-exitcode: no changes, not as declared */

/* ---- flags (cmd/args.c) -------------------------------------------------- */

enum tpf_flag_type { TPF_FLAG_BOOL, TPF_FLAG_STRING, TPF_FLAG_INT, TPF_FLAG_DURATION };

struct tpf_flag {
	const char *name;       /* without dashes: "auto-approve" */
	const char *alias;      /* another accepted name ("f" for "file"), may be NULL */
	enum tpf_flag_type type;
	void *target;           /* int* (bool, int), const char** (string), double* (seconds) */
	const char *help;
};

/*
 * Terraform-style flags: "-name", "--name", "-name=value", "-name value",
 * and for booleans "-name=true|false". Stops at "--". Positional arguments
 * are collected in order into pos (argv pointers, *npos of them; caller
 * frees the array). Prints the error and returns -1 on a bad flag.
 */
int tpf_parse_flags(const char *cmd, int argc, char **argv, const struct tpf_flag *flags,
		    char ***pos, int *npos);
void tpf_print_flags(FILE *out, const struct tpf_flag *flags);

/* ---- the user interface (cmd/ui.c) ---------------------------------------- */

struct tpf_ui {
	int color; /* ANSI colour on stdout */
	int json;  /* -json: JSON Lines on stdout, nothing else */
	pthread_mutex_t mu;
};
extern struct tpf_ui tpf_ui; /* the one global of the program */

/* Colour on unless -no-color, NO_COLOR is set, or stdout is not a terminal. */
void tpf_ui_init(int no_color, int json);
/* Print every diagnostic (human: Terraform's boxed form on stderr; json: lines). */
void tpf_ui_diags(const struct tpf_diags *d);
/* One JSON Lines message (docs/terraform-behaviour.md section 5): adds @level, @message,
 * @module "tpuform.ui", @timestamp and type; steals `extra` (may be NULL). */
void tpf_ui_json(const char *level, const char *type, const char *message, json_t *extra);
/* The first JSON Lines message, type "version" (Terraform's -json starts so). */
void tpf_ui_json_version(void);
/* Human progress line on stdout (no-op in json mode). */
void tpf_ui_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The apply event printer (engine/apply.h tpf_event_fn). */
void tpf_ui_event(const struct tpf_event *ev, void *ctx);
/* Ansible's PLAY RECAP. */
void tpf_ui_recap(const struct tpf_recap *r);
/* Print a plan: human text, or planned_change + change_summary lines. */
void tpf_ui_plan(const struct tpf_plan *p);
/* Ask for "yes" on the terminal. Returns 1 only for "yes". */
int tpf_ui_confirm(const char *question, const char *explain);

/* ---- the common flags and the engine session (cmd/session.c) --------------- */

struct tpf_common_opts {
	const char *file;   /* -f: fleet file, default tpuform.yaml */
	int no_color;
	int json;
	int lock;           /* -lock=false disables */
	double lock_timeout;
	int refresh;        /* -refresh=false skips the provider refresh */
	int parallelism;
};
#define TPF_COMMON_OPTS_INIT { "tpuform.yaml", 0, 0, 1, 0, 1, 10 }

/* Flags every command that reads a fleet accepts (must end the table with {0}). */
#define TPF_COMMON_FLAGS(o)                                                                    \
	{ "file", "f", TPF_FLAG_STRING, &(o).file, "fleet file (default tpuform.yaml)" },       \
	{ "no-color", NULL, TPF_FLAG_BOOL, &(o).no_color, "no ANSI colour" },                   \
	{ "json", NULL, TPF_FLAG_BOOL, &(o).json, "machine-readable JSON Lines" }

/* The engine's session options for these flags, with the progress printer
 * (tpf_ui_session_progress) wired in. o->file is borrowed. */
struct tpf_session_opts tpf_cmd_session_opts(const struct tpf_common_opts *o);
/* tpf_session_open with tpf_cmd_session_opts(o). */
int tpf_cmd_session_open(struct tpf_session *s, const struct tpf_common_opts *o, const char *lock_op);
/* The session progress printer (engine/session.h tpf_session_progress_fn):
 * Terraform's "Acquiring state lock..." and "NAME: Refreshing state..."
 * lines; nothing in json mode. */
void tpf_ui_session_progress(const struct tpf_session_progress *ev, void *ctx);

/* ---- subcommands ------------------------------------------------------------ */

int cmd_plan(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_destroy(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_state(int argc, char **argv);
int cmd_local(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_ssh(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_watch(int argc, char **argv);

/* Shared by apply and destroy (cmd/apply.c): read the apply settings from
 * the environment, ask for "yes" unless auto_approve, carry p out with
 * tpf_session_apply and print the recap and Terraform's closing line.
 * Returns an exit code; diagnostics are left in s->d for the caller. */
int tpf_run_apply(struct tpf_session *s, struct tpf_plan *p, int auto_approve, int destroy);

/* Signal handling: SIGINT/SIGTERM set this; apply starts nothing new. */
extern volatile int tpf_interrupted;
void tpf_install_signal_handlers(void);

#endif
