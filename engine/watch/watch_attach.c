/*
 * watch learns of a job's end at once (issue 21 part 4; docs/ARCHITECTURE.md
 * section 3, "Job waits"): one connection per provisioned
 * worker, on which the bootstrap's `wait` verb blocks until the job's
 * token changes (it exited, or its session died). Over SSH the wait lasts
 * the job's life and sends its record as a heartbeat every
 * TPUFORM_ATTACH_BEAT (60 s; engine/workers/provision.h
 * tpf_provision_watch_open, on the fixed threads of watch_waits.c; issue
 * 28): no exec while nothing happens; on the local transport it answers
 * at the end of a window (TPUFORM_ATTACH_WINDOW, 10 s) and is asked
 * again. A change that ends
 * a job is news: the loop wakes and plans at once from what the waits
 * know, without a probe. A connection that breaks (sshd restarted, network
 * dropped) is made again with a backoff (1 s doubling to 30 s); meanwhile
 * the periodic session check (-session-check) is the safety net, as for a
 * worker never attached.
 *
 * Open files: one socket per attached worker (ssh; the local transport's
 * wait holds a pipe), beside what the probe and heals open for a moment.
 * RLIMIT_NOFILE's soft limit is raised (up to its hard limit) to 3 per
 * worker plus 256 when it is lower (docs/watch.md "Job waits").
 */
#include <pthread.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/workers/provision.h"
#include "engine/watch/watch_internal.h"
#include "model/node_state.h"
#include "util/env.h"
#include "util/strindex.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#define ATTACH_WINDOW_DEFAULT 10
#define ATTACH_BEAT_DEFAULT 60
#define ATTACH_BACKOFF_MAX 30.0
#define ATTACH_STACK (256 * 1024)
/* How much later than its window a wait's answer may come before the
 * worker counts as not covered (a connection that hangs without breaking
 * answers no more; the session check then asks it). Seconds. */
#define FRESH_SLACK 5.0
/* The same past a long wait's heartbeat (the worker's status takes a
 * moment; the connection counts as dead 30 s past the beat). */
#define BEAT_SLACK 35.0

struct attach_worker {
	struct tpf_attacher *a;
	char *key;                   /* "node/worker/id": a new VM is a new worker */
	struct tpf_state_node *node; /* a private clone (host key pin, endpoints) */
	struct tpf_live_node live;
	int worker;
	double fresh_for; /* seconds an answer stays current (window or beat + slack) */
	struct tpf_wait *wait; /* over SSH: its long wait (watch_waits.c), else a thread */
	pthread_t th;
	int started;
	/* Guarded by a->mu. */
	int stop;     /* the worker left the fleet, or the loop ends */
	int done;     /* the thread returned */
	int seen;     /* present at the last sync */
	int attached; /* a wait is in flight on a live connection */
	int have;     /* fact holds an answer */
	int tried;    /* a first attempt ended: an answer, or a failed connection */
	double at;    /* monotonic seconds of that answer */
	/* Monotonic seconds when this wait saw the fact's job (the process
	 * group in its token) appear, after a token without it: a job started
	 * after a heal began is that heal's (or a later) job, whose end is
	 * news even when the heal ended after it. 0: not seen appearing (the
	 * first answer, or a token without a job). */
	double job_at;
	struct tpf_job_fact fact;
};

struct tpf_attacher {
	const struct tpf_watch_opts *o;
	pthread_mutex_t mu;
	struct tpf_pipeline s; /* the provider (and transport) connections are made with */
	int opened;
	int window;
	int beat; /* seconds between a long wait's heartbeats (issue 28) */
	struct tpf_waits *ws; /* the waits' threads, when the transport has long waits */
	struct attach_worker **items;
	size_t n, alloc;
	/* items by key (borrowed from the items), for find: a sync and the
	 * session check look up every worker, which a scan made quadratic
	 * (about 0.5 M comparisons a round at 1,024 workers; issue 28). */
	struct tpf_strindex ix;
	unsigned long news;
	int warned_nofile;
	int synced; /* a sync has run: the workers to attach are known */
};

static void fact_clear(struct tpf_job_fact *f)
{
	tpf_job_fact_release(f);
	f->exit_code = -1;
	f->stalled_for = -1;
}

static void fact_copy(struct tpf_job_fact *dst, const struct tpf_job_fact *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->node = xstrdup(src->node);
	dst->worker = src->worker;
	dst->state = src->state;
	dst->exit_code = src->exit_code;
	dst->script_hash = xstrdup(src->script_hash);
	dst->last_log = xstrdup(src->last_log);
	dst->stalled_for = src->stalled_for;
	dst->have_progress = src->have_progress;
	dst->step = src->step;
	dst->checkpoint_step = src->checkpoint_step;
	dst->checkpoint = xstrdup(src->checkpoint);
	dst->disruption = xstrdup(src->disruption);
}

struct tpf_attacher *tpf_attacher_new(const struct tpf_watch_opts *o)
{
	struct tpf_attacher *a = xcalloc(1, sizeof(*a));
	a->o = o;
	pthread_mutex_init(&a->mu, NULL);
	tpf_pipeline_init(&a->s);
	long window = ATTACH_WINDOW_DEFAULT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_env_int("TPUFORM_ATTACH_WINDOW", 1, 3600, &window, &d);
	tpf_watch_diags(o, &d);
	tpf_diags_release(&d);
	a->window = (int)window;
	long beat = ATTACH_BEAT_DEFAULT;
	tpf_env_int("TPUFORM_ATTACH_BEAT", 1, 3600, &beat, &d);
	tpf_watch_diags(o, &d);
	tpf_diags_release(&d);
	a->beat = (int)beat;
	return a;
}

static int stopping(struct attach_worker *w)
{
	pthread_mutex_lock(&w->a->mu);
	int s = w->stop || (w->a->o->interrupted && *w->a->o->interrupted);
	pthread_mutex_unlock(&w->a->mu);
	return s;
}

/* Sleep `seconds` in steps, ending early when the worker is stopped. */
static void pause_for(struct attach_worker *w, double seconds)
{
	double end = tpf_now_mono() + seconds;
	while (!stopping(w) && tpf_now_mono() < end)
		tpf_sleep(0.1);
}

/* Did tpuform itself end this job (a restart, a stop before a replacement
 * or delete: the stop verb wrote the reason), or stop its session (none)?
 * A wait that answered while a heal ran, but arrived after it ended,
 * must not look like a failure of the job's own: the heal's restart would
 * be restarted again. */
static int tpuform_did(const struct tpf_job_fact *f)
{
	static const char *const ours[] = { "restarted", "replaced", "deleted", NULL };
	if (f->state == TPF_JOB_STATE_NONE)
		return 1;
	for (size_t i = 0; f->disruption && ours[i]; i++)
		if (!strcmp(f->disruption, ours[i]))
			return 1;
	return 0;
}

/* The job's process group in a wait token ("PGID:alive",
 * "PGID:exited:CODE", "PGID:dead": templates/bootstrap.sh tpf_token), or
 * 0 (none, or a token without a job). */
static long token_job(const char *token)
{
	if (!token)
		return 0;
	char *end;
	long pg = strtol(token, &end, 10);
	return end != token && *end == ':' && pg > 0 ? pg : 0;
}

/* Does the wait's answer say the job is not running (exited, dead, never
 * started, or a word this tpuform does not know)? */
static int ended(const struct tpf_worker_report *r)
{
	return r->state != TPF_JOB_STATE_UNREACHABLE && r->state != TPF_JOB_STATE_ALIVE;
}

/* Keep the answer of one wait; news when it ends a job (a token that
 * changed to a state other than alive). prev, now: the tokens before and
 * after (prev NULL: the first answer of this worker). a->mu taken here. */
static void record(struct attach_worker *w, const struct tpf_worker_report *r, int changed,
		   const char *prev, const char *now)
{
	struct tpf_attacher *a = w->a;
	pthread_mutex_lock(&a->mu);
	fact_clear(&w->fact);
	w->fact.node = xstrdup(w->node->name);
	w->fact.worker = w->worker;
	w->fact.state = r->state;
	w->fact.exit_code = r->exit_code;
	w->fact.script_hash = xstrdup(r->script_hash);
	w->fact.last_log = xstrdup(r->last_log);
	w->fact.stalled_for = r->stalled_for;
	/* The wait reports progress as the status verb does (the same
	 * report), so a worker the session check skips still feeds the
	 * ledger's steps and checkpoints. */
	w->fact.have_progress = 1;
	w->fact.step = r->step;
	w->fact.checkpoint_step = r->checkpoint_step;
	w->fact.checkpoint = xstrdup(r->checkpoint);
	w->fact.disruption = xstrdup(r->disruption);
	w->have = 1;
	w->tried = 1;
	w->at = tpf_now_mono();
	long job = token_job(now);
	if (!job || !prev)
		w->job_at = 0;
	else if (token_job(prev) != job)
		w->job_at = w->at;
	if (changed && ended(r) && !tpuform_did(&w->fact))
		a->news++;
	pthread_mutex_unlock(&a->mu);
}

static void set_attached(struct attach_worker *w, int on)
{
	pthread_mutex_lock(&w->a->mu);
	w->attached = on;
	if (!on)
		w->tried = 1;
	pthread_mutex_unlock(&w->a->mu);
}

/* The backoff after a failure: 1 s, doubling up to ATTACH_BACKOFF_MAX. */
static double next_backoff(double b)
{
	return b < 1 ? 1 : b * 2 > ATTACH_BACKOFF_MAX ? ATTACH_BACKOFF_MAX : b * 2;
}

/* One wait on connection c, answered within the window (the local
 * transport; over SSH the waits' threads hold long waits instead,
 * watch_waits.c). 0, or the error (close c). */
static int wait_once(struct attach_worker *w, struct tpf_transport *t, struct tpf_conn *c,
		     char **token, int fresh, struct tpf_diags *quiet)
{
	struct tpf_attacher *a = w->a;
	struct tpf_worker_report r;
	char *now = NULL;
	int rc = tpf_provision_wait(t, c, w->node->name, w->worker, fresh ? "" : *token, a->window,
				    &r, &now, quiet);
	if (!rc) {
		int changed = *token && now && strcmp(*token, now);
		record(w, &r, changed || (!*token && ended(&r)), *token, now);
		if (now) {
			free(*token);
			*token = now;
			now = NULL;
		}
	}
	tpf_worker_report_release(&r);
	free(now);
	return rc;
}

/* One worker: connect, wait, record, wait again; reconnect with a backoff
 * when the connection breaks. The token survives a reconnection, so a job
 * that ended while detached is news at the first answer. */
static void *attach_thread(void *arg)
{
	struct attach_worker *w = arg;
	struct tpf_transport *t =
		w->a->s.prov->ops->transport ? w->a->s.prov->ops->transport(w->a->s.prov) : NULL;
	struct tpf_conn *c = NULL;
	char *token = NULL;
	double backoff = 0;
	int fresh = 0; /* the first wait on a new connection answers at once */
	while (t && !stopping(w)) {
		struct tpf_diags quiet = TPF_DIAGS_INIT;
		if (!c) {
			if (tpf_provision_connect(t, w->node, &w->live, w->worker, &c, &quiet)) {
				tpf_diags_release(&quiet);
				set_attached(w, 0);
				backoff = next_backoff(backoff);
				pause_for(w, backoff);
				continue;
			}
			fresh = 1;
		}
		set_attached(w, 1);
		int rc = wait_once(w, t, c, &token, fresh, &quiet);
		tpf_diags_release(&quiet);
		if (rc) {
			set_attached(w, 0);
			t->ops->close(c);
			c = NULL;
			backoff = next_backoff(backoff);
			pause_for(w, backoff);
			continue;
		}
		backoff = 0;
		fresh = 0;
	}
	if (c)
		t->ops->close(c);
	free(token);
	pthread_mutex_lock(&w->a->mu);
	w->attached = 0;
	w->done = 1;
	pthread_mutex_unlock(&w->a->mu);
	return NULL;
}

static void worker_free(struct attach_worker *w)
{
	if (w->started)
		pthread_join(w->th, NULL);
	tpf_waits_release(w->wait);
	fact_clear(&w->fact);
	free(w->key);
	tpf_state_node_free(w->node);
	tpf_live_node_release(&w->live);
	free(w);
}

/* The waits' threads' callbacks (watch_waits.c): as a thread's wait. */
static void wait_record(void *arg, const struct tpf_worker_report *r, const char *prev,
			const char *now)
{
	struct attach_worker *w = arg;
	int changed = prev && now && strcmp(prev, now);
	record(w, r, changed || (!prev && ended(r)), prev, now);
}

static void wait_attached(void *arg, int on)
{
	set_attached(arg, on);
}

/* The worker of key, or NULL; a->mu held. The first one added wins, as a
 * scan from the start would find it. */
static struct attach_worker *find(struct tpf_attacher *a, const char *key)
{
	size_t i;
	return tpf_strindex_get(&a->ix, key, &i) && i < a->n ? a->items[i] : NULL;
}

/* Append w to the items and the index; a->mu held. */
static void add_item(struct tpf_attacher *a, struct attach_worker *w)
{
	XGROW(a->items, a->n + 1, a->alloc);
	a->items[a->n] = w;
	tpf_strindex_put(&a->ix, w->key, a->n);
	a->n++;
}

/* Start waiting on worker `worker` of sn (live: its READY node); a->mu held. */
static void attach_one(struct tpf_attacher *a, const struct tpf_state_node *sn,
		       const struct tpf_live_node *ln, int worker, char *key)
{
	struct attach_worker *w = xcalloc(1, sizeof(*w));
	w->a = a;
	w->key = key;
	w->node = tpf_state_node_clone(sn);
	tpf_live_node_copy(&w->live, ln);
	w->worker = worker;
	w->seen = 1;
	w->fact.exit_code = -1;
	w->fact.stalled_for = -1;
	w->fresh_for = a->window + FRESH_SLACK;
	if (a->ws) {
		struct tpf_wait_cb cb = { .record = wait_record, .attached = wait_attached, .arg = w };
		w->fresh_for = a->beat + BEAT_SLACK;
		w->wait = tpf_waits_add(a->ws, w->node, &w->live, worker, &cb);
		add_item(a, w);
		return;
	}
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, ATTACH_STACK);
	w->started = pthread_create(&w->th, &attr, attach_thread, w) == 0;
	pthread_attr_destroy(&attr);
	if (!w->started)
		w->done = 1;
	add_item(a, w);
}

/* The attacher's own session: the provider its connections are made with.
 * Opened once; 0 when there is one. */
static int open_session(struct tpf_attacher *a)
{
	if (a->opened)
		return a->s.prov ? 0 : -1;
	a->opened = 1;
	struct tpf_pipeline_opts so = TPF_PIPELINE_OPTS_INIT;
	so.file = a->o->file;
	so.parallelism = a->o->parallelism;
	int rc = tpf_pipeline_open(&a->s, &so, NULL);
	tpf_watch_diags(a->o, &a->s.d);
	tpf_diags_release(&a->s.d);
	if (rc || !a->s.prov)
		return -1;
	struct tpf_transport *t =
		a->s.prov->ops->transport ? a->s.prov->ops->transport(a->s.prov) : NULL;
	/* Long waits on a fixed set of threads where the transport has them
	 * (ssh); else a thread per worker (the local transport). */
	if (tpf_provision_can_watch(t))
		a->ws = tpf_waits_new(t, a->window, a->beat, a->o->parallelism);
	return 0;
}

/* Raise the soft RLIMIT_NOFILE to what `workers` waits need (3 each and
 * 256 for the rest), up to the hard limit; a warning when that is short. */
static void fit_nofile(struct tpf_attacher *a, size_t workers)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)workers * 3 + 256;
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= need)
		return;
	rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
	if (want > rl.rlim_cur) {
		rl.rlim_cur = want;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (want < need && !a->warned_nofile) {
		a->warned_nofile = 1;
		char msg[300];
		snprintf(msg, sizeof(msg),
			 "job waits on %zu workers need about %llu open files, but RLIMIT_NOFILE "
			 "allows %llu: raise it (ulimit -n, LimitNOFILE= in the systemd unit), or run "
			 "watch -job-wait=false",
			 workers, (unsigned long long)need, (unsigned long long)want);
		tpf_watch_note(a->o, TPF_EVENT_WARNING, NULL, msg);
	}
}

/* Workers that left: told to stop; those whose thread ended are freed. */
static void reap(struct tpf_attacher *a, struct attach_worker ***gone, size_t *ngone)
{
	size_t keep = 0, alloc = 0;
	for (size_t i = 0; i < a->n; i++) {
		struct attach_worker *w = a->items[i];
		if (!w->seen)
			w->stop = 1;
		if (w->stop && w->wait) {
			tpf_waits_stop(w->wait);
			w->done = tpf_waits_done(w->wait);
		}
		if (w->stop && w->done) {
			XGROW(*gone, *ngone + 1, alloc);
			(*gone)[(*ngone)++] = w;
			continue;
		}
		a->items[keep++] = w;
	}
	if (keep == a->n)
		return;
	/* Positions moved, and the keys of those gone are freed soon. */
	a->n = keep;
	tpf_strindex_clear(&a->ix);
	for (size_t i = 0; i < a->n; i++)
		tpf_strindex_put(&a->ix, a->items[i]->key, i);
}

/* Before the first worker a sync attaches: the attacher's provider learns
 * the nodes s's refresh listed, so its connections read no node again
 * (no nodes.get per node at watch start or takeover; issue 28). */
static void learn_once(struct tpf_attacher *a, const struct tpf_pipeline *s, int *learnt)
{
	if (*learnt || !s->prov || !a->s.prov->ops->learn_from)
		return;
	*learnt = 1;
	a->s.prov->ops->learn_from(a->s.prov, s->prov);
}

void tpf_attacher_sync(struct tpf_attacher *a, const struct tpf_pipeline *s)
{
	if (!a || open_session(a))
		return;
	struct attach_worker **gone = NULL;
	size_t ngone = 0;
	int learnt = 0;
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->n; i++)
		a->items[i]->seen = 0;
	for (size_t i = 0; i < s->state.nnodes; i++) {
		const struct tpf_state_node *sn = &s->state.nodes[i];
		const struct tpf_live_node *ln = tpf_live_set_find(&s->live, sn->name);
		if (!ln || tpf_node_class(ln->state) != TPF_NODE_READY)
			continue;
		for (size_t k = 0; k < sn->nworkers; k++) {
			if (!sn->workers[k].script_hash)
				continue; /* never provisioned: nothing to wait for */
			char *key = xasprintf("%s/%zu/%s", sn->name, k, sn->id ? sn->id : "");
			struct attach_worker *w = find(a, key);
			if (w) {
				w->seen = 1;
				free(key);
			} else {
				learn_once(a, s, &learnt);
				attach_one(a, sn, ln, (int)k, key);
			}
		}
	}
	reap(a, &gone, &ngone);
	a->synced = 1;
	size_t live = a->n;
	pthread_mutex_unlock(&a->mu);
	fit_nofile(a, live);
	for (size_t i = 0; i < ngone; i++)
		worker_free(gone[i]);
	free(gone);
}

unsigned long tpf_attacher_news(struct tpf_attacher *a)
{
	if (!a)
		return 0;
	pthread_mutex_lock(&a->mu);
	unsigned long n = a->news;
	pthread_mutex_unlock(&a->mu);
	return n;
}

size_t tpf_attacher_take(struct tpf_attacher *a, struct tpf_job_facts *facts,
			 struct tpf_wait_time **at)
{
	*at = NULL;
	if (!a)
		return 0;
	pthread_mutex_lock(&a->mu);
	*at = xcalloc(a->n ? a->n : 1, sizeof(**at));
	for (size_t i = 0; i < a->n; i++) {
		struct attach_worker *w = a->items[i];
		if (!w->have || w->stop || !w->attached)
			continue; /* detached: what it said may be old; the probe asks */
		if (tpuform_did(&w->fact))
			continue;
		XGROW(facts->items, facts->n + 1, facts->alloc);
		(*at)[facts->n].at = w->at;
		(*at)[facts->n].job_at = w->job_at;
		fact_copy(&facts->items[facts->n++], &w->fact);
	}
	size_t n = facts->n;
	pthread_mutex_unlock(&a->mu);
	return n;
}

int tpf_attacher_settled(struct tpf_attacher *a)
{
	if (!a)
		return 1;
	pthread_mutex_lock(&a->mu);
	int settled = a->synced;
	for (size_t i = 0; settled && i < a->n; i++)
		settled = a->items[i]->tried || a->items[i]->stop;
	pthread_mutex_unlock(&a->mu);
	return settled;
}

int tpf_attacher_covers(void *arg, const struct tpf_state_node *sn, int worker)
{
	struct tpf_attacher *a = arg;
	if (!a || !sn)
		return 0;
	char *key = xasprintf("%s/%d/%s", sn->name, worker, sn->id ? sn->id : "");
	pthread_mutex_lock(&a->mu);
	struct attach_worker *w = find(a, key);
	/* Covered only when take would give this fact: a job tpuform
	 * stopped gives none, and a heal that stopped it and failed must
	 * still be seen by the probe. */
	int covers = w && w->attached && w->have && !w->stop && !tpuform_did(&w->fact) &&
		     tpf_now_mono() - w->at <= w->fresh_for;
	pthread_mutex_unlock(&a->mu);
	free(key);
	return covers;
}

void tpf_attacher_free(struct tpf_attacher *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->n; i++)
		a->items[i]->stop = 1;
	pthread_mutex_unlock(&a->mu);
	/* The waits' threads end once every wait is closed; each thread of
	 * a worker within its wait's window (or a connect timeout). */
	tpf_waits_free(a->ws);
	for (size_t i = 0; i < a->n; i++)
		worker_free(a->items[i]);
	free(a->items);
	tpf_strindex_release(&a->ix);
	tpf_pipeline_close(&a->s);
	pthread_mutex_destroy(&a->mu);
	free(a);
}
