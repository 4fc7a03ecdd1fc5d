/*
 * Provider dispatch: open the provider the fleet file declares through a
 * table of rows (providers/provider.h struct tpf_provider_row). The table
 * itself lives a layer above every provider (providers/registry/), so
 * nothing here calls up.
 */
#include "providers/provider.h"
#include "util/buf.h"
#include "util/fs.h"

#include <stddef.h>

int tpf_provider_open_from(const struct tpf_provider_row *rows, size_t n,
			   struct tpf_provider **out, const struct tpf_fleet *f, struct tpf_diags *d)
{
	*out = NULL;
	if (f->ssh.private_key)
		tpf_warn_if_readable_by_others(f->ssh.private_key, "ssh.private_key", d);
	for (size_t i = 0; f->provider != TPF_PROVIDER_NONE && i < n; i++)
		if (rows[i].kind == f->provider)
			return rows[i].open(out, f, d);
	struct tpf_buf names = TPF_BUF_INIT;
	for (size_t i = 0; i < n; i++)
		tpf_buf_addf(&names, "%sprovider.%s", i ? " or " : "", rows[i].name);
	int rc = tpf_errorx(d, NULL,
			    "add 'provider: { local: {} }' or 'provider: { gcp: { project: ... } }'",
			    f->provider == TPF_PROVIDER_NONE
				    ? "fleet '%s' declares no provider: expected %s"
				    : "fleet '%s' declares a provider this tpuform does not have: "
				      "expected %s",
			    f->name ? f->name : "", n ? names.buf : "none");
	tpf_buf_release(&names);
	return rc;
}

void tpf_provider_free(struct tpf_provider *p)
{
	if (p && p->ops && p->ops->free)
		p->ops->free(p);
}

void tpf_provider_recorded(struct tpf_provider *p, const struct tpf_recipe *r)
{
	if (p && p->ops && p->ops->recorded)
		p->ops->recorded(p, r);
}

int tpf_provider_interrupted(const struct tpf_provider *p)
{
	return p && p->interrupted && *p->interrupted;
}
