/*
 * tpuform exec NODE|-all -- COMMAND...: run COMMAND with /bin/sh on every
 * worker at once (the workers of a multi-host job must all get it), print
 * the output prefixed "NODE/wN | ", then each worker's exit status.
 */
#include "cmd/cmd.h"
#include "engine/refresh.h"
#include "util/pool.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static struct {
	int all, worker;
} exec_o = { 0, -1 };

static const struct tpf_flag exec_flags[] = {
	TPF_BOOL("all", &exec_o.all, "every node of the fleet (then no NODE)"),
	TPF_INT("worker", 0, 4095, &exec_o.worker, "only this worker, else every worker"),
	TPF_FLAGS_END,
};

struct exec_task {
	struct tpf_transport *t;
	const struct tpf_state_node *sn;
	const struct tpf_live_node *ln;
	int worker;
	struct tpf_buf out;
	int status, rc;
	struct tpf_diags d;
};

struct exec_run {
	struct exec_task *tasks;
	size_t n;
	const char *command;
};

/* A tpf_pool_fn: one worker. */
static void exec_one(size_t i, void *arg)
{
	struct exec_run *run = arg;
	struct exec_task *e = &run->tasks[i];
	struct tpf_worker_ref ref = {
		.node = e->sn->name, .node_id = e->sn->id, .worker = e->worker,
		.nworkers = (int)e->sn->nworkers,
		.endpoint = (size_t)e->worker < e->ln->nendpoints ? &e->ln->endpoints[e->worker] : NULL,
		.host_key = e->sn->workers[e->worker].host_key,
	};
	struct tpf_conn *c = NULL;
	e->rc = e->t->ops->connect(e->t, &ref, &c, NULL, &e->d);
	if (!e->rc) {
		e->rc = e->t->ops->exec(c, run->command, &e->out, &e->status, 0, &e->d);
		e->t->ops->close(c);
	}
}

static void add_task(struct exec_run *run, struct tpf_transport *t, struct tpf_state_node *sn,
		     const struct tpf_live_node *ln, int w)
{
	struct exec_task *e = &run->tasks[run->n++];
	memset(e, 0, sizeof(*e));
	e->t = t;
	e->sn = sn;
	e->ln = ln;
	e->worker = w;
	tpf_buf_init(&e->out);
	tpf_diags_init(&e->d);
}

/* The workers to run on: NODE's or every node's, all or -worker's. */
static void collect(struct tpf_session *s, const char *node, struct exec_run *run)
{
	size_t cap = 0;
	for (size_t i = 0; i < s->state.nnodes; i++)
		cap += s->state.nodes[i].nworkers;
	run->tasks = xcalloc(cap ? cap : 1, sizeof(*run->tasks));
	for (size_t i = 0; i < s->state.nnodes; i++) {
		struct tpf_state_node *sn = &s->state.nodes[i];
		const struct tpf_live_node *ln;
		struct tpf_transport *t;
		if ((node && strcmp(sn->name, node)) ||
		    tpf_session_target_worker(s, sn->name, exec_o.worker, &sn, &ln, &t))
			continue;
		if (exec_o.worker >= 0) {
			add_task(run, t, sn, ln, exec_o.worker);
			continue;
		}
		for (size_t w = 0; w < sn->nworkers; w++)
			add_task(run, t, sn, ln, (int)w);
	}
}

/* Output, then one status line per worker. Returns the exit code. */
static int report(struct exec_run *run, struct tpf_diags *d)
{
	int code = run->n ? TPF_EXIT_OK : TPF_EXIT_ERROR;
	for (size_t i = 0; i < run->n; i++) {
		tpf_buf_rtrim(&run->tasks[i].out);
		tpf_ui_prefixed(run->tasks[i].sn->name, run->tasks[i].worker, run->tasks[i].out.buf);
	}
	tpf_ui_say("\n");
	for (size_t i = 0; i < run->n; i++) {
		struct exec_task *e = &run->tasks[i];
		if (e->rc)
			tpf_ui_say("%s/w%d : %s\n", e->sn->name, e->worker,
				   e->rc == TPF_EUNREACHABLE ? "unreachable"
				   : e->rc == TPF_EHOSTKEY ? "refused: host key changed (see below)"
							   : "failed (see below)");
		else
			tpf_ui_say("%s/w%d : exit=%d\n", e->sn->name, e->worker, e->status);
		if (e->rc || e->status)
			code = TPF_EXIT_ERROR;
		tpf_diags_move(d, &e->d);
	}
	return code;
}

static int run_exec(struct tpf_cmd_ctx *ctx)
{
	struct tpf_session *s = &ctx->s;
	const char *node = ctx->nargs ? ctx->args[0] : NULL;
	if (!node == !exec_o.all) {
		tpf_errorx(&s->d, NULL, "Usage: tpuform exec [options] NODE|-all -- COMMAND...",
			   node ? "exec takes NODE or -all, not both (got '%s' and -all)"
				: "exec needs NODE or -all%s",
			   node ? node : "");
		return TPF_EXIT_ERROR;
	}
	if (tpf_refresh(s->prov, &s->fleet, &s->state, &s->live, &s->d))
		return TPF_EXIT_ERROR;
	if (node && !tpf_state_find(&s->state, node)) {
		tpf_errorx(&s->d, NULL, "'tpuform state list' shows the nodes in state.",
			   "node '%s' is not in the state of fleet '%s'", node, s->fleet.name);
		return TPF_EXIT_ERROR;
	}
	struct tpf_buf command = TPF_BUF_INIT;
	for (int i = 0; i < ctx->nrest; i++)
		tpf_buf_addf(&command, "%s%s", i ? " " : "", ctx->rest[i]);
	struct exec_run run = { .command = command.buf };
	collect(s, node, &run);
	/* Every worker at once: a multi-host job needs all of them. */
	tpf_pool_run(run.n, (int)run.n, exec_one, &run, NULL);
	int code = report(&run, &s->d);
	for (size_t i = 0; i < run.n; i++) {
		tpf_buf_release(&run.tasks[i].out);
		tpf_diags_release(&run.tasks[i].d);
	}
	free(run.tasks);
	tpf_buf_release(&command);
	return code;
}

const struct tpf_cmd tpf_cmd_exec = {
	.name = "exec",
	.summary = "Run a command on every worker of a node (or all nodes)",
	.description = "  Run COMMAND with /bin/sh on every worker at once; output lines are\n"
		       "  prefixed NODE/wN |, then each worker's exit status is listed. The\n"
		       "  command goes after \"--\"; its words are joined with spaces.\n",
	.footer = "Exit status: 0 when every worker ran it and exited 0, else 1.\n",
	.flags = exec_flags,
	.min_args = 0,
	.max_args = 1,
	.args_name = "NODE|-all",
	.rest_name = "COMMAND...",
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_PROVIDER | TPF_CMD_REST,
	.signals = TPF_SIG_STOP,
	.run = run_exec,
};
