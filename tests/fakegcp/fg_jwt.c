/*
 * JSON Web Tokens as Google's token endpoint takes them for the JWT-bearer
 * grant (RFC 7523): header.claims.signature, each base64url (RFC 4648
 * section 5, no padding), signed RS256 = RSASSA-PKCS1-v1_5 with SHA-256
 * (RFC 7518 section 3.3) over "b64url(header).b64url(claims)".
 * Base64 and RSA come from libcrypto.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

unsigned char *fg_b64url_decode(const char *s, size_t n, size_t *len)
{
	size_t padded = (n + 3) / 4 * 4;
	char *t;
	unsigned char *out;
	int k;

	if (n % 4 == 1)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_'))
			return NULL;
	}
	t = xmalloc(padded + 1);
	for (size_t i = 0; i < padded; i++)
		t[i] = i >= n ? '=' : s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
	t[padded] = '\0';
	out = xmalloc(padded / 4 * 3 + 1);
	/* EVP_DecodeBlock counts the bytes the padding stands for; drop them. */
	k = padded ? EVP_DecodeBlock(out, (const unsigned char *)t, (int)padded) : 0;
	free(t);
	if (k < 0) {
		free(out);
		return NULL;
	}
	*len = (size_t)k - (padded - n);
	out[*len] = '\0';
	return out;
}

char *fg_b64url_encode(const void *data, size_t len)
{
	char *out = xmalloc((len + 2) / 3 * 4 + 1);
	int k = EVP_EncodeBlock((unsigned char *)out, data, (int)len);

	while (k > 0 && out[k - 1] == '=')
		k--;
	out[k] = '\0';
	for (char *p = out; *p; p++)
		*p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
	return out;
}

static json_t *decode_json(const char *s, size_t n)
{
	size_t len;
	unsigned char *raw = fg_b64url_decode(s, n, &len);
	json_t *v = raw ? json_loadb((const char *)raw, len, 0, NULL) : NULL;

	free(raw);
	if (v && !json_is_object(v)) {
		json_decref(v);
		v = NULL;
	}
	return v;
}

static int signature_ok(const char *signed_part, size_t signed_len, const unsigned char *sig,
			size_t sig_len, void *const *keys, size_t nkeys)
{
	for (size_t i = 0; i < nkeys; i++) {
		EVP_MD_CTX *ctx = EVP_MD_CTX_new();
		int ok = ctx && EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, keys[i]) == 1 &&
			 EVP_DigestVerify(ctx, sig, sig_len, (const unsigned char *)signed_part,
					  signed_len) == 1;
		EVP_MD_CTX_free(ctx);
		if (ok)
			return 1;
	}
	return 0;
}

json_t *fg_jwt_verify(const char *jwt, void *const *keys, size_t nkeys, char *err, size_t errlen)
{
	const char *d1 = strchr(jwt, '.');
	const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	json_t *header = NULL, *claims = NULL;
	unsigned char *sig = NULL;
	size_t sig_len;

	if (!d1 || !d2 || strchr(d2 + 1, '.')) {
		snprintf(err, errlen, "Invalid JWT: not three base64url parts separated by '.'");
		goto fail;
	}
	header = decode_json(jwt, (size_t)(d1 - jwt));
	claims = decode_json(d1 + 1, (size_t)(d2 - d1 - 1));
	sig = fg_b64url_decode(d2 + 1, strlen(d2 + 1), &sig_len);
	if (!header || !claims || !sig) {
		snprintf(err, errlen, "Invalid JWT: the header, claims or signature is not "
				      "base64url-encoded JSON");
		goto fail;
	}
	const char *alg = json_string_value(json_object_get(header, "alg"));
	if (!alg || strcmp(alg, "RS256")) {
		snprintf(err, errlen, "Invalid JWT: unsupported signing algorithm \"%s\"; expected "
				      "RS256", alg ? alg : "");
		goto fail;
	}
	if (!nkeys || !signature_ok(jwt, (size_t)(d2 - jwt), sig, sig_len, keys, nkeys)) {
		snprintf(err, errlen, "Invalid JWT Signature.");
		goto fail;
	}
	json_decref(header);
	free(sig);
	return claims;
fail:
	json_decref(header);
	json_decref(claims);
	free(sig);
	return NULL;
}
