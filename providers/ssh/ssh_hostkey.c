/*
 * Host keys: OpenSSH-style fingerprints, trust on first use, pins.
 *
 * A pin is the SHA-256 fingerprint kept per worker in the state
 * (state/state.h: tpf_state_worker.host_key). The fingerprint is enough
 * for `tpuform ssh` too: it fetches the key the worker presents, checks
 * it against the pin, and hands exactly that key to ssh(1), which then
 * refuses any other (ssh_interactive.c).
 */
#include "providers/ssh/ssh_internal.h"
#include "util/xalloc.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

/* Base64 of data; with_padding 0 drops the trailing '='. Caller frees. */
static char *base64(const unsigned char *data, size_t len, int with_padding)
{
	char *out = xmalloc(4 * ((len + 2) / 3) + 1);
	int n = EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	if (!with_padding)
		while (n > 0 && out[n - 1] == '=')
			n--;
	out[n] = '\0';
	return out;
}

char *tpf_ssh_fingerprint(const unsigned char digest[32])
{
	char *b = base64(digest, 32, 0);
	char *fp = xasprintf("SHA256:%s", b);
	free(b);
	return fp;
}

static const char *key_type_name(int type)
{
	switch (type) {
	case LIBSSH2_HOSTKEY_TYPE_RSA:
		return "ssh-rsa";
	case LIBSSH2_HOSTKEY_TYPE_DSS:
		return "ssh-dss";
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_256:
		return "ecdsa-sha2-nistp256";
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_384:
		return "ecdsa-sha2-nistp384";
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_521:
		return "ecdsa-sha2-nistp521";
	case LIBSSH2_HOSTKEY_TYPE_ED25519:
		return "ssh-ed25519";
	}
	return NULL;
}

int tpf_ssh_check_host_key(struct tpf_conn *c, const struct tpf_worker_ref *w,
			   struct tpf_diags *d)
{
	const unsigned char *digest =
		(const unsigned char *)libssh2_hostkey_hash(c->s, LIBSSH2_HOSTKEY_HASH_SHA256);
	size_t klen = 0;
	int ktype = 0;
	const unsigned char *key = (const unsigned char *)libssh2_session_hostkey(c->s, &klen, &ktype);
	if (!digest || !key || !key_type_name(ktype))
		return tpf_errorx(d, c->where, NULL,
				  "cannot verify worker '%s' at %s port %d: no usable host key (type %d)",
				  c->where, c->host, c->port, ktype);
	c->host_key = tpf_ssh_fingerprint(digest);
	char *b = base64(key, klen, 1);
	c->known_line = xasprintf("%s %s", key_type_name(ktype), b);
	free(b);
	if (!w->host_key || !strcmp(w->host_key, c->host_key))
		return 0; /* first use, or the pinned key */
	char *hint = xasprintf(
		"tpuform pinned the key when it first reached this worker and will not talk to a "
		"worker that presents another one: someone may be impersonating it. A node that "
		"tpuform re-creates starts a new pin by itself; if this VM was rebuilt on purpose, "
		"forget the node with 'tpuform state rm %s' and run 'tpuform apply': the node is "
		"adopted again and its new keys pinned", w->node ? w->node : "NODE");
	tpf_errorx(d, c->where, hint,
		   "host key of worker '%s' at %s port %d has changed: pinned %s, the worker presents "
		   "%s; refusing to connect", c->where, c->host, c->port, w->host_key, c->host_key);
	free(hint);
	return TPF_EHOSTKEY;
}
