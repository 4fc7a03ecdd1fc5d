/*
 * What a worker's shell can take: env values, secrets, setup and run are
 * checked here, at validate time, against the limits of Linux execve(2),
 * so that a fleet file that validates cannot fail on every worker with
 * "Argument list too long".
 *
 * The bootstrap script (templates/render.c) exports env and secrets, and
 * runs setup and run as `sh -c "$TPUFORM_RUN"`. So:
 *   - each exported "NAME=value" string, and setup and run each, must fit
 *     one execve string: MAX_ARG_STRLEN, 32 pages = 131072 bytes with the
 *     NUL (include/uapi/linux/binfmts.h; execve(2), "Limits on size of
 *     arguments and environment");
 *   - all of them together must fit ARG_MAX, which Linux sets to a quarter
 *     of the stack limit (2 MiB with the usual 8 MiB stack). tpuform uses
 *     half of that, 1 MiB, and leaves the rest for the worker's own
 *     environment (PATH, HOME, ...) and the TPUFORM_* variables.
 * Secret values are measured but never shown.
 */
#include "config/config.h"
#include "config/config_limits.h"

#include <stdio.h>
#include <string.h>

struct budget {
	const struct tpf_fleet *f;
	const struct tpf_group *g; /* NULL: fleet level */
	struct tpf_diags *d;
	size_t total;
	int failed;
};

/* "fleet.yaml:3:5: in group 'g': " or "fleet.yaml: " */
static void refuse(struct budget *b, const char *hint, const char *what, size_t bytes, size_t limit)
{
	if (b->g)
		tpf_errorx(b->d, NULL, hint, "%s:%d:%d: in group '%s': %s is %zu bytes; a worker accepts at most %zu",
			   b->f->path, b->g->line, b->g->column, b->g->name ? b->g->name : "", what, bytes,
			   limit);
	else
		tpf_errorx(b->d, NULL, hint, "%s: %s is %zu bytes; a worker accepts at most %zu", b->f->path,
			   what, bytes, limit);
	b->failed = 1;
}

static void check_vars(struct budget *b, const struct tpf_kvlist *l, const char *kind, int secret)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct tpf_kv *kv = &l->items[i];
		size_t n = strlen(kv->key) + 1 + (kv->value ? strlen(kv->value) : 0) + 1;
		b->total += n;
		if (n > TPF_WORKER_STRING_MAX) {
			char what[160];
			snprintf(what, sizeof(what), "%s '%.100s' (NAME=value)", kind, kv->key);
			refuse(b, secret ? "keep large secrets in a file the job reads, e.g. from Cloud Storage"
					 : "put large values in a file in the repo and pass its path instead",
			       what, n, TPF_WORKER_STRING_MAX);
		}
	}
}

static void check_command(struct budget *b, const char *key, const char *cmd, size_t *largest)
{
	size_t n = cmd ? strlen(cmd) + 1 : 0;
	if (n > *largest)
		*largest = n;
	if (n > TPF_WORKER_STRING_MAX)
		refuse(b, "put the commands in a script in the repo and run that script", key, n,
		       TPF_WORKER_STRING_MAX);
}

/* One group's effective env (fleet env merged), secrets, setup and run. */
static void check_unit(struct budget *b, const struct tpf_kvlist *env, const char *setup,
		       const char *run)
{
	size_t largest = 0;
	b->total = 0;
	check_vars(b, env, "env", 0);
	check_vars(b, &b->f->secrets, "secret", 1);
	check_command(b, "setup", setup, &largest);
	check_command(b, "run", run, &largest);
	if (!b->failed && b->total + largest > TPF_WORKER_ENV_TOTAL_MAX)
		refuse(b, "move large values into files in the repo",
		       "env, secrets and the longer of setup and run together", b->total + largest,
		       TPF_WORKER_ENV_TOTAL_MAX);
}

int tpf_fleet_check_worker_limits(const struct tpf_fleet *f, struct tpf_diags *d)
{
	struct budget b = { .f = f, .d = d };
	if (f->ngroups == 0)
		check_unit(&b, &f->env, f->setup, f->run);
	for (size_t i = 0; i < f->ngroups && !b.failed; i++) {
		b.g = &f->groups[i];
		check_unit(&b, &b.g->env, b.g->setup, b.g->run);
	}
	return b.failed ? TPF_ERROR : 0;
}
