/*
 * Output files a user names (`report -html FILE`, `plan -out FILE`,
 * `ssh-config -out FILE`, `cp` downloads, ~/.ssh/config): one rule for
 * every one of them, so that no path given on a command line can destroy
 * what is there.
 *
 * The rule, by what the path is (lstat(2), then stat(2) through a link):
 *   - missing, or a regular file: written atomically, as the state file is:
 *     a temporary file beside it (same directory, so rename(2) is atomic),
 *     fsync(2), rename over the path, fsync of the directory. Readers see
 *     the old content or the new, never a mix, even after a crash. A
 *     regular file the user may not write (mode 0444) is refused, as a
 *     shell's redirection refuses it, though the directory would let the
 *     rename replace it.
 *   - a symbolic link to a regular file: the link is kept and the file it
 *     points to (realpath(3)) is replaced atomically, as editors and git
 *     do; the link itself is never replaced by a regular file.
 *   - a character device (/dev/null, a terminal) or a FIFO, or a link to
 *     one: written in place, opened O_WRONLY without O_CREAT or O_TRUNC,
 *     never renamed over. A FIFO's open waits for its reader, as a shell's
 *     `>` does. /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N
 *     name a descriptor this process holds: written there (a dup of it),
 *     in place, so `-html /dev/stdout >>page.html` appends as the shell
 *     set it up.
 *   - a directory, a block device, a socket, a link to one of those, or a
 *     link to nothing: refused with a message; nothing is written.
 *   - a missing parent directory is never created: refused with a hint to
 *     create it (the callers that own a directory, ~/.ssh/tpuform, create
 *     it themselves first).
 * Every failure (open, write, fsync, close, rename) is an error naming the
 * path and strerror(errno): output that was lost is not a success. An
 * fsync that a device or FIFO does not support (EINVAL) is not a failure.
 * The file gets `mode` less the umask, as a new file would (the old file's
 * mode is not kept).
 *
 * The state file, its lock, backups, ledgers and kept logs are tpuform's
 * own files and keep util/fs.h's tpf_write_file_atomic.
 */
#ifndef TPF_OUTFILE_H
#define TPF_OUTFILE_H

#include <stddef.h>
#include <sys/types.h>
#include "util/diag.h"

/* An output file being written: open, write to fd, then commit or abort. */
struct tpf_outfile {
	int fd;		/* write here; -1 once committed or aborted */
	char *path;	/* the path as given, for messages (owned) */
	char *dest;	/* what the rename replaces: path or a link's target; NULL in place (owned) */
	char *tmp;	/* the temporary file beside dest; NULL in place (owned) */
};

/*
 * Open path for writing under the rule above. 0 with o->fd ready, or
 * TPF_ERROR with a diagnostic (and o holding nothing to release). Safe to
 * call from several threads on different paths.
 */
int tpf_outfile_open(struct tpf_outfile *o, const char *path, mode_t mode, struct tpf_diags *d);

/*
 * Finish: fsync, close, and (atomic case) rename over the destination and
 * fsync its directory. 0, or TPF_ERROR with a diagnostic naming the path,
 * the temporary file then removed and the old content left as it was.
 * Releases o either way.
 */
int tpf_outfile_commit(struct tpf_outfile *o, struct tpf_diags *d);

/* Give up: close, remove the temporary file, release o. The destination
 * keeps its old content (a device or FIFO may have had bytes written). */
void tpf_outfile_abort(struct tpf_outfile *o);

/* Write len bytes of data to path under the rule above: open, write,
 * commit. 0, or TPF_ERROR with a diagnostic. */
int tpf_outfile_write(const char *path, const void *data, size_t len, mode_t mode,
		      struct tpf_diags *d);

/*
 * A directory output goes into (`cp NODE:SRC DEST`'s DEST): 0 when path is
 * a directory (or a link to one), or is missing and its parent directory
 * exists (the caller may then create path itself, one level, as scp -r
 * does); else TPF_ERROR with a diagnostic: a missing parent (with the hint
 * to create it), or a path that is not a directory.
 */
int tpf_outdir_check(const char *path, struct tpf_diags *d);

#endif
