#include "engine/provision.h"
#include "plan/plan.h"
#include "plan/worker_script.h"
#include "templates/render.h"
#include "source/source.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/kv.h"
#include "util/redact.h"
#include "util/shquote.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Seconds. start runs setup, which may install things. */
#define START_TIMEOUT 600.0
#define PROBE_TIMEOUT 60.0
/* stop gives the job 15 s to exit on SIGTERM. */
#define STOP_TIMEOUT 120.0
#define LOGS_TIMEOUT 120.0
/* Lines of script output quoted in a failure diagnostic. */
#define TAIL_LINES 15
/* Bytes of last_log kept. */
#define LAST_LOG_MAX 300
#define SCRIPT_CMD "sh " TPF_REMOTE_SCRIPT

/* A report of nothing yet: an unreachable worker, every number unknown. */
static void report_reset(struct tpf_worker_report *r)
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
	report_reset(r);
}

static const struct tpf_endpoint *worker_endpoint(const struct tpf_live_node *live, int worker)
{
	if (!live || !tpf_worker_in_range(worker, live->nendpoints))
		return NULL;
	return &live->endpoints[worker];
}

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

/* ---- output handling ---------------------------------------------------- */

/*
 * A copy of s fit for a diagnostic or the state file (JSON needs UTF-8):
 * invalid UTF-8 bytes become '?', control characters other than newline
 * and tab are dropped, and at most max bytes are kept, cut at a character
 * boundary.
 */
static char *clean_text(const char *s, size_t max)
{
	struct tpf_buf b = TPF_BUF_INIT;
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		size_t n = 1;
		unsigned char c = *p;
		if (c >= 0xc2 && c <= 0xdf)
			n = 2;
		else if (c >= 0xe0 && c <= 0xef)
			n = 3;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 4;
		int ok = c < 0x80 || n > 1;
		for (size_t i = 1; ok && i < n; i++)
			ok = (p[i] & 0xc0) == 0x80;
		/* Overlong 3- and 4-byte forms, surrogates, > U+10FFFF. */
		if (ok && n == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0)))
			ok = 0;
		if (ok && n == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90)))
			ok = 0;
		if (!ok)
			n = 1;
		size_t add = ok ? n : 1;
		if (b.len + add > max)
			break;
		if (!ok)
			tpf_buf_addch(&b, '?');
		else if (n == 1 && (c < 0x20 || c == 0x7f) && c != '\n' && c != '\t')
			;
		else
			tpf_buf_add(&b, p, n);
		p += n;
	}
	return tpf_buf_detach(&b, NULL);
}

void tpf_job_facts_redact(struct tpf_job_facts *facts, const struct tpf_kvlist *secrets)
{
	for (size_t i = 0; facts && i < facts->n; i++) {
		char *log = facts->items[i].last_log;
		if (!log)
			continue;
		struct tpf_buf b = TPF_BUF_INIT;
		tpf_buf_adds(&b, log);
		tpf_redact_kv(&b, secrets);
		tpf_wipe(log, strlen(log));
		free(log);
		facts->items[i].last_log = xstrdup(b.buf);
		tpf_buf_release(&b);
	}
}

/* What the script said: "TPUFORM key=value" lines. A line holds several
 * space-separated pairs, except last_log and script whose value is the
 * rest of the line. Later values win; warnings are collected. */
struct script_said {
	struct tpf_kvlist kv;
	struct tpf_buf warnings; /* one a line */
	const char *message;     /* borrowed: last "tpuform: " line, in text */
	struct tpf_buf text;     /* the output without TPUFORM lines */
};

static void said_release(struct script_said *s)
{
	tpf_kvlist_release(&s->kv);
	tpf_buf_release(&s->warnings);
	tpf_buf_release(&s->text);
}

static void parse_output(const char *out, struct script_said *s)
{
	size_t msg_off = (size_t)-1;
	memset(s, 0, sizeof(*s));
	tpf_buf_init(&s->warnings);
	tpf_buf_init(&s->text);
	for (const char *line = out; *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char *l = xstrndup(line, len);
		if (!strncmp(l, "TPUFORM ", 8)) {
			char *rest = l + 8;
			char *eq = strchr(rest, '=');
			if (eq && (!strncmp(rest, "last_log=", 9) || !strncmp(rest, "script=", 7) ||
				   !strncmp(rest, "checkpoint=", 11))) {
				*eq = '\0';
				tpf_kvlist_set(&s->kv, rest, eq + 1);
			} else {
				char *save = NULL;
				for (char *tok = strtok_r(rest, " ", &save); tok;
				     tok = strtok_r(NULL, " ", &save)) {
					char *e = strchr(tok, '=');
					if (!e)
						continue;
					*e = '\0';
					if (!strcmp(tok, "warning"))
						tpf_buf_addf(&s->warnings, "%s\n", e + 1);
					else
						tpf_kvlist_set(&s->kv, tok, e + 1);
				}
			}
		} else {
			if (!strncmp(l, "tpuform: ", 9))
				msg_off = s->text.len + 9;
			tpf_buf_addf(&s->text, "%s\n", l);
		}
		free(l);
		line += len + (eol ? 1 : 0);
	}
	if (msg_off != (size_t)-1)
		s->message = s->text.buf + msg_off;
}

/* A non-negative number the script said under `key`, or -1. */
static long said_number(const struct script_said *s, const char *key)
{
	const char *v = tpf_kvlist_get(&s->kv, key);
	char *end = NULL;
	long n = v && *v ? strtol(v, &end, 10) : -1;
	return end && !*end && n >= 0 ? n : -1;
}

/* The last TAIL_LINES lines of text, redacted and cleaned; caller frees. */
static char *output_tail(const char *text, const struct tpf_kvlist *secrets)
{
	const char *end = text + strlen(text);
	while (end > text && end[-1] == '\n')
		end--;
	const char *start = end;
	int nl = 0;
	while (start > text) {
		if (start[-1] == '\n') {
			if (nl + 1 >= TAIL_LINES)
				break;
			nl++;
		}
		start--;
	}
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_buf_add(&b, start, (size_t)(end - start));
	tpf_redact_kv(&b, secrets);
	tpf_buf_rtrim(&b);
	char *clean = clean_text(b.buf, 8192);
	tpf_buf_release(&b);
	return clean;
}

/* The message line alone ("setup exited with status 3"), cleaned. */
static char *message_line(const struct script_said *s, const struct tpf_kvlist *secrets)
{
	if (!s->message)
		return NULL;
	const char *eol = strchr(s->message, '\n');
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_buf_add(&b, s->message, eol ? (size_t)(eol - s->message) : strlen(s->message));
	tpf_redact_kv(&b, secrets);
	char *clean = clean_text(b.buf, 1000);
	tpf_buf_release(&b);
	return clean;
}

/* ---- talking to a worker ------------------------------------------------ */

static int open_worker(struct tpf_transport *t, const struct tpf_state_node *n,
		       const struct tpf_live_node *live, int worker, int read_only, int once,
		       struct tpf_conn **c, char **host_key, struct tpf_diags *d)
{
	const struct tpf_state_worker *sw = tpf_state_node_worker(n, worker);
	const char *pin = sw ? sw->host_key : NULL;
	struct tpf_worker_ref ref = {
		.node = n->name,
		.node_id = n->id,
		.worker = worker,
		.nworkers = tpf_node_worker_count(n),
		.endpoint = worker_endpoint(live, worker),
		.host_key = pin,
		.read_only = read_only,
		.once = once,
	};
	*c = NULL;
	if (host_key)
		*host_key = NULL;
	return t->ops->connect(t, &ref, c, host_key, d);
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
		parse_output(out.buf, &s);
		const char *sess = tpf_kvlist_get(&s.kv, "session");
		const char *script = tpf_kvlist_get(&s.kv, "script");
		*running = tpf_job_state_from_name(sess) == TPF_JOB_STATE_ALIVE && script &&
			   !strcmp(script, hash);
		*have_commit = tpf_kvlist_get(&s.kv, "have_commit") != NULL;
		said_release(&s);
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
static char *start_command(const struct tpf_state_node *n, int force)
{
	const char *verb = force ? " restart" : " start";
	if (!n->last_checkpoint || !*n->last_checkpoint)
		return xasprintf(SCRIPT_CMD "%s", verb);
	char *q = tpf_shquote(n->last_checkpoint);
	char *cmd = xasprintf("TPUFORM_SAVED_CHECKPOINT=%s " SCRIPT_CMD "%s", q, verb);
	free(q);
	return cmd;
}

int tpf_provision_worker(struct tpf_transport *t, const struct tpf_fleet *f,
			 struct tpf_state_node *n, const struct tpf_live_node *live, int worker,
			 int force, int *changed, struct tpf_diags *d)
{
	char *addr = xasprintf("%s/w%d", n->name, worker);
	char *hash = NULL, *script = NULL, *secrets = NULL, *host_key = NULL;
	char *session = tpf_session_name(f->name);
	struct tpf_conn *c = NULL;
	struct tpf_buf out = TPF_BUF_INIT;
	struct script_said said;
	int said_ok = 0, status = -1, err = 0;
	enum tpf_job_state new_state = TPF_JOB_STATE_FAILED;

	if (changed)
		*changed = 0;
	if (!tpf_state_node_worker(n, worker)) {
		err = tpf_errorx(d, addr, "the node's worker list in state is shorter than its recipe",
				 "cannot provision worker %d of node '%s': it has %zu workers in state",
				 worker, n->name, n->nworkers);
		free(addr);
		free(session);
		return err;
	}
	struct tpf_state_worker *sw = &n->workers[worker];
	const char *mode = tpf_worker_source_mode(f, n);
	script = tpf_provision_render(f, n, live, worker, &hash);
	secrets = tpf_secrets_render(&f->secrets);

	err = open_worker(t, n, live, worker, 0, 0, &c, &host_key, d);
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
	char *cmd = start_command(n, force);
	err = t->ops->exec(c, cmd, &out, &status, START_TIMEOUT, d);
	free(cmd);
	if (err) {
		new_state = err == TPF_EUNREACHABLE ? TPF_JOB_STATE_UNREACHABLE : TPF_JOB_STATE_FAILED;
		goto done;
	}
	parse_output(out.buf, &said);
	said_ok = 1;
	for (const char *w = said.warnings.buf; *w;) {
		const char *eol = strchr(w, '\n');
		char *one = xstrndup(w, (size_t)(eol - w));
		tpf_warn(d, addr, "bootstrap on worker '%s' warns: %s", addr, one);
		free(one);
		w = eol + 1;
	}
	const char *result = tpf_kvlist_get(&said.kv, "result");
	if (status != 0 || !result || (strcmp(result, "started") && strcmp(result, "unchanged"))) {
		const char *step = tpf_kvlist_get(&said.kv, "step");
		const char *code = tpf_kvlist_get(&said.kv, "exit_code");
		char *msg = message_line(&said, &f->secrets);
		char *tail = output_tail(said.text.buf, &f->secrets);
		if (step && !strcmp(step, "preflight")) {
			/* The worker's own words, counted: in a row, they make a
			 * bad host (engine/apply_workers.c). */
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
		goto done;
	}
	int started = !strcmp(result, "started");
	if (changed)
		*changed = started;
	xstrset(&sw->script_hash, hash);
	xstrset(&sw->session, session);
	sw->job_state = TPF_JOB_STATE_ALIVE;
	sw->exit_code = -1;
	sw->preflight_failures = 0;
	xstrset(&sw->preflight_error, NULL);
	if (started || !sw->provisioned_at) {
		char now[40];
		tpf_rfc3339(tpf_now_wall(), now, sizeof(now));
		xstrset(&sw->provisioned_at, now);
	}
	xstrset(&sw->address, endpoint_address(f, worker_endpoint(live, worker)));
done:
	if (err)
		sw->job_state = new_state;
	if (c)
		t->ops->close(c);
	if (said_ok)
		said_release(&said);
	tpf_buf_release(&out);
	free(host_key);
	free(secrets);
	free(script);
	free(hash);
	free(session);
	free(addr);
	return err;
}

/* ---- read-only verbs ----------------------------------------------------- */

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
static int fill_report(const char *out, int status, const char *node, int worker,
		       struct tpf_worker_report *r, char **token_out, struct tpf_diags *d)
{
	struct script_said said;
	parse_output(out, &said);
	const char *session = tpf_kvlist_get(&said.kv, "session");
	if (status != 0 || !session) {
		char *tail = output_tail(said.text.buf, NULL);
		int err = tpf_errorx(d, NULL, *tail ? tail : NULL,
				     "status of worker '%s/w%d' failed (exit status %d): expected a "
				     "line 'TPUFORM session=...'", node, worker, status);
		free(tail);
		said_release(&said);
		return err;
	}
	r->state = tpf_job_state_from_name(session);
	r->exit_code = (int)parse_number(tpf_kvlist_get(&said.kv, "exit_code"), -1, 255, -1);
	r->stalled_for = parse_number(tpf_kvlist_get(&said.kv, "stalled_for"), 0, 1e12, -1);
	const char *script = tpf_kvlist_get(&said.kv, "script");
	if (script && *script)
		r->script_hash = clean_text(script, 100);
	const char *last = tpf_kvlist_get(&said.kv, "last_log");
	if (last && *last)
		r->last_log = clean_text(last, LAST_LOG_MAX);
	/* The job's progress (docs/ledger.md): numbers, -1 when not said. */
	r->step = said_number(&said, "step");
	r->checkpoint_step = said_number(&said, "checkpoint_step");
	const char *ck = tpf_kvlist_get(&said.kv, "checkpoint");
	if (ck && *ck)
		r->checkpoint = clean_text(ck, 300);
	const char *dis = tpf_kvlist_get(&said.kv, "disruption");
	if (dis && *dis)
		r->disruption = clean_text(dis, 100);
	const char *tok = tpf_kvlist_get(&said.kv, "token");
	if (token_out && tok && *tok)
		*token_out = clean_text(tok, 100);
	said_release(&said);
	return 0;
}

/*
 * Run `command` on the worker; on success out holds its output. soft: an
 * unreachable worker gives TPF_EUNREACHABLE with the reason as a warning
 * only (a probe of a preempted node is not an error); otherwise the
 * connect diagnostics stay errors. read_only: see tpf_worker_ref.
 */
static int run_on_worker(struct tpf_transport *t, const struct tpf_state_node *n,
			 const struct tpf_live_node *live, int worker, const char *command,
			 double timeout, struct tpf_buf *out, int *status, char **host_key,
			 int soft, int read_only, int once, int *reachable, struct tpf_diags *d)
{
	struct tpf_conn *c = NULL;
	char *addr = xasprintf("%s/w%d", n->name, worker);
	struct tpf_diags local = TPF_DIAGS_INIT;
	int err;

	*reachable = 0;
	err = open_worker(t, n, live, worker, read_only, once, &c, host_key, &local);
	if (!err) {
		*reachable = 1;
		err = t->ops->exec(c, command, out, status, timeout, &local);
		if (err == TPF_EUNREACHABLE)
			*reachable = 0;
	}
	if (err == TPF_EUNREACHABLE && soft) {
		/* Expected while a node is preempted or booting: the caller
		 * reports it; the reason is kept as a warning. */
		for (size_t i = 0; i < local.n; i++)
			tpf_diags_add(d, TPF_SEV_WARNING,
				      local.items[i].address ? local.items[i].address : addr,
				      local.items[i].summary, local.items[i].detail);
	} else {
		tpf_diags_move(d, &local);
	}
	if (c)
		t->ops->close(c);
	tpf_diags_release(&local);
	free(addr);
	return err;
}

int tpf_provision_probe(struct tpf_transport *t, const struct tpf_state_node *n,
			const struct tpf_live_node *live, int worker, int once,
			struct tpf_worker_report *r, struct tpf_diags *d)
{
	struct tpf_buf out = TPF_BUF_INIT;
	int status = -1, reachable = 0;

	report_reset(r);
	int err = run_on_worker(t, n, live, worker,
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
	err = fill_report(out.buf, status, n->name, worker, r, NULL, d);
done:
	tpf_buf_release(&out);
	return err;
}

int tpf_provision_connect(struct tpf_transport *t, const struct tpf_state_node *n,
			  const struct tpf_live_node *live, int worker, struct tpf_conn **c,
			  struct tpf_diags *d)
{
	return open_worker(t, n, live, worker, 1, 1, c, NULL, d);
}

int tpf_provision_wait(struct tpf_transport *t, struct tpf_conn *c, const char *node, int worker,
		       const char *token, int window, struct tpf_worker_report *r, char **token_out,
		       struct tpf_diags *d)
{
	struct tpf_buf out = TPF_BUF_INIT, cmd = TPF_BUF_INIT;
	int status = -1;
	report_reset(r);
	*token_out = NULL;
	tpf_buf_addf(&cmd, "if [ -f " TPF_REMOTE_SCRIPT " ]; then " SCRIPT_CMD " wait ");
	tpf_shquote_buf(&cmd, token ? token : "");
	tpf_buf_addf(&cmd, " %d; else echo 'TPUFORM session=none'; echo 'TPUFORM token=none'; fi",
		     window > 0 ? window : 10);
	/* The window, and the status probe's own time after it. */
	int err = t->ops->exec(c, cmd.buf, &out, &status, (window > 0 ? window : 10) + PROBE_TIMEOUT,
			       d);
	if (!err) {
		r->reachable = 1;
		err = fill_report(out.buf, status, node, worker, r, token_out, d);
	}
	tpf_buf_release(&cmd);
	tpf_buf_release(&out);
	return err;
}

/* Run `SCRIPT_CMD <verb> N` and append what it prints to out; `what`
 * names the log in the error ("job log", "setup log"). */
static int read_log(struct tpf_transport *t, const struct tpf_state_node *n,
		    const struct tpf_live_node *live, int worker, const char *verb, int lines,
		    const char *what, struct tpf_buf *out, struct tpf_diags *d)
{
	struct tpf_buf got = TPF_BUF_INIT;
	int status = -1, reachable = 0;
	char *cmd = xasprintf("%s %s %d", SCRIPT_CMD, verb, lines > 0 ? lines : 0);
	int err = run_on_worker(t, n, live, worker, cmd, LOGS_TIMEOUT, &got, &status, NULL, 0, 0, 0,
				&reachable, d);
	if (!err && status != 0) {
		struct tpf_buf b = TPF_BUF_INIT;
		tpf_buf_adds(&b, got.buf);
		tpf_buf_rtrim(&b);
		char *why = clean_text(b.buf, 2000);
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
	int err = run_on_worker(t, n, live, worker, cmd, STOP_TIMEOUT, &out, &status, NULL, 0, 1, 0,
				&reachable, d);
	free(cmd);
	if (err)
		goto done;
	parse_output(out.buf, &said);
	const char *result = tpf_kvlist_get(&said.kv, "result");
	if (status != 0 || !result || strcmp(result, "stopped")) {
		char *tail = output_tail(said.text.buf, NULL);
		err = tpf_errorx(d, NULL, *tail ? tail : NULL,
				 "cannot stop the session on worker '%s/w%d' (exit status %d)",
				 n->name, worker, status);
		free(tail);
	}
	said_release(&said);
done:
	tpf_buf_release(&out);
	return err;
}

int tpf_provision_disrupt(struct tpf_transport *t, const struct tpf_state_node *n,
			  const struct tpf_live_node *live, int worker, const char *reason,
			  long deadline, char **result, struct tpf_diags *d)
{
	struct tpf_buf out = TPF_BUF_INIT;
	struct script_said said;
	int status = -1, reachable = 0;
	*result = NULL;
	/* tpuform's own words only ([a-z_]): the script writes it to a file
	 * the job reads. */
	if (!reason || !*reason || strspn(reason, "abcdefghijklmnopqrstuvwxyz_") != strlen(reason))
		return tpf_error(d, "this is a bug: disruption reason '%s' is not a word",
				 reason ? reason : "");
	char *cmd = xasprintf("if [ -f " TPF_REMOTE_SCRIPT " ]; then " SCRIPT_CMD " disrupt %s %ld; "
			      "else echo 'TPUFORM result=no_job'; fi",
			      reason, deadline);
	int err = run_on_worker(t, n, live, worker, cmd, PROBE_TIMEOUT, &out, &status, NULL, 0, 1,
				0, &reachable, d);
	free(cmd);
	if (err)
		goto done;
	parse_output(out.buf, &said);
	const char *r = tpf_kvlist_get(&said.kv, "result");
	if (status != 0 || !r) {
		/* A script of an older tpuform has no such verb. */
		char *tail = output_tail(said.text.buf, NULL);
		err = tpf_errorx(d, NULL, *tail ? tail : NULL,
				 "cannot pass the %s notice to worker '%s/w%d' (exit status %d): "
				 "its bootstrap may predate the disrupt verb (apply re-provisions it)",
				 reason, n->name, worker, status);
		free(tail);
	} else {
		*result = xstrdup(r);
	}
	said_release(&said);
done:
	tpf_buf_release(&out);
	return err;
}
