/*
 * A growable byte buffer that is always NUL-terminated (the idea of git's
 * strbuf and curl's dynbuf). Used for HTTP bodies, rendered scripts,
 * command output and plan text.
 *
 * Invariant: after TPF_BUF_INIT or tpf_buf_init(), `buf` is never NULL and
 * buf[len] == '\0'. Memory is owned by the struct until tpf_buf_detach().
 *
 * Size cap (as curl's dynbuf, Curl_dyn_init(&b, max)): every buffer has a
 * largest length `max` in bytes, not counting the terminating NUL; 0 means
 * TPF_BUF_DEFAULT_MAX. An append that would make len exceed it fails with
 * TPF_ERROR and the buffer is OVERFLOWED: its content is wiped and freed
 * (len 0, like curl, so a truncated body or output can never pass for a
 * whole one) and every later append fails too, until tpf_buf_reset(),
 * tpf_buf_release() or tpf_buf_detach(). So a caller may check each append,
 * or append freely and check tpf_buf_overflowed() once at the end. A
 * caller that ignores both gets an empty buffer, never a truncated one.
 * The cap survives reset, release and detach; tpf_buf_init() restores the
 * default.
 *
 * The caps in use, bytes:
 *   TPF_BUF_DEFAULT_MAX (1 GiB): any buffer not given a cap: plan text,
 *     rendered scripts, files read with tpf_read_file (state, fleet,
 *     credentials), git bundles of a job's source. None of these comes
 *     near it; it turns a runaway producer into an error, not an OOM.
 *   TPF_BUF_INPUT_MAX (64 MiB): bytes another program sends in one piece:
 *     one HTTP response body (TPF_GCP_MAX_BODY, google/gcp_http.h)
 *     and one worker command's output (TPF_TRANSPORT_OUTPUT_MAX,
 *     providers/transport.h). A Cloud TPU API answer is kilobytes; 64 MiB
 *     is room for a large `logs` while many workers run at once.
 */
#ifndef TPF_BUF_H
#define TPF_BUF_H

#include <stddef.h>
#include <stdarg.h>

#define TPF_BUF_DEFAULT_MAX ((size_t)1 << 30)
#define TPF_BUF_INPUT_MAX ((size_t)64 << 20)

struct tpf_buf {
	char *buf;
	size_t len;
	size_t alloc;   /* 0 means buf points at the shared empty string */
	size_t max;     /* largest len allowed, bytes; 0: TPF_BUF_DEFAULT_MAX */
	int overflowed; /* an append went past max (see above) */
};

extern char tpf_buf_empty[];
#define TPF_BUF_INIT { tpf_buf_empty, 0, 0, 0, 0 }
/* A buffer capped at `max` bytes (0: TPF_BUF_DEFAULT_MAX). */
#define TPF_BUF_INIT_MAX(max) { tpf_buf_empty, 0, 0, (max), 0 }

/* An empty buffer with the default cap. */
void tpf_buf_init(struct tpf_buf *b);
/* An empty buffer capped at `max` bytes (0: TPF_BUF_DEFAULT_MAX). */
void tpf_buf_init_max(struct tpf_buf *b, size_t max);
/* Set the cap of a buffer (0: the default). Content already longer than
 * the new cap is kept; only later appends are checked. */
void tpf_buf_set_max(struct tpf_buf *b, size_t max);
/* The cap in effect, bytes (never 0). */
size_t tpf_buf_max(const struct tpf_buf *b);
/* 1 if an append went past the cap since the last reset. */
int tpf_buf_overflowed(const struct tpf_buf *b);

/* Free the contents and re-initialise, keeping the cap (safe on an
 * initialised, empty buf). */
void tpf_buf_release(struct tpf_buf *b);
/* Take ownership of the bytes (caller frees); the buffer is re-initialised,
 * keeping its cap. */
char *tpf_buf_detach(struct tpf_buf *b, size_t *len_out);
/* Empty the buffer (keeping its memory and cap) and clear an overflow. */
void tpf_buf_reset(struct tpf_buf *b);

/*
 * Append. Return 0, or TPF_ERROR (util/diag.h) when the buffer is (or by
 * this append becomes) overflowed; then nothing is appended and the
 * buffer is empty. No diagnostic: the caller knows what the bytes were and
 * says so. tpf_buf_addf also fails when vsnprintf does (bad format).
 */
int tpf_buf_add(struct tpf_buf *b, const void *data, size_t len);
int tpf_buf_adds(struct tpf_buf *b, const char *s);
int tpf_buf_addch(struct tpf_buf *b, int c);
int tpf_buf_addf(struct tpf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tpf_buf_vaddf(struct tpf_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* A byte count for messages: "1 GiB", "64 MiB", "12 KiB" when exact, else
 * "1000 bytes". Writes into out (32 bytes is always enough) and returns it. */
const char *tpf_fmt_bytes(size_t n, char out[32]);

/*
 * Append src's bytes to dst, then release src (the memory is moved, not
 * copied, when dst is empty). Returns 0, or TPF_ERROR as tpf_buf_add when
 * dst's cap is passed; src is released either way.
 */
int tpf_buf_take(struct tpf_buf *dst, struct tpf_buf *src);

/* Drop trailing whitespace (spaces, tabs, newlines). */
void tpf_buf_rtrim(struct tpf_buf *b);

#endif
