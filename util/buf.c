#include "util/buf.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char tpf_buf_empty[1];

void tpf_buf_init(struct tpf_buf *b)
{
	b->buf = tpf_buf_empty;
	b->len = 0;
	b->alloc = 0;
}

void tpf_buf_release(struct tpf_buf *b)
{
	if (b->alloc)
		free(b->buf);
	tpf_buf_init(b);
}

char *tpf_buf_detach(struct tpf_buf *b, size_t *len_out)
{
	char *p = b->alloc ? b->buf : xstrdup("");
	if (len_out)
		*len_out = b->len;
	tpf_buf_init(b);
	return p;
}

void tpf_buf_reset(struct tpf_buf *b)
{
	b->len = 0;
	if (b->alloc)
		b->buf[0] = '\0';
}

static void grow(struct tpf_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	if (need <= b->alloc)
		return;
	size_t n = b->alloc ? b->alloc : 64;
	while (n < need)
		n *= 2;
	if (b->alloc) {
		b->buf = xrealloc(b->buf, n);
	} else {
		b->buf = xmalloc(n);
		b->buf[0] = '\0';
	}
	b->alloc = n;
}

void tpf_buf_add(struct tpf_buf *b, const void *data, size_t len)
{
	grow(b, len);
	memcpy(b->buf + b->len, data, len);
	b->len += len;
	b->buf[b->len] = '\0';
}

void tpf_buf_adds(struct tpf_buf *b, const char *s)
{
	tpf_buf_add(b, s, strlen(s));
}

void tpf_buf_addch(struct tpf_buf *b, int c)
{
	char ch = (char)c;
	tpf_buf_add(b, &ch, 1);
}

void tpf_buf_vaddf(struct tpf_buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	int n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n <= 0)
		return;
	grow(b, (size_t)n);
	vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void tpf_buf_addf(struct tpf_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tpf_buf_vaddf(b, fmt, ap);
	va_end(ap);
}

void tpf_buf_rtrim(struct tpf_buf *b)
{
	while (b->len && strchr(" \t\r\n", b->buf[b->len - 1]))
		b->buf[--b->len] = '\0';
}
