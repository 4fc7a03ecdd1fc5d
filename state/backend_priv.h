/*
 * Private to state/: the backend interface (state/backend.h) that
 * backend.c (dispatch and the local file), backend_gcs.c and lock.c share.
 */
#ifndef TPF_STATE_BACKEND_PRIV_H
#define TPF_STATE_BACKEND_PRIV_H

#include "state/backend.h"
#include <jansson.h>

struct tpf_backend_ops {
	int local;
	int (*load)(struct tpf_backend *b, struct tpf_state *st, struct tpf_diags *d);
	int (*save)(struct tpf_backend *b, struct tpf_state *st, struct tpf_diags *d);
	int (*lock)(struct tpf_backend *b, struct tpf_lock *l, const char *operation,
		    double timeout, struct tpf_diags *d);
	/* Let go of a held lock; failures are ignored (the next run reports the
	 * lock as held, with its info and force-unlock). */
	void (*unlock)(struct tpf_backend *b, struct tpf_lock *l);
	int (*force_unlock)(struct tpf_backend *b, const char *id, struct tpf_diags *d);
	void (*free)(struct tpf_backend *b);
};

struct tpf_backend {
	const struct tpf_backend_ops *ops;
	char *where; /* tpf_backend_where */
	tpf_backend_fence_fn fence; /* tpf_backend_set_fence; may be NULL */
	void *fence_ctx;
};

/* The name of a fleet's object in its bucket: <prefix>/<fleet><suffix>
 * (trailing slashes of the prefix dropped; no prefix: <fleet><suffix>),
 * the layout of state/backend.h. Caller frees. (objstore_gcs.c; the
 * backend, the ledger and the lease name their objects so.) */
char *tpf_backend_gcs_object(const struct tpf_backend_gcs_config *c, const char *suffix);

/* Lock info (lock.c): Terraform's LockInfo JSON with a fresh Created and
 * Who, fields in its struct's order (new reference). */
json_t *tpf_lock_info_new(const char *id, const char *operation, const char *path);
/*
 * The "Error acquiring the state lock" diagnostic: "Error message: MSG",
 * then the Lock Info block from `info` (NULL: "not available: WHY"), then
 * Terraform's closing paragraph (remote: with a force-unlock hint).
 * Returns TPF_ELOCKED.
 */
int tpf_lock_conflict(struct tpf_diags *d, const char *message, json_t *info, const char *why,
		      int remote);
/* The local force-unlock (lock.c). */
int tpf_lock_force_unlock_file(const char *state_path, const char *id, struct tpf_diags *d);
/* The next wait of Terraform's lock backoff (1 s doubling to 16 s), never past
 * `deadline` (monotonic seconds); -1 when the deadline has passed. */
double tpf_lock_next_wait(double *delay, double deadline);

#endif
