/*
 * tpuform watch: refresh -> plan -> heal, in a loop, for weeks.
 *
 * Each round lists the fleet's nodes once per zone and, when a session
 * check is due, asks every worker for its session. Healing actions
 * (tpf_action_is_healing) are applied at once; other changes are reported
 * every round and applied only with -apply-all. The state lock is taken
 * only while healing, so plan and show work from another shell. SIGINT and
 * SIGTERM finish the step in flight, save state and exit 0; nothing is
 * deleted on the way out.
 */
#include "cmd/cmd.h"
#include "plan/backoff.h"
#include "plan/plan_internal.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct watch_opts {
	double interval;
	double session_check;
	double unhealthy_timeout;
	int apply_all;
	int max_rounds;
};

static void say_event(const char *node, const char *event, const char *message);

/* Nodes seen READY but not HEALTHY, and since when (monotonic seconds). */
struct unhealthy {
	char *node;
	double since;
	int seen; /* still unhealthy this round */
};

struct unhealthy_set {
	struct unhealthy *items;
	size_t n, alloc;
};

static void unhealthy_release(struct unhealthy_set *u)
{
	for (size_t i = 0; i < u->n; i++)
		free(u->items[i].node);
	free(u->items);
}

/*
 * A READY node whose health stays other than HEALTHY (Node.health:
 * TIMEOUT, UNHEALTHY_TENSORFLOW, UNHEALTHY_MAINTENANCE) for longer than the
 * timeout is replaced, as a preempted one is. Adds the replace actions to
 * p (healing) for nodes the plan does not already act on.
 */
static void check_unhealthy(struct unhealthy_set *u, const struct tpf_session *s,
			    struct tpf_plan *p, double timeout, double now)
{
	for (size_t i = 0; i < u->n; i++)
		u->items[i].seen = 0;
	for (size_t i = 0; i < s->live.n; i++) {
		const struct tpf_live_node *ln = &s->live.nodes[i];
		if (!ln->state || strcmp(ln->state, "READY") || !ln->health ||
		    !strcmp(ln->health, "HEALTHY") || !strcmp(ln->health, "HEALTH_UNSPECIFIED"))
			continue;
		struct unhealthy *e = NULL;
		for (size_t k = 0; k < u->n && !e; k++)
			if (!strcmp(u->items[k].node, ln->name))
				e = &u->items[k];
		if (!e) {
			XGROW(u->items, u->n + 1, u->alloc);
			e = &u->items[u->n++];
			e->node = xstrdup(ln->name);
			e->since = now;
			char *msg = xasprintf("health is %s: replacing if it lasts %.0f s", ln->health,
					      timeout);
			say_event(ln->name, "unhealthy", msg);
			free(msg);
		}
		e->seen = 1;
		if (now - e->since < timeout)
			continue;
		int planned = 0;
		for (size_t k = 0; k < p->n; k++)
			planned |= !strcmp(p->actions[k].node, ln->name);
		const struct tpf_desired_node *dn = NULL;
		for (size_t k = 0; k < s->desired.n && !dn; k++)
			if (!strcmp(s->desired.nodes[k].name, ln->name))
				dn = &s->desired.nodes[k];
		if (planned || !dn)
			continue;
		struct tpf_action *a = tpf_plan_add(p, TPF_ACT_REPLACE, ln->name);
		a->reason_code = xstrdup("unhealthy");
		a->reason = xasprintf("the node has been %s for %.0f s", ln->health, now - e->since);
		a->zone = xstrdup(ln->recipe.zone);
		a->id = xstrdup(ln->id);
		a->desired = xcalloc(1, sizeof(*a->desired));
		tpf_desired_node_copy(a->desired, dn);
		e->since = now; /* one replace per timeout */
	}
	/* Forget nodes that recovered or went away. */
	size_t keep = 0;
	for (size_t i = 0; i < u->n; i++) {
		if (u->items[i].seen)
			u->items[keep++] = u->items[i];
		else
			free(u->items[i].node);
	}
	u->n = keep;
	tpf_plan_recount(p);
}

static void stamp(char *out, size_t len)
{
	tpf_rfc3339(tpf_now_wall(), out, len);
}

/* One event line: "TIME NODE: message", or a watch_event JSON line. */
static void say_event(const char *node, const char *event, const char *message)
{
	char ts[40];
	stamp(ts, sizeof(ts));
	if (tpf_ui.json) {
		char *msg = xasprintf("%s: %s", node ? node : "fleet", message);
		tpf_ui_json("info", "watch_event", msg,
			    json_pack("{s:s*,s:s,s:s}", "node", node, "event", event, "detail", message));
		free(msg);
	} else {
		tpf_ui_say("%s %s%s%s\n", ts, node ? node : "", node ? ": " : "", message);
	}
}

static void watch_event(const struct tpf_event *ev, void *ctx)
{
	(void)ctx;
	char buf[512];
	switch (ev->kind) {
	case TPF_EV_START:
		if (!strcmp(ev->verb, "create"))
			say_event(ev->node, "creating", "creating");
		else if (!strcmp(ev->verb, "delete"))
			say_event(ev->node, "deleting", "deleting");
		else if (!strcmp(ev->verb, "restart"))
			say_event(ev->node, "restarting", "restarting sessions");
		break;
	case TPF_EV_COMPLETE:
		if (!strcmp(ev->verb, "create") && ev->message) {
			/* queued, not created: the note before said so */
		} else if (!strcmp(ev->verb, "create")) {
			snprintf(buf, sizeof(buf), "READY after %.0fs [id=%s]", ev->elapsed,
				 ev->id ? ev->id : "?");
			say_event(ev->node, "ready", buf);
		} else if (!strcmp(ev->verb, "delete")) {
			say_event(ev->node, "deleted", "deleted");
		}
		break;
	case TPF_EV_ERRORED:
		snprintf(buf, sizeof(buf), "%s failed (details below)", ev->verb);
		say_event(ev->node, "error", buf);
		break;
	case TPF_EV_WORKER:
		snprintf(buf, sizeof(buf), "w%d: %s", ev->worker,
			 !strcmp(ev->result, "changed") ? "session started"
			 : !strcmp(ev->result, "ok") ? "session already running" : ev->result);
		say_event(ev->node, !strcmp(ev->result, "changed") ? "session_started" : ev->result, buf);
		break;
	case TPF_EV_NOTE:
		say_event(ev->node, !strncmp(ev->message, "deferred", 8) ? "deferred"
				    : !strncmp(ev->message, "queued", 6) ? "queued" : "note",
			  ev->message);
		break;
	case TPF_EV_PROGRESS:
		break;
	}
}

/* Detection lines: what this round found and will do about it. */
static void report_actions(const struct tpf_plan *p, const char *prefix)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct tpf_action *a = &p->actions[i];
		char *msg;
		switch (a->kind) {
		case TPF_ACT_REPLACE:
			msg = xasprintf("%s%s: replacing", prefix, a->reason ? a->reason : "dead");
			break;
		case TPF_ACT_CREATE:
			msg = xasprintf("%s%s", prefix,
					a->reason ? a->reason : "declared but not created: creating");
			break;
		case TPF_ACT_DELETE:
			msg = xasprintf("%sdelete (%s)", prefix, a->reason ? a->reason : "");
			break;
		default:
			msg = xasprintf("%s%s", prefix, a->reason ? a->reason : tpf_action_name(a->kind));
			break;
		}
		say_event(a->node, a->reason_code ? a->reason_code : tpf_action_name(a->kind), msg);
		free(msg);
	}
}

struct summary {
	int desired, alive, creating, waiting, dead, missing;
	int queued; /* a queued resource waits for capacity (or is on its way) */
};

static void summarise(const struct tpf_session *s, struct summary *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (size_t i = 0; i < s->desired.n; i++) {
		const struct tpf_desired_node *dn = &s->desired.nodes[i];
		const struct tpf_live_node *ln = tpf_live_set_find(&s->live, dn->name);
		sum->desired++;
		if (!ln) {
			if (dn->deferred)
				sum->waiting++;
			else
				sum->missing++;
			continue;
		}
		const char *st = ln->state ? ln->state : "";
		/* The queued resource's state stands for a node not there yet. */
		int by_queue = ln->queued_state && !strcmp(st, ln->queued_state);
		if (!strcmp(st, "READY"))
			sum->alive++;
		else if (!strcmp(st, "PREEMPTED") || !strcmp(st, "TERMINATED") || !strcmp(st, "STOPPED") ||
			 (by_queue && (!strcmp(st, "FAILED") || !strcmp(st, "SUSPENDED"))))
			sum->dead++;
		else if (by_queue)
			sum->queued++;
		else
			sum->creating++;
	}
}

static void report_summary(const struct tpf_session *s, const struct summary *sum, int round,
			   size_t pending)
{
	char line[512];
	snprintf(line, sizeof(line),
		 "alive %d/%d, creating %d, waiting for quota %d, dead %d, missing %d, queued %d",
		 sum->alive, sum->desired, sum->creating, sum->waiting, sum->dead, sum->missing,
		 sum->queued);
	char ts[40];
	stamp(ts, sizeof(ts));
	if (tpf_ui.json) {
		tpf_ui_json("info", "watch_summary", line,
			    json_pack("{s:{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:I}}", "summary", "alive",
				      sum->alive, "desired", sum->desired, "creating", sum->creating,
				      "waiting", sum->waiting, "dead", sum->dead, "missing", sum->missing,
				      "queued", sum->queued, "round", round, "pending_changes",
				      (json_int_t)pending));
	} else {
		tpf_ui_say("%s fleet %s: %s%s\n", ts, s->fleet.name, line,
			   pending ? " (changes pending: -apply-all or 'tpuform apply')" : "");
	}
	/* `tpuform show` reads the last summary from beside the state. */
	json_t *j = json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:I}", "time", ts, "summary",
			      line, "alive", sum->alive, "desired", sum->desired, "creating",
			      sum->creating, "waiting", sum->waiting, "dead", sum->dead, "missing",
			      sum->missing, "queued", sum->queued, "round", round, "pending_changes",
			      (json_int_t)pending);
	char *text = json_dumps(j, JSON_INDENT(2));
	char *path = xasprintf("%s.watch.json", s->fleet.state_path);
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_write_file_atomic(path, text, strlen(text), 0600, &d);
	tpf_diags_release(&d);
	free(path);
	free(text);
	json_decref(j);
}

/* Sleep up to `seconds`, waking early for a signal. */
static void nap(double seconds)
{
	double end = tpf_now_mono() + seconds;
	while (!tpf_interrupted && tpf_now_mono() < end)
		tpf_sleep(0.1);
}

/*
 * Healing runs on background threads so that rounds keep their rhythm: a
 * round that finds a preemption must not wait for the previous round's
 * replacement (a delete, a create and provisioning, minutes on Cloud TPU)
 * before it refreshes again. Heals share one fleet, provider and state,
 * under one mutex (engine/apply.h state_mu); a node with a heal in flight is
 * "busy" and left out of later rounds' plans until it is done. The state
 * lock is held exactly while any heal runs.
 */
struct healer {
	pthread_mutex_t mu;
	pthread_cond_t idle;
	struct tpf_common_opts *o;
	struct tpf_fleet fleet;   /* what heals run against; replaced only when idle */
	int have_fleet;
	char *fleet_sha256;
	struct tpf_provider *prov;
	struct tpf_state st;      /* the shared state, saved by the heals */
	int have_st;
	struct tpf_lock lock;
	char **busy;
	size_t nbusy, alloc;
	int running;
	struct tpf_backoff *backoff;
};

struct heal_job {
	struct healer *h;
	struct tpf_plan plan;
	struct tpf_live_set live;
};

static int busy_has(const struct healer *h, const char *node)
{
	for (size_t i = 0; i < h->nbusy; i++)
		if (!strcmp(h->busy[i], node))
			return 1;
	return 0;
}

static void busy_remove(struct healer *h, const char *node)
{
	for (size_t i = 0; i < h->nbusy; i++) {
		if (!strcmp(h->busy[i], node)) {
			free(h->busy[i]);
			h->busy[i] = h->busy[--h->nbusy];
			return;
		}
	}
}

static void *heal_thread(void *arg)
{
	struct heal_job *job = arg;
	struct healer *h = job->h;
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_apply_opts opts = {
		.parallelism = h->o->parallelism,
		.heartbeat = 3600,
		.wait_timeout = 1200,
		.on_event = watch_event,
		.interrupted = &tpf_interrupted,
		.backoff = h->backoff,
		.refusals_defer = 1,
		.state_mu = &h->mu,
	};
	struct tpf_apply_result res;
	tpf_apply(&job->plan, &h->fleet, h->prov, &job->live, &h->st, h->fleet.state_path, &opts,
		  &res, &d);
	tpf_apply_result_release(&res);
	tpf_ui_diags(&d);
	tpf_diags_release(&d);

	pthread_mutex_lock(&h->mu);
	for (size_t i = 0; i < job->plan.n; i++)
		busy_remove(h, job->plan.actions[i].node);
	if (--h->running == 0) {
		tpf_lock_release(&h->lock);
		pthread_cond_broadcast(&h->idle);
	}
	pthread_mutex_unlock(&h->mu);
	tpf_plan_release(&job->plan);
	tpf_live_set_release(&job->live);
	free(job);
	return NULL;
}

/* Call with h->mu held and no heal running: take the lock, load the state
 * (and the fleet, when it changed) that heals will share. */
static int healer_start(struct healer *h, const struct tpf_session *s)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	int rc = 0;
	if (tpf_lock_acquire(&h->lock, s->fleet.state_path, "OperationTypeApply", 0, &d)) {
		say_event(NULL, "locked", "the state is locked by another tpuform: healing waits "
					  "for the next round");
		rc = -1;
		goto done;
	}
	if (h->have_st)
		tpf_state_release(&h->st);
	h->have_st = 0;
	rc = tpf_state_load(&h->st, s->fleet.state_path, &d);
	h->have_st = 1;
	if (rc || h->st.serial != s->state.serial) {
		if (!rc)
			say_event(NULL, "replan", "the state changed since this round's refresh: "
						  "planning again next round");
		tpf_ui_diags(&d);
		tpf_lock_release(&h->lock);
		rc = -1;
		goto done;
	}
	if (!h->have_fleet || strcmp(h->fleet_sha256, s->fleet_sha256)) {
		if (h->prov)
			tpf_provider_free(h->prov);
		h->prov = NULL;
		if (h->have_fleet)
			tpf_fleet_release(&h->fleet);
		h->have_fleet = 0;
		if (tpf_fleet_load(&h->fleet, s->fleet.path, &d) == 0 &&
		    tpf_fleet_resolve_secrets(&h->fleet, &d) != 0)
			tpf_fleet_release(&h->fleet); /* zeroed: the next test fails */
		if (h->fleet.path) {
			h->have_fleet = 1;
			xstrset(&h->fleet_sha256, s->fleet_sha256);
			if (tpf_provider_open(&h->prov, &h->fleet, &d))
				h->prov = NULL;
		}
		if (!h->prov) {
			tpf_ui_diags(&d);
			tpf_lock_release(&h->lock);
			rc = -1;
		}
	}
done:
	tpf_diags_release(&d);
	return rc;
}

/* Start healing p's actions in the background; actions on busy nodes are
 * dropped (a later round sees them again if they still apply). */
static void heal(struct healer *h, struct tpf_session *s, struct tpf_plan *p)
{
	pthread_mutex_lock(&h->mu);
	size_t keep = 0;
	for (size_t i = 0; i < p->n; i++) {
		if (busy_has(h, p->actions[i].node)) {
			tpf_action_release(&p->actions[i]);
			continue;
		}
		p->actions[keep++] = p->actions[i];
	}
	p->n = keep;
	tpf_plan_recount(p);
	if (!p->n || (h->running == 0 && healer_start(h, s))) {
		pthread_mutex_unlock(&h->mu);
		return;
	}
	struct heal_job *job = xcalloc(1, sizeof(*job));
	job->h = h;
	job->plan = *p;
	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < job->plan.n; i++) {
		const char *node = job->plan.actions[i].node;
		XGROW(h->busy, h->nbusy + 1, h->alloc);
		h->busy[h->nbusy++] = xstrdup(node);
		const struct tpf_live_node *ln = tpf_live_set_find(&s->live, node);
		if (ln)
			tpf_live_node_copy(tpf_live_set_add(&job->live), ln);
	}
	h->running++;
	pthread_t th;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, heal_thread, job)) {
		/* No thread: heal in this one instead. */
		pthread_mutex_unlock(&h->mu);
		heal_thread(job);
		pthread_attr_destroy(&attr);
		return;
	}
	pthread_attr_destroy(&attr);
	pthread_mutex_unlock(&h->mu);
}

/* Wait for every heal in flight, then release everything. */
static void healer_finish(struct healer *h)
{
	pthread_mutex_lock(&h->mu);
	while (h->running)
		pthread_cond_wait(&h->idle, &h->mu);
	pthread_mutex_unlock(&h->mu);
	tpf_lock_release(&h->lock);
	for (size_t i = 0; i < h->nbusy; i++)
		free(h->busy[i]);
	free(h->busy);
	if (h->prov)
		tpf_provider_free(h->prov);
	if (h->have_fleet)
		tpf_fleet_release(&h->fleet);
	if (h->have_st)
		tpf_state_release(&h->st);
	free(h->fleet_sha256);
	tpf_backoff_free(h->backoff);
	pthread_cond_destroy(&h->idle);
	pthread_mutex_destroy(&h->mu);
}

int cmd_watch(int argc, char **argv)
{
	struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
	struct watch_opts w = { 10, 60, 600, 0, 0 };
	int show_help = 0;
	struct tpf_flag flags[] = {
		TPF_COMMON_FLAGS(o),
		{ "interval", NULL, TPF_FLAG_DURATION, &w.interval, "time between rounds (default 10s)" },
		{ "session-check", NULL, TPF_FLAG_DURATION, &w.session_check,
		  "time between worker session checks (default 60s)" },
		{ "unhealthy-timeout", NULL, TPF_FLAG_DURATION, &w.unhealthy_timeout,
		  "replace a READY node that is not HEALTHY for this long (default 10m)" },
		{ "apply-all", NULL, TPF_FLAG_BOOL, &w.apply_all,
		  "apply every change, not only healing ones" },
		{ "parallelism", NULL, TPF_FLAG_INT, &o.parallelism, "concurrent operations (default 10)" },
		{ "rounds", NULL, TPF_FLAG_INT, &w.max_rounds, "stop after N rounds (default: never)" },
		{ "help", "h", TPF_FLAG_BOOL, &show_help, "show this help" },
		{ 0 },
	};
	char **pos;
	int npos;
	if (tpf_parse_flags("watch", argc, argv, flags, &pos, &npos))
		return TPF_EXIT_ERROR;
	free(pos);
	if (show_help) {
		printf("Usage: tpuform watch [options]\n\n"
		       "  Keep the fleet alive: every interval, refresh the nodes, replace the\n"
		       "  preempted, terminated and missing ones, restart dead sessions, create\n"
		       "  nodes waiting for quota or capacity, delete orphans. Other changes are\n"
		       "  reported and applied only with -apply-all. Ctrl-C finishes the step in\n"
		       "  flight and exits 0; nothing is deleted on exit.\n\nOptions:\n");
		tpf_print_flags(stdout, flags);
		return TPF_EXIT_OK;
	}
	if (w.interval <= 0)
		w.interval = 10;
	tpf_ui_init(o.no_color, o.json);
	tpf_install_signal_handlers();
	if (o.json)
		tpf_ui_json_version();

	struct healer h;
	memset(&h, 0, sizeof(h));
	pthread_mutex_init(&h.mu, NULL);
	pthread_cond_init(&h.idle, NULL);
	struct tpf_lock unlocked = TPF_LOCK_INIT;
	h.lock = unlocked;
	h.o = &o;
	/* Zones that refuse are retried after interval, 2 interval, ... 10 min. */
	h.backoff = tpf_backoff_new(w.interval, 600);
	double next_probe = 0, error_wait = w.interval;
	struct unhealthy_set sick = { 0 };
	/* The pinned commit is re-resolved when a session check is due, not
	 * every round: resolving a URL ref is a network round trip. */
	char pinned[41] = "";
	int code = TPF_EXIT_OK;
	int round;
	for (round = 1; !tpf_interrupted && (!w.max_rounds || round <= w.max_rounds); round++) {
		double started = tpf_now_mono();
		int probe = started >= next_probe;
		struct tpf_session s;
		struct tpf_plan p, rest;
		memset(&p, 0, sizeof(p));
		memset(&rest, 0, sizeof(rest));
		int failed = tpf_session_open(&s, &o, NULL);
		s.quiet = 1;
		s.pinned = !probe && pinned[0] ? pinned : NULL;
		failed = failed || tpf_session_refresh(&s, probe) || tpf_session_plan(&s, 0, &p);
		if (failed) {
			tpf_ui_diags(&s.d);
			if (round == 1 && !s.have_fleet) {
				/* A fleet file that never loaded: nothing to watch. */
				code = TPF_EXIT_ERROR;
				tpf_session_close(&s);
				tpf_plan_release(&p);
				break;
			}
			char msg[128];
			snprintf(msg, sizeof(msg), "round failed: retrying in %.0f s", error_wait);
			say_event(NULL, "error", msg);
			tpf_session_close(&s);
			tpf_plan_release(&p);
			nap(error_wait);
			/* Our own errors back off instead of spinning. */
			error_wait = error_wait * 2 > 300 ? 300 : error_wait * 2;
			continue;
		}
		error_wait = w.interval;
		if (probe)
			next_probe = started + w.session_check;
		if (s.have_commit)
			snprintf(pinned, sizeof(pinned), "%s", s.commit);
		check_unhealthy(&sick, &s, &p, w.unhealthy_timeout, started);
		/* Warnings (deferred: quota) are worth a line each round. */
		for (size_t i = 0; i < s.d.n; i++)
			say_event(s.d.items[i].address, "warning", s.d.items[i].summary);
		tpf_diags_release(&s.d);

		if (!w.apply_all)
			tpf_plan_split_healing(&p, &rest);
		report_actions(&p, "");
		if (rest.n && round == 1)
			report_actions(&rest, "pending, not healing: ");
		struct summary sum;
		summarise(&s, &sum);
		if (p.n)
			heal(&h, &s, &p);
		report_summary(&s, &sum, round, rest.n);
		tpf_ui_diags(&s.d);
		tpf_plan_release(&p);
		tpf_plan_release(&rest);
		tpf_session_close(&s);
		if (w.max_rounds && round >= w.max_rounds)
			break;
		double spent = tpf_now_mono() - started;
		nap(w.interval > spent ? w.interval - spent : 0);
	}
	if (tpf_interrupted)
		say_event(NULL, "stopped", "interrupted: stopped after the step in flight; state saved, "
					   "nothing deleted");
	healer_finish(&h);
	unhealthy_release(&sick);
	return code;
}
