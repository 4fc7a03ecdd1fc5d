/*
 * -target and -replace (plan/target.h): a plan made by tpf_diff, cut down
 * to some nodes, or with some nodes replaced on request.
 */
#include "plan/target.h"
#include "plan/plan_internal.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* The group node `name` belongs to: declared, recorded in state, or
 * labelled on the live node; NULL when none says. */
static const char *group_of(const struct tpf_diff_input *in, const char *name)
{
	const struct tpf_desired_node *dn = tpf_desired_find(in->desired, name);
	if (dn)
		return dn->group;
	const struct tpf_state_node *sn = tpf_state_find((struct tpf_state *)in->state, name);
	if (sn && sn->group)
		return sn->group;
	const struct tpf_live_node *ln = tpf_live_set_find(in->live, name);
	return ln ? tpf_kvlist_get(&ln->recipe.labels, TPF_LABEL_GROUP) : NULL;
}

/* 1 if `name` is one of the nodes the plan was made from. */
static int node_known(const struct tpf_diff_input *in, const char *name)
{
	return tpf_desired_find(in->desired, name) ||
	       tpf_state_find((struct tpf_state *)in->state, name) ||
	       tpf_live_set_find(in->live, name);
}

/* 1 if `name` is a group: declared, or of a node in state or live. */
static int group_known(const struct tpf_diff_input *in, const char *name)
{
	if (tpf_fleet_group(in->fleet, name))
		return 1;
	for (size_t i = 0; i < in->state->nnodes; i++)
		if (in->state->nodes[i].group && !strcmp(in->state->nodes[i].group, name))
			return 1;
	for (size_t i = 0; i < in->live->n; i++) {
		const char *g = tpf_kvlist_get(&in->live->nodes[i].recipe.labels, TPF_LABEL_GROUP);
		if (g && !strcmp(g, name))
			return 1;
	}
	return 0;
}

/* 1 if node `name` is one that names[0..n) name (itself or its group). */
static int named(const struct tpf_diff_input *in, const char *name, const char *const *names,
		 size_t n)
{
	const char *group = NULL;
	int group_looked = 0;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(names[i], name))
			return 1;
		if (!group_looked) {
			group = group_of(in, name);
			group_looked = 1;
		}
		if (group && !strcmp(names[i], group))
			return 1;
	}
	return 0;
}

/* "f-a-0, f-a-1, ... (12 in all)": the declared nodes, for a hint. */
static char *some_nodes(const struct tpf_diff_input *in)
{
	struct tpf_buf b = TPF_BUF_INIT;
	const size_t shown = 8;
	for (size_t i = 0; i < in->desired->n && i < shown; i++)
		tpf_buf_addf(&b, "%s%s", i ? ", " : "", in->desired->nodes[i].name);
	if (in->desired->n > shown)
		tpf_buf_addf(&b, ", ... (%zu in all)", in->desired->n);
	return tpf_buf_detach(&b, NULL);
}

int tpf_plan_check_names(const struct tpf_diff_input *in, const char *flag,
			 const char *const *names, size_t n, struct tpf_diags *d)
{
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		if (node_known(in, names[i]) || group_known(in, names[i]))
			continue;
		char *nodes = some_nodes(in);
		char *hint = xasprintf("%s takes a node name or a group name. The nodes of fleet "
				       "'%s' are: %s; 'tpuform state list' lists those in state.",
				       flag, in->fleet->name, *nodes ? nodes : "(none declared)");
		rc = tpf_errorx(d, NULL, hint,
				"%s: no node or group '%s' in fleet '%s' (not declared, not in the "
				"state, not found by its labels)",
				flag, names[i], in->fleet->name);
		free(hint);
		free(nodes);
	}
	return rc;
}

/* Keep the entries of what is not as declared that keep() says yes to. */
static void keep_unconverged(struct tpf_plan *p,
			     int (*keep)(const struct tpf_plan *p, const struct tpf_unconverged *u,
					 const void *ctx),
			     const void *ctx)
{
	size_t kept = 0;
	for (size_t i = 0; i < p->nunconverged; i++) {
		struct tpf_unconverged *u = &p->unconverged[i];
		if (keep(p, u, ctx)) {
			p->unconverged[kept++] = *u;
			continue;
		}
		free(u->node);
		free(u->reason);
	}
	p->nunconverged = kept;
}

struct names {
	const struct tpf_diff_input *in;
	const char *const *names;
	size_t n;
};

static int is_targeted(const struct tpf_plan *p, const struct tpf_unconverged *u, const void *ctx)
{
	const struct names *t = ctx;
	(void)p;
	return named(t->in, u->node, t->names, t->n);
}

int tpf_plan_target(struct tpf_plan *p, const struct tpf_diff_input *in,
		    const char *const *targets, size_t n, struct tpf_diags *d)
{
	if (!n)
		return 0;
	if (tpf_plan_check_names(in, "-target", targets, n, d))
		return TPF_ERROR;
	size_t kept = 0;
	for (size_t i = 0; i < p->n; i++) {
		if (named(in, p->actions[i].node, targets, n))
			p->actions[kept++] = p->actions[i];
		else
			tpf_action_release(&p->actions[i]);
	}
	p->n = kept;
	struct names t = { in, targets, n };
	keep_unconverged(p, is_targeted, &t);
	p->deferred = 0;
	for (size_t i = 0; i < p->nunconverged; i++)
		p->deferred += p->unconverged[i].kind == TPF_UNCONV_QUOTA;
	p->targets = xcalloc(n, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		p->targets[i] = xstrdup(targets[i]);
	p->ntargets = n;
	tpf_plan_recount(p);
	return 0;
}

static struct tpf_action *find_action(struct tpf_plan *p, const char *node)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->actions[i].node, node))
			return &p->actions[i];
	return NULL;
}

/* Turn an existing action into the requested replace. A replace keeps
 * its "# forces replacement" lines (they still change); the lines of an
 * update or a restart describe what the replace makes moot. */
static void make_replace(struct tpf_action *a, const struct tpf_live_node *ln)
{
	if (a->kind != TPF_ACT_REPLACE) {
		for (size_t i = 0; i < a->nchanges; i++) {
			free(a->changes[i].field);
			free(a->changes[i].before);
			free(a->changes[i].after);
		}
		a->nchanges = 0;
	}
	a->kind = TPF_ACT_REPLACE;
	a->adopt = 0;
	a->update_labels = 0;
	a->patch = 0;
	a->nworkers = 0; /* a new node's workers are all provisioned */
	xstrset(&a->zone, ln->recipe.zone);
	xstrset(&a->id, ln->id);
	tpf_action_set_reason_kind(a, TPF_REASON_REPLACE_BY_REQUEST);
	xstrset(&a->reason, TPF_REASON_REPLACE_BY_REQUEST_TEXT);
	char *before = xasprintf("\"%s\"", ln->id ? ln->id : "");
	tpf_action_change(a, "id", before, "(known after apply)", 0, 0);
	free(before);
}

static int not_replaced(const struct tpf_plan *p, const struct tpf_unconverged *u, const void *ctx)
{
	(void)ctx;
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->actions[i].node, u->node) &&
		    p->actions[i].reason_kind == TPF_REASON_REPLACE_BY_REQUEST)
			return 0;
	return 1;
}

int tpf_plan_replace(struct tpf_plan *p, const struct tpf_diff_input *in,
		     const char *const *names, size_t n, struct tpf_diags *d)
{
	if (!n)
		return 0;
	if (tpf_plan_check_names(in, "-replace", names, n, d))
		return TPF_ERROR;
	for (size_t i = 0; i < in->desired->n; i++) {
		const struct tpf_desired_node *dn = &in->desired->nodes[i];
		const struct tpf_live_node *ln = tpf_live_set_find(in->live, dn->name);
		if (!ln || !named(in, dn->name, names, n))
			continue;
		struct tpf_action *a = find_action(p, dn->name);
		if (a && a->kind == TPF_ACT_CREATE)
			continue;
		if (!a) {
			a = tpf_plan_add(p, TPF_ACT_REPLACE, dn->name);
			a->desired = xcalloc(1, sizeof(*a->desired));
			tpf_desired_node_copy(a->desired, dn);
		}
		make_replace(a, ln);
	}
	/* The replaced nodes start afresh: what held them back goes. */
	keep_unconverged(p, not_replaced, NULL);
	tpf_plan_sort(p);
	tpf_plan_recount(p);
	return 0;
}

int tpf_plan_mode_check(const struct tpf_plan_mode *m, int refresh, struct tpf_diags *d)
{
	if (m->destroy && m->refresh_only)
		return tpf_errorx(d, NULL, "Use one of them: -destroy plans deletions, -refresh-only "
					   "plans state updates.",
				  "The -destroy and -refresh-only options are mutually-exclusive.");
	if (m->nreplace && (m->destroy || m->refresh_only))
		return tpf_errorx(d, NULL,
				  "Forcing node replacement (with -replace=...) is allowed only in "
				  "normal planning mode.",
				  "Unsupported plan mode");
	if (m->refresh_only && !refresh)
		return tpf_errorx(d, NULL, NULL,
				  "It doesn't make sense to use -refresh-only at the same time as "
				  "-refresh=false, because tpuform would have nothing to do.");
	return 0;
}
