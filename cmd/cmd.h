/*
 * The command-line layer: a command table (git's commands[] with
 * RUN_SETUP, libgit2's cli_opt tables), one file per command as git's
 * builtin/, and one dispatcher that does set-up, diagnostics and exit codes
 * for all of them (cmd/dispatch.c). Only cmd/ prints for people and decides
 * exit codes; command bodies keep their own logic and printing.
 *
 * Adding a command: write cmd/NAME.c with a static options struct, a static
 * flag table pointing into it, a body `static int run(struct tpf_cmd_ctx *)`
 * and `const struct tpf_cmd tpf_cmd_NAME`; list it in cmd/commands.c.
 */
#ifndef TPF_CMD_H
#define TPF_CMD_H

#include <stdio.h>
#include "engine/apply/apply.h"
#include "engine/pipeline/pipeline.h"
#include "engine/pipeline/targeted.h"
#include "model/worker_set.h"
#include "config/config.h"
#include "plan/plan.h"
#include "providers/provider.h"
#include "state/lock.h"
#include "state/state.h"
#include "util/diag.h"
#include "providers/transport.h"

/* Exit codes: Terraform's contract (docs/terraform-behaviour.md section 2).
 * A read-only command stopped by SIGINT or SIGTERM dies of the signal, so
 * its shell reports 130 or 143 (cmd/signals.c). */
#define TPF_EXIT_OK 0
#define TPF_EXIT_ERROR 1
#define TPF_EXIT_CHANGES 2 /* only with -detailed-exitcode */
#define TPF_EXIT_NOT_DECLARED 3 /* plan -detailed-exitcode: no changes, not as declared */

/* ---- flags (cmd/args.c) -------------------------------------------------- */

enum tpf_flag_type {
	TPF_FLAG_BOOL, TPF_FLAG_STRING, TPF_FLAG_INT, TPF_FLAG_DURATION, TPF_FLAG_LIST,
	TPF_FLAG_WORKERS, /* -worker: N, A-B, A,B or all (model/worker_set.h) */
};

/* A repeatable string flag's values, in the order given (Terraform's
 * -target=A -target=B). items point into argv; the array is the list's
 * own, freed by tpf_flag_list_release (the dispatcher does it after the
 * command ran). */
struct tpf_flag_list {
	const char **items;
	size_t n;
};
void tpf_flag_list_release(struct tpf_flag_list *l);

struct tpf_flag {
	const char *name;       /* without dashes: "auto-approve" */
	const char *alias;      /* another accepted name ("f" for "file"), may be NULL */
	enum tpf_flag_type type;
	void *target;           /* int* (bool, int), const char** (string), double* (seconds),
				 * struct tpf_flag_list* (list), struct tpf_worker_set* (workers) */
	const char *help;       /* one line; NULL hides the flag from help */
	const char *value;      /* the value's name in help ("FILE"); NULL: by type */
	int min, max;           /* TPF_FLAG_INT: the accepted range, inclusive */
};

/* Table entries (designated initialisers, so new fields default to 0). */
#define TPF_BOOL(n, t, h) { .name = (n), .type = TPF_FLAG_BOOL, .target = (t), .help = (h) }
#define TPF_STR(n, v, t, h) \
	{ .name = (n), .type = TPF_FLAG_STRING, .target = (t), .help = (h), .value = (v) }
#define TPF_INT(n, lo, hi, t, h) \
	{ .name = (n), .type = TPF_FLAG_INT, .target = (t), .help = (h), .min = (lo), .max = (hi) }
#define TPF_DUR(n, t, h) { .name = (n), .type = TPF_FLAG_DURATION, .target = (t), .help = (h) }
#define TPF_LIST(n, v, t, h) \
	{ .name = (n), .type = TPF_FLAG_LIST, .target = (t), .help = (h), .value = (v) }
#define TPF_WORKERS(n, t, h) \
	{ .name = (n), .type = TPF_FLAG_WORKERS, .target = (t), .help = (h), .value = "WORKERS" }
#define TPF_FLAGS_END { .name = NULL }

/* What parsing found besides flags: positional arguments before "--"
 * (args) and after it (rest). Both arrays point into argv; the caller
 * frees the arrays (tpf_parsed_release). */
struct tpf_parsed {
	char **args;
	int nargs;
	char **rest;
	int nrest;
	int dashdash; /* "--" was given */
};
void tpf_parsed_release(struct tpf_parsed *p);

/*
 * Terraform-style flags: "-name", "--name", "-name=value", "-name value",
 * and for booleans "-name=true|false". Flags and positional arguments may
 * be mixed; "--" ends the flags. `flags` ends with TPF_FLAGS_END. An
 * unknown flag, a missing or bad value, or an int out of its range is
 * TPF_ERROR with a diagnostic in d (naming `cmd`, e.g. "state rm", for the
 * hint); *out is then released. Durations: util/timeutil.h.
 */
int tpf_parse_flags(const char *cmd, int argc, char **argv, const struct tpf_flag *flags,
		    struct tpf_parsed *out, struct tpf_diags *d);
/* The options listing of a help text: one line per visible flag with its
 * default (read from the target now: call before parsing). */
void tpf_print_flags(FILE *out, const struct tpf_flag *flags);
/* One flag as that listing shows it: into name "-f, -file=FILE", into def
 * its range and default " (1 to 256; default 10)" or "" (read from the
 * target now). Both truncated to their buffers (64 and 96 bytes suffice).
 * For the man pages (cmd/man.c). */
void tpf_flag_describe(const struct tpf_flag *f, char *name, size_t nlen, char *def, size_t dlen);

/* ---- the command table (cmd/commands.c, cmd/dispatch.c, cmd/help.c) ------ */

/* What a command needs before its body runs; the dispatcher provides it. */
enum tpf_cmd_needs {
	TPF_CMD_FILE = 1 << 0,        /* takes -f FILE (default tpuform.yaml) */
	TPF_CMD_FLEET = 1 << 1,       /* the dispatcher loads the fleet file (implies FILE) */
	TPF_CMD_STATE = 1 << 2,       /* ... and the state */
	TPF_CMD_LOCK = 1 << 3,        /* ... holding the state lock (lock_op); -lock, -lock-timeout */
	TPF_CMD_PROVIDER = 1 << 4,    /* ... and opens the provider */
	TPF_CMD_JSON = 1 << 5,        /* takes -json: one JSON document on stdout */
	TPF_CMD_JSON_LINES = 1 << 6,  /* takes -json: JSON Lines on stdout, "version" first */
	TPF_CMD_REFRESH = 1 << 7,     /* takes -refresh=false */
	TPF_CMD_PARALLELISM = 1 << 8, /* takes -parallelism=N */
	TPF_CMD_REST = 1 << 9,        /* takes words after "--" (rest_name, at least one) */
	TPF_CMD_REST_OPTIONAL = 1 << 10, /* with TPF_CMD_REST: the words may be left out */
	/* ... and (with PROVIDER) lists what is live before the body, as git's
	 * RUN_SETUP sets up before the builtin: s.live from the provider
	 * (engine/pipeline/refresh.h tpf_refresh; no worker probe, no source, no plan),
	 * for the commands that act on workers (cp, exec, ssh, logs,
	 * ssh-config). A failed listing is exit 1 and the body does not run. */
	TPF_CMD_LIVE = 1 << 11,
};

/* What SIGINT and SIGTERM do while the command runs (cmd/signals.c). */
enum tpf_cmd_signals {
	TPF_SIG_NONE,     /* left as they are (help, version) */
	TPF_SIG_STOP,     /* read-only: the first one ends the process */
	TPF_SIG_GRACEFUL, /* mutating: the first one sets tpf_interrupted (start
			   * nothing new, record state), the second exits 1 at once */
	TPF_SIG_FORWARD,  /* remote commands (exec, ssh -- CMD, ssh -L): each one
			   * raises tpf_interrupted (1: send SIGINT to the remote
			   * commands, 2: SIGKILL), the third exits 130 at once */
};

struct tpf_cmd_ctx;

/* What a command's positional arguments are, for shell completion (node
 * names, remote paths, local files) and the "a fleet file where a node or a
 * saved plan goes" hint. Unset (0): plain values. */
enum tpf_cmd_args {
	TPF_ARGS_VALUE = 0,
	TPF_ARGS_COMMAND,  /* help: a command name */
	TPF_ARGS_NODE,     /* a node name first (the rest may be other values) */
	TPF_ARGS_REMOTE,   /* cp: local files and NODE:paths */
	TPF_ARGS_PLANFILE, /* a saved plan */
	TPF_ARGS_FILE,     /* some other local file */
};

struct tpf_cmd {
	const char *name;
	const char *summary;     /* one line, for 'tpuform help' */
	const char *description; /* the help paragraph (lines of "  text\n"), may be NULL */
	const char *footer;      /* printed after the options, may be NULL */
	const struct tpf_flag *flags; /* the command's own, TPF_FLAGS_END-ended; may be NULL */
	int min_args, max_args;  /* positional arguments before "--"; max -1: any number */
	const char *args_name;   /* for the usage line: "NODE", "[PLANFILE]", "NODE..." */
	enum tpf_cmd_args args;  /* what those arguments are */
	const char *rest_name;   /* TPF_CMD_REST: "COMMAND..." */
	const struct tpf_cmd *const *subs; /* NULL-ended subcommands; then run is NULL */
	unsigned needs;          /* enum tpf_cmd_needs */
	const char *lock_op;     /* TPF_CMD_LOCK: Terraform's operation name for the lock info */
	enum tpf_cmd_signals signals;
	int (*run)(struct tpf_cmd_ctx *ctx); /* returns an exit code */
	/* May be NULL. Called after the session opened and before what is live
	 * is listed (TPF_CMD_LIVE), so that a usage error costs no API call:
	 * checks what flag parsing could not (exec: NODE or -all), and may
	 * drop needs from ctx->needs (logs -previous reads kept logs, so no
	 * TPF_CMD_LIVE). Returns an exit code; not 0: the body does not run,
	 * diagnostics in ctx->d. */
	int (*check)(struct tpf_cmd_ctx *ctx);
	/* The man page's EXIT STATUS when the command's codes are its own
	 * (exec, ssh): NULL-ended pairs {code, meaning, ...}; NULL: 0 and 1,
	 * with plan's 2 and 3 for a -detailed-exitcode flag (cmd/man.c). The
	 * signals' codes are added from `signals`. */
	const char *const *exit_status;
	int hidden;              /* left out of 'tpuform help' (still listed by -commands) */
};

/* The flags every fleet command may take (which ones: cmd->needs). */
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
#define TPF_PARALLELISM_MAX 256

/* What a command body gets. */
struct tpf_cmd_ctx {
	const struct tpf_cmd *cmd;
	const struct tpf_cmd *const *commands; /* tpf_commands, for `help` (borrowed) */
	unsigned needs;           /* cmd->needs, less what cmd->check dropped */
	char path[64];            /* "plan", "state rm": for messages */
	struct tpf_common_opts o;
	char **args;              /* positional arguments (nargs of them, borrowed) */
	int nargs;
	char **rest;              /* words after "--" (TPF_CMD_REST) */
	int nrest;
	struct tpf_pipeline s;     /* opened as cmd->needs says; always initialised */
	struct tpf_diags *d;      /* &s.d: the dispatcher prints these after the body */
	size_t printed_errors;    /* errors the body already printed (tpf_cmd_print_diags) */
};

/* The commands, one file each (cmd/NAME.c). */
extern const struct tpf_cmd tpf_cmd_validate, tpf_cmd_plan, tpf_cmd_apply, tpf_cmd_destroy,
	tpf_cmd_watch, tpf_cmd_show, tpf_cmd_logs, tpf_cmd_exec, tpf_cmd_ssh, tpf_cmd_state,
	tpf_cmd_import, tpf_cmd_local, tpf_cmd_version, tpf_cmd_help, tpf_cmd_force_unlock,
	tpf_cmd_accelerators, tpf_cmd_report, tpf_cmd_prices, tpf_cmd_cp, tpf_cmd_ssh_config;

/* The words after "--" (ctx->rest) joined with single spaces, as ssh(1)
 * joins the words of its command before the remote shell splits them
 * again (OpenSSH ssh.c); "" when there are none. Shared by exec and ssh
 * (cmd/args.c). Returns a new string the caller frees; never NULL. */
char *tpf_cmd_rest_command(const struct tpf_cmd_ctx *ctx);

/* Run the words after "--" on the n targets t at once, as `exec` does:
 * output lines prefixed "NODE/wN | ", then one status line per worker
 * (cmd/cmd_exec.c; also `ssh -- CMD` on several workers). secrets: source
 * the job's secrets too. Returns the worst worker's status (255: could
 * not run); diagnostics go to ctx->d. */
struct tpf_chore_target;
int tpf_cmd_exec_on(struct tpf_cmd_ctx *ctx, struct tpf_chore_target *t, size_t n, int secrets);

/* Every top-level command, in help order, NULL-ended (cmd/commands.c).
 * Only the dispatcher and main read it; a command gets it in ctx->commands. */
extern const struct tpf_cmd *const tpf_commands[];

/* The command called `name` among cmds (NULL-ended), or NULL (cmd/help.c). */
const struct tpf_cmd *tpf_cmd_find(const struct tpf_cmd *const *cmds, const char *name);

/* Run argv[0] (a command name) with the rest of argv: find the command
 * and subcommand, parse flags, check positional counts, set up per needs,
 * run the body, print diagnostics, tear down. Returns the exit code.
 * no_color: -no-color was given before the command. */
int tpf_cmd_dispatch(int argc, char **argv, int no_color);

/* Is -json among the arguments (before "--")? Then even a flag error comes
 * out as a JSON Lines "diagnostic" message. */
int tpf_cmd_wants_json(int argc, char **argv);

/* Print the body's diagnostics now (before a closing line), remembering
 * their errors for the exit code; ctx->d ends empty (cmd/print_diags.c). */
void tpf_cmd_print_diags(struct tpf_cmd_ctx *ctx);

/* Help (cmd/help.c). tpf_help_command: "Usage: tpuform PATH ...", the
 * description, subcommands or options; path is "state rm" for a sub.
 * tpf_help_overview: "Usage: tpuform ...", the commands of cmds (NULL-ended)
 * and the global options; tpf_help_usage is that for tpf_commands
 * (cmd/commands.c). */
void tpf_help_overview(FILE *out, const struct tpf_cmd *const *cmds);
void tpf_help_usage(FILE *out);
void tpf_help_command(FILE *out, const struct tpf_cmd *c, const char *path);
/* The usage line alone ("tpuform logs [options] NODE"), into buf. */
void tpf_help_usage_line(const struct tpf_cmd *c, const char *path, char *buf, size_t len);
/* The flags a command takes: the common ones its needs ask for (pointing
 * into o), its own, then -help (pointing at *help). Caller frees. */
struct tpf_flag *tpf_cmd_flags(const struct tpf_cmd *c, struct tpf_common_opts *o, int *help);

/* ---- signals (cmd/signals.c) --------------------------------------------- */

/* Set by the first SIGINT/SIGTERM of a TPF_SIG_GRACEFUL command: start
 * nothing new. Read by the engine through its `interrupted` options. */
extern volatile int tpf_interrupted;
void tpf_signals_install(enum tpf_cmd_signals kind);

/* ---- the user interface (cmd/ui.c) ---------------------------------------- */

struct tpf_ui {
	int color; /* ANSI colour on stdout */
	int json;  /* -json: machine-readable stdout */
	int plain; /* -no-color: diagnostics without the box, as Terraform's */
	pthread_mutex_t mu;
};
extern struct tpf_ui tpf_ui; /* the one global of the program */

/* Colour on unless -no-color, NO_COLOR is set, or stdout is not a terminal. */
void tpf_ui_init(int no_color, int json);
/* Print every diagnostic (human: Terraform's boxed form on stderr; json: lines). */
void tpf_ui_diags(const struct tpf_diags *d);
/* One JSON Lines message (docs/terraform-behaviour.md section 5): adds
 * @level, @message, @module "tpuform.ui", @timestamp and type; steals
 * `extra` (may be NULL). */
void tpf_ui_json(const char *level, const char *type, const char *message, json_t *extra);
/* The first JSON Lines message, type "version" (Terraform's -json starts so). */
void tpf_ui_json_version(void);
/* Human progress line on stdout (no-op in json mode). */
void tpf_ui_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Each line of text as "NODE/wN | line" (the lines of many workers can be
 * told apart, as `gcloud ... ssh --worker=all` users do by hand). */
void tpf_ui_prefixed(const char *node, int worker, const char *text);
/* The apply event printer (engine/apply/apply.h tpf_event_fn). */
void tpf_ui_event(const struct tpf_event *ev, void *ctx);
/* Ansible's PLAY RECAP. */
void tpf_ui_recap(const struct tpf_recap *r);
/* Print a plan: human text, or planned_change + change_summary lines. */
void tpf_ui_plan(const struct tpf_plan *p);
/* One "Budget: ..." line per budget of the session (plan/budget.h
 * tpf_budget_describe), or a "budget" JSON line each under -json. */
void tpf_ui_budgets(const struct tpf_pipeline *s);
/* Ask for "yes" on the terminal: "Only 'yes' will be accepted to <verb>."
 * (Terraform says "confirm" for destroy and force-unlock, "approve" for
 * apply). Returns 1 only for "yes". */
int tpf_ui_confirm(const char *question, const char *explain, const char *verb);

/* ---- the pipeline, command side (cmd/ui_progress.c) --------------------- */

/* The engine's session options for the common flags and this command's
 * needs, with the progress printer wired in. o->file is borrowed. */
struct tpf_pipeline_opts tpf_cmd_session_opts(const struct tpf_common_opts *o, unsigned needs);
/* The session progress printer (engine/pipeline/pipeline.h tpf_pipeline_progress_fn):
 * Terraform's "Acquiring state lock..." and "NAME: Refreshing state..."
 * lines; nothing in json mode. */
void tpf_ui_session_progress(const struct tpf_pipeline_progress *ev, void *ctx);

/* Shared by apply and destroy (cmd/cmd_apply_run.c): read the apply settings
 * from the environment, ask for "yes" unless auto_approve, carry p out with
 * tpf_pipeline_apply, print the recap and an honest closing line: "Apply
 * complete!" only when everything succeeded, else the errors and what was
 * and was not done. Returns an exit code (1 after any failure or an
 * interrupt, as Terraform); diagnostics are printed before the last line. */
int tpf_run_apply(struct tpf_cmd_ctx *ctx, struct tpf_plan *p, int auto_approve, int destroy);

/* ---- the targeted operations (cmd/targeting.c) ------------------------------- */

/* The plan mode of a command's flags (lists may be NULL; borrowed). */
struct tpf_plan_mode tpf_cmd_plan_mode(int destroy, int refresh_only,
				       const struct tpf_flag_list *targets,
				       const struct tpf_flag_list *replace);
/* Terraform's "Resource targeting is in effect" warning, into ctx->d:
 * after a plan made with -target. */
void tpf_cmd_warn_targeting(struct tpf_cmd_ctx *ctx);
/* Terraform's "Applied changes may be incomplete" warning, into ctx->d:
 * after applying a plan made with -target. */
void tpf_cmd_warn_incomplete(struct tpf_cmd_ctx *ctx);
/* apply PLANFILE with planning options: TPF_ERROR with a diagnostic
 * (Terraform ignores them silently; a saved plan is applied as planned). */
int tpf_cmd_refuse_with_planfile(struct tpf_cmd_ctx *ctx, const struct tpf_plan_mode *m);

#endif
