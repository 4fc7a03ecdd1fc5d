/*
 * Running a command on a worker: one exec channel per command, stdout and
 * stderr merged in arrival order, exit status or signal read back.
 */
#include "providers/ssh/ssh_internal.h"
#include "util/shquote.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Exit status a shell would report for a command killed by signal `name`
 * (RFC 4254 section 6.10 gives the name without "SIG"). */
static int signal_status(const char *name)
{
	static const struct {
		const char *name;
		int num;
	} sigs[] = { { "HUP", 1 },  { "INT", 2 },   { "QUIT", 3 },  { "ILL", 4 },
		     { "ABRT", 6 }, { "FPE", 8 },   { "KILL", 9 },  { "USR1", 10 },
		     { "SEGV", 11 }, { "USR2", 12 }, { "PIPE", 13 }, { "ALRM", 14 },
		     { "TERM", 15 } };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!strcmp(name, sigs[i].name))
			return 128 + sigs[i].num;
	return 255;
}

int tpf_ssh_channel_status(struct tpf_conn *c, LIBSSH2_CHANNEL *ch)
{
	char *sig = NULL;
	libssh2_channel_get_exit_signal(ch, &sig, NULL, NULL, NULL, NULL, NULL);
	int st = sig ? signal_status(sig) : libssh2_channel_get_exit_status(ch);
	libssh2_free(c->s, sig);
	return st;
}

int tpf_ssh_exec_fail(struct tpf_conn *c, int rc, const char *doing, double timeout,
		      struct tpf_diags *d)
{
	int code = rc;
	if (c->timed_out) {
		c->broken = 1;
		if (timeout > 0)
			return tpf_errorx(d, c->where, NULL,
					  "%s on worker '%s' did not finish within %.0f s", doing,
					  c->where, timeout);
		tpf_errorx(d, c->where, NULL, "%s on worker '%s' at %s port %d: no answer", doing,
			   c->where, c->host, c->port);
		return TPF_EUNREACHABLE;
	}
	const char *msg = tpf_ssh_errmsg(c, &code);
	if (tpf_ssh_net_error(rc) || tpf_ssh_net_error(code)) {
		c->broken = 1;
		tpf_errorx(d, c->where, NULL, "%s on worker '%s' at %s port %d: connection lost: %s",
			   doing, c->where, c->host, c->port, msg);
		return TPF_EUNREACHABLE;
	}
	return tpf_errorx(d, c->where, NULL, "%s on worker '%s' failed: %s", doing, c->where, msg);
}

void tpf_ssh_exec_line(struct tpf_buf *cmd, const char *command)
{
	/* The login shell may not be POSIX (fish, csh): every such shell
	 * runs `exec /bin/sh -c 'quoted'` alike, and the command then gets
	 * the same sh as on the local transport. */
	tpf_buf_adds(cmd, "exec /bin/sh -c ");
	tpf_shquote_buf(cmd, command);
}

int tpf_ssh_exec_open(struct tpf_conn *c, const char *command, double setup_deadline,
		      LIBSSH2_CHANNEL **out, struct tpf_diags *d)
{
	LIBSSH2_CHANNEL *ch = NULL;
	struct tpf_buf cmd = TPF_BUF_INIT;
	int rc, err = 0;
	*out = NULL;
	tpf_ssh_exec_line(&cmd, command);
	while (!(ch = libssh2_channel_open_session(c->s)) &&
	       tpf_ssh_again(c, libssh2_session_last_errno(c->s), setup_deadline))
		;
	if (!ch) {
		err = tpf_ssh_exec_fail(c, libssh2_session_last_errno(c->s), "opening a channel", 0, d);
		goto done;
	}
	*out = ch;
	libssh2_channel_handle_extended_data2(ch, LIBSSH2_CHANNEL_EXTENDED_DATA_MERGE);
	do
		rc = libssh2_channel_process_startup(ch, "exec", 4, cmd.buf, (unsigned)cmd.len);
	while (tpf_ssh_again(c, rc, setup_deadline));
	if (rc) {
		err = tpf_ssh_exec_fail(c, rc, "starting a command", 0, d);
		goto done;
	}
	/* No input: a command that reads stdin gets end-of-file at once. */
	do
		rc = libssh2_channel_send_eof(ch);
	while (tpf_ssh_again(c, rc, setup_deadline));
	if (rc)
		err = tpf_ssh_exec_fail(c, rc, "starting a command", 0, d);
done:
	tpf_buf_release(&cmd);
	return err;
}

int tpf_ssh_exec_close(struct tpf_conn *c, LIBSSH2_CHANNEL *ch, int *status, struct tpf_diags *d)
{
	double setup_deadline = tpf_now_mono() + c->t->o.io_timeout;
	int rc;
	do
		rc = libssh2_channel_close(ch);
	while (tpf_ssh_again(c, rc, setup_deadline));
	if (!rc) {
		do
			rc = libssh2_channel_wait_closed(ch);
		while (tpf_ssh_again(c, rc, setup_deadline));
	}
	if (rc)
		return tpf_ssh_exec_fail(c, rc, "closing a channel", 0, d);
	int st = tpf_ssh_channel_status(c, ch);
	if (status)
		*status = st;
	return 0;
}

void tpf_ssh_exec_free(struct tpf_conn *c, LIBSSH2_CHANNEL *ch)
{
	double setup_deadline = tpf_now_mono() + c->t->o.io_timeout;
	/* A broken channel is freed with its session (libssh2 keeps a list). */
	if (ch && !c->broken) {
		int rc;
		while ((rc = libssh2_channel_free(ch)) == LIBSSH2_ERROR_EAGAIN &&
		       tpf_ssh_again(c, rc, setup_deadline))
			;
	}
}

int tpf_ssh_exec(struct tpf_conn *c, const char *command, struct tpf_buf *out, int *status,
		 double timeout, struct tpf_diags *d)
{
	LIBSSH2_CHANNEL *ch = NULL;
	/* Output is gathered here, capped (providers/transport.h), then
	 * handed to out, whole or as far as it got on an error. */
	struct tpf_buf got = TPF_BUF_INIT_MAX(c->t->o.output_max ? c->t->o.output_max
							   : TPF_TRANSPORT_OUTPUT_MAX);
	char buf[32768];
	int err = 0;

	if (status)
		*status = -1;
	if (c->broken)
		return tpf_errorx(d, c->where, "connect again", "cannot run a command on worker '%s': "
				  "the connection was lost or timed out earlier", c->where);
	c->timed_out = 0;
	double setup_deadline = tpf_now_mono() + c->t->o.io_timeout;
	double deadline = timeout > 0 ? tpf_now_mono() + timeout : 0;
	if (deadline && deadline < setup_deadline)
		setup_deadline = deadline;
	if ((err = tpf_ssh_exec_open(c, command, setup_deadline, &ch, d)))
		goto done;
	for (;;) {
		ssize_t n = libssh2_channel_read(ch, buf, sizeof(buf));
		if (n > 0) {
			if (out && tpf_buf_add(&got, buf, (size_t)n) < 0) {
				/* unread output is left in the channel: drop it all */
				c->broken = 1;
				err = tpf_transport_output_too_large(c->where, tpf_buf_max(&got), d);
				goto done;
			}
			continue;
		}
		if (n == 0)
			break; /* end of output: libssh2 says EAGAIN while more may come */
		if (n == LIBSSH2_ERROR_EAGAIN) {
			if (tpf_ssh_again(c, LIBSSH2_ERROR_EAGAIN, deadline))
				continue;
			err = tpf_ssh_exec_fail(c, LIBSSH2_ERROR_EAGAIN, "command", timeout, d);
			goto done;
		}
		err = tpf_ssh_exec_fail(c, (int)n, "reading command output", 0, d);
		goto done;
	}
	err = tpf_ssh_exec_close(c, ch, status, d);
done:
	tpf_ssh_exec_free(c, ch);
	if (out && !tpf_buf_overflowed(&got) && tpf_buf_take(out, &got) < 0 && !err)
		err = tpf_transport_output_too_large(c->where, tpf_buf_max(out), d);
	tpf_buf_release(&got);
	return err;
}
