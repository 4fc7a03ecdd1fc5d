/*
 * An ordered list of string pairs: env, labels, secrets.
 * Keys are unique (set replaces). Strings are owned by the list.
 */
#ifndef TPF_KV_H
#define TPF_KV_H

#include <stddef.h>

struct tpf_kv {
	char *key;
	char *value;
};

struct tpf_kvlist {
	struct tpf_kv *items;
	size_t n, alloc;
};

#define TPF_KVLIST_INIT { NULL, 0, 0 }

/* Set key to a copy of value, replacing an existing entry in place. */
void tpf_kvlist_set(struct tpf_kvlist *l, const char *key, const char *value);
/* Borrowed pointer to the value, or NULL. */
const char *tpf_kvlist_get(const struct tpf_kvlist *l, const char *key);
/* Remove key if present; returns 1 if something was removed. */
int tpf_kvlist_unset(struct tpf_kvlist *l, const char *key);
/* dst gets copies of every entry of src (set semantics, src wins). */
void tpf_kvlist_merge(struct tpf_kvlist *dst, const struct tpf_kvlist *src);
void tpf_kvlist_copy(struct tpf_kvlist *dst, const struct tpf_kvlist *src);
/* Sort by key (byte order), for stable hashing and output. */
void tpf_kvlist_sort(struct tpf_kvlist *l);
/* 1 if both hold the same pairs, in any order. */
int tpf_kvlist_equal(const struct tpf_kvlist *a, const struct tpf_kvlist *b);
void tpf_kvlist_release(struct tpf_kvlist *l);

#endif
