/*
 * Upcoming maintenance reaches the jobs (issue 21, docs/recovery.md): a
 * READY node whose provider reports a maintenance window (the Cloud TPU
 * Node's upcomingMaintenance, a Compute Engine instance's
 * resourceStatus.upcomingMaintenance: model/live.h maintenance_start) has
 * its jobs told once per window, as a metadata notice would tell them:
 * the bootstrap's disrupt verb writes $TPUFORM_DISRUPTION (reason
 * maintenance, deadline the window's start) and sends on_disruption's
 * signal. Nothing is stopped: the job decides (checkpoint, and exit or go
 * on). The notice on the VM (instance/maintenance-event) comes about 60 s
 * before the event; the API's window is known hours or days ahead, so a
 * job can checkpoint at leisure.
 */
#include "engine/workers/provision.h"
#include "engine/watch/watch_internal.h"
#include "model/node_state.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct tpf_maint {
	char **told; /* "node start" of every window its jobs were told of */
	size_t n, alloc;
};

struct tpf_maint *tpf_maint_new(void)
{
	return xcalloc(1, sizeof(struct tpf_maint));
}

void tpf_maint_free(struct tpf_maint *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->told[i]);
	free(m->told);
	free(m);
}

static int told_has(const struct tpf_maint *m, const char *key)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->told[i], key))
			return 1;
	return 0;
}

/* Tell every provisioned worker of sn (live ln) of the window; the count
 * told and the count that could not be reached or asked go to *told and
 * *failed. Problems are diagnostics in d. */
static void tell_workers(struct tpf_transport *t, const struct tpf_state_node *sn,
			 const struct tpf_live_node *ln, long deadline, int *told, int *failed,
			 struct tpf_diags *d)
{
	for (size_t w = 0; w < sn->nworkers; w++) {
		if (!sn->workers[w].script_hash)
			continue; /* never provisioned: no job to tell */
		enum tpf_script_result result;
		if (tpf_provision_disrupt(t, sn, ln, (int)w, "maintenance", deadline, &result, d))
			(*failed)++;
		else if (result == TPF_SCRIPT_TOLD)
			(*told)++;
	}
}

/* The event: what the jobs were told, for the ledger and the webhook. */
static void maint_event(const struct tpf_watch_opts *o, const struct tpf_live_node *ln,
			int told, int failed)
{
	char *msg = xasprintf("%s: %d job%s told (deadline %s)%s", ln->maintenance, told,
			      told == 1 ? "" : "s", ln->maintenance_start,
			      failed ? "; some workers could not be told" : "");
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_MAINTENANCE);
	ev.node = ln->name;
	ev.id = ln->id;
	ev.zone = ln->recipe.zone;
	ev.reason = "maintenance";
	ev.deadline = ln->maintenance_start;
	ev.workers = told;
	ev.message = msg;
	tpf_watch_event(o, &ev);
	free(msg);
}

void tpf_maint_check(struct tpf_maint *m, const struct tpf_pipeline *s,
		     const struct tpf_watch_opts *o)
{
	struct tpf_transport *t =
		s->prov && s->prov->ops->transport ? s->prov->ops->transport(s->prov) : NULL;
	if (!m || !t)
		return;
	for (size_t i = 0; i < s->live.n; i++) {
		const struct tpf_live_node *ln = &s->live.nodes[i];
		if (!ln->maintenance_start || tpf_node_class(ln->state) != TPF_NODE_READY)
			continue;
		double start = tpf_parse_rfc3339(ln->maintenance_start);
		const struct tpf_state_node *sn =
			tpf_state_find((struct tpf_state *)&s->state, ln->name);
		if (start <= 0 || !sn)
			continue;
		char *key = xasprintf("%s %s", ln->name, ln->maintenance_start);
		if (told_has(m, key)) {
			free(key);
			continue;
		}
		struct tpf_diags d = TPF_DIAGS_INIT;
		int told = 0, failed = 0;
		tell_workers(t, sn, ln, (long)start, &told, &failed, &d);
		tpf_watch_diags(o, &d);
		tpf_diags_release(&d);
		/* An event only when a job was told now: a watch that restarted
		 * finds them told already (the verb says "unchanged"). */
		if (told)
			maint_event(o, ln, told, failed);
		if (failed) {
			/* Tried again next round: a worker may come back. */
			free(key);
			continue;
		}
		XGROW(m->told, m->n + 1, m->alloc);
		m->told[m->n++] = key;
	}
}
