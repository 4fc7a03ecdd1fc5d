/*
 * Apply's provisioning fan-out on one event loop (engine/workers/provision.h
 * tpf_fanout_*; issue 28, docs/watch.md "Threads and connections"). One
 * loop thread drives every worker's connection in one epoll(7) set
 * (util/evset.h): the dial (the transport's dial ops: TCP, handshake, host
 * key, authentication, each a non-blocking step, retried within the
 * connect budget) and each command of the worker's provisioning
 * (provision_job.c: the secrets, the script, the start; watch_open and
 * watch_step, non-blocking libssh2). A few helper threads
 * (FANOUT_HELPERS) do what may block for a moment: a dial's start (the
 * provider's lookups of the node and its login key; through a bastion or
 * with ssh-agent the whole connection), reading a finished command's exit
 * status (watch_close), and closing a connection. At most `in_flight`
 * workers (apply's -parallelism) are being provisioned at once, whatever
 * the number of threads, which stays 1 + FANOUT_HELPERS.
 *
 * An item is owned by one thread at a time: the admission queue, the
 * helpers' queue, the loop, or the caller once done. Hand-offs are under
 * fo->mu; the loop takes its new items from fo->to_loop. The caller's
 * callback runs on the caller's thread, without fo->mu held.
 */
#include "engine/workers/provision_internal.h"
#include "providers/transport.h"
#include "util/evset.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Helper threads. Their work is short (a close is one round trip, a
 * dial's start a lookup), so a few serve thousands of workers. */
#define FANOUT_HELPERS 4
/* The loop steps every item at least this often, seconds: a dial's
 * connect timeout and backoff, a command's output limit. A dial with no
 * socket to wait on (backing off between attempts) is stepped every
 * FANOUT_BACKOFF_STEP. */
#define FANOUT_SWEEP 2.0
#define FANOUT_BACKOFF_STEP 0.25

/* Where an item is. H_*: the helpers'; L_*: the loop's. */
enum { Q_ADMIT, H_DIAL_START, L_DIAL, L_COMMAND, H_COMMAND_END, H_END, DONE };

struct item {
	struct tpf_fanout_batch *b;
	size_t index;
	struct tpf_prov_job *job;
	const struct tpf_state_node *node;
	const struct tpf_live_node *live;
	int worker;
	int phase;
	struct item *next; /* in a queue */
	struct tpf_dial *dial;
	struct tpf_conn *c;
	int in_command; /* c has a command open (watch_open) */
	struct tpf_buf out; /* its output, at most TPF_TRANSPORT_OUTPUT_MAX as exec() */
	int too_large;      /* and it said more */
	int err, changed;
	struct tpf_diags d;
	/* The loop's: the socket in its set (-1: none), its events, whether
	 * the last wait found it ready, when to step it at the latest. */
	struct pollfd pfd;
	int ep_fd;
	short ep_events;
	int ready;
	double step_by;
};

struct tpf_fanout_batch {
	pthread_cond_t cv; /* under fo->mu: an item is done */
	struct item *done; /* finished, not yet handed to the caller */
};

struct queue {
	struct item *head, *tail;
};

struct tpf_fanout {
	struct tpf_transport *t;
	int in_flight, flying;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* the helpers' */
	struct queue admit, helpers, to_loop;
	int quit;
	int wake[2];
	struct tpf_evset *evs;
	pthread_t loop, helper[FANOUT_HELPERS];
	int nhelpers, looping;
};

static void push(struct queue *q, struct item *it)
{
	it->next = NULL;
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
}

static struct item *pop(struct queue *q)
{
	struct item *it = q->head;
	if (it) {
		q->head = it->next;
		if (!q->head)
			q->tail = NULL;
		it->next = NULL;
	}
	return it;
}

static void wake_loop(struct tpf_fanout *fo)
{
	char x = 1;
	if (write(fo->wake[1], &x, 1) < 0) {
		/* full: the loop wakes anyway */
	}
}

/* Hand it to the helpers (phase set by the caller); fo->mu held. */
static void to_helpers_locked(struct tpf_fanout *fo, struct item *it)
{
	push(&fo->helpers, it);
	pthread_cond_signal(&fo->cv);
}

static void to_helpers(struct tpf_fanout *fo, struct item *it, int phase)
{
	pthread_mutex_lock(&fo->mu);
	it->phase = phase;
	to_helpers_locked(fo, it);
	pthread_mutex_unlock(&fo->mu);
}

static void to_loop(struct tpf_fanout *fo, struct item *it, int phase)
{
	it->phase = phase;
	it->step_by = 0; /* at once */
	pthread_mutex_lock(&fo->mu);
	push(&fo->to_loop, it);
	pthread_mutex_unlock(&fo->mu);
	wake_loop(fo);
}

/* Admit queued items while slots are free; fo->mu held. */
static void admit_locked(struct tpf_fanout *fo)
{
	struct item *it;
	while (fo->flying < fo->in_flight && (it = pop(&fo->admit)) != NULL) {
		fo->flying++;
		it->phase = H_DIAL_START;
		to_helpers_locked(fo, it);
	}
}

/* ---- the helpers ---------------------------------------------------------- */

/* Ask for the job's next command on it->c (watch_open never blocks): 1
 * when one is open, 0 when none is left or on an error (it->err). */
static int open_next(struct tpf_fanout *fo, struct item *it)
{
	const char *cmd;
	const void *input;
	size_t len;
	double idle;
	if (it->err || !tpf_prov_job_next(it->job, &cmd, &input, &len, &idle))
		return 0;
	tpf_buf_release(&it->out);
	tpf_buf_init_max(&it->out, TPF_TRANSPORT_OUTPUT_MAX);
	it->too_large = 0;
	it->err = fo->t->ops->watch_open(it->c, cmd, input, len, idle, &it->d);
	it->in_command = !it->err;
	return it->in_command;
}

/* The end of an item: its connection closed, its job's result, the slot
 * freed and the caller told. */
static void finish(struct tpf_fanout *fo, struct item *it)
{
	if (it->c && it->in_command) {
		int status;
		fo->t->ops->watch_close(it->c, &status, &it->d);
	}
	if (it->c)
		fo->t->ops->close(it->c);
	it->c = NULL;
	if (it->dial)
		fo->t->ops->dial_free(it->dial);
	it->dial = NULL;
	if (it->job)
		it->err = tpf_prov_job_end(it->job, it->err, &it->changed);
	tpf_buf_release(&it->out);
	pthread_mutex_lock(&fo->mu);
	fo->flying--;
	admit_locked(fo);
	it->phase = DONE;
	it->next = it->b->done;
	it->b->done = it;
	pthread_cond_signal(&it->b->cv);
	pthread_mutex_unlock(&fo->mu);
}

/* One piece of a helper's work on it. */
static void help(struct tpf_fanout *fo, struct item *it)
{
	if (it->phase == H_DIAL_START) {
		it->err = tpf_prov_dial_start(fo->t, it->node, it->live, it->worker, 0, 0, &it->dial,
					      &it->d);
		if (!it->err) {
			to_loop(fo, it, L_DIAL);
			return;
		}
		it->phase = H_END;
	} else if (it->phase == H_COMMAND_END) {
		int status = -1;
		it->in_command = 0;
		it->err = fo->t->ops->watch_close(it->c, &status, &it->d);
		if (!it->err && it->too_large) {
			char *where = xasprintf("%s/w%d", it->node->name, it->worker);
			it->err = tpf_transport_output_too_large(where, TPF_TRANSPORT_OUTPUT_MAX, &it->d);
			free(where);
		}
		if (!it->err)
			it->err = tpf_prov_job_answer(it->job, it->out.buf, status, &it->d);
		if (open_next(fo, it)) {
			to_loop(fo, it, L_COMMAND);
			return;
		}
	}
	finish(fo, it);
}

static void *helper_main(void *arg)
{
	struct tpf_fanout *fo = arg;
	pthread_mutex_lock(&fo->mu);
	for (;;) {
		struct item *it = pop(&fo->helpers);
		if (!it && fo->quit)
			break;
		if (!it) {
			pthread_cond_wait(&fo->cv, &fo->mu);
			continue;
		}
		pthread_mutex_unlock(&fo->mu);
		help(fo, it);
		pthread_mutex_lock(&fo->mu);
	}
	pthread_mutex_unlock(&fo->mu);
	return NULL;
}

/* ---- the loop ------------------------------------------------------------- */

struct loop {
	struct item **items;
	size_t n, alloc;
};

/* Keep the loop's set in line with it->pfd. */
static void watch_fd(struct tpf_fanout *fo, struct item *it)
{
	if (it->ep_fd >= 0 && it->ep_fd != it->pfd.fd) {
		tpf_evset_forget(fo->evs, it->ep_fd);
		it->ep_fd = -1;
	}
	if (it->pfd.fd < 0)
		return;
	if (it->ep_fd != it->pfd.fd || it->ep_events != it->pfd.events) {
		if (tpf_evset_watch(fo->evs, it->pfd.fd, it->pfd.events, it) == 0) {
			it->ep_fd = it->pfd.fd;
			it->ep_events = it->pfd.events;
		}
	}
}

static void unwatch_fd(struct tpf_fanout *fo, struct item *it)
{
	if (it->ep_fd >= 0)
		tpf_evset_forget(fo->evs, it->ep_fd);
	it->ep_fd = -1;
	it->ep_events = 0;
}

static void collect_output(void *arg, const char *data, size_t len)
{
	struct item *it = arg;
	if (!it->too_large && tpf_buf_add(&it->out, data, len) < 0)
		it->too_large = 1; /* an error once the command ends, as exec()'s */
}

/* Step an item the loop owns: 1 while it stays the loop's, 0 once it
 * went to the helpers. */
static int step(struct tpf_fanout *fo, struct item *it)
{
	double due = 0, now = tpf_now_mono();
	int rc;
	if (it->phase == L_DIAL) {
		rc = fo->t->ops->dial_step(it->dial, &it->pfd, &it->d);
		if (rc == 0) {
			char *host_key = NULL;
			rc = fo->t->ops->dial_finish(it->dial, &it->c, &host_key);
			fo->t->ops->dial_free(it->dial);
			it->dial = NULL;
			if (rc == 0)
				tpf_prov_job_connected(it->job, host_key);
			free(host_key);
			it->err = rc;
			if (rc || !open_next(fo, it)) {
				unwatch_fd(fo, it);
				to_helpers(fo, it, H_END);
				return 0;
			}
			it->phase = L_COMMAND;
			return step(fo, it); /* the same socket: start the command now */
		}
		due = it->pfd.fd < 0 ? now + FANOUT_BACKOFF_STEP : now + FANOUT_SWEEP;
	} else {
		struct tpf_watch_io io = { .out = collect_output, .arg = it };
		rc = fo->t->ops->watch_step(it->c, &io, &it->pfd, &due, &it->d);
		if (rc == 0) {
			unwatch_fd(fo, it);
			to_helpers(fo, it, H_COMMAND_END);
			return 0;
		}
		if (!due || due > now + FANOUT_SWEEP)
			due = now + FANOUT_SWEEP;
	}
	if (rc < 0) {
		it->err = rc;
		unwatch_fd(fo, it);
		to_helpers(fo, it, H_END);
		return 0;
	}
	it->step_by = due;
	watch_fd(fo, it);
	return 1;
}

/* Take the items handed to the loop. */
static int take_new(struct tpf_fanout *fo, struct loop *l)
{
	pthread_mutex_lock(&fo->mu);
	int quit = fo->quit;
	struct item *it;
	while ((it = pop(&fo->to_loop)) != NULL) {
		XGROW(l->items, l->n + 1, l->alloc);
		l->items[l->n++] = it;
	}
	pthread_mutex_unlock(&fo->mu);
	return quit;
}

static void *loop_main(void *arg)
{
	struct tpf_fanout *fo = arg;
	struct loop l = { 0 };
	void *ready[256];
	for (;;) {
		if (take_new(fo, &l) && !l.n)
			break;
		double now = tpf_now_mono(), next = now + FANOUT_SWEEP;
		for (size_t i = 0; i < l.n; i++)
			if (l.items[i]->step_by < next)
				next = l.items[i]->step_by;
		int ms = next <= now ? 0 : (int)((next - now) * 1000) + 1;
		int nr = tpf_evset_wait(fo->evs, ready, (int)(sizeof(ready) / sizeof(ready[0])), ms);
		for (int i = 0; i < nr; i++) {
			if (ready[i] == (void *)fo) {
				char buf[256];
				while (read(fo->wake[0], buf, sizeof(buf)) > 0)
					;
			} else {
				((struct item *)ready[i])->ready = 1;
			}
		}
		now = tpf_now_mono();
		size_t kept = 0;
		for (size_t i = 0; i < l.n; i++) {
			struct item *it = l.items[i];
			int stays = 1;
			if (it->ready || now >= it->step_by) {
				it->ready = 0;
				stays = step(fo, it);
			}
			if (stays)
				l.items[kept++] = it;
		}
		l.n = kept;
	}
	free(l.items);
	return NULL;
}

/* ---- the caller's side ------------------------------------------------------ */

int tpf_fanout_can(const struct tpf_transport *t, const struct tpf_fleet *f,
		   const struct tpf_state_node *n)
{
	return t && tpf_provision_can_dial(t) && tpf_provision_can_watch(t) && t->ops->close &&
	       tpf_prov_job_fits(f, n);
}

struct tpf_fanout *tpf_fanout_new(struct tpf_transport *t, int in_flight)
{
	struct tpf_fanout *fo = xcalloc(1, sizeof(*fo));
	fo->t = t;
	fo->in_flight = in_flight > 0 ? in_flight : 1;
	pthread_mutex_init(&fo->mu, NULL);
	pthread_cond_init(&fo->cv, NULL);
	fo->evs = tpf_evset_new();
	/* Close-on-exec: a command apply runs (ssh(1), git) must not hold
	 * the loop's wake pipe. */
	if (!fo->evs || pipe2(fo->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		if (fo->evs)
			tpf_evset_free(fo->evs);
		pthread_cond_destroy(&fo->cv);
		pthread_mutex_destroy(&fo->mu);
		free(fo);
		return NULL;
	}
	tpf_evset_watch(fo->evs, fo->wake[0], POLLIN, fo);
	if (pthread_create(&fo->loop, NULL, loop_main, fo) == 0)
		fo->looping = 1;
	for (int i = 0; i < FANOUT_HELPERS; i++)
		if (pthread_create(&fo->helper[fo->nhelpers], NULL, helper_main, fo) == 0)
			fo->nhelpers++;
	if (!fo->looping || !fo->nhelpers) {
		tpf_fanout_free(fo);
		return NULL;
	}
	return fo;
}

void tpf_fanout_free(struct tpf_fanout *fo)
{
	if (!fo)
		return;
	pthread_mutex_lock(&fo->mu);
	fo->quit = 1;
	pthread_cond_broadcast(&fo->cv);
	pthread_mutex_unlock(&fo->mu);
	wake_loop(fo);
	if (fo->looping)
		pthread_join(fo->loop, NULL);
	for (int i = 0; i < fo->nhelpers; i++)
		pthread_join(fo->helper[i], NULL);
	tpf_evset_free(fo->evs);
	close(fo->wake[0]);
	close(fo->wake[1]);
	pthread_cond_destroy(&fo->cv);
	pthread_mutex_destroy(&fo->mu);
	free(fo);
}

void tpf_fanout_provision(struct tpf_fanout *fo, const struct tpf_fleet *f,
			  struct tpf_state_node *const *copies, const struct tpf_live_node *live,
			  const int *workers, size_t n, int force, tpf_fanout_done_fn done,
			  void *arg)
{
	struct tpf_fanout_batch b = { .done = NULL };
	struct item *items = n ? xcalloc(n, sizeof(*items)) : NULL;
	size_t left = 0;
	pthread_cond_init(&b.cv, NULL);
	for (size_t i = 0; i < n; i++) {
		struct item *it = &items[i];
		it->b = &b;
		it->index = i;
		it->node = copies[i];
		it->live = live;
		it->worker = workers[i];
		it->ep_fd = -1;
		tpf_diags_init(&it->d);
		it->job = tpf_prov_job_new(f, copies[i], live, workers[i], force, &it->d);
		it->err = it->job ? 0 : TPF_ERROR;
	}
	pthread_mutex_lock(&fo->mu);
	for (size_t i = 0; i < n; i++) {
		if (items[i].job) {
			items[i].phase = Q_ADMIT;
			push(&fo->admit, &items[i]);
			left++;
		}
	}
	admit_locked(fo);
	pthread_mutex_unlock(&fo->mu);
	/* Those that could not start are done at once. */
	for (size_t i = 0; i < n; i++)
		if (!items[i].job)
			done(arg, i, items[i].err, 0, &items[i].d);
	pthread_mutex_lock(&fo->mu);
	while (left) {
		struct item *it = b.done;
		if (!it) {
			pthread_cond_wait(&b.cv, &fo->mu);
			continue;
		}
		b.done = it->next;
		left--;
		pthread_mutex_unlock(&fo->mu);
		done(arg, it->index, it->err, it->changed, &it->d);
		pthread_mutex_lock(&fo->mu);
	}
	pthread_mutex_unlock(&fo->mu);
	for (size_t i = 0; i < n; i++) {
		tpf_prov_job_free(items[i].job);
		tpf_diags_release(&items[i].d);
	}
	pthread_cond_destroy(&b.cv);
	free(items);
}
