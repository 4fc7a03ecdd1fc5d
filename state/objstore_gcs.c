/*
 * The Cloud Storage row of the object store seam (state/objstore.h), over
 * google/gcs.h: objects <prefix><name> of one bucket.
 */
#include "state/objstore_priv.h"
#include "state/backend_priv.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct gcs_store {
	struct tpf_objstore base;
	struct tpf_gcs *g;
	char *bucket;
};

#define GS(s) ((struct gcs_store *)(s))

static char *obj(const struct tpf_objstore *s, const char *name)
{
	return xasprintf("%s%s", s->prefix, name);
}

static char *gcs_where(const struct tpf_objstore *s, const char *name)
{
	return xasprintf("gs://%s/%s%s", GS(s)->bucket, s->prefix, name);
}

static int gcs_get(struct tpf_objstore *s, const char *name, size_t max, const char *what,
		   struct tpf_buf *out, long long *generation, struct tpf_diags *d)
{
	(void)what;
	char *o = obj(s, name);
	struct tpf_buf b = TPF_BUF_INIT;
	int rc = tpf_gcs_read(GS(s)->g, GS(s)->bucket, o, max, &b, generation, d);
	if (!rc)
		tpf_buf_add(out, b.buf ? b.buf : "", b.len);
	tpf_buf_release(&b);
	free(o);
	return rc;
}

static int gcs_stat(struct tpf_objstore *s, const char *name, long long *generation,
		    struct tpf_diags *d)
{
	char *o = obj(s, name);
	struct tpf_gcs_object meta;
	int rc = tpf_gcs_stat(GS(s)->g, GS(s)->bucket, o, &meta, d);
	if (!rc) {
		*generation = meta.generation;
		tpf_gcs_object_release(&meta);
	}
	free(o);
	return rc;
}

static int gcs_put(struct tpf_objstore *s, const char *name, const char *data, size_t len,
		   const char *content_type, long long if_generation, long long *generation,
		   struct tpf_diags *d)
{
	char *o = obj(s, name);
	int rc = tpf_gcs_write(GS(s)->g, GS(s)->bucket, o, data, len, content_type,
			       if_generation == TPF_OBJ_ANY ? -1 : if_generation, generation, d);
	free(o);
	return rc;
}

static int gcs_del(struct tpf_objstore *s, const char *name, long long if_generation,
		   struct tpf_diags *d)
{
	char *o = obj(s, name);
	int rc = tpf_gcs_delete(GS(s)->g, GS(s)->bucket, o, if_generation, d);
	free(o);
	return rc;
}

static int gcs_list(struct tpf_objstore *s, const char *name_prefix, char ***names,
		    long long **gens, size_t *n, struct tpf_diags *d)
{
	char *pfx = obj(s, name_prefix);
	size_t plen = strlen(pfx);
	int rc = tpf_gcs_list_gen(GS(s)->g, GS(s)->bucket, pfx, names, gens, n, d);
	for (size_t i = 0; !rc && i < *n; i++)
		memmove((*names)[i], (*names)[i] + plen, strlen((*names)[i]) - plen + 1);
	free(pfx);
	return rc;
}

static void gcs_free(struct tpf_objstore *s)
{
	tpf_gcs_free(GS(s)->g);
	free(GS(s)->bucket);
}

static const struct tpf_objstore_ops gcs_ops = {
	.shared = 1,
	.where = gcs_where,
	.get = gcs_get,
	.stat = gcs_stat,
	.put = gcs_put,
	.del = gcs_del,
	.list = gcs_list,
	.free = gcs_free,
};

int tpf_objstore_open_gcs(struct tpf_objstore **out, const char *bucket, const char *prefix,
			  const struct tpf_gcs_config *c, struct tpf_diags *d)
{
	struct gcs_store *g = xcalloc(1, sizeof(*g));
	g->base.ops = &gcs_ops;
	g->base.prefix = xstrdup(prefix ? prefix : "");
	g->bucket = xstrdup(bucket);
	*out = NULL;
	if (tpf_gcs_open(&g->g, c, d)) {
		tpf_objstore_free(&g->base);
		return TPF_ERROR;
	}
	*out = &g->base;
	return 0;
}

char *tpf_backend_gcs_object(const struct tpf_backend_gcs_config *c, const char *suffix)
{
	const char *p = c->prefix ? c->prefix : "";
	size_t plen = strlen(p);
	while (plen && p[plen - 1] == '/')
		plen--;
	return plen ? xasprintf("%.*s/%s%s", (int)plen, p, c->fleet, suffix)
		    : xasprintf("%s%s", c->fleet, suffix);
}

int tpf_objstore_open_beside(struct tpf_objstore **out, const char *state_path,
			     const struct tpf_backend_gcs_config *c, const char *suffix,
			     struct tpf_diags *d)
{
	if (!c) {
		char *prefix = xasprintf("%s%s", state_path, suffix);
		*out = tpf_objstore_open_local(prefix);
		free(prefix);
		return 0;
	}
	char *prefix = tpf_backend_gcs_object(c, suffix);
	int rc = tpf_objstore_open_gcs(out, c->bucket, prefix, &c->gcs, d);
	free(prefix);
	return rc;
}
