#include "plan/backoff.h"
#include "tests/unit/unit.h"

static void test_backoff__doubles_and_caps(void)
{
	struct tpf_backoff *b = tpf_backoff_new(10, 60);
	CHECK(!tpf_backoff_blocked(b, "z1", "v4-8", 0, NULL));
	CHECK_INT((long)tpf_backoff_fail(b, "z1", "v4-8", 100), 10);
	CHECK(tpf_backoff_blocked(b, "z1", "v4-8", 105, NULL));
	CHECK(!tpf_backoff_blocked(b, "z1", "v4-8", 110.5, NULL));
	CHECK_INT((long)tpf_backoff_fail(b, "z1", "v4-8", 111), 20);
	CHECK_INT((long)tpf_backoff_fail(b, "z1", "v4-8", 131), 40);
	CHECK_INT((long)tpf_backoff_fail(b, "z1", "v4-8", 171), 60);
	CHECK_INT((long)tpf_backoff_fail(b, "z1", "v4-8", 231), 60);
	double until = 0;
	CHECK(tpf_backoff_blocked(b, "z1", "v4-8", 250, &until));
	CHECK_INT((long)until, 291);
	tpf_backoff_free(b);
}

static void test_backoff__per_zone_and_type(void)
{
	struct tpf_backoff *b = tpf_backoff_new(5, 100);
	tpf_backoff_fail(b, "z1", "v4-8", 0);
	CHECK(tpf_backoff_blocked(b, "z1", "v4-8", 1, NULL));
	CHECK(!tpf_backoff_blocked(b, "z2", "v4-8", 1, NULL));
	CHECK(!tpf_backoff_blocked(b, "z1", "v5p-8", 1, NULL));
	tpf_backoff_ok(b, "z1", "v4-8");
	CHECK(!tpf_backoff_blocked(b, "z1", "v4-8", 1, NULL));
	/* After a success the next refusal starts from the base again. */
	CHECK_INT((long)tpf_backoff_fail(b, "z1", "v4-8", 2), 5);
	tpf_backoff_free(b);
}

int main(void)
{
	RUN(test_backoff__doubles_and_caps);
	RUN(test_backoff__per_zone_and_type);
	return unit_done();
}
