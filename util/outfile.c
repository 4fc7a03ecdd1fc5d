/*
 * Output files a user names, under one rule (util/outfile.h): atomic over a
 * missing path or a regular file, in place on a device or FIFO, refused
 * otherwise; never a device replaced, never a directory created.
 */
#include "util/outfile.h"
#include "util/fs.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KINDS "tpuform writes a regular file, a character device (/dev/null) or a FIFO"

static void release(struct tpf_outfile *o)
{
	if (o->fd >= 0)
		close(o->fd);
	if (o->tmp)
		unlink(o->tmp);
	free(o->path);
	free(o->dest);
	free(o->tmp);
	*o = (struct tpf_outfile){ .fd = -1 };
}

/* The descriptor /dev/stdout, /dev/stderr, /dev/fd/N or /proc/self/fd/N
 * names, or -1 for any other path. */
static int fd_name(const char *path)
{
	if (!strcmp(path, "/dev/stdout"))
		return STDOUT_FILENO;
	if (!strcmp(path, "/dev/stderr"))
		return STDERR_FILENO;
	const char *n = NULL;
	if (!strncmp(path, "/dev/fd/", 8))
		n = path + 8;
	else if (!strncmp(path, "/proc/self/fd/", 14))
		n = path + 14;
	if (!n || !*n || strspn(n, "0123456789") != strlen(n) || strlen(n) > 6)
		return -1;
	return atoi(n);
}

/* Write to a descriptor this process holds (a dup of it, closed on commit). */
static int open_fd(struct tpf_outfile *o, const char *path, int n, struct tpf_diags *d)
{
	/* What stdio holds for it goes first. */
	if (n == STDOUT_FILENO)
		fflush(stdout);
	else if (n == STDERR_FILENO)
		fflush(stderr);
	int fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return tpf_error(d, "cannot write '%s': %s", path, strerror(errno));
	o->fd = fd;
	o->path = xstrdup(path);
	return 0;
}

/* A character device or FIFO (or a link to one): open it as it is. */
static int open_in_place(struct tpf_outfile *o, const char *path, struct tpf_diags *d)
{
	int fd;
	do
		fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return tpf_error(d, "cannot write '%s': %s", path, strerror(errno));
	o->fd = fd;
	o->path = xstrdup(path);
	return 0;
}

/* The directory dest goes in must exist: tpuform creates none unasked. */
static int check_parent(const char *path, const char *dest, struct tpf_diags *d)
{
	char *dir = tpf_dirname(dest);
	struct stat st;
	int err = 0, rc = stat(dir, &st);
	if (rc < 0 && errno == ENOENT) {
		char *hint = xasprintf("create it first (mkdir -p %s), or name another file", dir);
		err = tpf_errorx(d, NULL, hint, "cannot write '%s': the directory '%s' does not exist",
				 path, dir);
		free(hint);
	} else if (rc == 0 && !S_ISDIR(st.st_mode)) {
		err = tpf_error(d, "cannot write '%s': '%s' is not a directory", path, dir);
	}
	free(dir);
	return err;
}

/* A temporary file beside dest, for the rename over it. */
static int open_atomic(struct tpf_outfile *o, const char *path, const char *dest, mode_t mode,
		       struct tpf_diags *d)
{
	static unsigned seq;
	if (check_parent(path, dest, d))
		return TPF_ERROR;
	for (int tries = 0; tries < 100; tries++) {
		unsigned k = __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED);
		char *tmp = xasprintf("%s.tpuform-tmp-%ld-%u", dest, (long)getpid(), k);
		/* O_EXCL: never through a link or over a file someone put there. */
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (fd >= 0) {
			o->fd = fd;
			o->path = xstrdup(path);
			o->dest = xstrdup(dest);
			o->tmp = tmp;
			return 0;
		}
		int e = errno;
		free(tmp);
		if (e != EEXIST && e != EINTR)
			return tpf_error(d, "cannot write '%s': %s", path, strerror(e));
	}
	return tpf_error(d, "cannot write '%s': no free name for a temporary file beside it", path);
}

static const char *kind(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket"
		: S_ISREG(m) ? "a regular file" : S_ISCHR(m) ? "a character device"
		: S_ISFIFO(m) ? "a FIFO" : "a special file";
}

/* A regular file: the rename replaces it, or the file a link points to. */
static int open_regular(struct tpf_outfile *o, const char *path, const struct stat *st, int link,
			mode_t mode, struct tpf_diags *d)
{
	char *dest = link ? realpath(path, NULL) : xstrdup(path);
	struct stat again;
	if (!dest || stat(dest, &again) < 0 || again.st_dev != st->st_dev ||
	    again.st_ino != st->st_ino) {
		/* A /proc link to a file since removed: there is no name to rename over. */
		free(dest);
		return tpf_error(d, "cannot write '%s': the file it links to has no name to replace",
				 path);
	}
	if (access(dest, W_OK) < 0 && (errno == EACCES || errno == EROFS)) {
		int e = errno;
		free(dest);
		return tpf_error(d, "cannot write '%s': %s", path, strerror(e));
	}
	int err = open_atomic(o, path, dest, mode, d);
	free(dest);
	return err;
}

/* A symbolic link whose target does not exist. */
static int dangling(const char *path, struct tpf_diags *d)
{
	char to[PATH_MAX];
	ssize_t n = readlink(path, to, sizeof(to) - 1);
	to[n < 0 ? 0 : n] = '\0';
	return tpf_errorx(d, NULL, "create the file it points to, or remove the link",
			  "cannot write '%s': it is a symbolic link to '%s', which does not exist",
			  path, to);
}

int tpf_outfile_open(struct tpf_outfile *o, const char *path, mode_t mode, struct tpf_diags *d)
{
	*o = (struct tpf_outfile){ .fd = -1 };
	int n = fd_name(path);
	if (n >= 0)
		return open_fd(o, path, n, d);
	struct stat st;
	if (lstat(path, &st) < 0) {
		if (errno != ENOENT)
			return tpf_error(d, "cannot write '%s': %s", path, strerror(errno));
		return open_atomic(o, path, path, mode, d);
	}
	int link = S_ISLNK(st.st_mode);
	if (link && stat(path, &st) < 0) {
		if (errno == ENOENT)
			return dangling(path, d);
		return tpf_error(d, "cannot write '%s': %s", path, strerror(errno));
	}
	if (S_ISREG(st.st_mode))
		return open_regular(o, path, &st, link, mode, d);
	if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
		return open_in_place(o, path, d);
	if (S_ISDIR(st.st_mode)) {
		char *hint = xasprintf("name a file in it (%s/NAME)", path);
		tpf_errorx(d, NULL, hint, "cannot write '%s': it is %s%s", path,
			   link ? "a symbolic link to " : "", kind(st.st_mode));
		free(hint);
		return TPF_ERROR;
	}
	return tpf_errorx(d, NULL, KINDS, "cannot write '%s': it is %s%s", path,
			  link ? "a symbolic link to " : "", kind(st.st_mode));
}

int tpf_outfile_commit(struct tpf_outfile *o, struct tpf_diags *d)
{
	int err = 0;
	/* A device or FIFO may not sync (EINVAL): nothing is lost then. */
	if (fsync(o->fd) < 0 && !(!o->tmp && (errno == EINVAL || errno == ENOTSUP || errno == EROFS)))
		err = tpf_error(d, "cannot write '%s': %s", o->path, strerror(errno));
	int fd = o->fd;
	o->fd = -1;
	if (close(fd) < 0 && !err)
		err = tpf_error(d, "cannot write '%s': %s", o->path, strerror(errno));
	if (!err && o->tmp) {
		if (rename(o->tmp, o->dest) < 0) {
			err = tpf_error(d, "cannot replace '%s': %s", o->dest, strerror(errno));
		} else {
			free(o->tmp);
			o->tmp = NULL;
			/* The rename is durable only once the directory entry is. */
			char *dir = tpf_dirname(o->dest);
			int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dfd >= 0 && fsync(dfd) < 0 && errno != EINVAL)
				err = tpf_error(d, "cannot write '%s': fsync of '%s': %s", o->path, dir,
						strerror(errno));
			if (dfd >= 0)
				close(dfd);
			free(dir);
		}
	}
	release(o);
	return err;
}

void tpf_outfile_abort(struct tpf_outfile *o)
{
	release(o);
}

int tpf_outfile_write(const char *path, const void *data, size_t len, mode_t mode,
		      struct tpf_diags *d)
{
	struct tpf_outfile o;
	if (tpf_outfile_open(&o, path, mode, d))
		return TPF_ERROR;
	const char *p = data;
	while (len) {
		ssize_t n = write(o.fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			tpf_outfile_abort(&o);
			return tpf_error(d, "cannot write '%s': %s", path, strerror(e));
		}
		p += n;
		len -= (size_t)n;
	}
	return tpf_outfile_commit(&o, d);
}

int tpf_outdir_check(const char *path, struct tpf_diags *d)
{
	struct stat st;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		return tpf_errorx(d, NULL, "name a directory", "cannot write into '%s': it is %s",
				  path, kind(st.st_mode));
	}
	if (errno != ENOENT)
		return tpf_error(d, "cannot write into '%s': %s", path, strerror(errno));
	char *p = xstrdup(path);
	for (size_t n = strlen(p); n > 1 && p[n - 1] == '/'; n--)
		p[n - 1] = '\0';
	int err = check_parent(path, p, d);
	free(p);
	return err;
}
