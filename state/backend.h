/*
 * Where the state lives: the backend seam. Load, save and lock go through
 * a backend, as Terraform's do (docs/terraform-behaviour.md section 4):
 *
 *  - local: the state file at a path (state.c: atomic writes, <path>.backup)
 *    and the fcntl lock beside it (lock.c). What tpuform always did.
 *  - gcs: Cloud Storage (backend_gcs.c, over google/gcs.h), with
 *    Terraform's gcs backend layout under the prefix:
 *        <prefix>/<fleet>.tfstate          the state (same JSON as the file)
 *        <prefix>/<fleet>.tfstate.backup   the state as it was before this
 *                                          process first replaced it
 *        <prefix>/<fleet>.tflock           the lock: Terraform's lock info JSON
 *        <prefix>/<fleet>.tfleader         the leader lease of `tpuform watch`
 *                                          (state/lease.h): who heals the fleet
 *    The lock object is created with ifGenerationMatch=0 (only if absent)
 *    and deleted with ifGenerationMatch=<its generation>. Every state write
 *    uploads with ifGenerationMatch=<the generation read> (0 when none
 *    existed): a writer that skipped the lock (-lock=false, another tool)
 *    is detected (HTTP 412) and refused, never overwritten; Terraform's gcs
 *    backend relies on the lock alone. A write that fails leaves the state
 *    in "errored.tfstate" in the working directory, as Terraform does, and
 *    the diagnostic names it.
 *
 * A state loaded through a backend remembers it (st->backend), so
 * tpf_state_save(st, ...) writes there whatever path it is given; callers
 * that save (engine/apply/apply.c) need not know which backend is in use.
 * Not thread-safe: one save at a time per backend (the callers serialise).
 */
#ifndef TPF_STATE_BACKEND_H
#define TPF_STATE_BACKEND_H

#include "google/gcs.h"
#include "state/lock.h"
#include "state/state.h"
#include "util/diag.h"

struct tpf_backend;

/* Where Terraform (and tpuform) leave a state that could not be written. */
#define TPF_ERRORED_STATE "errored.tfstate"

struct tpf_backend_gcs_config {
	const char *bucket;  /* required */
	const char *prefix;  /* may be NULL or "": objects at the bucket's root */
	const char *fleet;   /* names the objects: <prefix>/<fleet>.tfstate */
	struct tpf_gcs_config gcs; /* endpoint and credentials */
};

/* The state file at path (copied). Never fails. */
struct tpf_backend *tpf_backend_open_local(const char *path);
/* Cloud Storage; opens the client (no request yet). TPF_ERROR with a
 * diagnostic for a bad endpoint or credentials. */
int tpf_backend_open_gcs(struct tpf_backend **out, const struct tpf_backend_gcs_config *c,
			 struct tpf_diags *d);
/* NULL ok. Any state loaded through it must not be saved afterwards. */
void tpf_backend_free(struct tpf_backend *b);

/*
 * The object store (state/objstore.h) beside a state: c NULL, the local
 * files "<state_path><suffix><name>"; else the objects
 * "<prefix>/<fleet><suffix><name>" of c's bucket (the layout above), with
 * c's client settings. Kept logs (suffix ".logs/"), the run ledger
 * (".ledger/") and the lease ("") live there. TPF_ERROR with a diagnostic
 * for a bad endpoint or credentials. Free with tpf_objstore_free.
 */
struct tpf_objstore;
int tpf_objstore_open_beside(struct tpf_objstore **out, const char *state_path,
			     const struct tpf_backend_gcs_config *c, const char *suffix,
			     struct tpf_diags *d);

/* For messages: the path, or "gs://BUCKET/PREFIX/FLEET.tfstate". Borrowed. */
const char *tpf_backend_where(const struct tpf_backend *b);
/* 1 for the local file backend. */
int tpf_backend_is_local(const struct tpf_backend *b);

/*
 * Load the state (tpf_state_load's rules and refusals; a missing state is
 * a blank one) and bind st to b, so that tpf_state_save writes to b.
 * *st is overwritten, not freed.
 */
int tpf_backend_load(struct tpf_backend *b, struct tpf_state *st, struct tpf_diags *d);

/*
 * Save st to b (tpf_state_save's rules: nothing written when the content
 * is unchanged, serial + 1 otherwise, the backup once). gcs: a 412 (the
 * object changed since it was read) is TPF_ESTALE, "the state in
 * gs://... was changed by another writer"; that and any other failed
 * write leave the new state in TPF_ERRORED_STATE (the diagnostic says so
 * and how to push it back). After a 412 later saves only update that file.
 */
int tpf_backend_save(struct tpf_backend *b, struct tpf_state *st, struct tpf_diags *d);

/*
 * Fencing (watch's leader lease, state/lease.h): fn(ctx, d) runs right
 * before every save through b that would write something (content
 * changed); a non-zero return refuses the save with that code, fn's
 * diagnostic in d, and nothing is written. NULL fn removes it. The check
 * and the write are two requests (Cloud Storage has no multi-object
 * transactions): the state object's own ifGenerationMatch covers the gap,
 * as state/lease.h tpf_lease_fence_state explains.
 */
typedef int (*tpf_backend_fence_fn)(void *ctx, struct tpf_diags *d);
void tpf_backend_set_fence(struct tpf_backend *b, tpf_backend_fence_fn fn, void *ctx);

/*
 * Take the lock (tpf_lock_acquire's contract: timeout in seconds, Terraform's
 * backoff, TPF_ELOCKED with "Error acquiring the state lock" and the
 * holder's Lock Info). *l is overwritten; tpf_lock_release lets it go.
 * b must outlive the lock.
 */
int tpf_backend_lock(struct tpf_backend *b, struct tpf_lock *l, const char *operation,
		     double timeout, struct tpf_diags *d);

/*
 * Terraform's force-unlock: remove the lock whose ID is id.
 * gcs: the lock object is deleted (with its generation) when its ID
 * matches; another ID is refused, naming the one held.
 * local: the fcntl lock dies with its process, so a live holder cannot be
 * unlocked ("Local state cannot be unlocked by another process", as
 * Terraform); a lock info file left by a dead one is removed.
 * "not locked" is an error too. 0 when unlocked.
 */
int tpf_backend_force_unlock(struct tpf_backend *b, const char *id, struct tpf_diags *d);

/*
 * Terraform's state push check (statemgr.CheckValidImport): an empty or
 * absent current state accepts anything; otherwise the lineage must match
 * ("cannot import state with lineage ... over unrelated state with
 * lineage ...") and the serial must not go backwards ("cannot import
 * state with serial N over newer state with serial M"). force skips both.
 * Pure: 0 or TPF_ERROR with a diagnostic.
 */
int tpf_state_push_check(const struct tpf_state *cur, const struct tpf_state *in, int force,
			 struct tpf_diags *d);

/*
 * Replace the state cur (loaded through its backend, under the lock) by
 * `in` (consumed: released on return) after tpf_state_push_check, and save
 * it. The written serial is in's, or cur's + 1 when that is higher, so a
 * serial never goes backwards in one lineage.
 */
int tpf_state_push(struct tpf_state *cur, struct tpf_state *in, int force, struct tpf_diags *d);

#endif
