/*
 * Lookups on a loaded fleet: a group by name, the zones the groups name.
 * They sit below the files that read the fleet file (config.c,
 * config_job.c, config_mounts.c all call tpf_fleet_group), so none of
 * those has to call back into config.c (no call circle in config/, see
 * tests/lint/calls.sh).
 */
#include "config/config.h"
#include "util/xalloc.h"

#include <string.h>

const struct tpf_group *tpf_fleet_group(const struct tpf_fleet *f, const char *name)
{
	for (size_t i = 0; i < f->ngroups; i++)
		if (f->groups[i].name && !strcmp(f->groups[i].name, name))
			return &f->groups[i];
	return NULL;
}

const char **tpf_fleet_zones(const struct tpf_fleet *f, size_t *n)
{
	size_t total = 0, k = 0;
	for (size_t i = 0; i < f->ngroups; i++)
		total += f->groups[i].nzones;
	*n = 0;
	if (!total)
		return NULL;
	const char **zones = xcalloc(total, sizeof(*zones));
	for (size_t i = 0; i < f->ngroups; i++) {
		for (size_t j = 0; j < f->groups[i].nzones; j++) {
			const char *z = f->groups[i].zones[j];
			size_t s = 0;
			while (s < k && strcmp(zones[s], z))
				s++;
			if (s == k)
				zones[k++] = z;
		}
	}
	*n = k;
	return zones;
}

