/*
 * The plan container (plan/plan.h): actions, their change lines, sorting
 * and counting, and the job facts a diff reads. The diff rules that fill
 * a plan are plan/diff.c; this file knows none of them, so diff.c,
 * restart.c and unconverged.c all build on it without calling each other
 * back.
 */
#include "plan/plan.h"
#include "plan/plan_internal.h"
#include "util/strindex.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tpf_action *tpf_plan_add(struct tpf_plan *p, enum tpf_action_kind kind, const char *node)
{
	XGROW(p->actions, p->n + 1, p->alloc);
	struct tpf_action *a = &p->actions[p->n++];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->node = xstrdup(node);
	return a;
}

/* A new last change of a, its field copied; the list grows by doubling
 * (a node's changes are counted in nchanges only). */
static struct tpf_change *change_add(struct tpf_action *a, const char *field)
{
	size_t n = a->nchanges;
	if (n == 0 || (n >= 8 && !(n & (n - 1)))) /* 0: room for 8; a power of two: double */
		a->changes = xrealloc(a->changes, (n ? 2 * n : 8) * sizeof(*a->changes));
	struct tpf_change *c = &a->changes[a->nchanges++];
	memset(c, 0, sizeof(*c));
	c->field = xstrdup(field);
	return c;
}

void tpf_action_change(struct tpf_action *a, const char *field, const char *before,
		       const char *after, int forces, int sensitive)
{
	struct tpf_change *c = change_add(a, field);
	c->before = xstrdup(before);
	c->after = xstrdup(after);
	c->forces = forces;
	c->sensitive = sensitive;
}

void tpf_action_change_take(struct tpf_action *a, const char *field, char *before, char *after,
			    int forces)
{
	struct tpf_change *c = change_add(a, field);
	c->before = before;
	c->after = after;
	c->forces = forces;
}

void tpf_action_release(struct tpf_action *a)
{
	free(a->node);
	free(a->reason);
	free(a->reason_code);
	free(a->zone);
	free(a->id);
	free(a->workers);
	free(a->elastic_slices);
	free(a->lost_slices);
	for (size_t i = 0; i < a->nchanges; i++) {
		free(a->changes[i].field);
		free(a->changes[i].before);
		free(a->changes[i].after);
	}
	free(a->changes);
	tpf_desired_node_free(a->desired);
}

void tpf_plan_release(struct tpf_plan *p)
{
	for (size_t i = 0; i < p->n; i++)
		tpf_action_release(&p->actions[i]);
	free(p->actions);
	free(p->fleet);
	free(p->lineage);
	free(p->commit);
	free(p->fleet_sha256);
	for (size_t i = 0; i < p->ntargets; i++)
		free(p->targets[i]);
	free(p->targets);
	tpf_plan_unconverged_release(p);
	memset(p, 0, sizeof(*p));
}

int tpf_plan_has_changes(const struct tpf_plan *p)
{
	return p->n > 0;
}

void tpf_job_fact_release(struct tpf_job_fact *f)
{
	free(f->node);
	free(f->script_hash);
	free(f->last_log);
	free(f->checkpoint);
	free(f->disruption);
	memset(f, 0, sizeof(*f));
}

void tpf_job_facts_release(struct tpf_job_facts *s)
{
	tpf_job_facts_unindex(s);
	for (size_t i = 0; i < s->n; i++)
		tpf_job_fact_release(&s->items[i]);
	free(s->items);
	memset(s, 0, sizeof(*s));
}

struct tpf_job_facts_ix {
	struct tpf_strindex ix;
	char **keys; /* owned; the index borrows them */
	const struct tpf_job_fact *items; /* what it was built for */
	size_t n;
};

char *tpf_job_fact_key(const char *node, int worker)
{
	return xasprintf("%d/%s", worker, node ? node : "");
}

void tpf_job_facts_index(struct tpf_job_facts *s)
{
	tpf_job_facts_unindex(s);
	struct tpf_job_facts_ix *x = xcalloc(1, sizeof(*x));
	x->keys = xcalloc(s->n ? s->n : 1, sizeof(*x->keys));
	x->items = s->items;
	x->n = s->n;
	for (size_t i = 0; i < s->n; i++) {
		x->keys[i] = tpf_job_fact_key(s->items[i].node, s->items[i].worker);
		tpf_strindex_put(&x->ix, x->keys[i], i); /* the first one wins */
	}
	s->ix = x;
}

void tpf_job_facts_unindex(struct tpf_job_facts *s)
{
	struct tpf_job_facts_ix *x = s ? s->ix : NULL;
	if (!x)
		return;
	for (size_t i = 0; i < x->n; i++)
		free(x->keys[i]);
	free(x->keys);
	tpf_strindex_release(&x->ix);
	free(x);
	s->ix = NULL;
}

static int fact_is(const struct tpf_job_fact *f, const char *node, int worker)
{
	return f->worker == worker && f->node && node && !strcmp(f->node, node);
}

const struct tpf_job_fact *tpf_job_facts_find(const struct tpf_job_facts *s,
						      const char *node, int worker)
{
	if (!s || !node)
		return NULL;
	const struct tpf_job_facts_ix *x = s->ix;
	if (x && x->items == s->items && x->n == s->n) {
		char *key = tpf_job_fact_key(node, worker);
		size_t i;
		int held = tpf_strindex_get(&x->ix, key, &i);
		free(key);
		if (!held)
			return NULL;
		if (i < s->n && fact_is(&s->items[i], node, worker))
			return &s->items[i];
		/* Changed under the index: the scan decides. */
	}
	for (size_t i = 0; i < s->n; i++)
		if (fact_is(&s->items[i], node, worker))
			return &s->items[i];
	return NULL;
}

/* ---- value rendering ---------------------------------------------------- */

static int action_order(enum tpf_action_kind k)
{
	switch (k) {
	case TPF_ACT_DELETE: return 0;
	case TPF_ACT_FORGET: return 1;
	case TPF_ACT_REPLACE: return 2;
	case TPF_ACT_CREATE: return 3;
	case TPF_ACT_WAIT: return 4;
	case TPF_ACT_UPDATE: return 5;
	case TPF_ACT_RESTART: return 6;
	}
	return 7;
}

static int cmp_actions(const void *x, const void *y)
{
	const struct tpf_action *a = x, *b = y;
	int d = action_order(a->kind) - action_order(b->kind);
	return d ? d : strcmp(a->node, b->node);
}

void tpf_plan_sort(struct tpf_plan *p)
{
	if (p->n > 1)
		qsort(p->actions, p->n, sizeof(p->actions[0]), cmp_actions);
}

void tpf_plan_recount(struct tpf_plan *out)
{
	out->add = out->change = out->destroyed = 0;
	for (size_t i = 0; i < out->n; i++) {
		switch (out->actions[i].kind) {
		case TPF_ACT_CREATE: out->add++; break;
		case TPF_ACT_DELETE: out->destroyed++; break;
		case TPF_ACT_REPLACE: out->add++; out->destroyed++; break;
		case TPF_ACT_UPDATE:
		case TPF_ACT_RESTART:
		case TPF_ACT_WAIT: out->change++; break;
		case TPF_ACT_FORGET: break;
		}
	}
}

struct tpf_unconverged *tpf_plan_add_unconverged(struct tpf_plan *p, enum tpf_unconverged_kind kind,
						 const char *node, int worker, const char *reason)
{
	XGROW(p->unconverged, p->nunconverged + 1, p->unconverged_alloc);
	struct tpf_unconverged *u = &p->unconverged[p->nunconverged++];
	memset(u, 0, sizeof(*u));
	u->kind = kind;
	u->node = xstrdup(node);
	u->worker = worker;
	u->exit_code = -1;
	u->reason = xstrdup(reason);
	return u;
}

struct tpf_completed *tpf_plan_add_completed(struct tpf_plan *p, const char *node, int deleted,
					     int exit_code, const char *at)
{
	XGROW(p->completed, p->ncompleted + 1, p->completed_alloc);
	struct tpf_completed *c = &p->completed[p->ncompleted++];
	c->node = xstrdup(node);
	c->deleted = deleted;
	c->exit_code = exit_code;
	c->at = xstrdup(at);
	return c;
}

void tpf_plan_unconverged_release(struct tpf_plan *p)
{
	for (size_t i = 0; i < p->nunconverged; i++) {
		free(p->unconverged[i].node);
		free(p->unconverged[i].reason);
	}
	free(p->unconverged);
	p->unconverged = NULL;
	p->nunconverged = p->unconverged_alloc = 0;
	for (size_t i = 0; i < p->ncompleted; i++) {
		free(p->completed[i].node);
		free(p->completed[i].at);
	}
	free(p->completed);
	p->completed = NULL;
	p->ncompleted = p->completed_alloc = 0;
}

int tpf_plan_converged(const struct tpf_plan *p)
{
	return !tpf_plan_has_changes(p) && !p->nunconverged;
}
