#include "util/kv.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

void tpf_kvlist_set(struct tpf_kvlist *l, const char *key, const char *value)
{
	for (size_t i = 0; i < l->n; i++) {
		if (!strcmp(l->items[i].key, key)) {
			xstrset(&l->items[i].value, value);
			return;
		}
	}
	XGROW(l->items, l->n + 1, l->alloc);
	l->items[l->n].key = xstrdup(key);
	l->items[l->n].value = xstrdup(value);
	l->n++;
}

const char *tpf_kvlist_get(const struct tpf_kvlist *l, const char *key)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->items[i].key, key))
			return l->items[i].value;
	return NULL;
}

int tpf_kvlist_unset(struct tpf_kvlist *l, const char *key)
{
	for (size_t i = 0; i < l->n; i++) {
		if (!strcmp(l->items[i].key, key)) {
			free(l->items[i].key);
			free(l->items[i].value);
			memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof(l->items[0]));
			l->n--;
			return 1;
		}
	}
	return 0;
}

void tpf_kvlist_merge(struct tpf_kvlist *dst, const struct tpf_kvlist *src)
{
	for (size_t i = 0; i < src->n; i++)
		tpf_kvlist_set(dst, src->items[i].key, src->items[i].value);
}

void tpf_kvlist_copy(struct tpf_kvlist *dst, const struct tpf_kvlist *src)
{
	tpf_kvlist_release(dst);
	tpf_kvlist_merge(dst, src);
}

static int cmp_kv(const void *a, const void *b)
{
	return strcmp(((const struct tpf_kv *)a)->key, ((const struct tpf_kv *)b)->key);
}

void tpf_kvlist_sort(struct tpf_kvlist *l)
{
	if (l->n > 1)
		qsort(l->items, l->n, sizeof(l->items[0]), cmp_kv);
}

int tpf_kvlist_equal(const struct tpf_kvlist *a, const struct tpf_kvlist *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		const char *v = tpf_kvlist_get(b, a->items[i].key);
		if (!v || strcmp(v, a->items[i].value))
			return 0;
	}
	return 1;
}

void tpf_kvlist_release(struct tpf_kvlist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->items[i].key);
		free(l->items[i].value);
	}
	free(l->items);
	l->items = NULL;
	l->n = l->alloc = 0;
}
