/*
 * Hashes and random identifiers, all from OpenSSL's libcrypto (EVP SHA-256,
 * RAND_bytes): no hand-written crypto.
 */
#ifndef TPF_HASH_H
#define TPF_HASH_H

#include <stddef.h>

/* Lowercase hex SHA-256 of data (64 chars + NUL) into out[65]. */
void tpf_sha256_hex(const void *data, size_t len, char out[65]);
/* Same, as "sha256:<hex>" in a fresh string the caller frees. */
char *tpf_sha256_tagged(const void *data, size_t len);
/* tpf_sha256_tagged of the concatenation a || b, without building it (the
 * same bytes give the same hash however they are split). Caller frees.
 * Aborts, as the others do, if libcrypto fails. */
char *tpf_sha256_tagged2(const void *a, size_t alen, const void *b, size_t blen);

/* A random version-4 UUID (RFC 9562 section 5.4), lowercase,
 * "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx" (36 chars + NUL) into out[37], from
 * libcrypto's RAND_bytes. The one UUID maker: state lineage, lock and lease
 * ids, and the Google client's requestId (google/gapi.c).
 * tpf_uuid4_try: 0, or -1 (out = "") when the random generator fails.
 * tpf_uuid4: the same, but aborts with a message when it fails. */
int tpf_uuid4_try(char out[37]);
void tpf_uuid4(char out[37]);

#endif
