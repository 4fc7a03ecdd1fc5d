/*
 * The watch hooks' memory across rounds (engine/watch/watch_hooks_internal.h):
 * the small keyed tables, the lost nodes being replaced, and whether a
 * node's restart or replacement is still settling.
 */
#include "engine/watch/watch_hooks_internal.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct mark *tpf_hooks_mark_find(struct marks *m, const char *key)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->items[i].key, key))
			return &m->items[i];
	return NULL;
}

void tpf_hooks_mark_set(struct marks *m, const char *key, long value)
{
	struct mark *k = tpf_hooks_mark_find(m, key);
	if (!k) {
		XGROW(m->items, m->n + 1, m->alloc);
		k = &m->items[m->n++];
		k->key = xstrdup(key);
	}
	k->value = value;
}

void tpf_hooks_mark_remove(struct marks *m, const char *key)
{
	struct mark *k = tpf_hooks_mark_find(m, key);
	if (k) {
		free(k->key);
		*k = m->items[--m->n];
	}
}

void tpf_hooks_marks_release(struct marks *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->items[i].key);
	free(m->items);
	memset(m, 0, sizeof(*m));
}

struct lost_node *tpf_hooks_lost_find(struct tpf_watch_hooks *h, const char *node)
{
	for (size_t i = 0; i < h->nlost; i++)
		if (!strcmp(h->lost[i].node, node))
			return &h->lost[i];
	return NULL;
}

/* A probe that races a restart or replacement of node (in flight, or ended
 * after this round's refresh began) may see a session between two tries,
 * and the state of before: what it says is about neither. */
int tpf_hooks_unsettled(struct tpf_watch_hooks *h, const char *node)
{
	const struct mark *settled = tpf_hooks_mark_find(&h->settled, node);
	return tpf_hooks_mark_find(&h->restarts, node) || tpf_hooks_lost_find(h, node) ||
	       (settled && (double)settled->value / 1000 >= h->round_started);
}
