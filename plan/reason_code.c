/*
 * The one table of reason codes (plan/reason_code.h): what each code is
 * called, what Terraform calls it, and what it means to `watch` and to the
 * apply executor. The names are an interface: renaming one changes
 * `plan -json`, saved plans and webhooks.
 */
#include "plan/reason_code.h"
#include "plan/plan.h"
#include "util/xalloc.h"

#include <string.h>

#define L 1 /* lost */
#define P 1 /* planned */

/* name, terraform, lost, planned */
static const struct tpf_reason_info table[TPF_REASON_NCODES] = {
	[TPF_REASON_NONE] = { NULL, NULL, 0, 0 },
	[TPF_REASON_OTHER] = { NULL, NULL, 0, 0 },
	[TPF_REASON_ADOPT] = { "adopt", NULL, 0, 0 },
	[TPF_REASON_API] = { "api", NULL, 0, P },
	[TPF_REASON_BAD_HOST] = { "bad_host", NULL, 0, 0 },
	[TPF_REASON_BUDGET] = { "budget", NULL, 0, 0 },
	[TPF_REASON_BUSY] = { "busy", NULL, 0, 0 },
	[TPF_REASON_CHANGED] = { "changed", NULL, 0, 0 },
	[TPF_REASON_COMPLETED] = { "completed", NULL, 0, 0 },
	[TPF_REASON_COUNT] = { "count", "delete_because_count_index", 0, P },
	[TPF_REASON_DELETED] = { "deleted", NULL, 0, 0 },
	[TPF_REASON_DELETING] = { "deleting", NULL, 0, 0 },
	[TPF_REASON_DESTROY] = { "destroy", NULL, 0, 0 },
	[TPF_REASON_FLEX_WAIT] = { "flex_wait", NULL, 0, 0 },
	[TPF_REASON_FOUND] = { "found", NULL, 0, 0 },
	[TPF_REASON_GONE] = { "gone", NULL, 0, 0 },
	[TPF_REASON_GROW] = { "grow", NULL, 0, 0 },
	[TPF_REASON_INTERRUPTED] = { "interrupted", NULL, 0, 0 },
	[TPF_REASON_JOB] = { "job", NULL, 0, 0 },
	[TPF_REASON_LABELS] = { "labels", NULL, 0, 0 },
	[TPF_REASON_LABELS_AND_JOB] = { "labels_and_job", NULL, 0, 0 },
	[TPF_REASON_LEFTOVER] = { "leftover", NULL, 0, 0 },
	[TPF_REASON_MISSING] = { "missing", NULL, 0, 0 },
	[TPF_REASON_NOT_IN_CONFIG] = { "not_in_config", "delete_because_no_resource_config", 0,
				       P },
	[TPF_REASON_ORPHAN] = { "orphan", NULL, 0, 0 },
	[TPF_REASON_PATCH] = { "patch", NULL, 0, 0 },
	[TPF_REASON_PREEMPTED] = { "preempted", NULL, L, 0 },
	[TPF_REASON_PROVISION] = { "provision", NULL, 0, 0 },
	[TPF_REASON_QUEUED_FAILED] = { "queued_failed", NULL, L, 0 },
	[TPF_REASON_QUEUED_NODE_GONE] = { "queued_node_gone", NULL, L, 0 },
	[TPF_REASON_QUEUED_SUSPENDED] = { "queued_suspended", NULL, L, 0 },
	[TPF_REASON_RECIPE] = { "recipe", "replace_because_cannot_update", 0, P },
	[TPF_REASON_REFUSED] = { "refused", NULL, 0, 0 },
	[TPF_REASON_REPLACE_BY_REQUEST] = { "replace_by_request", "replace_by_request", 0, P },
	[TPF_REASON_SESSION] = { "session", NULL, 0, 0 },
	[TPF_REASON_STALLED] = { "stalled", NULL, 0, 0 },
	[TPF_REASON_STOPPED] = { "stopped", NULL, L, 0 },
	[TPF_REASON_STOPPING] = { "stopping", NULL, L, 0 },
	[TPF_REASON_TAINTED] = { "tainted", "replace_because_tainted", 0, 0 },
	[TPF_REASON_TERMINATED] = { "terminated", NULL, L, 0 },
	[TPF_REASON_UNHEALTHY] = { "unhealthy", NULL, L, 0 },
};

const struct tpf_reason_info *tpf_reason_info(enum tpf_reason_code c)
{
	static const struct tpf_reason_info none = { NULL, NULL, 0, 0 };
	return (unsigned)c < TPF_REASON_NCODES ? &table[c] : &none;
}

enum tpf_reason_code tpf_reason_code_from_name(const char *name)
{
	if (!name)
		return TPF_REASON_NONE;
	for (int c = 0; c < TPF_REASON_NCODES; c++)
		if (table[c].name && !strcmp(table[c].name, name))
			return (enum tpf_reason_code)c;
	return TPF_REASON_OTHER;
}

void tpf_action_set_reason_code(struct tpf_action *a, const char *name)
{
	xstrset(&a->reason_code, name);
	a->reason_kind = tpf_reason_code_from_name(name);
}

void tpf_action_set_reason_kind(struct tpf_action *a, enum tpf_reason_code c)
{
	xstrset(&a->reason_code, tpf_reason_info(c)->name);
	a->reason_kind = tpf_reason_info(c)->name ? c : TPF_REASON_NONE;
}
