/*
 * One worker pool for every fan-out (apply's node actions and worker
 * provisioning, refresh's session probes, exec): run fn(i, arg) for every i
 * in [0, n) on at most `parallelism` threads, and return when all are done.
 *
 * Items are handed out in index order, one at a time, so an item that takes
 * long never holds back the others. fn must be thread-safe with respect to
 * its siblings; it receives its index and the shared arg (borrowed).
 *
 * `stop` (may be NULL): when *stop becomes non-zero (a signal handler sets
 * it), no further item is started; items already running finish. Returns
 * the number of items that were started (n unless stopped early).
 *
 * parallelism < 1 is taken as 1; it is capped at n. n == 0 starts nothing
 * and creates no thread. With parallelism 1 the items run on the calling
 * thread, in order. A thread that cannot be created is not an error: the
 * items run on the threads that could be (at least the calling one).
 */
#ifndef TPF_POOL_H
#define TPF_POOL_H

#include <stddef.h>

typedef void (*tpf_pool_fn)(size_t i, void *arg);

size_t tpf_pool_run(size_t n, int parallelism, tpf_pool_fn fn, void *arg,
		    volatile int *stop);

#endif
