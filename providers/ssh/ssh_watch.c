/*
 * A command that answers for a long time (providers/transport.h
 * exec_watch; issue 28): the job wait that lasts the job's life. Its
 * output is handed on as it comes; the command's own heartbeat (a record
 * every minute or so) and SSH keepalives are what tell a live connection
 * from a dead one, not a window after which the command is run again.
 * While nothing arrives the thread sleeps in poll(2) up to 2 s at a time
 * (to look at io->stop), so an idle wait costs a wakeup every 2 s and no
 * exec.
 */
#include "providers/ssh/ssh_internal.h"
#include "util/timeutil.h"

#include <poll.h>

/* The longest sleep between two looks at io->stop, seconds. */
#define STOP_LOOK 2.0

/* Sleep until the socket is ready, `until` (monotonic seconds) passes or
 * STOP_LOOK; a keepalive goes out when due (libssh2 keeps the interval set
 * by libssh2_keepalive_config, here c->t->o.keepalive). */
static void wait_ready(struct tpf_conn *c, double until)
{
	int next = 0;
	if (c->t->o.keepalive > 0)
		libssh2_keepalive_send(c->s, &next);
	double wait = until - tpf_now_mono();
	if (wait > STOP_LOOK)
		wait = STOP_LOOK;
	if (next > 0 && wait > next)
		wait = next;
	if (wait < 0)
		wait = 0;
	int dir = libssh2_session_block_directions(c->s);
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
		p.events |= POLLOUT;
	poll(&p, 1, (int)(wait * 1000) + 1);
}

/* Read until the output ends: 0 at its end, or an error. */
static int pump(struct tpf_conn *c, LIBSSH2_CHANNEL *ch, const struct tpf_watch_io *io,
		struct tpf_diags *d)
{
	char buf[16384];
	double quiet_until = io->idle > 0 ? tpf_now_mono() + io->idle : 0;
	for (;;) {
		ssize_t n = libssh2_channel_read(ch, buf, sizeof(buf));
		if (n > 0) {
			if (io->out)
				io->out(io->arg, buf, (size_t)n);
			if (io->idle > 0)
				quiet_until = tpf_now_mono() + io->idle;
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
		if (io->stop && io->stop(io->arg)) {
			c->broken = 1;
			return tpf_errorx(d, c->where, NULL, "job wait on worker '%s' stopped",
					  c->where);
		}
		double now = tpf_now_mono();
		if (quiet_until && now >= quiet_until) {
			c->broken = 1;
			tpf_errorx(d, c->where, "is the worker's sshd or network alive?",
				   "job wait on worker '%s' at %s port %d: no heartbeat for %.0f s",
				   c->where, c->host, c->port, io->idle);
			return TPF_EUNREACHABLE;
		}
		wait_ready(c, quiet_until ? quiet_until : now + STOP_LOOK);
	}
}

int tpf_ssh_exec_watch(struct tpf_conn *c, const char *command, const struct tpf_watch_io *io,
		       int *status, struct tpf_diags *d)
{
	LIBSSH2_CHANNEL *ch = NULL;
	if (status)
		*status = -1;
	if (c->broken)
		return tpf_errorx(d, c->where, "connect again", "cannot run a command on worker '%s': "
				  "the connection was lost or timed out earlier", c->where);
	c->timed_out = 0;
	int err = tpf_ssh_exec_open(c, command, tpf_now_mono() + c->t->o.io_timeout, &ch, d);
	if (!err)
		err = pump(c, ch, io, d);
	if (!err)
		err = tpf_ssh_exec_close(c, ch, status, d);
	tpf_ssh_exec_free(c, ch);
	return err;
}
