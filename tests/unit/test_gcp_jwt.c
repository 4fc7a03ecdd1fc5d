/*
 * Cloud TPU client: base64url and RS256 JWT assertions for service-account
 * keys. The signature is checked with the public key through libcrypto.
 */
#include "google/gcp_jwt.h"
#include "tests/unit/unit.h"
#include "util/diag.h"

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <stdlib.h>
#include <string.h>

static void test_gcp_jwt__b64url_vectors(void)
{
	/* RFC 4648 section 10, without padding */
	static const char *const in[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const out[] = { "", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy" };
	for (size_t i = 0; i < 7; i++) {
		char *e = tpf_gcp_b64url(in[i], strlen(in[i]));
		CHECK_STR(e, out[i]);
		size_t n = 99;
		unsigned char *dec = tpf_gcp_b64url_decode(e, &n);
		CHECK(dec && n == strlen(in[i]) && !memcmp(dec, in[i], n));
		free(dec);
		free(e);
	}
	/* the url-safe alphabet: standard "+/8=" becomes "-_8" */
	const unsigned char bin[] = { 0xfb, 0xff, 0xfc };
	char *e = tpf_gcp_b64url(bin, 2);
	CHECK_STR(e, "-_8");
	free(e);
	e = tpf_gcp_b64url(bin, 3);
	CHECK_STR(e, "-__8");
	free(e);
	size_t n;
	CHECK(tpf_gcp_b64url_decode("Zm9v+", &n) == NULL);  /* standard alphabet refused */
	CHECK(tpf_gcp_b64url_decode("Z", &n) == NULL);      /* impossible length */
	CHECK(tpf_gcp_b64url_decode("Zm9v!!", &n) == NULL); /* not base64 */
}

static char *key_pem(EVP_PKEY *k)
{
	BIO *b = BIO_new(BIO_s_mem());
	PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
	char *data;
	long n = BIO_get_mem_data(b, &data);
	char *s = strndup(data, (size_t)n);
	BIO_free(b);
	return s;
}

static json_t *decode_part(const char *p, size_t len)
{
	char *s = strndup(p, len);
	size_t n;
	unsigned char *raw = tpf_gcp_b64url_decode(s, &n);
	json_t *j = raw ? json_loadb((char *)raw, n, 0, NULL) : NULL;
	free(raw);
	free(s);
	return j;
}

static void test_gcp_jwt__sign_and_verify(void)
{
	EVP_PKEY *key = EVP_RSA_gen(2048);
	CHECK(key != NULL);
	char *pem = key_pem(key);
	CHECK(pem && strstr(pem, "BEGIN PRIVATE KEY"));
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_gcp_jwt_claims c = {
		.iss = "sa@proj.iam.gserviceaccount.com", .scope = TPF_GCP_SCOPE,
		.aud = "http://127.0.0.1:1234/token", .iat = 1700000000, .lifetime = 3600,
	};
	char *jwt = NULL;
	CHECK_INT(tpf_gcp_jwt_sign(pem, "kid-123", &c, "key.json", &jwt, &d), 0);
	CHECK_INT(d.n, 0);
	CHECK(jwt != NULL);
	if (!jwt)
		goto done;
	const char *dot1 = strchr(jwt, '.');
	const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
	CHECK(dot1 && dot2 && !strchr(dot2 + 1, '.'));
	if (!dot2)
		goto done;
	CHECK(!strpbrk(jwt, "+/=")); /* base64url, no padding */

	json_t *h = decode_part(jwt, (size_t)(dot1 - jwt));
	CHECK_STR(json_string_value(json_object_get(h, "alg")), "RS256");
	CHECK_STR(json_string_value(json_object_get(h, "typ")), "JWT");
	CHECK_STR(json_string_value(json_object_get(h, "kid")), "kid-123");
	json_decref(h);

	json_t *cl = decode_part(dot1 + 1, (size_t)(dot2 - dot1 - 1));
	CHECK_STR(json_string_value(json_object_get(cl, "iss")), "sa@proj.iam.gserviceaccount.com");
	CHECK_STR(json_string_value(json_object_get(cl, "scope")),
		  "https://www.googleapis.com/auth/cloud-platform");
	CHECK_STR(json_string_value(json_object_get(cl, "aud")), "http://127.0.0.1:1234/token");
	CHECK_INT(json_integer_value(json_object_get(cl, "iat")), 1700000000);
	CHECK_INT(json_integer_value(json_object_get(cl, "exp")), 1700003600);
	json_decref(cl);

	/* RSASSA-PKCS1-v1_5 SHA-256 over "header.claims", with the public key */
	size_t siglen;
	unsigned char *sig = tpf_gcp_b64url_decode(dot2 + 1, &siglen);
	CHECK(sig && siglen == 256);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok = EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key) == 1 &&
		 EVP_DigestVerify(ctx, sig, siglen, (const unsigned char *)jwt,
				  (size_t)(dot2 - jwt)) == 1;
	CHECK(ok);
	EVP_MD_CTX_free(ctx);
	/* and a tampered claims part does not verify */
	char *bad = strdup(jwt);
	bad[dot1 - jwt + 3] ^= 1;
	ctx = EVP_MD_CTX_new();
	ok = EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key) == 1 &&
	     EVP_DigestVerify(ctx, sig, siglen, (const unsigned char *)bad, (size_t)(dot2 - jwt)) == 1;
	CHECK(!ok);
	EVP_MD_CTX_free(ctx);
	free(bad);
	free(sig);

	/* no kid: the header has none */
	char *jwt2 = NULL;
	CHECK_INT(tpf_gcp_jwt_sign(pem, NULL, &c, "key.json", &jwt2, &d), 0);
	h = jwt2 ? decode_part(jwt2, (size_t)(strchr(jwt2, '.') - jwt2)) : NULL;
	CHECK(h && !json_object_get(h, "kid"));
	json_decref(h);
	free(jwt2);
done:
	free(jwt);
	free(pem);
	EVP_PKEY_free(key);
	tpf_diags_release(&d);
}

static void test_gcp_jwt__bad_keys(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_gcp_jwt_claims c = { .iss = "a", .scope = "s", .aud = "u", .iat = 1, .lifetime = 1 };
	char *jwt = NULL;
	const char *garbage = "-----BEGIN PRIVATE KEY-----\nSECRETBYTESxyz\n-----END PRIVATE KEY-----\n";
	CHECK_INT(tpf_gcp_jwt_sign(garbage, NULL, &c, "k.json", &jwt, &d), TPF_ERROR);
	CHECK(jwt == NULL);
	CHECK_INT(d.n, 1);
	CHECK(d.n && strstr(d.items[0].summary, "'k.json'"));
	CHECK(d.n && !strstr(d.items[0].summary, "SECRETBYTES"));
	CHECK_INT(tpf_gcp_jwt_sign("", NULL, &c, "k.json", &jwt, &d), TPF_ERROR);

	/* an EC key cannot sign RS256 */
	EVP_PKEY *ec = EVP_EC_gen("P-256");
	char *pem = key_pem(ec);
	CHECK_INT(tpf_gcp_jwt_sign(pem, NULL, &c, "ec.json", &jwt, &d), TPF_ERROR);
	CHECK(d.n == 3 && strstr(d.items[2].summary, "not an RSA key"));
	for (size_t i = 0; i < d.n; i++)
		CHECK(!strstr(d.items[i].summary, "BEGIN") &&
		      (!d.items[i].detail || !strstr(d.items[i].detail, "BEGIN")));
	free(pem);
	EVP_PKEY_free(ec);
	tpf_diags_release(&d);
}

int main(void)
{
	RUN(test_gcp_jwt__b64url_vectors);
	RUN(test_gcp_jwt__sign_and_verify);
	RUN(test_gcp_jwt__bad_keys);
	return unit_done();
}
