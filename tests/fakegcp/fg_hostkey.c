/*
 * A host key for a worker that is not a harness sshd (no --worker-dir).
 *
 * On a real TPU VM the guest agent always publishes its host keys as guest
 * attributes (GoogleCloudPlatform/guest-agent instance_setup.go), and
 * clients rely on that: gcloud 528 reads guestAttributes[i].queryValue.items
 * of every worker without checking that queryValue is there, and crashes
 * when it is not (tests/e2e/t360-gcloud-conformance.sh). So a worker the
 * emulator has no sshd for still publishes an ssh-ed25519 key: a real
 * Ed25519 public key (libcrypto), derived from the node's name and the
 * worker index, the same at every request.
 */
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

/* RFC 8709 section 4: string "ssh-ed25519", string key (32 bytes). */
static size_t put_string(unsigned char *p, const void *s, uint32_t n)
{
	p[0] = (unsigned char)(n >> 24);
	p[1] = (unsigned char)(n >> 16);
	p[2] = (unsigned char)(n >> 8);
	p[3] = (unsigned char)n;
	memcpy(p + 4, s, n);
	return 4 + (size_t)n;
}

json_t *fg_made_up_host_key(const char *node_name, int worker)
{
	static const char type[] = "ssh-ed25519";
	unsigned char seed[SHA256_DIGEST_LENGTH], pub[32], blob[4 + 11 + 4 + 32];
	unsigned char b64[4 * ((sizeof(blob) + 2) / 3) + 1];
	size_t publen = sizeof(pub);
	char *what = xasprintf("fakegcp host key %s/%d", node_name, worker);
	json_t *out = NULL;

	SHA256((const unsigned char *)what, strlen(what), seed);
	free(what);
	EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, sizeof(seed));
	if (k && EVP_PKEY_get_raw_public_key(k, pub, &publen) == 1 && publen == sizeof(pub)) {
		size_t n = put_string(blob, type, sizeof(type) - 1);
		n += put_string(blob + n, pub, sizeof(pub));
		EVP_EncodeBlock(b64, blob, (int)n);
		out = json_pack("{s:s, s:s, s:s}", "namespace", "hostkeys", "key", type, "value",
				(const char *)b64);
	}
	EVP_PKEY_free(k);
	return out;
}
