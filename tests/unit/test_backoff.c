#include "plan/backoff.h"
#include "tests/unit/unit.h"

#include <string.h>

/* A Cloud TPU API recipe of accelerator type t. Borrowed strings. */
static struct tpf_recipe tpu(const char *t)
{
	struct tpf_recipe r;
	memset(&r, 0, sizeof(r));
	r.accelerator_type = (char *)t;
	return r;
}

/* A Compute Engine recipe of machine type mt: no accelerator type. */
static struct tpf_recipe compute(const char *mt)
{
	struct tpf_recipe r;
	memset(&r, 0, sizeof(r));
	r.compute.api = TPF_API_COMPUTE;
	r.compute.machine_type = (char *)mt;
	return r;
}

static void test_backoff__doubles_and_caps(void)
{
	struct tpf_backoff *b = tpf_backoff_new(10, 60);
	struct tpf_recipe r = tpu("v4-8");
	struct tpf_backoff_key k = tpf_backoff_key_of(&r);
	CHECK(!tpf_backoff_blocked(b, "z1", &k, 0, NULL, NULL));
	CHECK_INT((long)tpf_backoff_fail(b, "z1", &k, 100, TPF_ECAPACITY), 10);
	CHECK(tpf_backoff_blocked(b, "z1", &k, 105, NULL, NULL));
	CHECK(!tpf_backoff_blocked(b, "z1", &k, 110.5, NULL, NULL));
	CHECK_INT((long)tpf_backoff_fail(b, "z1", &k, 111, TPF_ECAPACITY), 20);
	CHECK_INT((long)tpf_backoff_fail(b, "z1", &k, 131, TPF_ECAPACITY), 40);
	CHECK_INT((long)tpf_backoff_fail(b, "z1", &k, 171, TPF_ECAPACITY), 60);
	CHECK_INT((long)tpf_backoff_fail(b, "z1", &k, 231, TPF_EQUOTA), 60);
	double until = 0;
	int why = 0;
	CHECK(tpf_backoff_blocked(b, "z1", &k, 250, &until, &why));
	CHECK_INT((long)until, 291);
	CHECK_INT(why, TPF_EQUOTA); /* the last refusal's reason */
	tpf_backoff_free(b);
}

static void test_backoff__per_zone_and_type(void)
{
	struct tpf_backoff *b = tpf_backoff_new(5, 100);
	struct tpf_recipe r4 = tpu("v4-8"), r5 = tpu("v5p-8");
	struct tpf_backoff_key k4 = tpf_backoff_key_of(&r4), k5 = tpf_backoff_key_of(&r5);
	tpf_backoff_fail(b, "z1", &k4, 0, TPF_ECAPACITY);
	CHECK(tpf_backoff_blocked(b, "z1", &k4, 1, NULL, NULL));
	CHECK(!tpf_backoff_blocked(b, "z2", &k4, 1, NULL, NULL));
	CHECK(!tpf_backoff_blocked(b, "z1", &k5, 1, NULL, NULL));
	tpf_backoff_ok(b, "z1", &k4);
	CHECK(!tpf_backoff_blocked(b, "z1", &k4, 1, NULL, NULL));
	/* After a success the next refusal starts from the base again. */
	CHECK_INT((long)tpf_backoff_fail(b, "z1", &k4, 2, TPF_ECAPACITY), 5);
	tpf_backoff_free(b);
}

/*
 * Issue 26: a Compute Engine node has a machine type and no accelerator
 * type (NULL); the table compared the accelerator type with strcmp and
 * watch died (SIGSEGV) the first time a backed-off zone was looked up.
 * It is keyed by the machine type, and a refusal of one machine type
 * backs off only that one.
 */
static void test_backoff__compute_keyed_by_machine_type(void)
{
	struct tpf_backoff *b = tpf_backoff_new(10, 60);
	struct tpf_recipe c7 = compute("tpu7x-standard-4t"), c6 = compute("ct6e-standard-4t");
	struct tpf_backoff_key k7 = tpf_backoff_key_of(&c7), k6 = tpf_backoff_key_of(&c6);
	CHECK_INT(k7.api, TPF_API_COMPUTE);
	CHECK_STR(k7.type, "tpu7x-standard-4t");
	CHECK(!tpf_backoff_blocked(b, "us-east5-a", &k7, 0, NULL, NULL));
	CHECK_INT((long)tpf_backoff_fail(b, "us-east5-a", &k7, 0, TPF_ECAPACITY), 10);
	/* the lookup that crashed: a second node of the group, next round */
	double until = 0;
	CHECK(tpf_backoff_blocked(b, "us-east5-a", &k7, 1, &until, NULL));
	CHECK_INT((long)until, 10);
	CHECK(!tpf_backoff_blocked(b, "us-east5-a", &k6, 1, NULL, NULL));
	CHECK_INT((long)tpf_backoff_fail(b, "us-east5-a", &k7, 11, TPF_ECAPACITY), 20);
	tpf_backoff_ok(b, "us-east5-a", &k7);
	CHECK(!tpf_backoff_blocked(b, "us-east5-a", &k7, 12, NULL, NULL));
	tpf_backoff_free(b);
}

/* The two APIs never share an entry, even for one type string; a recipe
 * with no type at all (a damaged state) and a NULL zone key as "". */
static void test_backoff__apis_apart_and_no_type(void)
{
	struct tpf_backoff *b = tpf_backoff_new(10, 60);
	struct tpf_recipe t = tpu("tpu7x-standard-4t"), c = compute("tpu7x-standard-4t");
	struct tpf_backoff_key kt = tpf_backoff_key_of(&t), kc = tpf_backoff_key_of(&c);
	tpf_backoff_fail(b, "z", &kc, 0, TPF_ECAPACITY);
	CHECK(tpf_backoff_blocked(b, "z", &kc, 1, NULL, NULL));
	CHECK(!tpf_backoff_blocked(b, "z", &kt, 1, NULL, NULL));

	struct tpf_recipe none_tpu = tpu(NULL), none_ce = compute(NULL);
	struct tpf_backoff_key kn = tpf_backoff_key_of(&none_tpu), kne = tpf_backoff_key_of(&none_ce);
	CHECK_STR(kn.type, "");
	CHECK(!tpf_backoff_blocked(b, NULL, &kn, 1, NULL, NULL));
	tpf_backoff_fail(b, NULL, &kne, 0, TPF_EZONE);
	int why = 0;
	CHECK(tpf_backoff_blocked(b, "", &kne, 1, NULL, &why));
	CHECK_INT(why, TPF_EZONE);
	CHECK(!tpf_backoff_blocked(b, NULL, &kn, 1, NULL, NULL));
	tpf_backoff_free(b);
}

/* A type longer than a key holds is cut, never overrun. */
static void test_backoff__long_type_cut(void)
{
	char longer[200];
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	struct tpf_recipe r = compute(longer);
	struct tpf_backoff_key k = tpf_backoff_key_of(&r);
	CHECK_INT(strlen(k.type), TPF_BACKOFF_TYPE_MAX - 1);
	struct tpf_backoff *b = tpf_backoff_new(1, 1);
	tpf_backoff_fail(b, "z", &k, 0, TPF_ECAPACITY);
	CHECK(tpf_backoff_blocked(b, "z", &k, 0.5, NULL, NULL));
	tpf_backoff_free(b);
}

int main(void)
{
	RUN(test_backoff__doubles_and_caps);
	RUN(test_backoff__per_zone_and_type);
	RUN(test_backoff__compute_keyed_by_machine_type);
	RUN(test_backoff__apis_apart_and_no_type);
	RUN(test_backoff__long_type_cut);
	return unit_done();
}
