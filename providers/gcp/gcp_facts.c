/*
 * What the gcp provider learnt of each node (gcp_backend.h): its shape and
 * queued resource, so that a delete or an edit picks its back-end and its
 * calls without asking the API first.
 */
#include "providers/gcp/gcp_backend.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

void tpf_gcp_facts_init(struct tpf_gcp_facts *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
}

void tpf_gcp_fact_release(struct tpf_gcp_fact *fact)
{
	free(fact->zone);
	free(fact->node);
	free(fact->qr);
	memset(fact, 0, sizeof(*fact));
}

void tpf_gcp_facts_release(struct tpf_gcp_facts *f)
{
	for (size_t i = 0; i < f->n; i++)
		tpf_gcp_fact_release(&f->v[i]);
	free(f->v);
	tpf_strindex_release(&f->by_node);
	for (size_t i = 0; i < f->nqr_zones; i++)
		free(f->qr_zones[i]);
	free(f->qr_zones);
	pthread_mutex_destroy(&f->mu);
}

/* Call with f->mu held. */
static struct tpf_gcp_fact *find(struct tpf_gcp_facts *f, const char *zone, const char *node)
{
	size_t i;
	/* The index holds each node name's first fact; the same name in
	 * another zone (rare) is found by the scan. */
	if (!tpf_strindex_get(&f->by_node, node, &i))
		return NULL;
	if (!strcmp(f->v[i].zone, zone))
		return &f->v[i];
	for (i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].zone, zone) && !strcmp(f->v[i].node, node))
			return &f->v[i];
	return NULL;
}

/* Call with f->mu held: node's fact, made (SHAPE_NODE) when there was none. */
static struct tpf_gcp_fact *get_or_add(struct tpf_gcp_facts *f, const char *zone,
				       const char *node)
{
	struct tpf_gcp_fact *x = find(f, zone, node);
	if (x)
		return x;
	XGROW(f->v, f->n + 1, f->alloc);
	x = &f->v[f->n++];
	memset(x, 0, sizeof(*x));
	x->zone = xstrdup(zone);
	x->node = xstrdup(node);
	x->shape = TPF_GCP_SHAPE_NODE;
	tpf_strindex_put(&f->by_node, x->node, f->n - 1);
	return x;
}

void tpf_gcp_facts_set(struct tpf_gcp_facts *f, const char *zone, const char *node,
		       enum tpf_gcp_shape shape, const char *qr, int nslices)
{
	pthread_mutex_lock(&f->mu);
	struct tpf_gcp_fact *x = get_or_add(f, zone, node);
	x->shape = shape;
	xstrset(&x->qr, qr);
	x->nslices = nslices;
	pthread_mutex_unlock(&f->mu);
}

void tpf_gcp_facts_set_qr(struct tpf_gcp_facts *f, const char *zone, const char *node,
			  const char *qr)
{
	pthread_mutex_lock(&f->mu);
	struct tpf_gcp_fact *x = get_or_add(f, zone, node);
	xstrset(&x->qr, qr);
	if (x->shape == TPF_GCP_SHAPE_NODE || x->shape == TPF_GCP_SHAPE_QUEUED)
		x->shape = qr ? TPF_GCP_SHAPE_QUEUED : TPF_GCP_SHAPE_NODE;
	pthread_mutex_unlock(&f->mu);
}

int tpf_gcp_facts_get(struct tpf_gcp_facts *f, const char *zone, const char *node,
		      struct tpf_gcp_fact *out)
{
	pthread_mutex_lock(&f->mu);
	struct tpf_gcp_fact *x = find(f, zone, node);
	if (x) {
		*out = *x;
		out->zone = xstrdup(x->zone);
		out->node = xstrdup(x->node);
		out->qr = xstrdup(x->qr);
	}
	pthread_mutex_unlock(&f->mu);
	return x != NULL;
}

char **tpf_gcp_facts_multislice_zones(struct tpf_gcp_facts *f, const char *node,
				      const char *zone, size_t *n)
{
	char **v = NULL;
	size_t a = 0;
	*n = 0;
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].shape == TPF_GCP_SHAPE_MULTISLICE && f->v[i].nslices > 1 &&
		    !strcmp(f->v[i].node, node) && strcmp(f->v[i].zone, zone)) {
			XGROW(v, *n + 1, a);
			v[(*n)++] = xstrdup(f->v[i].zone);
		}
	pthread_mutex_unlock(&f->mu);
	return v;
}

void tpf_gcp_facts_qr_zone_add(struct tpf_gcp_facts *f, const char *zone)
{
	pthread_mutex_lock(&f->mu);
	int seen = 0;
	for (size_t k = 0; k < f->nqr_zones && !seen; k++)
		seen = !strcmp(f->qr_zones[k], zone);
	if (!seen) {
		XGROW(f->qr_zones, f->nqr_zones + 1, f->aqr_zones);
		f->qr_zones[f->nqr_zones++] = xstrdup(zone);
	}
	pthread_mutex_unlock(&f->mu);
}

int tpf_gcp_facts_qr_zone_listed(struct tpf_gcp_facts *f, const char *zone)
{
	pthread_mutex_lock(&f->mu);
	int seen = 0;
	for (size_t k = 0; k < f->nqr_zones && !seen; k++)
		seen = !strcmp(f->qr_zones[k], zone);
	pthread_mutex_unlock(&f->mu);
	return seen;
}

const struct tpf_group *tpf_gcp_group_of(const struct tpf_fleet *f, const char *name)
{
	size_t fl = strlen(f->name);
	if (strncmp(name, f->name, fl) || name[fl] != '-')
		return NULL;
	for (size_t i = 0; i < f->ngroups; i++) {
		size_t gl = strlen(f->groups[i].name);
		if (!strncmp(name + fl + 1, f->groups[i].name, gl) && name[fl + 1 + gl] == '-' &&
		    strspn(name + fl + 2 + gl, "0123456789") == strlen(name + fl + 2 + gl))
			return &f->groups[i];
	}
	return NULL;
}

const struct tpf_gcp_backend *tpf_gcp_backend_of_shape(enum tpf_gcp_shape s)
{
	switch (s) {
	case TPF_GCP_SHAPE_INSTANCE:
	case TPF_GCP_SHAPE_SLICE:
	case TPF_GCP_SHAPE_MULTISLICE:
		return &tpf_gcp_compute_backend;
	case TPF_GCP_SHAPE_NODE:
	case TPF_GCP_SHAPE_QUEUED:
		break;
	}
	return &tpf_gcp_tpu_backend;
}

const struct tpf_gcp_backend *tpf_gcp_backend_of_api(enum tpf_api api)
{
	return api == TPF_API_COMPUTE ? &tpf_gcp_compute_backend : &tpf_gcp_tpu_backend;
}
