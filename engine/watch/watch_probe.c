/*
 * watch's session probe, on a thread of its own (issue 13: detection must
 * not wait behind probes). Asking every worker for its session can take a
 * connect timeout (15 s) for a worker whose address drops packets, or the
 * status command's timeout (60 s) for one that hangs; the loop that lists
 * the zones every -interval must not wait for that. So a probe opens a
 * session of its own (fleet file, state, provider: read-only, no lock),
 * refreshes it and asks the workers, and leaves the facts for a round to
 * take. The round that started it waits for it only until the round would
 * end anyway (its -interval), so a quick probe is used at once, as before,
 * and a slow one by a later round.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pipeline/pipeline.h"
#include "engine/watch/watch_internal.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

struct tpf_prober {
	const struct tpf_watch_opts *o;
	struct tpf_attacher *attacher; /* its covered workers are skipped; may be NULL */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	int joinable; /* a thread was started and not joined yet */
	int running;  /* it has not finished */
	int ready;    /* facts holds the answers of a finished probe */
	double started; /* monotonic seconds when the running or ready probe began */
	char pinned[41];
	struct tpf_job_facts facts;
};

struct tpf_prober *tpf_prober_new(const struct tpf_watch_opts *o, struct tpf_attacher *a)
{
	struct tpf_prober *p = xcalloc(1, sizeof(*p));
	p->o = o;
	p->attacher = a;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	return p;
}

static void *probe_thread(void *arg)
{
	struct tpf_prober *p = arg;
	struct tpf_pipeline_opts so = TPF_PIPELINE_OPTS_INIT;
	so.file = p->o->file;
	so.parallelism = p->o->parallelism;
	so.pinned = p->pinned[0] ? p->pinned : NULL;
	so.probe_once = 1; /* a worker that is down is asked again next check */
	so.no_budgets = 1; /* the round measures them; this thread wants job facts */
	if (p->attacher) {
		so.probe_skip = tpf_attacher_covers;
		so.probe_skip_arg = p->attacher;
	}
	struct tpf_pipeline s;
	int rc = tpf_pipeline_open(&s, &so, NULL) || tpf_pipeline_refresh(&s, 0) ||
		 tpf_pipeline_probe(&s);
	/* Errors say why the sessions are unknown this time (a fleet file
	 * being edited, an API error); the next check tries again. */
	tpf_watch_diags(p->o, &s.d);
	pthread_mutex_lock(&p->mu);
	if (!rc) {
		p->facts = s.facts;
		memset(&s.facts, 0, sizeof(s.facts));
		p->ready = 1;
	}
	p->running = 0;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	tpf_pipeline_close(&s);
	return NULL;
}

/* Join a finished thread; p->mu held. */
static void join_finished(struct tpf_prober *p)
{
	if (p->joinable && !p->running) {
		pthread_join(p->th, NULL);
		p->joinable = 0;
	}
}

int tpf_prober_start(struct tpf_prober *p, const char *pinned)
{
	pthread_mutex_lock(&p->mu);
	join_finished(p);
	if (p->running) {
		pthread_mutex_unlock(&p->mu);
		return 0;
	}
	/* Answers nobody took are older than the new ones: drop them. */
	tpf_job_facts_release(&p->facts);
	p->ready = 0;
	snprintf(p->pinned, sizeof(p->pinned), "%s", pinned ? pinned : "");
	p->started = tpf_now_mono();
	p->running = 1;
	p->joinable = 1;
	pthread_mutex_unlock(&p->mu);
	if (pthread_create(&p->th, NULL, probe_thread, p)) {
		/* No thread: probe in this one instead. */
		p->joinable = 0;
		probe_thread(p);
	}
	return 1;
}

int tpf_prober_take(struct tpf_prober *p, double deadline, struct tpf_job_facts *facts,
		    double *started)
{
	pthread_mutex_lock(&p->mu);
	while (p->running && deadline != 0) {
		double left = deadline - tpf_now_mono();
		if (deadline > 0 && left <= 0)
			break;
		/* Short waits: the loop's own signals (SIGTERM) stay timely. */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		double step = deadline < 0 || left > 0.1 ? 0.1 : left;
		long ns = ts.tv_nsec + (long)(step * 1e9);
		ts.tv_sec += ns / 1000000000L;
		ts.tv_nsec = ns % 1000000000L;
		pthread_cond_timedwait(&p->cv, &p->mu, &ts);
		if (p->o->interrupted && *p->o->interrupted)
			break;
	}
	int got = p->ready;
	if (got) {
		*facts = p->facts;
		memset(&p->facts, 0, sizeof(p->facts));
		*started = p->started;
		p->ready = 0;
	}
	join_finished(p);
	pthread_mutex_unlock(&p->mu);
	return got;
}

void tpf_prober_free(struct tpf_prober *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	int joinable = p->joinable;
	p->joinable = 0;
	pthread_mutex_unlock(&p->mu);
	/* A probe in flight ends within its own timeouts; wait for it, so no
	 * thread outlives the loop (LeakSanitizer, and its session's files). */
	if (joinable)
		pthread_join(p->th, NULL);
	tpf_job_facts_release(&p->facts);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
