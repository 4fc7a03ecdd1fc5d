/*
 * The one table of reason codes (plan/reason_code.c): every code has a
 * unique name that parses back to it, the names users and saved plans rely
 * on are spelled out here (changing one must fail this test), and the
 * codes that mean "a lost node" (watch's preempted webhook) and "a planned
 * disruption" (the executor tells the jobs first) are exactly those the
 * engine decided by text before the table.
 */
#include "plan/plan.h"
#include "tests/unit/unit.h"

#include <string.h>

struct want {
	enum tpf_reason_code code;
	const char *name;
	const char *terraform;
	int lost, planned;
};

static const struct want wants[] = {
	{ TPF_REASON_ADOPT, "adopt", NULL, 0, 0 },
	{ TPF_REASON_API, "api", NULL, 0, 1 },
	{ TPF_REASON_BAD_HOST, "bad_host", NULL, 0, 0 },
	{ TPF_REASON_BUDGET, "budget", NULL, 0, 0 },
	{ TPF_REASON_BUSY, "busy", NULL, 0, 0 },
	{ TPF_REASON_CHANGED, "changed", NULL, 0, 0 },
	{ TPF_REASON_COMPLETED, "completed", NULL, 0, 0 },
	{ TPF_REASON_COUNT, "count", "delete_because_count_index", 0, 1 },
	{ TPF_REASON_DELETED, "deleted", NULL, 0, 0 },
	{ TPF_REASON_DELETING, "deleting", NULL, 0, 0 },
	{ TPF_REASON_DESTROY, "destroy", NULL, 0, 0 },
	{ TPF_REASON_FLEX_WAIT, "flex_wait", NULL, 0, 0 },
	{ TPF_REASON_FOUND, "found", NULL, 0, 0 },
	{ TPF_REASON_GONE, "gone", NULL, 0, 0 },
	{ TPF_REASON_GROW, "grow", NULL, 0, 0 },
	{ TPF_REASON_INTERRUPTED, "interrupted", NULL, 0, 0 },
	{ TPF_REASON_JOB, "job", NULL, 0, 0 },
	{ TPF_REASON_LABELS, "labels", NULL, 0, 0 },
	{ TPF_REASON_LABELS_AND_JOB, "labels_and_job", NULL, 0, 0 },
	{ TPF_REASON_LEFTOVER, "leftover", NULL, 0, 0 },
	{ TPF_REASON_MISSING, "missing", NULL, 0, 0 },
	{ TPF_REASON_NOT_IN_CONFIG, "not_in_config", "delete_because_no_resource_config", 0, 1 },
	{ TPF_REASON_ORPHAN, "orphan", NULL, 0, 0 },
	{ TPF_REASON_PATCH, "patch", NULL, 0, 0 },
	{ TPF_REASON_PREEMPTED, "preempted", NULL, 1, 0 },
	{ TPF_REASON_PROVISION, "provision", NULL, 0, 0 },
	{ TPF_REASON_QUEUED_FAILED, "queued_failed", NULL, 1, 0 },
	{ TPF_REASON_QUEUED_NODE_GONE, "queued_node_gone", NULL, 1, 0 },
	{ TPF_REASON_QUEUED_SUSPENDED, "queued_suspended", NULL, 1, 0 },
	{ TPF_REASON_RECIPE, "recipe", "replace_because_cannot_update", 0, 1 },
	{ TPF_REASON_REFUSED, "refused", NULL, 0, 0 },
	{ TPF_REASON_REPLACE_BY_REQUEST, "replace_by_request", "replace_by_request", 0, 1 },
	{ TPF_REASON_SESSION, "session", NULL, 0, 0 },
	{ TPF_REASON_STALLED, "stalled", NULL, 0, 0 },
	{ TPF_REASON_STOPPED, "stopped", NULL, 1, 0 },
	{ TPF_REASON_STOPPING, "stopping", NULL, 1, 0 },
	{ TPF_REASON_TAINTED, "tainted", "replace_because_tainted", 0, 0 },
	{ TPF_REASON_TERMINATED, "terminated", NULL, 1, 0 },
	{ TPF_REASON_UNHEALTHY, "unhealthy", NULL, 1, 0 },
};

static void test_reason_code__every_code_has_its_words(void)
{
	size_t n = sizeof(wants) / sizeof(wants[0]);
	CHECK_INT(n, TPF_REASON_NCODES - 2); /* all but NONE and OTHER */
	for (size_t i = 0; i < n; i++) {
		const struct tpf_reason_info *r = tpf_reason_info(wants[i].code);
		CHECK_STR(r->name, wants[i].name);
		CHECKF(r->terraform == wants[i].terraform ||
			       (r->terraform && wants[i].terraform &&
				!strcmp(r->terraform, wants[i].terraform)),
		       "%s: terraform", wants[i].name);
		CHECKF((int)r->lost == wants[i].lost, "%s: lost", wants[i].name);
		CHECKF((int)r->planned == wants[i].planned, "%s: planned", wants[i].name);
		CHECK_INT(tpf_reason_code_from_name(wants[i].name), wants[i].code);
	}
}

/* A code is parsed once where it is set; the text is kept as written, so
 * plan -json and saved plans keep every code, known or not. */
static void test_reason_code__set_and_parse(void)
{
	struct tpf_action a;
	memset(&a, 0, sizeof(a));
	tpf_action_set_reason_code(&a, "preempted");
	CHECK_INT(a.reason_kind, TPF_REASON_PREEMPTED);
	CHECK_STR(a.reason_code, "preempted");
	tpf_action_set_reason_code(&a, "from_a_newer_tpuform");
	CHECK_INT(a.reason_kind, TPF_REASON_OTHER);
	CHECK_STR(a.reason_code, "from_a_newer_tpuform");
	tpf_action_set_reason_kind(&a, TPF_REASON_UNHEALTHY);
	CHECK_STR(a.reason_code, "unhealthy");
	CHECK_INT(a.reason_kind, TPF_REASON_UNHEALTHY);
	tpf_action_set_reason_code(&a, NULL);
	CHECK(a.reason_code == NULL);
	CHECK_INT(a.reason_kind, TPF_REASON_NONE);
	CHECK(tpf_reason_info(TPF_REASON_NCODES)->name == NULL);
	CHECK(tpf_reason_info(TPF_REASON_OTHER)->name == NULL);
	tpf_action_release(&a);
}

int main(void)
{
	RUN(test_reason_code__every_code_has_its_words);
	RUN(test_reason_code__set_and_parse);
	return unit_done();
}
