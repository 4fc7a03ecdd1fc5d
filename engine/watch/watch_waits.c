/*
 * Job waits on a fixed set of threads (issue 28 item 1; docs/watch.md
 * "Job waits"): one loop thread reads every worker's long wait
 * (engine/workers/provision.h tpf_provision_watch_step: non-blocking
 * libssh2 under one poll(2)), and a few dialer threads (watch's
 * -parallelism, at most WAITS_DIALERS) do what blocks for a moment:
 * connect (handshake, authentication), start a wait, close one that
 * ended, and reconnect with a backoff after a failure. Threads stay the
 * same whatever the number of workers: 1 + the dialers.
 *
 * A wait is owned by one thread at a time (a libssh2 session is not safe
 * from several): the dialers' queue (DUE, from `due` on), one dialer
 * (DIALING) or the loop (LOOPING). Hand-offs are under ws->mu. The
 * caller's callbacks run without ws->mu held.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/watch/watch_internal.h"
#include "engine/workers/provision.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

/* Dialers at most: a handshake waits mostly for the worker's answer, so
 * attaching many workers goes as fast as dialers run side by side. */
#define WAITS_DIALERS 12
#define WAITS_BACKOFF_MAX 30.0
/* The loop steps every wait at least this often (keepalives, the silence
 * limit, a stop), seconds. */
#define WAITS_SWEEP 2.0

enum { W_DUE, W_DIALING, W_LOOPING };

struct tpf_wait {
	struct tpf_waits *ws;
	const struct tpf_state_node *node; /* the caller's, until done */
	const struct tpf_live_node *live;
	int worker;
	struct tpf_wait_cb cb;
	/* Guarded by ws->mu. */
	int state, stop, done;
	double due;
	/* Its owner's. */
	struct tpf_conn *c;
	struct tpf_job_watch *jw;
	int ended; /* jw's output ended: close it and wait again */
	int failed; /* jw or c broke: drop the connection */
	int fresh;  /* the next wait asks for the token at once */
	char *token;
	double backoff;
	struct pollfd pfd;
};

struct tpf_waits {
	struct tpf_transport *t;
	int window, beat;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct tpf_wait **items;
	size_t n, alloc;
	int quit;
	int wake[2]; /* the loop's self-pipe */
	pthread_t loop, dialers[WAITS_DIALERS];
	int ndialers;
	int started;
};

static void wake_loop(struct tpf_waits *ws)
{
	char x = 1;
	if (write(ws->wake[1], &x, 1) < 0) {
		/* full: the loop wakes anyway */
	}
}

/* Give w to the dialers from `due` on; ws->mu held. */
static void to_dialers(struct tpf_wait *w, double due)
{
	w->state = W_DUE;
	w->due = due;
	pthread_cond_signal(&w->ws->cv);
}

/* pthread_cond_timedwait's absolute time (CLOCK_REALTIME) for the
 * monotonic moment `to`. */
static void deadline_at(double to, struct timespec *ts)
{
	double left = to - tpf_now_mono();
	if (left < 0.001)
		left = 0.001;
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += (time_t)left;
	ts->tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static double next_backoff(double b)
{
	return b < 1 ? 1 : b * 2 > WAITS_BACKOFF_MAX ? WAITS_BACKOFF_MAX : b * 2;
}

/* A record of w's wait: the token moves on. */
static void on_record(void *arg, const struct tpf_worker_report *r, const char *now)
{
	struct tpf_wait *w = arg;
	w->backoff = 0; /* the wait works */
	w->cb.record(w->cb.arg, r, w->token, now);
	if (now) {
		free(w->token);
		w->token = xstrdup(now);
	}
}

/* Close w's wait and, when it failed, its connection. */
static void drop(struct tpf_wait *w)
{
	struct tpf_diags quiet = TPF_DIAGS_INIT;
	if (w->jw && tpf_provision_watch_close(w->jw, w->ended && !w->failed, &quiet))
		w->failed = 1;
	tpf_diags_release(&quiet);
	w->jw = NULL;
	w->ended = 0;
	if (w->failed && w->c) {
		w->ws->t->ops->close(w->c);
		w->c = NULL;
	}
	w->failed = 0;
}

/* A dialer's turn with w: after the last wait, connect when needed and
 * start the next. 0: w goes to the loop; else the backoff (seconds). */
static double dial(struct tpf_wait *w)
{
	struct tpf_waits *ws = w->ws;
	drop(w);
	struct tpf_diags quiet = TPF_DIAGS_INIT;
	if (!w->c) {
		if (tpf_provision_connect(ws->t, w->node, w->live, w->worker, &w->c, &quiet)) {
			tpf_diags_release(&quiet);
			w->c = NULL;
			return w->backoff = next_backoff(w->backoff);
		}
		w->fresh = 1;
	}
	if (w->fresh) { /* a new connection: the job's record at once */
		free(w->token);
		w->token = NULL;
	}
	struct tpf_provision_watch_cb cb = { .record = on_record, .arg = w };
	int rc = tpf_provision_watch_open(ws->t, w->c, w->node->name, w->worker,
					  w->fresh ? "" : w->token, ws->window, ws->beat, &cb, &w->jw,
					  &quiet);
	tpf_diags_release(&quiet);
	if (rc) {
		w->failed = 1;
		drop(w);
		return w->backoff = next_backoff(w->backoff);
	}
	w->fresh = 0;
	w->pfd = (struct pollfd){ .fd = -1 };
	return 0;
}

/* The end of w: nothing runs on it any more; ws->mu held (dropped while
 * closing). */
static void finish(struct tpf_wait *w)
{
	struct tpf_waits *ws = w->ws;
	pthread_mutex_unlock(&ws->mu);
	w->failed = 1;
	drop(w);
	pthread_mutex_lock(&ws->mu);
	for (size_t i = 0; i < ws->n; i++)
		if (ws->items[i] == w) {
			ws->items[i] = ws->items[--ws->n];
			break;
		}
	w->done = 1;
	pthread_cond_broadcast(&ws->cv);
}

/* The next wait due for a dialer, taken (DIALING), or NULL; *sleep_to:
 * when the next one is due. ws->mu held. */
static struct tpf_wait *take_due(struct tpf_waits *ws, double now, double *sleep_to)
{
	*sleep_to = now + 1;
	for (size_t i = 0; i < ws->n; i++) {
		struct tpf_wait *w = ws->items[i];
		if (w->state != W_DUE)
			continue;
		if (w->stop || w->due <= now) {
			w->state = W_DIALING;
			return w;
		}
		if (w->due < *sleep_to)
			*sleep_to = w->due;
	}
	return NULL;
}

static void *dialer(void *arg)
{
	struct tpf_waits *ws = arg;
	pthread_mutex_lock(&ws->mu);
	while (!ws->quit || ws->n) {
		double sleep_to;
		struct tpf_wait *w = take_due(ws, tpf_now_mono(), &sleep_to);
		if (!w) {
			struct timespec ts;
			deadline_at(sleep_to, &ts);
			pthread_cond_timedwait(&ws->cv, &ws->mu, &ts);
			continue;
		}
		if (w->stop) {
			finish(w);
			continue;
		}
		pthread_mutex_unlock(&ws->mu);
		double backoff = dial(w);
		if (!backoff)
			w->cb.attached(w->cb.arg, 1);
		pthread_mutex_lock(&ws->mu);
		if (backoff) {
			to_dialers(w, tpf_now_mono() + backoff);
		} else {
			w->state = W_LOOPING;
			wake_loop(ws);
		}
	}
	pthread_mutex_unlock(&ws->mu);
	return NULL;
}

/* Collect the waits the loop owns (those told to stop go to the dialers,
 * which close them); ws->mu held. */
static size_t collect(struct tpf_waits *ws, struct tpf_wait ***mine, size_t *alloc)
{
	size_t n = 0;
	for (size_t i = 0; i < ws->n; i++) {
		struct tpf_wait *w = ws->items[i];
		if (w->state != W_LOOPING)
			continue;
		if (w->stop) {
			to_dialers(w, 0);
			continue;
		}
		XGROW(*mine, n + 1, *alloc);
		(*mine)[n++] = w;
	}
	return n;
}

/* Step w's wait; what ends it goes to the dialers. */
static void step(struct tpf_waits *ws, struct tpf_wait *w)
{
	struct tpf_diags quiet = TPF_DIAGS_INIT;
	int rc = tpf_provision_watch_step(w->jw, &w->pfd, &quiet);
	tpf_diags_release(&quiet);
	if (rc == 1)
		return;
	double due = tpf_now_mono();
	if (rc == 0) {
		w->ended = 1;
	} else {
		w->failed = 1;
		w->cb.attached(w->cb.arg, 0);
		due += w->backoff = next_backoff(w->backoff);
	}
	pthread_mutex_lock(&ws->mu);
	to_dialers(w, due);
	pthread_mutex_unlock(&ws->mu);
}

static void *loop_main(void *arg)
{
	struct tpf_waits *ws = arg;
	struct tpf_wait **mine = NULL;
	/* One slot from the start: the wake pipe's, always there. */
	struct pollfd *p = xcalloc(1, sizeof(*p));
	size_t alloc = 0, palloc = 1;
	double sweep_at = 0;
	for (;;) {
		pthread_mutex_lock(&ws->mu);
		if (ws->quit && !ws->n) {
			pthread_mutex_unlock(&ws->mu);
			break;
		}
		size_t n = collect(ws, &mine, &alloc);
		pthread_mutex_unlock(&ws->mu);
		XGROW(p, n + 1, palloc);
		p[0] = (struct pollfd){ .fd = ws->wake[0], .events = POLLIN };
		double now = tpf_now_mono();
		int ms = sweep_at > now ? (int)((sweep_at - now) * 1000) + 1 : 0;
		for (size_t i = 0; i < n; i++) {
			p[i + 1] = mine[i]->pfd;
			if (p[i + 1].fd < 0)
				ms = 0; /* a new wait: step it at once */
		}
		poll(p, n + 1, ms);
		if (p[0].revents) {
			char buf[256];
			while (read(ws->wake[0], buf, sizeof(buf)) == (ssize_t)sizeof(buf))
				;
		}
		now = tpf_now_mono();
		int sweep = now >= sweep_at;
		if (sweep)
			sweep_at = now + WAITS_SWEEP;
		for (size_t i = 0; i < n; i++)
			if (sweep || p[i + 1].fd < 0 || p[i + 1].revents)
				step(ws, mine[i]);
	}
	free(mine);
	free(p);
	return NULL;
}

struct tpf_waits *tpf_waits_new(struct tpf_transport *t, int window, int beat, int dialers)
{
	struct tpf_waits *ws = xcalloc(1, sizeof(*ws));
	ws->t = t;
	ws->window = window;
	ws->beat = beat;
	pthread_mutex_init(&ws->mu, NULL);
	pthread_cond_init(&ws->cv, NULL);
	if (pipe2(ws->wake, O_CLOEXEC | O_NONBLOCK)) {
		pthread_cond_destroy(&ws->cv);
		pthread_mutex_destroy(&ws->mu);
		free(ws);
		return NULL;
	}
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	if (pthread_create(&ws->loop, &attr, loop_main, ws) == 0)
		ws->started = 1;
	ws->ndialers = dialers < 1 ? 1 : dialers > WAITS_DIALERS ? WAITS_DIALERS : dialers;
	for (int i = 0; ws->started && i < ws->ndialers; i++)
		if (pthread_create(&ws->dialers[i], &attr, dialer, ws) == 0)
			ws->started++;
	pthread_attr_destroy(&attr);
	if (ws->started < 1 + 1) {
		tpf_waits_free(ws);
		return NULL;
	}
	return ws;
}

struct tpf_wait *tpf_waits_add(struct tpf_waits *ws, const struct tpf_state_node *node,
			       const struct tpf_live_node *live, int worker,
			       const struct tpf_wait_cb *cb)
{
	struct tpf_wait *w = xcalloc(1, sizeof(*w));
	w->ws = ws;
	w->node = node;
	w->live = live;
	w->worker = worker;
	w->cb = *cb;
	w->pfd.fd = -1;
	pthread_mutex_lock(&ws->mu);
	XGROW(ws->items, ws->n + 1, ws->alloc);
	ws->items[ws->n++] = w;
	to_dialers(w, 0);
	pthread_mutex_unlock(&ws->mu);
	return w;
}

void tpf_waits_stop(struct tpf_wait *w)
{
	pthread_mutex_lock(&w->ws->mu);
	w->stop = 1;
	pthread_cond_broadcast(&w->ws->cv);
	pthread_mutex_unlock(&w->ws->mu);
	wake_loop(w->ws);
}

int tpf_waits_done(struct tpf_wait *w)
{
	pthread_mutex_lock(&w->ws->mu);
	int done = w->done;
	pthread_mutex_unlock(&w->ws->mu);
	return done;
}

void tpf_waits_release(struct tpf_wait *w)
{
	if (!w)
		return;
	free(w->token);
	free(w);
}

void tpf_waits_free(struct tpf_waits *ws)
{
	if (!ws)
		return;
	pthread_mutex_lock(&ws->mu);
	ws->quit = 1;
	for (size_t i = 0; i < ws->n; i++)
		ws->items[i]->stop = 1;
	pthread_cond_broadcast(&ws->cv);
	pthread_mutex_unlock(&ws->mu);
	wake_loop(ws);
	/* Each thread ends once every wait is done: a dialer in a connect
	 * finishes it first (the connect timeout). */
	if (ws->started)
		pthread_join(ws->loop, NULL);
	for (int i = 0; i + 1 < ws->started; i++)
		pthread_join(ws->dialers[i], NULL);
	/* Waits never taken (no thread started) are finished here. */
	pthread_mutex_lock(&ws->mu);
	while (ws->n)
		finish(ws->items[0]);
	pthread_mutex_unlock(&ws->mu);
	close(ws->wake[0]);
	close(ws->wake[1]);
	free(ws->items);
	pthread_cond_destroy(&ws->cv);
	pthread_mutex_destroy(&ws->mu);
	free(ws);
}
