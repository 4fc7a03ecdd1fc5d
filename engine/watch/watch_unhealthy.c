/*
 * The unhealthy-node policy of the watch loop (engine/watch/watch_internal.h).
 */
#include "engine/watch/watch_internal.h"
#include "model/node_state.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

void tpf_unhealthy_release(struct tpf_unhealthy_set *u)
{
	for (size_t i = 0; i < u->n; i++)
		free(u->items[i].node);
	free(u->items);
	memset(u, 0, sizeof(*u));
}

/* HEALTHY and HEALTH_UNSPECIFIED (no verdict yet) are not a reason to act. */
static int unhealthy(const struct tpf_live_node *ln)
{
	return tpf_node_class(ln->state) == TPF_NODE_READY && tpf_node_health_bad(ln->health);
}

/* The entry of node, added (with a NOTE) when first seen unhealthy. */
static struct tpf_unhealthy *entry(struct tpf_unhealthy_set *u, const struct tpf_live_node *ln,
				   double timeout, double now, const struct tpf_watch_opts *o)
{
	for (size_t k = 0; k < u->n; k++)
		if (!strcmp(u->items[k].node, ln->name))
			return &u->items[k];
	XGROW(u->items, u->n + 1, u->alloc);
	struct tpf_unhealthy *e = &u->items[u->n++];
	e->node = xstrdup(ln->name);
	e->since = now;
	char *msg = xasprintf("health is %s: replacing if it lasts %.0f s", ln->health, timeout);
	tpf_watch_note(o, TPF_EVENT_UNHEALTHY, ln->name, msg);
	free(msg);
	return e;
}

static int planned(const struct tpf_plan *p, const char *node)
{
	for (size_t k = 0; k < p->n; k++)
		if (!strcmp(p->actions[k].node, node))
			return 1;
	return 0;
}

static const struct tpf_desired_node *desired(const struct tpf_desired_set *ds, const char *node)
{
	for (size_t k = 0; k < ds->n; k++)
		if (!strcmp(ds->nodes[k].name, node))
			return &ds->nodes[k];
	return NULL;
}

void tpf_watch_check_unhealthy(struct tpf_unhealthy_set *u, const struct tpf_pipeline *s,
			       struct tpf_plan *p, double timeout, double now,
			       const struct tpf_watch_opts *o)
{
	for (size_t i = 0; i < u->n; i++)
		u->items[i].seen = 0;
	for (size_t i = 0; i < s->live.n; i++) {
		const struct tpf_live_node *ln = &s->live.nodes[i];
		if (!unhealthy(ln))
			continue;
		struct tpf_unhealthy *e = entry(u, ln, timeout, now, o);
		e->seen = 1;
		if (now - e->since < timeout)
			continue;
		const struct tpf_desired_node *dn = desired(&s->desired, ln->name);
		if (planned(p, ln->name) || !dn)
			continue;
		struct tpf_action *a = tpf_plan_add(p, TPF_ACT_REPLACE, ln->name);
		tpf_action_set_reason_kind(a, TPF_REASON_UNHEALTHY);
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
