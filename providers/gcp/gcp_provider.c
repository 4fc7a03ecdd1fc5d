#include "providers/gcp/gcp.h"
#include "providers/gcp/compute/compute_engine.h"
#include "providers/gcp/gcp_access.h"
#include "providers/gcp/tpu/gcp_api.h"
#include "providers/gcp/tpu/gcp_node.h"
#include "providers/gcp/tpu/gcp_qr.h"
#include "providers/provider.h"
#include "providers/ssh/ssh.h"
#include "util/strindex.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* What a refresh learnt of a node's queued resource: `qr` is its id, or
 * NULL when the node is known to have none. */
struct qr_fact {
	char *zone, *node, *qr;
	int compute; /* a Compute Engine instance (issue 18), not a Cloud TPU node */
	int slice;   /* compute: a multi-host slice (a MIG, compute_mig.c) */
	int nslices; /* compute: a multislice node's slices (compute_multislice.c), else 0 */
};

/* The client, the SSH transport to the workers (made at open) and the
 * access layer around it (gcp_access.h).
 * facts and qr_zones (zones whose queued resources were listed) let
 * remove() pick queuedResources.delete or nodes.delete without asking. */
struct gcp_impl {
	struct tpf_gcp_client *client;
	struct tpf_compute_client *compute; /* Compute Engine, over the same client */
	struct tpf_transport *transport;
	struct tpf_gcp_access *access;
	pthread_mutex_t mu;
	struct qr_fact *facts;
	size_t nfacts, afacts;
	struct tpf_strindex facts_by_node; /* node name -> its first fact */
	char **qr_zones;
	size_t nqr_zones, aqr_zones;
};

/* Call with g->mu held. */
static struct qr_fact *fact_find(struct gcp_impl *g, const char *zone, const char *node)
{
	size_t i;
	/* The index holds each node name's first fact; the same name in
	 * another zone (rare) is found by the scan. */
	if (!tpf_strindex_get(&g->facts_by_node, node, &i))
		return NULL;
	if (!strcmp(g->facts[i].zone, zone))
		return &g->facts[i];
	for (i = 0; i < g->nfacts; i++)
		if (!strcmp(g->facts[i].zone, zone) && !strcmp(g->facts[i].node, node))
			return &g->facts[i];
	return NULL;
}

/* Call with g->mu held. */
static void fact_set(struct gcp_impl *g, const char *zone, const char *node, const char *qr)
{
	struct qr_fact *f = fact_find(g, zone, node);
	if (!f) {
		XGROW(g->facts, g->nfacts + 1, g->afacts);
		f = &g->facts[g->nfacts++];
		f->zone = xstrdup(zone);
		f->node = xstrdup(node);
		tpf_strindex_put(&g->facts_by_node, f->node, g->nfacts - 1);
		f->qr = NULL;
		f->compute = 0;
		f->slice = 0;
		f->nslices = 0;
	}
	xstrset(&f->qr, qr);
}

/* Call with g->mu held: node is (1) or is not (0) a Compute Engine instance. */
static void fact_set_compute(struct gcp_impl *g, const char *zone, const char *node, int compute,
			     int slice)
{
	fact_set(g, zone, node, NULL);
	fact_find(g, zone, node)->compute = compute;
	fact_find(g, zone, node)->slice = slice;
}

/*
 * Compute Engine instances are listed when the fleet file speaks of
 * Compute Engine at all: a group on it, or provider.gcp.api set (either
 * way: `api: tpu` keeps listing so that the instances of groups moved back
 * to the Cloud TPU API are still seen and deleted), or the state records a
 * Compute Engine node (config.h state_has_compute: a group moved back
 * without `api: tpu` must not leak its instances). A fleet that never
 * names it, with a state that records none, sends no Compute request: its
 * project need not enable the API.
 */
static int fleet_uses_compute(const struct tpf_fleet *f)
{
	if (f->gcp.api_given || f->gcp.state_has_compute)
		return 1;
	for (size_t i = 0; i < f->ngroups; i++)
		if (f->groups[i].compute.api == TPF_API_COMPUTE)
			return 1;
	return 0;
}

/*
 * Cloud TPU API nodes are listed unless the fleet is all on Compute
 * Engine: a group on the Cloud TPU API, provider.gcp.api set (either way,
 * as above), or a state that records a Cloud TPU API node (a group moved
 * to Compute Engine: its old nodes must be seen to be deleted). A fleet
 * all on Compute Engine with a state that records none sends no Cloud TPU
 * request: its project need not enable tpu.googleapis.com, and its
 * refresh is the Compute Engine lists alone.
 */
static int fleet_uses_tpu(const struct tpf_fleet *f)
{
	if (f->gcp.api_given || f->gcp.state_has_tpu || f->ngroups == 0)
		return 1;
	for (size_t i = 0; i < f->ngroups; i++)
		if (f->groups[i].compute.api != TPF_API_COMPUTE)
			return 1;
	return 0;
}

/* The group of node `name` in the fleet file (names are
 * FLEET-GROUP-INDEX), or NULL. */
static const struct tpf_group *group_by_name(const struct tpf_fleet *f, const char *name)
{
	size_t fl = strlen(f->name);
	if (strncmp(name, f->name, fl) || name[fl] != '-')
		return NULL;
	for (size_t i = 0; i < f->ngroups; i++) {
		size_t gl = strlen(f->groups[i].name);
		if (!strncmp(name + fl + 1, f->groups[i].name, gl) && name[fl + 1 + gl] == '-' &&
		    strspn(name + fl + 2 + gl, "0123456789") == strlen(name + fl + 2 + gl))
			return &f->groups[i];
	}
	return NULL;
}

/* The API of node `name` by its group, for a node no refresh has seen. */
static enum tpf_api api_by_name(const struct tpf_fleet *f, const char *name)
{
	const struct tpf_group *g = group_by_name(f, name);
	return g ? g->compute.api : TPF_API_TPU;
}

/* What a Compute Engine node is known to be. */
enum compute_shape { SHAPE_UNKNOWN, SHAPE_SINGLE, SHAPE_SLICE };

/* Is node `name` in `zone` on Compute Engine? What the last refresh or
 * create saw, else the state's record `rec` (NULL: none), else its group's
 * API. *shape (optional): one instance, a slice, or not known. */
static int is_compute(struct tpf_provider *p, const char *zone, const char *name,
		      enum compute_shape *shape, const struct tpf_recipe *rec)
{
	struct gcp_impl *g = p->impl;
	pthread_mutex_lock(&g->mu);
	struct qr_fact *f = fact_find(g, zone, name);
	int known = f != NULL, compute = f && f->compute;
	if (shape)
		*shape = !compute ? SHAPE_UNKNOWN : f->slice ? SHAPE_SLICE : SHAPE_SINGLE;
	pthread_mutex_unlock(&g->mu);
	return known ? compute : (rec ? rec->compute.api : api_by_name(p->fleet, name)) ==
					 TPF_API_COMPUTE;
}

/* The slices of Compute Engine node `name` in `zone`: what the last
 * refresh or create saw (0: not a multislice node), else rec's, its group's. */
static int compute_slices(struct tpf_provider *p, const char *zone, const char *name,
			  const struct tpf_recipe *rec)
{
	struct gcp_impl *g = p->impl;
	pthread_mutex_lock(&g->mu);
	struct qr_fact *f = fact_find(g, zone, name);
	int n = f && f->compute ? f->nslices : -1;
	pthread_mutex_unlock(&g->mu);
	if (n >= 0 || rec)
		return n >= 0 ? n : tpf_recipe_slices(rec) > 1 ? rec->slices : 0;
	const struct tpf_group *gr = group_by_name(p->fleet, name);
	return gr && gr->compute.api == TPF_API_COMPUTE && gr->slices > 1 ? gr->slices : 0;
}

static int fleet_has_queued(const struct tpf_fleet *f)
{
	for (size_t i = 0; i < f->ngroups; i++)
		if (f->groups[i].queued)
			return 1;
	return 0;
}

static struct tpf_gcp_client *client_of(struct tpf_provider *p)
{
	return ((struct gcp_impl *)p->impl)->client;
}

/* Zones are listed in parallel, each into its own set and diagnostics,
 * merged in zone order afterwards so output does not depend on timing. */
struct zone_job {
	struct tpf_gcp_client *c;
	struct tpf_compute_client *cc; /* also list Compute Engine instances; NULL: not */
	int tpu;                  /* list Cloud TPU API nodes (fleet_uses_tpu) */
	const char *zone, *fleet;
	int queued;               /* also list queued resources */
	struct tpf_live_set set;
	size_t ntpu;              /* set.nodes[0 .. ntpu) are Cloud TPU nodes, the rest compute */
	size_t nsingle;           /* set.nodes[ntpu .. nsingle) instances, the rest slices */
	json_t *migs;             /* the fleet's MIGs of this zone (borrowed), NULL: none */
	json_t *preempted;        /* tpf_compute_list_preempted's (borrowed), NULL: none */
	struct tpf_live_set members; /* compute: the slices' members listed */
	struct tpf_gcp_qr *qrs;
	size_t nqrs;
	struct tpf_diags diags;
	int rc;
};

/* The slices of one multislice node found in a zone's MIGs
 * (compute_multislice.c), gathered before they are merged into it. */
struct unit_acc {
	char *name;
	int n;
	struct tpf_live_node *sl;  /* by slice index; name NULL: not found */
	struct tpf_live_set *mem;  /* each slice's members, sorted */
};

static struct unit_acc *unit_get(struct unit_acc **u, size_t *nu, size_t *au, const char *name,
				 int n)
{
	for (size_t i = 0; i < *nu; i++)
		if (!strcmp((*u)[i].name, name) && (*u)[i].n == n)
			return &(*u)[i];
	XGROW(*u, *nu + 1, *au);
	struct unit_acc *a = &(*u)[(*nu)++];
	a->name = xstrdup(name);
	a->n = n;
	a->sl = xcalloc((size_t)n, sizeof(*a->sl));
	a->mem = xcalloc((size_t)n, sizeof(*a->mem));
	return a;
}

/* Each gathered multislice node, merged, into the zone's set; the access
 * layer learns its members in worker order (for their host keys). */
static void add_units(struct zone_job *j, struct unit_acc *u, size_t nu)
{
	for (size_t i = 0; i < nu; i++) {
		struct tpf_live_node n = { 0 };
		struct tpf_live_set all = { 0 };
		for (int k = 0; k < u[i].n; k++) {
			for (size_t m = 0; m < u[i].mem[k].n; m++)
				tpf_live_node_copy(tpf_live_set_add(&all), &u[i].mem[k].nodes[m]);
			tpf_live_set_release(&u[i].mem[k]);
		}
		if (tpf_compute_unit_merge(u[i].name, u[i].sl, u[i].n, &n) == 0) {
			tpf_compute_seen_slice(j->cc, j->zone, n.name, n.id, all.nodes, all.n);
			*tpf_live_set_add(&j->set) = n; /* moved */
		}
		for (int k = 0; k < u[i].n; k++)
			tpf_live_node_release(&u[i].sl[k]);
		tpf_live_set_release(&all);
		free(u[i].sl);
		free(u[i].mem);
		free(u[i].name);
	}
	free(u);
}

static void add_slices(struct zone_job *j, struct tpf_live_set *members)
{
	size_t i, nu = 0, au = 0;
	struct unit_acc *units = NULL;
	json_t *mig;
	json_array_foreach(j->migs, i, mig) {
		const char *name = json_string_value(json_object_get(mig, "name"));
		struct tpf_live_set mine = { 0 };
		for (size_t k = 0; name && k < members->n; k++) {
			const char *s = tpf_kvlist_get(&members->nodes[k].recipe.labels,
						       TPF_COMPUTE_SLICE_LABEL);
			if (s && !strcmp(s, name))
				tpf_live_node_copy(tpf_live_set_add(&mine), &members->nodes[k]);
		}
		struct tpf_live_node n = { 0 };
		if (tpf_compute_slice_parse(mig, j->zone, mine.nodes, mine.n, &n) == 0) {
			/* a member gone (termination action DELETE) by preemption */
			if (!strcmp(n.state, "TERMINATED") && mine.n < (size_t)n.recipe.workers &&
			    tpf_compute_member_preempted(j->preempted, j->zone, name, n.create_time))
				xstrset(&n.state, "PREEMPTED");
			char *unit = NULL;
			int k = 0, ns = 0;
			if (tpf_compute_mig_unit(mig, &unit, &k, &ns)) { /* one slice of several */
				struct unit_acc *a = unit_get(&units, &nu, &au, unit, ns);
				tpf_live_node_release(&a->sl[k]);
				a->sl[k] = n;   /* moved */
				tpf_live_set_release(&a->mem[k]);
				a->mem[k] = mine; /* moved: sorted by the parse */
				memset(&mine, 0, sizeof(mine));
				free(unit);
			} else {
				tpf_compute_seen_slice(j->cc, j->zone, name, n.id, mine.nodes, mine.n);
				*tpf_live_set_add(&j->set) = n; /* moved */
			}
		}
		tpf_live_set_release(&mine);
	}
	add_units(j, units, nu);
}

static void *zone_worker(void *arg)
{
	struct zone_job *j = arg;
	j->rc = j->tpu ? tpf_gcp_list_nodes(j->c, j->zone, j->fleet, &j->set, &j->diags) : 0;
	if (j->rc == 0 && j->queued) {
		j->rc = tpf_gcp_list_qrs(j->c, j->zone, j->fleet, &j->qrs, &j->nqrs, &j->diags);
		if (j->rc == 0)
			tpf_gcp_qr_merge(&j->set, j->qrs, j->nqrs);
	}
	j->ntpu = j->set.n;
	j->nsingle = j->set.n;
	/* Preemptions are marked and slices made from members once the
	 * aggregated lists, walked meanwhile, are in (compute_finish). */
	if (j->rc == 0 && j->cc)
		j->rc = tpf_compute_list(j->cc, j->zone, j->fleet, NULL, &j->set, &j->members,
					 &j->diags);
	return NULL;
}

/* The aggregated lists of a refresh (compute_lists), walked on a thread of
 * their own while the zones are listed. */
struct agg_job {
	struct tpf_compute_client *cc;
	const char *fleet;
	json_t *migs, *preempted;
	struct tpf_live_set ids; /* only its preempted ids are used */
	struct tpf_diags diags;
	int rc;
};

static int compute_lists(struct tpf_compute_client *cc, const char *fleet, json_t **migs,
			 json_t **preempted, struct tpf_live_set *out, struct tpf_diags *d);

static void *agg_worker(void *arg)
{
	struct agg_job *a = arg;
	a->rc = compute_lists(a->cc, a->fleet, &a->migs, &a->preempted, &a->ids, &a->diags);
	return NULL;
}

/* A zone's Compute Engine nodes, once the aggregated lists are in: lost
 * instances a preemption names are PREEMPTED, and each MIG with its
 * members becomes a slice node. */
static void compute_finish(struct zone_job *j, const struct agg_job *a)
{
	j->migs = json_object_get(a->migs, j->zone);
	j->preempted = a->preempted;
	for (size_t k = j->ntpu; k < j->set.n; k++)
		tpf_compute_mark_preempted(&j->set.nodes[k], a->preempted);
	for (size_t k = 0; k < j->members.n; k++)
		tpf_compute_mark_preempted(&j->members.nodes[k], a->preempted);
	j->nsingle = j->set.n;
	add_slices(j, &j->members);
}

/* Remember, for remove(), which nodes of a zone have a queued resource. */
static void learn(struct gcp_impl *g, const struct zone_job *j)
{
	if (j->rc < 0)
		return;
	pthread_mutex_lock(&g->mu);
	for (size_t k = 0; k < j->set.n; k++) {
		const struct tpf_live_node *n = &j->set.nodes[k];
		/* Ours are named after their node (gcp_qr.h). */
		fact_set(g, j->zone, n->name, n->recipe.queued ? n->name : NULL);
		fact_find(g, j->zone, n->name)->compute = k >= j->ntpu;
		fact_find(g, j->zone, n->name)->slice = k >= j->nsingle;
		fact_find(g, j->zone, n->name)->nslices = k >= j->nsingle ? n->recipe.slices : 0;
	}
	for (size_t k = 0; k < j->nqrs; k++)
		fact_set(g, j->zone, j->qrs[k].node_id, j->qrs[k].id);
	if (j->queued) {
		int seen = 0;
		for (size_t k = 0; k < g->nqr_zones && !seen; k++)
			seen = !strcmp(g->qr_zones[k], j->zone);
		if (!seen) {
			XGROW(g->qr_zones, g->nqr_zones + 1, g->aqr_zones);
			g->qr_zones[g->nqr_zones++] = xstrdup(j->zone);
		}
	}
	pthread_mutex_unlock(&g->mu);
}

#define REFRESH_PARALLEL 8

/*
 * What Compute Engine lists for every zone at once: the fleet's MIGs
 * (*migs: zone -> [MIG]) and the preemptions (*preempted, NULL when they
 * could not be read: a warning, and losses are then not called
 * preemptions), each one aggregated walk; the preempted instances' ids go
 * to out (model/live.h), so the plan can say why a node is gone.
 */
static int compute_lists(struct tpf_compute_client *cc, const char *fleet, json_t **migs,
			 json_t **preempted, struct tpf_live_set *out, struct tpf_diags *d)
{
	int rc = tpf_compute_list_migs(cc, fleet, migs, d);
	if (rc < 0)
		return rc;
	struct tpf_diags why = TPF_DIAGS_INIT;
	if (tpf_compute_list_preempted(cc, preempted, &why) < 0)
		tpf_warn(d, NULL, "%s; a lost Compute Engine VM is not called preempted this time",
			 why.n ? why.items[0].summary : "the preemptions could not be listed");
	tpf_diags_release(&why);
	const char *k;
	json_t *v;
	json_object_foreach(*preempted, k, v)
		if (!strncmp(k, "id:", 3))
			tpf_live_set_add_preempted(out, k + 3);
	return 0;
}

static int gcp_refresh(struct tpf_provider *p, const char *const *zones, size_t nzones,
		       struct tpf_live_set *out, struct tpf_diags *d)
{
	int rc = 0;
	struct zone_job *jobs = xcalloc(nzones ? nzones : 1, sizeof(*jobs));
	pthread_t th[REFRESH_PARALLEL];
	int queued = fleet_has_queued(p->fleet);
	struct tpf_compute_client *cc = fleet_uses_compute(p->fleet)
						? ((struct gcp_impl *)p->impl)->compute : NULL;
	struct agg_job agg = { .cc = cc, .fleet = p->fleet->name };
	pthread_t agg_th;
	int agg_started = 0;
	tpf_diags_init(&agg.diags);
	if (cc)
		agg_started = !pthread_create(&agg_th, NULL, agg_worker, &agg);
	for (size_t i = 0; i < nzones; i++) {
		jobs[i].c = client_of(p);
		jobs[i].cc = cc;
		jobs[i].tpu = fleet_uses_tpu(p->fleet);
		jobs[i].zone = zones[i];
		jobs[i].fleet = p->fleet->name;
		jobs[i].queued = queued;
		tpf_diags_init(&jobs[i].diags);
	}
	for (size_t base = 0; base < nzones; base += REFRESH_PARALLEL) {
		size_t n = nzones - base < REFRESH_PARALLEL ? nzones - base : REFRESH_PARALLEL;
		int started[REFRESH_PARALLEL] = { 0 };
		// cppcheck-suppress knownConditionTrueFalse ; false positive: n >= 1 since base < nzones
		for (size_t k = 0; k < n; k++)
			started[k] = !pthread_create(&th[k], NULL, zone_worker, &jobs[base + k]);
		// cppcheck-suppress knownConditionTrueFalse ; false positive, as above
		for (size_t k = 0; k < n; k++) {
			if (started[k])
				pthread_join(th[k], NULL);
			else
				zone_worker(&jobs[base + k]); /* no thread: do it here */
		}
	}
	if (agg_started)
		pthread_join(agg_th, NULL);
	else if (cc)
		agg_worker(&agg);
	rc = agg.rc;
	tpf_diags_move(d, &agg.diags);
	for (size_t k = 0; k < agg.ids.npreempted; k++)
		tpf_live_set_add_preempted(out, agg.ids.preempted_ids[k]);
	for (size_t i = 0; i < nzones; i++) {
		struct zone_job *j = &jobs[i];
		if (cc && j->rc == 0 && rc == 0)
			compute_finish(j, &agg);
		tpf_live_set_release(&j->members);
		if (j->rc < 0 && rc == 0)
			rc = j->rc;
		learn(p->impl, j);
		for (size_t k = 0; k < j->nqrs; k++)
			tpf_gcp_qr_release(&j->qrs[k]);
		free(j->qrs);
		for (size_t k = 0; k < j->set.n; k++) {
			struct tpf_live_node *n = tpf_live_set_add(out);
			*n = j->set.nodes[k]; /* move */
			memset(&j->set.nodes[k], 0, sizeof(j->set.nodes[k]));
		}
		for (size_t k = 0; k < j->set.nunlisted; k++)
			tpf_live_set_add_unlisted(out, j->set.unlisted_zones[k]);
		tpf_live_set_release(&j->set);
		tpf_diags_move(d, &j->diags);
		tpf_diags_release(&j->diags);
		pthread_mutex_destroy(&j->diags.mu);
	}
	json_decref(agg.migs);
	json_decref(agg.preempted);
	tpf_live_set_release(&agg.ids);
	tpf_diags_release(&agg.diags);
	pthread_mutex_destroy(&agg.diags.mu);
	free(jobs);
	return rc;
}

/*
 * A Compute Engine node: one instance, or for a multi-host topology a
 * slice (template, workload policy, MIG). A slice whose create fails has
 * its parts deleted again, so that the next zone can take the same names
 * (the template is global); the create's diagnostic stays the reason.
 */
/*
 * A multislice node (compute_multislice.c) made or completed in r->zone.
 * Its slices live in one zone: if a refresh saw it in another (the zone
 * fallback moved on, or the group's zones changed), the slices there are
 * deleted first, so none is left behind.
 */
static int unit_create(struct gcp_impl *g, const char *name, const struct tpf_recipe *r,
		       json_t *md, struct tpf_live_node *out, struct tpf_diags *d)
{
	int rc = 0;
	char **elsewhere = NULL;
	size_t n = 0, a = 0;
	pthread_mutex_lock(&g->mu);
	for (size_t i = 0; i < g->nfacts; i++)
		if (g->facts[i].compute && g->facts[i].nslices > 1 &&
		    !strcmp(g->facts[i].node, name) && strcmp(g->facts[i].zone, r->zone)) {
			XGROW(elsewhere, n + 1, a);
			elsewhere[n++] = xstrdup(g->facts[i].zone);
		}
	pthread_mutex_unlock(&g->mu);
	/* Only this state's slices go (r carries its lineage). */
	struct tpf_delete_guard guard = { .lineage = tpf_kvlist_get(&r->labels, TPF_LABEL_LINEAGE) };
	for (size_t i = 0; i < n; i++) {
		if (rc == 0)
			rc = tpf_compute_delete_unit(g->compute, elsewhere[i], name,
						     tpf_recipe_slices(r), &guard, d);
		if (rc == 0) {
			pthread_mutex_lock(&g->mu);
			fact_set_compute(g, elsewhere[i], name, 0, 0);
			pthread_mutex_unlock(&g->mu);
		}
		free(elsewhere[i]);
	}
	free(elsewhere);
	return rc ? rc : tpf_compute_create_unit(g->compute, name, r, md, out, d);
}

static int compute_create(struct gcp_impl *g, const char *name, const struct tpf_recipe *r,
			  json_t *md, struct tpf_live_node *out, struct tpf_diags *d)
{
	int slice = r->workers > 1 || tpf_recipe_slices(r) > 1, rc;
	if (r->zone && tpf_recipe_slices(r) > 1)
		rc = unit_create(g, name, r, md, out, d);
	if (r->zone) {
		pthread_mutex_lock(&g->mu);
		fact_set_compute(g, r->zone, name, 1, slice);
		fact_find(g, r->zone, name)->nslices = tpf_recipe_slices(r) > 1 ? r->slices : 0;
		pthread_mutex_unlock(&g->mu);
	}
	if (r->zone && tpf_recipe_slices(r) > 1)
		return rc;
	if (!slice)
		return tpf_compute_create(g->compute, name, r, md, out, d);
	unsigned ours = 0;
	rc = tpf_compute_create_slice(g->compute, name, r, md, &ours, d);
	if (rc == 0)
		rc = tpf_compute_wait_slice(g->compute, name, r, out, d);
	if (rc < 0 && rc != TPF_EINTERRUPTED && r->zone) {
		/* The undo deletes the parts this create made or proved ours
		 * (so that the next zone can take the names: the template is
		 * global), and never one it refused as another state's
		 * (docs/compute-engine.md "Undo and ownership of a slice's
		 * parts"); each is read again before its delete. */
		struct tpf_delete_guard guard = { .lineage = tpf_kvlist_get(&r->labels,
									    TPF_LABEL_LINEAGE) };
		struct tpf_diags undo = TPF_DIAGS_INIT;
		if (ours && tpf_compute_delete_slice(g->compute, r->zone, name, ours, &guard,
						     &undo) < 0)
			tpf_diags_move(d, &undo); /* what is left behind, and why */
		tpf_diags_release(&undo);
	}
	return rc;
}

/* A node gets the SSH key in its metadata from the start (gcp_access.h);
 * without a key nothing is created: tpuform could not log in to it. */
static int gcp_create(struct tpf_provider *p, const char *name, const struct tpf_recipe *r,
		      struct tpf_live_node *out, struct tpf_diags *d)
{
	struct gcp_impl *g = p->impl;
	json_t *md = NULL, *declared = tpf_gcp_declared_metadata(r);
	/* The declared metadata, its ssh-keys merged with tpuform's key. */
	int mrc = tpf_gcp_access_create_metadata(g->access, declared, &md, d);
	json_decref(declared);
	if (mrc < 0) {
		tpf_errorx(d, name, NULL, "node '%s' was not created: its workers could not be "
			   "reached without an SSH key", name);
		return TPF_ERROR;
	}
	if (r->compute.api == TPF_API_COMPUTE) {
		int rc = compute_create(g, name, r, md, out, d);
		json_decref(md);
		return rc;
	}
	if (!r->queued) {
		int rc = tpf_gcp_create_node(client_of(p), name, r, md, out, d);
		json_decref(md);
		return rc;
	}
	int rc = tpf_gcp_create_qr(client_of(p), name, r, md, out, d);
	json_decref(md);
	if (r->zone) {
		/* Its queued resource exists unless the request failed (then
		 * tpf_gcp_create_qr deleted it); either way remove() knows. */
		pthread_mutex_lock(&g->mu);
		fact_set(g, r->zone, name, rc == 0 || rc == TPF_EINTERRUPTED ? name : NULL);
		pthread_mutex_unlock(&g->mu);
	}
	return rc;
}

/* A Compute Engine node: a slice, or a node not known to be either:
 * every part it may have (a crash between a slice's steps leaks nothing);
 * every slice of a multislice node. Each part is read before its delete
 * and checked against the guard (compute.h). */
static int compute_remove(struct tpf_provider *p, const char *zone, const char *name,
			  const struct tpf_delete_guard *guard, struct tpf_diags *d)
{
	struct gcp_impl *g = p->impl;
	enum compute_shape shape = SHAPE_UNKNOWN;
	int rc = 0;
	is_compute(p, zone, name, &shape, guard ? guard->recorded : NULL);
	int ns = compute_slices(p, zone, name, guard ? guard->recorded : NULL);
	if (ns > 1)
		rc = tpf_compute_delete_unit(g->compute, zone, name, ns, guard, d);
	if (rc == 0 && (shape == SHAPE_UNKNOWN || (shape == SHAPE_SLICE && ns <= 1)))
		rc = tpf_compute_delete_slice(g->compute, zone, name, TPF_SLICE_ALL, guard, d);
	if (rc == 0 && shape != SHAPE_SLICE)
		rc = tpf_compute_delete(g->compute, zone, name, guard, d);
	if (rc == 0) {
		pthread_mutex_lock(&g->mu);
		fact_set_compute(g, zone, name, 0, 0);
		pthread_mutex_unlock(&g->mu);
	}
	return rc;
}

/*
 * A node requested through a queued resource goes with it: delete the
 * queued resource with force=true. Which it is comes from this provider's
 * last refresh; a node it never saw, in a zone whose queued resources
 * were not listed, costs one queuedResources.get.
 */
static int gcp_remove(struct tpf_provider *p, const char *zone, const char *name,
		      const struct tpf_delete_guard *guard, struct tpf_diags *d)
{
	struct gcp_impl *g = p->impl;
	char *qr = NULL;
	int known = 0, rc = 0;
	if (is_compute(p, zone, name, NULL, guard ? guard->recorded : NULL))
		return compute_remove(p, zone, name, guard, d);
	pthread_mutex_lock(&g->mu);
	struct qr_fact *f = fact_find(g, zone, name);
	if (f) {
		known = 1;
		qr = xstrdup(f->qr);
	}
	for (size_t i = 0; i < g->nqr_zones && !known; i++)
		known = !strcmp(g->qr_zones[i], zone);
	pthread_mutex_unlock(&g->mu);
	if (!known) {
		struct tpf_gcp_qr q = { 0 };
		rc = tpf_gcp_get_qr(client_of(p), zone, name, &q, d);
		if (rc == 0)
			qr = xstrdup(q.id);
		tpf_gcp_qr_release(&q);
		if (rc == TPF_ENOTFOUND)
			rc = 0;
	}
	int gone = 0, deleting = 0; /* deleting: a delete in flight, waited for */
	if (rc == 0 && guard) {
		rc = tpf_gcp_owned_now(client_of(p), zone, name, qr, guard, &deleting, d);
		gone = rc == TPF_ENOTFOUND;
		rc = gone ? 0 : rc;
	}
	if (rc == 0 && !gone)
		rc = qr ? tpf_gcp_delete_qr(client_of(p), zone, qr, name, guard ? guard->lineage : NULL,
					    d)
		     : deleting ? tpf_gcp_wait_node_gone(client_of(p), zone, name, "delete node", d)
				: tpf_gcp_delete_node(client_of(p), zone, name, d);
	if (rc == 0) {
		pthread_mutex_lock(&g->mu);
		fact_set(g, zone, name, NULL);
		pthread_mutex_unlock(&g->mu);
	}
	free(qr);
	return rc;
}

static int gcp_set_labels(struct tpf_provider *p, const char *zone, const char *name,
			  const struct tpf_kvlist *labels, struct tpf_diags *d)
{
	enum compute_shape shape = SHAPE_UNKNOWN;
	if (is_compute(p, zone, name, &shape, NULL) && shape == SHAPE_SLICE)
		return tpf_errorx(d, name, "replace the slice (tpuform taint) to relabel it",
				  "slice '%s': changing the labels of a Compute Engine slice in place "
				  "is not supported yet", name);
	if (is_compute(p, zone, name, NULL, NULL))
		return tpf_compute_set_labels(((struct gcp_impl *)p->impl)->compute, zone, name,
					      labels, d);
	return tpf_gcp_patch_labels(client_of(p), zone, name, labels, d);
}

/* The metadata a compute instance should carry: the declared entries with
 * tpuform's ssh-keys line (as create sends), over what it has. */
static int replace_metadata(json_t *items, void *ctx)
{
	json_t *want = ctx, *v;
	const char *k;
	void *tmp;
	json_object_foreach_safe(items, tmp, k, v) {
		if (strcmp(k, "enable-guest-attributes") && !json_object_get(want, k))
			json_object_del(items, k);
	}
	json_object_update(items, want);
	return 1;
}

/* In place on a Compute Engine instance: labels (setLabels) and metadata
 * (setMetadata), each a read-modify-write on its fingerprint. Tags and
 * external addresses are not changed in place yet: an error says so. */
static int compute_patch(struct tpf_provider *p, const char *zone, const char *name,
			 const struct tpf_recipe *r, unsigned fields, struct tpf_diags *d)
{
	struct gcp_impl *g = p->impl;
	int rc = 0;
	if (fields & (TPF_PATCH_TAGS | TPF_PATCH_EXTERNAL_IPS))
		return tpf_errorx(d, name, "replace the node (tpuform taint) to apply the change",
				  "instance '%s': changing tags or external addresses of a Compute "
				  "Engine instance in place is not supported yet", name);
	if (fields & TPF_PATCH_LABELS)
		rc = tpf_compute_set_labels(g->compute, zone, name, &r->labels, d);
	if (rc == 0 && (fields & TPF_PATCH_METADATA)) {
		json_t *md = NULL, *declared = tpf_gcp_declared_metadata(r);
		rc = tpf_gcp_access_create_metadata(g->access, declared, &md, d);
		json_decref(declared);
		if (rc == 0)
			rc = tpf_compute_edit_metadata(g->compute, zone, name, replace_metadata, md, d);
		json_decref(md);
	}
	return rc;
}

/* One nodes.patch for every changed patchable field; the metadata sent
 * keeps tpuform's ssh-keys entry (gcp_access.h), as create does. */
static int gcp_patch(struct tpf_provider *p, const char *zone, const char *name,
		     const struct tpf_recipe *r, unsigned fields, struct tpf_diags *d)
{
	struct gcp_impl *g = p->impl;
	if (is_compute(p, zone, name, NULL, NULL))
		return compute_patch(p, zone, name, r, fields, d);
	json_t *body = json_object();
	if (fields & TPF_PATCH_LABELS) {
		json_t *lb = tpf_gcp_labels_body(&r->labels);
		json_object_set(body, "labels", json_object_get(lb, "labels"));
		json_decref(lb);
	}
	if (fields & TPF_PATCH_TAGS)
		json_object_set_new(body, "tags", tpf_gcp_tags_json(&r->node));
	if (fields & TPF_PATCH_METADATA) {
		json_t *md = NULL, *declared = tpf_gcp_declared_metadata(r);
		int rc = tpf_gcp_access_create_metadata(g->access, declared, &md, d);
		json_decref(declared);
		if (rc < 0) {
			json_decref(body);
			return rc;
		}
		json_object_set_new(body, "metadata", md);
	}
	if (fields & TPF_PATCH_EXTERNAL_IPS)
		json_object_set_new(body, "networkConfig",
				    json_pack("{s:b}", "enableExternalIps",
					      r->node.enable_external_ips == TPF_TRI_TRUE));
	char *mask = tpf_patch_mask(fields);
	int rc = mask ? tpf_gcp_patch_node(client_of(p), zone, name, body, mask, d) : 0;
	free(mask);
	json_decref(body);
	return rc;
}

static int gcp_get(struct tpf_provider *p, const char *zone, const char *name,
		   struct tpf_live_node *out, struct tpf_diags *d)
{
	if (api_by_name(p->fleet, name) == TPF_API_COMPUTE)
		return tpf_compute_get(((struct gcp_impl *)p->impl)->compute, zone, name, out, d);
	return tpf_gcp_get_node(client_of(p), zone, name, out, d);
}

static struct tpf_transport *gcp_transport(struct tpf_provider *p)
{
	struct gcp_impl *g = p->impl;
	return tpf_gcp_access_transport(g->access);
}

static void gcp_free(struct tpf_provider *p)
{
	if (!p)
		return;
	struct gcp_impl *g = p->impl;
	tpf_gcp_access_free(g->access);
	tpf_compute_client_free(g->compute);
	tpf_ssh_transport_free(g->transport);
	tpf_gcp_client_free(g->client);
	for (size_t i = 0; i < g->nfacts; i++) {
		free(g->facts[i].zone);
		free(g->facts[i].node);
		free(g->facts[i].qr);
	}
	free(g->facts);
	tpf_strindex_release(&g->facts_by_node);
	for (size_t i = 0; i < g->nqr_zones; i++)
		free(g->qr_zones[i]);
	free(g->qr_zones);
	pthread_mutex_destroy(&g->mu);
	free(g);
	free(p);
}

static const struct tpf_provider_ops gcp_ops = {
	.name = "gcp",
	.refresh = gcp_refresh,
	.create = gcp_create,
	.remove = gcp_remove,
	.set_labels = gcp_set_labels,
	.patch = gcp_patch,
	.get = gcp_get,
	.transport = gcp_transport,
	.free = gcp_free,
};

int tpf_gcp_provider_open(struct tpf_provider **out, const struct tpf_fleet *f,
			  struct tpf_diags *d)
{
	struct tpf_gcp_client *c = NULL;
	if (tpf_gcp_client_open_fleet(&c, f, d) < 0)
		return TPF_ERROR;
	/* Made now, so that a bad TPUFORM_SSH_* value is an error of the
	 * open, not a surprise in the middle of an apply. */
	struct tpf_transport *t = tpf_ssh_transport_new(f, d);
	if (!t) {
		tpf_gcp_client_free(c);
		return TPF_ERROR;
	}
	struct tpf_compute_client *cc = NULL;
	if (tpf_compute_client_open(&cc, c, d) < 0) {
		tpf_ssh_transport_free(t);
		tpf_gcp_client_free(c);
		return TPF_ERROR;
	}
	struct tpf_provider *p = xcalloc(1, sizeof(*p));
	p->ops = &gcp_ops;
	p->fleet = f;
	struct gcp_impl *g = xcalloc(1, sizeof(*g));
	tpf_gcp_client_watch_interrupt(c, &p->interrupted);
	g->client = c;
	g->compute = cc;
	g->transport = t;
	g->access = tpf_gcp_access_new(c, t, f);
	if (fleet_uses_compute(f))
		tpf_gcp_access_set_compute(g->access, cc);
	pthread_mutex_init(&g->mu, NULL);
	p->impl = g;
	*out = p;
	return 0;
}
