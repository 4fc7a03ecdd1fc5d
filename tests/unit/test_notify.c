/*
 * The webhook notifier (engine/telemetry/notify.c, engine/telemetry/notify_payload.c): the
 * payload and its redaction, and delivery against a libmicrohttpd listener
 * on loopback: retries (503 twice, then 200: delivered once), Retry-After,
 * a final status, order, the bounded queue dropping the oldest, the event
 * filter, and the drain deadline at exit.
 */
#include "engine/telemetry/notify.h"
#include "tests/unit/hook_server.h"
#include "tests/unit/unit.h"
#include "util/buf.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the notifier's side ---------------------------------------------- */

struct warnings {
	pthread_mutex_t mu;
	char text[8][512];
	int n;
};

static void on_warn(const char *msg, void *ctx)
{
	struct warnings *w = ctx;
	pthread_mutex_lock(&w->mu);
	if (w->n < 8)
		snprintf(w->text[w->n++], sizeof(w->text[0]), "%s", msg);
	pthread_mutex_unlock(&w->mu);
}

static struct tpf_notifier *notifier(struct hook *h, struct warnings *w, size_t queue_max,
				     unsigned events)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	struct tpf_notify_opts o = { .backoff = 0.05, .queue_max = queue_max, .warn = on_warn,
				     .ctx = w };
	struct tpf_notifier *n = NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_notifier_new(&n, &o, &d) == 0);
	tpf_diags_release(&d);
	struct tpf_notify_config cfg = { h->url, events, 0 };
	tpf_notifier_configure(n, &cfg, "f", NULL);
	return n;
}

static int post(struct tpf_notifier *n, enum tpf_notify_event e, const char *node,
		const char *msg)
{
	struct tpf_notify_event_data ev = { e, node, -1, msg, NULL, -1, NULL, 0 };
	return tpf_notifier_post(n, &ev);
}

/* Wait up to 10 s until n has sent `sent` documents; *st: its counts. */
static void wait_sent(struct tpf_notifier *n, long sent, struct tpf_notify_stats *st)
{
	double end = tpf_now_mono() + 10;
	for (;;) {
		tpf_notifier_stats(n, st);
		if (st->sent >= sent || tpf_now_mono() > end)
			return;
		tpf_sleep(0.01);
	}
}

#define ALL_EVENTS ((1u << TPF_NOTIFY_NEVENTS) - 1)

/* ---- tests -------------------------------------------------------------- */

static void test_notify__payload(void)
{
	struct tpf_kvlist secrets = { 0 };
	tpf_kvlist_set(&secrets, "TOKEN", "hunter2-secret");
	tpf_kvlist_set(&secrets, "TINY", "ab");
	struct tpf_notify_event_data ev = { TPF_NOTIFY_JOB_FAILED, "f-a-0", 1,
					    "f-a-0 worker 1: the job failed\nwith hunter2-secret",
					    NULL, 3, "auth hunter2-secret ab", 1795370000 };
	json_t *j = tpf_notify_payload(&ev, "f", &secrets, 0);
	CHECK_STR(json_string_value(json_object_get(j, "text")),
		  "tpuform f: f-a-0 worker 1: the job failed with ***");
	CHECK_STR(json_string_value(json_object_get(j, "event")), "job_failed");
	CHECK_STR(json_string_value(json_object_get(j, "fleet")), "f");
	CHECK_STR(json_string_value(json_object_get(j, "node")), "f-a-0");
	CHECK_INT(json_integer_value(json_object_get(j, "worker")), 1);
	CHECK_INT(json_integer_value(json_object_get(j, "exit_code")), 3);
	CHECK_STR(json_string_value(json_object_get(j, "time")), "2026-11-22T17:53:20Z");
	CHECK_STR(json_string_value(json_object_get(j, "last_log")), "auth *** ab");
	CHECK(json_is_null(json_object_get(j, "reason")));
	char *all = json_dumps(j, 0);
	CHECKF(!strstr(all, "hunter2"), "no secret anywhere: %s", all);
	free(all);
	json_decref(j);

	ev.worker = -1;
	ev.exit_code = -1;
	j = tpf_notify_payload(&ev, "f", &secrets, 0);
	CHECK(json_is_null(json_object_get(j, "worker")));
	CHECK(json_is_null(json_object_get(j, "exit_code")));
	json_decref(j);

	j = tpf_notify_payload(&ev, "f", &secrets, 1);
	CHECK_INT(json_object_size(j), 1);
	CHECK_STR(json_string_value(json_object_get(j, "text")),
		  "tpuform f: f-a-0 worker 1: the job failed with ***");
	json_decref(j);
	tpf_kvlist_release(&secrets);
}

static void test_notify__retries_then_delivers_once(void)
{
	struct hook h;
	struct warnings w;
	hook_start(&h);
	h.fail = 2;
	h.retry_after = "1";
	struct tpf_notifier *n = notifier(&h, &w, 0, ALL_EVENTS);
	CHECK_INT(post(n, TPF_NOTIFY_PREEMPTED, "f-a-1", "f-a-1: the node is preempted"), 1);
	struct tpf_notify_stats st;
	wait_sent(n, 1, &st);
	tpf_notifier_free(n, 5);
	CHECK_INT(h.n, 3);
	CHECK(h.n == 3 && !strcmp(h.bodies[0], h.bodies[2]) && !strcmp(h.bodies[1], h.bodies[2]));
	CHECKF(h.n == 3 && h.times[1] - h.times[0] >= 0.95, "Retry-After: 1 was honoured (%.2f s)",
	       h.times[1] - h.times[0]);
	CHECKF(h.n == 3 && h.times[2] - h.times[1] < 0.9,
	       "then the backoff, 0.05 s doubled (%.2f s)", h.times[2] - h.times[1]);
	CHECK(h.n && strstr(h.bodies[0], "\"event\":\"preempted\""));
	CHECK_INT(st.sent, 1);
	CHECK_INT(st.retries, 2);
	CHECK_INT(st.failed, 0);
	hook_stop(&h);
	CHECK_INT(w.n, 0);
}

static void test_notify__final_status(void)
{
	struct hook h;
	struct warnings w;
	hook_start(&h);
	h.status = 400;
	struct tpf_notifier *n = notifier(&h, &w, 0, ALL_EVENTS);
	post(n, TPF_NOTIFY_JOB_FAILED, "f-a-0", "f-a-0 worker 0: the job failed");
	struct tpf_notify_stats st;
	double end = tpf_now_mono() + 10;
	do {
		tpf_sleep(0.01);
		tpf_notifier_stats(n, &st);
	} while (!st.failed && tpf_now_mono() < end);
	tpf_notifier_free(n, 5);
	CHECK_INT(h.n, 1);
	CHECK_INT(st.failed, 1);
	CHECK_INT(st.sent, 0);
	CHECK_INT(w.n, 1);
	CHECK_STR(w.text[0], "notify: gave up on event job_failed of f-a-0 after 1 attempt: HTTP 400");
	CHECKF(!strstr(w.text[0], "127.0.0.1"), "the webhook URL is never in a warning");
	hook_stop(&h);
}

static void test_notify__queue_drops_oldest_and_keeps_order(void)
{
	struct hook h;
	struct warnings w;
	hook_start(&h);
	h.hold = 1;
	struct tpf_notifier *n = notifier(&h, &w, 2, ALL_EVENTS);
	post(n, TPF_NOTIFY_COMPLETED, "n0", "m0");
	hook_wait_arrived(&h, 1); /* n0 is in flight: the queue is empty */
	post(n, TPF_NOTIFY_COMPLETED, "n1", "m1");
	post(n, TPF_NOTIFY_COMPLETED, "n2", "m2");
	post(n, TPF_NOTIFY_COMPLETED, "n3", "m3"); /* drops n1 */
	post(n, TPF_NOTIFY_COMPLETED, "n4", "m4"); /* drops n2 */
	post(n, TPF_NOTIFY_COMPLETED, "n5", "m5"); /* drops n3 */
	pthread_mutex_lock(&h.mu);
	h.hold = 0;
	pthread_cond_broadcast(&h.cv);
	pthread_mutex_unlock(&h.mu);
	struct tpf_notify_stats st;
	wait_sent(n, 3, &st);
	tpf_notifier_free(n, 5);
	CHECK_INT(st.dropped, 3);
	CHECK_INT(st.sent, 3);
	CHECK_INT(h.n, 3);
	const char *want[] = { "\"node\":\"n0\"", "\"node\":\"n4\"", "\"node\":\"n5\"" };
	for (int i = 0; i < 3 && i < h.n; i++)
		CHECKF(strstr(h.bodies[i], want[i]), "delivery %d is %s: %s", i, want[i], h.bodies[i]);
	/* Warned at the 1st and 2nd drop, not the 3rd (powers of two). */
	CHECK_INT(w.n, 2);
	CHECK_STR(w.text[1], "notify: the queue of 2 events is full (the webhook is slow or down): "
			     "dropped the oldest; 2 dropped so far");
	hook_stop(&h);
}

static void test_notify__filter(void)
{
	struct hook h;
	struct warnings w;
	hook_start(&h);
	struct tpf_notifier *n = notifier(&h, &w, 0, 1u << TPF_NOTIFY_REPLACED);
	CHECK_INT(post(n, TPF_NOTIFY_PREEMPTED, "x", "not listed"), 0);
	CHECK_INT(post(n, TPF_NOTIFY_REPLACED, "x", "listed"), 1);
	tpf_notifier_configure(n, NULL, "f", NULL);
	CHECK_INT(post(n, TPF_NOTIFY_REPLACED, "x", "notify removed from the fleet file"), 0);
	hook_wait_arrived(&h, 1);
	tpf_notifier_free(n, 5);
	CHECK_INT(h.n, 1);
	CHECK(h.n && strstr(h.bodies[0], "listed"));
	hook_stop(&h);
}

static void test_notify__drain_deadline(void)
{
	struct hook h;
	struct warnings w;
	hook_start(&h);
	h.hold = 1; /* the receiver never answers */
	struct tpf_notifier *n = notifier(&h, &w, 0, ALL_EVENTS);
	post(n, TPF_NOTIFY_STALLED, "a", "first");
	hook_wait_arrived(&h, 1);
	post(n, TPF_NOTIFY_STALLED, "b", "second");
	double t0 = tpf_now_mono();
	tpf_notifier_free(n, 0.3);
	double took = tpf_now_mono() - t0;
	CHECKF(took < 3, "free returns soon after the drain time (%.2f s)", took);
	CHECK_INT(w.n, 2);
	CHECK(w.n == 2 && strstr(w.text[0], "gave up on event stalled of a after 1 attempt"));
	CHECK_STR(w.text[1], "notify: 1 event not delivered before exit");
	hook_stop(&h);
}

int main(void)
{
	RUN(test_notify__payload);
	RUN(test_notify__retries_then_delivers_once);
	RUN(test_notify__final_status);
	RUN(test_notify__queue_drops_oldest_and_keeps_order);
	RUN(test_notify__filter);
	RUN(test_notify__drain_deadline);
	return unit_done();
}
