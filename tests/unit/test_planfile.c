/*
 * Saved plans: the staleness rules (plan/planfile.c tpf_plan_check_stale)
 * and the file round trip (engine/saved_plan.c).
 */
#include "engine/saved_plan.h"
#include "plan/plan.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define LINEAGE "8d0c3f4e-6a55-4f0b-9a6e-1b2c3d4e5f60"
#define SHA_A "sha256:aaaa"
#define SHA_B "sha256:bbbb"

/* A saved plan made from state LINEAGE at serial 4 with fleet file SHA_A. */
static void saved(struct tpf_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->fleet = xstrdup("f");
	p->lineage = xstrdup(LINEAGE);
	p->serial = 4;
	p->fleet_sha256 = xstrdup(SHA_A);
}

/* The one diagnostic's summary, or "" when there is not exactly one. */
static const char *only_summary(const struct tpf_diags *d)
{
	return d->n == 1 ? d->items[0].summary : "";
}

static void test_planfile__fresh_plan_is_accepted(void)
{
	struct tpf_plan p;
	struct tpf_diags d = TPF_DIAGS_INIT;
	saved(&p);
	CHECK_INT(tpf_plan_check_stale(&p, LINEAGE, 4, SHA_A, &d), 0);
	CHECK_INT(d.n, 0);
	/* Unknown hashes (an old plan, or none given) are not a mismatch. */
	CHECK_INT(tpf_plan_check_stale(&p, LINEAGE, 4, NULL, &d), 0);
	free(p.fleet_sha256);
	p.fleet_sha256 = NULL;
	CHECK_INT(tpf_plan_check_stale(&p, LINEAGE, 4, SHA_B, &d), 0);
	CHECK_INT(d.n, 0);
	tpf_plan_release(&p);
	tpf_diags_release(&d);
}

static void test_planfile__other_lineage_does_not_match(void)
{
	struct tpf_plan p;
	struct tpf_diags d = TPF_DIAGS_INIT;
	saved(&p);
	CHECK_INT(tpf_plan_check_stale(&p, "another-lineage", 4, SHA_A, &d), TPF_ESTALE);
	CHECK_STR(only_summary(&d), "Saved plan does not match the given state");
	CHECK(d.n == 1 && d.items[0].detail && strstr(d.items[0].detail, "different state lineage"));
	tpf_diags_release(&d);
	/* Lineage is checked first: a plan that is also a serial behind says so. */
	CHECK_INT(tpf_plan_check_stale(&p, "another-lineage", 9, SHA_B, &d), TPF_ESTALE);
	CHECK_STR(only_summary(&d), "Saved plan does not match the given state");
	tpf_diags_release(&d);
	CHECK_INT(tpf_plan_check_stale(&p, NULL, 4, SHA_A, &d), TPF_ESTALE);
	CHECK_STR(only_summary(&d), "Saved plan does not match the given state");
	tpf_plan_release(&p);
	tpf_diags_release(&d);
}

static void test_planfile__first_plan_has_no_lineage(void)
{
	/* Planned before any state was written: any lineage, serial 0 only. */
	struct tpf_plan p;
	struct tpf_diags d = TPF_DIAGS_INIT;
	saved(&p);
	free(p.lineage);
	p.lineage = NULL;
	p.serial = 0;
	CHECK_INT(tpf_plan_check_stale(&p, LINEAGE, 0, SHA_A, &d), 0);
	CHECK_INT(d.n, 0);
	CHECK_INT(tpf_plan_check_stale(&p, LINEAGE, 1, SHA_A, &d), TPF_ESTALE);
	CHECK_STR(only_summary(&d), "Saved plan is stale");
	tpf_plan_release(&p);
	tpf_diags_release(&d);
}

static void test_planfile__serial_moved_is_stale(void)
{
	struct tpf_plan p;
	struct tpf_diags d = TPF_DIAGS_INIT;
	saved(&p);
	CHECK_INT(tpf_plan_check_stale(&p, LINEAGE, 5, SHA_A, &d), TPF_ESTALE);
	CHECK_STR(only_summary(&d), "Saved plan is stale");
	CHECK(d.n == 1 && d.items[0].detail &&
	      strstr(d.items[0].detail, "changed by another operation"));
	tpf_diags_release(&d);
	/* Backwards too (a state restored from its backup). */
	CHECK_INT(tpf_plan_check_stale(&p, LINEAGE, 3, SHA_A, &d), TPF_ESTALE);
	CHECK_STR(only_summary(&d), "Saved plan is stale");
	tpf_plan_release(&p);
	tpf_diags_release(&d);
}

static void test_planfile__fleet_file_changed_is_stale(void)
{
	struct tpf_plan p;
	struct tpf_diags d = TPF_DIAGS_INIT;
	saved(&p);
	CHECK_INT(tpf_plan_check_stale(&p, LINEAGE, 4, SHA_B, &d), TPF_ESTALE);
	CHECK_STR(only_summary(&d),
		  "Saved plan is stale: the fleet file changed after the plan was created");
	CHECK(d.n == 1 && d.items[0].detail && strstr(d.items[0].detail, "tpuform plan -out=FILE"));
	tpf_plan_release(&p);
	tpf_diags_release(&d);
}

static void test_planfile__file_round_trip(void)
{
	char *dir = unit_tmpdir();
	char *path = xasprintf("%s/tf.plan", dir);
	struct tpf_plan p, back;
	struct tpf_diags d = TPF_DIAGS_INIT;
	saved(&p);
	p.commit = xstrdup("0123456789abcdef0123456789abcdef01234567");
	struct tpf_action *a = tpf_plan_add(&p, TPF_ACT_DELETE, "f-a-0");
	a->reason = xstrdup("not in the fleet file");
	tpf_plan_recount(&p);
	CHECK_INT(tpf_saved_plan_write(&p, path, &d), 0);
	struct stat sb;
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
	CHECK_INT(tpf_saved_plan_read(&back, path, &d), 0);
	CHECK_INT(d.n, 0);
	CHECK_STR(back.lineage, LINEAGE);
	CHECK_INT(back.serial, 4);
	CHECK_STR(back.fleet_sha256, SHA_A);
	CHECK_STR(back.commit, p.commit);
	CHECK_INT(back.n, 1);
	CHECK(back.n == 1 && back.actions[0].kind == TPF_ACT_DELETE);
	CHECK_INT(back.destroyed, 1);
	/* What was written passes the check against the state it names. */
	CHECK_INT(tpf_plan_check_stale(&back, LINEAGE, 4, SHA_A, &d), 0);
	tpf_plan_release(&back);

	char *junk = xasprintf("%s/junk.plan", dir);
	FILE *f = fopen(junk, "w");
	fputs("{\"format\":\"nonsense\"}", f);
	fclose(f);
	CHECK(tpf_saved_plan_read(&back, junk, &d) != 0);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "is not a tpuform saved plan"));
	tpf_plan_release(&back);
	tpf_diags_release(&d);
	char *missing = xasprintf("%s/none.plan", dir);
	CHECK(tpf_saved_plan_read(&back, missing, &d) != 0);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "cannot read saved plan"));
	tpf_plan_release(&back);

	tpf_plan_release(&p);
	tpf_diags_release(&d);
	free(missing);
	free(junk);
	free(path);
	free(dir);
}

int main(void)
{
	RUN(test_planfile__fresh_plan_is_accepted);
	RUN(test_planfile__other_lineage_does_not_match);
	RUN(test_planfile__first_plan_has_no_lineage);
	RUN(test_planfile__serial_moved_is_stale);
	RUN(test_planfile__fleet_file_changed_is_stale);
	RUN(test_planfile__file_round_trip);
	return unit_done();
}
