/*
 * The watch loop's rules (engine/watch/watch_unhealthy.c, engine/watch/watch_summary.c)
 * on hand-made sessions: no provider, no threads.
 */
#include "engine/watch/watch_internal.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct notes {
	int n;
	char code[8][32];
	char node[8][32];
};

static void on_event(const struct tpf_watch_event *ev, void *ctx)
{
	struct notes *w = ctx;
	if (ev->kind != TPF_WATCH_EVENT || w->n >= 8)
		return;
	/* The code `watch -json` shows, from the kind's row. */
	snprintf(w->code[w->n], sizeof(w->code[0]), "%s", tpf_event_info(ev->event->kind)->code);
	snprintf(w->node[w->n], sizeof(w->node[0]), "%s", ev->event->node ? ev->event->node : "");
	w->n++;
}

static void live(struct tpf_pipeline *s, const char *name, const char *state, const char *health,
		 const char *queued_state)
{
	struct tpf_live_node *ln = tpf_live_set_add(&s->live);
	ln->name = xstrdup(name);
	ln->id = xasprintf("id-%s", name);
	ln->state = xstrdup(state);
	ln->health = xstrdup(health);
	ln->queued_state = xstrdup(queued_state);
	ln->recipe.zone = xstrdup("z1");
}

/* A session whose desired nodes are names[0..n). */
static void session(struct tpf_pipeline *s, const char *const *names, size_t n)
{
	memset(s, 0, sizeof(*s));
	tpf_diags_init(&s->d);
	s->fleet.name = (char *)"w";
	s->desired.nodes = xcalloc(n, sizeof(*s->desired.nodes));
	s->desired.n = n;
	for (size_t i = 0; i < n; i++) {
		s->desired.nodes[i].name = xstrdup(names[i]);
		s->desired.nodes[i].group = xstrdup("a");
		s->desired.nodes[i].index = (int)i;
	}
}

static void session_release(struct tpf_pipeline *s)
{
	tpf_live_set_release(&s->live);
	tpf_desired_release(&s->desired);
	tpf_diags_release(&s->d);
}

static void test_watch__unhealthy_is_replaced_after_the_timeout(void)
{
	static const char *const names[] = { "w-a-0", "w-a-1", "w-a-2" };
	struct tpf_pipeline s;
	session(&s, names, 3);
	live(&s, "w-a-0", "READY", "UNHEALTHY_MAINTENANCE", NULL);
	live(&s, "w-a-1", "READY", "HEALTHY", NULL);
	live(&s, "w-a-2", "CREATING", "TIMEOUT", NULL); /* not READY: not this policy's */
	live(&s, "w-x-9", "READY", "TIMEOUT", NULL);    /* not desired: never replaced */
	struct notes seen = { 0 };
	struct tpf_watch_opts o = { .on_event = on_event, .ctx = &seen };
	struct tpf_unhealthy_set u = { 0 };
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));

	tpf_watch_check_unhealthy(&u, &s, &p, 60, 100, &o);
	CHECK_INT(p.n, 0);
	CHECK_INT(seen.n, 2); /* first seen: a note each, once */
	CHECK_STR(seen.code[0], "unhealthy");
	CHECK_STR(seen.node[0], "w-a-0");
	CHECK_STR(seen.node[1], "w-x-9");
	tpf_watch_check_unhealthy(&u, &s, &p, 60, 159, &o);
	CHECK_INT(p.n, 0);
	CHECK_INT(seen.n, 2);

	tpf_watch_check_unhealthy(&u, &s, &p, 60, 160, &o);
	CHECK_INT(p.n, 1);
	CHECK(p.n == 1 && p.actions[0].kind == TPF_ACT_REPLACE &&
	      !strcmp(p.actions[0].node, "w-a-0"));
	CHECK(p.n == 1 && p.actions[0].reason_code && !strcmp(p.actions[0].reason_code, "unhealthy"));
	CHECK(p.n == 1 && p.actions[0].desired && !strcmp(p.actions[0].desired->name, "w-a-0"));
	CHECK(p.n == 1 && p.actions[0].id && !strcmp(p.actions[0].id, "id-w-a-0"));
	CHECK_INT(p.add + p.destroyed, 2); /* counts recomputed: a replace is one of each */
	tpf_plan_release(&p);
	memset(&p, 0, sizeof(p));

	/* One replace per timeout: not again in the next round. */
	tpf_watch_check_unhealthy(&u, &s, &p, 60, 161, &o);
	CHECK_INT(p.n, 0);
	tpf_plan_release(&p);
	tpf_unhealthy_release(&u);
	session_release(&s);
}

static void test_watch__planned_or_recovered_nodes_are_left_alone(void)
{
	static const char *const names[] = { "w-a-0" };
	struct tpf_pipeline s;
	session(&s, names, 1);
	live(&s, "w-a-0", "READY", "TIMEOUT", NULL);
	struct notes seen = { 0 };
	struct tpf_watch_opts o = { .on_event = on_event, .ctx = &seen };
	struct tpf_unhealthy_set u = { 0 };
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	tpf_watch_check_unhealthy(&u, &s, &p, 10, 0, &o);
	/* The plan already acts on it (say, a restart): no second action. */
	tpf_plan_add(&p, TPF_ACT_RESTART, "w-a-0");
	tpf_watch_check_unhealthy(&u, &s, &p, 10, 20, &o);
	CHECK_INT(p.n, 1);
	CHECK(p.actions[0].kind == TPF_ACT_RESTART);
	tpf_plan_release(&p);
	memset(&p, 0, sizeof(p));

	/* Recovered: forgotten, so the clock starts again if it falls ill. */
	free(s.live.nodes[0].health);
	s.live.nodes[0].health = xstrdup("HEALTHY");
	tpf_watch_check_unhealthy(&u, &s, &p, 10, 30, &o);
	CHECK_INT(u.n, 0);
	free(s.live.nodes[0].health);
	s.live.nodes[0].health = xstrdup("TIMEOUT");
	tpf_watch_check_unhealthy(&u, &s, &p, 10, 35, &o);
	CHECK_INT(seen.n, 2);
	tpf_watch_check_unhealthy(&u, &s, &p, 10, 44, &o);
	CHECK_INT(p.n, 0);
	tpf_plan_release(&p);
	tpf_unhealthy_release(&u);
	session_release(&s);
}

static void test_watch__summary_classes(void)
{
	static const char *const names[] = { "w-a-0", "w-a-1", "w-a-2", "w-a-3", "w-a-4",
					     "w-a-5", "w-a-6", "w-a-7", "w-a-8" };
	struct tpf_pipeline s;
	session(&s, names, 9);
	s.desired.nodes[7].deferred = 1;
	s.fleet.state_path = (char *)"unused";
	live(&s, "w-a-0", "READY", "HEALTHY", NULL);
	live(&s, "w-a-1", "PREEMPTED", NULL, NULL);
	live(&s, "w-a-2", "STOPPING", NULL, NULL); /* dead too: tpuform never starts a node */
	live(&s, "w-a-3", "CREATING", NULL, NULL);
	live(&s, "w-a-4", "WAITING_FOR_RESOURCES", NULL, "WAITING_FOR_RESOURCES");
	live(&s, "w-a-5", "FAILED", NULL, "FAILED");
	live(&s, "w-a-6", "REPAIRING", NULL, "ACTIVE"); /* a node of a queued resource */
	struct tpf_watch_summary sum;
	tpf_watch_summarise(&s, &sum, 3, 2, 0);
	CHECK_INT(sum.desired, 9);
	CHECK_INT(sum.alive, 1);
	CHECK_INT(sum.dead, 3);
	CHECK_INT(sum.creating, 2);
	CHECK_INT(sum.queued, 1);
	CHECK_INT(sum.waiting, 1);
	CHECK_INT(sum.missing, 1);
	CHECK_INT(sum.round, 3);
	CHECK_INT(sum.pending, 2);
	CHECK_STR(sum.line, "alive 1/9, creating 2, waiting for quota 1, dead 3, missing 1, queued 1");
	CHECK_STR(sum.time, "1970-01-01T00:00:00Z");
	CHECK_STR(sum.fleet, "w");
	session_release(&s);
}

/* Collects the summaries of the diagnostics watch passes on. */
static void on_diags(const struct tpf_watch_event *ev, void *ctx)
{
	struct tpf_buf *b = ctx;
	if (ev->kind != TPF_WATCH_DIAGS)
		return;
	for (size_t i = 0; i < ev->diags->n; i++)
		tpf_buf_addf(b, "%s;", ev->diags->items[i].summary);
}

/* One round's diagnostics: the warnings in `warnings` (';'-separated) and
 * one error when err; what was passed on is appended to *b, then "|". */
static void round_of(struct tpf_watch_opts *o, long round, const char *warnings, int err,
		     struct tpf_buf *b)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *copy = xstrdup(warnings), *save = NULL;
	for (char *w = strtok_r(copy, ";", &save); w; w = strtok_r(NULL, ";", &save))
		tpf_warn(&d, "n-0", "%s", w);
	if (err)
		tpf_error(&d, "E");
	tpf_watch_warnings_round(round);
	tpf_watch_diags(o, &d);
	tpf_watch_diags(o, &d); /* said twice in one round (probe and heal): once */
	tpf_buf_adds(b, "|");
	free(copy);
	tpf_diags_release(&d);
}

/* A standing warning is said once; again when its text changes or it comes
 * back after a round without it; errors every time (issue 19). */
static void test_watch__warnings_once(void)
{
	struct tpf_buf b = TPF_BUF_INIT;
	struct tpf_watch_opts o = { .on_event = on_diags, .ctx = &b };
	tpf_watch_warnings_forget();
	round_of(&o, 1, "W;X", 0, &b);
	round_of(&o, 2, "W", 1, &b);
	round_of(&o, 3, "", 0, &b);
	round_of(&o, 4, "W;X2", 0, &b);
	round_of(&o, 5, "W", 0, &b);
	CHECK_STR(b.buf, "W;X;|E;E;||W;X2;||");
	tpf_watch_warnings_forget();
	tpf_buf_release(&b);
}

int main(void)
{
	RUN(test_watch__warnings_once);
	RUN(test_watch__unhealthy_is_replaced_after_the_timeout);
	RUN(test_watch__planned_or_recovered_nodes_are_left_alone);
	RUN(test_watch__summary_classes);
	return unit_done();
}
