/*
 * Opening the fleet's state backend, force-unlock and state push
 * (engine/state_store.h).
 */
#include "engine/state_store.h"
#include "engine/session.h"
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

int tpf_session_force_unlock(struct tpf_session *s, const char *id)
{
	if (!s->backend && tpf_fleet_backend_open(&s->backend, &s->fleet, &s->d))
		return TPF_ERROR;
	return tpf_backend_force_unlock(s->backend, id, &s->d);
}

/* Read the state at source into *in, which must exist and be this fleet's. */
static int read_source(struct tpf_session *s, struct tpf_backend *src, int force,
		       struct tpf_state *in)
{
	int rc = tpf_backend_load(src, in, &s->d);
	in->backend = NULL; /* never written back: the source stays as it was */
	if (rc)
		return rc;
	if (!in->last_json)
		return tpf_errorx(&s->d, NULL,
				  "Name an existing state file, or gs://BUCKET/PREFIX where the "
				  "state object is PREFIX/FLEET.tfstate.",
				  "there is no state at '%s'", tpf_backend_where(src));
	if (!force && in->fleet && strcmp(in->fleet, s->fleet.name))
		return tpf_errorx(&s->d, NULL, "Push a state of this fleet, or add -force.",
				  "state '%s' belongs to fleet '%s', not '%s'",
				  tpf_backend_where(src), in->fleet, s->fleet.name);
	return 0;
}

int tpf_session_state_push(struct tpf_session *s, const char *source, int force,
			   long *serial_out)
{
	struct tpf_backend *src = NULL;
	struct tpf_state in;
	memset(&in, 0, sizeof(in));
	if (!s->have_state || !s->state.backend)
		return tpf_error(&s->d, "internal error: state push needs the session's state");
	if (tpf_source_backend_open(&src, &s->fleet, source, &s->d))
		return TPF_ERROR;
	if (!strcmp(tpf_backend_where(src), tpf_backend_where(s->state.backend))) {
		tpf_backend_free(src);
		return tpf_errorx(&s->d, NULL, "Name the old location: the file or gs://BUCKET/PREFIX "
				  "the state is moving from.",
				  "'%s' is this fleet's state already", source);
	}
	int rc = read_source(s, src, force, &in);
	if (!rc)
		rc = tpf_state_push(&s->state, &in, force, &s->d);
	else
		tpf_state_release(&in);
	if (!rc && serial_out)
		*serial_out = s->state.serial;
	tpf_backend_free(src);
	return rc;
}
