/* A string index (util/strindex.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/strindex.h"
#include "util/xalloc.h"

/* FNV-1a, 64 bits (http://www.isthe.com/chongo/tech/comp/fnv/). */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The slot holding key, or the empty slot where it would go. cap > 0. */
static size_t slot_of(const struct tpf_strindex *ix, const char *key)
{
	size_t mask = ix->cap - 1, i = (size_t)fnv1a(key) & mask;

	while (ix->keys[i] && strcmp(ix->keys[i], key))
		i = (i + 1) & mask;
	return i;
}

static void grow(struct tpf_strindex *ix)
{
	struct tpf_strindex old = *ix;

	ix->cap = old.cap ? old.cap * 2 : 64;
	ix->keys = xcalloc(ix->cap, sizeof(*ix->keys));
	ix->values = xcalloc(ix->cap, sizeof(*ix->values));
	for (size_t i = 0; i < old.cap; i++) {
		if (!old.keys[i])
			continue;
		size_t s = slot_of(ix, old.keys[i]);
		ix->keys[s] = old.keys[i];
		ix->values[s] = old.values[i];
	}
	free(old.keys);
	free(old.values);
}

void tpf_strindex_put(struct tpf_strindex *ix, const char *key, size_t value)
{
	if (!key)
		return;
	if (2 * (ix->n + 1) > ix->cap)
		grow(ix);
	size_t s = slot_of(ix, key);
	if (ix->keys[s])
		return;
	ix->keys[s] = key;
	ix->values[s] = value;
	ix->n++;
}

int tpf_strindex_get(const struct tpf_strindex *ix, const char *key, size_t *value)
{
	if (!key || !ix->cap)
		return 0;
	size_t s = slot_of(ix, key);
	if (!ix->keys[s])
		return 0;
	*value = ix->values[s];
	return 1;
}

void tpf_strindex_clear(struct tpf_strindex *ix)
{
	if (ix->cap)
		memset(ix->keys, 0, ix->cap * sizeof(*ix->keys));
	ix->n = 0;
}

void tpf_strindex_release(struct tpf_strindex *ix)
{
	free(ix->keys);
	free(ix->values);
	memset(ix, 0, sizeof(*ix));
}
