/*
 * tpuform watch: flags, signals, and the lines people see. The loop itself
 * (refresh -> plan -> heal, in rounds, for weeks) is engine/watch.c.
 *
 * SIGINT and SIGTERM finish the step in flight, save state and exit 0;
 * nothing is deleted on the way out.
 */
#include "cmd/cmd.h"
#include "engine/watch.h"
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

/* A heal's apply events, as watch lines. */
static void apply_event(const struct tpf_event *ev)
{
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

/* The engine's watch events (engine/watch.h), from any thread. */
static void on_watch_event(const struct tpf_watch_event *ev, void *ctx)
{
	(void)ctx;
	switch (ev->kind) {
	case TPF_WATCH_NOTE:
		say_event(ev->node, ev->code, ev->message);
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
	case TPF_WATCH_APPLY:
		apply_event(ev->apply);
		break;
	}
}

int cmd_watch(int argc, char **argv)
{
	struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
	struct tpf_watch_opts w = {
		.interval = 10,
		.session_check = 60,
		.unhealthy_timeout = 600,
		.interrupted = &tpf_interrupted,
		.on_event = on_watch_event,
	};
	int show_help = 0, done = 0;
	w.done = &done;
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
		{ "exit-when-done", NULL, TPF_FLAG_BOOL, &w.exit_when_done,
		  "exit when every node completed (0) or completed or failed (1)" },
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
	tpf_ui_init(o.no_color, o.json);
	tpf_install_signal_handlers();
	if (o.json)
		tpf_ui_json_version();
	w.file = o.file;
	w.parallelism = o.parallelism;
	return tpf_watch_run(&w) || done == 2 ? TPF_EXIT_ERROR : TPF_EXIT_OK;
}
