/*
 * The gcp provider (gcp.h): one table of operations per Google API
 * (gcp_backend.h: tpu/ for Cloud TPU, compute/ for Compute Engine), the
 * node's back-end picked in one place (backend_for); the SSH access to
 * the workers (gcp_access.h) is common to both.
 */
#include "providers/gcp/gcp.h"
#include "providers/gcp/compute/compute_engine.h"
#include "providers/gcp/gcp_access.h"
#include "providers/gcp/gcp_backend.h"
#include "providers/gcp/gcp_client.h"
#include "providers/gcp/gcp_fields.h"
#include "providers/provider.h"
#include "providers/ssh/ssh.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The back-ends' shared context (gcp_backend.h) and the SSH transport to
 * the workers (made at open), which the access layer wraps. */
struct gcp_impl {
	struct tpf_gcp_ctx ctx;
	struct tpf_transport *transport;
	/* The back-ends a refresh lists, in this order (uses_of_fleet). */
	int uses[2]; /* by enum tpf_api */
	const struct tpf_gcp_backend *listed[2];
	size_t nlisted;
};

static struct tpf_gcp_ctx *ctx_of(struct tpf_provider *p)
{
	return &((struct gcp_impl *)p->impl)->ctx;
}

/*
 * The APIs a refresh lists (uses[], by enum tpf_api). Compute Engine
 * instances are listed when the fleet file speaks of Compute Engine at
 * all: a group on it, or provider.gcp.api set (either way: `api: tpu`
 * keeps listing so that the instances of groups moved back to the Cloud
 * TPU API are still seen and deleted), or the state records a Compute
 * Engine node (gcp_recorded: a group moved back without `api: tpu` must
 * not leak its instances). A fleet that never names it, with a state that
 * records none, sends no Compute request: its project need not enable the
 * API. Likewise Cloud TPU API nodes are listed unless the fleet is all on
 * Compute Engine and its state records no Cloud TPU node: its project
 * need not enable tpu.googleapis.com, and its refresh is the Compute
 * Engine lists alone.
 */
/* uses[]'s index of an API (a value out of range counts as Cloud TPU). */
static int api_index(enum tpf_api a)
{
	return a == TPF_API_COMPUTE ? TPF_API_COMPUTE : TPF_API_TPU;
}

static void uses_of_fleet(const struct tpf_fleet *f, int uses[2])
{
	uses[TPF_API_TPU] = f->gcp.api_given || f->ngroups == 0;
	uses[TPF_API_COMPUTE] = f->gcp.api_given;
	for (size_t i = 0; i < f->ngroups; i++)
		uses[api_index(f->groups[i].compute.api)] = 1;
}

/* g->listed from g->uses, Cloud TPU first (the order of a refresh's
 * nodes); the access layer reaches Compute Engine nodes when listed. */
static void set_listed(struct gcp_impl *g)
{
	static const enum tpf_api order[] = { TPF_API_TPU, TPF_API_COMPUTE };
	g->nlisted = 0;
	for (size_t i = 0; i < 2; i++)
		if (g->uses[order[i]])
			g->listed[g->nlisted++] = tpf_gcp_backend_of_api(order[i]);
	/* A node never seen is looked for on the Cloud TPU API first, then on
	 * Compute Engine when the fleet reaches it. */
	const struct tpf_gcp_backend *reach[2] = { &tpf_gcp_tpu_backend, &tpf_gcp_compute_backend };
	tpf_gcp_access_set_backends(g->ctx.access, &g->ctx, reach, g->uses[TPF_API_COMPUTE] ? 2 : 1);
}

/* providers/provider.h recorded: the state's nodes keep their API listed. */
static void gcp_recorded(struct tpf_provider *p, const struct tpf_recipe *r)
{
	struct gcp_impl *g = p->impl;
	int k = api_index(r->compute.api);
	if (!g->uses[k]) {
		g->uses[k] = 1;
		set_listed(g);
	}
}

/*
 * The one place a node's back-end is chosen: what the last refresh or
 * create saw of it (*fact, filled; release it), else the state's record
 * `rec` (NULL: none), else its group's API (a node of no group: Cloud TPU).
 */
static const struct tpf_gcp_backend *backend_for(struct tpf_provider *p, const char *zone,
						 const char *name, const struct tpf_recipe *rec,
						 struct tpf_gcp_fact *fact, int *known)
{
	*known = tpf_gcp_facts_get(&ctx_of(p)->facts, zone, name, fact);
	if (*known)
		return tpf_gcp_backend_of_shape(fact->shape);
	if (rec)
		return tpf_gcp_backend_of_api(rec->compute.api);
	const struct tpf_group *gr = tpf_gcp_group_of(p->fleet, name);
	return tpf_gcp_backend_of_api(gr ? gr->compute.api : TPF_API_TPU);
}

static int fleet_has_queued(const struct tpf_fleet *f)
{
	for (size_t i = 0; i < f->ngroups; i++)
		if (f->groups[i].queued)
			return 1;
	return 0;
}

#define REFRESH_PARALLEL 8

/* Zones are listed in parallel, each into its own sets and diagnostics
 * (one per back-end listed), merged in zone order afterwards so output
 * does not depend on timing. */
struct zone_job {
	struct tpf_gcp_ctx *g;
	const struct tpf_gcp_backend *const *be;
	size_t nbe;
	struct tpf_gcp_zone z[2]; /* by back-end */
};

static void *zone_worker(void *arg)
{
	struct zone_job *j = arg;
	int rc = 0;
	for (size_t b = 0; b < j->nbe; b++) {
		if (rc == 0)
			rc = j->be[b]->list_zone(j->g, &j->z[b]);
		j->z[b].rc = rc; /* a zone that failed is not learnt from */
	}
	for (size_t b = 0; b < j->nbe; b++)
		j->z[b].rc = rc;
	return NULL;
}

/* A back-end's fleet-wide lists (tpf_gcp_backend list_fleet), walked on a
 * thread of their own while the zones are listed. */
struct fleet_job {
	struct tpf_gcp_ctx *g;
	const struct tpf_gcp_backend *be;
	void *all;
	struct tpf_live_set ids; /* only its preempted ids are used */
	struct tpf_diags diags;
	int rc;
	pthread_t th;
	int started;
};

static void *fleet_worker(void *arg)
{
	struct fleet_job *a = arg;
	a->rc = a->be->list_fleet(a->g, &a->all, &a->ids, &a->diags);
	return NULL;
}

static void list_zones(struct zone_job *jobs, size_t nzones)
{
	pthread_t th[REFRESH_PARALLEL];
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
}

/* One zone's sets, completed and learnt from, moved into out. */
static int merge_zone(struct gcp_impl *gi, struct zone_job *j, struct fleet_job *fj, int rc,
		      struct tpf_live_set *out, struct tpf_diags *d)
{
	for (size_t b = 0; b < j->nbe; b++) {
		struct tpf_gcp_zone *z = &j->z[b];
		if (j->be[b]->finish_zone && z->rc == 0 && rc == 0)
			j->be[b]->finish_zone(&gi->ctx, fj[b].all, z);
		if (z->rc < 0 && rc == 0)
			rc = z->rc;
		j->be[b]->learn(&gi->ctx, z);
		for (size_t k = 0; k < z->set.n; k++) {
			*tpf_live_set_add(out) = z->set.nodes[k]; /* move */
			memset(&z->set.nodes[k], 0, sizeof(z->set.nodes[k]));
		}
		for (size_t k = 0; k < z->set.nunlisted; k++)
			tpf_live_set_add_unlisted(out, z->set.unlisted_zones[k]);
		tpf_live_set_release(&z->set);
		tpf_diags_move(d, &z->diags);
		tpf_diags_release(&z->diags);
		pthread_mutex_destroy(&z->diags.mu);
	}
	return rc;
}

static int gcp_refresh(struct tpf_provider *p, const char *const *zones, size_t nzones,
		       struct tpf_live_set *out, struct tpf_diags *d)
{
	struct gcp_impl *gi = p->impl;
	size_t nbe = gi->nlisted;
	struct zone_job *jobs = xcalloc(nzones ? nzones : 1, sizeof(*jobs));
	struct fleet_job fj[2];
	memset(fj, 0, sizeof(fj));
	int queued = fleet_has_queued(p->fleet), rc = 0;
	for (size_t b = 0; b < nbe; b++) {
		fj[b] = (struct fleet_job){ .g = &gi->ctx, .be = gi->listed[b] };
		tpf_diags_init(&fj[b].diags);
		if (fj[b].be->list_fleet)
			fj[b].started = !pthread_create(&fj[b].th, NULL, fleet_worker, &fj[b]);
	}
	for (size_t i = 0; i < nzones; i++) {
		jobs[i].g = &gi->ctx;
		jobs[i].be = gi->listed;
		jobs[i].nbe = nbe;
		for (size_t b = 0; b < nbe; b++) {
			jobs[i].z[b] = (struct tpf_gcp_zone){ .zone = zones[i], .fleet = p->fleet->name,
							      .queued = queued };
			tpf_diags_init(&jobs[i].z[b].diags);
		}
	}
	list_zones(jobs, nzones);
	for (size_t b = 0; b < nbe; b++) {
		if (fj[b].started)
			pthread_join(fj[b].th, NULL);
		else if (fj[b].be->list_fleet)
			fleet_worker(&fj[b]);
		if (fj[b].rc < 0 && rc == 0)
			rc = fj[b].rc;
		tpf_diags_move(d, &fj[b].diags);
		for (size_t k = 0; k < fj[b].ids.npreempted; k++)
			tpf_live_set_add_preempted(out, fj[b].ids.preempted_ids[k]);
	}
	for (size_t i = 0; i < nzones; i++)
		rc = merge_zone(gi, &jobs[i], fj, rc, out, d);
	for (size_t b = 0; b < nbe; b++) {
		if (fj[b].be->free_fleet)
			fj[b].be->free_fleet(fj[b].all);
		tpf_live_set_release(&fj[b].ids);
		tpf_diags_release(&fj[b].diags);
		pthread_mutex_destroy(&fj[b].diags.mu);
	}
	free(jobs);
	return rc;
}

/* A node gets the SSH key in its metadata from the start (gcp_access.h);
 * without a key nothing is created: tpuform could not log in to it. */
static int gcp_create(struct tpf_provider *p, const char *name, const struct tpf_recipe *r,
		      struct tpf_live_node *out, struct tpf_diags *d)
{
	struct tpf_gcp_ctx *g = ctx_of(p);
	json_t *md = NULL, *declared = tpf_gcp_declared_metadata(r);
	/* The declared metadata, its ssh-keys merged with tpuform's key. */
	int mrc = tpf_gcp_access_create_metadata(g->access, declared, &md, d);
	json_decref(declared);
	if (mrc < 0) {
		tpf_errorx(d, name, NULL, "node '%s' was not created: its workers could not be "
			   "reached without an SSH key", name);
		return TPF_ERROR;
	}
	int rc = tpf_gcp_backend_of_api(r->compute.api)->create(g, name, r, md, out, d);
	json_decref(md);
	return rc;
}

static int gcp_remove(struct tpf_provider *p, const char *zone, const char *name,
		      const struct tpf_delete_guard *guard, struct tpf_diags *d)
{
	struct tpf_gcp_fact fact = { 0 };
	int known;
	const struct tpf_gcp_backend *be =
		backend_for(p, zone, name, guard ? guard->recorded : NULL, &fact, &known);
	int rc = be->remove(ctx_of(p), zone, name, known ? &fact : NULL, guard, d);
	tpf_gcp_fact_release(&fact);
	return rc;
}

static int gcp_set_labels(struct tpf_provider *p, const char *zone, const char *name,
			  const struct tpf_kvlist *labels, struct tpf_diags *d)
{
	struct tpf_gcp_fact fact = { 0 };
	int known;
	const struct tpf_gcp_backend *be = backend_for(p, zone, name, NULL, &fact, &known);
	int rc = be->set_labels(ctx_of(p), zone, name, known ? &fact : NULL, labels, d);
	tpf_gcp_fact_release(&fact);
	return rc;
}

static int gcp_patch(struct tpf_provider *p, const char *zone, const char *name,
		     const struct tpf_recipe *r, unsigned fields, struct tpf_diags *d)
{
	struct tpf_gcp_fact fact = { 0 };
	int known;
	const struct tpf_gcp_backend *be = backend_for(p, zone, name, NULL, &fact, &known);
	tpf_gcp_fact_release(&fact);
	return be->patch(ctx_of(p), zone, name, r, fields, d);
}

/* By the node's group alone: a get is how a node no refresh saw is found. */
static int gcp_get(struct tpf_provider *p, const char *zone, const char *name,
		   struct tpf_live_node *out, struct tpf_diags *d)
{
	const struct tpf_group *gr = tpf_gcp_group_of(p->fleet, name);
	return tpf_gcp_backend_of_api(gr ? gr->compute.api : TPF_API_TPU)
		->get(ctx_of(p), zone, name, out, d);
}

static struct tpf_transport *gcp_transport(struct tpf_provider *p)
{
	return tpf_gcp_access_transport(ctx_of(p)->access);
}

/* Only from a provider of this kind: its impl is a gcp_impl too. */
static void gcp_learn_from(struct tpf_provider *p, struct tpf_provider *from)
{
	if (from && from->ops == p->ops)
		tpf_gcp_access_learn_from(ctx_of(p)->access, ctx_of(from)->access);
}

static void gcp_free(struct tpf_provider *p)
{
	if (!p)
		return;
	struct gcp_impl *g = p->impl;
	tpf_gcp_access_free(g->ctx.access);
	tpf_compute_client_free(g->ctx.compute);
	tpf_ssh_transport_free(g->transport);
	tpf_gcp_client_free(g->ctx.client);
	tpf_gcp_facts_release(&g->ctx.facts);
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
	.recorded = gcp_recorded,
	.transport = gcp_transport,
	.learn_from = gcp_learn_from,
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
	g->ctx.fleet = f;
	g->ctx.client = c;
	g->ctx.compute = cc;
	g->transport = t;
	g->ctx.access = tpf_gcp_access_new(c, t, f);
	tpf_gcp_facts_init(&g->ctx.facts);
	uses_of_fleet(f, g->uses);
	set_listed(g);
	p->impl = g;
	*out = p;
	return 0;
}
