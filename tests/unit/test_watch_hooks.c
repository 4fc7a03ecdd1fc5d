/*
 * What the watch loop's events and sessions mean as notifications
 * (engine/watch/watch_hooks.c), on hand-made sessions, posted to a local
 * libmicrohttpd receiver: job events keyed by try, restarts_exhausted,
 * completed on a 2-worker node, quota_deferred once, preempted when the
 * replacement's delete starts (once) and replaced when its create completes.
 */
#include "engine/watch/watch_internal.h"
#include "tests/unit/hook_server.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static void fact(struct tpf_pipeline *s, const char *node, int w, const char *session, int code)
{
	XGROW(s->facts.items, s->facts.n + 1, s->facts.alloc);
	struct tpf_job_fact *f = &s->facts.items[s->facts.n++];
	memset(f, 0, sizeof(*f));
	f->node = xstrdup(node);
	f->worker = w;
	f->state = session ? tpf_job_state_from_name(session) : TPF_JOB_STATE_UNREACHABLE;
	f->exit_code = code;
	f->last_log = xstrdup(code ? "boom with tok-SECRET-9" : "done");
}

static void desired(struct tpf_pipeline *s, const char *name, const char *group, int workers,
		    int deferred)
{
	s->desired.nodes = xrealloc(s->desired.nodes, (s->desired.n + 1) * sizeof(*s->desired.nodes));
	struct tpf_desired_node *dn = &s->desired.nodes[s->desired.n++];
	memset(dn, 0, sizeof(*dn));
	dn->name = xstrdup(name);
	dn->group = xstrdup(group);
	dn->recipe.workers = workers;
	dn->deferred = deferred;
}

static void session(struct tpf_pipeline *s, const char *url)
{
	memset(s, 0, sizeof(*s));
	tpf_diags_init(&s->d);
	s->fleet.name = xstrdup("f");
	s->fleet.policy.restart = TPF_RESTART_ON_FAILURE;
	s->fleet.policy.max_restarts = 1;
	s->fleet.notify.webhook = xstrdup(url);
	s->fleet.notify.events = (1u << TPF_NOTIFY_NEVENTS) - 1;
	tpf_kvlist_set(&s->fleet.secrets, "TOK", "tok-SECRET-9");
	s->fleet.groups = xcalloc(2, sizeof(*s->fleet.groups));
	s->fleet.ngroups = 2;
	s->fleet.groups[0].name = xstrdup("a");
	s->fleet.groups[0].count = 1;
	s->fleet.groups[1].name = xstrdup("q");
	s->fleet.groups[1].count = 1;
	s->fleet.groups[1].accelerator_type = xstrdup("v2-8");
	/* Each group's policy starts from the fleet's, as config_group.c's. */
	s->fleet.groups[0].policy = s->fleet.policy;
	s->fleet.groups[1].policy = s->fleet.policy;
	desired(s, "f-a-0", "a", 2, 0);
	desired(s, "f-q-0", "q", 1, 1);
	struct tpf_state_node *sn = tpf_state_add(&s->state, "f-a-0");
	tpf_state_node_set_workers(sn, 2);
	sn->workers[1].restarts = 1;
}

static void session_release(struct tpf_pipeline *s)
{
	tpf_fleet_release(&s->fleet);
	tpf_desired_release(&s->desired);
	tpf_job_facts_release(&s->facts);
	tpf_state_release(&s->state);
	tpf_diags_release(&s->d);
}

static void emit(struct tpf_watch_opts *o, const struct tpf_watch_event *ev)
{
	o->on_event(ev, o->ctx);
}

/* An executor step k of the action that `action` started. */
static void apply(struct tpf_watch_opts *o, enum tpf_event_kind k, enum tpf_event_kind action,
		  const char *node)
{
	struct tpf_event ae = TPF_EVENT_INIT(k);
	ae.action = action;
	ae.node = node;
	ae.id = "id-2";
	ae.workers = 2;
	struct tpf_watch_event ev = { .kind = TPF_WATCH_EVENT, .event = &ae };
	emit(o, &ev);
}

/* The (event, node, worker) of each delivered body, "event node/w" lines. */
static void delivered(struct hook *h, struct tpf_buf *out)
{
	for (int i = 0; i < h->n; i++) {
		json_t *j = json_loads(h->bodies[i], 0, NULL);
		json_t *w = json_object_get(j, "worker");
		const char *node = json_string_value(json_object_get(j, "node"));
		tpf_buf_addf(out, "%s %s", json_string_value(json_object_get(j, "event")),
			     node ? node : "-");
		if (json_is_integer(w))
			tpf_buf_addf(out, "/%d", (int)json_integer_value(w));
		tpf_buf_addch(out, '\n');
		json_decref(j);
	}
}

static void test_watch_hooks__notifications(void)
{
	struct hook h;
	hook_start(&h);
	struct tpf_watch_opts o = { .interval = 1 };
	struct tpf_watch_hooks *hk = tpf_watch_hooks_new(&o);
	CHECK(hk != NULL && o.on_event != NULL);
	struct tpf_pipeline s;
	session(&s, h.url);
	fact(&s, "f-a-0", 0, "exited", 0);
	fact(&s, "f-a-0", 1, "exited", 2);
	tpf_watch_hooks_seen(hk, &s, 1, tpf_now_mono());
	/* The same reports again: nothing new. Not probed: facts are not read. */
	tpf_watch_hooks_seen(hk, &s, 1, tpf_now_mono());
	tpf_watch_hooks_seen(hk, &s, 0, tpf_now_mono());

	/* A node no zone can take: posted once until it is created, then again
	 * when it is deferred anew (the kind, not the message, says so). */
	apply(&o, TPF_EVENT_DEFERRED, TPF_EVENT_CREATING, "f-x-0");
	apply(&o, TPF_EVENT_DEFERRED, TPF_EVENT_CREATING, "f-x-0");
	apply(&o, TPF_EVENT_ZONE_REFUSED, TPF_EVENT_CREATING, "f-x-0");
	apply(&o, TPF_EVENT_READY, TPF_EVENT_CREATING, "f-x-0");
	apply(&o, TPF_EVENT_DEFERRED, TPF_EVENT_CREATING, "f-x-0");

	/* The lost node's replacement: detected, deleted (twice: one event),
	 * created. A restart in flight hides its node's reports. A restart
	 * for a stalled job is said by its reason code. */
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	struct tpf_action *a = tpf_plan_add(&p, TPF_ACT_REPLACE, "f-b-0");
	tpf_action_set_reason_code(a, "preempted");
	a->reason = xstrdup("the node is preempted");
	a = tpf_plan_add(&p, TPF_ACT_RESTART, "f-a-0");
	tpf_action_set_reason_code(a, "session");
	a->reason = xstrdup("the job stalled? no: its session died"); /* text is not read */
	a = tpf_plan_add(&p, TPF_ACT_RESTART, "f-c-0");
	tpf_action_set_reason_code(a, "stalled");
	a->reason = xstrdup("no progress for 600 s");
	struct tpf_watch_event ev = { .kind = TPF_WATCH_ACTIONS, .plan = &p };
	emit(&o, &ev);
	apply(&o, TPF_EVENT_DELETING, TPF_EVENT_DELETING, "f-b-0");
	apply(&o, TPF_EVENT_DELETING, TPF_EVENT_DELETING, "f-b-0");
	apply(&o, TPF_EVENT_DELETED, TPF_EVENT_DELETING, "f-b-0");
	apply(&o, TPF_EVENT_CREATING, TPF_EVENT_CREATING, "f-b-0");
	apply(&o, TPF_EVENT_READY, TPF_EVENT_CREATING, "f-b-0");
	s.state.nodes[0].workers[1].restarts = 2; /* the restart counted a new try */
	s.facts.items[1].state = TPF_JOB_STATE_DEAD; /* seen between two tries */
	tpf_watch_hooks_seen(hk, &s, 1, tpf_now_mono());
	double before = tpf_now_mono();
	tpf_sleep(0.01);
	apply(&o, TPF_EVENT_RESTARTED, TPF_EVENT_RESTARTING, "f-a-0");
	/* The new try of worker 1 exits 0: the node is complete. A round whose
	 * refresh began before the restart ended does not say so yet. */
	s.facts.items[1].state = TPF_JOB_STATE_EXITED;
	s.facts.items[1].exit_code = 0;
	tpf_watch_hooks_seen(hk, &s, 1, before);
	tpf_sleep(0.01);
	tpf_watch_hooks_seen(hk, &s, 1, tpf_now_mono());
	tpf_watch_hooks_seen(hk, &s, 1, tpf_now_mono());
	tpf_plan_release(&p);

	tpf_watch_hooks_free(hk);
	CHECK(o.on_event == NULL);
	struct tpf_buf got = TPF_BUF_INIT;
	delivered(&h, &got);
	CHECK_STR(got.buf, "quota_deferred -\n"
			   "job_succeeded f-a-0/0\n"
			   "job_failed f-a-0/1\n"
			   "restarts_exhausted f-a-0/1\n"
			   "quota_deferred f-x-0\n"
			   "quota_deferred f-x-0\n"
			   "stalled f-c-0\n"
			   "preempted f-b-0\n"
			   "replaced f-b-0\n"
			   "job_succeeded f-a-0/1\n"
			   "completed f-a-0\n");
	for (int i = 0; i < h.n; i++)
		CHECKF(!strstr(h.bodies[i], "SECRET"), "no secret: %s", h.bodies[i]);
	CHECK(h.n > 2 && strstr(h.bodies[2], "\"last_log\":\"boom with ***\""));
	tpf_buf_release(&got);
	session_release(&s);
	hook_stop(&h);
}

/* A stalled job with no restart left is restarts_exhausted too (issue 19),
 * once per try; one still within its restarts, or not stalled, is not. */
static void test_watch_hooks__stall_exhausts_restarts(void)
{
	struct hook h;
	hook_start(&h);
	struct tpf_watch_opts o = { .interval = 1 };
	struct tpf_watch_hooks *hk = tpf_watch_hooks_new(&o);
	struct tpf_pipeline s;
	session(&s, h.url);
	s.fleet.groups[0].policy.stall_timeout = 600;
	s.state.nodes[0].group = xstrdup("a");
	fact(&s, "f-a-0", 0, "alive", 0);
	fact(&s, "f-a-0", 1, "alive", 0);
	s.facts.items[0].stalled_for = 900; /* stalled, but 0 restarts of 1 used */
	s.facts.items[1].stalled_for = 900; /* stalled, its 1 restart used */
	tpf_watch_hooks_seen(hk, &s, 1, tpf_now_mono());
	tpf_watch_hooks_seen(hk, &s, 1, tpf_now_mono()); /* the same try: no repeat */
	s.facts.items[1].stalled_for = 10;                /* moving again */
	tpf_watch_hooks_seen(hk, &s, 1, tpf_now_mono());
	tpf_watch_hooks_free(hk);
	struct tpf_buf got = TPF_BUF_INIT;
	delivered(&h, &got);
	CHECK_STR(got.buf, "quota_deferred -\nrestarts_exhausted f-a-0/1\n");
	CHECK(h.n == 2 && strstr(h.bodies[1], "stalled and max_restarts (1) is used up"));
	tpf_buf_release(&got);
	session_release(&s);
	hook_stop(&h);
}

/* Exit codes in restart_on_exit_codes: [42], the restart used up on both
 * workers (issue 26). Exit 42 is one the policy restarts: restarts_exhausted.
 * Exit 3 was never to be restarted (the run ended on purpose):
 * job_failed only, never restarts_exhausted. The plan's rule
 * (tpf_worker_exhausted) and the hooks' agree. */
static void test_watch_hooks__exit_code_not_restarted_is_not_exhausted(void)
{
	struct hook h;
	hook_start(&h);
	struct tpf_watch_opts o = { .interval = 1 };
	struct tpf_watch_hooks *hk = tpf_watch_hooks_new(&o);
	struct tpf_pipeline s;
	session(&s, h.url);
	struct tpf_job_policy *pol = &s.fleet.groups[0].policy;
	pol->exit_codes_set = 1;
	pol->restart_codes[42 / 8] = (unsigned char)(1u << (42 % 8));
	s.state.nodes[0].group = xstrdup("a");
	s.state.nodes[0].workers[0].restarts = 1;
	fact(&s, "f-a-0", 0, "exited", 42);
	fact(&s, "f-a-0", 1, "exited", 3);
	CHECK(tpf_worker_exhausted(&s.fleet, &s.state.nodes[0], 0, &s.facts));
	CHECK(!tpf_worker_exhausted(&s.fleet, &s.state.nodes[0], 1, &s.facts));
	tpf_watch_hooks_seen(hk, &s, 1, tpf_now_mono());
	tpf_watch_hooks_free(hk);
	struct tpf_buf got = TPF_BUF_INIT;
	delivered(&h, &got);
	CHECK_STR(got.buf, "quota_deferred -\n"
			   "job_failed f-a-0/0\n"
			   "restarts_exhausted f-a-0/0\n"
			   "job_failed f-a-0/1\n");
	tpf_buf_release(&got);
	session_release(&s);
	hook_stop(&h);
}

/* max_restarts per group (issue 26): group a gives 3 over the fleet's 1.
 * Its worker that failed after 1 restart is restarted (no
 * restarts_exhausted); after 3 it is exhausted, and the message names the
 * group's 3. */
static void test_watch_hooks__group_max_restarts(void)
{
	struct hook h;
	hook_start(&h);
	struct tpf_watch_opts o = { .interval = 1 };
	struct tpf_watch_hooks *hk = tpf_watch_hooks_new(&o);
	struct tpf_pipeline s;
	session(&s, h.url);
	s.fleet.groups[0].policy.max_restarts = 3;
	s.state.nodes[0].group = xstrdup("a");
	fact(&s, "f-a-0", 0, "alive", 0);
	fact(&s, "f-a-0", 1, "exited", 1); /* after 1 restart: 2 left */
	tpf_watch_hooks_seen(hk, &s, 1, tpf_now_mono());
	s.state.nodes[0].workers[1].restarts = 3; /* the next try, the last one */
	tpf_watch_hooks_seen(hk, &s, 1, tpf_now_mono());
	tpf_watch_hooks_free(hk);
	struct tpf_buf got = TPF_BUF_INIT;
	delivered(&h, &got);
	CHECK_STR(got.buf, "quota_deferred -\n"
			   "job_failed f-a-0/1\n"
			   "job_failed f-a-0/1\n"
			   "restarts_exhausted f-a-0/1\n");
	CHECK(h.n == 4 && strstr(h.bodies[3], "failed and max_restarts (3) is used up"));
	tpf_buf_release(&got);
	session_release(&s);
	hook_stop(&h);
}

/* The preempted events the hooks passed on, and their elapsed. */
static int npreempted;
static double preempted_elapsed;
static void capture(const struct tpf_watch_event *ev, void *ctx)
{
	(void)ctx;
	if (ev->kind == TPF_WATCH_EVENT && ev->event->kind == TPF_EVENT_PREEMPTED) {
		npreempted++;
		preempted_elapsed = ev->event->elapsed;
	}
}

/* A loss found by watch's first round, healed before the round's
 * tpf_watch_hooks_seen (heal_nodes_first): its elapsed counts from the
 * round's start, not from the monotonic clock's origin (the machine's
 * uptime: issue 29 item 7). */
static void test_watch_hooks__first_round_loss_elapsed(void)
{
	struct hook h;
	hook_start(&h);
	struct tpf_watch_opts o = { .interval = 1, .on_event = capture };
	struct tpf_watch_hooks *hk = tpf_watch_hooks_new(&o);
	struct tpf_pipeline s;
	session(&s, h.url);
	double started = tpf_now_mono();
	tpf_sleep(0.05);
	tpf_watch_hooks_ready(hk, &s, started);
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	struct tpf_action *a = tpf_plan_add(&p, TPF_ACT_REPLACE, "f-b-0");
	tpf_action_set_reason_code(a, "preempted");
	struct tpf_watch_event ev = { .kind = TPF_WATCH_ACTIONS, .plan = &p };
	emit(&o, &ev);
	apply(&o, TPF_EVENT_DELETING, TPF_EVENT_DELETING, "f-b-0");
	CHECK(npreempted == 1);
	/* at least the 0.05 s slept since the round began, and not the
	 * clock's origin (bounded generously: a loaded machine) */
	CHECK(preempted_elapsed >= 0.04);
	CHECK(preempted_elapsed < 60);
	tpf_plan_release(&p);
	tpf_watch_hooks_free(hk);
	session_release(&s);
	hook_stop(&h);
}

int main(void)
{
	RUN(test_watch_hooks__first_round_loss_elapsed);
	RUN(test_watch_hooks__notifications);
	RUN(test_watch_hooks__stall_exhausts_restarts);
	RUN(test_watch_hooks__exit_code_not_restarted_is_not_exhausted);
	RUN(test_watch_hooks__group_max_restarts);
	return unit_done();
}
