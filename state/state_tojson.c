/*
 * The state's JSON form, writing side: struct tpf_state -> jansson
 * (state_priv.h). The reading side, with its checks, is state_json.c;
 * the saved text is assembled from these values by state_doc.c.
 */
#include "state/state_priv.h"
#include "model/json_field.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* ---- to JSON ---------------------------------------------------------- */

/*
 * NULL strings are omitted (the file stays short and "absent" and "null"
 * mean the same on reading). A string that is not UTF-8 is kept unchecked
 * so that json_dumps fails and save reports it, instead of the value
 * silently vanishing from the state.
 */
static json_t *worker_to_json(const struct tpf_state_worker *w)
{
	json_t *o = json_object();
	json_object_set_new(o, "index", json_integer(w->index));
	tpf_json_set_str_kept(o, "script_hash", w->script_hash);
	tpf_json_set_str_kept(o, "session", w->session);
	tpf_json_set_str_kept(o, "status", tpf_job_state_recorded(w->job_state));
	json_object_set_new(o, "exit_code", json_integer(w->exit_code));
	json_object_set_new(o, "restarts", json_integer(w->restarts));
	tpf_json_set_str_kept(o, "address", w->address);
	tpf_json_set_str_kept(o, "host_key", w->host_key);
	tpf_json_set_str_kept(o, "provisioned_at", w->provisioned_at);
	tpf_json_set_str_kept(o, "restarted_at", w->restarted_at);
	if (w->preflight_failures > 0)
		json_object_set_new(o, "preflight_failures", json_integer(w->preflight_failures));
	tpf_json_set_str_kept(o, "preflight_error", w->preflight_error);
	return o;
}

json_t *tpf_state_node_to_json(const struct tpf_state_node *n)
{
	json_t *o = json_object();
	tpf_json_set_str_kept(o, "name", n->name);
	tpf_json_set_str_kept(o, "group", n->group);
	json_object_set_new(o, "index", json_integer(n->index));
	tpf_json_set_str_kept(o, "id", n->id);
	tpf_json_set_str_kept(o, "status", tpf_node_status_name(n->status));
	json_object_set_new(o, "generation", json_integer(n->generation));
	tpf_json_set_str_kept(o, "created_at", n->created_at);
	tpf_json_set_str_kept(o, "last_checkpoint", n->last_checkpoint);
	tpf_json_set_str_kept(o, "checkpoint_at", n->checkpoint_at);
	tpf_json_set_str_kept(o, "completed_at", n->completed_at);
	if (n->exit_code >= 0)
		json_object_set_new(o, "exit_code", json_integer(n->exit_code));
	tpf_json_set_str_kept(o, "bad_host", n->bad_host);
	if (n->preemptions > 0)
		json_object_set_new(o, "preemptions", json_integer(n->preemptions));
	tpf_json_set_str_kept(o, "refused", n->refused);
	tpf_json_set_str_kept(o, "retry_after", n->retry_after);
	tpf_json_set_str_kept(o, "delete_sent_at", n->delete_sent_at);
	tpf_json_set_str_kept(o, "elastic_slices", n->elastic_slices);
	json_object_set_new(o, "recipe", tpf_recipe_to_json(&n->recipe));
	json_object_set_new(o, "job", tpf_job_to_json(&n->job));
	json_t *ws = json_array();
	for (size_t i = 0; i < n->nworkers; i++)
		json_array_append_new(ws, worker_to_json(&n->workers[i]));
	json_object_set_new(o, "workers", ws);
	return o;
}

static int cmp_node_ptr(const void *a, const void *b)
{
	const struct tpf_state_node *x = *(const struct tpf_state_node *const *)a;
	const struct tpf_state_node *y = *(const struct tpf_state_node *const *)b;
	return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

const struct tpf_state_node **tpf_state_nodes_by_name(const struct tpf_state *st)
{
	/* add() keeps nodes sorted; sorting again here keeps the file
	 * diff-friendly even if a caller edited a name in place. */
	const struct tpf_state_node **order = xcalloc(st->nnodes ? st->nnodes : 1, sizeof(*order));
	for (size_t i = 0; i < st->nnodes; i++)
		order[i] = &st->nodes[i];
	if (st->nnodes > 1)
		qsort(order, st->nnodes, sizeof(*order), cmp_node_ptr);
	return order;
}

json_t *tpf_state_head_to_json(const struct tpf_state *st)
{
	json_t *root = json_object();
	json_object_set_new(root, "version", json_integer(st->version));
	tpf_json_set_str_kept(root, "lineage", st->lineage);
	tpf_json_set_str_kept(root, "fleet", st->fleet);
	tpf_json_set_str_kept(root, "proxy_jump_host", st->proxy_jump_host);
	tpf_json_set_str_kept(root, "proxy_jump_host_key", st->proxy_jump_host_key);
	return root;
}

json_t *tpf_state_to_json(const struct tpf_state *st)
{
	json_t *root = tpf_state_head_to_json(st);
	json_object_set_new(root, "serial", json_integer(st->serial));
	tpf_json_set_str_kept(root, "tpuform_version", st->tpuform_version);
	const struct tpf_state_node **order = tpf_state_nodes_by_name(st);
	json_t *nodes = json_array();
	for (size_t i = 0; i < st->nnodes; i++)
		json_array_append_new(nodes, tpf_state_node_to_json(order[i]));
	json_object_set_new(root, "nodes", nodes);
	free(order);
	return root;
}
