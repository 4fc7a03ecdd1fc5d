/*
 * TPU machine types on Compute Engine and their topologies
 * (model/compute.h; docs/compute-engine.md section "Machine types").
 */
#include "model/compute.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static const char fam_v5_v6[] = "ubuntu-accel-2204-amd64-tpu-v5e-v5p-v6e";
static const char fam_tpu7x[] = "ubuntu-accel-2404-amd64-tpu-tpu7x";

/* Chips per VM and single-host topology: GKE cluster-autoscaler
 * machinetypes (fixedTpuCount, singleHostTopologyMap); families:
 * docs/compute-engine.md "Boot images". */
static const struct tpf_machine_type types[] = {
	{ "tpu7x-standard-1t", "tpu7x", 1, "1x1x1", fam_tpu7x },
	{ "tpu7x-standard-4t", "tpu7x", 4, "2x2x1", fam_tpu7x },
	{ "ct6e-standard-1t", "v6e", 1, "1x1", fam_v5_v6 },
	{ "ct6e-standard-4t", "v6e", 4, "2x2", fam_v5_v6 },
	{ "ct6e-standard-8t", "v6e", 8, "2x4", fam_v5_v6 },
	{ "ct5p-hightpu-4t", "v5p", 4, "2x2x1", fam_v5_v6 },
};

static const char types_rule[] =
	"a TPU machine type: tpu7x-standard-1t, tpu7x-standard-4t, ct6e-standard-1t, "
	"ct6e-standard-4t, ct6e-standard-8t or ct5p-hightpu-4t";

const char *tpf_api_name(enum tpf_api api)
{
	return api == TPF_API_COMPUTE ? "compute" : "tpu";
}

const struct tpf_machine_type *tpf_machine_type_lookup(const char *name, const char **why)
{
	for (size_t i = 0; name && i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(types[i].name, name)) {
			if (why)
				*why = NULL;
			return &types[i];
		}
	if (why)
		*why = types_rule;
	return NULL;
}

/* "AxB" or "AxBxC" into dims (each 1..4096, no sign, no leading zero):
 * how many, or -1. */
static int dims_of(const char *s, int dims[3])
{
	int n = 0;
	for (;;) {
		long v = 0;
		const char *start = s;
		if (n == 3 || *s == '0')
			return -1;
		for (; *s >= '0' && *s <= '9'; s++)
			if ((v = v * 10 + (*s - '0')) > 4096)
				return -1;
		if (s == start)
			return -1;
		dims[n++] = (int)v;
		if (!*s)
			return n;
		if (*s++ != 'x')
			return -1;
	}
}

/* Multi-host v6e slices of ct6e-standard-4t VMs (docs/compute-engine.md:
 * the v6e page's table; 2x4 on two 4t VMs is GKE-only). */
static const char *const v6e_multi[] = { "4x4", "4x8", "8x8", "8x16", "16x16", NULL };

/* 3-D slices of 4-chip VMs: 2x2x1, 2x2x2, 2x2x4, 2x4x4, then A <= B <= C,
 * each a multiple of 4, in at most max_cubes 4x4x4 cubes (xpk
 * generate_tpu_topologies). */
static int cube_ok(const int d[3], int max_cubes)
{
	static const int small[][3] = { { 2, 2, 1 }, { 2, 2, 2 }, { 2, 2, 4 }, { 2, 4, 4 } };
	for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
		if (d[0] == small[i][0] && d[1] == small[i][1] && d[2] == small[i][2])
			return 1;
	if (d[0] % 4 || d[1] % 4 || d[2] % 4 || d[0] > d[1] || d[1] > d[2])
		return 0;
	long cubes = (long)(d[0] / 4) * (d[1] / 4) * (d[2] / 4);
	return cubes >= 1 && cubes <= max_cubes;
}

int tpf_machine_topology(const struct tpf_machine_type *mt, const char *topology, int *vms,
			 const char **why)
{
	static const char v6e_rule[] =
		"the machine type's own topology (1x1 for ct6e-standard-1t, 2x4 for "
		"ct6e-standard-8t), or for ct6e-standard-4t one of 2x2, 4x4, 4x8, 8x8, 8x16, 16x16";
	static const char v5p_rule[] =
		"2x2x1, 2x2x2, 2x2x4, 2x4x4, or AxBxC with A <= B <= C multiples of 4 in at "
		"most 140 4x4x4 cubes (such as 4x4x4 or 4x8x8)";
	static const char tpu7x_rule[] =
		"2x2x1, 2x2x2, 2x2x4, 2x4x4, or AxBxC with A <= B <= C multiples of 4 in at "
		"most 144 4x4x4 cubes (such as 4x4x4 or 8x8x16); 1x1x1 for tpu7x-standard-1t";
	const char *rule = !strcmp(mt->generation, "v6e") ? v6e_rule
			   : !strcmp(mt->generation, "v5p") ? v5p_rule : tpu7x_rule;
	int d[3] = { 0, 0, 0 }, ok = 0;
	if (!topology || !strcmp(topology, mt->own)) {
		*vms = 1;
		if (why)
			*why = NULL;
		return 0;
	}
	int n = dims_of(topology, d);
	long chips = n > 0 ? (long)d[0] * d[1] * (n == 3 ? d[2] : 1) : 0;
	if (mt->chips == 4 && !strcmp(mt->generation, "v6e")) {
		for (size_t i = 0; n == 2 && v6e_multi[i] && !ok; i++)
			ok = !strcmp(v6e_multi[i], topology);
	} else if (mt->chips == 4 && n == 3) {
		ok = cube_ok(d, !strcmp(mt->generation, "v5p") ? 140 : 144);
	}
	if (!ok || chips % mt->chips) {
		if (why)
			*why = rule;
		return -1;
	}
	*vms = (int)(chips / mt->chips);
	if (why)
		*why = NULL;
	return 0;
}
