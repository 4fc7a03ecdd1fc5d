/*
 * How a node's record changes (state/state.h "Transitions"): the only code
 * that writes a node's status, id, generation, workers' restart counts and
 * the copies of its recipe and job. engine/apply/apply.c, engine/pipeline/import.c and
 * engine/pipeline/targeted.c call these under their own lock and save after.
 */
#include "state/state.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static void worker_copy(struct tpf_state_worker *dst, const struct tpf_state_worker *src)
{
	dst->index = src->index;
	xstrset(&dst->script_hash, src->script_hash);
	xstrset(&dst->session, src->session);
	dst->job_state = src->job_state;
	dst->exit_code = src->exit_code;
	dst->restarts = src->restarts;
	xstrset(&dst->address, src->address);
	xstrset(&dst->host_key, src->host_key);
	xstrset(&dst->provisioned_at, src->provisioned_at);
	xstrset(&dst->restarted_at, src->restarted_at);
	dst->preflight_failures = src->preflight_failures;
	xstrset(&dst->preflight_error, src->preflight_error);
}

struct tpf_state_node *tpf_state_node_clone(const struct tpf_state_node *src)
{
	struct tpf_state_node *n = xcalloc(1, sizeof(*n));
	n->name = xstrdup(src->name);
	n->group = xstrdup(src->group);
	n->index = src->index;
	n->id = xstrdup(src->id);
	n->status = src->status;
	n->generation = src->generation;
	tpf_recipe_copy(&n->recipe, &src->recipe);
	tpf_job_copy(&n->job, &src->job);
	n->created_at = xstrdup(src->created_at);
	n->last_checkpoint = xstrdup(src->last_checkpoint);
	n->checkpoint_at = xstrdup(src->checkpoint_at);
	n->completed_at = xstrdup(src->completed_at);
	n->exit_code = src->exit_code;
	n->bad_host = xstrdup(src->bad_host);
	n->preemptions = src->preemptions;
	n->refused = xstrdup(src->refused);
	n->retry_after = xstrdup(src->retry_after);
	n->delete_sent_at = xstrdup(src->delete_sent_at);
	n->elastic_slices = xstrdup(src->elastic_slices);
	tpf_state_node_set_workers(n, src->nworkers);
	for (size_t i = 0; i < src->nworkers; i++)
		worker_copy(&n->workers[i], &src->workers[i]);
	return n;
}

void tpf_state_node_free(struct tpf_state_node *n)
{
	if (!n)
		return;
	tpf_state_node_release(n);
	free(n);
}

/* The most restarts any worker of n had: a re-created node's generation
 * goes past them, so TPUFORM_RETRY never goes back. */
static int max_restarts_of(const struct tpf_state_node *n)
{
	int m = 0;
	for (size_t i = 0; i < n->nworkers; i++)
		if (n->workers[i].restarts > m)
			m = n->workers[i].restarts;
	return m;
}

struct tpf_state_node *tpf_state_record_pending(struct tpf_state *st, const char *name,
						const char *group, int index,
						const struct tpf_recipe *r, const struct tpf_job *job)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	int gen = 0;
	if (sn)
		gen = sn->status == TPF_NODE_PENDING ? sn->generation
							    : sn->generation + max_restarts_of(sn) + 1;
	sn = tpf_state_add(st, name);
	xstrset(&sn->group, group);
	sn->index = index;
	sn->status = TPF_NODE_PENDING;
	xstrset(&sn->id, NULL);
	xstrset(&sn->delete_sent_at, NULL);
	xstrset(&sn->elastic_slices, NULL); /* a new generation runs on every slice */
	sn->generation = gen;
	tpf_recipe_copy(&sn->recipe, r);
	tpf_job_copy(&sn->job, job);
	tpf_state_node_set_workers(sn, 0);
	tpf_state_node_set_workers(sn, (size_t)r->workers);
	return sn;
}

void tpf_state_record_zone(struct tpf_state *st, const char *name, const char *zone)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	if (sn)
		xstrset(&sn->recipe.zone, zone);
}

void tpf_state_record_created(struct tpf_state *st, const char *name, const char *id,
			      const char *created_at)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	if (!sn)
		return;
	xstrset(&sn->id, id);
	sn->status = TPF_NODE_CREATED;
	xstrset(&sn->created_at, created_at);
	xstrset(&sn->refused, NULL); /* a zone took it */
	xstrset(&sn->retry_after, NULL);
	xstrset(&sn->delete_sent_at, NULL);
}

void tpf_state_record_not_created(struct tpf_state *st, const char *name, int may_exist,
				  int keep_history)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	if (!sn)
		return;
	if (may_exist) {
		sn->status = TPF_NODE_TAINTED;
		xstrset(&sn->refused, NULL); /* not a refusal: a node may exist */
		xstrset(&sn->retry_after, NULL);
	}
	else if (keep_history && sn->generation > 0)
		sn->status = TPF_NODE_PENDING;
	else
		tpf_state_remove(st, name);
}

void tpf_state_record_refused(struct tpf_state *st, const char *name, const char *why,
			      const char *retry_after)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	if (!sn)
		return;
	xstrset(&sn->refused, why);
	xstrset(&sn->retry_after, retry_after);
}

void tpf_state_record_completed(struct tpf_state *st, const char *name, const char *at)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	if (!sn)
		return;
	sn->status = TPF_NODE_COMPLETED;
	xstrset(&sn->id, NULL);
	xstrset(&sn->delete_sent_at, NULL); /* its delete is done */
	xstrset(&sn->completed_at, at);
	sn->exit_code = 0;
	for (size_t i = 0; i < sn->nworkers; i++) {
		sn->workers[i].job_state = TPF_JOB_STATE_EXITED;
		sn->workers[i].exit_code = 0;
	}
}

void tpf_state_record_preempted(struct tpf_state *st, const char *name)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	if (sn)
		sn->preemptions++;
}

void tpf_state_record_delete_sent(struct tpf_state *st, const char *name, const char *at)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	if (sn)
		xstrset(&sn->delete_sent_at, at);
}

void tpf_state_adopt_queued(struct tpf_recipe *recorded, const struct tpf_live_node *ln,
			    const struct tpf_recipe *declared)
{
	if (declared && ln && !ln->recipe.queued && !ln->queued_state)
		recorded->queued = declared->queued;
}

void tpf_state_node_new_id(struct tpf_state_node *sn, const char *id)
{
	if (sn->id && id && strcmp(sn->id, id)) {
		size_t n = sn->nworkers;
		tpf_state_node_set_workers(sn, 0);
		tpf_state_node_set_workers(sn, n);
	}
	xstrset(&sn->id, id);
}

struct tpf_state_node *tpf_state_record_live(struct tpf_state *st, const char *group, int index,
					     const struct tpf_live_node *ln,
					     const struct tpf_recipe *declared)
{
	struct tpf_state_node *sn = tpf_state_add(st, ln->name);
	xstrset(&sn->group, group);
	sn->index = index;
	xstrset(&sn->id, ln->id);
	sn->status = TPF_NODE_CREATED;
	xstrset(&sn->created_at, ln->create_time);
	sn->generation = 0;
	tpf_recipe_copy(&sn->recipe, &ln->recipe);
	tpf_state_adopt_queued(&sn->recipe, ln, declared);
	tpf_job_release(&sn->job);
	tpf_state_node_set_workers(sn, 0);
	tpf_state_node_set_workers(sn, (size_t)(ln->recipe.workers > 0 ? ln->recipe.workers : 1));
	return sn;
}

struct tpf_state_node *tpf_state_record_running(struct tpf_state *st, const char *name,
						const char *group, int index,
						const struct tpf_live_node *ln,
						const struct tpf_recipe *declared,
						const struct tpf_job *job)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	if (!sn) {
		sn = tpf_state_add(st, name);
		xstrset(&sn->group, group);
		sn->index = index;
		sn->generation = 0;
		tpf_recipe_copy(&sn->recipe, ln ? &ln->recipe : declared);
		tpf_state_adopt_queued(&sn->recipe, ln, declared);
		/* The node fields tpuform owns are the declared ones: an
		 * adopted node's own metadata and tags stay its own
		 * (plan/diff_node.c). */
		tpf_node_fields_copy(&sn->recipe.node, &declared->node);
		tpf_state_node_set_workers(sn, (size_t)declared->workers);
	}
	sn->status = TPF_NODE_CREATED;
	xstrset(&sn->delete_sent_at, NULL); /* found alive and kept */
	/* Same name, new id: the node was re-created outside tpuform. Its
	 * workers are new VMs: forget their pins and facts. */
	if (ln) {
		tpf_state_node_new_id(sn, ln->id);
		xstrset(&sn->created_at, ln->create_time);
	}
	if (sn->nworkers != (size_t)declared->workers)
		tpf_state_node_set_workers(sn, (size_t)declared->workers);
	tpf_job_copy(&sn->job, job);
	return sn;
}

void tpf_state_record_refreshed(struct tpf_state *st, const char *name, const char *id,
				const char *zone, const char *created_at)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	if (!sn)
		return;
	int same = sn->id == id || (sn->id && id && !strcmp(sn->id, id));
	if (!same) {
		size_t n = sn->nworkers;
		tpf_state_node_set_workers(sn, 0);
		tpf_state_node_set_workers(sn, n);
		xstrset(&sn->id, id);
		if (created_at)
			xstrset(&sn->created_at, created_at);
	}
	xstrset(&sn->recipe.zone, zone);
	sn->status = TPF_NODE_CREATED;
}

int tpf_state_record_worker(struct tpf_state *st, const char *name,
			    const struct tpf_state_worker *w)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	struct tpf_state_worker *to = tpf_state_node_worker(sn, w->index);
	if (!to)
		return 0;
	worker_copy(to, w);
	return 1;
}

void tpf_state_record_patched(struct tpf_state *st, const char *name,
			      const struct tpf_kvlist *labels, const struct tpf_node_fields *fields)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	if (!sn)
		return;
	if (labels)
		tpf_kvlist_copy(&sn->recipe.labels, labels);
	if (fields)
		tpf_node_fields_copy(&sn->recipe.node, fields);
}

void tpf_state_count_restart(struct tpf_state *st, const char *name, const int *workers,
			     size_t nworkers, int gang, const char *at)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	int unit = 0;
	for (size_t i = 0; sn && i < nworkers; i++) {
		const struct tpf_state_worker *sw = tpf_state_node_worker(sn, workers[i]);
		if (sw && sw->restarts > unit)
			unit = sw->restarts;
	}
	for (size_t i = 0; sn && i < nworkers; i++) {
		struct tpf_state_worker *sw = tpf_state_node_worker(sn, workers[i]);
		if (!sw)
			continue;
		sw->restarts = gang ? unit + 1 : sw->restarts + 1;
		xstrset(&sw->restarted_at, at);
	}
}

void tpf_state_record_bad_host(struct tpf_state *st, const char *name, int worker,
			       const char *why)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	if (!sn || (sn->status != TPF_NODE_CREATED && sn->status != TPF_NODE_BAD_HOST))
		return;
	const struct tpf_state_worker *sw = tpf_state_node_worker(sn, worker);
	int n = sw ? sw->preflight_failures : 0;
	char *b = xasprintf("zone %s, id %s: worker %d failed preflight %d time%s: %s",
			    sn->recipe.zone ? sn->recipe.zone : "?", sn->id ? sn->id : "?", worker, n,
			    n == 1 ? "" : "s", why ? why : "?");
	free(sn->bad_host);
	sn->bad_host = b;
	sn->status = TPF_NODE_BAD_HOST;
}

void tpf_state_stamp_restart(struct tpf_state *st, const char *name, const int *workers,
			     size_t nworkers, const char *at)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	for (size_t i = 0; sn && i < nworkers; i++) {
		struct tpf_state_worker *sw = tpf_state_node_worker(sn, workers[i]);
		if (sw)
			xstrset(&sw->restarted_at, at);
	}
}

/* The length of s cut to at most max bytes without splitting a UTF-8
 * sequence (continuation bytes are 10xxxxxx). */
static size_t utf8_cut(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n <= max)
		return n;
	n = max;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return n;
}

int tpf_state_checkpoint_differs(const struct tpf_state_node *sn, const char *ck)
{
	if (!sn || !ck || !*ck)
		return 0;
	size_t n = utf8_cut(ck, TPF_STATE_CHECKPOINT_MAX);
	return !sn->last_checkpoint || strlen(sn->last_checkpoint) != n ||
	       memcmp(sn->last_checkpoint, ck, n);
}

int tpf_state_record_checkpoint(struct tpf_state *st, const char *name, const char *ck,
				const char *at)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	if (!tpf_state_checkpoint_differs(sn, ck))
		return 0;
	size_t n = utf8_cut(ck, TPF_STATE_CHECKPOINT_MAX);
	free(sn->last_checkpoint);
	sn->last_checkpoint = xstrndup(ck, n);
	xstrset(&sn->checkpoint_at, at);
	return 1;
}

void tpf_state_record_elastic(struct tpf_state *st, const char *name, const char *running)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	if (sn)
		xstrset(&sn->elastic_slices, running);
}

/* 1 if slice k is in the list "0,2" (state.h elastic_slices). */
static int slice_listed(const char *list, int k)
{
	for (const char *s = list; s && *s;) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s)
			return 0;
		if (v == k)
			return 1;
		s = *end == ',' ? end + 1 : end;
	}
	return 0;
}

void tpf_state_record_slices_made(struct tpf_state *st, const char *name)
{
	struct tpf_state_node *sn = tpf_state_find(st, name);
	if (!sn)
		return;
	xstrset(&sn->refused, NULL); /* a zone took them */
	xstrset(&sn->retry_after, NULL);
	int per = tpf_recipe_slice_workers(&sn->recipe);
	for (size_t i = 0; sn->elastic_slices && i < sn->nworkers; i++) {
		struct tpf_state_worker *w = &sn->workers[i];
		if (slice_listed(sn->elastic_slices, w->index / per))
			continue;
		int index = w->index, restarts = w->restarts;
		tpf_state_worker_forget(w);
		w->index = index;
		w->restarts = restarts;
		w->exit_code = -1;
	}
}
