/*
 * `tpuform validate -remote` (gcp.h tpf_gcp_validate_remote): each group's
 * accelerator type and runtime version against what the Cloud TPU API
 * offers in each of its zones (acceleratorTypes.list,
 * runtimeVersions.list; docs/cloud-tpu-api.md), each zone listed once.
 */
#include "providers/gcp/gcp.h"
#include "providers/gcp/tpu/gcp_api.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* What one zone offers, listed once however many groups name it. */
struct offering {
	const char *zone;
	int rc;
	char **types, **runtimes;
	size_t ntypes, nruntimes;
};

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int has(char **v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i], s))
			return 1;
	return 0;
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void missing(struct tpf_diags *d, const char *group, const char *noun, const char *want,
		    const char *zone, char **v, size_t n)
{
	struct tpf_buf list = TPF_BUF_INIT;
	qsort(v, n, sizeof(*v), cmp_strp);
	for (size_t i = 0; i < n; i++)
		tpf_buf_addf(&list, "%s%s", i ? ", " : "", v[i]);
	char *hint = xasprintf("zone '%s' offers: %s", zone, n ? list.buf : "none");
	tpf_errorx(d, group, hint, "group '%s': %s '%s' is not offered in zone '%s'", group, noun,
		   want, zone);
	free(hint);
	tpf_buf_release(&list);
}

int tpf_gcp_validate_remote(const struct tpf_fleet *f, struct tpf_diags *d)
{
	struct tpf_gcp_client *c = NULL;
	struct offering *zs = NULL;
	size_t nz = 0, alloc = 0;
	int rc = 0;
	if (tpf_gcp_client_open_fleet(&c, f, d) < 0)
		return TPF_ERROR;
	for (size_t g = 0; g < f->ngroups; g++) {
		const struct tpf_group *gr = &f->groups[g];
		for (size_t z = 0; z < gr->nzones; z++) {
			struct offering *o = NULL;
			for (size_t i = 0; i < nz && !o; i++)
				if (!strcmp(zs[i].zone, gr->zones[z]))
					o = &zs[i];
			if (!o) {
				XGROW(zs, nz + 1, alloc);
				o = &zs[nz++];
				memset(o, 0, sizeof(*o));
				o->zone = gr->zones[z];
				o->rc = tpf_gcp_list_accelerator_types(c, o->zone, &o->types,
								       &o->ntypes, d);
				if (o->rc == 0)
					o->rc = tpf_gcp_list_runtime_versions(c, o->zone, &o->runtimes,
									      &o->nruntimes, d);
			}
			if (o->rc < 0) {
				rc = TPF_ERROR;
				continue;
			}
			if (gr->accelerator_type && !has(o->types, o->ntypes, gr->accelerator_type)) {
				missing(d, gr->name, "accelerator type", gr->accelerator_type, o->zone,
					o->types, o->ntypes);
				rc = TPF_ERROR;
			}
			if (gr->runtime_version &&
			    !has(o->runtimes, o->nruntimes, gr->runtime_version)) {
				missing(d, gr->name, "runtime version", gr->runtime_version, o->zone,
					o->runtimes, o->nruntimes);
				rc = TPF_ERROR;
			}
		}
	}
	for (size_t i = 0; i < nz; i++) {
		free_strv(zs[i].types, zs[i].ntypes);
		free_strv(zs[i].runtimes, zs[i].nruntimes);
	}
	free(zs);
	tpf_gcp_client_free(c);
	return rc;
}
