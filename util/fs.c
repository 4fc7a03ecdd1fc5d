#include "util/fs.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tpf_read_file(const char *path, struct tpf_buf *out, struct tpf_diags *d)
{
	return tpf_read_file_max(path, TPF_READ_FILE_MAX, NULL, out, d);
}

/* Drop what this read appended, keeping the buffer's NUL invariant. */
static void drop_from(struct tpf_buf *b, size_t start)
{
	b->len = start;
	if (b->alloc)
		b->buf[start] = '\0';
}

int tpf_read_file_max(const char *path, size_t max_bytes, const char *what,
		      struct tpf_buf *out, struct tpf_diags *d)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return TPF_ENOTFOUND;
		return tpf_error(d, "cannot open '%s': %s", path, strerror(errno));
	}
	size_t start = out->len, got = 0;
	char chunk[65536];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			drop_from(out, start);
			return tpf_error(d, "cannot read '%s': %s", path, strerror(e));
		}
		if (n == 0)
			break;
		if ((size_t)n > max_bytes - got) {
			char lim[32];
			close(fd);
			drop_from(out, start);
			tpf_fmt_bytes(max_bytes, lim);
			return tpf_errorx(d, NULL, "split it, or check that the path names the right file",
					  "%s%s'%s' is larger than %s, the limit for %s%s",
					  what ? what : "", what ? " " : "", path, lim, what ? "a " : "",
					  what ? what : "files tpuform reads");
		}
		if (tpf_buf_add(out, chunk, (size_t)n) < 0) {
			/* out's own cap is below max_bytes; the failed append
			 * emptied it (util/buf.h). */
			char lim[32];
			close(fd);
			return tpf_errorx(d, NULL, "is it the right file?",
					  "cannot read '%s': it is larger than the limit of %s", path,
					  tpf_fmt_bytes(tpf_buf_max(out), lim));
		}
		got += (size_t)n;
	}
	close(fd);
	return 0;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* util/outfile.h's rule for what a rename may replace: a regular file or
 * nothing; a link to one is followed (its target is replaced, the link
 * kept). *dest: the path to replace (caller frees), or TPF_ERROR. */
static int rename_target(const char *path, char **dest, struct tpf_diags *d)
{
	struct stat st;
	*dest = NULL;
	if (lstat(path, &st) < 0 || S_ISREG(st.st_mode)) {
		*dest = xstrdup(path);
		return 0;
	}
	char *real = S_ISLNK(st.st_mode) ? realpath(path, NULL) : NULL;
	if (real && stat(real, &st) == 0 && S_ISREG(st.st_mode)) {
		*dest = real;
		return 0;
	}
	free(real);
	return tpf_errorx(d, NULL, "Move it away: tpuform replaces only regular files.",
			  "cannot write '%s': it is not a regular file", path);
}

int tpf_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
			  struct tpf_diags *d)
{
	char *dest = NULL;
	if (rename_target(path, &dest, d))
		return TPF_ERROR;
	char *tmp = xasprintf("%s.tmp.%ld", dest, (long)getpid());
	char *dir = tpf_dirname(dest);
	int err = 0, fd = -1;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0) {
		err = tpf_error(d, "cannot create '%s': %s", tmp, strerror(errno));
		goto done;
	}
	if (fchmod(fd, mode) < 0 || write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		err = tpf_error(d, "cannot write '%s': %s", tmp, strerror(errno));
		goto done;
	}
	if (close(fd) < 0) {
		fd = -1;
		err = tpf_error(d, "cannot write '%s': %s", tmp, strerror(errno));
		goto done;
	}
	fd = -1;
	if (rename(tmp, dest) < 0) {
		err = tpf_error(d, "cannot rename '%s' to '%s': %s", tmp, dest, strerror(errno));
		goto done;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		/* The rename is durable only once the directory entry is. */
		if (fsync(dfd) < 0)
			err = tpf_error(d, "cannot fsync directory '%s': %s", dir, strerror(errno));
		close(dfd);
	}
done:
	if (fd >= 0)
		close(fd);
	if (err)
		unlink(tmp);
	free(tmp);
	free(dir);
	free(dest);
	return err;
}

int tpf_mkdir_p(const char *path, mode_t mode, struct tpf_diags *d)
{
	char *p = xstrdup(path);
	int err = 0;
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char saved = *s;
			*s = '\0';
			if (mkdir(p, mode) < 0 && errno != EEXIST) {
				err = tpf_error(d, "cannot create directory '%s': %s", p, strerror(errno));
				break;
			}
			*s = saved;
			if (!saved)
				break;
		}
	}
	free(p);
	return err;
}

int tpf_remove_tree(const char *path, struct tpf_diags *d)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : tpf_error(d, "cannot stat '%s': %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		DIR *dir = opendir(path);
		if (!dir)
			return tpf_error(d, "cannot open directory '%s': %s", path, strerror(errno));
		struct dirent *e;
		int err = 0;
		while ((e = readdir(dir))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char *child = xasprintf("%s/%s", path, e->d_name);
			if (tpf_remove_tree(child, d) < 0)
				err = TPF_ERROR;
			free(child);
		}
		closedir(dir);
		if (err)
			return err;
		if (rmdir(path) < 0)
			return tpf_error(d, "cannot remove '%s': %s", path, strerror(errno));
		return 0;
	}
	if (unlink(path) < 0 && errno != ENOENT)
		return tpf_error(d, "cannot remove '%s': %s", path, strerror(errno));
	return 0;
}

char *tpf_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

char *tpf_path_join(const char *dir, const char *rel)
{
	if (rel[0] == '/')
		return xstrdup(rel);
	if (rel[0] == '~' && (rel[1] == '/' || rel[1] == '\0')) {
		const char *home = getenv("HOME");
		return xasprintf("%s%s", home ? home : "", rel + 1);
	}
	if (!dir || !*dir || !strcmp(dir, "."))
		return xstrdup(rel);
	return xasprintf("%s/%s", dir, rel);
}

/* Paths already warned about (tpf_warn_if_readable_by_others): a few. */
#define WARNED_MAX 16
static pthread_mutex_t warned_mu = PTHREAD_MUTEX_INITIALIZER;
static char *warned[WARNED_MAX];

/* 1 the first time `path` is seen (and remembered), else 0. */
static int first_warning(const char *path)
{
	int first = 1;
	pthread_mutex_lock(&warned_mu);
	for (size_t i = 0; i < WARNED_MAX && warned[i] && first; i++)
		first = strcmp(warned[i], path) != 0;
	for (size_t i = 0; i < WARNED_MAX && first; i++) {
		if (!warned[i]) {
			warned[i] = xstrdup(path);
			break;
		}
	}
	pthread_mutex_unlock(&warned_mu);
	return first;
}

int tpf_warn_if_readable_by_others(const char *path, const char *what, struct tpf_diags *d)
{
	struct stat st;
	if (!path || stat(path, &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 077))
		return 0;
	if (!first_warning(path))
		return 0;
	char summary[1024], hint[600];
	snprintf(summary, sizeof(summary),
		 "UNPROTECTED PRIVATE KEY FILE: Permissions %04o for '%s' (from %s) are too open: "
		 "other users of this machine can read the secret in it",
		 (unsigned)(st.st_mode & 07777), path, what);
	snprintf(hint, sizeof(hint), "chmod 600 %s", path);
	tpf_diags_add(d, TPF_SEV_WARNING, NULL, summary, hint);
	return 1;
}
