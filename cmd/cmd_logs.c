/*
 * tpuform logs NODE: the job log (or with -setup the setup log) of a
 * node's workers, each line prefixed "NODE/wN | ". -follow re-reads the
 * logs every second and prints the lines not shown yet. -previous prints
 * the logs kept before tpuform deleted the node (engine/workers/kept_logs.h).
 */
#include "cmd/cmd.h"
#include "engine/workers/kept_logs.h"
#include "engine/workers/provision.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static struct {
	int lines, follow, setup, previous, generation;
	struct tpf_worker_set workers;
} logs_o = { .lines = 20, .generation = -1 };

static const struct tpf_flag logs_flags[] = {
	TPF_WORKERS("worker", &logs_o.workers,
		    "only these workers: N, A-B, A,B or all (default: every worker)"),
	TPF_INT("n", 0, 100000000, &logs_o.lines, "the last N lines (0: all)"),
	TPF_BOOL("follow", &logs_o.follow, "keep printing new lines until interrupted"),
	TPF_BOOL("setup", &logs_o.setup,
		 "the output of the group's setup script (~/tpuform/logs/setup.log) instead"),
	TPF_BOOL("previous", &logs_o.previous,
		 "the logs kept before tpuform deleted the node (completed, replaced or "
		 "destroyed), newest generation first"),
	TPF_INT("generation", -1, 1000000000, &logs_o.generation,
		"with -previous: only this generation of the node (-1: every kept one)"),
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
		if (!tpf_worker_set_has(&logs_o.workers, (int)w))
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

/* The last `lines` lines of text (0: all). */
static const char *last_lines(const char *text, int lines)
{
	size_t n = count_lines(text);
	return lines > 0 && n > (size_t)lines ? line_start(text, n - (size_t)lines) : text;
}

/* -previous: the kept logs of node, newest generation first, a line
 * naming each generation before its workers' lines. */
static int show_previous(struct tpf_cmd_ctx *ctx, struct tpf_kept_store *ks, const char *node)
{
	struct tpf_kept_log *k;
	size_t n, shown = 0;
	if (tpf_kept_list(ks, node, &k, &n, ctx->d))
		return TPF_EXIT_ERROR;
	int gen = -1, failed = 0;
	for (size_t i = 0; i < n; i++) {
		if (!tpf_worker_set_has(&logs_o.workers, k[i].worker) ||
		    (logs_o.generation >= 0 && k[i].generation != logs_o.generation))
			continue;
		struct tpf_buf text = TPF_BUF_INIT;
		if (tpf_kept_read(ks, node, &k[i], &text, ctx->d)) {
			failed++;
			tpf_buf_release(&text);
			continue;
		}
		if (k[i].generation != gen)
			printf("%s==> %s generation %d (kept before its delete) <==\n", shown ? "\n" : "",
			       node, k[i].generation);
		gen = k[i].generation;
		tpf_ui_prefixed(node, k[i].worker, last_lines(text.buf ? text.buf : "", logs_o.lines));
		tpf_buf_release(&text);
		shown++;
	}
	tpf_kept_free(k, n);
	if (shown || failed)
		return failed ? TPF_EXIT_ERROR : TPF_EXIT_OK;
	char *where = tpf_kept_where(ks, node);
	tpf_errorx(ctx->d, NULL,
		   "Logs are kept when tpuform deletes a node whose workers it can reach "
		   "(docs/commands.md \"logs\").",
		   "no logs of node '%s'%s were kept in %s", node,
		   tpf_worker_set_max(&logs_o.workers) >= 0 || logs_o.generation >= 0
			   ? " (for that -worker or -generation)"
								: "",
		   where);
	free(where);
	return TPF_EXIT_ERROR;
}

static int run_previous(struct tpf_cmd_ctx *ctx)
{
	if (logs_o.follow || logs_o.setup) {
		tpf_errorx(ctx->d, NULL, "Kept logs do not grow, and only job logs are kept.",
			   "-previous cannot be used with %s", logs_o.follow ? "-follow" : "-setup");
		return TPF_EXIT_ERROR;
	}
	struct tpf_kept_store *ks;
	if (tpf_kept_open(&ks, &ctx->s.fleet, ctx->d))
		return TPF_EXIT_ERROR;
	int rc = show_previous(ctx, ks, ctx->args[0]);
	tpf_kept_close(ks);
	return rc;
}

/* A node that cannot be read now (not READY, missing, not in state): the
 * error also says where its kept logs are. */
static void point_at_previous(struct tpf_pipeline *s, const char *node)
{
	struct tpf_diag *last = s->d.n ? &s->d.items[s->d.n - 1] : NULL;
	struct tpf_kept_store *ks;
	struct tpf_diags quiet = TPF_DIAGS_INIT;
	if (!last || (last->code != TPF_DIAG_NOT_READY && last->code != TPF_DIAG_NOT_IN_STATE) ||
	    tpf_kept_open(&ks, &s->fleet, &quiet)) {
		tpf_diags_release(&quiet);
		return;
	}
	char *where = tpf_kept_where(ks, node);
	char *detail = xasprintf("%s%sLogs kept before tpuform deleted it are in %s: "
				 "'tpuform logs %s -previous' shows them.",
				 last->detail ? last->detail : "", last->detail ? "\n" : "", where,
				 node);
	free(last->detail);
	last->detail = detail;
	free(where);
	tpf_kept_close(ks);
	tpf_diags_release(&quiet);
}

/* -previous reads the kept logs: nothing live is needed. */
static int check_logs(struct tpf_cmd_ctx *ctx)
{
	if (logs_o.previous)
		ctx->needs &= ~(unsigned)TPF_CMD_LIVE;
	return TPF_EXIT_OK;
}

static int run_logs(struct tpf_cmd_ctx *ctx)
{
	struct tpf_pipeline *s = &ctx->s;
	struct target tg;
	if (logs_o.previous)
		return run_previous(ctx);
	if (tpf_pipeline_target_worker(s, ctx->args[0], tpf_worker_set_max(&logs_o.workers), &tg.sn,
				      &tg.ln, &tg.t)) {
		point_at_previous(s, ctx->args[0]);
		return TPF_EXIT_ERROR;
	}
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
	.description = "  Print the job log of the node's workers (or -worker N, A-B, A,B or all, as\n"
		       "  gcloud's --worker), each worker's lines in turn, prefixed NODE/wN |.\n"
		       "  With -setup, print what the group's setup script wrote instead: where to\n"
		       "  look when provisioning failed at step \"setup\". With -previous, print\n"
		       "  the logs tpuform kept before it deleted the node (the last 1000 lines,\n"
		       "  at most 64 KiB, per worker; the newest 5 generations), beside the state.\n",
	.footer = "Ctrl-C ends -follow (exit status 130).\n",
	.flags = logs_flags,
	.min_args = 1,
	.max_args = 1,
	.args_name = "NODE",
	.args = TPF_ARGS_NODE,
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_PROVIDER | TPF_CMD_LIVE,
	.signals = TPF_SIG_STOP,
	.check = check_logs,
	.run = run_logs,
};
