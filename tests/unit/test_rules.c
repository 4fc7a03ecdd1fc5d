/*
 * The shared rules of the lower layers: the worker pool (util/pool.h), the
 * environment knob parser (util/env.h) and the Node.state classifier
 * (model/node_state.h).
 */
#include "tests/unit/unit.h"
#include "model/node_state.h"
#include "util/diag.h"
#include "util/env.h"
#include "util/pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct counts {
	int *hits;
	int running, peak;
	volatile int stop_after; /* set stop when this many items ran (0: never) */
	volatile int *stop;
	int ran;
	pthread_mutex_t mu;
};

static void count_item(size_t i, void *arg)
{
	struct counts *c = arg;
	pthread_mutex_lock(&c->mu);
	c->hits[i]++;
	c->ran++;
	if (++c->running > c->peak)
		c->peak = c->running;
	if (c->stop_after && c->ran >= c->stop_after)
		*c->stop = 1;
	pthread_mutex_unlock(&c->mu);
	usleep(2000); /* let siblings overlap, so the peak is meaningful */
	pthread_mutex_lock(&c->mu);
	c->running--;
	pthread_mutex_unlock(&c->mu);
}

static void test_rules__pool_runs_each_item_once_within_parallelism(void)
{
	int hits[50] = { 0 };
	struct counts c = { .hits = hits, .mu = PTHREAD_MUTEX_INITIALIZER };
	size_t started = tpf_pool_run(50, 4, count_item, &c, NULL);
	CHECK_INT(started, 50);
	int once = 1;
	for (int i = 0; i < 50; i++)
		once &= hits[i] == 1;
	CHECKF(once, "every item ran exactly once");
	CHECKF(c.peak <= 4 && c.peak >= 2, "peak concurrency %d within 2..4", c.peak);

	int h1[3] = { 0 };
	struct counts one = { .hits = h1, .mu = PTHREAD_MUTEX_INITIALIZER };
	CHECK_INT(tpf_pool_run(3, 0, count_item, &one, NULL), 3);
	CHECK_INT(one.peak, 1);
	CHECK_INT(tpf_pool_run(0, 8, count_item, &one, NULL), 0);
}

static void test_rules__pool_stop_starts_nothing_new(void)
{
	int hits[100] = { 0 };
	volatile int stop = 0;
	struct counts c = { .hits = hits, .stop_after = 5, .stop = &stop,
			    .mu = PTHREAD_MUTEX_INITIALIZER };
	size_t started = tpf_pool_run(100, 2, count_item, &c, &stop);
	CHECKF(started >= 5 && started <= 7, "stopped after 5 (+ at most one per thread), got %zu",
	       started);
	CHECK_INT(c.ran, (int)started);
	stop = 1;
	CHECK_INT(tpf_pool_run(10, 2, count_item, &c, &stop), 0);
}

static void test_rules__env_seconds(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	double v = 7;
	unsetenv("TPF_TEST_SECS");
	CHECK_INT(tpf_env_seconds("TPF_TEST_SECS", &v, &d), 0);
	CHECKF(v == 7, "unset keeps the default");
	setenv("TPF_TEST_SECS", "", 1);
	CHECK_INT(tpf_env_seconds("TPF_TEST_SECS", &v, &d), 0);
	CHECKF(v == 7, "empty keeps the default");
	setenv("TPF_TEST_SECS", "0.25", 1);
	CHECK_INT(tpf_env_seconds("TPF_TEST_SECS", &v, &d), 0);
	CHECKF(v == 0.25, "0.25 -> %g", v);
	setenv("TPF_TEST_SECS", "2m", 1);
	CHECK_INT(tpf_env_seconds("TPF_TEST_SECS", &v, &d), 0);
	CHECKF(v == 120, "2m -> %g", v);
	CHECK_INT(d.n, 0);
	const char *bad[] = { "abc", "-1", "5x", "inf", "nan", "1e999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("TPF_TEST_SECS", bad[i], 1);
		v = 7;
		CHECKF(tpf_env_seconds("TPF_TEST_SECS", &v, &d) == TPF_ERROR && v == 7,
		       "'%s' is refused and leaves the value", bad[i]);
	}
	CHECK_INT(d.n, 6);
	CHECKF(d.n && strstr(d.items[0].summary, "TPF_TEST_SECS") &&
		       strstr(d.items[0].summary, "'abc'"),
	       "the diagnostic names the variable and value: %s", d.n ? d.items[0].summary : "");
	long n = 3;
	setenv("TPF_TEST_SECS", "12", 1);
	CHECK_INT(tpf_env_int("TPF_TEST_SECS", 1, 10, &n, &d), TPF_ERROR);
	CHECK_INT(n, 3);
	setenv("TPF_TEST_SECS", "9", 1);
	CHECK_INT(tpf_env_int("TPF_TEST_SECS", 1, 10, &n, &d), 0);
	CHECK_INT(n, 9);
	unsetenv("TPF_TEST_SECS");
	tpf_diags_release(&d);
}

static void test_rules__node_state_classes(void)
{
	static const struct {
		const char *state;
		enum tpf_node_class want;
	} cases[] = {
		{ "READY", TPF_NODE_READY },	  { "CREATING", TPF_NODE_BUSY },
		{ "STARTING", TPF_NODE_BUSY },	  { "RESTARTING", TPF_NODE_BUSY },
		{ "REPAIRING", TPF_NODE_BUSY },	  { "REIMAGING", TPF_NODE_BUSY },
		{ "UNHIDING", TPF_NODE_BUSY },	  { "PREEMPTED", TPF_NODE_DEAD },
		{ "TERMINATED", TPF_NODE_DEAD },  { "STOPPED", TPF_NODE_DEAD },
		{ "STOPPING", TPF_NODE_DEAD },	  { "DELETING", TPF_NODE_GOING },
		{ "HIDING", TPF_NODE_GOING },	  { "HIDDEN", TPF_NODE_GOING },
		{ "UNKNOWN", TPF_NODE_UNKNOWN },  { "STATE_UNSPECIFIED", TPF_NODE_UNKNOWN },
		{ "ready", TPF_NODE_UNKNOWN },	  { NULL, TPF_NODE_UNKNOWN },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECKF(tpf_node_class(cases[i].state) == cases[i].want, "%s is %s, got %s",
		       cases[i].state ? cases[i].state : "(null)", tpf_node_class_name(cases[i].want),
		       tpf_node_class_name(tpf_node_class(cases[i].state)));
	CHECK(tpf_queued_state_dead("FAILED"));
	CHECK(tpf_queued_state_dead("SUSPENDED"));
	CHECK(!tpf_queued_state_dead("WAITING_FOR_RESOURCES"));
	CHECK(!tpf_queued_state_dead("ACTIVE"));
	CHECK(!tpf_queued_state_dead(NULL));
	/* The values behind the classes: every name parses to its own value. */
	static const char *const names[] = { "READY", "CREATING", "STARTING", "RESTARTING",
					      "REPAIRING", "REIMAGING", "UNHIDING", "PREEMPTED",
					      "TERMINATED", "STOPPED", "STOPPING", "DELETING",
					      "HIDING", "HIDDEN" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		CHECKF(tpf_node_state_of(names[i]) == (enum tpf_node_state)(i + 1), "%s", names[i]);
	CHECK(tpf_node_state_of("ready") == TPF_NODE_STATE_OTHER);
	CHECK(tpf_node_state_of(NULL) == TPF_NODE_STATE_OTHER);
	CHECK(tpf_queued_state_of("ACTIVE") == TPF_QUEUED_ACTIVE);
	CHECK(tpf_queued_state_of("FAILED") == TPF_QUEUED_FAILED);
	CHECK(tpf_queued_state_of("SUSPENDED") == TPF_QUEUED_SUSPENDED);
	CHECK(tpf_queued_state_of("PROVISIONING") == TPF_QUEUED_PROVISIONING);
	CHECK(tpf_queued_state_of("CREATING") == TPF_QUEUED_CREATING);
	CHECK(tpf_queued_state_of("WAITING_FOR_RESOURCES") == TPF_QUEUED_OTHER);
	CHECK(tpf_queued_state_of(NULL) == TPF_QUEUED_OTHER);
	CHECK(tpf_node_health_bad("UNHEALTHY_MAINTENANCE"));
	CHECK(tpf_node_health_bad("DEGRADED"));
	CHECK(!tpf_node_health_bad("HEALTHY"));
	CHECK(!tpf_node_health_bad("HEALTH_UNSPECIFIED"));
	CHECK(!tpf_node_health_bad(NULL));
}

int main(void)
{
	RUN(test_rules__pool_runs_each_item_once_within_parallelism);
	RUN(test_rules__pool_stop_starts_nothing_new);
	RUN(test_rules__env_seconds);
	RUN(test_rules__node_state_classes);
	return unit_done();
}
