/*
 * util/diag.c: a diagnostic equal to one already in the list (severity,
 * summary, detail, address) is kept once (issue 26: `plan` without
 * credentials printed the same error once per zone), distinct ones all stay
 * in order, repeats still count in errors_seen, and the index survives
 * growth, moves and a release.
 */
#include "tests/unit/unit.h"
#include "util/diag.h"

#include <stdio.h>
#include <string.h>

static void test_diag__repeats_kept_once(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_errorx(&d, NULL, "set credentials", "no credentials"), TPF_ERROR);
	CHECK_INT(tpf_errorx(&d, NULL, "set credentials", "no credentials"), TPF_ERROR);
	CHECK_INT(tpf_error(&d, "no credentials"), TPF_ERROR); /* no detail: another */
	tpf_warn(&d, NULL, "no credentials");                   /* a warning: another */
	tpf_warn(&d, NULL, "no credentials");
	tpf_warn(&d, "n1", "no credentials"); /* another subject */
	tpf_warn(&d, "", "no credentials");   /* "" is not NULL */
	CHECK_INT((int)d.n, 5);
	CHECK_INT((int)tpf_diags_errors(&d), 2);
	CHECK_INT((int)d.errors_seen, 3);
	CHECK_STR(d.items[0].detail, "set credentials");
	CHECK(d.items[1].detail == NULL);
	CHECK_STR(d.items[3].address, "n1");
	tpf_diags_release(&d);
	CHECK_INT((int)d.errors_seen, 0);
	tpf_error(&d, "again after a release");
	tpf_error(&d, "again after a release");
	CHECK_INT((int)d.n, 1);
	tpf_diags_release(&d);
}

static void test_diag__growth_and_move(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT, src;
	tpf_diags_init(&src);
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 1000; i++)
			tpf_warn(&d, NULL, "warning %d", i);
	CHECK_INT((int)d.n, 1000);
	int in_order = 1;
	char want[32];
	for (int i = 0; i < 1000; i++) {
		snprintf(want, sizeof(want), "warning %d", i);
		in_order &= !strcmp(d.items[i].summary, want);
	}
	CHECK(in_order);
	tpf_warn(&src, NULL, "warning 7");
	tpf_warn(&src, NULL, "warning 1000");
	tpf_diags_move(&d, &src);
	CHECK_INT((int)d.n, 1001);
	CHECK_INT((int)src.n, 0);
	CHECK_STR(d.items[1000].summary, "warning 1000");
	tpf_diags_release(&d);
	tpf_diags_release(&src);
}

/* A diagnostic carries the code it was made with (none by default), kept
 * through a move; an equal one listed without a code takes it. cmd/ decides
 * by the code (cmd/cmd_logs.c), never by the message. */
static void test_diag__codes(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT, src = TPF_DIAGS_INIT;
	tpf_error(&d, "plain");
	CHECK_INT(d.items[0].code, TPF_DIAG_NONE);
	CHECK_INT(tpf_errorc(&d, TPF_DIAG_NOT_READY, NULL, "hint", "node '%s' is %s, not READY", "n",
			     "CREATING"),
		  TPF_ERROR);
	CHECK_INT((int)d.n, 2);
	CHECK_INT(d.items[1].code, TPF_DIAG_NOT_READY);
	CHECK_STR(d.items[1].summary, "node 'n' is CREATING, not READY");
	CHECK_STR(d.items[1].detail, "hint");
	tpf_errorx(&src, NULL, NULL, "node 'm' is not in the state");
	tpf_errorc(&src, TPF_DIAG_NOT_IN_STATE, NULL, NULL, "node 'm' is not in the state");
	CHECK_INT((int)src.n, 1);
	CHECK_INT(src.items[0].code, TPF_DIAG_NOT_IN_STATE);
	tpf_diags_move(&d, &src);
	CHECK_INT((int)d.n, 3);
	CHECK_INT(d.items[2].code, TPF_DIAG_NOT_IN_STATE);
	tpf_diags_release(&d);
	tpf_diags_release(&src);
}

int main(void)
{
	RUN(test_diag__codes);
	RUN(test_diag__repeats_kept_once);
	RUN(test_diag__growth_and_move);
	return unit_done();
}
