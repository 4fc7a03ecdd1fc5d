/* util/strindex: the name index that keeps plans of 10,000 nodes linear. */
#include <stdio.h>
#include <stdlib.h>

#include "tests/unit/unit.h"
#include "util/strindex.h"

#define N 20000

/* Many keys (several doublings): every one found with its value, and
 * names that were never put are not. */
static void test_strindex__many_keys(void)
{
	static char names[N][24];
	struct tpf_strindex ix = TPF_STRINDEX_INIT;
	size_t v = 0, bad = 0;

	for (size_t i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "fleet-g-%zu", i);
		tpf_strindex_put(&ix, names[i], i);
	}
	CHECK_INT((long)ix.n, N);
	for (size_t i = 0; i < N; i++)
		if (!tpf_strindex_get(&ix, names[i], &v) || v != i)
			bad++;
	CHECK_INT((long)bad, 0);
	CHECK(!tpf_strindex_get(&ix, "fleet-g-20000", &v));
	CHECK(!tpf_strindex_get(&ix, "fleet-g-", &v));
	CHECK(!tpf_strindex_get(&ix, "", &v));
	tpf_strindex_release(&ix);
	CHECK(ix.cap == 0 && ix.keys == NULL);
}

/* A repeated key keeps its first value, as a scan from the start would
 * find; NULL keys are ignored. */
static void test_strindex__first_wins_and_null(void)
{
	struct tpf_strindex ix = TPF_STRINDEX_INIT;
	size_t v = 99;

	CHECK(!tpf_strindex_get(&ix, "a", &v));
	tpf_strindex_put(&ix, "a", 1);
	tpf_strindex_put(&ix, "a", 2);
	tpf_strindex_put(&ix, NULL, 3);
	CHECK(tpf_strindex_get(&ix, "a", &v) && v == 1);
	CHECK(!tpf_strindex_get(&ix, NULL, &v));
	CHECK_INT((long)ix.n, 1);
	tpf_strindex_clear(&ix);
	CHECK(!tpf_strindex_get(&ix, "a", &v));
	tpf_strindex_put(&ix, "a", 5);
	CHECK(tpf_strindex_get(&ix, "a", &v) && v == 5);
	tpf_strindex_release(&ix);
}

int main(void)
{
	RUN(test_strindex__many_keys);
	RUN(test_strindex__first_wins_and_null);
	return unit_done();
}
