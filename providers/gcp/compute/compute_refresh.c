/*
 * A refresh of the Compute Engine back-end (gcp_backend.h): each zone's
 * instances and slice members (compute_api.c), the fleet's MIGs and the
 * preemptions, listed once for every zone on a thread of their own; then
 * each zone's lost instances a preemption names are PREEMPTED and each MIG
 * with its members becomes a slice node, the slices of one multislice node
 * one node (compute_multislice.c).
 */
#include "model/node_state.h"
#include "providers/gcp/compute/compute_engine.h"
#include "providers/gcp/compute/compute_internal.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A zone being completed: its set, the fleet's MIGs of the zone and the
 * preemptions (borrowed; NULL: none). */
struct fin {
	struct tpf_compute_client *cc;
	const char *zone;
	struct tpf_live_set *set;
	json_t *migs, *preempted;
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
static void add_units(struct fin *j, struct unit_acc *u, size_t nu)
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
			*tpf_live_set_add(j->set) = n; /* moved */
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

/* The members of a zone by their slice label, sorted: a MIG finds its own
 * with a binary search, not a scan of every member (10,000 instances are
 * 2,500 MIGs times 10,000 label reads otherwise). */
struct by_slice {
	const char *slice;
	size_t k;
};

static int by_slice_cmp(const void *a, const void *b)
{
	const struct by_slice *x = a, *y = b;
	int c = strcmp(x->slice, y->slice);
	return c ? c : (x->k > y->k) - (x->k < y->k); /* the list's order within a slice */
}

static struct by_slice *index_members(const struct tpf_live_set *members, size_t *n)
{
	struct by_slice *v = xcalloc(members->n + 1, sizeof(*v));
	*n = 0;
	for (size_t k = 0; k < members->n; k++) {
		const char *s = tpf_kvlist_get(&members->nodes[k].recipe.labels, TPF_COMPUTE_SLICE_LABEL);
		if (s)
			v[(*n)++] = (struct by_slice){ s, k };
	}
	if (*n)
		qsort(v, *n, sizeof(*v), by_slice_cmp);
	return v;
}

/* Copies of the members labelled slice `name`, in the list's order. */
static void members_of(const struct by_slice *v, size_t n, const struct tpf_live_set *members,
		       const char *name, struct tpf_live_set *mine)
{
	size_t lo = 0, hi = n;
	while (lo < hi) { /* the first entry >= name */
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(v[mid].slice, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && !strcmp(v[lo].slice, name); lo++)
		tpf_live_node_copy(tpf_live_set_add(mine), &members->nodes[v[lo].k]);
}

static void add_slices(struct fin *j, struct tpf_live_set *members)
{
	size_t i, nu = 0, au = 0, nidx;
	struct unit_acc *units = NULL;
	struct by_slice *idx = index_members(members, &nidx);
	json_t *mig;
	json_array_foreach(j->migs, i, mig) {
		const char *name = json_string_value(json_object_get(mig, "name"));
		struct tpf_live_set mine = { 0 };
		if (name)
			members_of(idx, nidx, members, name, &mine);
		struct tpf_live_node n = { 0 };
		if (tpf_compute_slice_parse(mig, j->zone, mine.nodes, mine.n, &n) == 0) {
			/* a member gone (termination action DELETE) by preemption */
			if (tpf_node_state_of(n.state) == TPF_NODE_STATE_TERMINATED && mine.n < (size_t)n.recipe.workers &&
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
				*tpf_live_set_add(j->set) = n; /* moved */
			}
		}
		tpf_live_set_release(&mine);
	}
	free(idx);
	add_units(j, units, nu);
}

/* The preemptions' walk, on a thread of its own beside the MIGs'. */
struct preempted_job {
	struct tpf_compute_client *cc;
	json_t *preempted;
	struct tpf_diags why;
	int rc;
};

static void *preempted_worker(void *arg)
{
	struct preempted_job *p = arg;
	p->rc = tpf_compute_list_preempted(p->cc, &p->preempted, &p->why);
	return NULL;
}

/*
 * What Compute Engine lists for every zone at once: the fleet's MIGs
 * (*migs: zone -> [MIG]) and the preemptions (*preempted, NULL when they
 * could not be read: a warning, and losses are then not called
 * preemptions), each one aggregated walk, the two at once (neither needs
 * the other: one walk's pages follow each other, two walks need not); the
 * preempted instances' ids go to out (model/live.h), so the plan can say
 * why a node is gone.
 */
static int compute_lists(struct tpf_compute_client *cc, const char *fleet, json_t **migs,
			 json_t **preempted, struct tpf_live_set *out, struct tpf_diags *d)
{
	struct preempted_job p = { .cc = cc, .why = TPF_DIAGS_INIT };
	pthread_t th;
	int started = !pthread_create(&th, NULL, preempted_worker, &p);
	int rc = tpf_compute_list_migs(cc, fleet, migs, d);
	if (started)
		pthread_join(th, NULL);
	else
		preempted_worker(&p); /* no thread: one after the other */
	*preempted = p.preempted;
	if (rc >= 0 && p.rc < 0)
		tpf_warn(d, NULL, "%s; a lost Compute Engine VM is not called preempted this time",
			 p.why.n ? p.why.items[0].summary : "the preemptions could not be listed");
	tpf_diags_release(&p.why);
	if (rc < 0)
		return rc;
	const char *k;
	json_t *v;
	json_object_foreach(*preempted, k, v)
		if (!strncmp(k, "id:", 3))
			tpf_live_set_add_preempted(out, k + 3);
	return 0;
}

/* What the fleet-wide lists found (list_fleet's *all). */
struct compute_all {
	json_t *migs, *preempted;
};

int tpf_compute_refresh_fleet(struct tpf_compute_client *cc, const char *fleet, void **all,
			      struct tpf_live_set *ids, struct tpf_diags *d)
{
	struct compute_all *a = xcalloc(1, sizeof(*a));
	*all = a;
	return compute_lists(cc, fleet, &a->migs, &a->preempted, ids, d);
}

void tpf_compute_refresh_free(void *all)
{
	struct compute_all *a = all;
	if (!a)
		return;
	json_decref(a->migs);
	json_decref(a->preempted);
	free(a);
}

size_t tpf_compute_refresh_zone(struct tpf_compute_client *cc, void *all, const char *zone,
				struct tpf_live_set *set, struct tpf_live_set *members)
{
	struct compute_all *a = all;
	struct fin j = { .cc = cc, .zone = zone, .set = set,
			 .migs = json_object_get(a->migs, zone), .preempted = a->preempted };
	for (size_t k = 0; k < set->n; k++)
		tpf_compute_mark_preempted(&set->nodes[k], a->preempted);
	for (size_t k = 0; k < members->n; k++)
		tpf_compute_mark_preempted(&members->nodes[k], a->preempted);
	size_t nsingle = set->n;
	add_slices(&j, members);
	return nsingle;
}
