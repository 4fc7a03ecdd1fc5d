/*
 * util/buf.c: appends, the size cap (an append past it fails, empties the
 * buffer and keeps failing until a reset), moving one buffer into another,
 * byte counts for messages, and tpf_read_file past a buffer's cap.
 */
#include "tests/unit/unit.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/fs.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_buf__append(void)
{
	struct tpf_buf b = TPF_BUF_INIT;
	CHECK_STR(b.buf, "");
	CHECK_INT(tpf_buf_adds(&b, "ab"), 0);
	CHECK_INT(tpf_buf_addch(&b, 'c'), 0);
	CHECK_INT(tpf_buf_addf(&b, "-%d-%s", 42, "x"), 0);
	CHECK_INT(tpf_buf_add(&b, "\0z", 2), 0);
	CHECK_INT((int)b.len, 10);
	CHECK(!memcmp(b.buf, "abc-42-x\0z", 10) && b.buf[10] == '\0');
	CHECK_INT(tpf_buf_addf(&b, "%s", ""), 0);
	CHECK_INT((int)b.len, 10);
	tpf_buf_reset(&b);
	CHECK_INT(tpf_buf_adds(&b, "line \t\n\n"), 0);
	tpf_buf_rtrim(&b);
	CHECK_STR(b.buf, "line");
	size_t n = 0;
	char *p = tpf_buf_detach(&b, &n);
	CHECK_STR(p, "line");
	CHECK_INT((int)n, 4);
	CHECK(b.buf == tpf_buf_empty && b.len == 0 && b.alloc == 0);
	free(p);
	tpf_buf_release(&b);
}

/* tpf_buf_addf formats into the room the buffer has and, when that is too
 * little, grows and formats again: every length across the room's edges
 * gives the bytes tpf_buf_adds of the same text gives. */
static void test_buf__addf_room(void)
{
	struct tpf_buf a = TPF_BUF_INIT, b = TPF_BUF_INIT;
	char piece[96];
	int failed = 0;
	for (int i = 0; i < 400; i++) {
		snprintf(piece, sizeof(piece), "%0*d;", i % 80, i);
		failed += tpf_buf_addf(&a, "%0*d;", i % 80, i) != 0;
		tpf_buf_adds(&b, piece);
		failed += a.len != b.len || a.buf[a.len] != '\0';
	}
	CHECK_INT(failed, 0);
	CHECK(a.len == b.len && !memcmp(a.buf, b.buf, a.len + 1));
	CHECKF(a.len > 10000, "%zu bytes: the buffer grew many times", a.len);
	tpf_buf_release(&a);
	tpf_buf_release(&b);
}

static void test_buf__default_cap(void)
{
	struct tpf_buf a = TPF_BUF_INIT, b;
	tpf_buf_init(&b);
	CHECK(tpf_buf_max(&a) == TPF_BUF_DEFAULT_MAX);
	CHECK(tpf_buf_max(&b) == TPF_BUF_DEFAULT_MAX);
	CHECK(TPF_BUF_DEFAULT_MAX == (size_t)1 << 30);
	CHECK(TPF_BUF_INPUT_MAX == (size_t)64 << 20);
	struct tpf_buf c = TPF_BUF_INIT_MAX(0);
	CHECK(tpf_buf_max(&c) == TPF_BUF_DEFAULT_MAX);
	/* An append the size of the address space fails, it does not wrap. */
	CHECK_INT(tpf_buf_add(&a, "x", SIZE_MAX), TPF_ERROR);
	CHECK(tpf_buf_overflowed(&a));
	tpf_buf_set_max(&b, SIZE_MAX);
	CHECK_INT(tpf_buf_adds(&b, "ok"), 0);
	CHECK_INT(tpf_buf_add(&b, "x", SIZE_MAX - 1), TPF_ERROR);
	CHECK(b.len == 0 && tpf_buf_overflowed(&b));
	tpf_buf_release(&a);
	tpf_buf_release(&b);
}

static void test_buf__cap(void)
{
	struct tpf_buf b = TPF_BUF_INIT_MAX(10);
	CHECK(tpf_buf_max(&b) == 10);
	CHECK_INT(tpf_buf_adds(&b, "0123456789"), 0); /* exactly the cap */
	CHECK_INT((int)b.len, 10);
	CHECKF(b.alloc <= 11, "alloc %zu: never more than the cap and the NUL", b.alloc);
	CHECK(!tpf_buf_overflowed(&b));

	/* One byte more: fails, and the content is gone, not truncated. */
	CHECK_INT(tpf_buf_addch(&b, 'x'), TPF_ERROR);
	CHECK(tpf_buf_overflowed(&b));
	CHECK_INT((int)b.len, 0);
	CHECK_STR(b.buf, "");
	/* Every later append fails too, even one that would fit. */
	CHECK_INT(tpf_buf_adds(&b, "a"), TPF_ERROR);
	CHECK_INT(tpf_buf_addf(&b, "%d", 1), TPF_ERROR);
	CHECK_INT(tpf_buf_add(&b, "", 0), TPF_ERROR);
	CHECK_STR(b.buf, "");

	/* A reset starts again, with the same cap. */
	tpf_buf_reset(&b);
	CHECK(!tpf_buf_overflowed(&b));
	CHECK_INT(tpf_buf_adds(&b, "abc"), 0);
	CHECK_INT(tpf_buf_addf(&b, "%s", "defghij"), 0);
	CHECK_STR(b.buf, "abcdefghij");
	CHECK_INT(tpf_buf_addf(&b, "%s", "k"), TPF_ERROR);
	CHECK(tpf_buf_overflowed(&b) && b.len == 0);

	/* release and detach clear the overflow and keep the cap. */
	tpf_buf_release(&b);
	CHECK(!tpf_buf_overflowed(&b) && tpf_buf_max(&b) == 10);
	CHECK_INT(tpf_buf_adds(&b, "0123456789x"), TPF_ERROR);
	free(tpf_buf_detach(&b, NULL));
	CHECK(!tpf_buf_overflowed(&b) && tpf_buf_max(&b) == 10);
	CHECK_INT(tpf_buf_adds(&b, "0123456789"), 0);
	CHECK_INT(tpf_buf_adds(&b, ""), 0);
	CHECK_INT(tpf_buf_adds(&b, "x"), TPF_ERROR);

	/* A cap lowered below the content keeps it; the next append fails. */
	tpf_buf_reset(&b);
	tpf_buf_set_max(&b, 0);
	CHECK_INT(tpf_buf_adds(&b, "0123456789abc"), 0);
	tpf_buf_set_max(&b, 5);
	CHECK_STR(b.buf, "0123456789abc");
	CHECK_INT(tpf_buf_addch(&b, 'd'), TPF_ERROR);
	CHECK_STR(b.buf, "");

	/* init_max on a fresh struct, and init back to the default. */
	tpf_buf_release(&b);
	tpf_buf_init_max(&b, 3);
	CHECK_INT(tpf_buf_adds(&b, "abcd"), TPF_ERROR);
	tpf_buf_release(&b);
	tpf_buf_init(&b);
	CHECK(tpf_buf_max(&b) == TPF_BUF_DEFAULT_MAX);
	CHECK_INT(tpf_buf_adds(&b, "abcd"), 0);
	tpf_buf_release(&b);
}

static void test_buf__take(void)
{
	struct tpf_buf dst = TPF_BUF_INIT, src = TPF_BUF_INIT;
	tpf_buf_adds(&src, "hello");
	char *mem = src.buf;
	CHECK_INT(tpf_buf_take(&dst, &src), 0);
	CHECK_STR(dst.buf, "hello");
	CHECK(dst.buf == mem); /* moved, not copied */
	CHECK(src.buf == tpf_buf_empty && src.len == 0 && src.alloc == 0);

	tpf_buf_adds(&src, " world");
	CHECK_INT(tpf_buf_take(&dst, &src), 0);
	CHECK_STR(dst.buf, "hello world");
	CHECK(src.len == 0 && src.alloc == 0);

	/* An empty src changes nothing. */
	CHECK_INT(tpf_buf_take(&dst, &src), 0);
	CHECK_STR(dst.buf, "hello world");

	/* dst's own cap holds, whether dst is empty or not. */
	struct tpf_buf small = TPF_BUF_INIT_MAX(4);
	tpf_buf_adds(&src, "too long");
	CHECK_INT(tpf_buf_take(&small, &src), TPF_ERROR);
	CHECK(tpf_buf_overflowed(&small) && small.len == 0 && src.alloc == 0);
	tpf_buf_reset(&small);
	tpf_buf_adds(&small, "ab");
	tpf_buf_adds(&src, "cde");
	CHECK_INT(tpf_buf_take(&small, &src), TPF_ERROR);
	CHECK(tpf_buf_overflowed(&small));
	/* The moved buffer keeps dst's cap, not src's. */
	tpf_buf_reset(&small);
	struct tpf_buf big = TPF_BUF_INIT_MAX(100);
	tpf_buf_adds(&big, "abc");
	CHECK_INT(tpf_buf_take(&small, &big), 0);
	CHECK(tpf_buf_max(&small) == 4 && tpf_buf_max(&big) == 100);
	CHECK_INT(tpf_buf_adds(&small, "de"), TPF_ERROR);
	tpf_buf_release(&small);
	tpf_buf_release(&big);
	tpf_buf_release(&dst);
}

static void test_buf__fmt_bytes(void)
{
	char s[32];
	CHECK_STR(tpf_fmt_bytes(TPF_BUF_INPUT_MAX, s), "64 MiB");
	CHECK_STR(tpf_fmt_bytes(TPF_BUF_DEFAULT_MAX, s), "1 GiB");
	CHECK_STR(tpf_fmt_bytes(100 << 10, s), "100 KiB");
	CHECK_STR(tpf_fmt_bytes(1000, s), "1000 bytes");
	CHECK_STR(tpf_fmt_bytes(1, s), "1 byte");
	CHECK_STR(tpf_fmt_bytes(0, s), "0 bytes");
	CHECK_STR(tpf_fmt_bytes(SIZE_MAX, s), "18446744073709551615 bytes");
}

static void test_buf__read_file_cap(void)
{
	char *dir = unit_tmpdir();
	char *path = xasprintf("%s/f", dir);
	struct tpf_diags d = TPF_DIAGS_INIT;
	char data[100];
	memset(data, 'q', sizeof(data));
	CHECK_INT(tpf_write_file_atomic(path, data, sizeof(data), 0600, &d), 0);

	struct tpf_buf fits = TPF_BUF_INIT_MAX(100), small = TPF_BUF_INIT_MAX(99);
	CHECK_INT(tpf_read_file(path, &fits, &d), 0);
	CHECK_INT((int)fits.len, 100);
	CHECK_INT(tpf_read_file(path, &small, &d), TPF_ERROR);
	CHECK(small.len == 0);
	CHECKF(d.n == 1 && strstr(d.items[0].summary, path) &&
		       strstr(d.items[0].summary, "larger than the limit of 99 bytes"),
	       "%s", d.n ? d.items[0].summary : "no diagnostic");
	tpf_buf_release(&fits);
	tpf_buf_release(&small);
	tpf_diags_release(&d);
	unlink(path);
	rmdir(dir);
	free(path);
	free(dir);
}

int main(void)
{
	RUN(test_buf__append);
	RUN(test_buf__addf_room);
	RUN(test_buf__default_cap);
	RUN(test_buf__cap);
	RUN(test_buf__take);
	RUN(test_buf__fmt_bytes);
	RUN(test_buf__read_file_cap);
	return unit_done();
}
