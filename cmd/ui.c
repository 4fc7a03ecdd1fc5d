/*
 * Everything tpuform prints for people and pipelines.
 *
 * Human output follows Terraform's strings (docs/terraform-behaviour.md
 * sections 1, 2 and 6) and Ansible's per-host results and recap (section 8). With -json,
 * stdout carries only JSON Lines in Terraform's machine-readable UI shape.
 * Colour follows Ansible: on for a terminal, off with -no-color, NO_COLOR,
 * or a pipe.
 */
#include "cmd/cmd.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_RED "\033[31m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_BRED "\033[91m"

struct tpf_ui tpf_ui = { 0, 0, 0, PTHREAD_MUTEX_INITIALIZER };

static const char *c(const char *code)
{
	return tpf_ui.color ? code : "";
}

void tpf_ui_init(int no_color, int json)
{
	const char *nc = getenv("NO_COLOR");
	tpf_ui.json = json;
	tpf_ui.plain = no_color;
	tpf_ui.color = !no_color && !json && !(nc && *nc) && isatty(STDOUT_FILENO);
}

void tpf_ui_json(const char *level, const char *type, const char *message, json_t *extra)
{
	char ts[48];
	tpf_rfc3339_fmt(tpf_now_wall(), 6, TPF_RFC3339_LOCAL, ts, sizeof(ts));
	json_t *o = extra ? extra : json_object();
	json_object_set_new(o, "@level", json_string(level));
	json_object_set_new(o, "@message", json_string(message));
	json_object_set_new(o, "@module", json_string("tpuform.ui"));
	json_object_set_new(o, "@timestamp", json_string(ts));
	json_object_set_new(o, "type", json_string(type));
	char *line = json_dumps(o, JSON_COMPACT);
	pthread_mutex_lock(&tpf_ui.mu);
	if (line) {
		fputs(line, stdout);
		fputc('\n', stdout);
		fflush(stdout);
	}
	pthread_mutex_unlock(&tpf_ui.mu);
	free(line);
	json_decref(o);
}

void tpf_ui_json_version(void)
{
	tpf_ui_json("info", "version", "tpuform " TPF_VERSION,
		    json_pack("{s:s,s:s}", "tpuform", TPF_VERSION, "ui", "1.2"));
}

void tpf_ui_say(const char *fmt, ...)
{
	if (tpf_ui.json)
		return;
	va_list ap;
	va_start(ap, fmt);
	pthread_mutex_lock(&tpf_ui.mu);
	vfprintf(stdout, fmt, ap);
	fflush(stdout);
	pthread_mutex_unlock(&tpf_ui.mu);
	va_end(ap);
}

void tpf_ui_prefixed(const char *node, int worker, const char *text)
{
	const char *p = text;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		tpf_ui_say("%s/w%d | %.*s\n", node, worker, (int)len, p);
		p += len + (nl ? 1 : 0);
	}
}

/* Terraform's diagnostic under -no-color (format.DiagnosticPlain): a blank
 * line, "Error: summary", then a blank line and the detail, no box
 * (docs/terraform-behaviour.md; the lock error's -no-color transcript). */
static void print_diag_plain(const struct tpf_diag *g)
{
	fprintf(stderr, "\n%s: %s\n", g->severity == TPF_SEV_ERROR ? "Error" : "Warning",
		g->summary);
	if (g->address || g->detail)
		fputc('\n', stderr);
	if (g->address)
		fprintf(stderr, "  with %s\n", g->address);
	if (g->detail)
		fprintf(stderr, "%s%s\n", g->address ? "\n" : "", g->detail);
}

/* Terraform's boxed diagnostic (format/diagnostic.go), on stderr. */
static void print_diag(const struct tpf_diag *g)
{
	if (tpf_ui.plain) {
		print_diag_plain(g);
		return;
	}
	int err = g->severity == TPF_SEV_ERROR;
	const char *colr = err ? C_RED : C_YELLOW;
	FILE *o = stderr;
	int color = tpf_ui.color && isatty(STDERR_FILENO);
	const char *cc = color ? colr : "", *rs = color ? C_RESET : "", *bd = color ? C_BOLD : "";
	fprintf(o, "%s╷%s\n", cc, rs);
	fprintf(o, "%s│%s %s%s:%s %s%s\n", cc, rs, bd, err ? "Error" : "Warning", rs, g->summary, "");
	if (g->address || g->detail)
		fprintf(o, "%s│%s\n", cc, rs);
	if (g->address)
		fprintf(o, "%s│%s   with %s\n", cc, rs, g->address);
	if (g->detail) {
		const char *p = g->detail;
		while (*p) {
			const char *nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) : strlen(p);
			fprintf(o, "%s│%s %.*s\n", cc, rs, (int)len, p);
			p += len + (nl ? 1 : 0);
		}
	}
	fprintf(o, "%s╵%s\n", cc, rs);
}

void tpf_ui_diags(const struct tpf_diags *d)
{
	for (size_t i = 0; i < d->n; i++) {
		const struct tpf_diag *g = &d->items[i];
		if (tpf_ui.json) {
			json_t *diag = json_pack("{s:s,s:s}", "severity",
						 g->severity == TPF_SEV_ERROR ? "error" : "warning",
						 "summary", g->summary);
			if (g->detail)
				json_object_set_new(diag, "detail", json_string(g->detail));
			if (g->address)
				json_object_set_new(diag, "address", json_string(g->address));
			char *msg = xasprintf("%s: %s", g->severity == TPF_SEV_ERROR ? "Error" : "Warning",
					      g->summary);
			tpf_ui_json(g->severity == TPF_SEV_ERROR ? "error" : "warn", "diagnostic", msg,
				    json_pack("{s:o}", "diagnostic", diag));
			free(msg);
		} else {
			print_diag(g);
		}
	}
}

/* Terraform's progress verbs (views/hook_ui.go). */
static const char *ing(const char *verb)
{
	if (!strcmp(verb, "create"))
		return "Creating";
	if (!strcmp(verb, "delete"))
		return "Destroying";
	if (!strcmp(verb, "wait"))
		return "Waiting";
	if (!strcmp(verb, "restart"))
		return "Restarting";
	return "Modifying";
}

static const char *ing_lower(const char *verb)
{
	if (!strcmp(verb, "create"))
		return "creating";
	if (!strcmp(verb, "delete"))
		return "destroying";
	if (!strcmp(verb, "wait"))
		return "waiting";
	if (!strcmp(verb, "restart"))
		return "restarting";
	return "modifying";
}

static const char *done_word(const char *verb)
{
	if (!strcmp(verb, "create"))
		return "Creation complete";
	if (!strcmp(verb, "delete"))
		return "Destruction complete";
	if (!strcmp(verb, "restart"))
		return "Restart complete";
	return "Modifications complete";
}

static json_t *hook(const struct tpf_event *ev, const char *verb)
{
	json_t *h = json_pack("{s:{s:s,s:s,s:s},s:s}", "resource", "addr", ev->node, "resource_type",
			      "node", "resource_name", ev->node, "action", verb);
	if (ev->id)
		json_object_set_new(h, "id_value", json_string(ev->id));
	return h;
}

/* Ansible's line for one provisioned worker (result: its word). */
static void provision_line(const struct tpf_event *ev, const char *result)
{
	char host[512];
	snprintf(host, sizeof(host), "%s/w%d", ev->node, ev->worker);
	if (tpf_ui.json) {
		char msg[1024];
		snprintf(msg, sizeof(msg), "%s: %s", host, result);
		tpf_ui_json(ev->kind == TPF_EVENT_JOB_STARTED || ev->kind == TPF_EVENT_JOB_RUNNING
				    ? "info"
				    : "error",
			    "provision_complete", msg,
			    json_pack("{s:{s:s,s:i,s:s}}", "provision", "node", ev->node, "worker",
				      ev->worker, "result", result));
	} else if (ev->kind == TPF_EVENT_JOB_RUNNING) {
		tpf_ui_say("%sok: [%s]%s\n", c(C_GREEN), host, c(C_RESET));
	} else if (ev->kind == TPF_EVENT_JOB_STARTED) {
		tpf_ui_say("%schanged: [%s]%s\n", c(C_YELLOW), host, c(C_RESET));
	} else if (ev->kind == TPF_EVENT_UNREACHABLE) {
		tpf_ui_say("%sfatal: [%s]: UNREACHABLE!%s\n", c(C_BRED), host, c(C_RESET));
	} else {
		tpf_ui_say("%sfatal: [%s]: FAILED!%s\n", c(C_RED), host, c(C_RESET));
	}
}

/* A create that left its node waiting for capacity: not "Creation
 * complete" (issue 26). -json: an "apply_waiting" line, the hook saying
 * for what. */
static void capacity_waiting_line(const struct tpf_event *ev, const char *dur, const char *idpart)
{
	const char *what = ev->recipe && ev->recipe->queued ? "queued resource"
			   : ev->recipe ? tpf_recipe_scheduling(ev->recipe)
					: "capacity";
	char msg[1024];
	snprintf(msg, sizeof(msg), "%s: Still waiting for capacity (%s) after %s%s", ev->node, what,
		 dur, idpart);
	if (tpf_ui.json) {
		json_t *h = hook(ev, "create");
		json_object_set_new(h, "elapsed_seconds", json_integer((json_int_t)ev->elapsed));
		json_object_set_new(h, "waiting_for", json_string("capacity"));
		json_object_set_new(h, "scheduling", json_string(what));
		tpf_ui_json("info", "apply_waiting", msg, json_pack("{s:o}", "hook", h));
	} else {
		tpf_ui_say("%s%s%s: Still waiting for capacity (%s) after %s%s\n", c(C_BOLD), ev->node,
			   c(C_RESET), what, dur, idpart);
	}
}

/* Each event as its row of engine/events.c says: the hook gives the line,
 * the action's word Terraform's verb. */
void tpf_ui_event(const struct tpf_event *ev, void *ctx)
{
	(void)ctx;
	const struct tpf_event_info *in = tpf_event_info(ev->kind);
	const char *verb = tpf_event_info(ev->action)->word;
	if (!verb || in->hook == TPF_HOOK_PROVISION)
		verb = "update";
	char el[32], dur[32], msg[1024], idpart[300] = "";
	tpf_fmt_elapsed(ev->elapsed, el, sizeof(el));
	tpf_fmt_duration(ev->elapsed, dur, sizeof(dur));
	if (ev->id)
		snprintf(idpart, sizeof(idpart), " [id=%s]", ev->id);

	switch (in->hook) {
	case TPF_HOOK_START:
		snprintf(msg, sizeof(msg), "%s: %s...%s", ev->node, ing(verb), idpart);
		if (tpf_ui.json)
			tpf_ui_json("info", "apply_start", msg, json_pack("{s:o}", "hook", hook(ev, verb)));
		else
			tpf_ui_say("%s%s%s: %s...%s\n", c(C_BOLD), ev->node, c(C_RESET), ing(verb),
				   idpart);
		break;
	case TPF_HOOK_PROGRESS:
		if (tpf_ui.json) {
			snprintf(msg, sizeof(msg), "%s: Still %s... [%.0fs elapsed]", ev->node,
				 ing_lower(verb), ev->elapsed);
			json_t *h = hook(ev, verb);
			json_object_set_new(h, "elapsed_seconds", json_integer((json_int_t)ev->elapsed));
			tpf_ui_json("info", "apply_progress", msg, json_pack("{s:o}", "hook", h));
		} else {
			tpf_ui_say("%s%s%s: Still %s... [%s%s%s%s elapsed]\n", c(C_BOLD), ev->node,
				   c(C_RESET), ing_lower(verb), ev->id ? "id=" : "",
				   ev->id ? ev->id : "", ev->id ? ", " : "", el);
		}
		break;
	case TPF_HOOK_COMPLETE:
		if (ev->kind == TPF_EVENT_CAPACITY_WAITING) {
			capacity_waiting_line(ev, dur, idpart);
			break;
		}
		snprintf(msg, sizeof(msg), "%s: %s after %s%s", ev->node, done_word(verb), dur,
			 idpart);
		if (tpf_ui.json) {
			json_t *h = hook(ev, verb);
			json_object_set_new(h, "elapsed_seconds", json_integer((json_int_t)ev->elapsed));
			tpf_ui_json("info", "apply_complete", msg, json_pack("{s:o}", "hook", h));
		} else {
			tpf_ui_say("%s%s%s: %s after %s%s\n", c(C_BOLD), ev->node, c(C_RESET),
				   done_word(verb), dur, idpart);
		}
		break;
	case TPF_HOOK_ERRORED:
		snprintf(msg, sizeof(msg), "%s: %s errored after %s", ev->node, ing(verb), dur);
		if (tpf_ui.json)
			tpf_ui_json("error", "apply_errored", msg, json_pack("{s:o}", "hook", hook(ev, verb)));
		break;
	case TPF_HOOK_PROVISION:
		provision_line(ev, in->word);
		break;
	case TPF_HOOK_LOG:
		snprintf(msg, sizeof(msg), "%s: %s", ev->node, ev->message ? ev->message : in->text);
		if (tpf_ui.json)
			tpf_ui_json("info", "log", msg, NULL);
		else
			tpf_ui_say("%s\n", msg);
		break;
	case TPF_HOOK_NONE:
		break;
	}
}

void tpf_ui_recap(const struct tpf_recap *r)
{
	if (!r->n)
		return;
	if (tpf_ui.json) {
		for (size_t i = 0; i < r->n; i++) {
			const struct tpf_recap_entry *e = &r->items[i];
			char msg[600];
			snprintf(msg, sizeof(msg), "%s : ok=%d changed=%d unreachable=%d failed=%d", e->host,
				 e->ok, e->changed, e->unreachable, e->failed);
			tpf_ui_json("info", "provision_recap", msg,
				    json_pack("{s:{s:s,s:i,s:i,s:i,s:i}}", "recap", "host", e->host, "ok",
					      e->ok, "changed", e->changed, "unreachable",
					      e->unreachable, "failed", e->failed));
		}
		return;
	}
	tpf_ui_say("\nPLAY RECAP %s\n", "*********************************************************************");
	for (size_t i = 0; i < r->n; i++) {
		const struct tpf_recap_entry *e = &r->items[i];
		const char *hc = e->failed || e->unreachable ? C_RED : e->changed ? C_YELLOW : C_GREEN;
		char ok[16], ch[16], un[16], fa[16];
		snprintf(ok, sizeof(ok), "%d", e->ok);
		snprintf(ch, sizeof(ch), "%d", e->changed);
		snprintf(un, sizeof(un), "%d", e->unreachable);
		snprintf(fa, sizeof(fa), "%d", e->failed);
		/* Ansible pads the host to 26 columns without colour. */
		tpf_ui_say("%s%-26s%s : ok=%-4s changed=%-4s unreachable=%-4s failed=%-4s\n", c(hc),
			   e->host, c(C_RESET), ok, ch, un, fa);
	}
}

void tpf_ui_budgets(const struct tpf_pipeline *s)
{
	for (size_t i = 0; i < s->nbudgets; i++) {
		const struct tpf_budget_status *b = &s->budgets[i];
		struct tpf_buf line = TPF_BUF_INIT;
		tpf_budget_describe(b, s->fleet.name, &line);
		int reached = tpf_budget_reached(b);
		if (reached)
			tpf_buf_adds(&line, b->on_budget == TPF_ON_BUDGET_DELETE
						    ? ": reached, its nodes are deleted (on_budget: delete)"
						    : ": reached, nothing more is created this period");
		if (tpf_ui.json)
			tpf_ui_json("info", "budget", line.buf,
				    json_pack("{s:{s:o,s:s,s:f,s:f,s:b}}", "budget", "group",
					      b->group ? json_string(b->group) : json_null(), "unit",
					      b->budget->unit == TPF_BUDGET_USD ? "usd" : "chip_hours",
					      "spent", b->spent, "amount", b->budget->amount,
					      "reached", reached));
		else
			tpf_ui_say("%sBudget: %s\n", i ? "" : "\n", line.buf);
		tpf_buf_release(&line);
	}
}

void tpf_ui_plan(const struct tpf_plan *p)
{
	if (!tpf_ui.json) {
		struct tpf_buf b = TPF_BUF_INIT;
		tpf_plan_render_human(p, tpf_ui.color, &b);
		tpf_ui_say("%s", b.buf);
		tpf_buf_release(&b);
		return;
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct tpf_action *a = &p->actions[i];
		const char *action = tpf_action_name(a->kind);
		char msg[600];
		snprintf(msg, sizeof(msg), "%s: Plan to %s", a->node, action);
		if (p->refresh_only) {
			/* Terraform's resource_drift: what changed outside it. */
			action = a->kind == TPF_ACT_FORGET ? "delete" : a->adopt ? "create" : "update";
			snprintf(msg, sizeof(msg), "%s: Drift detected (%s)", a->node, action);
		}
		json_t *change = json_pack("{s:{s:s,s:s,s:s,s:s},s:s}", "resource", "addr", a->node,
					   "resource_type", "node", "resource_name", a->node,
					   "implied_provider", "tpuform",
					   "action", action);
		if (a->reason_code)
			json_object_set_new(change, "reason", json_string(a->reason_code));
		if (a->reason)
			json_object_set_new(change, "reason_text", json_string(a->reason));
		if (a->nworkers) {
			json_t *w = json_array();
			for (size_t k = 0; k < a->nworkers; k++)
				json_array_append_new(w, json_integer(a->workers[k]));
			json_object_set_new(change, "workers", w);
		}
		tpf_ui_json("info", p->refresh_only ? "resource_drift" : "planned_change", msg,
			    json_pack("{s:o}", "change", change));
	}
	for (size_t i = 0; i < p->nunconverged; i++) {
		const struct tpf_unconverged *u = &p->unconverged[i];
		char *msg = xasprintf("%s: Not as declared: %s", u->node, u->reason);
		tpf_ui_json("warn", "unconverged", msg,
			    json_pack("{s:o}", "unconverged", tpf_unconverged_to_json(u)));
		free(msg);
	}
	struct tpf_buf s = TPF_BUF_INIT;
	tpf_plan_closing(p, &s);
	tpf_ui_json("info", "change_summary", s.buf,
		    json_pack("{s:{s:I,s:I,s:I,s:I,s:I,s:s}}", "changes", "add", (json_int_t)p->add,
			      "change", (json_int_t)p->change, "import", (json_int_t)0, "remove",
			      (json_int_t)p->destroyed, "unconverged", (json_int_t)p->nunconverged,
			      "operation", p->destroy ? "destroy" : "plan"));
	tpf_buf_release(&s);
}

int tpf_ui_confirm(const char *question, const char *explain, const char *verb)
{
	printf("\n%s%s%s\n  %s\n  Only 'yes' will be accepted to %s.\n\n  %sEnter a value:%s ",
	       c(C_BOLD), question, c(C_RESET), explain, verb, c(C_BOLD), c(C_RESET));
	fflush(stdout);
	char line[256];
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	line[strcspn(line, "\r\n")] = '\0';
	printf("\n");
	return !strcmp(line, "yes");
}
