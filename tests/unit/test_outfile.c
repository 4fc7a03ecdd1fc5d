/*
 * util/outfile.c, the rule for output paths a user names: atomic over a
 * missing path or a regular file (no temporary file left), through a
 * symbolic link to a regular file (the link kept), in place on a
 * character device or a FIFO (never replaced), refused for a directory, a
 * link to nothing or a missing parent (never created); a write error
 * (/dev/full) fails.
 *
 * The devices: as root, private nodes made with mknod(2) in the test's
 * directory (major 1, minor 3 and 7: what /dev/null and /dev/full are), so
 * that a broken helper replaces a node of its own, never the system's;
 * otherwise /dev/null and /dev/full themselves, which a user other than
 * root cannot replace.
 */
#include "tests/unit/unit.h"
#include "util/diag.h"
#include "util/fs.h"
#include "util/outfile.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static char *dir;

static char *at(const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

static char *slurp(const char *path)
{
	struct tpf_buf b = TPF_BUF_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_read_file(path, &b, &d);
	tpf_diags_release(&d);
	return tpf_buf_detach(&b, NULL);
}

/* The entries of dir, but for "." and "..". */
static int entries(const char *path)
{
	DIR *dp = opendir(path);
	int n = 0;
	struct dirent *e;
	while (dp && (e = readdir(dp)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (dp)
		closedir(dp);
	return n;
}

/* The first diagnostic's summary, or "". */
static const char *said(const struct tpf_diags *d)
{
	return d->n ? d->items[0].summary : "";
}

static int is_chr(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

/* A character device like /dev/null (minor 3) or /dev/full (minor 7): a
 * private node as root, else the system's. Caller frees. */
static char *device(const char *name, unsigned minor)
{
	char *p = at(name);
	if (geteuid() == 0) {
		if (mknod(p, S_IFCHR | 0666, makedev(1, minor)) == 0) {
			int fd = open(p, O_WRONLY);
			if (fd >= 0) {
				close(fd);
				return p;
			}
		}
		/* No nodes here (a nodev mount): root must not test on /dev. */
		unlink(p);
		free(p);
		return NULL;
	}
	free(p);
	return xstrdup(minor == 3 ? "/dev/null" : "/dev/full");
}

static void test_outfile__missing_path(void)
{
	char *p = at("new.html");
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_outfile_write(p, "hello\n", 6, 0640, &d), 0);
	char *got = slurp(p);
	CHECK_STR(got, "hello\n");
	struct stat st;
	CHECK(stat(p, &st) == 0 && S_ISREG(st.st_mode));
	CHECKF((st.st_mode & 0777) == 0640, "mode %o", (unsigned)(st.st_mode & 0777));
	CHECK_INT(entries(dir), 1);
	unlink(p);
	free(got);
	free(p);
	tpf_diags_release(&d);
}

static void test_outfile__regular_file_replaced_atomically(void)
{
	char *p = at("page.html");
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_outfile_write(p, "old content, longer\n", 20, 0644, &d), 0);
	struct stat before, after;
	CHECK(stat(p, &before) == 0);
	CHECK_INT(tpf_outfile_write(p, "new\n", 4, 0644, &d), 0);
	char *got = slurp(p);
	CHECK_STR(got, "new\n");
	/* A rename, not a rewrite: another inode, so a reader of the old one
	 * never sees a mix. */
	CHECK(stat(p, &after) == 0 && after.st_ino != before.st_ino);
	CHECKF(entries(dir) == 1, "no temporary file left: %d entries", entries(dir));
	CHECK_INT((int)d.n, 0);
	unlink(p);
	free(got);
	free(p);
	tpf_diags_release(&d);
}

static void test_outfile__missing_parent_not_created(void)
{
	char *p = at("nope/deeper/x.html"), *parent = at("nope");
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_outfile_write(p, "x", 1, 0644, &d), TPF_ERROR);
	CHECKF(strstr(said(&d), "does not exist") != NULL, "%s", said(&d));
	CHECK(d.n && d.items[0].detail && strstr(d.items[0].detail, "mkdir -p"));
	CHECK(access(parent, F_OK) < 0 && errno == ENOENT);
	free(p);
	free(parent);
	tpf_diags_release(&d);
}

static void test_outfile__dev_null_in_place(void)
{
	char *p = device("null", 3);
	if (!p) {
		CHECKF(1, "skipped: no device nodes in %s", dir);
		return;
	}
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_outfile_write(p, "page", 4, 0644, &d), 0);
	CHECKF(is_chr(p), "%s is still a character device", p);
	CHECK_INT((int)d.n, 0);
	if (strncmp(p, "/dev/", 5))
		unlink(p);
	free(p);
	tpf_diags_release(&d);
}

static void test_outfile__dev_full_fails(void)
{
	char *p = device("full", 7);
	if (!p) {
		CHECKF(1, "skipped: no device nodes in %s", dir);
		return;
	}
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_outfile_write(p, "page", 4, 0644, &d), TPF_ERROR);
	CHECKF(strstr(said(&d), "No space left on device") && strstr(said(&d), p), "%s", said(&d));
	CHECKF(is_chr(p), "%s is still a character device", p);
	if (strncmp(p, "/dev/", 5))
		unlink(p);
	free(p);
	tpf_diags_release(&d);
}

static void test_outfile__fifo_in_place(void)
{
	char *p = at("fifo");
	CHECK(mkfifo(p, 0600) == 0);
	/* The reader first, so the writer's open does not wait. */
	int r = open(p, O_RDONLY | O_NONBLOCK);
	CHECK(r >= 0);
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_outfile_write(p, "through the pipe", 16, 0644, &d), 0);
	char got[64] = "";
	ssize_t n = read(r, got, sizeof(got) - 1);
	got[n > 0 ? n : 0] = '\0';
	CHECK_STR(got, "through the pipe");
	struct stat st;
	CHECK(lstat(p, &st) == 0 && S_ISFIFO(st.st_mode));
	close(r);
	unlink(p);
	free(p);
	tpf_diags_release(&d);
}

static void test_outfile__symlink_to_device_kept(void)
{
	char *dev = device("null", 3), *link = at("to-null");
	if (!dev) {
		CHECKF(1, "skipped: no device nodes in %s", dir);
		free(link);
		return;
	}
	CHECK(symlink(dev, link) == 0);
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_outfile_write(link, "page", 4, 0644, &d), 0);
	struct stat st;
	CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
	CHECK(stat(link, &st) == 0 && S_ISCHR(st.st_mode));
	CHECK(is_chr(dev));
	unlink(link);
	if (strncmp(dev, "/dev/", 5))
		unlink(dev);
	free(dev);
	free(link);
	tpf_diags_release(&d);
}

static void test_outfile__symlink_to_file_writes_through(void)
{
	char *sub = at("dotfiles"), *target = at("dotfiles/config"), *link = at("config");
	CHECK(mkdir(sub, 0700) == 0);
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_outfile_write(target, "old\n", 4, 0600, &d), 0);
	CHECK(symlink("dotfiles/config", link) == 0);
	CHECK_INT(tpf_outfile_write(link, "new\n", 4, 0600, &d), 0);
	struct stat st;
	CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
	char *got = slurp(target);
	CHECK_STR(got, "new\n");
	CHECKF(entries(sub) == 1, "no temporary file beside the target: %d", entries(sub));
	free(got);
	unlink(link);
	unlink(target);
	rmdir(sub);
	free(sub);
	free(target);
	free(link);
	tpf_diags_release(&d);
}

static void test_outfile__refused(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_outfile_write(dir, "x", 1, 0644, &d), TPF_ERROR);
	CHECKF(strstr(said(&d), "it is a directory") != NULL, "%s", said(&d));
	tpf_diags_release(&d);

	char *link = at("dangling");
	CHECK(symlink("nowhere", link) == 0);
	CHECK_INT(tpf_outfile_write(link, "x", 1, 0644, &d), TPF_ERROR);
	CHECKF(strstr(said(&d), "which does not exist") != NULL, "%s", said(&d));
	char *nowhere = at("nowhere");
	CHECK(access(nowhere, F_OK) < 0);
	struct stat st;
	CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
	unlink(link);
	free(link);
	free(nowhere);
	tpf_diags_release(&d);
}

/* The streaming form (cp's downloads): abort leaves the old content and
 * no temporary file; a descriptor named /dev/fd/N is written in place. */
static void test_outfile__abort_and_fd_names(void)
{
	char *p = at("kept");
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_outfile_write(p, "old", 3, 0644, &d), 0);
	struct tpf_outfile o;
	CHECK_INT(tpf_outfile_open(&o, p, 0644, &d), 0);
	CHECK(write(o.fd, "half", 4) == 4);
	tpf_outfile_abort(&o);
	char *got = slurp(p);
	CHECK_STR(got, "old");
	CHECK_INT(entries(dir), 1);
	free(got);
	unlink(p);
	free(p);

	int fds[2];
	CHECK(pipe2(fds, O_NONBLOCK) == 0); /* a read of nothing must not hang */
	char *name = xasprintf("/dev/fd/%d", fds[1]);
	CHECK_INT(tpf_outfile_write(name, "via fd", 6, 0644, &d), 0);
	char buf[16] = "";
	ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	CHECK_STR(buf, "via fd");
	CHECK(fcntl(fds[1], F_GETFD) >= 0); /* the caller's descriptor stays open */
	close(fds[0]);
	close(fds[1]);
	free(name);
	tpf_diags_release(&d);
}

static void test_outfile__outdir_check(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *missing = at("out/"), *deep = at("a/b/"), *file = at("f");
	CHECK_INT(tpf_outdir_check(dir, &d), 0);
	CHECK_INT(tpf_outdir_check(missing, &d), 0);
	CHECK_INT((int)d.n, 0);
	CHECK_INT(tpf_outdir_check(deep, &d), TPF_ERROR);
	CHECKF(strstr(said(&d), "does not exist") != NULL, "%s", said(&d));
	tpf_diags_release(&d);
	CHECK_INT(tpf_outfile_write(file, "x", 1, 0644, &d), 0);
	CHECK_INT(tpf_outdir_check(file, &d), TPF_ERROR);
	CHECKF(strstr(said(&d), "a regular file") != NULL, "%s", said(&d));
	unlink(file);
	free(missing);
	free(deep);
	free(file);
	tpf_diags_release(&d);
}

int main(void)
{
	umask(022);
	dir = unit_tmpdir();
	RUN(test_outfile__missing_path);
	RUN(test_outfile__regular_file_replaced_atomically);
	RUN(test_outfile__missing_parent_not_created);
	RUN(test_outfile__dev_null_in_place);
	RUN(test_outfile__dev_full_fails);
	RUN(test_outfile__fifo_in_place);
	RUN(test_outfile__symlink_to_device_kept);
	RUN(test_outfile__symlink_to_file_writes_through);
	RUN(test_outfile__refused);
	RUN(test_outfile__abort_and_fd_names);
	RUN(test_outfile__outdir_check);
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_remove_tree(dir, &d);
	tpf_diags_release(&d);
	free(dir);
	return unit_done();
}
