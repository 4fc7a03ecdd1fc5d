/*
 * The state in memory (nodes kept sorted by name). On disk: state_file.c;
 * saving goes through the backend (backend.c). The JSON mapping is in
 * state_json.c and state_tojson.c.
 */
#include "state/state_priv.h"
#include "util/hash.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

void tpf_state_init(struct tpf_state *st)
{
	char id[37];
	memset(st, 0, sizeof(*st));
	st->version = TPF_STATE_VERSION;
	tpf_uuid4(id);
	st->lineage = xstrdup(id);
	st->tpuform_version = xstrdup(TPF_VERSION);
}

void tpf_state_release(struct tpf_state *st)
{
	for (size_t i = 0; i < st->nnodes; i++)
		tpf_state_node_release(&st->nodes[i]);
	free(st->nodes);
	free(st->lineage);
	free(st->tpuform_version);
	free(st->fleet);
	free(st->proxy_jump_host);
	free(st->proxy_jump_host_key);
	free(st->last_json);
	tpf_state_doc_free(st->doc);
	memset(st, 0, sizeof(*st));
}

void tpf_state_worker_forget(struct tpf_state_worker *w)
{
	free(w->script_hash);
	free(w->session);
	free(w->address);
	free(w->host_key);
	free(w->provisioned_at);
	free(w->restarted_at);
	free(w->preflight_error);
	memset(w, 0, sizeof(*w));
}

void tpf_state_node_release(struct tpf_state_node *n)
{
	free(n->name);
	free(n->group);
	free(n->id);
	free(n->created_at);
	free(n->completed_at);
	free(n->bad_host);
	free(n->refused);
	free(n->retry_after);
	free(n->delete_sent_at);
	free(n->elastic_slices);
	free(n->last_checkpoint);
	free(n->checkpoint_at);
	tpf_recipe_release(&n->recipe);
	tpf_job_release(&n->job);
	for (size_t i = 0; i < n->nworkers; i++)
		tpf_state_worker_forget(&n->workers[i]);
	free(n->workers);
	memset(n, 0, sizeof(*n));
}

void tpf_state_node_set_workers(struct tpf_state_node *n, size_t nworkers)
{
	for (size_t i = nworkers; i < n->nworkers; i++)
		tpf_state_worker_forget(&n->workers[i]);
	if (nworkers != n->nworkers)
		n->workers = nworkers ? xrealloc(n->workers, nworkers * sizeof(*n->workers))
				      : (free(n->workers), NULL);
	for (size_t i = n->nworkers; i < nworkers; i++) {
		memset(&n->workers[i], 0, sizeof(n->workers[i]));
		n->workers[i].index = (int)i;
		n->workers[i].exit_code = -1;
	}
	n->nworkers = nworkers;
}

/* Position of name, or where it would be inserted (*found tells which). */
static size_t node_pos(const struct tpf_state *st, const char *name, int *found)
{
	size_t lo = 0, hi = st->nnodes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(st->nodes[mid].name, name);
		if (!c) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

struct tpf_state_node *tpf_state_find(struct tpf_state *st, const char *name)
{
	int found;
	size_t i = node_pos(st, name, &found);
	return found ? &st->nodes[i] : NULL;
}

struct tpf_state_node *tpf_state_add(struct tpf_state *st, const char *name)
{
	int found;
	size_t i = node_pos(st, name, &found);
	if (found)
		return &st->nodes[i];
	XGROW(st->nodes, st->nnodes + 1, st->alloc);
	memmove(&st->nodes[i + 1], &st->nodes[i], (st->nnodes - i) * sizeof(st->nodes[0]));
	st->nnodes++;
	struct tpf_state_node *n = &st->nodes[i];
	memset(n, 0, sizeof(*n));
	n->name = xstrdup(name);
	n->status = TPF_NODE_PENDING;
	n->exit_code = -1;
	return n;
}

int tpf_state_remove(struct tpf_state *st, const char *name)
{
	int found;
	size_t i = node_pos(st, name, &found);
	if (!found)
		return 0;
	tpf_state_node_release(&st->nodes[i]);
	memmove(&st->nodes[i], &st->nodes[i + 1], (st->nnodes - i - 1) * sizeof(st->nodes[0]));
	st->nnodes--;
	return 1;
}

void tpf_state_set_before_save(struct tpf_state *st, void (*fn)(struct tpf_state *st, void *ctx),
			       void *ctx)
{
	st->before_save = fn;
	st->before_save_ctx = ctx;
}

int tpf_state_node_check_worker(const struct tpf_state_node *n, int worker, struct tpf_diags *d)
{
	if (worker == -1 || tpf_worker_in_range(worker, n->nworkers))
		return 0;
	if (n->nworkers == 0)
		return tpf_errorx(d, n->name, "'tpuform plan' shows what apply would do about it.",
				  "node '%s' has no worker %d: it has no workers in the state", n->name,
				  worker);
	if (n->nworkers == 1)
		return tpf_errorx(d, n->name, "Leave -worker out, or use -worker 0.",
				  "node '%s' has no worker %d: it has 1 worker (0)", n->name, worker);
	return tpf_errorx(d, n->name, "'tpuform show' lists the workers of each node.",
			  "node '%s' has no worker %d: it has %zu workers (0 to %zu)", n->name, worker,
			  n->nworkers, n->nworkers - 1);
}

struct tpf_state_worker *tpf_state_node_worker(const struct tpf_state_node *n, int w)
{
	return n && tpf_worker_in_range(w, n->nworkers) ? &n->workers[w] : NULL;
}
