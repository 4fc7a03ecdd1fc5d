/*
 * The fleet's state backend (state/backend.h) as its fleet file declares
 * it, and the state commands that go through it: force-unlock and push.
 */
#ifndef TPF_ENGINE_STATE_STORE_H
#define TPF_ENGINE_STATE_STORE_H

#include "config/config.h"
#include "state/backend.h"
#include "util/diag.h"

struct tpf_session;

/*
 * Open the backend f declares: state.gcs (Cloud Storage, with the
 * credentials of provider.gcp: key file, impersonation, quota project, else
 * Application Default Credentials) or the file at f->state_path. *out:
 * free with tpf_backend_free. TPF_ERROR with a diagnostic.
 */
int tpf_fleet_backend_open(struct tpf_backend **out, const struct tpf_fleet *f,
			   struct tpf_diags *d);

/*
 * The Cloud Storage settings of f's state.gcs (bucket, prefix, fleet,
 * endpoint, provider.gcp credentials; all borrowed from f) into *c, for
 * other objects beside the state (watch's leader lease, state/lease.h).
 * Returns 1 when f keeps its state in Cloud Storage, else 0 (*c unusable).
 */
int tpf_fleet_gcs_config(const struct tpf_fleet *f, struct tpf_backend_gcs_config *c);

/*
 * The object store beside f's state (state/backend.h
 * tpf_objstore_open_beside): "<state path><suffix>..." or, with state.gcs,
 * "[PREFIX/]<fleet><suffix>..." in its bucket with provider.gcp's
 * credentials. TPF_ERROR with a diagnostic; free with tpf_objstore_free.
 */
int tpf_fleet_objstore_open(struct tpf_objstore **out, const struct tpf_fleet *f,
			    const char *suffix, struct tpf_diags *d);

/*
 * Open a backend named by `source` for fleet f: "gs://BUCKET[/PREFIX]"
 * (the objects <PREFIX>/<fleet>.tfstate, with f's credentials and
 * state.gcs.endpoint) or a state file's path. For `state push`.
 */
int tpf_source_backend_open(struct tpf_backend **out, const struct tpf_fleet *f,
			    const char *source, struct tpf_diags *d);

/* Terraform's force-unlock on the session's backend (opened here when the
 * session has none). 0 when unlocked, else a diagnostic in s->d. */
int tpf_session_force_unlock(struct tpf_session *s, const char *id);

/*
 * Terraform's state push, and tpuform's way to move state between
 * backends: read the state at `source` (a file, or gs://BUCKET[/PREFIX] as
 * tpf_source_backend_open says; it must exist and belong to this fleet)
 * and write it to the session's backend, whose lock the session holds.
 * Lineage and serial are checked unless force (tpf_state_push_check).
 * The source is left as it was. *serial_out (may be NULL): the serial written.
 */
int tpf_session_state_push(struct tpf_session *s, const char *source, int force,
			   long *serial_out);

#endif
