/*
 * Job waits on a fixed set of threads (issue 28 item 1; docs/watch.md
 * "Job waits"): one loop thread drives every worker's connection in one
 * epoll(7) set (util/evset.h): it makes the connection (the transport's dial ops: TCP connect,
 * SSH handshake, host key check and authentication, each a non-blocking
 * step; engine/workers/provision.h tpf_provision_dial_start), starts the
 * wait and reads it (tpf_provision_watch_step: non-blocking libssh2). A
 * few helper threads (watch's -parallelism, at most WAITS_HELPERS) do what
 * may block for a moment: a dial's start (the provider's lookups of the
 * node, a name to resolve; through a bastion or with ssh-agent the whole
 * connection), closing a wait that ended or a connection that failed, and
 * the backoff before a reconnect. At most WAITS_DIALS dials are in flight
 * at once, so a fleet of thousands does not start thousands of handshakes
 * together. Threads stay the same whatever the number of workers: 1 + the
 * helpers.
 *
 * A wait is owned by one thread at a time (a libssh2 session is not safe
 * from several): the helpers' queue (DUE, from `due` on), one helper
 * (HELPING) or the loop (LOOPING). Hand-offs are under ws->mu. The
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
#include "util/evset.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

/* Helper threads at most: nothing they do waits on a worker's handshake
 * any more (the loop drives it), only on a provider's lookups, a close,
 * or a bastion's connection. */
#define WAITS_HELPERS 4
/* Dials in flight at most (started, not yet connected or failed): enough
 * for the round trips of many handshakes to overlap, few enough that the
 * loop's share of their key exchanges stays small and a fleet of 4,096 does
 * not open 4,096 handshakes at once (mind sshd's MaxStartups behind a
 * bastion). A worker that never answers holds its slot for the connect
 * timeout (TPUFORM_SSH_CONNECT_TIMEOUT, 15 s), the others go on. */
#define WAITS_DIALS 64
#define WAITS_BACKOFF_MAX 30.0
/* The loop steps every dial at least this often (its connect and I/O
 * timeouts), seconds. A running wait says when it must be stepped (its
 * next keepalive, its silence limit: tpf_provision_watch_step's due), and
 * is stepped at least every WAITS_STEP_MAX seconds whatever it says. */
#define WAITS_SWEEP 2.0
#define WAITS_STEP_MAX 30.0
/* Shortest time between two polls while no connection is being made
 * (seconds): see quiet_gap. */
#define WAITS_QUIET_GAP 0.1
/* While busy (dials in flight), seconds per wait the loop owns between
 * two waits for events: each turn walks every wait, so turns are spaced by
 * the walk's size (64 waits: 64 us; 4,096: 4 ms), which bounds the walks
 * to a few per cent of a core at any size (issue 28: at 4,096 workers the
 * walks of unthrottled turns were an eighth of watch's CPU during attach). */
#define WAITS_BUSY_GAP_PER_WAIT 1e-6

enum { W_DUE, W_HELPING, W_LOOPING };

struct tpf_wait {
	struct tpf_waits *ws;
	const struct tpf_state_node *node; /* the caller's, until done */
	const struct tpf_live_node *live;
	int worker;
	struct tpf_wait_cb cb;
	/* Guarded by ws->mu. */
	int state, stop, done;
	int counted; /* holds one of the WAITS_DIALS slots */
	double due;
	/* Its owner's. */
	struct tpf_conn *c;
	struct tpf_dial *dial; /* the connection being made, in the loop */
	struct tpf_job_watch *jw;
	int ended; /* jw's output ended: close it and wait again */
	int failed; /* jw or c broke: drop the connection */
	int fresh;  /* the next wait asks for the token at once */
	char *token;
	double backoff;
	struct pollfd pfd;
	/* The loop's: the fd and events in its set (-1: none), whether the
	 * last wait found it ready, when it must be stepped at the latest. */
	int ep_fd;
	short ep_events;
	int ready;
	double step_by;
};

struct tpf_waits {
	struct tpf_transport *t;
	int window, beat;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct tpf_wait **items;
	size_t n, alloc;
	int quit;
	int can_dial;	/* the transport has dial ops */
	int dialing;	/* slots taken, of WAITS_DIALS */
	int wake[2]; /* the loop's self-pipe */
	struct tpf_evset *evs; /* the loop's: the wake pipe and every looping wait's socket */
	pthread_t loop, helpers[WAITS_HELPERS];
	int nhelpers;
	int started;
};

static void wake_loop(struct tpf_waits *ws)
{
	char x = 1;
	if (write(ws->wake[1], &x, 1) < 0) {
		/* full: the loop wakes anyway */
	}
}

/* Give w to the helpers from `due` on; ws->mu held. */
static void to_helpers(struct tpf_wait *w, double due)
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

/* w's dial slot is free again; ws->mu held. */
static void uncount(struct tpf_waits *ws, struct tpf_wait *w)
{
	if (!w->counted)
		return;
	w->counted = 0;
	ws->dialing--;
	pthread_cond_broadcast(&ws->cv);
}

/* Close w's wait and, when it failed, its connection; drop a dial. */
static void drop(struct tpf_wait *w)
{
	struct tpf_diags quiet = TPF_DIAGS_INIT;
	if (w->dial)
		w->ws->t->ops->dial_free(w->dial);
	w->dial = NULL;
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

/* Start the wait on w's connection (never blocks: the loop's first step
 * sends it). 0, or an error (the connection is then to be dropped). */
static int open_wait(struct tpf_wait *w, struct tpf_diags *d)
{
	struct tpf_waits *ws = w->ws;
	if (w->fresh) { /* a new connection: the job's record at once */
		free(w->token);
		w->token = NULL;
	}
	struct tpf_provision_watch_cb cb = { .record = on_record, .arg = w };
	int rc = tpf_provision_watch_open(ws->t, w->c, w->node->name, w->worker,
					  w->fresh ? "" : w->token, ws->window, ws->beat, &cb, &w->jw,
					  d);
	if (rc)
		return rc;
	w->fresh = 0;
	w->pfd = (struct pollfd){ .fd = -1 };
	return 0;
}

/* A helper's turn with w: after the last wait, start a dial when the
 * connection is gone (the loop makes it), else start the next wait.
 * Transports without dial ops connect here, blocking. 0: w goes to the
 * loop; else the backoff (seconds). */
static double turn(struct tpf_wait *w)
{
	struct tpf_waits *ws = w->ws;
	drop(w);
	struct tpf_diags quiet = TPF_DIAGS_INIT;
	int rc = 0;
	if (!w->c && ws->can_dial) {
		rc = tpf_provision_dial_start(ws->t, w->node, w->live, w->worker, &w->dial, &quiet);
		tpf_diags_release(&quiet);
		w->pfd = (struct pollfd){ .fd = -1 };
		if (!rc)
			return 0;
		w->cb.attached(w->cb.arg, 0);
		return w->backoff = next_backoff(w->backoff);
	}
	if (!w->c) {
		rc = tpf_provision_connect(ws->t, w->node, w->live, w->worker, &w->c, &quiet);
		if (rc)
			w->c = NULL;
		w->fresh = 1;
	}
	if (!rc && (rc = open_wait(w, &quiet)) != 0)
		w->failed = 1;
	tpf_diags_release(&quiet);
	if (rc) {
		drop(w);
		w->cb.attached(w->cb.arg, 0);
		return w->backoff = next_backoff(w->backoff);
	}
	w->cb.attached(w->cb.arg, 1);
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
	uncount(ws, w);
	for (size_t i = 0; i < ws->n; i++)
		if (ws->items[i] == w) {
			ws->items[i] = ws->items[--ws->n];
			break;
		}
	w->done = 1;
	pthread_cond_broadcast(&ws->cv);
	/* The last wait of a stopping set: the loop, which may sleep up to
	 * WAITS_STEP_MAX with nothing of its own, ends now (watch took 30 s
	 * to exit after a signal). */
	if (ws->quit && !ws->n)
		wake_loop(ws);
}

/* The next wait due for a helper, taken (HELPING), or NULL; *sleep_to:
 * when the next one is due. One that needs a connection waits for a dial
 * slot. ws->mu held. */
static struct tpf_wait *take_due(struct tpf_waits *ws, double now, double *sleep_to)
{
	*sleep_to = now + 1;
	for (size_t i = 0; i < ws->n; i++) {
		struct tpf_wait *w = ws->items[i];
		if (w->state != W_DUE)
			continue;
		if (!w->stop && w->due > now) {
			if (w->due < *sleep_to)
				*sleep_to = w->due;
			continue;
		}
		int dials = !w->stop && ws->can_dial && (!w->c || w->failed);
		if (dials && ws->dialing >= WAITS_DIALS)
			continue; /* woken when a slot frees */
		if (dials) {
			ws->dialing++;
			w->counted = 1;
		}
		w->state = W_HELPING;
		return w;
	}
	return NULL;
}

static void *helper(void *arg)
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
		double backoff = turn(w);
		pthread_mutex_lock(&ws->mu);
		if (!w->dial)
			uncount(ws, w);
		if (backoff) {
			to_helpers(w, tpf_now_mono() + backoff);
		} else {
			w->state = W_LOOPING;
			wake_loop(ws);
		}
	}
	pthread_mutex_unlock(&ws->mu);
	return NULL;
}

/* Take w's socket out of the loop's set: before w leaves the loop (whoever
 * has it next may close the socket, and the number be reused). The loop's
 * thread only. */
static void ep_forget(struct tpf_waits *ws, struct tpf_wait *w)
{
	if (w->ep_fd >= 0)
		tpf_evset_forget(ws->evs, w->ep_fd);
	w->ep_fd = -1;
	w->ready = 0;
}

/* Make the loop's set wait on w's socket for what w->pfd says. */
static void ep_sync(struct tpf_waits *ws, struct tpf_wait *w)
{
	if (w->pfd.fd == w->ep_fd && w->pfd.events == w->ep_events)
		return;
	if (w->ep_fd >= 0 && w->ep_fd != w->pfd.fd)
		ep_forget(ws, w);
	if (w->pfd.fd >= 0 && tpf_evset_watch(ws->evs, w->pfd.fd, w->pfd.events, w) == 0) {
		w->ep_fd = w->pfd.fd;
		w->ep_events = w->pfd.events;
	}
}

/* Collect the waits the loop owns (those told to stop go to the helpers,
 * which close them); ws->mu held. */
static size_t collect(struct tpf_waits *ws, struct tpf_wait ***mine, size_t *alloc)
{
	size_t n = 0;
	for (size_t i = 0; i < ws->n; i++) {
		struct tpf_wait *w = ws->items[i];
		if (w->state != W_LOOPING)
			continue;
		if (w->stop) {
			ep_forget(ws, w);
			to_helpers(w, 0);
			continue;
		}
		XGROW(*mine, n + 1, *alloc);
		(*mine)[n++] = w;
	}
	return n;
}

/* Step w's dial; once connected, start its wait. 1 while either goes
 * on, else an error. */
static int step_dial(struct tpf_waits *ws, struct tpf_wait *w, struct tpf_diags *d)
{
	struct tpf_transport *t = ws->t;
	int rc = t->ops->dial_step(w->dial, &w->pfd, d);
	if (rc == 1)
		return 1;
	if (rc == 0)
		rc = t->ops->dial_finish(w->dial, &w->c, NULL);
	t->ops->dial_free(w->dial);
	w->dial = NULL;
	pthread_mutex_lock(&ws->mu);
	uncount(ws, w);
	pthread_mutex_unlock(&ws->mu);
	if (rc)
		return rc;
	w->fresh = 1;
	if ((rc = open_wait(w, d)) != 0)
		return rc;
	w->cb.attached(w->cb.arg, 1);
	return 1; /* its first step at the loop's next turn */
}

/* Step w's dial or wait; what ends it goes to the helpers. */
static void step(struct tpf_waits *ws, struct tpf_wait *w)
{
	struct tpf_diags quiet = TPF_DIAGS_INIT;
	int dialing = w->dial != NULL;
	double by = 0;
	int rc = dialing ? step_dial(ws, w, &quiet)
			 : tpf_provision_watch_step(w->jw, &w->pfd, &by, &quiet);
	tpf_diags_release(&quiet);
	if (rc == 1) {
		double latest = tpf_now_mono() + WAITS_STEP_MAX;
		w->step_by = by > 0 && by < latest ? by : latest;
		return;
	}
	ep_forget(ws, w);
	double due = tpf_now_mono();
	if (rc == 0) {
		w->ended = 1;
	} else {
		w->failed = 1;
		/* A failed dial too: the caller learns the attempt ended. */
		w->cb.attached(w->cb.arg, 0);
		due += w->backoff = next_backoff(w->backoff);
	}
	pthread_mutex_lock(&ws->mu);
	to_helpers(w, due);
	pthread_mutex_unlock(&ws->mu);
}

/*
 * While the waits are quiet the loop wakes for nearly nothing: at 1,024
 * workers the keepalive replies (one per connection per 15 s) and
 * heartbeats (one per BEAT) woke it about 80 times a second, and each turn
 * walks every wait the loop owns (O(N); with poll(2) the kernel did too:
 * 5.6 % of a core over `scale_bench.sh 1024`'s idle minute). So when no
 * dial is in flight and nothing new came, the next wait for events begins
 * WAITS_QUIET_GAP after this one did: the wakes of a tenth of a second are
 * taken in one turn, and a job's end is seen at most 0.1 s later. Dials
 * (attach, reconnects) keep the loop nearly unthrottled, since a handshake
 * is a dozen round trips: WAITS_BUSY_GAP_PER_WAIT per wait (4 ms at 4,096
 * waits), so that the walks stay a small share of a core.
 */
static void quiet_gap(double polled_at, int busy, size_t waits)
{
	double gap = busy ? (double)waits * WAITS_BUSY_GAP_PER_WAIT : WAITS_QUIET_GAP;
	double left = polled_at + gap - tpf_now_mono();
	if (left > 0)
		tpf_sleep(left);
}

/* When the loop must turn at the latest (monotonic seconds), its set made
 * to wait on what each of mine says: at once for a wait not yet stepped,
 * at the next sweep for a dial, at a running wait's step_by. */
static double plan_turn(struct tpf_waits *ws, struct tpf_wait **mine, size_t n, double now,
			double sweep_at)
{
	double at = now + WAITS_STEP_MAX;
	for (size_t i = 0; i < n; i++) {
		struct tpf_wait *w = mine[i];
		ep_sync(ws, w);
		double by = w->pfd.fd < 0 ? now : w->dial ? sweep_at : w->step_by;
		if (by < at)
			at = by;
	}
	return at;
}

static void *loop_main(void *arg)
{
	struct tpf_waits *ws = arg;
	struct tpf_wait **mine = NULL;
	void **ready = NULL;
	size_t alloc = 0, ralloc = 0;
	double sweep_at = 0;
	for (;;) {
		pthread_mutex_lock(&ws->mu);
		if (ws->quit && !ws->n) {
			pthread_mutex_unlock(&ws->mu);
			break;
		}
		size_t n = collect(ws, &mine, &alloc);
		int busy = ws->dialing > 0;
		pthread_mutex_unlock(&ws->mu);
		XGROW(ready, n + 1, ralloc);
		double now = tpf_now_mono();
		double at = plan_turn(ws, mine, n, now, sweep_at);
		int ms = at > now ? (int)((at - now) * 1000) + 1 : 0;
		double polled_at = now;
		busy |= ms == 0;
		int k = tpf_evset_wait(ws->evs, ready, (int)n + 1, ms);
		for (int j = 0; j < k; j++) {
			if (ready[j]) {
				((struct tpf_wait *)ready[j])->ready = 1;
				continue;
			}
			busy = 1; /* a new wait or a stop: see to it at once */
			char buf[256];
			while (read(ws->wake[0], buf, sizeof(buf)) == (ssize_t)sizeof(buf))
				;
		}
		now = tpf_now_mono();
		int sweep = now >= sweep_at;
		if (sweep)
			sweep_at = now + WAITS_SWEEP;
		for (size_t i = 0; i < n; i++) {
			struct tpf_wait *w = mine[i];
			int due = w->pfd.fd < 0 || (w->dial ? sweep : now >= w->step_by);
			if (w->ready || due) {
				w->ready = 0;
				step(ws, w);
			}
		}
		quiet_gap(polled_at, busy, n);
	}
	free(mine);
	free(ready);
	return NULL;
}

struct tpf_waits *tpf_waits_new(struct tpf_transport *t, int window, int beat, int helpers)
{
	struct tpf_waits *ws = xcalloc(1, sizeof(*ws));
	ws->t = t;
	ws->can_dial = tpf_provision_can_dial(t);
	ws->window = window;
	ws->beat = beat;
	pthread_mutex_init(&ws->mu, NULL);
	pthread_cond_init(&ws->cv, NULL);
	ws->evs = tpf_evset_new();
	if (!ws->evs || pipe2(ws->wake, O_CLOEXEC | O_NONBLOCK) ||
	    tpf_evset_watch(ws->evs, ws->wake[0], POLLIN, NULL)) {
		if (ws->evs && ws->wake[0] > 0) {
			close(ws->wake[0]);
			close(ws->wake[1]);
		}
		tpf_evset_free(ws->evs);
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
	ws->nhelpers = helpers < 1 ? 1 : helpers > WAITS_HELPERS ? WAITS_HELPERS : helpers;
	for (int i = 0; ws->started && i < ws->nhelpers; i++)
		if (pthread_create(&ws->helpers[i], &attr, helper, ws) == 0)
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
	w->ep_fd = -1;
	pthread_mutex_lock(&ws->mu);
	XGROW(ws->items, ws->n + 1, ws->alloc);
	ws->items[ws->n++] = w;
	to_helpers(w, 0);
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
	/* Each thread ends once every wait is done: a helper in a connect
	 * (a bastion's) finishes it first (the connect timeout). */
	if (ws->started)
		pthread_join(ws->loop, NULL);
	for (int i = 0; i + 1 < ws->started; i++)
		pthread_join(ws->helpers[i], NULL);
	/* Waits never taken (no thread started) are finished here. */
	pthread_mutex_lock(&ws->mu);
	while (ws->n)
		finish(ws->items[0]);
	pthread_mutex_unlock(&ws->mu);
	tpf_evset_free(ws->evs);
	close(ws->wake[0]);
	close(ws->wake[1]);
	free(ws->items);
	pthread_cond_destroy(&ws->cv);
	pthread_mutex_destroy(&ws->mu);
	free(ws);
}
