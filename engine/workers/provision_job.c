/*
 * One worker's provisioning as a list of commands, each with its stdin
 * (engine/workers/provision_internal.h tpf_prov_job_*), for apply's
 * fan-out on an event loop (engine/workers/provision_fanout.c; issue 28).
 * The same steps as tpf_provision_worker (provision.c) for the source
 * modes that move no source: the secrets, the script, the start. The
 * files go over a command's stdin rather than SFTP, because a command is
 * what the loop can drive without blocking (providers/transport.h
 * watch_open); as put() does, each is written under a temporary name
 * with its final mode and then renamed over the old one, so a worker
 * never runs half a script. The command counts the bytes before the
 * rename: a connection lost mid-way ends the command's stdin as its end
 * would, and `cat` alone would then put a truncated file in place.
 */
#include "engine/workers/provision_internal.h"
#include "plan/worker_script.h"
#include "util/buf.h"
#include "util/shquote.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* The steps, in order. */
enum { STEP_SECRETS, STEP_SCRIPT, STEP_START, STEP_END };

struct tpf_prov_job {
	const struct tpf_fleet *f;
	struct tpf_state_node *n; /* the caller's copy */
	const struct tpf_live_node *live;
	int worker, force;
	char *addr, *hash, *script, *secrets;
	int step;    /* the step asked for last (tpf_prov_job_next) */
	int started; /* the start said it started the job */
	char *cmd;   /* the command handed out last */
};

int tpf_prov_job_fits(const struct tpf_fleet *f, const struct tpf_state_node *n)
{
	const char *mode = tpf_worker_source_mode(f, n);
	return !strcmp(mode, "none") || !strcmp(mode, "clone");
}

struct tpf_prov_job *tpf_prov_job_new(const struct tpf_fleet *f, struct tpf_state_node *n,
				      const struct tpf_live_node *live, int worker, int force,
				      struct tpf_diags *d)
{
	char *addr = xasprintf("%s/w%d", n->name, worker);
	if (!tpf_state_node_worker(n, worker)) {
		tpf_prov_no_such_worker(n, worker, addr, d);
		free(addr);
		return NULL;
	}
	struct tpf_prov_job *j = xcalloc(1, sizeof(*j));
	j->f = f;
	j->n = n;
	j->live = live;
	j->worker = worker;
	j->force = force;
	j->addr = addr;
	j->script = tpf_provision_render(f, n, live, worker, &j->hash);
	j->secrets = tpf_secrets_render(&f->secrets);
	j->step = -1;
	return j;
}

void tpf_prov_job_connected(struct tpf_prov_job *j, const char *host_key)
{
	if (host_key)
		xstrset(&j->n->workers[j->worker].host_key, host_key);
}

char *tpf_prov_write_command(const char *path, const char *mode, size_t len)
{
	struct tpf_buf b = TPF_BUF_INIT;
	const char *slash = strrchr(path, '/');
	char *parent = slash ? xstrndup(path, (size_t)(slash - path)) : xstrdup(".");
	tpf_buf_adds(&b, "umask 077; p=");
	tpf_shquote_buf(&b, path);
	tpf_buf_adds(&b, "; t=\"$p.tmp-$$\"; mkdir -p -- ");
	tpf_shquote_buf(&b, parent);
	/* wc's count unquoted: some print it with leading blanks. */
	tpf_buf_addf(&b, " && cat >\"$t\" && [ $(wc -c <\"$t\") -eq %zu ] && chmod %s \"$t\" && "
			 "mv -f -- \"$t\" \"$p\" || { s=$?; rm -f -- \"$t\"; [ \"$s\" -ne 0 ] || s=1; "
			 "exit \"$s\"; }", len, mode);
	free(parent);
	return tpf_buf_detach(&b, NULL);
}

int tpf_prov_job_next(struct tpf_prov_job *j, const char **cmd, const void **input, size_t *len,
		      double *idle)
{
	free(j->cmd);
	j->cmd = NULL;
	j->step++;
	*input = NULL;
	*len = 0;
	*idle = PROBE_TIMEOUT;
	switch (j->step) {
	case STEP_SECRETS:
		*input = j->secrets;
		*len = strlen(j->secrets);
		j->cmd = tpf_prov_write_command(TPF_REMOTE_SECRETS, "600", *len);
		break;
	case STEP_SCRIPT:
		*input = j->script;
		*len = strlen(j->script);
		j->cmd = tpf_prov_write_command(TPF_REMOTE_SCRIPT, "700", *len);
		break;
	case STEP_START:
		j->cmd = tpf_prov_start_command(j->n, j->force);
		*idle = TPF_PROV_START_TIMEOUT;
		break;
	default:
		j->step = STEP_END;
		return 0;
	}
	*cmd = j->cmd;
	return 1;
}

int tpf_prov_job_answer(struct tpf_prov_job *j, const char *out, int status, struct tpf_diags *d)
{
	struct tpf_state_worker *sw = &j->n->workers[j->worker];
	if (j->step == STEP_START)
		return tpf_prov_take_start(j->f, sw, j->addr, out ? out : "", status, &j->started, d);
	if (status == 0)
		return 0;
	/* A file that could not be written: the shell's own words. */
	char *text = tpf_prov_clean_text(out ? out : "", 2000);
	int err = tpf_errorx(d, j->addr, *text ? text : NULL,
			     "cannot upload '%s' to worker '%s': the command writing it exited "
			     "with status %d",
			     j->step == STEP_SECRETS ? TPF_REMOTE_SECRETS : TPF_REMOTE_SCRIPT, j->addr,
			     status);
	free(text);
	return err;
}

int tpf_prov_job_end(struct tpf_prov_job *j, int err, int *changed)
{
	struct tpf_state_worker *sw = &j->n->workers[j->worker];
	*changed = 0;
	if (!err && j->step < STEP_END)
		err = TPF_ERROR; /* ended before its last step: the caller's bug */
	if (err) {
		sw->job_state = err == TPF_EUNREACHABLE ? TPF_JOB_STATE_UNREACHABLE
							: TPF_JOB_STATE_FAILED;
		return err;
	}
	*changed = j->started;
	tpf_prov_mark_running(j->f, j->live, j->worker, sw, j->hash, j->started);
	return 0;
}

void tpf_prov_job_free(struct tpf_prov_job *j)
{
	if (!j)
		return;
	free(j->cmd);
	free(j->addr);
	free(j->hash);
	free(j->script);
	free(j->secrets);
	free(j);
}
