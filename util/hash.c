#include "util/hash.h"
#include "util/xalloc.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>

static void sha256_failed(void)
{
	fprintf(stderr, "fatal: SHA-256 failed in libcrypto\n");
	abort();
}

static void to_hex(const unsigned char *md, unsigned int mdlen, char out[65])
{
	static const char digits[] = "0123456789abcdef";
	for (unsigned int i = 0; i < mdlen && i < 32; i++) {
		out[2 * i] = digits[md[i] >> 4];
		out[2 * i + 1] = digits[md[i] & 0x0f];
	}
	out[64] = '\0';
}

void tpf_sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL))
		sha256_failed();
	to_hex(md, mdlen, out);
}

char *tpf_sha256_tagged2(const void *a, size_t alen, const void *b, size_t blen)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char hex[65];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) ||
	    !EVP_DigestUpdate(ctx, a, alen) || !EVP_DigestUpdate(ctx, b, blen) ||
	    !EVP_DigestFinal_ex(ctx, md, &mdlen))
		sha256_failed();
	EVP_MD_CTX_free(ctx);
	to_hex(md, mdlen, hex);
	return xasprintf("sha256:%s", hex);
}

char *tpf_sha256_tagged(const void *data, size_t len)
{
	char hex[65];
	tpf_sha256_hex(data, len, hex);
	return xasprintf("sha256:%s", hex);
}

int tpf_uuid4_try(char out[37])
{
	unsigned char b[16];
	out[0] = '\0';
	if (RAND_bytes(b, sizeof(b)) != 1)
		return -1;
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 (RFC 9562 section 5.4) */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* variant 10 */
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
		 b[11], b[12], b[13], b[14], b[15]);
	return 0;
}

void tpf_uuid4(char out[37])
{
	if (tpf_uuid4_try(out) < 0) {
		fprintf(stderr, "fatal: no randomness from libcrypto\n");
		abort();
	}
}
