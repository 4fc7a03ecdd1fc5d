/*
 * The bootstrap's wait verb (engine/workers/provision.h): one answer
 * within a window (tpf_provision_wait), or, where the transport can read
 * a command's output as it comes (watch_open, watch_step, watch_close), a wait that lasts the
 * job's life and sends the same record as a heartbeat every `beat`
 * seconds (tpf_provision_watch_open, _step, _close; issue 28).
 */
#include "engine/workers/provision_internal.h"
#include "util/buf.h"
#include "util/shquote.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Bytes of one record kept before it must have ended (a status record is
 * well under 2 KiB). */
#define RECORD_MAX (64 * 1024)
/* Silence, beyond the beat, after which a wait's connection is dead:
 * the worker's status and a slow link. Seconds. */
#define BEAT_SLACK 30

/* The command of a wait for a change from token; beat 0: one answer. */
static void wait_command(struct tpf_buf *cmd, const char *token, int window, int beat)
{
	tpf_buf_addf(cmd, "if [ -f " TPF_REMOTE_SCRIPT " ]; then " SCRIPT_CMD " wait ");
	tpf_shquote_buf(cmd, token ? token : "");
	tpf_buf_addf(cmd, " %d", window > 0 ? window : 10);
	if (beat > 0)
		tpf_buf_addf(cmd, " %d", beat);
	tpf_buf_adds(cmd, "; else echo 'TPUFORM session=none'; echo 'TPUFORM token=none'; fi");
}

int tpf_provision_wait(struct tpf_transport *t, struct tpf_conn *c, const char *node, int worker,
		       const char *token, int window, struct tpf_worker_report *r, char **token_out,
		       struct tpf_diags *d)
{
	struct tpf_buf out = TPF_BUF_INIT, cmd = TPF_BUF_INIT;
	int status = -1;
	tpf_prov_report_reset(r);
	*token_out = NULL;
	wait_command(&cmd, token, window, 0);
	/* The window, and the status probe's own time after it. */
	int err = t->ops->exec(c, cmd.buf, &out, &status, (window > 0 ? window : 10) + PROBE_TIMEOUT,
			       d);
	if (!err) {
		r->reachable = 1;
		err = tpf_prov_fill_report(out.buf, status, node, worker, r, token_out, d);
	}
	tpf_buf_release(&cmd);
	tpf_buf_release(&out);
	return err;
}

/* One long wait: its records cut from its output as it comes. */
struct tpf_job_watch {
	struct tpf_transport *t;
	struct tpf_conn *c;
	struct tpf_provision_watch_cb cb;
	char *node;
	int worker;
	struct tpf_buf acc; /* output not yet part of a whole record */
	size_t records;
	int err; /* a record too long, or one without a session line */
	struct tpf_diags *d; /* of the step under way */
};

/* Hand record text (up to and with its token line) to the caller. */
static void deliver(struct tpf_job_watch *f, const char *text, int status)
{
	struct tpf_worker_report r;
	char *token = NULL;
	tpf_prov_report_reset(&r);
	if (tpf_prov_fill_report(text, status, f->node, f->worker, &r, &token, f->d)) {
		f->err = TPF_ERROR;
		return;
	}
	r.reachable = 1;
	f->records++;
	f->cb.record(f->cb.arg, &r, token);
	tpf_worker_report_release(&r);
	free(token);
}

/* Output arrived: every record it completes is delivered. */
static void feed_out(void *arg, const char *data, size_t len)
{
	struct tpf_job_watch *f = arg;
	size_t from = f->acc.len;
	if (f->err)
		return;
	if (tpf_buf_add(&f->acc, data, len) < 0) {
		f->err = tpf_errorx(f->d, NULL, NULL, "job wait on worker '%s/w%d': a record longer "
				    "than %d bytes", f->node, f->worker, RECORD_MAX);
		return;
	}
	/* Back to the start of the line the new bytes continue. */
	while (from > 0 && f->acc.buf[from - 1] != '\n')
		from--;
	for (char *nl; !f->err && (nl = memchr(f->acc.buf + from, '\n',
					       f->acc.len - from)) != NULL;) {
		size_t end = (size_t)(nl - f->acc.buf) + 1;
		if (!strncmp(f->acc.buf + from, "TPUFORM token=", 14)) {
			char *text = xstrndup(f->acc.buf, end);
			deliver(f, text, 0);
			free(text);
			memmove(f->acc.buf, f->acc.buf + end, f->acc.len - end);
			f->acc.len -= end;
			f->acc.buf[f->acc.len] = '\0';
			from = 0;
		} else {
			from = end;
		}
	}
}

int tpf_provision_can_watch(const struct tpf_transport *t)
{
	return t && t->ops->watch_open && t->ops->watch_step && t->ops->watch_close;
}

int tpf_provision_watch_open(struct tpf_transport *t, struct tpf_conn *c, const char *node,
			     int worker, const char *token, int window, int beat,
			     const struct tpf_provision_watch_cb *cb, struct tpf_job_watch **out,
			     struct tpf_diags *d)
{
	*out = NULL;
	if (!tpf_provision_can_watch(t) || beat <= 0)
		return tpf_errorx(d, NULL, NULL, "job wait on worker '%s/w%d': this transport has "
				  "no long wait", node, worker);
	struct tpf_buf cmd = TPF_BUF_INIT;
	wait_command(&cmd, token, window, beat);
	/* An older bootstrap, which ignores the beat, answers within the
	 * window: the idle limit allows for that too. */
	double idle = (beat > window ? beat : window) + BEAT_SLACK;
	int err = t->ops->watch_open(c, cmd.buf, NULL, 0, idle, d);
	tpf_buf_release(&cmd);
	if (err)
		return err;
	struct tpf_job_watch *f = xcalloc(1, sizeof(*f));
	f->t = t;
	f->c = c;
	f->cb = *cb;
	f->node = xstrdup(node);
	f->worker = worker;
	tpf_buf_init_max(&f->acc, RECORD_MAX);
	*out = f;
	return 0;
}

int tpf_provision_watch_step(struct tpf_job_watch *f, struct pollfd *pfd, double *due,
			     struct tpf_diags *d)
{
	struct tpf_watch_io io = { .out = feed_out, .arg = f };
	f->d = d;
	int rc = f->t->ops->watch_step(f->c, &io, pfd, due, d);
	f->d = NULL;
	return f->err ? f->err : rc;
}

int tpf_provision_watch_close(struct tpf_job_watch *f, int ended, struct tpf_diags *d)
{
	if (!f)
		return 0;
	int status = -1;
	f->d = d;
	int err = f->t->ops->watch_close(f->c, &status, d);
	if (!err && f->err)
		err = f->err;
	/* What follows the last token line: an answer without one (an
	 * older script), or nothing at all (an error, as the short wait). */
	if (ended && !err && (f->acc.len || !f->records)) {
		const char *rest = f->acc.buf ? f->acc.buf : "";
		if (f->records && strspn(rest, " \t\r\n") == f->acc.len)
			rest = NULL;
		if (rest) {
			deliver(f, rest, status);
			err = f->err;
		}
	}
	tpf_buf_release(&f->acc);
	free(f->node);
	free(f);
	return err;
}
