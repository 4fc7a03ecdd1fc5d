/*
 * tpuform logs NODE: the job log (or with -setup the setup log) of a
 * node's workers, each line prefixed "NODE/wN | ". -follow re-reads the
 * logs every second and prints the lines not shown yet.
 */
#include "cmd/cmd.h"
#include "engine/provision.h"
#include "engine/refresh.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static struct {
	int worker, lines, follow, setup;
} logs_o = { -1, 20, 0, 0 };

static const struct tpf_flag logs_flags[] = {
	TPF_INT("worker", 0, 4095, &logs_o.worker, "only this worker, else every worker"),
	TPF_INT("n", 0, 100000000, &logs_o.lines, "the last N lines (0: all)"),
	TPF_BOOL("follow", &logs_o.follow, "keep printing new lines until interrupted"),
	TPF_BOOL("setup", &logs_o.setup,
		 "the output of the group's setup script (~/tpuform/logs/setup.log) instead"),
	TPF_FLAGS_END,
};

struct target {
	struct tpf_transport *t;
	struct tpf_state_node *sn;
	const struct tpf_live_node *ln;
};

static int read_log(const struct target *tg, int w, int lines, struct tpf_buf *out,
		    struct tpf_diags *d)
{
	return logs_o.setup ? tpf_provision_setup_log(tg->t, tg->sn, tg->ln, w, lines, out, d)
			    : tpf_provision_logs(tg->t, tg->sn, tg->ln, w, lines, out, d);
}

/* Lines in text, counting a last line without its newline. */
static size_t count_lines(const char *text)
{
	size_t n = 0;
	const char *p = text;
	for (; *p; p++)
		n += *p == '\n';
	return n + (p > text && p[-1] != '\n');
}

/* Where line `skip` (from 0) of text starts. */
static const char *line_start(const char *text, size_t skip)
{
	const char *p = text;
	for (; skip && *p; p++)
		if (*p == '\n')
			skip--;
	return p;
}

/* -follow: the first round prints the last `lines` lines (0: all), later
 * rounds the lines after the *seen already shown. */
static void print_new(const char *node, int w, const char *text, int first, size_t *seen)
{
	size_t n = count_lines(text);
	size_t from = first ? (logs_o.lines && n > (size_t)logs_o.lines ? n - (size_t)logs_o.lines : 0)
			    : *seen;
	if (n > from)
		tpf_ui_prefixed(node, w, line_start(text, from));
	*seen = n;
}

/* One pass over the chosen workers. Returns the number that failed. */
static int read_round(const struct target *tg, int round, size_t *seen, struct tpf_diags *d)
{
	int failed = 0;
	for (size_t w = 0; w < tg->sn->nworkers; w++) {
		if (logs_o.worker >= 0 && (int)w != logs_o.worker)
			continue;
		struct tpf_buf out = TPF_BUF_INIT;
		/* Following reads whole logs, to know which lines are new. */
		if (read_log(tg, (int)w, logs_o.follow ? 0 : logs_o.lines, &out, d))
			failed++;
		else if (!logs_o.follow)
			tpf_ui_prefixed(tg->sn->name, (int)w, out.buf);
		else
			print_new(tg->sn->name, (int)w, out.buf, round == 0, &seen[w]);
		tpf_buf_release(&out);
	}
	return failed;
}

static int run_logs(struct tpf_cmd_ctx *ctx)
{
	struct tpf_session *s = &ctx->s;
	struct target tg;
	if (tpf_refresh(s->prov, &s->fleet, &s->state, &s->live, &s->d) ||
	    tpf_session_target_worker(s, ctx->args[0], logs_o.worker, &tg.sn, &tg.ln, &tg.t))
		return TPF_EXIT_ERROR;
	size_t *seen = xcalloc(tg.sn->nworkers ? tg.sn->nworkers : 1, sizeof(size_t));
	int failed = 0;
	for (int round = 0; !failed; round++) {
		failed = read_round(&tg, round, seen, &s->d);
		if (!logs_o.follow || tpf_interrupted)
			break;
		tpf_sleep(1);
	}
	free(seen);
	return failed ? TPF_EXIT_ERROR : TPF_EXIT_OK;
}

const struct tpf_cmd tpf_cmd_logs = {
	.name = "logs",
	.summary = "Print the job log (or setup log) of a node's workers",
	.description = "  Print the job log of the node's workers, each line prefixed NODE/wN |.\n"
		       "  With -setup, print what the group's setup script wrote instead: where to\n"
		       "  look when provisioning failed at step \"setup\".\n",
	.footer = "Ctrl-C ends -follow (exit status 130).\n",
	.flags = logs_flags,
	.min_args = 1,
	.max_args = 1,
	.args_name = "NODE",
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_PROVIDER,
	.signals = TPF_SIG_STOP,
	.run = run_logs,
};
