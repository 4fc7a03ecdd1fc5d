/*
 * The hashes of worker scripts already made, by their rendered head.
 *
 * A worker's script is its head (render.h: the worker's settings) followed
 * by the fixed bootstrap body, and its hash is SHA-256 of both
 * (plan/worker_script.h: tpf_provision_hash). Every plan checks each
 * provisioned worker's stored hash against the desired one, so a `watch`
 * round at 1,024 workers hashed about 50 MB of the same bodies again: 30 %
 * of watch's idle CPU (docs/figures.md). The body is compiled in, so the
 * head alone decides the hash, and a hash once made is looked up here by
 * the head's exact bytes. The hash's value and format are unchanged: the
 * memo only spares remaking it.
 *
 * Bounded: when the heads held pass TPF_SCRIPT_HASH_MEMO_BYTES, the memo is
 * emptied and fills again. Thread-safe (one mutex).
 */
#ifndef TPF_SCRIPT_HASH_MEMO_H
#define TPF_SCRIPT_HASH_MEMO_H

#include <stddef.h>

/* Bytes of heads (and their hashes) held before the memo is emptied. */
#define TPF_SCRIPT_HASH_MEMO_BYTES ((size_t)32 << 20)

/* "sha256:<hex>" of head || body for this head, in a fresh string the
 * caller frees: from the memo when this head was hashed before with the
 * same body, else made (util/hash.h: tpf_sha256_tagged2) and kept. body
 * must be a string that lives as long as the program (the compiled-in
 * template): the memo keys on the head and on body's address. Aborts on
 * out of memory, like every allocation here. */
char *tpf_script_hash_memo(const char *head, const char *body);

/* Empty the memo (tests, and the bound above). */
void tpf_script_hash_memo_clear(void);

/* Lookups answered from the memo and hashes made since the program began
 * (tests and benches read them). */
void tpf_script_hash_memo_counts(size_t *hits, size_t *made);

#endif
