/*
 * Uploading a file to a worker over SFTP, atomically: write a temporary
 * file created with its final mode (so a secrets file is never readable
 * by others, not even for a moment), then rename it over the target.
 *
 * SFTP version 3 (what OpenSSH's sftp-server speaks) has no rename that
 * replaces an existing file, and libssh2 1.10 cannot send OpenSSH's
 * posix-rename extension; so when the target exists, the rename is
 * `mv -f` (rename(2)) over an exec channel. A running job keeps reading
 * the script it started with: rename replaces the name, not the inode.
 */
#include "providers/ssh/ssh_internal.h"
#include "util/shquote.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

int tpf_ssh_sftp_fail(struct tpf_conn *c, int rc, const char *what, const char *path,
		     struct tpf_diags *d)
{
	int code = rc;
	if (c->timed_out) {
		c->broken = 1;
		tpf_errorx(d, c->where, NULL,
			   "%s '%s' on worker '%s': no progress for %.0f s", what, path, c->where,
			   c->t->o.io_timeout);
		return TPF_EUNREACHABLE;
	}
	const char *msg = tpf_ssh_errmsg(c, &code);
	if (tpf_ssh_net_error(rc) || tpf_ssh_net_error(code)) {
		c->broken = 1;
		tpf_errorx(d, c->where, NULL, "%s '%s' on worker '%s': connection lost: %s", what,
			   path, c->where, msg);
		return TPF_EUNREACHABLE;
	}
	if (code == LIBSSH2_ERROR_SFTP_PROTOCOL && c->sftp)
		return tpf_errorx(d, c->where, NULL, "%s '%s' on worker '%s' failed: SFTP status %lu",
				  what, path, c->where, libssh2_sftp_last_error(c->sftp));
	return tpf_errorx(d, c->where, NULL, "%s '%s' on worker '%s' failed: %s", what, path,
			  c->where, msg);
}

double tpf_ssh_io_deadline(struct tpf_conn *c)
{
	return tpf_now_mono() + c->t->o.io_timeout;
}

int tpf_ssh_sftp_open(struct tpf_conn *c, struct tpf_diags *d)
{
	if (c->sftp)
		return 0;
	double deadline = tpf_ssh_io_deadline(c);
	while (!(c->sftp = libssh2_sftp_init(c->s)) &&
	       tpf_ssh_again(c, libssh2_session_last_errno(c->s), deadline))
		;
	if (!c->sftp)
		return tpf_ssh_sftp_fail(c, libssh2_session_last_errno(c->s), "starting SFTP for", "upload", d);
	return 0;
}

/* mkdir -p of the directories above path (mode 0700 where created). */
static int make_parents(struct tpf_conn *c, const char *path, struct tpf_diags *d)
{
	const char *last = strrchr(path, '/');
	if (!last)
		return 0;
	char *dir = xstrndup(path, (size_t)(last - path));
	int err = 0, rc;
	if (c->dir_made && !strcmp(c->dir_made, dir))
		goto done;
	for (char *p = dir;; p++) {
		if (*p && *p != '/')
			continue;
		unsigned int len = (unsigned int)(p - dir);
		double deadline = tpf_ssh_io_deadline(c);
		do
			rc = libssh2_sftp_mkdir_ex(c->sftp, dir, len, 0700);
		while (tpf_ssh_again(c, rc, deadline));
		if (rc == LIBSSH2_ERROR_SFTP_PROTOCOL) {
			/* Already there (OpenSSH says only "failure"): fine
			 * if it is a directory. */
			LIBSSH2_SFTP_ATTRIBUTES a;
			do
				rc = libssh2_sftp_stat_ex(c->sftp, dir, len, LIBSSH2_SFTP_STAT, &a);
			while (tpf_ssh_again(c, rc, deadline));
			if (!rc && !LIBSSH2_SFTP_S_ISDIR(a.permissions)) {
				char *what = xstrndup(dir, len);
				err = tpf_errorx(d, c->where, NULL,
						 "cannot upload '%s' to worker '%s': '%s' is not a directory",
						 path, c->where, what);
				free(what);
				goto done;
			}
		}
		if (rc) {
			err = tpf_ssh_sftp_fail(c, rc, "creating the directory for", path, d);
			goto done;
		}
		if (!*p)
			break;
	}
	xstrset(&c->dir_made, dir);
done:
	free(dir);
	return err;
}

static int write_all(struct tpf_conn *c, LIBSSH2_SFTP_HANDLE *h, const char *data, size_t len,
		     const char *path, struct tpf_diags *d)
{
	size_t off = 0;
	double deadline = tpf_ssh_io_deadline(c);
	while (off < len) {
		ssize_t n = libssh2_sftp_write(h, data + off, len - off);
		if (n > 0) {
			off += (size_t)n;
			deadline = tpf_ssh_io_deadline(c); /* progress */
			continue;
		}
		if (tpf_ssh_again(c, (int)n, deadline))
			continue;
		return tpf_ssh_sftp_fail(c, (int)n, "writing", path, d);
	}
	return 0;
}

/* Replace `path` with `tmp` when SFTP's rename would not. */
void tpf_ssh_sftp_unlink_quiet(struct tpf_conn *c, const char *path)
{
	if (c->broken)
		return;
	double deadline = tpf_ssh_io_deadline(c);
	int rc;
	while ((rc = libssh2_sftp_unlink_ex(c->sftp, path, (unsigned)strlen(path))) ==
		       LIBSSH2_ERROR_EAGAIN &&
	       tpf_ssh_again(c, rc, deadline))
		;
}

int tpf_ssh_rename_over(struct tpf_conn *c, const char *tmp, const char *path, struct tpf_diags *d)
{
	struct tpf_buf cmd = TPF_BUF_INIT, out = TPF_BUF_INIT;
	int status = -1;
	tpf_buf_adds(&cmd, "mv -f -- ");
	tpf_shquote_buf(&cmd, tmp);
	tpf_buf_addch(&cmd, ' ');
	tpf_shquote_buf(&cmd, path);
	int err = tpf_ssh_exec(c, cmd.buf, &out, &status, c->t->o.io_timeout, d);
	if (!err && status != 0) {
		tpf_buf_rtrim(&out);
		err = tpf_errorx(d, c->where, NULL, "cannot replace '%s' on worker '%s': mv exited with status %d%s%s",
				 path, c->where, status, out.len ? ": " : "", out.buf);
	}
	tpf_buf_release(&cmd);
	tpf_buf_release(&out);
	return err;
}

int tpf_ssh_put(struct tpf_conn *c, const char *path, const void *data, size_t len, mode_t mode,
		struct tpf_diags *d)
{
	LIBSSH2_SFTP_HANDLE *h = NULL;
	char *tmp = NULL;
	int err, rc, created = 0;

	if ((err = tpf_remote_path_check(path, c->where, d)))
		return err;
	if (c->broken)
		return tpf_errorx(d, c->where, "connect again", "cannot upload '%s' to worker '%s': "
				  "the connection was lost or timed out earlier", path, c->where);
	c->timed_out = 0;
	if ((err = tpf_ssh_sftp_open(c, d)) || (err = make_parents(c, path, d)))
		return err;

	unsigned char rnd[6];
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		memset(rnd, 0, sizeof(rnd));
	tmp = xasprintf("%s.tmp-%02x%02x%02x%02x%02x%02x", path, rnd[0], rnd[1], rnd[2], rnd[3],
			rnd[4], rnd[5]);
	double deadline = tpf_ssh_io_deadline(c);
	while (!(h = libssh2_sftp_open_ex(c->sftp, tmp, (unsigned)strlen(tmp),
					  LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_EXCL,
					  (long)(mode & 07777), LIBSSH2_SFTP_OPENFILE)) &&
	       tpf_ssh_again(c, libssh2_session_last_errno(c->s), deadline))
		;
	if (!h) {
		err = tpf_ssh_sftp_fail(c, libssh2_session_last_errno(c->s), "creating", tmp, d);
		goto done;
	}
	created = 1;
	if ((err = write_all(c, h, data, len, path, d)))
		goto done;
	/* The server's umask may have narrowed the mode: set it exactly. */
	LIBSSH2_SFTP_ATTRIBUTES a = { .flags = LIBSSH2_SFTP_ATTR_PERMISSIONS,
				      .permissions = mode & 07777 };
	deadline = tpf_ssh_io_deadline(c);
	do
		rc = libssh2_sftp_fsetstat(h, &a);
	while (tpf_ssh_again(c, rc, deadline));
	if (rc) {
		err = tpf_ssh_sftp_fail(c, rc, "setting the mode of", path, d);
		goto done;
	}
	do
		rc = libssh2_sftp_close_handle(h);
	while (tpf_ssh_again(c, rc, deadline));
	h = NULL;
	if (rc) {
		err = tpf_ssh_sftp_fail(c, rc, "writing", path, d);
		goto done;
	}
	do
		rc = libssh2_sftp_rename_ex(c->sftp, tmp, (unsigned)strlen(tmp), path,
					    (unsigned)strlen(path),
					    LIBSSH2_SFTP_RENAME_OVERWRITE | LIBSSH2_SFTP_RENAME_ATOMIC |
						    LIBSSH2_SFTP_RENAME_NATIVE);
	while (tpf_ssh_again(c, rc, deadline));
	if (rc == LIBSSH2_ERROR_SFTP_PROTOCOL)
		err = tpf_ssh_rename_over(c, tmp, path, d);
	else if (rc)
		err = tpf_ssh_sftp_fail(c, rc, "renaming", path, d);
	if (!err)
		created = 0;
done:
	if (h) {
		deadline = tpf_ssh_io_deadline(c);
		while (!c->broken && (rc = libssh2_sftp_close_handle(h)) == LIBSSH2_ERROR_EAGAIN &&
		       tpf_ssh_again(c, rc, deadline))
			;
	}
	if (created)
		tpf_ssh_sftp_unlink_quiet(c, tmp);
	free(tmp);
	return err;
}
