/*
 * Chips of a node (model/chips.h).
 */
#include "model/chips.h"
#include "model/accel.h"

#include <string.h>

const char *tpf_recipe_type(const struct tpf_recipe *r)
{
	if (r->compute.api == TPF_API_COMPUTE)
		return r->compute.machine_type;
	return r->accelerator_type;
}

int tpf_recipe_chips(const struct tpf_recipe *r)
{
	int slices = tpf_recipe_slices(r);
	if (r->compute.api == TPF_API_COMPUTE) {
		const struct tpf_machine_type *mt =
			r->compute.machine_type ? tpf_machine_type_lookup(r->compute.machine_type, NULL)
						: NULL;
		int vms = r->workers > 0 ? r->workers : 1;
		return mt ? mt->chips * vms : 0;
	}
	struct tpf_accel a;
	if (!r->accelerator_type || tpf_accel_lookup(r->accelerator_type, &a, NULL))
		return 0;
	int per_slice = strcmp(a.family, "v5litepod") && strcmp(a.family, "v6e") ? a.size / 2 : a.size;
	if (per_slice < 1)
		per_slice = 1;
	return per_slice * slices;
}

const char *tpf_recipe_generation(const struct tpf_recipe *r)
{
	if (r->compute.api == TPF_API_COMPUTE) {
		const struct tpf_machine_type *mt =
			r->compute.machine_type ? tpf_machine_type_lookup(r->compute.machine_type, NULL)
						: NULL;
		return mt ? mt->generation : NULL;
	}
	struct tpf_accel a;
	if (!r->accelerator_type || tpf_accel_lookup(r->accelerator_type, &a, NULL))
		return NULL;
	return strcmp(a.family, "v5litepod") ? a.family : "v5e";
}
