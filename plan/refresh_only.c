/*
 * Refresh-only plans (plan/refresh_only.h): state x live -> state updates.
 */
#include "plan/refresh_only.h"
#include "plan/plan_internal.h"
#include "util/str.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_RED "\033[31m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"

/* The JSON-quoted form of s (as plan lines show strings); caller frees. */
static char *quoted(const char *s)
{
	json_t *j = json_string(s ? s : "");
	char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	char *r = xstrdup(out ? out : "\"\"");
	free(out);
	return r;
}

static void change_str(struct tpf_action *a, const char *field, const char *before,
		       const char *after)
{
	char *b = before ? quoted(before) : NULL, *v = after ? quoted(after) : NULL;
	tpf_action_change(a, field, b, v, 0, 0);
	free(b);
	free(v);
}

static struct tpf_action *add(struct tpf_plan *p, enum tpf_action_kind kind, const char *node,
			      const char *code, const char *why)
{
	struct tpf_action *a = tpf_plan_add(p, kind, node);
	tpf_action_set_reason_code(a, code);
	a->reason = xstrdup(why);
	return a;
}


/* A node in state: gone ("deleted"), or live with another id or zone. */
static void refresh_state_node(struct tpf_plan *p, const struct tpf_state_node *sn,
			       const struct tpf_live_node *ln)
{
	if (!ln) {
		if (sn->status == TPF_NODE_PENDING)
			return;
		struct tpf_action *a = add(p, TPF_ACT_FORGET, sn->name, TPF_REFRESH_DELETED,
					   "the node is gone: it was deleted outside tpuform");
		a->id = xstrdup(sn->id);
		a->zone = xstrdup(sn->recipe.zone);
		if (sn->id)
			change_str(a, "id", sn->id, NULL);
		if (sn->recipe.zone)
			change_str(a, "zone", sn->recipe.zone, NULL);
		return;
	}
	int pending = sn->status == TPF_NODE_PENDING;
	if (tpf_streq(sn->id, ln->id) && tpf_streq(sn->recipe.zone, ln->recipe.zone) && !pending)
		return;
	struct tpf_action *a = add(p, TPF_ACT_UPDATE, sn->name, TPF_REFRESH_CHANGED,
				   pending ? "the node was created, but the state did not record it"
				   : !tpf_streq(sn->id, ln->id)
					   ? "the node was re-created outside tpuform (a new id)"
					   : "the node is in another zone than the state says");
	a->id = xstrdup(ln->id);
	a->zone = xstrdup(ln->recipe.zone);
	if (!tpf_streq(sn->id, ln->id))
		change_str(a, "id", sn->id, ln->id);
	if (pending)
		change_str(a, "status", tpf_node_status_name(sn->status),
			   tpf_node_status_name(TPF_NODE_CREATED));
	if (!tpf_streq(sn->recipe.zone, ln->recipe.zone))
		change_str(a, "zone", sn->recipe.zone, ln->recipe.zone);
}

/* A live node the state does not know: record it if it can be placed. */
static void refresh_found(struct tpf_plan *p, const struct tpf_diff_input *in,
			  const struct tpf_live_node *ln, struct tpf_diags *d)
{
	const struct tpf_desired_node *dn = tpf_desired_find(in->desired, ln->name);
	const char *group = NULL;
	int index = 0;
	if (!dn && tpf_live_node_slot(ln, &group, &index) < 0) {
		tpf_warn(d, ln->name,
			 "node '%s' carries the label %s=%s but no %s and %s labels, and is not "
			 "declared: it cannot be recorded in the state",
			 ln->name, TPF_LABEL_FLEET, in->fleet->name, TPF_LABEL_GROUP, TPF_LABEL_INDEX);
		return;
	}
	struct tpf_action *a = add(p, TPF_ACT_UPDATE, ln->name, TPF_REFRESH_FOUND,
				   "found by this state's lineage label but missing from state");
	a->adopt = 1;
	a->id = xstrdup(ln->id);
	a->zone = xstrdup(ln->recipe.zone);
	if (dn) {
		a->desired = xcalloc(1, sizeof(*a->desired));
		tpf_desired_node_copy(a->desired, dn);
	}
	change_str(a, "id", NULL, ln->id);
	change_str(a, "zone", NULL, ln->recipe.zone);
}

int tpf_plan_refresh_only(struct tpf_plan *out, const struct tpf_diff_input *in,
			  struct tpf_diags *d)
{
	const struct tpf_state *st = in->state;
	memset(out, 0, sizeof(*out));
	out->fleet = xstrdup(in->fleet->name);
	/* As tpf_diff: a state never written has no lineage to match yet. */
	out->lineage = st->serial ? xstrdup(st->lineage) : NULL;
	out->serial = st->serial;
	out->refresh_only = 1;
	for (size_t i = 0; i < st->nnodes; i++)
		refresh_state_node(out, &st->nodes[i],
				   tpf_live_set_find(in->live, st->nodes[i].name));
	for (size_t i = 0; i < in->live->n; i++) {
		const struct tpf_live_node *ln = &in->live->nodes[i];
		if (!tpf_state_find((struct tpf_state *)st, ln->name))
			refresh_found(out, in, ln, d);
	}
	tpf_plan_sort(out);
	return 0;
}

static const char *col(int color, const char *code)
{
	return color ? code : "";
}

static void render_drift(const struct tpf_action *a, int color, struct tpf_buf *out)
{
	const char *what = a->kind == TPF_ACT_FORGET ? "has been deleted"
			   : a->adopt ? "has been found: it carries this fleet's labels but is "
					"not in the state"
				      : "has changed";
	char sym = a->kind == TPF_ACT_FORGET ? '-' : a->adopt ? '+' : '~';
	const char *sc = sym == '-' ? C_RED : sym == '+' ? C_GREEN : C_YELLOW;
	tpf_buf_addf(out, "  %s# %s%s %s\n", col(color, C_BOLD), a->node, col(color, C_RESET), what);
	if (a->reason && !a->adopt && a->kind != TPF_ACT_FORGET)
		tpf_buf_addf(out, "  # (%s)\n", a->reason);
	tpf_buf_addf(out, "  %s%c%s node \"%s\" {\n", col(color, sc), sym, col(color, C_RESET),
		     a->node);
	size_t width = 0;
	for (size_t i = 0; i < a->nchanges; i++)
		if (strlen(a->changes[i].field) > width)
			width = strlen(a->changes[i].field);
	for (size_t i = 0; i < a->nchanges; i++) {
		const struct tpf_change *c = &a->changes[i];
		tpf_buf_addf(out, "      %s%c%s %-*s = ", col(color, sc), sym, col(color, C_RESET),
			     (int)width, c->field);
		if (c->before && c->after)
			tpf_buf_addf(out, "%s -> %s\n", c->before, c->after);
		else if (c->after)
			tpf_buf_addf(out, "%s\n", c->after);
		else
			tpf_buf_addf(out, "%s -> null\n", c->before ? c->before : "null");
	}
	tpf_buf_adds(out, "    }\n\n");
}

void tpf_plan_render_refresh_only(const struct tpf_plan *p, int color, struct tpf_buf *out)
{
	if (!p->n) {
		tpf_buf_addf(out, "%s%sNo changes.%s%s Your infrastructure still matches the "
				  "configuration.%s\n\n",
			     col(color, C_GREEN), col(color, C_BOLD), col(color, C_RESET),
			     col(color, C_BOLD), col(color, C_RESET));
		tpf_buf_adds(out, "tpuform has checked that the real remote objects still match the "
				  "result of your most recent changes, and found no differences.\n");
		return;
	}
	tpf_buf_addf(out, "%sNote: Objects have changed outside of tpuform%s\n\n",
		     col(color, C_BOLD), col(color, C_RESET));
	tpf_buf_adds(out, "tpuform detected the following changes made outside of tpuform since "
			  "the last \"tpuform apply\":\n\n");
	for (size_t i = 0; i < p->n; i++)
		render_drift(&p->actions[i], color, out);
	tpf_buf_adds(out, "This is a refresh-only plan, so tpuform will not take any actions to "
			  "undo these. If you were expecting these changes then you can apply this "
			  "plan to record the updated values in the tpuform state without changing "
			  "any remote objects.\n");
}
