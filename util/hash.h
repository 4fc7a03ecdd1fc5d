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

/* A random RFC 4122 version-4 UUID (36 chars + NUL) into out[37]. */
void tpf_uuid4(char out[37]);

#endif
