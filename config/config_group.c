/*
 * The groups of a fleet file: each group's keys, its effective job (the
 * fleet's setup/run/env under the group's own), and the checks across
 * groups (unique names, node name length).
 */
#include "model/accel.h"
#include "config/config_walk.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <search.h>
#include <string.h>

/* GCP resource names (nodes) are at most 63 characters (RFC 1035 label). */
#define NODE_NAME_MAX 63
/* GCP allows 64 labels per resource; tpuform sets three of them. */
#define USER_LABELS_MAX (64 - 3)
/* A sanity bound: a fleet of more nodes is a typo, not a plan. */
#define COUNT_MAX 10000

/* The one key list of a group (config/config_walk.h). */
static const char *const group_keys[] = {
	CFG_GROUP_ONLY_KEYS, CFG_SHARED_KEYS, CFG_NODE_KEYS, CFG_COMPUTE_KEYS, NULL,
};

struct group_ctx {
	struct cfg *c;
	struct tpf_fleet *f;
	/* Names seen so far -> their name node: a hash table, so that a fleet
	 * of 40,000 groups is checked in linear time (hcreate_r, glibc). */
	struct hsearch_data seen;
	int fleet_run;       /* the fleet has a run of its own */
};

static void read_zones(struct cfg *c, struct tpf_group *g, yaml_node_t *v, const char *label)
{
	static const char expect[] = "a zone name such as 'us-central1-f'";
	yaml_node_item_t single = 0, *items, *end;

	if (v->type == YAML_SCALAR_NODE && !cfg_is_null(v)) {
		/* "zones: us-central1-f" reads as a list of one. */
		single = 0;
		items = &single;
		end = items + 1;
	} else if (v->type == YAML_SEQUENCE_NODE) {
		items = v->data.sequence.items.start;
		end = v->data.sequence.items.top;
		if (items == end) {
			cfg_error(c, v, NULL, "'zones' must list at least one zone");
			return;
		}
	} else {
		cfg_type_error(c, v, "zones", "a list of zone names", NULL);
		return;
	}
	g->zones = xcalloc((size_t)(end - items), sizeof(*g->zones));
	for (yaml_node_item_t *it = items; it < end; it++) {
		yaml_node_t *z = it == &single ? v : cfg_node(c, *it);
		const char *s = cfg_text(z);
		if (!s || !cfg_is_name(s) || strlen(s) > 63) {
			struct tpf_buf got = TPF_BUF_INIT;
			cfg_describe(&got, z, 0);
			cfg_error(c, z, NULL, "each zone must be %s, got %s", expect, got.buf);
			tpf_buf_release(&got);
			continue;
		}
		int dup = 0;
		for (size_t i = 0; i < g->nzones && !dup; i++)
			dup = !strcmp(g->zones[i], s);
		if (dup) {
			cfg_error(c, z, NULL, "zone '%s' is listed twice in group %s", s, label);
			continue;
		}
		g->zones[g->nzones++] = xstrdup(s);
	}
}

/* name: required, unique within the fleet. */
static yaml_node_t *read_name(struct group_ctx *gc, struct cfg_map *m, struct tpf_group *g)
{
	struct cfg *c = gc->c;
	yaml_node_t *x = cfg_map_require(m, "name", NULL);
	if (!x)
		return NULL;
	const char *s = cfg_want_name(c, x, "name", SIZE_MAX);
	if (!s)
		return NULL;
	/* The key is the YAML document's own string: it outlives the table. */
	ENTRY want = { .key = (char *)s, .data = x }, *found = NULL;
	if (!hsearch_r(want, ENTER, &found, &gc->seen))
		tpf_oom(); /* the table is sized for every group: only memory fails */
	if (found->data != x) {
		const yaml_node_t *first = found->data;
		cfg_error(c, x, "group names must be unique within the fleet",
			  "group name '%s' is already used at line %zu", s, first->start_mark.line + 1);
		return NULL;
	}
	g->name = xstrdup(s);
	return x;
}

/* What each Cloud TPU API node is: accelerator_type, runtime_version. */
static void read_machine(struct cfg *c, struct cfg_map *m, struct tpf_group *g, const char *label)
{
	yaml_node_t *x;
	if ((x = cfg_map_require(m, "accelerator_type", "e.g. v2-8, v4-16 or v5litepod-16")) &&
	    !cfg_read_topology(c, m, g, x)) {
		struct tpf_accel a;
		const char *why = NULL, *s = cfg_text(x);
		if (s && tpf_accel_lookup(s, &a, &why) == 0) {
			g->accelerator_type = xstrdup(s);
			g->workers = a.workers;
		} else {
			cfg_type_error(c, x, "accelerator_type", why ? why : "an accelerator type", NULL);
		}
	}
	if ((x = cfg_map_require(m, "runtime_version", "e.g. tpu-ubuntu2204-base"))) {
		const char *s = cfg_text(x);
		/* Loose on purpose: the list is per zone and changes; the API
		 * (runtimeVersions.list) is the authority. */
		if (s && *s && !cfg_is_null(x) &&
		    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._") ==
			    strlen(s))
			g->runtime_version = xstrdup(s);
		else
			cfg_type_error(c, x, "runtime_version",
				   "a runtime version such as 'tpu-ubuntu2204-base'", NULL);
	}
}

/* Where and how many, on either API: zones, count. */
static void read_place(struct cfg *c, struct cfg_map *m, struct tpf_group *g, const char *label)
{
	yaml_node_t *x;
	if ((x = cfg_map_require(m, "zones", "e.g. zones: [us-central1-f]")))
		read_zones(c, g, x, label);
	if ((x = cfg_map_require(m, "count", "the number of nodes, e.g. count: 1")))
		cfg_want_uint(c, x, "count", "a whole number >= 0", 0, COUNT_MAX, &g->count);
}

/* How nodes are obtained: preemptible, spot, queued, valid_until. */
static void read_scheduling(struct cfg *c, struct cfg_map *m, struct tpf_group *g,
			    const char *label)
{
	yaml_node_t *x;
	if ((x = cfg_map_get(m, "preemptible")))
		cfg_want_bool(c, x, "preemptible", &g->preemptible);
	if ((x = cfg_map_get(m, "spot")))
		cfg_want_bool(c, x, "spot", &g->spot);
	if (g->preemptible && g->spot)
		cfg_error(c, x, "spot is the newer form of preemptible (no 24-hour limit)",
			  "group %s sets both 'preemptible' and 'spot'; choose one", label);
	if ((x = cfg_map_get(m, "queued")))
		cfg_want_bool(c, x, "queued", &g->queued);
	if ((x = cfg_map_get(m, "valid_until")) && cfg_want_duration(c, x, "valid_until", NULL) == 0) {
		if (g->queued)
			g->valid_until = xstrdup(cfg_text(x));
		else
			cfg_error(c, x, "add 'queued: true' or remove 'valid_until'",
				  "'valid_until' in group %s applies to queued resources only", label);
	}
}

/* A bound on slices: Google documents multislice jobs of thousands of
 * chips, never of this many slices; more is a typo. */
#define SLICES_MAX 1024

/*
 * slices: N (docs/design.md section 9). N > 1 asks for one multislice
 * queued resource (multisliceParams.nodeCount, which the discovery document
 * requires to be > 1), so it implies queued: true. The local provider
 * simulates it as one node with every slice's workers.
 */
static void read_slices(struct group_ctx *gc, struct cfg_map *m, struct tpf_group *g)
{
	yaml_node_t *x = cfg_map_get(m, "slices");
	if (!x || cfg_want_uint(gc->c, x, "slices", "a whole number >= 1", 1, SLICES_MAX,
				&g->slices) < 0 || g->slices < 2)
		return;
	g->queued = 1;
}

static void read_labels(struct cfg *c, struct cfg_map *m, struct tpf_group *g, const char *label)
{
	yaml_node_t *x = cfg_map_get(m, "labels");
	struct cfg_map lm;
	if (!x)
		return;
	char *lwhere = xasprintf("in labels of group %s", label);
	struct cfg_label_ctx lc = { &g->labels, label };
	if (cfg_map_open(&lm, c, x, "'labels'", "a mapping of label keys to values", NULL, lwhere,
			 "labels") == 0) {
		cfg_each_pair(c, &lm, cfg_label_pair, &lc);
		if (g->labels.n > USER_LABELS_MAX)
			cfg_error(c, x, "GCP allows 64 labels per node and tpuform sets 3",
				  "group %s has %zu labels, more than the %d that fit", label,
				  g->labels.n, USER_LABELS_MAX);
	}
	free(lwhere);
}

/* The effective job: the group's own setup/run/env over the fleet's. */
static void read_job(struct group_ctx *gc, struct cfg_map *m, struct tpf_group *g,
		     const char *label)
{
	struct cfg *c = gc->c;
	struct tpf_fleet *f = gc->f;
	struct cfg_map em;
	struct tpf_kvlist genv = TPF_KVLIST_INIT;
	yaml_node_t *x;
	int has_setup = 0;

	if ((x = cfg_map_get(m, "setup"))) {
		const char *s = cfg_want_text(c, x, "setup", "a shell command", 1);
		has_setup = 1;
		if (s && *s)
			g->setup = xstrdup(s);
	}
	if (!has_setup && f->setup)
		g->setup = xstrdup(f->setup);
	if ((x = cfg_map_get(m, "run"))) {
		const char *s = cfg_want_text(c, x, "run", "a shell command", 0);
		if (s)
			g->run = xstrdup(s);
	} else if (f->run) {
		g->run = xstrdup(f->run);
	} else if (!gc->fleet_run && m->node) {
		cfg_map_require(m, "run", "set 'run' in the group, or once at top level for all groups");
	}
	tpf_kvlist_copy(&g->env, &f->env);
	if ((x = cfg_map_get(m, "env"))) {
		char *ewhere = xasprintf("in env of group %s", label);
		if (cfg_map_open(&em, c, x, "'env'", "a mapping of variable names to values", NULL,
				 ewhere, "env") == 0) {
			cfg_each_pair(c, &em, cfg_env_pair, &genv);
			tpf_kvlist_merge(&g->env, &genv);
		}
		free(ewhere);
	}
	tpf_kvlist_release(&genv);
}

/* Node names are <fleet>-<group>-<index>; the last index is longest. */
static void check_node_name_length(struct group_ctx *gc, const struct tpf_group *g,
				   yaml_node_t *name_at)
{
	const struct tpf_fleet *f = gc->f;
	if (!f->name || !g->name)
		return;
	char *node = xasprintf("%s-%s-%d", f->name, g->name, g->count > 0 ? g->count - 1 : 0);
	if (g->slices > 1) /* its slices are NODE-0 .. NODE-(N-1) */
	{
		char *slice = xasprintf("%s-%d", node, g->slices - 1);
		free(node);
		node = slice;
	}
	/* A Compute Engine slice's members are NODE-001, ...: its MIG's
	 * baseInstanceName "NODE-###" allows NODE 52 characters
	 * (InstanceGroupManager.baseInstanceName's pattern; docs/compute-engine.md). */
	size_t max = g->compute.api == TPF_API_COMPUTE && (g->workers > 1 || g->slices > 1)
			     ? 52 : NODE_NAME_MAX; /* every slice of a multislice is a MIG */
	if (max < NODE_NAME_MAX && strlen(node) > max)
		cfg_error(gc->c, name_at, "shorten the fleet or the group name",
			  "node name '%s' would be %zu characters, more than the %zu a Compute "
			  "Engine slice allows (its members are %s-001, ...)", node, strlen(node),
			  max, node);
	else if (strlen(node) > NODE_NAME_MAX)
		cfg_error(gc->c, name_at, "shorten the fleet or the group name",
			  "node name '%s' would be %zu characters, more than the %d GCP allows", node,
			  strlen(node), NODE_NAME_MAX);
	free(node);
}

static void read_group(struct group_ctx *gc, struct tpf_group *g, yaml_node_t *v, size_t idx)
{
	struct cfg *c = gc->c;
	struct cfg_map m;

	g->line = (int)v->start_mark.line + 1;
	g->column = (int)v->start_mark.column + 1;
	if (v->type != YAML_MAPPING_NODE) {
		cfg_type_error(c, v, "groups", "a list of mappings with 'name', 'accelerator_type', "
					   "'runtime_version', 'zones' and 'count'", NULL);
		return;
	}
	/* Messages name the group as written, even if the name is invalid. */
	struct cfg_map peek = { c, v, v, NULL, "", "", 0 };
	yaml_node_t *name_node = cfg_map_get(&peek, "name");
	char *label;
	if (cfg_text(name_node) && !cfg_is_null(name_node))
		label = xasprintf("'%s'", cfg_text(name_node));
	else
		label = xasprintf("#%zu", idx + 1);
	char *where = xasprintf("in group %s", label);
	char *owner = xasprintf("group %s", label);
	cfg_map_open(&m, c, v, "each group", "a mapping", group_keys, where, owner);

	yaml_node_t *name_at = read_name(gc, &m, g);
	tpf_node_fields_copy(&g->node, &gc->f->node);
	cfg_read_node_fields(c, &m, &g->node);
	cfg_group_api(c, &m, gc->f, g);
	if (g->compute.api == TPF_API_COMPUTE) {
		cfg_read_compute(c, &m, g, label); /* config/config_compute.c */
	} else {
		cfg_reject_compute_keys(c, &m, g, label);
		read_machine(c, &m, g, label);
		read_slices(gc, &m, g); /* first: it implies queued */
		read_scheduling(c, &m, g, label);
		if (g->slices > 1 && !g->queued)
			cfg_error(c, cfg_map_get(&m, "queued"), "remove 'queued: false'",
				  "group %s: 'slices' is served by one multislice queued resource and "
				  "cannot be combined with 'queued: false'", label);
		cfg_check_group_node(c, &m, g, label);
	}
	cfg_read_elastic(c, &m, g, label); /* after slices, on either API */
	read_place(c, &m, g, label);
	read_labels(c, &m, g, label);
	read_job(gc, &m, g, label);
	tpf_job_policy_copy(&g->policy, &gc->f->policy);
	cfg_read_job_policy(c, &m, &g->policy);
	cfg_check_job_policy(c, &m, &g->policy);
	tpf_storage_copy(&g->storage, &gc->f->storage);
	cfg_read_storage(c, &m, &g->storage);
	cfg_read_budget(c, cfg_map_get(&m, "budget"), owner, &g->budget);
	g->on_budget = gc->f->on_budget;
	cfg_read_on_budget(c, cfg_map_get(&m, "on_budget"), &g->on_budget);
	if (name_at)
		check_node_name_length(gc, g, name_at);
	free(label);
	free(where);
	free(owner);
}

void cfg_read_groups(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v, int fleet_run)
{
	if (cfg_is_null(v) || (v->type == YAML_SEQUENCE_NODE &&
			       v->data.sequence.items.start == v->data.sequence.items.top)) {
		cfg_error(c, v, "e.g. groups: [{ name: main, accelerator_type: v2-8, runtime_version: "
				"tpu-ubuntu2204-base, zones: [us-central1-f], count: 1 }]",
			  "'groups' must list at least one group");
		return;
	}
	if (v->type != YAML_SEQUENCE_NODE) {
		cfg_type_error(c, v, "groups", "a list of groups, each a mapping", NULL);
		return;
	}
	size_t n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	struct group_ctx gc = { .c = c, .f = f, .fleet_run = fleet_run };
	/* hcreate_r wants room to spare: twice the entries keeps probes short. */
	if (!hcreate_r(2 * n + 1, &gc.seen))
		tpf_oom();
	f->groups = xcalloc(n, sizeof(*f->groups));
	f->ngroups = n;
	for (size_t i = 0; i < n; i++)
		read_group(&gc, &f->groups[i], cfg_node(c, v->data.sequence.items.start[i]), i);
	hdestroy_r(&gc.seen);
}
