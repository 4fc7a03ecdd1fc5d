/*
 * File helpers. All return 0 on success or TPF_ERROR with a diagnostic
 * naming the path and strerror(errno).
 */
#ifndef TPF_FS_H
#define TPF_FS_H

#include <stddef.h>
#include <sys/types.h>
#include "util/buf.h"
#include "util/diag.h"

/* The largest file tpf_read_file reads: 64 MiB. Fleet files, state files
 * and saved plans have their own, documented limits (docs/fleet-file.md "Limits"). */
#define TPF_READ_FILE_MAX ((size_t)64 << 20)

/* Read a whole file into out (appended), at most TPF_READ_FILE_MAX bytes
 * (or out's own cap, util/buf.h, when smaller).
 * ENOENT returns TPF_ENOTFOUND with no diagnostic, so callers can treat
 * "missing" as a normal case. */
int tpf_read_file(const char *path, struct tpf_buf *out, struct tpf_diags *d);

/*
 * As tpf_read_file, but a file longer than max_bytes is refused: TPF_ERROR
 * with a diagnostic naming the file and the limit, and nothing appended.
 * Reading stops at max_bytes + 1, so an endless input (/dev/zero, a FIFO)
 * ends at once instead of filling memory. `what` names the file's role in
 * the message ("fleet file", "state file"); may be NULL.
 */
int tpf_read_file_max(const char *path, size_t max_bytes, const char *what,
		      struct tpf_buf *out, struct tpf_diags *d);

/*
 * Replace path with data atomically: write "<path>.tmp.<pid>", fsync it,
 * rename over path, fsync the directory. Readers see the old or the new
 * content, never a mix, even after a crash (POSIX rename(2) atomicity).
 * The file gets `mode` (e.g. 0600). util/outfile.h's rule for what is
 * replaced: only a regular file or a missing path; a symbolic link to a
 * regular file is kept and its target replaced; anything else (a
 * directory, a device, a FIFO, a dangling link) is refused with
 * "cannot write 'PATH': it is not a regular file", nothing written.
 */
int tpf_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
			  struct tpf_diags *d);

/* mkdir -p with the given mode for the directories it creates. */
int tpf_mkdir_p(const char *path, mode_t mode, struct tpf_diags *d);

/* rm -rf path (no error if missing). */
int tpf_remove_tree(const char *path, struct tpf_diags *d);

/*
 * Warn, as OpenSSH does for a private key ("WARNING: UNPROTECTED PRIVATE KEY
 * FILE! Permissions 0644 for 'KEY' are too open."), when the file at `path`
 * holds a secret (an SSH private key, a Google credentials file) and its
 * group or others have any permission on it (mode & 077, ssh's own test in
 * sshkey.c sshkey_perm_ok). A warning, not a refusal: ssh refuses such keys
 * but gcloud and Google's client libraries read such credentials files, and
 * tpuform reads both. `what` names where the path came from
 * ("ssh.private_key", "GOOGLE_APPLICATION_CREDENTIALS"). Each path warns
 * once per process (watch reopens its provider every round). Returns 1 when
 * it appended a warning (with the hint "chmod 600 PATH") to d, else 0; a
 * file that cannot be stat'ed is 0: reading it reports that.
 */
int tpf_warn_if_readable_by_others(const char *path, const char *what, struct tpf_diags *d);

/* Directory part of path ("." if none). Caller frees. */
char *tpf_dirname(const char *path);
/* Join dir and rel unless rel is absolute; "~/" expands to $HOME. Caller frees. */
char *tpf_path_join(const char *dir, const char *rel);

#endif
