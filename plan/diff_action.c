/*
 * The one way the diff's files add a node action (plan/plan_internal.h):
 * plan/diff.c and the files of its rules (diff_recreate.c, diff_wait.c,
 * diff_update.c, diff_restart.c, diff_going.c) all call here, so none calls
 * another back (tests/lint/calls.sh).
 */
#include "plan/plan_internal.h"
#include "util/xalloc.h"

struct tpf_action *tpf_diff_action(struct tpf_plan *p, enum tpf_action_kind kind,
				   const struct tpf_desired_node *dn,
				   const struct tpf_state_node *sn,
				   const struct tpf_live_node *ln)
{
	/* callers pass at least one of dn, sn, ln */
	// cppcheck-suppress nullPointerRedundantCheck ; ln is tested below only to pick the zone
	struct tpf_action *a = tpf_plan_add(p, kind, dn ? dn->name : sn ? sn->name : ln->name);
	if (dn) {
		a->desired = xcalloc(1, sizeof(*a->desired));
		tpf_desired_node_copy(a->desired, dn);
	}
	if (ln) {
		a->zone = xstrdup(ln->recipe.zone);
		a->id = xstrdup(ln->id);
	} else if (sn) {
		a->zone = xstrdup(sn->recipe.zone);
		a->id = xstrdup(sn->id);
	}
	return a;
}

void tpf_diff_reason(struct tpf_action *a, const char *code, const char *text)
{
	tpf_action_set_reason_code(a, code);
	xstrset(&a->reason, text);
}

void tpf_diff_add_worker(struct tpf_action *a, int w)
{
	a->workers = xrealloc(a->workers, (a->nworkers + 1) * sizeof(int));
	a->workers[a->nworkers++] = w;
}
