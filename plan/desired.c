/*
 * groups x count x quota x zones -> desired nodes.
 */
#include "plan/plan.h"
#include "plan/quota.h"
#include "util/hash.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int group_has_zone(const struct tpf_group *g, const char *zone)
{
	for (size_t i = 0; i < g->nzones; i++)
		if (!strcmp(g->zones[i], zone))
			return 1;
	return 0;
}

char *tpf_secrets_hash(const struct tpf_kvlist *secrets)
{
	if (!secrets->n)
		return NULL;
	struct tpf_kvlist sorted = TPF_KVLIST_INIT;
	tpf_kvlist_merge(&sorted, secrets);
	tpf_kvlist_sort(&sorted);
	struct tpf_buf b = TPF_BUF_INIT;
	for (size_t i = 0; i < sorted.n; i++) {
		/* Length-prefixed so that no two lists hash alike by concatenation. */
		tpf_buf_addf(&b, "%zu:%s=%zu:", strlen(sorted.items[i].key), sorted.items[i].key,
			     strlen(sorted.items[i].value));
		tpf_buf_adds(&b, sorted.items[i].value);
		tpf_buf_addch(&b, '\n');
	}
	char *h = tpf_sha256_tagged(b.buf, b.len);
	tpf_buf_release(&b);
	tpf_kvlist_release(&sorted);
	return h;
}

static void fill_node(struct tpf_desired_node *n, const struct tpf_fleet *f,
		      const struct tpf_group *g, int index, const char *commit,
		      const char *secrets_hash, const char *lineage_label)
{
	char idx[16];
	snprintf(idx, sizeof(idx), "%d", index);
	n->name = xasprintf("%s-%s-%d", f->name, g->name, index);
	n->group = xstrdup(g->name);
	n->index = index;
	n->recipe.accelerator_type = xstrdup(g->accelerator_type);
	n->recipe.runtime_version = xstrdup(g->runtime_version);
	n->recipe.preemptible = g->preemptible;
	n->recipe.spot = g->spot;
	/* A multislice node's workers are every slice's, in slice order. */
	n->recipe.slices = g->slices > 1 ? g->slices : 0;
	n->elastic = g->elastic;
	n->recipe.workers = g->workers * (g->slices > 1 ? g->slices : 1);
	n->recipe.queued = g->queued;
	n->recipe.valid_until = xstrdup(g->valid_until);
	tpf_node_fields_copy(&n->recipe.node, &g->node);
	tpf_compute_copy(&n->recipe.compute, &g->compute); /* api, machine type, image... */
	tpf_kvlist_merge(&n->recipe.labels, &g->labels);
	tpf_kvlist_set(&n->recipe.labels, TPF_LABEL_FLEET, f->name);
	tpf_kvlist_set(&n->recipe.labels, TPF_LABEL_GROUP, g->name);
	tpf_kvlist_set(&n->recipe.labels, TPF_LABEL_INDEX, idx);
	if (lineage_label)
		tpf_kvlist_set(&n->recipe.labels, TPF_LABEL_LINEAGE, lineage_label);
	tpf_kvlist_sort(&n->recipe.labels);
	n->job.commit = xstrdup(commit);
	n->job.repo = commit ? xstrdup(f->source.repo) : NULL;
	n->job.setup = xstrdup(g->setup);
	n->job.run = xstrdup(g->run);
	tpf_kvlist_merge(&n->job.env, &g->env);
	tpf_kvlist_sort(&n->job.env);
	n->job.secrets_hash = xstrdup(secrets_hash);
	n->zones = xcalloc(g->nzones, sizeof(char *));
	for (size_t z = 0; z < g->nzones; z++)
		n->zones[z] = xstrdup(g->zones[z]);
	n->nzones = g->nzones;
}

/* Pass 0: a node already in state keeps its zone (while its group still
 * lists it) and counts against quota there before anything new is placed. */
static void keep_existing_zone(struct tpf_desired_node *n, const struct tpf_group *g,
			       const struct tpf_state *st, struct tpf_quota *quota)
{
	struct tpf_state_node *sn = st ? tpf_state_find((struct tpf_state *)st, n->name) : NULL;
	if (sn && sn->status == TPF_NODE_COMPLETED) {
		/* Deleted once its job completed: it is not created again and
		 * holds no quota (docs/design.md section 8, "Completion"). */
		n->completed = 1;
		n->recipe.zone = xstrdup(sn->recipe.zone ? sn->recipe.zone : g->zones[0]);
		return;
	}
	if (!sn || !sn->recipe.zone || !group_has_zone(g, sn->recipe.zone))
		return;
	n->recipe.zone = xstrdup(sn->recipe.zone);
	tpf_quota_take(quota, n->recipe.zone, &n->recipe);
}

/* The quota key a class is written with in the fleet file. */
static const char *class_key(enum tpf_quota_class cls)
{
	switch (cls) {
	case TPF_QUOTA_SPOT: return "spot";
	case TPF_QUOTA_PREEMPTIBLE: return "preemptible";
	case TPF_QUOTA_ON_DEMAND:
	case TPF_QUOTA_NCLASSES: break;
	}
	return "on_demand";
}

/* Why a node fits in none of its group's zones, naming each zone's full
 * rule as the fleet file numbers it: "waiting for quota: on_demand cap 0
 * in z1 (quota[0], v2-8); spot cap 2 in z2 (quota[3], all accelerator
 * types, 2 in use)". */
static char *waiting_reason(const struct tpf_desired_node *n, const struct tpf_group *g,
			    const struct tpf_quota *quota)
{
	enum tpf_quota_class cls = tpf_quota_class_of(&n->recipe);
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_buf_adds(&b, "waiting for quota:");
	for (size_t z = 0; z < g->nzones; z++) {
		int cap = 0;
		int i = tpf_quota_blocking_rule(quota, g->zones[z], &n->recipe, &cap);
		if (i < 0)
			continue; /* not reached: the node was placed if any zone had room */
		const struct tpf_quota_rule *rule = &quota->rules[i];
		int all = !rule->accelerator_type || !strcmp(rule->accelerator_type, "*");
		tpf_buf_addf(&b, "%s %s cap %d in %s (quota[%d], %s", z ? ";" : "", class_key(cls), cap,
			     g->zones[z], i, all ? "all accelerator types" : rule->accelerator_type);
		if (quota->used[i][cls] > 0)
			tpf_buf_addf(&b, ", %d in use", quota->used[i][cls]);
		tpf_buf_addch(&b, ')');
	}
	return tpf_buf_detach(&b, NULL);
}

/* Pass 1: a new node takes the first zone of its group with room. */
static void place_new(struct tpf_desired_node *n, const struct tpf_group *g,
		      struct tpf_quota *quota)
{
	const char *zone = tpf_quota_first_zone(quota, g->zones, g->nzones, &n->recipe);
	if (zone) {
		n->recipe.zone = xstrdup(zone);
		tpf_quota_take(quota, zone, &n->recipe);
		return;
	}
	/* Keep a zone for display; it is not created. */
	n->recipe.zone = xstrdup(g->zones[0]);
	n->deferred = 1;
	n->waiting = waiting_reason(n, g, quota);
}

/* One warning per group with deferred nodes, not one per node. */
static void warn_deferred(const struct tpf_desired_set *out, const struct tpf_fleet *f,
			  struct tpf_diags *d)
{
	for (size_t gi = 0; gi < f->ngroups; gi++) {
		const struct tpf_group *g = &f->groups[gi];
		size_t deferred = 0;
		for (size_t i = 0; i < out->n; i++)
			if (out->nodes[i].deferred && !strcmp(out->nodes[i].group, g->name))
				deferred++;
		if (deferred) {
			struct tpf_buf zones = TPF_BUF_INIT;
			for (size_t z = 0; z < g->nzones; z++)
				tpf_buf_addf(&zones, "%s%s", z ? ", " : "", g->zones[z]);
			tpf_warn(d, g->name,
				 "deferred: quota: %zu of %d nodes of group '%s' wait for quota "
				 "(%s %s in %s)",
				 deferred, g->count, g->name,
				 g->accelerator_type ? g->accelerator_type : g->compute.machine_type,
				 g->spot ? "spot" : g->preemptible ? "preemptible" : "on-demand",
				 zones.buf);
			tpf_buf_release(&zones);
		}
	}
}

int tpf_desired_compute(struct tpf_desired_set *out, const struct tpf_fleet *f,
			const char *commit, const struct tpf_state *st, struct tpf_diags *d)
{
	size_t total = 0;
	for (size_t i = 0; i < f->ngroups; i++)
		total += (size_t)f->groups[i].count;
	out->nodes = xcalloc(total ? total : 1, sizeof(*out->nodes));
	out->n = 0;

	struct tpf_quota quota;
	tpf_quota_init(&quota, f->quota, f->nquota);
	char *secrets_hash = tpf_secrets_hash(&f->secrets);
	char lineage_buf[TPF_LINEAGE_LABEL_LEN + 1];
	const char *lineage = tpf_lineage_label(st ? st->lineage : NULL, lineage_buf);

	/*
	 * Two passes so that nodes that already exist keep their zone and
	 * their share of quota before new nodes are placed: otherwise a lower
	 * index created later could push an existing node out of its quota.
	 */
	for (int pass = 0; pass < 2; pass++) {
		size_t k = 0;
		for (size_t gi = 0; gi < f->ngroups; gi++) {
			const struct tpf_group *g = &f->groups[gi];
			for (int idx = 0; idx < g->count; idx++, k++) {
				struct tpf_desired_node *n = &out->nodes[k];
				if (pass == 0) {
					fill_node(n, f, g, idx, commit, secrets_hash, lineage);
					keep_existing_zone(n, g, st, &quota);
				} else if (!n->recipe.zone) {
					place_new(n, g, &quota);
				}
			}
		}
		out->n = k;
	}

	warn_deferred(out, f, d);
	tpf_quota_release(&quota);
	free(secrets_hash);
	return 0;
}

static void desired_node_release(struct tpf_desired_node *n)
{
	free(n->name);
	free(n->group);
	tpf_recipe_release(&n->recipe);
	tpf_job_release(&n->job);
	for (size_t z = 0; z < n->nzones; z++)
		free(n->zones[z]);
	free(n->zones);
	free(n->waiting);
	memset(n, 0, sizeof(*n));
}

void tpf_desired_release(struct tpf_desired_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		desired_node_release(&s->nodes[i]);
	free(s->nodes);
	s->nodes = NULL;
	s->n = 0;
}

/* Exposed to diff.c and planfile.c through plan_internal.h. */
void tpf_desired_node_copy(struct tpf_desired_node *dst, const struct tpf_desired_node *src)
{
	desired_node_release(dst);
	dst->name = xstrdup(src->name);
	dst->group = xstrdup(src->group);
	dst->index = src->index;
	tpf_recipe_copy(&dst->recipe, &src->recipe);
	tpf_job_copy(&dst->job, &src->job);
	dst->zones = xcalloc(src->nzones ? src->nzones : 1, sizeof(char *));
	for (size_t z = 0; z < src->nzones; z++)
		dst->zones[z] = xstrdup(src->zones[z]);
	dst->nzones = src->nzones;
	dst->deferred = src->deferred;
	dst->completed = src->completed;
	dst->waiting = xstrdup(src->waiting);
	dst->over_budget = src->over_budget;
	dst->elastic = src->elastic;
}

const struct tpf_desired_node *tpf_desired_find(const struct tpf_desired_set *s, const char *name)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (!strcmp(s->nodes[i].name, name))
			return &s->nodes[i];
	return NULL;
}

void tpf_desired_node_free(struct tpf_desired_node *n)
{
	if (!n)
		return;
	desired_node_release(n);
	free(n);
}
