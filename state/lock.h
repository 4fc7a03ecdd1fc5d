/*
 * State locking, as Terraform's local backend does it (terraform-ux.md
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
 */
#ifndef TPF_LOCK_H
#define TPF_LOCK_H

#include "util/diag.h"

struct tpf_lock {
	int fd;          /* -1 when not held */
	char *lock_path;
	char *info_path;
	char id[37];
};

#define TPF_LOCK_INIT { -1, NULL, NULL, { 0 } }

/*
 * Lock the state at state_path for `operation` (e.g. "OperationTypeApply").
 * timeout: seconds to keep retrying (0: fail at once); retries back off 1 s,
 * 2 s, ... up to 16 s like Terraform's LockWithContext.
 * On conflict returns TPF_ELOCKED with a diagnostic "Error acquiring the
 * state lock" whose detail is the holder's "Lock Info:" block.
 */
int tpf_lock_acquire(struct tpf_lock *l, const char *state_path, const char *operation,
		     double timeout, struct tpf_diags *d);
/* Release (no-op if not held) and free the paths. */
void tpf_lock_release(struct tpf_lock *l);

#endif
