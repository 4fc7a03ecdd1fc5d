/*
 * The one secret redaction (util/redact.h).
 */
#include "util/redact.h"

#include <openssl/crypto.h>
#include <string.h>

void tpf_wipe(void *p, size_t len)
{
	if (p && len)
		OPENSSL_cleanse(p, len);
}

void tpf_redact(struct tpf_buf *b, const char *secret)
{
	size_t n = secret ? strlen(secret) : 0;
	if (n < TPF_REDACT_MIN || !b->len || !strstr(b->buf, secret))
		return;
	struct tpf_buf o = TPF_BUF_INIT;
	const char *p = b->buf, *hit;
	while ((hit = strstr(p, secret))) {
		tpf_buf_add(&o, p, (size_t)(hit - p));
		tpf_buf_adds(&o, "***");
		p = hit + n;
	}
	tpf_buf_adds(&o, p);
	if (b->alloc)
		tpf_wipe(b->buf, b->len);
	tpf_buf_release(b);
	*b = o;
}

void tpf_redact_kv(struct tpf_buf *b, const struct tpf_kvlist *secrets)
{
	for (size_t i = 0; secrets && i < secrets->n; i++)
		tpf_redact(b, secrets->items[i].value);
}
