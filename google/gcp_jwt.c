#include "google/gcp_jwt.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdlib.h>
#include <string.h>

char *tpf_gcp_b64url(const void *data, size_t len)
{
	size_t cap = 4 * ((len + 2) / 3) + 1;
	unsigned char *out = xmalloc(cap);
	int n = EVP_EncodeBlock(out, data, (int)len);
	while (n > 0 && out[n - 1] == '=')
		n--;
	out[n] = '\0';
	for (int i = 0; i < n; i++) {
		if (out[i] == '+')
			out[i] = '-';
		else if (out[i] == '/')
			out[i] = '_';
	}
	return (char *)out;
}

unsigned char *tpf_gcp_b64url_decode(const char *s, size_t *len)
{
	size_t n = strlen(s);
	size_t padded = (n + 3) / 4 * 4;
	if (n % 4 == 1)
		return NULL;
	unsigned char *in = xmalloc(padded + 1);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '-')
			c = '+';
		else if (c == '_')
			c = '/';
		else if (c == '+' || c == '/')
			goto bad;
		in[i] = (unsigned char)c;
	}
	for (size_t i = n; i < padded; i++)
		in[i] = '=';
	in[padded] = '\0';
	unsigned char *out = xmalloc(padded / 4 * 3 + 1);
	int m = padded ? EVP_DecodeBlock(out, in, (int)padded) : 0;
	if (m < 0) {
		free(out);
		goto bad;
	}
	/* EVP_DecodeBlock counts the padding as zero bytes */
	size_t pad = padded - n;
	*len = (size_t)m - pad;
	free(in);
	return out;
bad:
	free(in);
	return NULL;
}

static char *b64url_json(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	if (!s)
		abort();
	char *r = tpf_gcp_b64url(s, strlen(s));
	free(s);
	return r;
}

int tpf_gcp_jwt_sign(const char *pem, const char *kid, const struct tpf_gcp_jwt_claims *c,
		     const char *key_name, char **out, struct tpf_diags *d)
{
	int rc = TPF_ERROR;
	BIO *bio = NULL;
	EVP_PKEY *key = NULL;
	EVP_MD_CTX *ctx = NULL;
	unsigned char *sig = NULL;
	size_t siglen = 0;
	char *h64 = NULL, *c64 = NULL, *s64 = NULL;
	struct tpf_buf input = TPF_BUF_INIT;
	json_t *header = NULL, *claims = NULL;

	if (!pem || !*pem) {
		tpf_error(d, "credentials file '%s' has no 'private_key': expected a PEM RSA key", key_name);
		goto done;
	}
	bio = BIO_new_mem_buf(pem, -1);
	if (!bio)
		goto crypto_fail;
	/* NULL passphrase callback + empty u: an encrypted key fails, never prompts */
	key = PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)"");
	if (!key) {
		tpf_errorx(d, NULL, "download a new JSON key for the service account",
			   "credentials file '%s': 'private_key' is not a readable PEM private key",
			   key_name);
		goto done;
	}
	if (EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA) {
		tpf_error(d, "credentials file '%s': 'private_key' is not an RSA key: expected RSA for RS256",
			  key_name);
		goto done;
	}
	header = json_pack("{s:s, s:s}", "alg", "RS256", "typ", "JWT");
	if (kid && *kid)
		json_object_set_new(header, "kid", json_string(kid));
	claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", c->iss ? c->iss : "",
			   "scope", c->scope ? c->scope : "", "aud", c->aud ? c->aud : "",
			   "iat", (json_int_t)c->iat, "exp", (json_int_t)(c->iat + c->lifetime));
	if (!header || !claims)
		goto crypto_fail;
	h64 = b64url_json(header);
	c64 = b64url_json(claims);
	tpf_buf_addf(&input, "%s.%s", h64, c64);

	ctx = EVP_MD_CTX_new();
	if (!ctx || EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) != 1)
		goto crypto_fail;
	if (EVP_DigestSign(ctx, NULL, &siglen, (unsigned char *)input.buf, input.len) != 1)
		goto crypto_fail;
	sig = xmalloc(siglen);
	if (EVP_DigestSign(ctx, sig, &siglen, (unsigned char *)input.buf, input.len) != 1)
		goto crypto_fail;
	s64 = tpf_gcp_b64url(sig, siglen);
	tpf_buf_addf(&input, ".%s", s64);
	*out = tpf_buf_detach(&input, NULL);
	rc = 0;
	goto done;
crypto_fail:
	tpf_error(d, "credentials file '%s': signing the token request failed (libcrypto)", key_name);
done:
	ERR_clear_error();
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(key);
	BIO_free(bio);
	free(sig);
	free(h64);
	free(c64);
	free(s64);
	json_decref(header);
	json_decref(claims);
	tpf_buf_release(&input);
	return rc;
}
