/*
 * The table of providers (registry.h).
 */
#include "providers/registry/registry.h"
#include "providers/gcp/gcp.h"
#include "providers/local/local.h"

const struct tpf_provider_row tpf_provider_table[] = {
	{ TPF_PROVIDER_LOCAL, "local", tpf_local_provider_open },
	{ TPF_PROVIDER_GCP, "gcp", tpf_gcp_provider_open },
};

const size_t tpf_provider_table_size = sizeof(tpf_provider_table) / sizeof(tpf_provider_table[0]);

int tpf_provider_open(struct tpf_provider **out, const struct tpf_fleet *f, struct tpf_diags *d)
{
	return tpf_provider_open_from(tpf_provider_table, tpf_provider_table_size, out, f, d);
}
