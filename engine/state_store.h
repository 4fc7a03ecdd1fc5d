/*
 * The fleet's state backend (state/backend.h) as its fleet file declares
 * it (the state commands that go through it, force-unlock and push, are
 * engine/pipeline/state_commands.h).
 */
#ifndef TPF_ENGINE_STATE_STORE_H
#define TPF_ENGINE_STATE_STORE_H

#include "config/config.h"
#include "state/backend.h"
#include "util/diag.h"

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

#endif
