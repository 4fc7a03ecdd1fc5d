/*
 * Human rendering of a plan, Terraform style (docs/terraform-behaviour.md sections 1
 * and 9): symbols padded to three columns, "# NAME will be created"
 * comments, aligned attributes, "# forces replacement", "(sensitive
 * value)", and the summary line whose exact wording pipelines depend on.
 */
#include "plan/plan.h"
#include "plan/refresh_only.h"
#include "util/xalloc.h"

#include <string.h>

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_RED "\033[31m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_DIM "\033[90m"

struct style {
	int color;
};

static const char *col(const struct style *s, const char *code)
{
	return s->color ? code : "";
}

const char *tpf_action_name(enum tpf_action_kind k)
{
	switch (k) {
	case TPF_ACT_CREATE: return "create";
	case TPF_ACT_DELETE: return "delete";
	case TPF_ACT_REPLACE: return "replace";
	case TPF_ACT_UPDATE: return "update";
	case TPF_ACT_RESTART: return "update";
	case TPF_ACT_WAIT: return "update";
	case TPF_ACT_FORGET: return "remove";
	}
	return "noop";
}

void tpf_plan_summary(const struct tpf_plan *p, struct tpf_buf *out)
{
	tpf_buf_addf(out, "Plan: %zu to add, %zu to change, %zu to destroy.", p->add, p->change,
		     p->destroyed);
}

/* Block symbol, padded to 3 columns, and its colour. */
static void block_symbol(const struct tpf_action *a, const struct style *s, struct tpf_buf *out)
{
	switch (a->kind) {
	case TPF_ACT_CREATE:
		tpf_buf_addf(out, "%s  +%s", col(s, C_GREEN), col(s, C_RESET));
		break;
	case TPF_ACT_DELETE:
		tpf_buf_addf(out, "%s  -%s", col(s, C_RED), col(s, C_RESET));
		break;
	case TPF_ACT_REPLACE:
		tpf_buf_addf(out, "%s-%s/%s+%s", col(s, C_RED), col(s, C_RESET), col(s, C_GREEN),
			     col(s, C_RESET));
		break;
	default:
		tpf_buf_addf(out, "%s  ~%s", col(s, C_YELLOW), col(s, C_RESET));
		break;
	}
}

static const char *header_text(const struct tpf_action *a)
{
	switch (a->kind) {
	case TPF_ACT_CREATE: return "will be created";
	case TPF_ACT_DELETE: return "will be destroyed";
	case TPF_ACT_REPLACE:
		if (a->reason_kind == TPF_REASON_REPLACE_BY_REQUEST)
			return "will be replaced, as requested"; /* -replace (plan/target.h) */
		return a->reason_kind == TPF_REASON_TAINTED
			       ? "is tainted, so must be replaced"
			       : "must be replaced";
	case TPF_ACT_FORGET: return "will be removed from the state";
	default: return "will be updated in-place";
	}
}

static char line_symbol(const struct tpf_action *a, const struct tpf_change *c)
{
	if (a->kind == TPF_ACT_CREATE || (!c->before && c->after))
		return '+';
	if (a->kind == TPF_ACT_DELETE || (c->before && !c->after && !c->sensitive))
		return '-';
	return '~';
}

/* text, then spaces to width columns (printf's "%-*s"; field names are
 * ASCII). Appends, not formats: a plan of 10,000 adopted nodes has 90,000
 * such lines (tests/bench/gcp_bench.sh). */
static void add_padded(struct tpf_buf *out, const char *text, size_t width)
{
	static const char spaces[] = "                                "; /* 32 */
	size_t n = strlen(text);
	tpf_buf_add(out, text, n);
	while (n < width) {
		size_t k = width - n < sizeof(spaces) - 1 ? width - n : sizeof(spaces) - 1;
		tpf_buf_add(out, spaces, k);
		n += k;
	}
}

/* One attribute's line: "      + field = value". */
static void render_change(const struct tpf_action *a, const struct tpf_change *c, size_t width,
			  const struct style *s, struct tpf_buf *out)
{
	char sym = line_symbol(a, c);
	const char *sc = sym == '+' ? C_GREEN : sym == '-' ? C_RED : C_YELLOW;
	tpf_buf_adds(out, "      ");
	tpf_buf_adds(out, col(s, sc));
	tpf_buf_addch(out, sym);
	tpf_buf_adds(out, col(s, C_RESET));
	tpf_buf_addch(out, ' ');
	add_padded(out, c->field, width);
	tpf_buf_adds(out, " = ");
	if (c->sensitive) {
		tpf_buf_adds(out, "(sensitive value)");
	} else if (c->before) {
		tpf_buf_adds(out, c->before);
		tpf_buf_adds(out, " -> ");
		tpf_buf_adds(out, c->after ? c->after : "null");
	} else if (c->after) {
		tpf_buf_adds(out, c->after);
	} else {
		tpf_buf_adds(out, "(null) -> null"); /* printf's "%s" of NULL, as before */
	}
	if (c->forces)
		tpf_buf_addf(out, " %s# forces replacement%s", col(s, C_RED), col(s, C_RESET));
	tpf_buf_addch(out, '\n');
}

static void render_action(const struct tpf_action *a, const struct style *s, struct tpf_buf *out)
{
	tpf_buf_addf(out, "  %s# %s%s %s%s\n", col(s, C_BOLD), a->node, col(s, C_RESET),
		     header_text(a), "");
	/* A reason line, except where "# forces replacement" already says why. */
	if (a->reason && !(a->kind == TPF_ACT_REPLACE && (a->reason_kind == TPF_REASON_RECIPE ||
							   a->reason_kind == TPF_REASON_TAINTED)))
		tpf_buf_addf(out, "  # (%s)\n", a->reason);
	if (a->kind == TPF_ACT_FORGET) {
		tpf_buf_addch(out, '\n');
		return;
	}
	block_symbol(a, s, out);
	tpf_buf_addf(out, " node \"%s\" {\n", a->node);

	size_t width = 0;
	for (size_t i = 0; i < a->nchanges; i++)
		if (strlen(a->changes[i].field) > width)
			width = strlen(a->changes[i].field);
	int show_id = a->id && a->kind != TPF_ACT_CREATE && a->kind != TPF_ACT_DELETE;
	for (size_t i = 0; i < a->nchanges; i++)
		show_id &= strcmp(a->changes[i].field, "id") != 0; /* "~ id = ... -> ..." says it */
	int show_zone = a->kind == TPF_ACT_DELETE;
	if (show_id && width < 2)
		width = 2;
	if (a->kind == TPF_ACT_DELETE && width < 4)
		width = 4;

	for (size_t i = 0; i < a->nchanges; i++)
		render_change(a, &a->changes[i], width, s, out);
	if (a->kind == TPF_ACT_DELETE) {
		if (a->id)
			tpf_buf_addf(out, "      %s-%s %-*s = \"%s\" -> null\n", col(s, C_RED),
				     col(s, C_RESET), (int)width, "id", a->id);
		if (show_zone && a->zone)
			tpf_buf_addf(out, "      %s-%s %-*s = \"%s\" -> null\n", col(s, C_RED),
				     col(s, C_RESET), (int)width, "zone", a->zone);
	}
	if (show_id)
		tpf_buf_addf(out, "        %-*s = \"%s\"\n", (int)width, "id", a->id);
	if (a->nworkers && a->kind != TPF_ACT_CREATE) {
		tpf_buf_addf(out, "        %s# workers to provision:", col(s, C_DIM));
		for (size_t i = 0; i < a->nworkers; i++)
			tpf_buf_addf(out, "%s %d", i ? "," : "", a->workers[i]);
		tpf_buf_addf(out, "%s\n", col(s, C_RESET));
	}
	tpf_buf_adds(out, "    }\n\n");
}

void tpf_plan_closing(const struct tpf_plan *p, struct tpf_buf *out)
{
	if (tpf_plan_has_changes(p))
		tpf_plan_summary(p, out);
	else if (p->nunconverged)
		tpf_buf_adds(out, "No changes can be made now, but the fleet is not as declared: "
				  "see above.");
	else if (p->refresh_only)
		tpf_buf_adds(out, "No changes. Your infrastructure still matches the configuration.");
	else
		tpf_buf_adds(out, p->destroy ? "No changes. No objects need to be destroyed."
					     : "No changes. Your infrastructure matches the configuration.");
}

/* Its own section, after the actions: what the plan cannot change. */
static void render_unconverged(const struct tpf_plan *p, const struct style *s,
			       struct tpf_buf *out)
{
	tpf_buf_addf(out, "%s%sNot as declared%s%s (tpuform cannot change these now):%s\n",
		     col(s, C_YELLOW), col(s, C_BOLD), col(s, C_RESET), col(s, C_BOLD),
		     col(s, C_RESET));
	for (size_t i = 0; i < p->nunconverged; i++) {
		const struct tpf_unconverged *u = &p->unconverged[i];
		tpf_buf_addf(out, "  %s-%s %s", col(s, C_YELLOW), col(s, C_RESET), u->node);
		if (u->worker >= 0)
			tpf_buf_addf(out, "/w%d", u->worker);
		tpf_buf_addf(out, ": %s\n", u->reason);
	}
	tpf_buf_addch(out, '\n');
}

/* Nodes whose job is done: not missing, not created again. */
static void render_completed(const struct tpf_plan *p, const struct style *s, struct tpf_buf *out)
{
	if (!p->ncompleted)
		return;
	tpf_buf_addf(out, "%sCompleted%s (every worker's job exited 0):\n", col(s, C_BOLD),
		     col(s, C_RESET));
	for (size_t i = 0; i < p->ncompleted; i++) {
		const struct tpf_completed *c = &p->completed[i];
		tpf_buf_addf(out, "  %s-%s %s: completed with exit %d", col(s, C_GREEN), col(s, C_RESET),
			     c->node, c->exit_code);
		if (c->at)
			tpf_buf_addf(out, " at %s", c->at);
		tpf_buf_adds(out, c->deleted ? "; deleted, not created again (on_success: delete)\n"
					     : "; the node is kept (on_success: keep)\n");
	}
	tpf_buf_addch(out, '\n');
}

void tpf_plan_render_human(const struct tpf_plan *p, int color, struct tpf_buf *out)
{
	struct style s = { color };
	if (p->refresh_only) {
		tpf_plan_render_refresh_only(p, color, out);
		return;
	}
	render_completed(p, &s, out);
	if (!tpf_plan_has_changes(p)) {
		if (p->nunconverged) {
			render_unconverged(p, &s, out);
			tpf_buf_addf(out, "%s%s", col(&s, C_YELLOW), col(&s, C_BOLD));
			tpf_plan_closing(p, out);
			tpf_buf_addf(out, "%s\n", col(&s, C_RESET));
			return;
		}
		/* Terraform's colours: "No changes." green, the rest bold. */
		tpf_buf_addf(out, "%s%sNo changes.%s%s %s%s\n", col(&s, C_GREEN), col(&s, C_BOLD),
			     col(&s, C_RESET), col(&s, C_BOLD),
			     p->destroy ? "No objects need to be destroyed."
					: "Your infrastructure matches the configuration.",
			     col(&s, C_RESET));
		return;
	}
	int has[8] = { 0 };
	for (size_t i = 0; i < p->n; i++)
		has[p->actions[i].kind] = 1;
	tpf_buf_adds(out, "tpuform used the selected providers to generate the following execution plan. "
			  "Resource actions are indicated with the following symbols:\n");
	if (has[TPF_ACT_CREATE])
		tpf_buf_addf(out, "  %s+%s create\n", col(&s, C_GREEN), col(&s, C_RESET));
	if (has[TPF_ACT_UPDATE] || has[TPF_ACT_RESTART] || has[TPF_ACT_WAIT])
		tpf_buf_addf(out, "  %s~%s update in-place\n", col(&s, C_YELLOW), col(&s, C_RESET));
	if (has[TPF_ACT_DELETE])
		tpf_buf_addf(out, "  %s-%s destroy\n", col(&s, C_RED), col(&s, C_RESET));
	if (has[TPF_ACT_REPLACE])
		tpf_buf_addf(out, "%s-%s/%s+%s destroy and then create replacement\n", col(&s, C_RED),
			     col(&s, C_RESET), col(&s, C_GREEN), col(&s, C_RESET));
	tpf_buf_adds(out, "\ntpuform will perform the following actions:\n\n");
	for (size_t i = 0; i < p->n; i++)
		render_action(&p->actions[i], &s, out);
	if (p->nunconverged)
		render_unconverged(p, &s, out);
	tpf_buf_adds(out, col(&s, C_BOLD));
	tpf_plan_closing(p, out);
	tpf_buf_adds(out, col(&s, C_RESET));
	tpf_buf_addch(out, '\n');
}
