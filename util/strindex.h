/*
 * A string index: borrowed NUL-terminated keys to size_t values, in an
 * open-addressing hash table (FNV-1a, linear probing) that doubles at half
 * full. For lookups by name over sets of thousands of nodes, which a linear
 * scan per node makes quadratic (issue 13: refresh + plan of 10,000 nodes).
 *
 * Keys are NOT copied: each must outlive the index (or its next clear).
 * No removal: clear and rebuild. Not thread-safe. Aborts on out of memory
 * (util/xalloc.h), like every allocation here.
 */
#ifndef TPF_STRINDEX_H
#define TPF_STRINDEX_H

#include <stddef.h>

struct tpf_strindex {
	const char **keys; /* NULL: empty slot */
	size_t *values;
	size_t cap;        /* slots, a power of two or 0 */
	size_t n;          /* keys held */
};

#define TPF_STRINDEX_INIT { NULL, NULL, 0, 0 }

/* Map key to value; an existing key keeps its FIRST value (as a linear
 * scan from the start finds the first match). key NULL is ignored. */
void tpf_strindex_put(struct tpf_strindex *ix, const char *key, size_t value);
/* 1 and *value if key is held, else 0. key NULL: 0. */
int tpf_strindex_get(const struct tpf_strindex *ix, const char *key, size_t *value);
/* Forget every key (capacity kept). */
void tpf_strindex_clear(struct tpf_strindex *ix);
/* Free the table; *ix is TPF_STRINDEX_INIT again. */
void tpf_strindex_release(struct tpf_strindex *ix);

#endif
