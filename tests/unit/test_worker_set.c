/* model/worker_set (-worker's grammar, gcloud's --worker) and
 * util/similar (the "did you mean" of a mistyped command). */
#include <stdio.h>
#include <string.h>

#include "model/worker_set.h"
#include "state/state.h"
#include "tests/unit/unit.h"
#include "util/similar.h"

/* The workers of set among 0..15, as "0,2,3". */
static const char *members(const struct tpf_worker_set *s)
{
	static char buf[128];
	size_t n = 0;
	buf[0] = 0;
	for (int w = 0; w < 16; w++)
		if (tpf_worker_set_has(s, w))
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%d", n ? "," : "", w);
	return buf;
}

static const char *parse(const char *text)
{
	static char why[160];
	struct tpf_worker_set s;
	memset(&s, 0, sizeof(s));
	if (tpf_worker_set_parse(text, &s, why, sizeof(why)))
		return why;
	return members(&s);
}

/* The forms gcloud's --worker takes. */
static void test_worker_set__gcloud_forms(void)
{
	CHECK_STR(parse("3"), "3");
	CHECK_STR(parse("0-1"), "0,1");
	CHECK_STR(parse("0,1"), "0,1");
	CHECK_STR(parse("1,4,6"), "1,4,6");
	CHECK_STR(parse("1-3"), "1,2,3");
	CHECK_STR(parse("0,2-3"), "0,2,3");
	CHECK_STR(parse("2-3,0,3"), "0,2,3");
	CHECK_STR(parse("0,1,"), "0,1"); /* gcloud skips empty items */
	CHECK_STR(parse(" 0 , 2 "), "0,2");
	CHECK_STR(parse("2-2"), "2");
	CHECK_STR(parse("all"), "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15");
	CHECK_STR(parse("ALL"), "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15");
	CHECK_STR(parse("4095"), "");
}

/* Bad forms: a sentence saying what is wrong. */
static void test_worker_set__bad_forms(void)
{
	CHECK_STR(parse(""), "no worker named (workers are N, A-B, A,B or all)");
	CHECK_STR(parse(","), "no worker named (workers are N, A-B, A,B or all)");
	CHECK_STR(parse("x"), "'x' is not a worker number (workers are N, A-B, A,B or all)");
	CHECK_STR(parse("-1"), "'-1' is not a worker number (workers are N, A-B, A,B or all)");
	CHECK_STR(parse("0,w1"), "'w1' is not a worker number (workers are N, A-B, A,B or all)");
	CHECK_STR(parse("3-1"), "range '3-1' runs backwards: write 1-3");
	CHECK_STR(parse("1-"), "'1-' is not a range of workers (A-B, such as 0-3)");
	CHECK_STR(parse("1-2-3"),
		  "'1-2-3' is not a worker number or range (workers are N, A-B, A,B or all)");
	CHECK_STR(parse("1.5"), "'1.5' is not a worker number or range (workers are N, A-B, A,B or all)");
	CHECK_STR(parse("4096"), "worker 4096 is beyond the largest worker number, 4095");
	CHECK_STR(parse("0-99999999999999999999"),
		  "worker 99999999999999999999 is beyond the largest worker number, 4095");
	CHECK_STR(parse("all,1"), "'all' stands alone: it is every worker");
}

/* What the engine asks: the largest worker (checked against the node's
 * count), how many of a node's workers, membership. */
static void test_worker_set__max_and_count(void)
{
	char why[160];
	struct tpf_worker_set s;
	memset(&s, 0, sizeof(s));
	CHECK_INT(tpf_worker_set_max(&s), -1); /* not given: every worker */
	CHECK_INT((long)tpf_worker_set_count(&s, 4), 4);
	CHECK(tpf_worker_set_has(&s, 3));
	CHECK_INT(tpf_worker_set_parse("1,5-6", &s, why, sizeof(why)), 0);
	CHECK_INT(tpf_worker_set_max(&s), 6);
	CHECK_INT((long)tpf_worker_set_count(&s, 4), 1);
	CHECK_INT((long)tpf_worker_set_count(&s, 8), 3);
	CHECK(!tpf_worker_set_has(&s, 0) && tpf_worker_set_has(&s, 5) && !tpf_worker_set_has(&s, -1));
	/* A bad value leaves the set as it was. */
	CHECK_INT(tpf_worker_set_parse("2-", &s, why, sizeof(why)), -1);
	CHECK_INT(tpf_worker_set_max(&s), 6);
	CHECK_INT(tpf_worker_set_parse("all", &s, why, sizeof(why)), 0);
	CHECK_INT(tpf_worker_set_max(&s), -1);
	CHECK_INT((long)tpf_worker_set_count(&s, 16), 16);
}

/* Terraform's "Did you mean" for a mistyped command. */
static void test_worker_set__did_you_mean(void)
{
	static const char *const cmds[] = { "validate", "plan", "apply", "destroy", "state",
					    "show", "cp", "ssh", "exec", "logs", "list", NULL };
	size_t n = sizeof(cmds) / sizeof(cmds[0]);
	CHECK_INT((long)tpf_edit_distance("aply", "apply"), 1);
	CHECK_INT((long)tpf_edit_distance("plna", "plan"), 1); /* a transposition */
	CHECK_INT((long)tpf_edit_distance("kitten", "sitting"), 3);
	CHECK_INT((long)tpf_edit_distance("", "abc"), 3);
	CHECK_STR(tpf_similar_name("aply", cmds, n), "apply");
	CHECK_STR(tpf_similar_name("stat", cmds, n), "state");
	CHECK_STR(tpf_similar_name("destory", cmds, n), "destroy");
	CHECK_STR(tpf_similar_name("exce", cmds, n), "exec");
	CHECK_STR(tpf_similar_name("lst", cmds, n), "list");
	CHECK(tpf_similar_name("ls", cmds, n) == NULL); /* not cp, not logs: too far for short names */
	CHECK(tpf_similar_name("frobnicate", cmds, n) == NULL);
}

/* The one range check, and the state's worker lookup built on it: the
 * edges (0, n-1, n, -1) and a NULL node. */
static void test_worker_set__in_range(void)
{
	CHECK(tpf_worker_in_range(0, 1));
	CHECK(tpf_worker_in_range(3, 4));
	CHECK(!tpf_worker_in_range(4, 4));
	CHECK(!tpf_worker_in_range(-1, 4)); /* "every worker" is not an index */
	CHECK(!tpf_worker_in_range(0, 0));
	struct tpf_state_node n;
	memset(&n, 0, sizeof(n));
	tpf_state_node_set_workers(&n, 2);
	CHECK(tpf_state_node_worker(&n, 1) == &n.workers[1]);
	CHECK(tpf_state_node_worker(&n, 2) == NULL);
	CHECK(tpf_state_node_worker(&n, -1) == NULL);
	CHECK(tpf_state_node_worker(NULL, 0) == NULL);
	tpf_state_node_release(&n);
}

int main(void)
{
	RUN(test_worker_set__gcloud_forms);
	RUN(test_worker_set__bad_forms);
	RUN(test_worker_set__max_and_count);
	RUN(test_worker_set__did_you_mean);
	RUN(test_worker_set__in_range);
	return unit_done();
}
