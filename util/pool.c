/*
 * The worker pool of util/pool.h: a shared cursor under a mutex, no queue.
 */
#include "util/pool.h"

#include <pthread.h>
#include <stdlib.h>

struct pool {
	size_t n, next, started;
	tpf_pool_fn fn;
	void *arg;
	volatile int *stop;
	pthread_mutex_t mu;
};

/* Take the next index, or return 0 when there is none or a stop was asked. */
static int take(struct pool *p, size_t *out)
{
	int ok = 0;
	pthread_mutex_lock(&p->mu);
	if (p->next < p->n && !(p->stop && *p->stop)) {
		*out = p->next++;
		p->started++;
		ok = 1;
	}
	pthread_mutex_unlock(&p->mu);
	return ok;
}

static void *pool_thread(void *arg)
{
	struct pool *p = arg;
	size_t i;
	while (take(p, &i))
		p->fn(i, p->arg);
	return NULL;
}

size_t tpf_pool_run(size_t n, int parallelism, tpf_pool_fn fn, void *arg, volatile int *stop)
{
	struct pool p = { .n = n, .fn = fn, .arg = arg, .stop = stop,
			  .mu = PTHREAD_MUTEX_INITIALIZER };
	if (n == 0)
		return 0;
	size_t threads = parallelism < 1 ? 1 : (size_t)parallelism;
	if (threads > n)
		threads = n;
	/* The calling thread is one of the workers. */
	pthread_t *th = threads > 1 ? calloc(threads - 1, sizeof(*th)) : NULL;
	size_t made = 0;
	for (size_t t = 0; th && t + 1 < threads; t++) {
		if (pthread_create(&th[made], NULL, pool_thread, &p))
			break;
		made++;
	}
	pool_thread(&p);
	for (size_t t = 0; t < made; t++)
		pthread_join(th[t], NULL);
	free(th);
	pthread_mutex_destroy(&p.mu);
	return p.started;
}
