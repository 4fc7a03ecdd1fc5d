/*
 * The bootstrap's other verbs (engine/workers/provision.h): logs and setup-log
 * (read a log), stop (end the session and job) and disrupt (tell the job
 * of a disruption).
 */
#include "engine/workers/provision_internal.h"
#include "util/buf.h"
#include "util/kv.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* stop gives the job 15 s to exit on SIGTERM. */
#define STOP_TIMEOUT 120.0
#define LOGS_TIMEOUT 120.0

/* Run `SCRIPT_CMD <verb> N` and append what it prints to out; `what`
 * names the log in the error ("job log", "setup log"). */
static int read_log(struct tpf_transport *t, const struct tpf_state_node *n,
		    const struct tpf_live_node *live, int worker, const char *verb, int lines,
		    const char *what, struct tpf_buf *out, struct tpf_diags *d)
{
	struct tpf_buf got = TPF_BUF_INIT;
	int status = -1, reachable = 0;
	char *cmd = xasprintf("%s %s %d", SCRIPT_CMD, verb, lines > 0 ? lines : 0);
	int err = tpf_prov_run(t, n, live, worker, cmd, LOGS_TIMEOUT, &got, &status, NULL, 0, 0, 0,
			       &reachable, d);
	if (!err && status != 0) {
		struct tpf_buf b = TPF_BUF_INIT;
		tpf_buf_adds(&b, got.buf);
		tpf_buf_rtrim(&b);
		char *why = tpf_prov_clean_text(b.buf, 2000);
		/* exit 2 with a usage line: a script from an older tpuform */
		err = tpf_errorx(d, NULL,
				 status == 2 && strstr(why, "usage:")
					 ? "the worker runs the bootstrap script of an older tpuform; "
					   "'tpuform apply' provisions it again"
					 : !strcmp(verb, "setup-log")
					 ? "setup.log is written when the group's setup script runs, "
					   "on the first provisioning of a commit"
					 : "has the worker been provisioned? (tpuform apply)",
				 "cannot read the %s of worker '%s/w%d' (exit status %d)%s%s", what,
				 n->name, worker, status, *why ? ": " : "", why);
		free(why);
		tpf_buf_release(&b);
	}
	if (!err)
		tpf_buf_add(out, got.buf, got.len);
	tpf_buf_release(&got);
	free(cmd);
	return err;
}

int tpf_provision_logs(struct tpf_transport *t, const struct tpf_state_node *n,
		       const struct tpf_live_node *live, int worker, int lines,
		       struct tpf_buf *out, struct tpf_diags *d)
{
	return read_log(t, n, live, worker, "logs", lines, "job log", out, d);
}

int tpf_provision_setup_log(struct tpf_transport *t, const struct tpf_state_node *n,
			    const struct tpf_live_node *live, int worker, int lines,
			    struct tpf_buf *out, struct tpf_diags *d)
{
	return read_log(t, n, live, worker, "setup-log", lines, "setup log", out, d);
}

int tpf_provision_stop(struct tpf_transport *t, const struct tpf_state_node *n,
		       const struct tpf_live_node *live, int worker, const char *reason,
		       struct tpf_diags *d)
{
	struct tpf_buf out = TPF_BUF_INIT;
	struct script_said said;
	int status = -1, reachable = 0;
	/* The reason is one of tpuform's own words ([a-z_]), never user text. */
	int word = reason && *reason && strspn(reason, "abcdefghijklmnopqrstuvwxyz_") == strlen(reason);
	char *cmd = xasprintf("if [ -f " TPF_REMOTE_SCRIPT " ]; then " SCRIPT_CMD " stop %s; "
			      "else echo 'TPUFORM result=stopped'; fi",
			      word ? reason : "");
	int err = tpf_prov_run(t, n, live, worker, cmd, STOP_TIMEOUT, &out, &status, NULL, 0, 1, 0,
			       &reachable, d);
	free(cmd);
	if (err)
		goto done;
	tpf_prov_said_parse(out.buf, &said);
	if (status != 0 || said.result != TPF_SCRIPT_STOPPED) {
		char *tail = tpf_prov_output_tail(said.text.buf, NULL);
		err = tpf_errorx(d, NULL, *tail ? tail : NULL,
				 "cannot stop the session on worker '%s/w%d' (exit status %d)",
				 n->name, worker, status);
		free(tail);
	}
	tpf_prov_said_release(&said);
done:
	tpf_buf_release(&out);
	return err;
}

int tpf_provision_disrupt(struct tpf_transport *t, const struct tpf_state_node *n,
			  const struct tpf_live_node *live, int worker, const char *reason,
			  long deadline, enum tpf_script_result *result, struct tpf_diags *d)
{
	struct tpf_buf out = TPF_BUF_INIT;
	struct script_said said;
	int status = -1, reachable = 0;
	*result = TPF_SCRIPT_NONE;
	/* tpuform's own words only ([a-z_]): the script writes it to a file
	 * the job reads. */
	if (!reason || !*reason || strspn(reason, "abcdefghijklmnopqrstuvwxyz_") != strlen(reason))
		return tpf_error(d, "this is a bug: disruption reason '%s' is not a word",
				 reason ? reason : "");
	char *cmd = xasprintf("if [ -f " TPF_REMOTE_SCRIPT " ]; then " SCRIPT_CMD " disrupt %s %ld; "
			      "else echo 'TPUFORM result=no_job'; fi",
			      reason, deadline);
	int err = tpf_prov_run(t, n, live, worker, cmd, PROBE_TIMEOUT, &out, &status, NULL, 0, 1,
			       0, &reachable, d);
	free(cmd);
	if (err)
		goto done;
	tpf_prov_said_parse(out.buf, &said);
	if (status != 0 || said.result == TPF_SCRIPT_NONE) {
		/* A script of an older tpuform has no such verb. */
		char *tail = tpf_prov_output_tail(said.text.buf, NULL);
		err = tpf_errorx(d, NULL, *tail ? tail : NULL,
				 "cannot pass the %s notice to worker '%s/w%d' (exit status %d): "
				 "its bootstrap may predate the disrupt verb (apply re-provisions it)",
				 reason, n->name, worker, status);
		free(tail);
	} else {
		*result = said.result;
	}
	tpf_prov_said_release(&said);
done:
	tpf_buf_release(&out);
	return err;
}
