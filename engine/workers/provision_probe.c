/*
 * The read-only verbs that report a worker's job (engine/workers/provision.h):
 * status (tpf_provision_probe; the wait verb is provision_wait.c), read into a
 * struct tpf_worker_report; the session word is parsed here, once
 * (model/job_state.h).
 */
#include "engine/workers/provision_internal.h"
#include "util/buf.h"
#include "util/kv.h"
#include "util/shquote.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Bytes of last_log kept. */
#define LAST_LOG_MAX 300

/* A report of nothing yet: an unreachable worker, every number unknown. */
void tpf_prov_report_reset(struct tpf_worker_report *r)
{
	memset(r, 0, sizeof(*r));
	r->state = TPF_JOB_STATE_UNREACHABLE;
	r->exit_code = -1;
	r->stalled_for = -1;
	r->step = r->checkpoint_step = -1;
}

void tpf_worker_report_release(struct tpf_worker_report *r)
{
	free(r->script_hash);
	free(r->last_log);
	free(r->checkpoint);
	free(r->disruption);
	free(r->host_key);
	tpf_prov_report_reset(r);
}

static double parse_number(const char *v, double min, double max, double fallback)
{
	if (!v || !*v)
		return fallback;
	char *end = NULL;
	long x = strtol(v, &end, 10);
	return !*end && x >= min && x <= max ? (double)x : fallback;
}

/* What the status (or wait) verb printed, with its exit status, into *r
 * (state and the rest; *token_out, when not NULL, the wait verb's
 * token, or NULL). An answer without a session line is an error. */
int tpf_prov_fill_report(const char *out, int status, const char *node, int worker,
			  struct tpf_worker_report *r, char **token_out, struct tpf_diags *d)
{
	struct script_said said;
	tpf_prov_said_parse(out, &said);
	const char *session = tpf_kvlist_get(&said.kv, "session");
	if (status != 0 || !session) {
		char *tail = tpf_prov_output_tail(said.text.buf, NULL);
		int err = tpf_errorx(d, NULL, *tail ? tail : NULL,
				     "status of worker '%s/w%d' failed (exit status %d): expected a "
				     "line 'TPUFORM session=...'", node, worker, status);
		free(tail);
		tpf_prov_said_release(&said);
		return err;
	}
	r->state = tpf_job_state_from_name(session);
	r->exit_code = (int)parse_number(tpf_kvlist_get(&said.kv, "exit_code"), -1, 255, -1);
	r->stalled_for = parse_number(tpf_kvlist_get(&said.kv, "stalled_for"), 0, 1e12, -1);
	const char *script = tpf_kvlist_get(&said.kv, "script");
	if (script && *script)
		r->script_hash = tpf_prov_clean_text(script, 100);
	const char *last = tpf_kvlist_get(&said.kv, "last_log");
	if (last && *last)
		r->last_log = tpf_prov_clean_text(last, LAST_LOG_MAX);
	/* The job's progress (docs/ledger.md): numbers, -1 when not said. */
	r->step = tpf_prov_said_number(&said, "step");
	r->checkpoint_step = tpf_prov_said_number(&said, "checkpoint_step");
	const char *ck = tpf_kvlist_get(&said.kv, "checkpoint");
	if (ck && *ck)
		r->checkpoint = tpf_prov_clean_text(ck, 300);
	const char *dis = tpf_kvlist_get(&said.kv, "disruption");
	if (dis && *dis)
		r->disruption = tpf_prov_clean_text(dis, 100);
	const char *tok = tpf_kvlist_get(&said.kv, "token");
	if (token_out && tok && *tok)
		*token_out = tpf_prov_clean_text(tok, 100);
	tpf_prov_said_release(&said);
	return 0;
}

int tpf_provision_probe(struct tpf_transport *t, const struct tpf_state_node *n,
			const struct tpf_live_node *live, int worker, int once,
			struct tpf_worker_report *r, struct tpf_diags *d)
{
	struct tpf_buf out = TPF_BUF_INIT;
	int status = -1, reachable = 0;

	tpf_prov_report_reset(r);
	int err = tpf_prov_run(t, n, live, worker,
			       "if [ -f " TPF_REMOTE_SCRIPT " ]; then " SCRIPT_CMD " status; "
			       "else echo 'TPUFORM session=none'; fi",
			       PROBE_TIMEOUT, &out, &status, &r->host_key, 1, 1, once, &reachable, d);
	r->reachable = reachable;
	if (err == TPF_EUNREACHABLE && !reachable) {
		err = 0;
		goto done;
	}
	if (err)
		goto done;
	err = tpf_prov_fill_report(out.buf, status, n->name, worker, r, NULL, d);
done:
	tpf_buf_release(&out);
	return err;
}
