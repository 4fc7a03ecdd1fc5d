/*
 * RS256 JSON Web Tokens for the OAuth2 JWT-bearer grant (RFC 7523) used
 * with Google service-account keys (docs/cloud-tpu-api.md section 7, as
 * google-auth-library-python's service_account.py builds them).
 *
 * JSON by jansson, RSASSA-PKCS1-v1_5 SHA-256 by libcrypto's
 * EVP_DigestSign, base64 by EVP_EncodeBlock plus the RFC 4648 section 5
 * alphabet change: nothing hand-rolled. Key material never reaches a
 * diagnostic.
 */
#ifndef TPF_GCP_JWT_H
#define TPF_GCP_JWT_H

#include <stddef.h>
#include "util/diag.h"

/* OAuth scope for the TPU API. */
#define TPF_GCP_SCOPE "https://www.googleapis.com/auth/cloud-platform"

/* base64url without padding of data. Caller frees. */
char *tpf_gcp_b64url(const void *data, size_t len);

/*
 * Decode base64url (padding optional) into a fresh buffer (caller frees),
 * length in *len. NULL if s is not base64url. Used by tests and to check
 * our own output.
 */
unsigned char *tpf_gcp_b64url_decode(const char *s, size_t *len);

struct tpf_gcp_jwt_claims {
	const char *iss;   /* client_email */
	const char *scope; /* TPF_GCP_SCOPE */
	const char *aud;   /* token_uri */
	long iat;          /* issued at, epoch seconds */
	long lifetime;     /* exp = iat + lifetime (3600) */
};

/*
 * Build and sign "b64url(header).b64url(claims).b64url(signature)" with
 * header {"alg":"RS256","typ":"JWT","kid":kid} (kid omitted if NULL).
 * `pem` is the key's PKCS#8 (or PKCS#1) PEM private_key; it must be RSA.
 * `key_name` names the key file in messages. On success *out is the JWT
 * (caller frees; it is a credential: do not log it). TPF_ERROR with a
 * diagnostic that never contains key bytes.
 */
int tpf_gcp_jwt_sign(const char *pem, const char *kid, const struct tpf_gcp_jwt_claims *c,
		     const char *key_name, char **out, struct tpf_diags *d);

#endif
