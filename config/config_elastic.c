/*
 * elastic: { min_slices: K, grow: checkpoint | at_once } of a multislice
 * group (config/config.h struct tpf_elastic; docs/fleet-file.md and
 * docs/recovery.md "Elastic slices"; issue 30).
 */
#include "config/config_walk.h"

#include <stddef.h>

static const char *const elastic_keys[] = { "min_slices", "grow", NULL };
static const char *const grow_words[] = { "checkpoint", "at_once", NULL };

void cfg_read_elastic(struct cfg *c, const struct cfg_map *m, struct tpf_group *g,
		      const char *label)
{
	yaml_node_t *v = cfg_map_get(m, "elastic"), *x;
	struct cfg_map em;
	int k = 0, grow = TPF_GROW_CHECKPOINT;
	if (!v)
		return;
	if (g->slices < 2) {
		cfg_error(c, v, "add 'slices: N' (N >= 2) to the group, or remove 'elastic'",
			  "'elastic' in group %s applies to multislice groups only, and the group "
			  "has one slice", label);
		return;
	}
	if (cfg_map_open(&em, c, v, "'elastic'", "a mapping such as { min_slices: 2, grow: "
			 "checkpoint }", elastic_keys, "in elastic", "elastic"))
		return;
	if (!(x = cfg_map_require(&em, "min_slices", "the fewest slices the job may run on")))
		return;
	if (cfg_want_uint(c, x, "elastic.min_slices", "a whole number >= 1", 1, 1024, &k) < 0)
		return;
	if (k > g->slices) {
		cfg_error(c, x, "min_slices is the fewest slices the job may run on: 1 to slices",
			  "'elastic.min_slices' in group %s is %d, more than its %d slices", label,
			  k, g->slices);
		return;
	}
	if ((x = cfg_map_get(&em, "grow")) &&
	    cfg_want_enum(c, x, "elastic.grow", grow_words, "checkpoint or at_once", &grow) < 0)
		return;
	g->elastic.min_slices = k;
	g->elastic.grow = (enum tpf_elastic_grow)grow;
}

const struct tpf_elastic *tpf_fleet_elastic(const struct tpf_fleet *f, const char *group)
{
	const struct tpf_group *g = group ? tpf_fleet_group(f, group) : NULL;
	return g && g->elastic.min_slices > 0 ? &g->elastic : NULL;
}
