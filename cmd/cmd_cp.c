/*
 * tpuform cp [-r] [-worker WORKERS] [-all] SRC... DEST: scp to or from
 * every worker of a node (gcloud compute tpus tpu-vm scp --worker=all). A
 * remote path is NODE:PATH (with -all, :PATH); an empty PATH ("NODE:", as
 * in gcloud's own first scp example) is the job's checkout, as "NODE:.".
 * The work is engine/chores/copy.c.
 */
#include "cmd/cmd.h"
#include "engine/chores/chores.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
	int recursive, all;
	struct tpf_worker_set workers;
} cp_o;

static const struct tpf_flag cp_flags[] = {
	TPF_BOOL("r", &cp_o.recursive, "copy directories too (recursively), as scp -r"),
	TPF_BOOL("all", &cp_o.all, "every node of the fleet; remote paths are then :PATH"),
	TPF_WORKERS("worker", &cp_o.workers,
		    "only these workers: N, A-B, A,B or all (default: every worker)"),
	TPF_FLAGS_END,
};

/* scp's rule: NODE:PATH when a ':' comes before any '/'. *node (caller
 * frees) and *path (borrowed) then; 0 for a local path. An empty PATH is
 * "." (scp's "host:" is the login directory; here a relative path is in
 * the job's checkout, so "NODE:" is the checkout). */
static int split_remote(const char *arg, char **node, const char **path)
{
	const char *colon = strchr(arg, ':');
	const char *slash = strchr(arg, '/');
	if (!colon || (slash && slash < colon))
		return 0;
	*node = xstrndup(arg, (size_t)(colon - arg));
	*path = colon[1] ? colon + 1 : ".";
	return 1;
}

struct progress {
	pthread_mutex_t mu;
	const struct tpf_chore_target *t;
	unsigned long long *bytes;
	size_t n;
	double last;
};

/* On a terminal: one line, redrawn at most 5 times a second. */
static void on_progress(void *arg, size_t i, unsigned long long bytes)
{
	struct progress *p = arg;
	pthread_mutex_lock(&p->mu);
	p->bytes[i] = bytes;
	double now = tpf_now_mono();
	if (now - p->last >= 0.2) {
		p->last = now;
		/* Each worker's bytes while they fit on a line, else the total. */
		struct tpf_buf line = TPF_BUF_INIT;
		unsigned long long total = 0;
		char b[32];
		for (size_t k = 0; k < p->n; k++) {
			total += p->bytes[k];
			if (p->n <= 4)
				tpf_buf_addf(&line, "%s%s/w%d %s", k ? ", " : "", p->t[k].sn->name,
					     p->t[k].worker, tpf_fmt_bytes((size_t)p->bytes[k], b));
		}
		if (p->n > 4)
			tpf_buf_addf(&line, "%s over %zu workers", tpf_fmt_bytes((size_t)total, b), p->n);
		fprintf(stderr, "\r\033[Kcopying: %s", line.buf);
		tpf_buf_release(&line);
		fflush(stderr);
	}
	pthread_mutex_unlock(&p->mu);
}

/* Where the copy goes and which node: 0, or an error for people. */
static int parse_paths(struct tpf_cmd_ctx *ctx, struct tpf_copy_opts *o, char **node)
{
	struct tpf_diags *d = ctx->d;
	const char *usage = "Usage: tpuform cp [-r] [-worker WORKERS] [-all] SRC... DEST, where one "
			    "side is NODE:PATH (with -all, :PATH)";
	char *dnode = NULL;
	const char *dpath = NULL;
	int dest_remote = split_remote(ctx->args[ctx->nargs - 1], &dnode, &dpath);
	o->nsrc = (size_t)ctx->nargs - 1;
	const char **src = xcalloc(o->nsrc, sizeof(*src));
	o->src = src;
	o->download = !dest_remote;
	o->dest = dest_remote ? dpath : ctx->args[ctx->nargs - 1];
	*node = dnode;
	for (size_t i = 0; i < o->nsrc; i++) {
		char *snode = NULL;
		const char *spath = ctx->args[i];
		int remote = split_remote(ctx->args[i], &snode, &spath);
		src[i] = spath;
		if (remote == dest_remote) {
			free(snode);
			return tpf_errorx(d, NULL, usage, remote ? "cannot copy from workers to workers ('%s' to '%s')"
							    : "neither '%s' nor '%s' is on a worker (NODE:PATH)",
					  ctx->args[i], ctx->args[ctx->nargs - 1]);
		}
		if (remote && *node && strcmp(*node, snode)) {
			tpf_errorx(d, NULL, "copy from one node at a time, or use -all with :PATH",
				   "sources on two nodes ('%s' and '%s')", *node, snode);
			free(snode);
			return TPF_ERROR;
		}
		if (remote && !*node)
			*node = snode;
		else
			free(snode);
		if (!*spath)
			return tpf_errorx(d, NULL, usage, "empty path in '%s'", ctx->args[i]);
	}
	if (!*o->dest)
		return tpf_errorx(d, NULL, usage, "empty destination in '%s'", ctx->args[ctx->nargs - 1]);
	const char *named = *node ? *node : "";
	if (cp_o.all && *named)
		return tpf_errorx(d, NULL, "with -all, write remote paths as ':PATH'",
				  "-all copies to every node, but '%s:' names one", named);
	if (!cp_o.all && !*named)
		return tpf_errorx(d, NULL, "name the node (NODE:PATH), or add -all for every node",
				  "a remote path needs a node");
	return 0;
}

static int report(const struct tpf_chore_target *t, size_t n, struct tpf_copy_result *res,
		  int download, struct tpf_diags *d)
{
	int code = TPF_EXIT_OK;
	for (size_t i = 0; i < n; i++) {
		if (res[i].rc) {
			tpf_ui_say("%s/w%d : %s\n", t[i].sn->name, t[i].worker,
				   res[i].rc == TPF_EUNREACHABLE ? "unreachable" : "failed (see below)");
			code = TPF_EXIT_ERROR;
		} else {
			char b[32];
			tpf_ui_say("%s/w%d : %s %zu file%s, %s\n", t[i].sn->name, t[i].worker,
				   download ? "received" : "sent", res[i].files,
				   res[i].files == 1 ? "" : "s", tpf_fmt_bytes((size_t)res[i].bytes, b));
		}
		tpf_diags_move(d, &res[i].d);
		tpf_diags_release(&res[i].d);
	}
	return code;
}

/* The paths, before the dispatcher lists what is live; run_cp splits
 * them again (cheap, and nothing to free if the listing fails). */
static int check_cp(struct tpf_cmd_ctx *ctx)
{
	struct tpf_copy_opts o = { 0 };
	char *node = NULL;
	int rc = parse_paths(ctx, &o, &node);
	free((void *)o.src);
	free(node);
	return rc ? TPF_EXIT_ERROR : TPF_EXIT_OK;
}

static int run_cp(struct tpf_cmd_ctx *ctx)
{
	struct tpf_pipeline *s = &ctx->s;
	struct tpf_copy_opts o = { 0 };
	char *node = NULL;
	struct tpf_chore_target *t = NULL;
	size_t n = 0;
	int code = TPF_EXIT_ERROR;
	if (parse_paths(ctx, &o, &node) ||
	    tpf_chore_targets(s, cp_o.all ? NULL : node, &cp_o.workers, &t, &n))
		goto done;
	o.recursive = cp_o.recursive;
	struct progress p = { .t = t, .n = n, .bytes = xcalloc(n, sizeof(unsigned long long)) };
	pthread_mutex_init(&p.mu, NULL);
	if (isatty(STDERR_FILENO) && !ctx->o.json) {
		o.progress = on_progress;
		o.arg = &p;
	}
	struct tpf_copy_result *res = xcalloc(n, sizeof(*res));
	tpf_chore_copy(t, n, &o, res);
	if (o.progress && p.last > 0)
		fprintf(stderr, "\r\033[K");
	code = report(t, n, res, o.download, &s->d);
	pthread_mutex_destroy(&p.mu);
	free(p.bytes);
	free(res);
done:
	free(t);
	free((void *)o.src);
	free(node);
	return code;
}

const struct tpf_cmd tpf_cmd_cp = {
	.name = "cp",
	.summary = "Copy files to or from every worker of a node",
	.description =
		"  Copy files between this machine and the workers, as scp does, on every\n"
		"  worker of NODE at once (or some: -worker N, A-B, A,B or all, as gcloud's\n"
		"  --worker; or -all nodes). A remote path is NODE:PATH (with -all,\n"
		"  :PATH); a relative PATH is in the job's checkout (~/tpuform/src), and\n"
		"  so is an empty one (NODE: is NODE:.), ~/PATH in the home, /PATH\n"
		"  absolute. Uploads replace files atomically; the running job is not\n"
		"  restarted. Downloads go to DEST/NODE/wN/. One result line per worker.\n",
	.footer = "Examples:\n"
		  "  tpuform cp train.py my-node:\n"
		  "  tpuform cp cfg.yaml my-node:configs/ -worker 0-1\n"
		  "  tpuform cp -r data -all :data\n"
		  "  tpuform cp -r my-node:checkpoints out/\n\n"
		  "Exit status: 0 when every worker succeeded, else 1.\n",
	.flags = cp_flags,
	.min_args = 2,
	.max_args = -1,
	.args_name = "SRC... DEST",
	.args = TPF_ARGS_REMOTE,
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_PROVIDER | TPF_CMD_LIVE,
	.signals = TPF_SIG_STOP,
	.check = check_cp,
	.run = run_cp,
};
