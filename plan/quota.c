/*
 * Declared quota (plan/quota.h): per rule, per scheduling class counters.
 */
#include "plan/quota.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* What a rule's accelerator_type is matched against: a Compute Engine
 * node's machine type ("ct6e-standard-4t"). */
static const char *quota_type(const struct tpf_recipe *r)
{
	return r->accelerator_type ? r->accelerator_type : r->compute.machine_type;
}

enum tpf_quota_class tpf_quota_class_of(const struct tpf_recipe *r)
{
	if (r->spot)
		return TPF_QUOTA_SPOT;
	if (r->preemptible)
		return TPF_QUOTA_PREEMPTIBLE;
	return TPF_QUOTA_ON_DEMAND;
}

/* The rule's cap for a class; -1: not declared, no cap from this rule. */
static int rule_cap(const struct tpf_quota_rule *rule, enum tpf_quota_class cls)
{
	switch (cls) {
	case TPF_QUOTA_SPOT: return rule->spot;
	case TPF_QUOTA_PREEMPTIBLE: return rule->preemptible;
	case TPF_QUOTA_ON_DEMAND:
	case TPF_QUOTA_NCLASSES: break;
	}
	return rule->on_demand;
}

void tpf_quota_init(struct tpf_quota *q, const struct tpf_quota_rule *rules, size_t nrules)
{
	q->rules = rules;
	q->nrules = nrules;
	q->used = xcalloc(nrules ? nrules : 1, sizeof(*q->used));
}

void tpf_quota_release(struct tpf_quota *q)
{
	free(q->used);
	memset(q, 0, sizeof(*q));
}

int tpf_quota_rule_matches(const struct tpf_quota_rule *rule, const char *zone, const char *type)
{
	if (!rule->zone || !zone || strcmp(rule->zone, zone))
		return 0;
	return !rule->accelerator_type || !strcmp(rule->accelerator_type, "*") ||
	       (type && !strcmp(rule->accelerator_type, type));
}

int tpf_quota_blocking_rule(const struct tpf_quota *q, const char *zone,
			    const struct tpf_recipe *r, int *cap)
{
	enum tpf_quota_class cls = tpf_quota_class_of(r);
	for (size_t i = 0; i < q->nrules; i++) {
		int c = rule_cap(&q->rules[i], cls);
		if (c >= 0 && tpf_quota_rule_matches(&q->rules[i], zone, quota_type(r)) &&
		    q->used[i][cls] >= c) {
			*cap = c;
			return (int)i;
		}
	}
	return -1;
}

int tpf_quota_room(const struct tpf_quota *q, const char *zone, const struct tpf_recipe *r)
{
	int cap;
	return tpf_quota_blocking_rule(q, zone, r, &cap) < 0;
}

void tpf_quota_take(struct tpf_quota *q, const char *zone, const struct tpf_recipe *r)
{
	enum tpf_quota_class cls = tpf_quota_class_of(r);
	for (size_t i = 0; i < q->nrules; i++)
		if (tpf_quota_rule_matches(&q->rules[i], zone, quota_type(r)))
			q->used[i][cls]++;
}

void tpf_quota_count_state(struct tpf_quota *q, const struct tpf_state *st, const char *except)
{
	for (size_t k = 0; k < st->nnodes; k++) {
		const struct tpf_state_node *n = &st->nodes[k];
		if (!n->recipe.zone || (except && n->name && !strcmp(n->name, except)))
			continue;
		if (n->status == TPF_NODE_COMPLETED)
			continue; /* deleted once its job completed: holds nothing */
		tpf_quota_take(q, n->recipe.zone, &n->recipe);
	}
}

const char *tpf_quota_first_zone(const struct tpf_quota *q, char *const *zones, size_t nzones,
				 const struct tpf_recipe *r)
{
	for (size_t z = 0; z < nzones; z++)
		if (tpf_quota_room(q, zones[z], r))
			return zones[z];
	return NULL;
}
