/*
 * The chores' common ground (engine/chores/chores.h): which workers, connecting
 * to one, and `exec`: a command on many workers at once, streaming its
 * output line by line, with one stdin copied to all of them.
 */
#include "engine/chores/chores.h"
#include "model/node_state.h"
#include "util/pool.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tpf_chore_targets(struct tpf_pipeline *s, const char *node, const struct tpf_worker_set *workers,
		      struct tpf_chore_target **out, size_t *n)
{
	/* The largest worker named is the one a node may lack (-1: none). */
	int worker = workers ? tpf_worker_set_max(workers) : -1;
	size_t cap = 0;
	*n = 0;
	for (size_t i = 0; i < s->state.nnodes; i++)
		cap += s->state.nodes[i].nworkers;
	*out = xcalloc(cap ? cap : 1, sizeof(**out));
	for (size_t i = 0; i < s->state.nnodes; i++) {
		struct tpf_state_node *sn = &s->state.nodes[i];
		const struct tpf_live_node *ln;
		struct tpf_transport *t;
		if (node && strcmp(sn->name, node))
			continue;
		if (!node) {
			/* -all: a node that is not READY is left out, said once. */
			const struct tpf_live_node *l = tpf_live_set_find(&s->live, sn->name);
			if (!l || tpf_node_class(l->state) != TPF_NODE_READY) {
				tpf_warn(&s->d, sn->name, "node '%s' is left out: it is %s, not READY",
					 sn->name, l && l->state ? l->state : "missing");
				continue;
			}
		}
		if (tpf_pipeline_target_worker(s, sn->name, worker, &sn, &ln, &t))
			return TPF_ERROR;
		for (size_t w = 0; w < sn->nworkers; w++) {
			if (workers && !tpf_worker_set_has(workers, (int)w))
				continue;
			(*out)[(*n)++] = (struct tpf_chore_target){ sn, ln, t, (int)w };
		}
	}
	if (node && !*n && !tpf_state_find(&s->state, node))
		return tpf_errorc(&s->d, TPF_DIAG_NOT_IN_STATE, NULL,
				  "'tpuform state list' shows the nodes in state.",
				  "node '%s' is not in the state of fleet '%s'", node, s->fleet.name);
	if (!*n)
		return tpf_errorx(&s->d, NULL, "'tpuform show' shows the nodes and their states.",
				  "no READY worker to act on in fleet '%s'", s->fleet.name);
	return 0;
}

/* The worker as the transport knows it, from the state and live node. Not
 * read_only: like gcloud's ssh and scp, a chore puts the login key back on
 * a node that lost it. */
static struct tpf_worker_ref worker_ref(const struct tpf_chore_target *t)
{
	struct tpf_worker_ref ref = {
		.node = t->sn->name, .node_id = t->sn->id, .worker = t->worker,
		.nworkers = (int)t->sn->nworkers,
		.endpoint = tpf_worker_in_range(t->worker, t->ln->nendpoints)
				    ? &t->ln->endpoints[t->worker] : NULL,
		.host_key = t->sn->workers[t->worker].host_key,
	};
	return ref;
}

int tpf_chore_connect(const struct tpf_chore_target *t, struct tpf_conn **c, struct tpf_diags *d)
{
	struct tpf_worker_ref ref = worker_ref(t);
	return t->t->ops->connect(t->t, &ref, c, NULL, d);
}

void tpf_chore_interactive(const struct tpf_chore_target *t, struct tpf_diags *d)
{
	struct tpf_worker_ref ref = worker_ref(t);
	t->t->ops->interactive(t->t, &ref, d);
}

char *tpf_chore_name(const struct tpf_chore_target *t)
{
	return xasprintf("%s/w%d", t->sn->name, t->worker);
}

char *tpf_chore_env_prefix(int secrets)
{
	/* The rendered script is "#!/bin/sh", comments, the assignments, and
	 * then the template's body, which starts with its shellcheck line
	 * (templates/render.c): the head is everything before that. The
	 * script's own settings are not the job's environment. */
	return xasprintf(
		"if [ -f tpuform/bootstrap.sh ]; then\n"
		"  eval \"$(awk '$0 == \"# shellcheck shell=sh\" { exit } { print }' tpuform/bootstrap.sh)\" || exit 126\n"
		"  unset TPUFORM_SESSION TPUFORM_SOURCE TPUFORM_REPO TPUFORM_SETUP TPUFORM_RUN TPUFORM_SECRETS_HASH\n"
		/* The storage variables the bootstrap derives (its env verb), so
		 * the rule that maps them lives in one place. */
		"  eval \"$(sh tpuform/bootstrap.sh env 2>/dev/null)\" || exit 126\n"
		"fi\n%s",
		secrets ? "if [ -f tpuform/secrets.env ]; then . tpuform/secrets.env || exit 126; fi\n"
			: "");
}

/* ---- stdin to every worker -------------------------------------------- */

struct fan {
	int in;
	size_t n;
	int *w;             /* write ends, -1 when closed */
	struct tpf_buf *q;  /* what each still has to get */
	size_t *off;
	int stop[2];
};

#define FAN_QUEUE_MAX (8u << 20)

static size_t queued_most(const struct fan *f)
{
	size_t most = 0;
	for (size_t i = 0; i < f->n; i++)
		if (f->w[i] >= 0 && f->q[i].len - f->off[i] > most)
			most = f->q[i].len - f->off[i];
	return most;
}

/* Write what worker i can take; a worker whose command is gone (EPIPE)
 * is dropped. */
static void fan_write(struct fan *f, size_t i)
{
	ssize_t w = write(f->w[i], f->q[i].buf + f->off[i], f->q[i].len - f->off[i]);
	if (w > 0)
		f->off[i] += (size_t)w;
	else if (w < 0 && errno != EAGAIN && errno != EINTR) {
		close(f->w[i]);
		f->w[i] = -1;
	}
	if (f->off[i] == f->q[i].len) {
		tpf_buf_reset(&f->q[i]);
		f->off[i] = 0;
	}
}

/* One step of the pump; 0 when it is done. */
static int fan_step(struct fan *f, int *in_eof, struct pollfd *p)
{
	size_t k = 0;
	p[k++] = (struct pollfd){ .fd = f->stop[0], .events = POLLIN };
	p[k++] = (struct pollfd){ .fd = !*in_eof && queued_most(f) < FAN_QUEUE_MAX ? f->in : -1,
				  .events = POLLIN };
	for (size_t i = 0; i < f->n; i++)
		p[k++] = (struct pollfd){ .fd = f->w[i] >= 0 && f->q[i].len > f->off[i] ? f->w[i] : -1,
					  .events = POLLOUT };
	if (poll(p, k, -1) < 0 && errno != EINTR)
		return 0;
	if (p[0].revents)
		return 0;
	if (p[1].revents) {
		char buf[65536];
		ssize_t r = read(f->in, buf, sizeof(buf));
		if (r > 0) {
			for (size_t i = 0; i < f->n; i++)
				if (f->w[i] >= 0)
					tpf_buf_add(&f->q[i], buf, (size_t)r);
		} else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
			*in_eof = 1;
		}
	}
	int open_ends = 0;
	for (size_t i = 0; i < f->n; i++) {
		if (f->w[i] >= 0 && (p[2 + i].revents & (POLLOUT | POLLERR | POLLHUP)))
			fan_write(f, i);
		if (f->w[i] >= 0 && *in_eof && f->q[i].len == f->off[i]) {
			close(f->w[i]); /* end of file for that worker */
			f->w[i] = -1;
		}
		open_ends += f->w[i] >= 0;
	}
	return open_ends > 0;
}

static void *fan_main(void *arg)
{
	struct fan *f = arg;
	/* A command that ended without reading its input: EPIPE, not a
	 * SIGPIPE that would end tpuform. */
	sigset_t pipe_set;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);
	struct pollfd *p = xcalloc(f->n + 2, sizeof(*p));
	int in_eof = 0;
	while (fan_step(f, &in_eof, p))
		;
	free(p);
	return NULL;
}

/* ---- exec ----------------------------------------------------------------- */

#define LINE_MAX_BYTES 65536

struct exec_task {
	const struct tpf_chore_target *t;
	const struct tpf_exec_opts *o;
	size_t i;
	int in_fd;
	struct tpf_buf line;
	int status;
	int rc; /* why it failed, when status is TPF_CHORE_STATUS_FAILED */
	struct tpf_diags d;
};

struct exec_run {
	struct exec_task *tasks;
	const char *command;
};

static void flush_line(struct exec_task *e)
{
	if (e->line.len)
		e->o->out(e->o->arg, e->i, e->line.buf, e->line.len);
	tpf_buf_reset(&e->line);
}

/* tpf_exec_io.out: whole lines to the caller (or raw chunks). */
static void on_output(void *arg, const char *data, size_t len)
{
	struct exec_task *e = arg;
	if (e->o->raw) {
		e->o->out(e->o->arg, e->i, data, len);
		return;
	}
	for (size_t k = 0; k < len; k++) {
		if (data[k] == '\n') {
			e->o->out(e->o->arg, e->i, e->line.buf ? e->line.buf : "", e->line.len);
			tpf_buf_reset(&e->line);
			continue;
		}
		tpf_buf_addch(&e->line, data[k]);
		if (e->line.len >= LINE_MAX_BYTES)
			flush_line(e);
	}
}

static void exec_one(size_t i, void *arg)
{
	struct exec_run *run = arg;
	struct exec_task *e = &run->tasks[i];
	struct tpf_conn *c = NULL;
	e->status = TPF_CHORE_STATUS_FAILED;
	e->rc = TPF_ERROR;
	const struct tpf_transport_ops *ops = e->t->t->ops;
	if (!ops->exec_stream) {
		tpf_errorx(&e->d, e->t->sn->name, NULL,
			   "this provider's transport cannot run an interactive command");
	} else if (!(e->rc = tpf_chore_connect(e->t, &c, &e->d))) {
		struct tpf_exec_io io = { .in_fd = e->in_fd, .out = on_output, .arg = e,
					  .cancel = e->o->cancel };
		int st = -1;
		e->rc = ops->exec_stream(c, run->command, &io, &st, &e->d);
		if (!e->rc)
			e->status = st < 0 ? TPF_CHORE_STATUS_FAILED : st;
		if (!e->rc && st < 0)
			e->rc = TPF_ERROR;
		ops->close(c);
	}
	if (!e->o->raw)
		flush_line(e);
	if (e->in_fd >= 0)
		close(e->in_fd); /* the pump sees EPIPE and stops feeding it */
	e->in_fd = -1;
}

/* Pipes from the pump to each task; 0 or TPF_ERROR. */
static int fan_open(struct fan *f, struct exec_task *tasks, size_t n, int in, struct tpf_diags *d)
{
	f->in = in;
	f->n = n;
	f->w = xcalloc(n, sizeof(*f->w));
	f->q = xcalloc(n, sizeof(*f->q));
	f->off = xcalloc(n, sizeof(*f->off));
	if (pipe2(f->stop, O_CLOEXEC) < 0)
		return tpf_error(d, "cannot create a pipe: %s", strerror(errno));
	for (size_t i = 0; i < n; i++) {
		int p[2];
		tpf_buf_init(&f->q[i]);
		if (pipe2(p, O_CLOEXEC) < 0) {
			for (; i < n; i++)
				f->w[i] = -1;
			return tpf_error(d, "cannot create a pipe: %s", strerror(errno));
		}
		fcntl(p[1], F_SETFL, O_NONBLOCK);
		f->w[i] = p[1];
		tasks[i].in_fd = p[0];
	}
	return 0;
}

static void fan_close(struct fan *f)
{
	for (size_t i = 0; i < f->n; i++) {
		if (f->w[i] >= 0)
			close(f->w[i]);
		tpf_buf_release(&f->q[i]);
	}
	if (f->stop[0] >= 0)
		close(f->stop[0]);
	if (f->stop[1] >= 0)
		close(f->stop[1]);
	free(f->w);
	free(f->q);
	free(f->off);
}

int tpf_chore_exec(const struct tpf_chore_target *t, size_t n, const struct tpf_exec_opts *o,
		   int *status, struct tpf_diags *d)
{
	struct exec_run run = { .tasks = xcalloc(n ? n : 1, sizeof(*run.tasks)) };
	char *prefix = tpf_chore_env_prefix(o->secrets);
	char *command = xasprintf("%s%s", prefix, o->command);
	struct fan f = { .stop = { -1, -1 } };
	pthread_t pump;
	int pumping = 0, worst = 0;
	run.command = command;
	for (size_t i = 0; i < n; i++) {
		run.tasks[i] = (struct exec_task){ .t = &t[i], .o = o, .i = i, .in_fd = -1 };
		tpf_buf_init(&run.tasks[i].line);
		tpf_diags_init(&run.tasks[i].d);
	}
	if (o->in_fd >= 0) {
		if (fan_open(&f, run.tasks, n, o->in_fd, d))
			goto done;
		pumping = !pthread_create(&pump, NULL, fan_main, &f);
		if (!pumping) {
			tpf_error(d, "cannot start the thread that copies stdin to the workers");
			goto done;
		}
	}
	/* Every worker at once: a multi-host job needs all of them. */
	tpf_pool_run(n, (int)n, exec_one, &run, NULL);
done:
	if (pumping) {
		ssize_t ignored = write(f.stop[1], "x", 1);
		(void)ignored;
		pthread_join(pump, NULL);
	}
	if (o->in_fd >= 0)
		fan_close(&f);
	for (size_t i = 0; i < n; i++) {
		struct exec_task *e = &run.tasks[i];
		status[i] = pumping || o->in_fd < 0 ? e->status : TPF_CHORE_STATUS_FAILED;
		if (o->failure)
			o->failure[i] = status[i] != TPF_CHORE_STATUS_FAILED ? 0
					: e->rc ? e->rc : TPF_ERROR;
		if (status[i] > worst)
			worst = status[i];
		if (e->in_fd >= 0)
			close(e->in_fd);
		tpf_diags_move(d, &e->d);
		tpf_diags_release(&e->d);
		tpf_buf_release(&e->line);
	}
	free(run.tasks);
	free(command);
	free(prefix);
	return worst;
}
