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

int tpf_ssh_watch_open(struct tpf_conn *c, const char *command, double idle, struct tpf_diags *d)
{
	if (c->broken || c->watch_ch)
		return tpf_errorx(d, c->where, "connect again", "cannot run a command on worker '%s': "
				  "the connection was lost or is busy", c->where);
	c->timed_out = 0;
	LIBSSH2_CHANNEL *ch = NULL;
	int err = tpf_ssh_exec_open(c, command, tpf_now_mono() + c->t->o.io_timeout, &ch, d);
	if (err) {
		tpf_ssh_exec_free(c, ch);
		return err;
	}
	c->watch_ch = ch;
	c->watch_idle = idle;
	c->watch_quiet_until = idle > 0 ? tpf_now_mono() + idle : 0;
	return 0;
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
		       struct tpf_diags *d)
{
	char buf[16384];
	if (!c->watch_ch)
		return tpf_errorx(d, c->where, NULL, "no command runs on worker '%s'", c->where);
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
				   "job wait on worker '%s' at %s port %d: connection lost: %s",
				   c->where, c->host, c->port, msg);
			return TPF_EUNREACHABLE;
		}
		break;
	}
	if (c->watch_quiet_until && tpf_now_mono() >= c->watch_quiet_until) {
		c->broken = 1;
		tpf_errorx(d, c->where, "is the worker's sshd or network alive?",
			   "job wait on worker '%s' at %s port %d: no heartbeat for %.0f s", c->where,
			   c->host, c->port, c->watch_idle);
		return TPF_EUNREACHABLE;
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
	return 1;
}

int tpf_ssh_watch_close(struct tpf_conn *c, int *status, struct tpf_diags *d)
{
	LIBSSH2_CHANNEL *ch = c->watch_ch;
	if (status)
		*status = -1;
	if (!ch)
		return 0;
	c->watch_ch = NULL;
	int err = c->broken ? 0 : tpf_ssh_exec_close(c, ch, status, d);
	tpf_ssh_exec_free(c, ch);
	return err;
}
