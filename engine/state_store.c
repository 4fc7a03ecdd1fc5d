/*
 * Opening the fleet's state backend and the object store beside it
 * (engine/state_store.h).
 */
#include "engine/state_store.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static void gcs_config_of(const struct tpf_fleet *f, struct tpf_backend_gcs_config *c)
{
	memset(c, 0, sizeof(*c));
	c->fleet = f->name;
	c->gcs.endpoint = f->state_gcs.endpoint;
	/* The same credentials as the Cloud TPU API (google/gcp_auth.h). */
	c->gcs.auth.credentials = f->gcp.credentials;
	c->gcs.auth.impersonate = f->gcp.impersonate_service_account;
	c->gcs.auth.quota_project = f->gcp.quota_project;
}

int tpf_fleet_backend_open(struct tpf_backend **out, const struct tpf_fleet *f,
			   struct tpf_diags *d)
{
	if (!f->state_gcs.bucket) {
		*out = tpf_backend_open_local(f->state_path);
		return 0;
	}
	struct tpf_backend_gcs_config c;
	gcs_config_of(f, &c);
	c.bucket = f->state_gcs.bucket;
	c.prefix = f->state_gcs.prefix;
	return tpf_backend_open_gcs(out, &c, d);
}

int tpf_fleet_gcs_config(const struct tpf_fleet *f, struct tpf_backend_gcs_config *c)
{
	gcs_config_of(f, c);
	c->bucket = f->state_gcs.bucket;
	c->prefix = f->state_gcs.prefix;
	return f->state_gcs.bucket != NULL;
}

int tpf_fleet_objstore_open(struct tpf_objstore **out, const struct tpf_fleet *f,
			    const char *suffix, struct tpf_diags *d)
{
	struct tpf_backend_gcs_config c;
	int gcs = tpf_fleet_gcs_config(f, &c);
	return tpf_objstore_open_beside(out, f->state_path, gcs ? &c : NULL, suffix, d);
}

int tpf_source_backend_open(struct tpf_backend **out, const struct tpf_fleet *f,
			    const char *source, struct tpf_diags *d)
{
	if (strncmp(source, "gs://", 5)) {
		*out = tpf_backend_open_local(source);
		return 0;
	}
	const char *bucket = source + 5, *slash = strchr(bucket, '/');
	if (slash == bucket || !*bucket)
		return tpf_errorx(d, NULL, "Write it as gs://BUCKET or gs://BUCKET/PREFIX.",
				  "'%s' names no bucket", source);
	char *b = slash ? xstrndup(bucket, (size_t)(slash - bucket)) : xstrdup(bucket);
	struct tpf_backend_gcs_config c;
	gcs_config_of(f, &c);
	c.bucket = b;
	c.prefix = slash ? slash + 1 : NULL;
	int rc = tpf_backend_open_gcs(out, &c, d);
	free(b);
	return rc;
}
