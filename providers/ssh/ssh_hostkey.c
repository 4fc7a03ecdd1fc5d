/*
 * Host keys: OpenSSH-style fingerprints, pins, the keys a provider says
 * the worker publishes, and trust on first use when there are neither.
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

char *tpf_ssh_key_fingerprint(const char *key)
{
	size_t len = 0;
	unsigned char *blob = tpf_ssh_key_blob(key, &len);
	if (!blob)
		return NULL;
	unsigned char digest[32];
	unsigned int dlen = 0;
	char *fp = NULL;
	if (EVP_Digest(blob, len, digest, &dlen, EVP_sha256(), NULL) && dlen == 32)
		fp = tpf_ssh_fingerprint(digest);
	free(blob);
	return fp;
}

/* Algorithms that present a key of each type, strongest first; rsa-sha2-*
 * sign with an ssh-rsa key (RFC 8332) and exist from libssh2 1.11. */
static const struct {
	const char *type, *algs[3];
} key_algs[] = {
	{ "ssh-ed25519", { "ssh-ed25519" } },
	{ "ecdsa-sha2-nistp256", { "ecdsa-sha2-nistp256" } },
	{ "ecdsa-sha2-nistp384", { "ecdsa-sha2-nistp384" } },
	{ "ecdsa-sha2-nistp521", { "ecdsa-sha2-nistp521" } },
	{ "ssh-rsa", { "rsa-sha2-512", "rsa-sha2-256", "ssh-rsa" } },
};

static int has_type(const struct tpf_ssh_access *a, const char *type)
{
	size_t n = strlen(type);
	for (size_t i = 0; i < a->nhost_keys; i++)
		if (a->host_keys[i] && !strncmp(a->host_keys[i], type, n) && a->host_keys[i][n] == ' ')
			return 1;
	return 0;
}

void tpf_ssh_hostkey_pref(const struct tpf_ssh_access *a, char *out, size_t size)
{
	size_t len = 0;
	out[0] = '\0';
	if (!a || !a->nhost_keys)
		return;
	LIBSSH2_SESSION *s = libssh2_session_init();
	const char **algs = NULL;
	int n = s ? libssh2_session_supported_algs(s, LIBSSH2_METHOD_HOSTKEY, &algs) : 0;
	for (size_t i = 0; i < sizeof(key_algs) / sizeof(key_algs[0]); i++) {
		if (!has_type(a, key_algs[i].type))
			continue;
		for (size_t j = 0; j < 3 && key_algs[i].algs[j]; j++) {
			const char *alg = key_algs[i].algs[j];
			int known = 0;
			for (int k = 0; k < n && !known; k++)
				known = !strcmp(algs[k], alg);
			size_t add = strlen(alg) + (len ? 1 : 0);
			if (!known || len + add >= size)
				continue;
			snprintf(out + len, size - len, "%s%s", len ? "," : "", alg);
			len += add;
		}
	}
	if (n > 0)
		libssh2_free(s, algs);
	if (s)
		libssh2_session_free(s);
}

/* No pin, but the provider knows the keys the worker publishes: the key
 * presented must be one of them. */
static int check_published(struct tpf_conn *c, const struct tpf_ssh_access *a,
			   struct tpf_diags *d)
{
	size_t klen = 0;
	int ktype = 0;
	const unsigned char *key = (const unsigned char *)libssh2_session_hostkey(c->s, &klen, &ktype);
	for (size_t i = 0; i < a->nhost_keys; i++) {
		size_t len = 0;
		unsigned char *blob = tpf_ssh_key_blob(a->host_keys[i], &len);
		int same = blob && len == klen && !memcmp(blob, key, klen);
		free(blob);
		if (same)
			return 0;
	}
	struct tpf_buf want = TPF_BUF_INIT;
	for (size_t i = 0; i < a->nhost_keys; i++) {
		char *fp = tpf_ssh_key_fingerprint(a->host_keys[i]);
		const char *sp = a->host_keys[i] ? strchr(a->host_keys[i], ' ') : NULL;
		tpf_buf_addf(&want, "%s%s (%.*s)", i ? ", " : "", fp ? fp : "(malformed)",
			     sp ? (int)(sp - a->host_keys[i]) : 1, sp ? a->host_keys[i] : "?");
		free(fp);
	}
	const char *from = a->host_keys_from ? a->host_keys_from : "its provider";
	char *hint = xasprintf(
		"the worker's VM publishes the keys its sshd was given; a machine that answers at "
		"its address with another key may be impersonating it. Nothing was sent to it. If "
		"the VM's keys were changed on purpose, wait until %s shows the new ones",
		from);
	tpf_errorx(d, c->where, hint,
		   "host key of worker '%s' at %s port %d is not the one %s names: expected %s, "
		   "the worker presents %s; refusing to connect",
		   c->where, c->host, c->port, from, want.buf, c->host_key);
	free(hint);
	tpf_buf_release(&want);
	return TPF_EHOSTKEY;
}

int tpf_ssh_read_host_key(struct tpf_conn *c, struct tpf_diags *d)
{
	const unsigned char *digest =
		(const unsigned char *)libssh2_hostkey_hash(c->s, LIBSSH2_HOSTKEY_HASH_SHA256);
	size_t klen = 0;
	int ktype = 0;
	const unsigned char *key = (const unsigned char *)libssh2_session_hostkey(c->s, &klen, &ktype);
	if (!digest || !key || !key_type_name(ktype))
		return tpf_errorx(d, c->where, NULL,
				  "cannot verify %s '%s' at %s port %d: no usable host key (type %d)",
				  TPF_SSH_ROLE(c), c->where, c->host, c->port, ktype);
	c->host_key = tpf_ssh_fingerprint(digest);
	char *b = base64(key, klen, 1);
	c->known_line = xasprintf("%s %s", key_type_name(ktype), b);
	free(b);
	return 0;
}

int tpf_ssh_check_host_key(struct tpf_conn *c, const struct tpf_worker_ref *w,
			   const struct tpf_ssh_access *a, struct tpf_diags *d)
{
	if (tpf_ssh_read_host_key(c, d))
		return TPF_ERROR;
	if (!w->host_key && a && a->nhost_keys)
		return check_published(c, a, d);
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
