/*
 * The provider interface: where nodes live.
 *
 * Two implementations: providers/local (embedded; nodes are directories and
 * workers are screen sessions on this machine) and providers/gcp (Cloud TPU
 * v2 REST), one row each in the table of providers/registry/registry.c. Calls block until done and are thread-safe: engine/apply/apply.c runs
 * several at once from a thread pool (-parallelism).
 *
 * Contract mirrored: Cloud TPU v2 nodes (tests/fakegcp/tpu.v2.discovery.json):
 * states are the API's Node.state strings ("CREATING", "READY",
 * "PREEMPTED", "TERMINATED", ...), health is Node.health.
 */
#ifndef TPF_PROVIDER_H
#define TPF_PROVIDER_H

#include <stddef.h>
#include "config/config.h"
#include "model/live.h"
#include "util/diag.h"

struct tpf_provider;
struct tpf_transport;

/*
 * What a delete must find before it deletes (docs/design.md section 4,
 * "Ownership at delete time"): the lesson "ownership must mean this state,
 * not this name".
 */
struct tpf_delete_guard {
	/* This state's tpuform-lineage label value (model/recipe.h
	 * tpf_lineage_label, borrowed); NULL or "": a state without a lineage,
	 * which owns only unlabelled nodes of the recorded id. */
	const char *lineage;
	/* The provider id this state records for the node (Node.id of Cloud
	 * TPU, Instance.id or InstanceGroupManager.id of Compute Engine;
	 * borrowed), NULL when it records none. Used only for nodes that carry
	 * no lineage label (made before the label existed). */
	const char *id;
	/* The state's recipe of the node (how it was asked for; borrowed), or
	 * NULL. A provider whose refresh did not see the node learns from it
	 * which API and shape the node had, so that it finds every part that
	 * may remain (a Compute Engine slice whose MIG is gone but whose
	 * template or workload policy is left after a crash). */
	const struct tpf_recipe *recorded;
	/* Called (with ctx) each time tpf_delete_check lets a delete of what
	 * was just read go ahead, i.e. just before the delete request is sent
	 * (or, for a node already being deleted, waited for); NULL: nothing.
	 * The executor records the delete in the state there (state.h
	 * delete_sent_at), so a refused or needless delete records nothing. */
	void (*sending)(void *ctx);
	void *ctx;
};

struct tpf_provider_ops {
	const char *name; /* "local", "gcp" */

	/*
	 * Every node in the given zones that carries the label
	 * tpuform-fleet=<fleet name>, appended to out. Nodes of other fleets
	 * or without the label are never returned (so never touched).
	 * Returns 0, or an error with diagnostics (then out may be partial and
	 * callers must not act on absence). One node that exists but cannot
	 * be read (local: a corrupt node.json) is not a failed refresh: it is
	 * left out, with an error diagnostic naming it and its file and a
	 * hint, so that the other nodes can still be planned and destroyed.
	 */
	int (*refresh)(struct tpf_provider *p, const char *const *zones, size_t nzones,
		       struct tpf_live_set *out, struct tpf_diags *d);

	/*
	 * Create node `name` from the recipe (labels included) and wait until
	 * the create operation is done. On success fills *out (released by the
	 * caller) with the node as it then is. Errors: TPF_EQUOTA (quota;
	 * waiting will not help, try another zone), TPF_ECAPACITY (no capacity
	 * in that zone now), TPF_ERROR (anything else), each with a diagnostic
	 * that quotes the API's own message; TPF_EINTERRUPTED, without a
	 * diagnostic, when *interrupted became non-zero during the wait (the
	 * create request may have been sent: the node may exist and go on to
	 * READY, as an abandoned operation does).
	 */
	int (*create)(struct tpf_provider *p, const char *name, const struct tpf_recipe *r,
		      struct tpf_live_node *out, struct tpf_diags *d);

	/*
	 * Delete node `name` in `zone` and wait until it is gone. A node that
	 * is already gone is success. TPF_EINTERRUPTED (no diagnostic) as for
	 * create: the delete may still complete.
	 *
	 * Ownership at delete time (docs/design.md section 4): the provider
	 * reads the node (every resource it is made of: instance, MIG,
	 * template, workload policy, queued resource) just before deleting it
	 * and deletes only what tpf_delete_check allows for `guard`; a node
	 * that another state made under the same name since the refresh is
	 * TPF_EFOREIGN with a diagnostic naming its lineage, and is left as it
	 * is. Neither API offers a precondition on delete (no etag or id on
	 * nodes.delete or instances.delete), so a read then a delete is the
	 * check; its window is one request long. guard NULL: no check (unit
	 * tests of the providers only; engine/apply/apply.c always passes one).
	 */
	int (*remove)(struct tpf_provider *p, const char *zone, const char *name,
		      const struct tpf_delete_guard *guard, struct tpf_diags *d);

	/* Replace the node's labels (nodes.patch updateMask=labels). */
	int (*set_labels)(struct tpf_provider *p, const char *zone, const char *name,
			  const struct tpf_kvlist *labels, struct tpf_diags *d);

	/*
	 * Update in place, in one request, what nodes.patch can change
	 * (`fields`: TPF_PATCH_* bits, model/node_fields.h) to r's values:
	 * labels, tags, metadata, networkConfig.enableExternalIps. The gcp
	 * provider keeps tpuform's ssh-keys entry in the metadata it sends.
	 * NULL: the provider only has set_labels.
	 */
	int (*patch)(struct tpf_provider *p, const char *zone, const char *name,
		     const struct tpf_recipe *r, unsigned fields, struct tpf_diags *d);
	/*
	 * Node `name` in `zone` as it is, whatever its labels, into *out
	 * (released by the caller): nodes.get. For `tpuform import` only,
	 * which names the one unlabelled node it may look at; nothing else
	 * reads nodes without the fleet's label. Changes nothing.
	 * TPF_ENOTFOUND, without a diagnostic, when there is no such node in
	 * that zone. NULL: the provider cannot import.
	 */
	int (*get)(struct tpf_provider *p, const char *zone, const char *name,
		   struct tpf_live_node *out, struct tpf_diags *d);

	/*
	 * The state the provider is run with records a node made with recipe
	 * r (called once per state node, after open and before the first
	 * refresh; r borrowed for the call): the gcp provider then keeps
	 * listing that node's API even when the fleet file no longer names
	 * it, so a node moved to the other API is seen and deleted, never
	 * leaked. NULL: the provider has nothing to learn from the state.
	 */
	void (*recorded)(struct tpf_provider *p, const struct tpf_recipe *r);
	/* The transport that reaches this provider's workers (borrowed). */
	struct tpf_transport *(*transport)(struct tpf_provider *p);
	/*
	 * Learn what provider `from` (borrowed, only read; opened for the same
	 * fleet, and refreshed) read of the fleet's nodes, so that p's
	 * transport reaches their workers without reading each node again
	 * (gcp: no nodes.get or instances.get per node, only the lists'
	 * answers; providers/gcp/gcp_access.h). A provider of another kind is
	 * ignored. NULL: the provider's transport reads nothing per node.
	 */
	void (*learn_from)(struct tpf_provider *p, struct tpf_provider *from);

	void (*free)(struct tpf_provider *p);
};

struct tpf_provider {
	const struct tpf_provider_ops *ops;
	const struct tpf_fleet *fleet; /* borrowed; outlives the provider */
	void *impl;
	/*
	 * "Stop waiting": a flag a signal handler sets (borrowed; NULL: never).
	 * Set by the engine (engine/apply/apply.c, from tpf_apply_opts.interrupted)
	 * before its first create or remove, and never changed afterwards
	 * while calls run. create and remove check *interrupted at least every
	 * 0.2 s while they wait for an operation, and then return
	 * TPF_EINTERRUPTED; requests already sent are not undone.
	 */
	volatile int *interrupted;
};

/*
 * May the resource just read be deleted under guard g? `kind` and `name`
 * name it for people ("node", "instance", "slice", "instance template"),
 * `zone` may be NULL (a global or regional part); `found_lineage` is its
 * tpuform-lineage label (or the lineage its description records), NULL or
 * "" when it has none; `found_id` its provider id, may be NULL.
 *   - g NULL: 0 (no check asked).
 *   - a lineage label: 0 when it is g's, else TPF_EFOREIGN.
 *   - no lineage label: 0 only when g->id is set and equals found_id (a
 *     node made before the label existed, and the very one this state
 *     recorded); else TPF_EFOREIGN: a name alone never proves ownership.
 * TPF_EFOREIGN comes with one error diagnostic (address `name`) that
 * names the owning lineage, this state's, and the fix. Pure.
 */
int tpf_delete_check(const struct tpf_delete_guard *g, const char *kind, const char *name,
		     const char *zone, const char *found_lineage, const char *found_id,
		     struct tpf_diags *d);

/* tpf_delete_check of a node or instance as just read: its
 * tpuform-lineage label and its id. */
int tpf_delete_check_live(const struct tpf_delete_guard *g, const char *kind, const char *name,
			  const char *zone, const struct tpf_live_node *ln, struct tpf_diags *d);

/* 1 when p's interrupt flag is set (a signal asked to stop waiting). */
int tpf_provider_interrupted(const struct tpf_provider *p);

/*
 * One row of the table of providers (providers/registry/registry.c), in
 * the manner of curl's table of protocol handlers: the fleet file's
 * provider kind, its name for messages, and the function that opens it
 * (filling *out, which the caller frees with tpf_provider_free; 0 or an
 * error with a diagnostic).
 */
struct tpf_provider_row {
	enum tpf_provider_kind kind;
	const char *name;
	int (*open)(struct tpf_provider **out, const struct tpf_fleet *f, struct tpf_diags *d);
};

/*
 * Open the provider the fleet declares through `rows` (n of them; the
 * registry passes its table): warns when ssh.private_key is readable by
 * others, then calls the row of f->provider. A fleet with no provider, or
 * one without a row, is TPF_ERROR with a diagnostic naming what exists.
 * *out: caller frees with tpf_provider_free. Product code calls
 * tpf_provider_open (providers/registry/registry.h).
 */
int tpf_provider_open_from(const struct tpf_provider_row *rows, size_t n,
			   struct tpf_provider **out, const struct tpf_fleet *f, struct tpf_diags *d);
/* p->ops->recorded(p, r) when the provider has it (see there). */
void tpf_provider_recorded(struct tpf_provider *p, const struct tpf_recipe *r);
void tpf_provider_free(struct tpf_provider *p);

#endif
