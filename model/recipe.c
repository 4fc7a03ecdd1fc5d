#include "model/recipe.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

void tpf_recipe_copy(struct tpf_recipe *dst, const struct tpf_recipe *src)
{
	struct tpf_kvlist labels = TPF_KVLIST_INIT;
	tpf_kvlist_merge(&labels, &src->labels);
	struct tpf_recipe tmp = {
		.accelerator_type = xstrdup(src->accelerator_type),
		.runtime_version = xstrdup(src->runtime_version),
		.zone = xstrdup(src->zone),
		.preemptible = src->preemptible,
		.spot = src->spot,
		.workers = src->workers,
		.labels = labels,
		.queued = src->queued,
		.valid_until = xstrdup(src->valid_until),
		.slices = src->slices,
	};
	tpf_node_fields_copy(&tmp.node, &src->node);
	tpf_compute_copy(&tmp.compute, &src->compute);
	tpf_recipe_release(dst);
	*dst = tmp;
}

void tpf_recipe_release(struct tpf_recipe *r)
{
	free(r->accelerator_type);
	free(r->runtime_version);
	free(r->zone);
	free(r->valid_until);
	tpf_kvlist_release(&r->labels);
	tpf_node_fields_release(&r->node);
	tpf_compute_release(&r->compute);
	memset(r, 0, sizeof(*r));
}

const char *tpf_recipe_scheduling(const struct tpf_recipe *r)
{
	if (r->spot)
		return "spot";
	if (r->compute.flex_start)
		return "flex-start";
	if (r->preemptible)
		return "preemptible";
	return "on-demand";
}

void tpf_job_copy(struct tpf_job *dst, const struct tpf_job *src)
{
	struct tpf_kvlist env = TPF_KVLIST_INIT;
	tpf_kvlist_merge(&env, &src->env);
	struct tpf_job tmp = {
		.commit = xstrdup(src->commit),
		.repo = xstrdup(src->repo),
		.setup = xstrdup(src->setup),
		.run = xstrdup(src->run),
		.env = env,
		.secrets_hash = xstrdup(src->secrets_hash),
	};
	tpf_job_release(dst);
	*dst = tmp;
}

void tpf_job_release(struct tpf_job *j)
{
	free(j->commit);
	free(j->repo);
	free(j->setup);
	free(j->run);
	tpf_kvlist_release(&j->env);
	free(j->secrets_hash);
	memset(j, 0, sizeof(*j));
}

int tpf_recipe_slices(const struct tpf_recipe *r)
{
	return r->slices > 1 ? r->slices : 1;
}

int tpf_recipe_slice_workers(const struct tpf_recipe *r)
{
	int per = r->workers / tpf_recipe_slices(r);
	return per > 0 ? per : 1;
}

char *tpf_lineage_label(const char *lineage, char out[TPF_LINEAGE_LABEL_LEN + 1])
{
	size_t n = 0;
	out[0] = '\0';
	for (const char *c = lineage; c && *c && n < TPF_LINEAGE_LABEL_LEN; c++) {
		if (*c == '-')
			continue;
		if (!isxdigit((unsigned char)*c))
			break;
		out[n++] = (char)tolower((unsigned char)*c);
	}
	if (n < TPF_LINEAGE_LABEL_LEN) {
		out[0] = '\0';
		return NULL;
	}
	out[n] = '\0';
	return out;
}
