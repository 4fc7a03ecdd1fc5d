/*
 * What the watch hooks conclude from the workers' jobs in a round
 * (engine/watch/watch_hooks_internal.h): job_failed, job_succeeded,
 * restarts_exhausted (for failures, lost sessions and stalls), completed,
 * and worker 0's progress for the run ledger.
 */
#include "engine/watch/watch_hooks_internal.h"
#include "engine/ledger/ledger_losses.h"
#include "engine/ledger/ledger_writer.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>

/* At most one job_step line per node this often: a 1,000-node fleet adds
 * 100 lines a minute, not one per probe (docs/ledger.md). */
#define STEP_EVERY_MS 600000L

/* Worker 0's progress, for the run ledger: each new checkpoint, and its
 * step now and then (h->mu held). */
void tpf_hooks_seen_progress(struct tpf_watch_hooks *h, const struct tpf_pipeline *s,
			     const struct tpf_job_fact *sf)
{
	if (!sf->have_progress || sf->worker != 0 || !h->ledger)
		return;
	const struct tpf_state_node *sn = tpf_state_find((struct tpf_state *)&s->state, sf->node);
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_CHECKPOINT);
	ev.node = sf->node;
	ev.worker = 0;
	ev.generation = sn ? sn->generation : -1;
	struct mark *k = tpf_hooks_mark_find(&h->ckpts, sf->node);
	if (sf->checkpoint_step >= 0 && (!k || k->value != sf->checkpoint_step)) {
		tpf_hooks_mark_set(&h->ckpts, sf->node, sf->checkpoint_step);
		ev.step = sf->checkpoint_step;
		tpf_run_ledger_event(h->ledger, &ev);
	}
	long now = (long)(tpf_now_mono() * 1000);
	k = tpf_hooks_mark_find(&h->steps, sf->node);
	if (sf->step >= 0 && (!k || now - k->value >= STEP_EVERY_MS)) {
		tpf_hooks_mark_set(&h->steps, sf->node, now);
		ev.kind = ev.action = TPF_EVENT_JOB_STEP;
		ev.step = sf->step;
		tpf_run_ledger_event(h->ledger, &ev);
	}
}

/* restarts_exhausted, once per worker and retry: its job calls for a
 * restart (failed, died or stalled) and its group's max_restarts is used
 * up (the plan's rule: tpf_worker_exhausted). */
static void exhausted(struct tpf_watch_hooks *h, const struct tpf_pipeline *s,
		      const struct tpf_state_node *sn, struct tpf_event *ev, const char *key,
		      const char *how)
{
	struct mark *k = tpf_hooks_mark_find(&h->exhausted, key);
	if (k && k->value == ev->retry)
		return;
	tpf_hooks_mark_set(&h->exhausted, key, ev->retry);
	char msg[200];
	ev->kind = ev->action = TPF_EVENT_RESTARTS_EXHAUSTED;
	/* sn is never NULL here (its callers found a worker of it); the
	 * guard is for the reader and the analyzer, which cannot see that */
	snprintf(msg, sizeof(msg), "the job %s and max_restarts (%d) is used up: it is not restarted",
		 how, tpf_fleet_job_policy(&s->fleet, sn ? sn->group : NULL)->max_restarts);
	ev->message = msg;
	tpf_hooks_conclude(h, ev);
	ev->message = NULL;
}

/* A running job that stalled past its stall_timeout, with no restart left:
 * restarts_exhausted too (docs/watch.md "Watch", webhooks), as for a failure. */
static void seen_stall(struct tpf_watch_hooks *h, const struct tpf_pipeline *s,
		       const struct tpf_job_fact *sf, const struct tpf_state_node *sn)
{
	const struct tpf_job_policy *pol = tpf_fleet_job_policy(&s->fleet, sn ? sn->group : NULL);
	if (!sn || !tpf_job_stalled(pol, sf) || !tpf_state_node_worker(sn, sf->worker) ||
	    !tpf_worker_exhausted(&s->fleet, sn, sf->worker, &s->facts))
		return;
	char key[300];
	snprintf(key, sizeof(key), "%s/%d", sf->node, sf->worker);
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_RESTARTS_EXHAUSTED);
	ev.node = sf->node;
	ev.worker = sf->worker;
	ev.generation = sn->generation;
	ev.retry = sn->generation + sn->workers[sf->worker].restarts;
	ev.last_log = sf->last_log;
	exhausted(h, s, sn, &ev, key, "stalled");
}

/* job_failed / job_succeeded / restarts_exhausted for one worker's report. */
void tpf_hooks_seen_job(struct tpf_watch_hooks *h, const struct tpf_pipeline *s,
			const struct tpf_job_fact *sf)
{
	if (sf->state == TPF_JOB_STATE_UNREACHABLE || tpf_hooks_unsettled(h, sf->node))
		return;
	struct tpf_state_node *sn = tpf_state_find((struct tpf_state *)&s->state, sf->node);
	if (sf->state == TPF_JOB_STATE_ALIVE) {
		seen_stall(h, s, sf, sn);
		return;
	}
	if (sf->state != TPF_JOB_STATE_EXITED && sf->state != TPF_JOB_STATE_DEAD)
		return;
	const struct tpf_state_worker *sw = tpf_state_node_worker(sn, sf->worker);
	int died = sf->state == TPF_JOB_STATE_DEAD;
	char key[300];
	snprintf(key, sizeof(key), "%s/%d", sf->node, sf->worker);
	struct mark *k = tpf_hooks_mark_find(&h->jobs, key);
	char msg[200];
	struct tpf_event ev;
	long retry = tpf_ledger_job_exit_event(sf, sn, &ev, msg, sizeof(msg));
	if (!k || k->value != retry) {
		tpf_hooks_mark_set(&h->jobs, key, retry);
		tpf_hooks_conclude(h, &ev);
	}
	ev.message = NULL;
	if (!sw || !tpf_worker_exhausted(&s->fleet, sn, sf->worker, &s->facts))
		return;
	exhausted(h, s, sn, &ev, key, died ? "lost its session" : "failed");
}

/* completed: every worker of a desired node reports exit 0. */
void tpf_hooks_seen_completion(struct tpf_watch_hooks *h, const struct tpf_pipeline *s,
			       const struct tpf_desired_node *dn)
{
	int done = 0;
	if (tpf_hooks_unsettled(h, dn->name))
		return;
	for (int w = 0; w < dn->recipe.workers; w++) {
		const struct tpf_job_fact *sf = tpf_job_facts_find(&s->facts, dn->name, w);
		done += sf && sf->state == TPF_JOB_STATE_EXITED && sf->exit_code == 0;
	}
	struct tpf_state_node *sn = tpf_state_find((struct tpf_state *)&s->state, dn->name);
	long generation = sn ? sn->generation : 0;
	struct mark *k = tpf_hooks_mark_find(&h->completed, dn->name);
	if (!dn->recipe.workers || done < dn->recipe.workers || (k && k->value == generation))
		return;
	tpf_hooks_mark_set(&h->completed, dn->name, generation);
	char *msg = xasprintf("completed: the job exited 0 on all %d worker%s", dn->recipe.workers,
			      dn->recipe.workers > 1 ? "s" : "");
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_COMPLETED);
	ev.node = dn->name;
	ev.group = dn->group;
	ev.zone = dn->recipe.zone;
	ev.generation = sn ? sn->generation : -1;
	ev.message = msg;
	tpf_hooks_conclude(h, &ev);
	free(msg);
}
