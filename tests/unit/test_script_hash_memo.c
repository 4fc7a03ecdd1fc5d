/* plan/script_hash_memo: a worker script's hash made once per head, and
 * always the hash of head || body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/script_hash_memo.h"
#include "tests/unit/unit.h"
#include "util/hash.h"
#include "util/xalloc.h"

static const char body_a[] = "echo body a\n";
static const char body_b[] = "echo body b\n";

/* The hash of head || body, made directly. */
static int is_hash_of(const char *got, const char *head, const char *body)
{
	char *want = tpf_sha256_tagged2(head, strlen(head), body, strlen(body));
	int ok = got && !strcmp(got, want);
	free(want);
	return ok;
}

/* A head seen before is answered from the memo, with the same hash; a new
 * head, or the same head behind another body, is hashed. */
static void test_script_hash_memo__hits_and_misses(void)
{
	size_t hits0, made0, hits, made;
	tpf_script_hash_memo_clear();
	tpf_script_hash_memo_counts(&hits0, &made0);

	char *h1 = tpf_script_hash_memo("head one\n", body_a);
	char *h1b = tpf_script_hash_memo("head one\n", body_a);
	char *h2 = tpf_script_hash_memo("head two\n", body_a);
	tpf_script_hash_memo_counts(&hits, &made);
	CHECK_INT((long)(hits - hits0), 1);
	CHECK_INT((long)(made - made0), 2);
	CHECK(is_hash_of(h1, "head one\n", body_a));
	CHECK(h1b && !strcmp(h1, h1b));
	CHECK(is_hash_of(h2, "head two\n", body_a));
	CHECK(strcmp(h1, h2) != 0);

	/* Another body: the held hashes are not of it. */
	char *h3 = tpf_script_hash_memo("head one\n", body_b);
	CHECK(is_hash_of(h3, "head one\n", body_b));
	CHECK(strcmp(h1, h3) != 0);
	/* A head that is a prefix of a held one is its own entry. */
	char *h4 = tpf_script_hash_memo("head on", body_b);
	CHECK(is_hash_of(h4, "head on", body_b));
	tpf_script_hash_memo_counts(&hits, &made);
	CHECK_INT((long)(made - made0), 4);

	tpf_script_hash_memo_clear();
	char *h5 = tpf_script_hash_memo("head one\n", body_b);
	tpf_script_hash_memo_counts(&hits, &made);
	CHECK_INT((long)(made - made0), 5);
	CHECK(!strcmp(h5, h3));
	free(h1), free(h1b), free(h2), free(h3), free(h4), free(h5);
}

/* Past its bound the memo empties and fills again, and every answer is
 * still right. */
static void test_script_hash_memo__bound(void)
{
	size_t big = TPF_SCRIPT_HASH_MEMO_BYTES / 8;
	char *head = xmalloc(big + 1);
	memset(head, 'h', big);
	head[big] = 0;
	size_t hits0, made0, hits, made;
	tpf_script_hash_memo_clear();
	tpf_script_hash_memo_counts(&hits0, &made0);
	int bad = 0;
	for (int i = 0; i < 20; i++) {
		head[0] = (char)('a' + i);
		char *h = tpf_script_hash_memo(head, body_a);
		bad += !is_hash_of(h, head, body_a);
		free(h);
	}
	CHECK_INT(bad, 0);
	/* The last head is held; the first was let go when the memo emptied. */
	head[0] = (char)('a' + 19);
	char *last = tpf_script_hash_memo(head, body_a);
	head[0] = 'a';
	char *first = tpf_script_hash_memo(head, body_a);
	tpf_script_hash_memo_counts(&hits, &made);
	CHECK_INT((long)(hits - hits0), 1);
	CHECK_INT((long)(made - made0), 21);
	CHECK(is_hash_of(first, head, body_a));
	free(last), free(first), free(head);
	tpf_script_hash_memo_clear();
}

int main(void)
{
	RUN(test_script_hash_memo__hits_and_misses);
	RUN(test_script_hash_memo__bound);
	return unit_done();
}
