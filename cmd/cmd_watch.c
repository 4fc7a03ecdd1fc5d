/*
 * tpuform watch: flags, signals, and the lines people see. The loop itself
 * (refresh -> plan -> heal, in rounds, for weeks) is engine/watch/watch.c.
 *
 * SIGINT and SIGTERM finish the step in flight, save state and exit 0;
 * nothing is deleted on the way out; a second one exits 1 at once.
 */
#include "cmd/cmd.h"
#include "engine/watch/watch.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

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

/* An event as a watch line, as its kind's row (engine/events.c) says: its
 * code, and its message or the row's text. No code: no line. */
static void event_line(const struct tpf_event *ev)
{
	const struct tpf_event_info *in = tpf_event_info(ev->kind);
	char buf[512];
	const char *text = ev->message ? ev->message : in->text;
	if (!in->code)
		return;
	switch (ev->kind) {
	case TPF_EVENT_READY:
		snprintf(buf, sizeof(buf), "READY after %.0fs [id=%s]", ev->elapsed,
			 ev->id ? ev->id : "?");
		text = buf;
		break;
	case TPF_EVENT_FAILED: {
		const char *verb = tpf_event_info(ev->action)->word;
		snprintf(buf, sizeof(buf), "%s %s", verb ? verb : "action", in->text);
		text = buf;
		break;
	}
	default:
		if (in->hook == TPF_HOOK_PROVISION) {
			/* A failed preflight carries the worker's own words (the
			 * PID holding the TPU, the fix). */
			snprintf(buf, sizeof(buf), "w%d: %s%s%s", ev->worker, in->text,
				 ev->kind == TPF_EVENT_PREFLIGHT_FAILED && ev->message ? ": " : "",
				 ev->kind == TPF_EVENT_PREFLIGHT_FAILED && ev->message ? ev->message
										  : "");
			text = buf;
		}
		break;
	}
	say_event(ev->node, in->code, text);
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

static void report_summary(const struct tpf_watch_summary *sum)
{
	if (tpf_ui.json) {
		tpf_ui_json("info", "watch_summary", sum->line,
			    json_pack("{s:{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:I}}", "summary", "alive",
				      sum->alive, "desired", sum->desired, "creating", sum->creating,
				      "waiting", sum->waiting, "dead", sum->dead, "missing", sum->missing,
				      "queued", sum->queued, "round", sum->round, "pending_changes",
				      (json_int_t)sum->pending));
	} else {
		tpf_ui_say("%s fleet %s: %s%s\n", sum->time, sum->fleet, sum->line,
			   sum->pending ? " (changes pending: -apply-all or 'tpuform apply')" : "");
	}
}

/* The engine's watch events (engine/watch/watch.h), from any thread. */
static void on_watch_event(const struct tpf_watch_event *ev, void *ctx)
{
	(void)ctx;
	switch (ev->kind) {
	case TPF_WATCH_EVENT:
		event_line(ev->event);
		break;
	case TPF_WATCH_ACTIONS:
		report_actions(ev->plan, ev->pending ? "pending, not healing: " : "");
		break;
	case TPF_WATCH_SUMMARY:
		report_summary(ev->summary);
		break;
	case TPF_WATCH_DIAGS:
		tpf_ui_diags(ev->diags);
		break;
	}
}

static struct tpf_watch_opts watch_o = {
	.interval = 10,
	.session_check = 60,
	.unhealthy_timeout = 600,
	.lease_ttl = 30,
	.job_wait = 1,
	.interrupted = &tpf_interrupted,
	.on_event = on_watch_event,
};

static const struct tpf_flag watch_flags[] = {
	TPF_DUR("interval", &watch_o.interval, "time between rounds"),
	TPF_DUR("session-check", &watch_o.session_check, "time between worker session checks"),
	TPF_DUR("unhealthy-timeout", &watch_o.unhealthy_timeout,
		"replace a READY node that is not HEALTHY for this long"),
	TPF_BOOL("apply-all", &watch_o.apply_all, "apply every change, not only healing ones"),
	TPF_INT("rounds", 0, 1000000000, &watch_o.max_rounds, "stop after N rounds (0: never)"),
	TPF_STR("metrics-addr", "HOST:PORT", &watch_o.metrics_addr,
		"serve Prometheus metrics on HOST:PORT, e.g. 127.0.0.1:9100"),
	TPF_DUR("lease-ttl", &watch_o.lease_ttl,
		"Cloud Storage state: a standby watch takes over when the leader has not "
		"renewed its lease for this long"),
	TPF_BOOL("job-wait", &watch_o.job_wait,
		 "keep a connection per worker waiting for its job to end, to act on it at once "
		 "(-job-wait=false: only the periodic -session-check)"),
	TPF_BOOL("exit-when-done", &watch_o.exit_when_done,
		 "exit when every node completed (0) or completed or failed (1)"),
	TPF_FLAGS_END,
};

static int run_watch(struct tpf_cmd_ctx *ctx)
{
	/* -exit-when-done: 1 every node completed, 2 some failed (engine/watch/watch.h). */
	static int done;
	watch_o.done = &done;
	watch_o.file = ctx->o.file;
	watch_o.parallelism = ctx->o.parallelism;
	return tpf_watch_run(&watch_o) || done == 2 ? TPF_EXIT_ERROR : TPF_EXIT_OK;
}

const struct tpf_cmd tpf_cmd_watch = {
	.name = "watch",
	.summary = "Keep the fleet alive: refresh, replace, restart, in a loop",
	.description = "  Keep the fleet alive: every interval, refresh the nodes, replace the\n"
		       "  preempted, terminated and missing ones, restart dead sessions, create\n"
		       "  nodes waiting for quota or capacity, delete orphans. Other changes are\n"
		       "  reported and applied only with -apply-all.\n"
		       "\n"
		       "  With the state in Cloud Storage (state.gcs), several watches of one\n"
		       "  fleet, on other machines or in other directories, elect one leader\n"
		       "  through a lease object beside the state; the others stand by and take\n"
		       "  over when the leader stops renewing it for -lease-ttl.\n",
	.footer = "The first interrupt (Ctrl-C, SIGTERM) finishes the step in flight, saves the\n"
		  "state and exits 0; nothing is deleted on exit. A second one exits 1 at once.\n",
	.flags = watch_flags,
	/* The loop reads the fleet file and takes the state lock itself, round
	 * by round (engine/watch/watch.c): the dispatcher opens no session. */
	.needs = TPF_CMD_FILE | TPF_CMD_JSON_LINES | TPF_CMD_PARALLELISM,
	.signals = TPF_SIG_GRACEFUL,
	.run = run_watch,
};
