/*
 * A command that answers for a long time, driven by the caller's event
 * loop (providers/transport.h watch_open, watch_step, watch_close; issue
 * 28): the job wait that lasts the job's life. The session is already
 * non-blocking (libssh2_session_set_blocking(s, 0) once connected,
 * ssh_session.c): watch_step reads what the channel has, returns at
 * LIBSSH2_ERROR_EAGAIN, and says what to poll(2) for from
 * libssh2_session_block_directions, so one thread can drive every
 * worker's connection. The command's own heartbeat (a record every minute
 * or so) and SSH keepalives (libssh2_keepalive_send, at the interval set
 * with libssh2_keepalive_config) tell a live connection from a dead one,
 * not a window after which the command is run again.
 */
#include "providers/ssh/ssh_internal.h"
#include "util/timeutil.h"

static void poll_for(struct tpf_conn *c, struct pollfd *pfd);

/* c->watch_state: none (0), asked for (watch_open), the exec request
 * sent, running (stdin closed, output read). */
enum { W_ASKED = 1, W_EXEC_SENT, W_RUNNING };

int tpf_ssh_watch_open(struct tpf_conn *c, const char *command, const void *input,
		       size_t input_len, double idle, struct tpf_diags *d)
{
	if (c->broken || c->watch_state)
		return tpf_errorx(d, c->where, "connect again", "cannot run a command on worker '%s': "
				  "the connection was lost or is busy", c->where);
	c->timed_out = 0;
	tpf_buf_init(&c->watch_cmd);
	tpf_ssh_exec_line(&c->watch_cmd, command);
	c->watch_in = input;
	c->watch_in_len = input ? input_len : 0;
	c->watch_in_off = 0;
	c->watch_state = W_ASKED;
	c->watch_setup_by = tpf_now_mono() + c->t->o.io_timeout;
	c->watch_idle = idle;
	c->watch_quiet_until = 0;
	return 0;
}

/* Send what stdin is left (c->watch_in), as much as the channel's window
 * takes: 0 all sent, LIBSSH2_ERROR_EAGAIN for now, or an error. Progress
 * moves the setup deadline: a large input takes as long as it takes, a
 * stalled one has the connection's I/O timeout. */
static int send_input(struct tpf_conn *c)
{
	while (c->watch_in_off < c->watch_in_len) {
		ssize_t w = libssh2_channel_write(c->watch_ch, c->watch_in + c->watch_in_off,
						  c->watch_in_len - c->watch_in_off);
		if (w < 0)
			return (int)w;
		c->watch_in_off += (size_t)w;
		c->watch_setup_by = tpf_now_mono() + c->t->o.io_timeout;
	}
	return 0;
}

/* Start the command, a step at a time (tpf_ssh_exec_open's calls, each
 * repeated after LIBSSH2_ERROR_EAGAIN), and send its stdin: 0 started
 * and stdin closed, 1 not yet (*pfd set), or an error. */
static int start_step(struct tpf_conn *c, struct pollfd *pfd, struct tpf_diags *d)
{
	int rc = 0;
	const char *doing = "opening a channel";
	if (!c->watch_ch) {
		c->watch_ch = libssh2_channel_open_session(c->s);
		if (!c->watch_ch)
			rc = libssh2_session_last_errno(c->s);
		else
			libssh2_channel_handle_extended_data2(c->watch_ch,
							      LIBSSH2_CHANNEL_EXTENDED_DATA_MERGE);
	}
	if (!rc && c->watch_state == W_ASKED) {
		doing = "starting a command";
		rc = libssh2_channel_process_startup(c->watch_ch, "exec", 4, c->watch_cmd.buf,
						     (unsigned)c->watch_cmd.len);
		if (!rc)
			c->watch_state = W_EXEC_SENT;
	}
	if (!rc && c->watch_state == W_EXEC_SENT) {
		/* The input, then end-of-file (none: a command that reads
		 * stdin gets end-of-file at once). */
		doing = "sending the command its input";
		rc = send_input(c);
		if (!rc)
			rc = libssh2_channel_send_eof(c->watch_ch);
		if (!rc)
			c->watch_state = W_RUNNING;
	}
	if (!rc) {
		tpf_buf_release(&c->watch_cmd);
		c->watch_quiet_until = c->watch_idle > 0 ? tpf_now_mono() + c->watch_idle : 0;
		return 0;
	}
	if (rc == LIBSSH2_ERROR_EAGAIN && tpf_now_mono() < c->watch_setup_by) {
		poll_for(c, pfd);
		return 1;
	}
	if (rc == LIBSSH2_ERROR_EAGAIN)
		c->timed_out = 1;
	return tpf_ssh_exec_fail(c, rc, doing, 0, d);
}

/* What to poll for: the socket, readable, and writable when libssh2 has
 * output waiting. */
static void poll_for(struct tpf_conn *c, struct pollfd *pfd)
{
	int dir = libssh2_session_block_directions(c->s);
	pfd->fd = c->fd;
	pfd->events = POLLIN;
	if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
		pfd->events |= POLLOUT;
	pfd->revents = 0;
}

int tpf_ssh_watch_step(struct tpf_conn *c, const struct tpf_watch_io *io, struct pollfd *pfd,
		       double *due, struct tpf_diags *d)
{
	char buf[16384];
	*due = 0;
	if (!c->watch_state)
		return tpf_errorx(d, c->where, NULL, "no command runs on worker '%s'", c->where);
	if (c->watch_state != W_RUNNING) {
		int rc = start_step(c, pfd, d);
		/* While its input goes out, the command's output is read
		 * too: one that answers before it read everything must not
		 * stall on a full window. */
		if (rc < 0 || (rc && c->watch_state != W_EXEC_SENT)) {
			*due = c->watch_setup_by; /* its timeout */
			return rc;
		}
		if (rc)
			*due = c->watch_setup_by;
	}
	for (;;) {
		ssize_t n = libssh2_channel_read(c->watch_ch, buf, sizeof(buf));
		if (n > 0) {
			if (io->out)
				io->out(io->arg, buf, (size_t)n);
			if (c->watch_idle > 0)
				c->watch_quiet_until = tpf_now_mono() + c->watch_idle;
			continue;
		}
		if (n == 0)
			return 0;
		if (n != LIBSSH2_ERROR_EAGAIN) {
			int code = (int)n;
			const char *msg = tpf_ssh_errmsg(c, &code);
			c->broken = 1;
			tpf_errorx(d, c->where, NULL,
				   "command on worker '%s' at %s port %d: connection lost: %s",
				   c->where, c->host, c->port, msg);
			return TPF_EUNREACHABLE;
		}
		break;
	}
	if (c->watch_quiet_until && tpf_now_mono() >= c->watch_quiet_until) {
		c->broken = 1;
		tpf_errorx(d, c->where, "is the worker's sshd or network alive?",
			   "command on worker '%s' at %s port %d: no output for %.0f s", c->where,
			   c->host, c->port, c->watch_idle);
		return TPF_EUNREACHABLE;
	}
	if (c->watch_state != W_RUNNING) {
		/* Input still going out: no keepalive now (libssh2 must finish
		 * a half-sent packet before it sends another). */
		poll_for(c, pfd);
		return 1;
	}
	int next = 0;
	if (c->t->o.keepalive > 0 && libssh2_keepalive_send(c->s, &next) < 0 &&
	    libssh2_session_last_errno(c->s) != LIBSSH2_ERROR_EAGAIN) {
		int code = 0;
		const char *msg = tpf_ssh_errmsg(c, &code);
		c->broken = 1;
		tpf_errorx(d, c->where, NULL, "keepalive to worker '%s' at %s port %d failed: %s",
			   c->where, c->host, c->port, msg);
		return TPF_EUNREACHABLE;
	}
	poll_for(c, pfd);
	/* Step again at the next keepalive (next: seconds, from libssh2) or
	 * the silence limit, whichever comes first. */
	*due = c->watch_quiet_until;
	if (c->t->o.keepalive > 0) {
		double ka = tpf_now_mono() + (next > 0 ? next : 1);
		if (!*due || ka < *due)
			*due = ka;
	}
	return 1;
}

int tpf_ssh_watch_close(struct tpf_conn *c, int *status, struct tpf_diags *d)
{
	LIBSSH2_CHANNEL *ch = c->watch_ch;
	if (status)
		*status = -1;
	int started = c->watch_state == W_RUNNING;
	tpf_buf_release(&c->watch_cmd);
	c->watch_state = 0;
	if (!ch)
		return 0;
	c->watch_ch = NULL;
	/* A command not started, or still running (watch stopping, an
	 * error): no status to wait for, and closing its channel would wait
	 * for the worker's answer (up to the I/O timeout each, a slow stop
	 * of thousands of waits). The connection cannot serve another
	 * command meanwhile: it is dropped whole, without a word. */
	if (!started || !libssh2_channel_eof(ch))
		c->broken = 1;
	int err = c->broken ? 0 : tpf_ssh_exec_close(c, ch, status, d);
	tpf_ssh_exec_free(c, ch);
	return err;
}
