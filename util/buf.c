/*
 * Growable NUL-terminated buffer with a size cap (util/buf.h).
 */
#include "util/buf.h"
#include "util/diag.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char tpf_buf_empty[1];

void tpf_buf_init_max(struct tpf_buf *b, size_t max)
{
	b->buf = tpf_buf_empty;
	b->len = 0;
	b->alloc = 0;
	b->max = max;
	b->overflowed = 0;
}

void tpf_buf_init(struct tpf_buf *b)
{
	tpf_buf_init_max(b, 0);
}

void tpf_buf_set_max(struct tpf_buf *b, size_t max)
{
	b->max = max;
}

size_t tpf_buf_max(const struct tpf_buf *b)
{
	return b->max ? b->max : TPF_BUF_DEFAULT_MAX;
}

int tpf_buf_overflowed(const struct tpf_buf *b)
{
	return b->overflowed;
}

void tpf_buf_release(struct tpf_buf *b)
{
	if (b->alloc)
		free(b->buf);
	tpf_buf_init_max(b, b->max);
}

char *tpf_buf_detach(struct tpf_buf *b, size_t *len_out)
{
	char *p = b->alloc ? b->buf : xstrdup("");
	if (len_out)
		*len_out = b->len;
	tpf_buf_init_max(b, b->max);
	return p;
}

void tpf_buf_reset(struct tpf_buf *b)
{
	b->len = 0;
	b->overflowed = 0;
	if (b->alloc)
		b->buf[0] = '\0';
}

/* Past the cap: wipe (the bytes may be a token or a key), free, and stay
 * failed until reset. */
static int overflow(struct tpf_buf *b)
{
	if (b->alloc) {
		explicit_bzero(b->buf, b->alloc);
		free(b->buf);
	}
	b->buf = tpf_buf_empty;
	b->len = 0;
	b->alloc = 0;
	b->overflowed = 1;
	return TPF_ERROR;
}

/* Room for `extra` more bytes and the NUL, or TPF_ERROR past the cap. */
static int grow(struct tpf_buf *b, size_t extra)
{
	size_t max = tpf_buf_max(b);
	if (max > SIZE_MAX / 2)
		max = SIZE_MAX / 2; /* so that the sizes below cannot wrap */
	if (b->overflowed)
		return TPF_ERROR;
	if (b->len > max || extra > max - b->len)
		return overflow(b);
	size_t need = b->len + extra + 1;
	if (need <= b->alloc)
		return 0;
	size_t n = b->alloc ? b->alloc : 64;
	while (n < need && n <= max)
		n *= 2;
	if (n > max + 1)
		n = max + 1; /* need <= max + 1 here */
	if (b->alloc) {
		b->buf = xrealloc(b->buf, n);
	} else {
		b->buf = xmalloc(n);
		b->buf[0] = '\0';
	}
	b->alloc = n;
	return 0;
}

int tpf_buf_add(struct tpf_buf *b, const void *data, size_t len)
{
	if (grow(b, len) < 0)
		return TPF_ERROR;
	if (len)
		memcpy(b->buf + b->len, data, len);
	b->len += len;
	b->buf[b->len] = '\0';
	return 0;
}

int tpf_buf_adds(struct tpf_buf *b, const char *s)
{
	return tpf_buf_add(b, s, strlen(s));
}

int tpf_buf_addch(struct tpf_buf *b, int c)
{
	char ch = (char)c;
	return tpf_buf_add(b, &ch, 1);
}

int tpf_buf_vaddf(struct tpf_buf *b, const char *fmt, va_list ap)
{
	if (b->overflowed)
		return TPF_ERROR;
	/* Format into the room already there: one pass when it fits (the
	 * common case; a buffer never holds more than its cap, so neither does
	 * this). Otherwise grow to the size that pass reported and format
	 * again. */
	size_t room = b->alloc - b->len; /* alloc > len whenever alloc != 0 */
	va_list cp;
	va_copy(cp, ap);
	int n = vsnprintf(b->alloc ? b->buf + b->len : NULL, b->alloc ? room : 0, fmt, cp);
	va_end(cp);
	if (n < 0) {
		if (b->alloc)
			b->buf[b->len] = '\0';
		return TPF_ERROR;
	}
	if (b->alloc && (size_t)n < room) {
		b->len += (size_t)n;
		return 0;
	}
	if (grow(b, (size_t)n) < 0)
		return TPF_ERROR;
	if (n == 0)
		return 0;
	vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int tpf_buf_addf(struct tpf_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = tpf_buf_vaddf(b, fmt, ap);
	va_end(ap);
	return rc;
}

int tpf_buf_take(struct tpf_buf *dst, struct tpf_buf *src)
{
	if (dst->len == 0 && !dst->overflowed && src->alloc && src->len <= tpf_buf_max(dst)) {
		if (dst->alloc)
			free(dst->buf);
		dst->buf = src->buf;
		dst->len = src->len;
		dst->alloc = src->alloc;
		tpf_buf_init_max(src, src->max);
		return 0;
	}
	int rc = tpf_buf_add(dst, src->buf, src->len);
	tpf_buf_release(src);
	return rc;
}

void tpf_buf_rtrim(struct tpf_buf *b)
{
	while (b->len && strchr(" \t\r\n", b->buf[b->len - 1]))
		b->buf[--b->len] = '\0';
}

const char *tpf_fmt_bytes(size_t n, char out[32])
{
	static const char *const units[] = { "GiB", "MiB", "KiB" };
	for (int i = 0; i < 3; i++) {
		size_t unit = (size_t)1 << (10 * (3 - i));
		if (n && n % unit == 0) {
			snprintf(out, 32, "%zu %s", n / unit, units[i]);
			return out;
		}
	}
	snprintf(out, 32, "%zu byte%s", n, n == 1 ? "" : "s");
	return out;
}
