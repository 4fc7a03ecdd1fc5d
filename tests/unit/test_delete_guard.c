/*
 * Ownership at delete time: the one rule every provider asks just before a
 * delete (providers/provider.h tpf_delete_check; docs/design.md section 4).
 */
#include "tests/unit/unit.h"
#include "providers/provider.h"

#include <string.h>

#define MINE "0123456789abcdef"
#define THEIRS "fedcba9876543210"

static int check(const struct tpf_delete_guard *g, const char *lin, const char *id,
		 struct tpf_diags *d)
{
	return tpf_delete_check(g, "node", "f-a-0", "z1", lin, id, d);
}

static void test_guard__labelled(void)
{
	struct tpf_delete_guard g = { MINE, "111", NULL, NULL, NULL };
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(check(&g, MINE, "111", &d), 0);
	/* a label decides: ours even when the id is another (re-created by us) */
	CHECK_INT(check(&g, MINE, "222", &d), 0);
	CHECK_INT(d.n, 0);
	/* another state's label: refused, whatever the id */
	CHECK_INT(check(&g, THEIRS, "111", &d), TPF_EFOREIGN);
	CHECK_INT(d.n, 1);
	CHECK_STR(d.items[0].summary,
		  "refusing to delete node 'f-a-0' in zone 'z1': it belongs to another state: it "
		  "carries tpuform-lineage=" THEIRS ", and this state's is " MINE);
	CHECK_STR(d.items[0].address, "f-a-0");
	CHECK(d.items[0].detail && strstr(d.items[0].detail, "Run 'tpuform plan' again"));
	tpf_diags_release(&d);
	/* a state without a lineage owns nothing labelled */
	struct tpf_delete_guard none = { NULL, "111", NULL, NULL, NULL };
	CHECK_INT(check(&none, MINE, "111", &d), TPF_EFOREIGN);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "this state's is none"));
	tpf_diags_release(&d);
	struct tpf_delete_guard empty = { "", "111", NULL, NULL, NULL };
	CHECK_INT(check(&empty, MINE, "111", &d), TPF_EFOREIGN);
	tpf_diags_release(&d);
}

static void count_call(void *ctx)
{
	(*(int *)ctx)++;
}

/* The hook (the executor records delete_sent_at there) runs for a delete
 * the check lets go ahead, never for one it refuses. */
static void test_guard__sending_hook(void)
{
	int calls = 0;
	struct tpf_delete_guard g = { MINE, "111", NULL, count_call, &calls };
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(check(&g, THEIRS, "111", &d), TPF_EFOREIGN);
	CHECK_INT(calls, 0);
	CHECK_INT(check(&g, NULL, "222", &d), TPF_EFOREIGN);
	CHECK_INT(calls, 0);
	CHECK_INT(check(&g, MINE, "111", &d), 0);
	CHECK_INT(calls, 1);
	tpf_diags_release(&d);
}

static void test_guard__unlabelled(void)
{
	struct tpf_delete_guard g = { MINE, "111", NULL, NULL, NULL };
	struct tpf_diags d = TPF_DIAGS_INIT;
	/* made before the label existed: ours only by the very id recorded */
	CHECK_INT(check(&g, NULL, "111", &d), 0);
	CHECK_INT(check(&g, "", "111", &d), 0);
	CHECK_INT(d.n, 0);
	CHECK_INT(check(&g, NULL, "222", &d), TPF_EFOREIGN);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "carries no tpuform-lineage label, and its "
						     "id (222) is not the id this state records "
						     "for it (111)"));
	CHECK(d.n == 1 && strstr(d.items[0].detail, "tpuform import"));
	tpf_diags_release(&d);
	/* no id on either side: a name alone proves nothing */
	CHECK_INT(check(&g, NULL, NULL, &d), TPF_EFOREIGN);
	struct tpf_delete_guard noid = { MINE, NULL, NULL, NULL, NULL };
	CHECK_INT(check(&noid, NULL, "111", &d), TPF_EFOREIGN);
	CHECK_INT(check(&noid, NULL, NULL, &d), TPF_EFOREIGN);
	CHECK_INT(d.n, 3);
	CHECK(strstr(d.items[2].summary, "its id (none)") && strstr(d.items[2].summary, "(none)"));
	tpf_diags_release(&d);
}

static void test_guard__no_guard_and_no_zone(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(check(NULL, THEIRS, "1", &d), 0); /* no check asked (provider unit tests) */
	CHECK_INT(d.n, 0);
	struct tpf_delete_guard g = { MINE, NULL, NULL, NULL, NULL };
	CHECK_INT(tpf_delete_check(&g, "instance template", "f-a-0-t", NULL, THEIRS, NULL, &d),
		  TPF_EFOREIGN);
	CHECK(d.n == 1 && !strncmp(d.items[0].summary,
				   "refusing to delete instance template 'f-a-0-t': it belongs", 58));
	tpf_diags_release(&d);
}

int main(void)
{
	RUN(test_guard__labelled);
	RUN(test_guard__unlabelled);
	RUN(test_guard__sending_hook);
	RUN(test_guard__no_guard_and_no_zone);
	return unit_done();
}
