/*
 * Files for `tpuform cp` over SFTP (providers/transport.h file_* ops):
 * stat, list, mkdir, and streaming a file up (temporary file with its final
 * mode, then rename, as put() does) or down. Relative paths are relative
 * to the login directory, as sftp(1) and scp(1) take them.
 */
#include "providers/ssh/ssh_internal.h"
#include "util/xalloc.h"

#include <errno.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK 65536

static int start(struct tpf_conn *c, const char *path, struct tpf_diags *d)
{
	int err = tpf_remote_file_path_check(path, c->where, d);
	if (err)
		return err;
	if (c->broken)
		return tpf_errorx(d, c->where, "connect again",
				  "cannot reach '%s' on worker '%s': the connection was lost earlier",
				  path, c->where);
	c->timed_out = 0;
	return tpf_ssh_sftp_open(c, d);
}

int tpf_ssh_file_stat(struct tpf_conn *c, const char *path, struct tpf_remote_stat *st,
		      struct tpf_diags *d)
{
	int err = start(c, path, d), rc;
	memset(st, 0, sizeof(*st));
	if (err)
		return err;
	LIBSSH2_SFTP_ATTRIBUTES a;
	double deadline = tpf_ssh_io_deadline(c);
	do
		rc = libssh2_sftp_stat_ex(c->sftp, path, (unsigned)strlen(path), LIBSSH2_SFTP_STAT, &a);
	while (tpf_ssh_again(c, rc, deadline));
	if (rc == LIBSSH2_ERROR_SFTP_PROTOCOL &&
	    libssh2_sftp_last_error(c->sftp) == LIBSSH2_FX_NO_SUCH_FILE)
		return TPF_ENOTFOUND;
	if (rc)
		return tpf_ssh_sftp_fail(c, rc, "looking at", path, d);
	st->is_dir = LIBSSH2_SFTP_S_ISDIR(a.permissions);
	st->is_reg = LIBSSH2_SFTP_S_ISREG(a.permissions);
	st->mode = (mode_t)(a.permissions & 07777);
	st->size = a.filesize;
	return 0;
}

static int cmp_names(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Open path as a file or a directory. NULL with a diagnostic. */
static LIBSSH2_SFTP_HANDLE *open_handle(struct tpf_conn *c, const char *path, unsigned long flags,
					long mode, int type, struct tpf_diags *d)
{
	LIBSSH2_SFTP_HANDLE *h;
	double deadline = tpf_ssh_io_deadline(c);
	while (!(h = libssh2_sftp_open_ex(c->sftp, path, (unsigned)strlen(path), flags, mode,
					  type)) &&
	       tpf_ssh_again(c, libssh2_session_last_errno(c->s), deadline))
		;
	if (!h)
		tpf_ssh_sftp_fail(c, libssh2_session_last_errno(c->s), "opening", path, d);
	return h;
}

static void close_handle(struct tpf_conn *c, LIBSSH2_SFTP_HANDLE *h)
{
	int rc;
	double deadline = tpf_ssh_io_deadline(c);
	while (!c->broken && (rc = libssh2_sftp_close_handle(h)) == LIBSSH2_ERROR_EAGAIN &&
	       tpf_ssh_again(c, rc, deadline))
		;
}

int tpf_ssh_file_list(struct tpf_conn *c, const char *path, char ***names, size_t *n,
		      struct tpf_diags *d)
{
	*names = NULL;
	*n = 0;
	int err = start(c, path, d);
	if (err)
		return err;
	LIBSSH2_SFTP_HANDLE *h = open_handle(c, path, 0, 0, LIBSSH2_SFTP_OPENDIR, d);
	if (!h)
		return c->broken ? TPF_EUNREACHABLE : TPF_ERROR;
	size_t alloc = 0;
	char name[1024];
	for (;;) {
		LIBSSH2_SFTP_ATTRIBUTES a;
		double deadline = tpf_ssh_io_deadline(c);
		int rc;
		do
			rc = libssh2_sftp_readdir(h, name, sizeof(name), &a);
		while (tpf_ssh_again(c, rc, deadline));
		if (rc == 0)
			break;
		if (rc < 0) {
			err = tpf_ssh_sftp_fail(c, rc, "listing", path, d);
			break;
		}
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		XGROW(*names, *n + 1, alloc);
		(*names)[(*n)++] = xstrndup(name, (size_t)rc);
	}
	close_handle(c, h);
	if (*n)
		qsort(*names, *n, sizeof(**names), cmp_names);
	return err;
}

int tpf_ssh_file_mkdir(struct tpf_conn *c, const char *path, mode_t mode, struct tpf_diags *d)
{
	int err = start(c, path, d), rc;
	if (err)
		return err;
	double deadline = tpf_ssh_io_deadline(c);
	do
		rc = libssh2_sftp_mkdir_ex(c->sftp, path, (unsigned)strlen(path), (long)(mode & 07777));
	while (tpf_ssh_again(c, rc, deadline));
	if (rc == LIBSSH2_ERROR_SFTP_PROTOCOL) {
		/* OpenSSH says only "failure" for one that exists. */
		struct tpf_remote_stat st;
		if (!tpf_ssh_file_stat(c, path, &st, d) && st.is_dir)
			return 0;
	}
	return rc ? tpf_ssh_sftp_fail(c, rc, "creating the directory", path, d) : 0;
}

static int write_all(struct tpf_conn *c, LIBSSH2_SFTP_HANDLE *h, const char *buf, size_t len,
		     const char *path, struct tpf_diags *d)
{
	double deadline = tpf_ssh_io_deadline(c);
	for (size_t off = 0; off < len;) {
		ssize_t n = libssh2_sftp_write(h, buf + off, len - off);
		if (n > 0) {
			off += (size_t)n;
			deadline = tpf_ssh_io_deadline(c);
		} else if (!tpf_ssh_again(c, (int)n, deadline))
			return tpf_ssh_sftp_fail(c, (int)n, "writing", path, d);
	}
	return 0;
}

/* fd into the open handle h (the temporary file of path). */
static int send_data(struct tpf_conn *c, int fd, LIBSSH2_SFTP_HANDLE *h, const char *path,
		     tpf_progress_fn progress, void *arg, struct tpf_diags *d)
{
	char *buf = xmalloc(CHUNK);
	unsigned long long total = 0;
	int err = 0;
	for (;;) {
		ssize_t n = read(fd, buf, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = tpf_errorx(d, c->where, NULL, "cannot read the file to copy to '%s': %s",
					 path, strerror(errno));
			break;
		}
		if (n == 0 || (err = write_all(c, h, buf, (size_t)n, path, d)))
			break;
		total += (unsigned long long)n;
		if (progress)
			progress(arg, total);
	}
	free(buf);
	return err;
}

int tpf_ssh_file_send(struct tpf_conn *c, int fd, const char *path, mode_t mode,
		      tpf_progress_fn progress, void *arg, struct tpf_diags *d)
{
	int err = start(c, path, d), rc;
	if (err)
		return err;
	unsigned char rnd[6];
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		memset(rnd, 0, sizeof(rnd));
	char *tmp = xasprintf("%s.tmp-%02x%02x%02x%02x%02x%02x", path, rnd[0], rnd[1], rnd[2],
			      rnd[3], rnd[4], rnd[5]);
	LIBSSH2_SFTP_HANDLE *h = open_handle(
		c, tmp, LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_EXCL,
		(long)(mode & 07777), LIBSSH2_SFTP_OPENFILE, d);
	if (!h) {
		free(tmp);
		return c->broken ? TPF_EUNREACHABLE : TPF_ERROR;
	}
	err = send_data(c, fd, h, path, progress, arg, d);
	LIBSSH2_SFTP_ATTRIBUTES a = { .flags = LIBSSH2_SFTP_ATTR_PERMISSIONS,
				      .permissions = mode & 07777 };
	double deadline = tpf_ssh_io_deadline(c);
	if (!err) {
		do
			rc = libssh2_sftp_fsetstat(h, &a);
		while (tpf_ssh_again(c, rc, deadline));
		if (rc)
			err = tpf_ssh_sftp_fail(c, rc, "setting the mode of", path, d);
	}
	close_handle(c, h);
	if (!err) {
		do
			rc = libssh2_sftp_rename_ex(c->sftp, tmp, (unsigned)strlen(tmp), path,
						    (unsigned)strlen(path),
						    LIBSSH2_SFTP_RENAME_OVERWRITE |
							    LIBSSH2_SFTP_RENAME_ATOMIC |
							    LIBSSH2_SFTP_RENAME_NATIVE);
		while (tpf_ssh_again(c, rc, deadline));
		if (rc == LIBSSH2_ERROR_SFTP_PROTOCOL)
			err = tpf_ssh_rename_over(c, tmp, path, d);
		else if (rc)
			err = tpf_ssh_sftp_fail(c, rc, "renaming", path, d);
	}
	if (err)
		tpf_ssh_sftp_unlink_quiet(c, tmp);
	free(tmp);
	return err;
}

int tpf_ssh_file_recv(struct tpf_conn *c, const char *path, int fd, tpf_progress_fn progress,
		      void *arg, struct tpf_diags *d)
{
	int err = start(c, path, d);
	if (err)
		return err;
	LIBSSH2_SFTP_HANDLE *h = open_handle(c, path, LIBSSH2_FXF_READ, 0, LIBSSH2_SFTP_OPENFILE, d);
	if (!h)
		return c->broken ? TPF_EUNREACHABLE : TPF_ERROR;
	char *buf = xmalloc(CHUNK);
	unsigned long long total = 0;
	double deadline = tpf_ssh_io_deadline(c);
	for (;;) {
		ssize_t n = libssh2_sftp_read(h, buf, CHUNK);
		if (n == 0)
			break;
		if (n < 0) {
			if (tpf_ssh_again(c, (int)n, deadline))
				continue;
			err = tpf_ssh_sftp_fail(c, (int)n, "reading", path, d);
			break;
		}
		deadline = tpf_ssh_io_deadline(c);
		for (ssize_t off = 0; off < n && !err;) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				err = tpf_errorx(d, c->where, NULL,
						 "cannot write the copy of '%s' of worker '%s': %s", path,
						 c->where, strerror(errno));
			else
				off += w;
		}
		if (err)
			break;
		total += (unsigned long long)n;
		if (progress)
			progress(arg, total);
	}
	free(buf);
	close_handle(c, h);
	return err;
}
