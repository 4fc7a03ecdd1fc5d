/*
 * A streaming command over an exec channel (providers/transport.h
 * exec_stream): stdin from a file descriptor, output handed on as it comes,
 * and Ctrl-C carried to the worker.
 *
 * An SSH exec channel without a terminal has no way to interrupt the
 * command: RFC 4254's "signal" request is ignored by OpenSSH's sshd, and
 * closing the channel leaves the command running (the orphans that then
 * hold the TPU). So the command runs under setsid(1) in a session and
 * process group of its own, the group's id is written to a file, and a
 * cancel opens a second channel on the same connection that runs
 * `kill -INT -PGID` (then -KILL). Without setsid(1) only the shell's pid
 * is recorded and signalled.
 */
#include "providers/ssh/ssh_internal.h"
#include "util/shquote.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <openssl/rand.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The command line for the channel. $0 of the inner shell is the pgid
 * file and $1 the command. It runs in the foreground: a shell without job
 * control starts background jobs with SIGINT ignored, for good (POSIX
 * 2.11), and then Ctrl-C could never reach the command. setsid(1) does not
 * fork when its caller is not a group leader (a child of the shell is
 * not), so it is waited for as any command, and $$ inside is the new
 * group's id.
 */
static char *wrapped(const char *command, const char *pgid_file)
{
	struct tpf_buf w = TPF_BUF_INIT, line = TPF_BUF_INIT;
	tpf_buf_adds(&w, "f=");
	tpf_shquote_buf(&w, pgid_file);
	tpf_buf_adds(&w, "; c=");
	tpf_shquote_buf(&w, command);
	tpf_buf_adds(&w, "\nif command -v setsid >/dev/null 2>&1; then\n"
			 "  setsid /bin/sh -c 'echo \"-$$\" >\"$0\"; exec /bin/sh -c \"$1\"' "
			 "\"$f\" \"$c\"\n"
			 "else\n"
			 "  /bin/sh -c 'echo \"$$\" >\"$0\"; exec /bin/sh -c \"$1\"' \"$f\" \"$c\"\n"
			 "fi\n"
			 "s=$?; rm -f -- \"$f\"; exit $s\n");
	tpf_buf_adds(&line, "exec /bin/sh -c ");
	tpf_shquote_buf(&line, w.buf);
	tpf_buf_release(&w);
	return tpf_buf_detach(&line, NULL);
}

/* Signal the command's group: 0 when the signal went out. */
static int send_signal(struct tpf_conn *c, const char *pgid_file, int level)
{
	struct tpf_buf cmd = TPF_BUF_INIT;
	struct tpf_diags ignored = TPF_DIAGS_INIT;
	int st = -1;
	tpf_buf_adds(&cmd, "f=");
	tpf_shquote_buf(&cmd, pgid_file);
	tpf_buf_addf(&cmd, "; [ -s \"$f\" ] && kill -%s $(cat -- \"$f\")",
		     level >= 2 ? "KILL" : "INT");
	int err = tpf_ssh_exec(c, cmd.buf, NULL, &st, 10, &ignored);
	tpf_diags_release(&ignored);
	tpf_buf_release(&cmd);
	return err || st ? -1 : 0;
}

struct stream {
	struct tpf_conn *c;
	LIBSSH2_CHANNEL *ch;
	const struct tpf_exec_io *io;
	int in_fd;        /* -1 once at end of file */
	char in[32768];
	size_t in_len, in_off;
	int eof_sent;
};

/* Move stdin towards the channel; 0, or a libssh2 error. */
static int pump_input(struct stream *s, int readable)
{
	if (s->in_off == s->in_len && s->in_fd >= 0 && readable) {
		ssize_t n = read(s->in_fd, s->in, sizeof(s->in));
		if (n > 0) {
			s->in_len = (size_t)n;
			s->in_off = 0;
		} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
			s->in_fd = -1; /* a read error ends the input as EOF does */
		}
	}
	while (s->in_off < s->in_len) {
		ssize_t w = libssh2_channel_write(s->ch, s->in + s->in_off, s->in_len - s->in_off);
		if (w == LIBSSH2_ERROR_EAGAIN)
			return 0;
		if (w < 0)
			return (int)w;
		s->in_off += (size_t)w;
	}
	if (s->in_fd < 0 && !s->eof_sent) {
		int rc = libssh2_channel_send_eof(s->ch);
		if (rc == LIBSSH2_ERROR_EAGAIN)
			return 0;
		if (rc)
			return rc;
		s->eof_sent = 1;
	}
	return 0;
}

/* Hand on what output there is: 1 at its end, 0 for now, < 0 on errors. */
static int pump_output(struct stream *s)
{
	char buf[32768];
	for (;;) {
		ssize_t n = libssh2_channel_read(s->ch, buf, sizeof(buf));
		if (n > 0) {
			if (s->io->out)
				s->io->out(s->io->arg, buf, (size_t)n);
			continue;
		}
		if (n == LIBSSH2_ERROR_EAGAIN)
			return libssh2_channel_eof(s->ch) ? 1 : 0;
		return n == 0 ? 1 : (int)n;
	}
}

/* Wait for the socket or stdin, at most 100 ms (a cancel is looked at
 * between waits); a keepalive goes out when due. */
static int wait_io(struct stream *s)
{
	int dir = libssh2_session_block_directions(s->c->s);
	struct pollfd p[2] = { { .fd = s->c->fd, .events = POLLIN }, { .fd = -1 } };
	if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
		p[0].events |= POLLOUT;
	if (s->in_fd >= 0 && s->in_off == s->in_len)
		p[1] = (struct pollfd){ .fd = s->in_fd, .events = POLLIN };
	poll(p, 2, 100);
	int next = 0;
	libssh2_keepalive_send(s->c->s, &next);
	return (p[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

static int run_stream(struct stream *s, const char *pgid_file, struct tpf_diags *d)
{
	int sent = 0, readable = 0, rc;
	for (;;) {
		int want = s->io->cancel ? *s->io->cancel : 0;
		if (want > sent && !send_signal(s->c, pgid_file, want))
			sent = want;
		if ((rc = pump_input(s, readable)) < 0 && rc != LIBSSH2_ERROR_CHANNEL_EOF_SENT &&
		    rc != LIBSSH2_ERROR_CHANNEL_CLOSED)
			break;
		if ((rc = pump_output(s)) != 0)
			break;
		readable = wait_io(s);
	}
	if (rc < 0) {
		int code = rc;
		const char *msg = tpf_ssh_errmsg(s->c, &code);
		s->c->broken = 1;
		tpf_errorx(d, s->c->where, NULL, "command on worker '%s' at %s port %d: connection lost: %s",
			   s->c->where, s->c->host, s->c->port, msg);
		return TPF_EUNREACHABLE;
	}
	return 0;
}

int tpf_ssh_exec_stream(struct tpf_conn *c, const char *command, const struct tpf_exec_io *io,
			int *status, struct tpf_diags *d)
{
	*status = -1;
	if (c->broken)
		return tpf_errorx(d, c->where, "connect again", "cannot run a command on worker '%s': "
				  "the connection was lost or timed out earlier", c->where);
	unsigned char rnd[8];
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		memset(rnd, 0, sizeof(rnd));
	char *pgid_file = xasprintf("/tmp/tpuform-exec-%02x%02x%02x%02x%02x%02x%02x%02x.pgid", rnd[0],
				    rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	char *line = wrapped(command, pgid_file);
	struct stream s = { .c = c, .io = io, .in_fd = io->in_fd };
	int err = 0, rc;
	c->timed_out = 0;
	double deadline = tpf_ssh_io_deadline(c);
	while (!(s.ch = libssh2_channel_open_session(c->s)) &&
	       tpf_ssh_again(c, libssh2_session_last_errno(c->s), deadline))
		;
	if (!s.ch) {
		err = tpf_ssh_sftp_fail(c, libssh2_session_last_errno(c->s), "opening a channel for",
					"the command", d);
		goto done;
	}
	libssh2_channel_handle_extended_data2(s.ch, LIBSSH2_CHANNEL_EXTENDED_DATA_MERGE);
	do
		rc = libssh2_channel_process_startup(s.ch, "exec", 4, line, (unsigned)strlen(line));
	while (tpf_ssh_again(c, rc, deadline));
	if (rc) {
		err = tpf_ssh_sftp_fail(c, rc, "starting", "the command", d);
		goto done;
	}
	if ((err = run_stream(&s, pgid_file, d)))
		goto done;
	deadline = tpf_ssh_io_deadline(c);
	do
		rc = libssh2_channel_close(s.ch);
	while (tpf_ssh_again(c, rc, deadline));
	do
		rc = libssh2_channel_wait_closed(s.ch);
	while (!rc ? 0 : tpf_ssh_again(c, rc, deadline));
	*status = tpf_ssh_channel_status(c, s.ch);
done:
	if (s.ch && !c->broken)
		while ((rc = libssh2_channel_free(s.ch)) == LIBSSH2_ERROR_EAGAIN &&
		       tpf_ssh_again(c, rc, deadline))
			;
	free(line);
	free(pgid_file);
	return err;
}
