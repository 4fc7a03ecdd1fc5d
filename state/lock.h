/*
 * State locking, as Terraform's local backend does it (docs/terraform-behaviour.md
 * section 4): a non-blocking fcntl(F_SETLK) write lock, plus a lock-info
 * JSON beside the state with Terraform's Go field names: ID (UUID),
 * Operation ("OperationTypeApply"...), Info, Who (user@host), Version,
 * Created (UTC RFC 3339), Path.
 *
 * The fcntl lock is taken on "<state>.lock" rather than the state file
 * itself, because state writes rename a new file over the old one and a
 * lock on the old inode would no longer protect the path. The info file is
 * "<dir>/.<state basename>.lock.info", mode 0600, removed on release.
 * The kernel drops the fcntl lock when the process dies, so a crash never
 * leaves the state locked; a leftover info file is then just overwritten.
 *
 * fcntl locks belong to the process: a second acquire of the same state in
 * the same process succeeds, and releasing either drops both. Take the lock
 * once per process (cmd/ does, around the whole command).
 */
#ifndef TPF_LOCK_H
#define TPF_LOCK_H

#include "util/diag.h"

struct tpf_backend;

struct tpf_lock {
	int fd;          /* -1 when not held */
	char *lock_path;
	char *info_path;
	char id[37];
	/* A lock taken through a remote backend (state/backend.h
	 * tpf_backend_lock): the backend and the lock object's generation;
	 * NULL and 0 for the local fcntl lock. */
	struct tpf_backend *backend;
	long long generation;
};

#define TPF_LOCK_INIT { -1, NULL, NULL, { 0 }, NULL, 0 }

/*
 * Lock the state at state_path for `operation` (e.g. "OperationTypeApply").
 * *l is overwritten (TPF_LOCK_INIT or released). Creates "<state>.lock"
 * (0600) if needed and, once locked, writes the info file (0600, atomic)
 * with ID, Operation, Info (""), Who (user@host), Version, Created (UTC,
 * microseconds) and Path.
 * timeout: seconds to keep retrying (<= 0: fail at once); retries back off
 * 1 s, 2 s, ... up to 16 s like Terraform's LockWithContext, and never
 * sleep past the deadline (the last try is at it).
 * On conflict returns TPF_ELOCKED with a diagnostic "Error acquiring the
 * state lock" whose detail is "Error message: ...", the holder's "Lock
 * Info:" block (read from its info file; says so if missing) and a hint
 * about -lock-timeout. Other failures (directory missing): TPF_ERROR.
 * On any failure *l is not held and release is still safe.
 */
int tpf_lock_acquire(struct tpf_lock *l, const char *state_path, const char *operation,
		     double timeout, struct tpf_diags *d);
/* Remove the info file and drop the lock (if held), free the paths; a
 * remote lock is deleted from its backend. Safe twice and on TPF_LOCK_INIT. */
void tpf_lock_release(struct tpf_lock *l);

#endif
