/*
 * Provider dispatch: open the provider the fleet file declares.
 */
#include "providers/provider.h"
#include "util/fs.h"

#include <stddef.h>

/* Weak, so that a build without providers/gcp still links (the local
 * provider alone is enough for a newcomer); the symbol is then NULL. */
extern int tpf_gcp_provider_open(struct tpf_provider **out, const struct tpf_fleet *f,
				 struct tpf_diags *d) __attribute__((weak));

int tpf_provider_open(struct tpf_provider **out, const struct tpf_fleet *f, struct tpf_diags *d)
{
	*out = NULL;
	if (f->ssh.private_key)
		tpf_warn_if_readable_by_others(f->ssh.private_key, "ssh.private_key", d);
	switch (f->provider) {
	case TPF_PROVIDER_LOCAL:
		return tpf_local_provider_open(out, f, d);
	case TPF_PROVIDER_GCP:
		if (!tpf_gcp_provider_open)
			return tpf_errorx(d, NULL, "rebuild tpuform with providers/gcp, or use provider.local",
					  "the gcp provider is not built into this tpuform");
		return tpf_gcp_provider_open(out, f, d);
	case TPF_PROVIDER_NONE:
		break;
	}
	return tpf_errorx(d, NULL, "add 'provider: { local: {} }' or 'provider: { gcp: { project: ... } }'",
			  "fleet '%s' declares no provider: expected provider.local or provider.gcp",
			  f->name ? f->name : "");
}

void tpf_provider_free(struct tpf_provider *p)
{
	if (p && p->ops && p->ops->free)
		p->ops->free(p);
}

int tpf_provider_interrupted(const struct tpf_provider *p)
{
	return p && p->interrupted && *p->interrupted;
}
