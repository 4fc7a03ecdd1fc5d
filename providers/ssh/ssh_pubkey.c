/*
 * The public half of the key tpuform logs in with, as one OpenSSH
 * authorized_keys entry without comment ("ssh-ed25519 AAAA..."): what the
 * gcp provider puts in a node's ssh-keys metadata or imports with OS Login.
 *
 * Where it comes from (ssh.h, tpf_ssh_public_key):
 *   - ssh.private_key's ".pub" file, as ssh-keygen writes it next to the key;
 *   - else the private key itself: an OpenSSH key ("BEGIN OPENSSH PRIVATE
 *     KEY", OpenSSH's PROTOCOL.key) carries its public key in clear ahead
 *     of the (possibly encrypted) private part; a PEM key (PKCS#1, SEC1,
 *     PKCS#8) is read with libcrypto and its public key written in the SSH
 *     wire format of RFC 4253 section 6.6 (ssh-rsa), RFC 5656 section 3.1
 *     (ecdsa-sha2-*) and RFC 8709 section 4 (ssh-ed25519);
 *   - else, without ssh.private_key, the first identity of ssh-agent.
 * libssh2 1.10 (Debian 12) reads public keys only to authenticate and
 * exposes none of them, hence libcrypto here. Base64 is libcrypto's
 * (EVP_EncodeBlock), as everywhere in tpuform.
 */
#include "providers/ssh/ssh_internal.h"
#include "util/fs.h"
#include "util/xalloc.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Longest public key file read, bytes: an RSA-16384 key is ~2.8 kB. */
#define PUB_FILE_MAX (64u << 10)
/* Longest private key file read, bytes. */
#define KEY_FILE_MAX (1u << 20)

/* ---- the SSH wire format, RFC 4251 section 5 ---------------------------- */

static void put_u32(struct tpf_buf *b, uint32_t v)
{
	unsigned char x[4] = { (unsigned char)(v >> 24), (unsigned char)(v >> 16),
			       (unsigned char)(v >> 8), (unsigned char)v };
	tpf_buf_add(b, x, 4);
}

static void put_string(struct tpf_buf *b, const void *data, size_t len)
{
	put_u32(b, (uint32_t)len);
	tpf_buf_add(b, data, len);
}

/* A bounds-checked reader over a blob. */
struct reader {
	const unsigned char *p;
	size_t left;
};

static int get_u32(struct reader *r, uint32_t *v)
{
	if (r->left < 4)
		return -1;
	*v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
	r->p += 4;
	r->left -= 4;
	return 0;
}

static int get_string(struct reader *r, const unsigned char **data, size_t *len)
{
	uint32_t n;
	if (get_u32(r, &n) < 0 || n > r->left)
		return -1;
	*data = r->p;
	*len = n;
	r->p += n;
	r->left -= n;
	return 0;
}

char *tpf_ssh_public_key_of_blob(const unsigned char *blob, size_t len)
{
	struct reader r = { blob, len };
	const unsigned char *type;
	size_t tlen;
	if (!blob || len > (1u << 20) || get_string(&r, &type, &tlen) < 0 || !tlen || tlen > 64)
		return NULL;
	for (size_t i = 0; i < tlen; i++)
		if (type[i] <= ' ' || type[i] > '~')
			return NULL;
	char *b64 = xmalloc(4 * ((len + 2) / 3) + 1);
	EVP_EncodeBlock((unsigned char *)b64, blob, (int)len);
	char *out = xasprintf("%.*s %s", (int)tlen, (const char *)type, b64);
	free(b64);
	return out;
}

unsigned char *tpf_ssh_key_blob(const char *key, size_t *len)
{
	const char *sp = key ? strchr(key, ' ') : NULL;
	if (!sp)
		return NULL;
	const char *b = sp + 1;
	size_t blen = strcspn(b, " \t\r\n");
	if (!blen || blen % 4 || blen > (1u << 20))
		return NULL;
	unsigned char *raw = xmalloc(blen / 4 * 3 + 1);
	int n = EVP_DecodeBlock(raw, (const unsigned char *)b, (int)blen);
	if (n <= 0) {
		free(raw);
		return NULL;
	}
	/* EVP_DecodeBlock counts the padding as zero bytes. */
	*len = (size_t)n - (b[blen - 1] == '=') - (b[blen - 2] == '=');
	char *line = tpf_ssh_public_key_of_blob(raw, *len);
	size_t tlen = (size_t)(sp - key);
	int ok = line && !strncmp(line, key, tlen) && line[tlen] == ' ';
	free(line);
	if (!ok) {
		free(raw);
		return NULL;
	}
	return raw;
}

/* ---- OpenSSH private keys (PROTOCOL.key) -------------------------------- */

#define OPENSSH_MAGIC "openssh-key-v1"

/* The public key blob of an "OPENSSH PRIVATE KEY" body (decoded). */
static char *openssh_public(const unsigned char *data, size_t len)
{
	size_t mlen = sizeof(OPENSSH_MAGIC); /* with its NUL */
	if (len < mlen || memcmp(data, OPENSSH_MAGIC, mlen))
		return NULL;
	struct reader r = { data + mlen, len - mlen };
	const unsigned char *s;
	size_t slen;
	uint32_t nkeys;
	/* ciphername, kdfname, kdfoptions, number of keys, first public key */
	for (int i = 0; i < 3; i++)
		if (get_string(&r, &s, &slen) < 0)
			return NULL;
	if (get_u32(&r, &nkeys) < 0 || nkeys < 1 || get_string(&r, &s, &slen) < 0)
		return NULL;
	return tpf_ssh_public_key_of_blob(s, slen);
}

/* ---- PEM private keys through libcrypto ---------------------------------- */

static int put_bn(struct tpf_buf *b, const EVP_PKEY *k, const char *param)
{
	BIGNUM *bn = NULL;
	if (!EVP_PKEY_get_bn_param(k, param, &bn))
		return -1;
	/* BN_bn2mpi writes exactly an SSH mpint: a 4-byte length, then the
	 * big-endian value with a leading zero byte when its top bit is set. */
	int n = BN_bn2mpi(bn, NULL);
	unsigned char *m = xmalloc((size_t)n);
	BN_bn2mpi(bn, m);
	tpf_buf_add(b, m, (size_t)n);
	free(m);
	BN_free(bn);
	return 0;
}

/* OpenSSH's names of the NIST curves (RFC 5656 section 10.1). */
static const char *ecdsa_curve(const char *group)
{
	if (!strcmp(group, "prime256v1") || !strcmp(group, "P-256"))
		return "nistp256";
	if (!strcmp(group, "secp384r1") || !strcmp(group, "P-384"))
		return "nistp384";
	if (!strcmp(group, "secp521r1") || !strcmp(group, "P-521"))
		return "nistp521";
	return NULL;
}

/* The SSH public key blob of a libcrypto key into b; -1 if unsupported. */
static int pkey_blob(EVP_PKEY *k, struct tpf_buf *b)
{
	if (EVP_PKEY_is_a(k, "RSA")) {
		put_string(b, "ssh-rsa", 7);
		return put_bn(b, k, OSSL_PKEY_PARAM_RSA_E) < 0 ||
		       put_bn(b, k, OSSL_PKEY_PARAM_RSA_N) < 0 ? -1 : 0;
	}
	if (EVP_PKEY_is_a(k, "ED25519")) {
		unsigned char pub[32];
		size_t n = sizeof(pub);
		if (!EVP_PKEY_get_raw_public_key(k, pub, &n) || n != sizeof(pub))
			return -1;
		put_string(b, "ssh-ed25519", 11);
		put_string(b, pub, n);
		return 0;
	}
	if (EVP_PKEY_is_a(k, "EC")) {
		char group[64];
		unsigned char point[200];
		size_t glen = 0, plen = 0;
		if (!EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, group,
						    sizeof(group), &glen))
			return -1;
		const char *curve = ecdsa_curve(group);
		if (!curve || !EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, point,
							      sizeof(point), &plen))
			return -1;
		char *type = xasprintf("ecdsa-sha2-%s", curve);
		put_string(b, type, strlen(type));
		put_string(b, curve, strlen(curve));
		put_string(b, point, plen);
		free(type);
		return 0;
	}
	return -1;
}

int tpf_ssh_public_key_of_private(const void *key, size_t len, const char *path, char **out,
				  struct tpf_diags *d)
{
	*out = NULL;
	BIO *bio = BIO_new_mem_buf(key, (int)len);
	char *name = NULL, *header = NULL;
	unsigned char *data = NULL;
	long dlen = 0;
	if (bio && PEM_read_bio(bio, &name, &header, &data, &dlen) == 1 &&
	    !strcmp(name, "OPENSSH PRIVATE KEY"))
		*out = openssh_public(data, (size_t)dlen);
	OPENSSL_free(name);
	OPENSSL_free(header);
	OPENSSL_free(data);
	BIO_free(bio);
	if (!*out) {
		/* PEM: libcrypto knows PKCS#1, SEC1 and PKCS#8. No passphrase
		 * callback: an encrypted PEM key fails here, as it does in
		 * authentication (ssh.h: use ssh-agent for those). */
		bio = BIO_new_mem_buf(key, (int)len);
		EVP_PKEY *k = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)"") : NULL;
		struct tpf_buf blob = TPF_BUF_INIT;
		if (k && pkey_blob(k, &blob) == 0)
			*out = tpf_ssh_public_key_of_blob((const unsigned char *)blob.buf, blob.len);
		tpf_buf_release(&blob);
		EVP_PKEY_free(k);
		BIO_free(bio);
	}
	if (*out)
		return 0;
	return tpf_errorx(d, NULL,
			  "put its public half next to it as '<key>.pub' (ssh-keygen -y -f KEY > KEY.pub), "
			  "or use an OpenSSH or unencrypted PEM key (RSA, ECDSA or Ed25519)",
			  "cannot tell the public key of SSH private key '%s': not an OpenSSH or "
			  "unencrypted PEM RSA, ECDSA or Ed25519 key", path ? path : "?");
}

/* "TYPE BASE64" from the first line of a .pub file ("TYPE BASE64 comment"),
 * checked by decoding it; NULL if it is not one. */
static char *pub_line(const char *text)
{
	size_t len = 0;
	unsigned char *raw = tpf_ssh_key_blob(text, &len);
	char *out = raw ? tpf_ssh_public_key_of_blob(raw, len) : NULL;
	free(raw);
	return out;
}

static int from_files(const char *key_path, char **out, struct tpf_diags *d)
{
	struct tpf_buf b = TPF_BUF_INIT;
	char *pub = xasprintf("%s.pub", key_path);
	int rc = tpf_read_file_max(pub, PUB_FILE_MAX, "SSH public key", &b, d);
	if (rc == 0) {
		*out = pub_line(b.buf);
		if (!*out)
			rc = tpf_errorx(d, NULL, "regenerate it with: ssh-keygen -y -f KEY > KEY.pub",
					"SSH public key file '%s' is not one OpenSSH public key line "
					"('TYPE BASE64 [comment]')", pub);
	} else if (rc == TPF_ENOTFOUND) {
		tpf_buf_reset(&b);
		rc = tpf_read_file_max(key_path, KEY_FILE_MAX, "SSH private key", &b, d);
		if (rc == TPF_ENOTFOUND)
			rc = tpf_errorx(d, NULL, "set ssh.private_key to an existing key file",
					"SSH private key '%s' does not exist", key_path);
		if (rc == 0)
			rc = tpf_ssh_public_key_of_private(b.buf, b.len, key_path, out, d);
		if (b.alloc)
			OPENSSL_cleanse(b.buf, b.alloc);
	}
	tpf_buf_release(&b);
	free(pub);
	return rc;
}

static int from_agent(char **out, struct tpf_diags *d)
{
	const char *sock = getenv("SSH_AUTH_SOCK");
	if (!sock || !*sock)
		return tpf_errorx(d, NULL, "set ssh.private_key in the fleet file, or start ssh-agent and add a key (ssh-add)",
				  "no SSH key to give the workers: no ssh.private_key is set and "
				  "SSH_AUTH_SOCK is not set (no ssh-agent)");
	/* The agent needs a session only as an allocator: none is opened. */
	LIBSSH2_SESSION *s = libssh2_session_init();
	LIBSSH2_AGENT *agent = s ? libssh2_agent_init(s) : NULL;
	struct libssh2_agent_publickey *id = NULL;
	int rc;
	if (!agent || libssh2_agent_connect(agent) || libssh2_agent_list_identities(agent)) {
		rc = tpf_errorx(d, NULL, "is ssh-agent running? 'ssh-add -l' lists its keys",
				"cannot list the keys of ssh-agent at '%s'", sock);
	} else if (libssh2_agent_get_identity(agent, &id, NULL) != 0) {
		rc = tpf_errorx(d, NULL, "add a key with ssh-add, or set ssh.private_key",
				"ssh-agent at '%s' holds no keys", sock);
	} else {
		*out = tpf_ssh_public_key_of_blob(id->blob, id->blob_len);
		rc = *out ? 0 : tpf_errorx(d, NULL, NULL, "the first key of ssh-agent is not an SSH public key");
	}
	if (agent) {
		libssh2_agent_disconnect(agent);
		libssh2_agent_free(agent);
	}
	if (s)
		libssh2_session_free(s);
	return rc;
}

int tpf_ssh_public_key(struct tpf_transport *tr, char **out, struct tpf_diags *d)
{
	struct tpf_ssh *t = tr->impl;
	*out = NULL;
	return t->o.private_key ? from_files(t->o.private_key, out, d) : from_agent(out, d);
}

const char *tpf_ssh_user(struct tpf_transport *tr)
{
	return ((struct tpf_ssh *)tr->impl)->user;
}
