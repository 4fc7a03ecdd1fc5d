/*
 * Elastic slices (issue 30; docs/recovery.md "Elastic slices"): a
 * multislice node of an elastic group (`elastic: { min_slices: K }`) that
 * lost slices keeps running on the others while at least K remain, and
 * grows back once the lost ones are READY again. Pure: the decisions only;
 * engine/apply/apply_elastic.c carries them out (plan.h TPF_ELASTIC_*).
 */
#include "model/node_state.h"
#include "plan/elastic.h"
#include "plan/plan_internal.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* The group is elastic and the node a multislice one it can resize:
 * created, on Compute Engine (whose slices are separate resources), with
 * the slices the group declares. */
static int resizable(const struct tpf_desired_node *dn, const struct tpf_state_node *sn,
		     const struct tpf_live_node *ln)
{
	int n = tpf_recipe_slices(&ln->recipe);
	return dn->elastic.min_slices > 0 && sn && sn->status == TPF_NODE_CREATED && n > 1 &&
	       n == tpf_recipe_slices(&dn->recipe) && ln->recipe.compute.api == TPF_API_COMPUTE;
}

/* "2/3 slices": the job's slices of the declared ones, for plan and show. */
static void say_running(struct tpf_action *a, const char *before, int k, int n)
{
	char *after = xasprintf("\"%d/%d\"", k, n);
	tpf_action_change(a, "running_slices", before, after, 0, 0);
	free(after);
}

/* How many slices of n the list names (every one for NULL or a bad list). */
static int count_running(const char *list, int n)
{
	unsigned char *on = xcalloc((size_t)n, 1);
	int k = tpf_elastic_running(list, n, on);
	free(on);
	return k < 0 ? n : k;
}

/* The workers of the slices `running` names join a's list. */
static void add_running_workers(struct tpf_action *a, const struct tpf_state_node *sn,
				const char *running)
{
	struct tpf_state_node view = *sn; /* a shallow copy: only read */
	view.elastic_slices = (char *)running;
	for (int w = 0; w < sn->recipe.workers; w++) {
		struct tpf_elastic_view v;
		tpf_elastic_view(&view, w, &v);
		if (v.running)
			tpf_diff_add_worker(a, w);
	}
}

/* a's reason text: its first words (the loss, without "and every worker
 * of every slice restarts", which is no longer so), then more. */
static void reason_more(struct tpf_action *a, char *more)
{
	char *cut = a->reason ? strstr(a->reason, ", and every worker") : NULL;
	if (cut)
		*cut = 0;
	char *text = xasprintf("%s%s", a->reason ? a->reason : "", more);
	free(a->reason);
	a->reason = text;
	free(more);
}

int tpf_diff_elastic_lost(struct tpf_action *a, const struct tpf_desired_node *dn,
			  const struct tpf_state_node *sn, const struct tpf_live_node *ln)
{
	int n = tpf_recipe_slices(&ln->recipe);
	if (!a->keep_parts || !resizable(dn, sn, ln) || !ln->lost_slices)
		return 0;
	unsigned char *lost = xcalloc((size_t)n, 1), *on = xcalloc((size_t)n, 1);
	int nlost = tpf_elastic_running(ln->lost_slices, n, lost), k = 0;
	for (int s = 0; s < n; s++)
		k += on[s] = nlost > 0 && !lost[s];
	char *running = tpf_elastic_list(on, n);
	free(lost);
	free(on);
	if (nlost < 1 || k < dn->elastic.min_slices) {
		free(running); /* below min_slices: every slice waits, as without elastic */
		return 0;
	}
	char *was = xasprintf("\"%d/%d\"", count_running(sn->elastic_slices, n), n);
	a->elastic_slices = running;
	if (sn->elastic_slices && !strcmp(sn->elastic_slices, running)) {
		a->elastic = TPF_ELASTIC_RECREATE;
		/* not a new loss (no `preempted` event each round): the
		 * create the shrink began was refused, and is tried again */
		tpf_action_set_reason_code(a, "refused");
		reason_more(a, xasprintf("; the job runs on %d of %d slices meanwhile (elastic): "
					 "no worker restarts", k, n));
	} else {
		a->elastic = TPF_ELASTIC_SHRINK;
		a->gang = 1;
		add_running_workers(a, sn, running);
		reason_more(a, xasprintf("; elastic: meanwhile the job restarts on the %d "
					 "other slices (%s), at least min_slices %d",
					 k, running, dn->elastic.min_slices));
	}
	say_running(a, was, k, n);
	free(was);
	return 1;
}

int tpf_diff_elastic_grown(struct tpf_plan *p, const struct tpf_desired_node *dn,
			   const struct tpf_state_node *sn, const struct tpf_live_node *ln)
{
	if (!sn || !sn->elastic_slices || !resizable(dn, sn, ln))
		return 0;
	int n = tpf_recipe_slices(&ln->recipe), k = count_running(sn->elastic_slices, n);
	enum tpf_node_class c = tpf_node_class(ln->state);
	if (c == TPF_NODE_BUSY && !ln->lost_slices) {
		/* the lost slices are being made: the job goes on meanwhile */
		char *why = xasprintf("the job runs on %d of %d slices (elastic) while the "
				      "others are created (%s)", k, n, ln->state);
		tpf_plan_add_unconverged(p, TPF_UNCONV_QUEUED, dn->name, -1, why);
		free(why);
		return 1;
	}
	if (c != TPF_NODE_READY || ln->lost_slices)
		return 0;
	struct tpf_action *a = tpf_diff_action(p, TPF_ACT_RESTART, dn, sn, ln);
	a->elastic = TPF_ELASTIC_GROW;
	a->gang = 1;
	a->elastic_checkpoint = dn->elastic.grow == TPF_GROW_CHECKPOINT;
	for (int w = 0; w < dn->recipe.workers; w++)
		tpf_diff_add_worker(a, w);
	char *text = xasprintf("every slice is READY again: the job grows from %d to %d slices%s",
			       k, n, a->elastic_checkpoint
					     ? " (grow: checkpoint: it gets the disruption signal "
					       "and its grace first)"
					     : " (grow: at_once)");
	tpf_diff_reason(a, "grow", text);
	free(text);
	char *was = xasprintf("\"%d/%d\"", k, n);
	say_running(a, was, n, n);
	free(was);
	return 1;
}
