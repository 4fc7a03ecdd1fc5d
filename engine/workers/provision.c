/*
 * Provisioning a worker (engine/workers/provision.h): render its bootstrap, move
 * its source, secrets and script, and start (or restart) the job; what
 * the worker's job state becomes is recorded in its state worker.
 */
#include "engine/workers/provision_internal.h"
#include "plan/worker_script.h"
#include "templates/render.h"
#include "source/source.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/kv.h"
#include "util/shquote.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static const char *endpoint_address(const struct tpf_fleet *f, const struct tpf_endpoint *e)
{
	if (!e)
		return NULL;
	if (f && f->ssh.address == TPF_SSH_ADDRESS_INTERNAL)
		return e->ip;
	if (f && f->ssh.address == TPF_SSH_ADDRESS_EXTERNAL)
		return e->external_ip;
	return e->external_ip ? e->external_ip : e->ip;
}

/*
 * Before moving a source: is this exact script already running (then the
 * source stays untouched under the running job), and does the worker's
 * checkout already have the commit (then no bundle is needed)?
 */
static void precheck(struct tpf_conn *c, struct tpf_transport *t, const char *hash,
		     const char *commit, int *running, int *have_commit)
{
	struct tpf_buf cmd = TPF_BUF_INIT, out = TPF_BUF_INIT;
	struct tpf_diags ignored = TPF_DIAGS_INIT;
	struct script_said s;
	int status = -1;

	*running = *have_commit = 0;
	tpf_buf_adds(&cmd, "if [ -f " TPF_REMOTE_SCRIPT " ]; then " SCRIPT_CMD " status; fi; ");
	if (commit) {
		tpf_buf_adds(&cmd, "if git -C " TPF_REMOTE_SRC " cat-file -e ");
		char *spec = xasprintf("%s^{commit}", commit);
		tpf_shquote_buf(&cmd, spec);
		free(spec);
		tpf_buf_adds(&cmd, " 2>/dev/null; then echo 'TPUFORM have_commit=yes'; fi");
	}
	if (t->ops->exec(c, cmd.buf, &out, &status, PROBE_TIMEOUT, &ignored) == 0) {
		tpf_prov_said_parse(out.buf, &s);
		const char *sess = tpf_kvlist_get(&s.kv, "session");
		const char *script = tpf_kvlist_get(&s.kv, "script");
		*running = tpf_job_state_from_name(sess) == TPF_JOB_STATE_ALIVE && script &&
			   !strcmp(script, hash);
		*have_commit = tpf_kvlist_get(&s.kv, "have_commit") != NULL;
		tpf_prov_said_release(&s);
	}
	tpf_diags_release(&ignored);
	tpf_buf_release(&cmd);
	tpf_buf_release(&out);
}

/* Move the source where the script expects it, for modes present and
 * bundle (clone: the script fetches it itself). */
static int send_source(struct tpf_transport *t, struct tpf_conn *c, const char *mode,
		       const struct tpf_state_node *n, const char *hash, int force,
		       const char *addr, struct tpf_diags *d)
{
	int running = 0, have_commit = 0, err = 0;
	if (strcmp(mode, "present") && strcmp(mode, "bundle"))
		return 0;
	precheck(c, t, hash, n->job.commit, &running, &have_commit);
	if (!strcmp(mode, "present")) {
		if (running && !force)
			return 0;
		if (!t->ops->put_source)
			return tpf_errorx(d, addr, "this is a bug in the transport: source mode 'present' needs put_source",
					  "cannot place the source on worker '%s'", addr);
		return t->ops->put_source(c, n->job.repo, n->job.commit, TPF_REMOTE_SRC, d);
	}
	if (have_commit)
		return 0;
	struct tpf_buf bundle = TPF_BUF_INIT;
	err = tpf_source_bundle(n->job.repo, n->job.commit, &bundle, d);
	if (!err)
		err = t->ops->put(c, TPF_REMOTE_BUNDLE, bundle.buf, bundle.len, 0600, d);
	tpf_buf_release(&bundle);
	return err;
}

/*
 * The start (or restart) command. The node's last checkpoint the state
 * records goes in its environment, TPUFORM_SAVED_CHECKPOINT, which the
 * job gets as TPUFORM_LAST_CHECKPOINT when its VM has none of its own (a
 * replacement VM: templates/bootstrap.sh tpf_job). On the command line,
 * not in the script: a new checkpoint must not change the script's hash,
 * which would restart the job (plan/diff.c compares hashes).
 */
char *tpf_prov_start_command(const struct tpf_state_node *n, int force)
{
	const char *verb = force ? " restart" : " start";
	if (!n->last_checkpoint || !*n->last_checkpoint)
		return xasprintf(SCRIPT_CMD "%s", verb);
	char *q = tpf_shquote(n->last_checkpoint);
	char *cmd = xasprintf("TPUFORM_SAVED_CHECKPOINT=%s " SCRIPT_CMD "%s", q, verb);
	free(q);
	return cmd;
}

/* What the start command said, taken into sw: 0 when the job was
 * started or found running (*started: which), else an error with the
 * script's own words (a preflight failure counted in sw). */
int tpf_prov_take_start(const struct tpf_fleet *f, struct tpf_state_worker *sw, const char *addr,
		      const char *out, int status, int *started, struct tpf_diags *d)
{
	struct script_said said;
	int err = 0;
	*started = 0;
	tpf_prov_said_parse(out, &said);
	for (const char *w = said.warnings.buf; *w;) {
		const char *eol = strchr(w, '\n');
		char *one = xstrndup(w, (size_t)(eol - w));
		tpf_warn(d, addr, "bootstrap on worker '%s' warns: %s", addr, one);
		free(one);
		w = eol + 1;
	}
	if (status != 0 ||
	    (said.result != TPF_SCRIPT_STARTED && said.result != TPF_SCRIPT_UNCHANGED)) {
		const char *step = tpf_kvlist_get(&said.kv, "step");
		const char *code = tpf_kvlist_get(&said.kv, "exit_code");
		char *msg = tpf_prov_message_line(&said, &f->secrets);
		char *tail = tpf_prov_output_tail(said.text.buf, &f->secrets);
		if (step && !strcmp(step, "preflight")) {
			/* The worker's own words, counted: in a row, they make a
			 * bad host (engine/apply/apply_workers.c). */
			sw->preflight_failures++;
			xstrset(&sw->preflight_error, msg ? msg : "preflight failed");
		}
		if (step)
			err = tpf_errorx(d, addr, *tail ? tail : NULL,
					 "bootstrap failed on worker '%s' at step '%s' (exit status %s)%s%s",
					 addr, step, code ? code : "?", msg ? ": " : "", msg ? msg : "");
		else
			err = tpf_errorx(d, addr, *tail ? tail : NULL,
					 "bootstrap on worker '%s' exited with status %d without reporting "
					 "a result: expected a line 'TPUFORM result=started' (is /bin/sh a "
					 "POSIX shell?)", addr, status);
		free(msg);
		free(tail);
	} else {
		*started = said.result == TPF_SCRIPT_STARTED;
	}
	tpf_prov_said_release(&said);
	return err;
}

/* A worker whose job now runs: its facts in sw. */
void tpf_prov_mark_running(const struct tpf_fleet *f, const struct tpf_live_node *live, int worker,
			 struct tpf_state_worker *sw, const char *hash, int started)
{
	char *session = tpf_session_name(f->name);
	xstrset(&sw->script_hash, hash);
	xstrset(&sw->session, session);
	free(session);
	sw->job_state = TPF_JOB_STATE_ALIVE;
	sw->exit_code = -1;
	sw->preflight_failures = 0;
	xstrset(&sw->preflight_error, NULL);
	if (started || !sw->provisioned_at) {
		char now[40];
		tpf_rfc3339(tpf_now_wall(), now, sizeof(now));
		xstrset(&sw->provisioned_at, now);
	}
	xstrset(&sw->address, endpoint_address(f, tpf_prov_worker_endpoint(live, worker)));
}

/* The error for a worker not in n's worker list. */
int tpf_prov_no_such_worker(const struct tpf_state_node *n, int worker, const char *addr,
			  struct tpf_diags *d)
{
	return tpf_errorx(d, addr, "the node's worker list in state is shorter than its recipe",
			  "cannot provision worker %d of node '%s': it has %zu workers in state",
			  worker, n->name, n->nworkers);
}

int tpf_provision_worker(struct tpf_transport *t, const struct tpf_fleet *f,
			 struct tpf_state_node *n, const struct tpf_live_node *live, int worker,
			 int force, int *changed, struct tpf_diags *d)
{
	char *addr = xasprintf("%s/w%d", n->name, worker);
	char *hash = NULL, *script = NULL, *secrets = NULL, *host_key = NULL;
	struct tpf_conn *c = NULL;
	struct tpf_buf out = TPF_BUF_INIT;
	int status = -1, err = 0, started = 0;
	enum tpf_job_state new_state = TPF_JOB_STATE_FAILED;

	if (changed)
		*changed = 0;
	if (!tpf_state_node_worker(n, worker)) {
		err = tpf_prov_no_such_worker(n, worker, addr, d);
		free(addr);
		return err;
	}
	struct tpf_state_worker *sw = &n->workers[worker];
	const char *mode = tpf_worker_source_mode(f, n);
	script = tpf_provision_render(f, n, live, worker, &hash);
	secrets = tpf_secrets_render(&f->secrets);

	err = tpf_prov_open_worker(t, n, live, worker, 0, 0, &c, &host_key, d);
	if (err) {
		new_state = err == TPF_EUNREACHABLE ? TPF_JOB_STATE_UNREACHABLE : TPF_JOB_STATE_FAILED;
		goto done;
	}
	/* Pin the key as soon as the worker proved it (trust on first use),
	 * even if the bootstrap then fails: the next attempt must meet it. */
	if (host_key)
		xstrset(&sw->host_key, host_key);
	if ((err = send_source(t, c, mode, n, hash, force, addr, d)) < 0 ||
	    (err = t->ops->put(c, TPF_REMOTE_SECRETS, secrets, strlen(secrets), 0600, d)) < 0 ||
	    (err = t->ops->put(c, TPF_REMOTE_SCRIPT, script, strlen(script), 0700, d)) < 0)
		goto done;
	char *cmd = tpf_prov_start_command(n, force);
	err = t->ops->exec(c, cmd, &out, &status, TPF_PROV_START_TIMEOUT, d);
	free(cmd);
	if (err) {
		new_state = err == TPF_EUNREACHABLE ? TPF_JOB_STATE_UNREACHABLE : TPF_JOB_STATE_FAILED;
		goto done;
	}
	if ((err = tpf_prov_take_start(f, sw, addr, out.buf ? out.buf : "", status, &started, d)))
		goto done;
	if (changed)
		*changed = started;
	tpf_prov_mark_running(f, live, worker, sw, hash, started);
done:
	if (err)
		sw->job_state = new_state;
	if (c)
		t->ops->close(c);
	tpf_buf_release(&out);
	free(host_key);
	free(secrets);
	free(script);
	free(hash);
	free(addr);
	return err;
}
