/*
 * A growable byte buffer that is always NUL-terminated (the idea of git's
 * strbuf and curl's dynbuf). Used for HTTP bodies, rendered scripts,
 * command output and plan text.
 *
 * Invariant: after TPF_BUF_INIT or tpf_buf_init(), `buf` is never NULL and
 * buf[len] == '\0'. Memory is owned by the struct until tpf_buf_detach().
 */
#ifndef TPF_BUF_H
#define TPF_BUF_H

#include <stddef.h>
#include <stdarg.h>

struct tpf_buf {
	char *buf;
	size_t len;
	size_t alloc; /* 0 means buf points at the shared empty string */
};

extern char tpf_buf_empty[];
#define TPF_BUF_INIT { tpf_buf_empty, 0, 0 }

void tpf_buf_init(struct tpf_buf *b);
/* Free the contents and re-initialise (safe on an initialised, empty buf). */
void tpf_buf_release(struct tpf_buf *b);
/* Take ownership of the bytes (caller frees); the buffer is re-initialised. */
char *tpf_buf_detach(struct tpf_buf *b, size_t *len_out);
void tpf_buf_reset(struct tpf_buf *b);

void tpf_buf_add(struct tpf_buf *b, const void *data, size_t len);
void tpf_buf_adds(struct tpf_buf *b, const char *s);
void tpf_buf_addch(struct tpf_buf *b, int c);
void tpf_buf_addf(struct tpf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tpf_buf_vaddf(struct tpf_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* Drop trailing whitespace (spaces, tabs, newlines). */
void tpf_buf_rtrim(struct tpf_buf *b);

#endif
