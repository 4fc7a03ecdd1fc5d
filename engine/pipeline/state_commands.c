/*
 * Terraform's force-unlock and state push on the pipeline's backend
 * (engine/pipeline/state_commands.h).
 */
#include "engine/pipeline/state_commands.h"
#include "engine/state_store.h"

#include <stdlib.h>
#include <string.h>

int tpf_pipeline_force_unlock(struct tpf_pipeline *s, const char *id)
{
	if (!s->backend && tpf_fleet_backend_open(&s->backend, &s->fleet, &s->d))
		return TPF_ERROR;
	return tpf_backend_force_unlock(s->backend, id, &s->d);
}

/* Read the state at source into *in, which must exist and be this fleet's. */
static int read_source(struct tpf_pipeline *s, struct tpf_backend *src, int force,
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

int tpf_pipeline_state_push(struct tpf_pipeline *s, const char *source, int force,
			   long *serial_out)
{
	struct tpf_backend *src = NULL;
	struct tpf_state in;
	memset(&in, 0, sizeof(in));
	if (!s->have_state || !s->state.backend)
		return tpf_error(&s->d, "internal error: state push needs the pipeline's state");
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
