/*
 * Copy, release and lookup of live nodes (model/live.h).
 */
#include "model/live.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void tpf_live_node_release(struct tpf_live_node *n)
{
	free(n->name);
	free(n->id);
	free(n->state);
	free(n->health);
	free(n->create_time);
	free(n->queued_state);
	free(n->health_description);
	free(n->symptoms);
	free(n->maintenance);
	free(n->maintenance_start);
	free(n->lost_slices);
	tpf_recipe_release(&n->recipe);
	for (size_t i = 0; i < n->nendpoints; i++) {
		free(n->endpoints[i].ip);
		free(n->endpoints[i].external_ip);
	}
	free(n->endpoints);
	memset(n, 0, sizeof(*n));
}

void tpf_live_node_copy(struct tpf_live_node *dst, const struct tpf_live_node *src)
{
	/* Built aside first, so that copying a node onto itself works. */
	struct tpf_live_node tmp = {
		.name = xstrdup(src->name),
		.id = xstrdup(src->id),
		.state = xstrdup(src->state),
		.health = xstrdup(src->health),
		.create_time = xstrdup(src->create_time),
		.nendpoints = src->nendpoints,
		.queued_state = xstrdup(src->queued_state),
		.health_description = xstrdup(src->health_description),
		.symptoms = xstrdup(src->symptoms),
		.maintenance = xstrdup(src->maintenance),
		.maintenance_start = xstrdup(src->maintenance_start),
		.capacity_wait = src->capacity_wait,
		.lost_slices = xstrdup(src->lost_slices),
	};
	tpf_recipe_copy(&tmp.recipe, &src->recipe);
	if (src->nendpoints) {
		tmp.endpoints = xcalloc(src->nendpoints, sizeof(*tmp.endpoints));
		for (size_t i = 0; i < src->nendpoints; i++) {
			tmp.endpoints[i].ip = xstrdup(src->endpoints[i].ip);
			tmp.endpoints[i].external_ip = xstrdup(src->endpoints[i].external_ip);
			tmp.endpoints[i].port = src->endpoints[i].port;
		}
	}
	tpf_live_node_release(dst);
	*dst = tmp;
}

void tpf_live_set_release(struct tpf_live_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		tpf_live_node_release(&s->nodes[i]);
	free(s->nodes);
	for (size_t i = 0; i < s->nunlisted; i++)
		free(s->unlisted_zones[i]);
	free(s->unlisted_zones);
	for (size_t i = 0; i < s->npreempted; i++)
		free(s->preempted_ids[i]);
	free(s->preempted_ids);
	memset(s, 0, sizeof(*s));
}

int tpf_live_set_zone_unlisted(const struct tpf_live_set *s, const char *zone)
{
	for (size_t i = 0; zone && i < s->nunlisted; i++)
		if (!strcmp(s->unlisted_zones[i], zone))
			return 1;
	return 0;
}

void tpf_live_set_add_unlisted(struct tpf_live_set *s, const char *zone)
{
	if (!zone || tpf_live_set_zone_unlisted(s, zone))
		return;
	XGROW(s->unlisted_zones, s->nunlisted + 1, s->unlisted_alloc);
	s->unlisted_zones[s->nunlisted++] = xstrdup(zone);
}

void tpf_live_set_add_preempted(struct tpf_live_set *s, const char *id)
{
	if (!id || tpf_live_set_was_preempted(s, id))
		return;
	XGROW(s->preempted_ids, s->npreempted + 1, s->preempted_alloc);
	s->preempted_ids[s->npreempted++] = xstrdup(id);
}

int tpf_live_set_was_preempted(const struct tpf_live_set *s, const char *id)
{
	for (size_t i = 0; id && i < s->npreempted; i++)
		if (!strcmp(s->preempted_ids[i], id))
			return 1;
	return 0;
}

struct tpf_live_node *tpf_live_set_find(const struct tpf_live_set *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->nodes[i].name && !strcmp(s->nodes[i].name, name))
			return &s->nodes[i];
	return NULL;
}

struct tpf_live_node *tpf_live_set_add(struct tpf_live_set *s)
{
	XGROW(s->nodes, s->n + 1, s->alloc);
	struct tpf_live_node *n = &s->nodes[s->n++];
	memset(n, 0, sizeof(*n));
	return n;
}

int tpf_live_node_slot(const struct tpf_live_node *ln, const char **group, int *index)
{
	const char *g = tpf_kvlist_get(&ln->recipe.labels, TPF_LABEL_GROUP);
	const char *i = tpf_kvlist_get(&ln->recipe.labels, TPF_LABEL_INDEX);
	if (!g || !*g || !i || !*i)
		return -1;
	char *end;
	errno = 0;
	long v = strtol(i, &end, 10);
	if (errno || *end || v < 0 || v > 1000000)
		return -1;
	*group = g;
	*index = (int)v;
	return 0;
}
