/*
 * The man pages, generated from the command table as help is (cmd/help.c),
 * so that they cannot drift from what the parser accepts: tpuform(1) and
 * one page per command, tpuform-apply(1) ..., as git has git-commit(1).
 * roff with the man(7) macros (groff_man(7); the conventions of
 * man-pages(7): NAME, SYNOPSIS, DESCRIPTION, OPTIONS, EXIT STATUS,
 * ENVIRONMENT, FILES, SEE ALSO). The Makefile writes them at build time
 * with `tpuform help -man [COMMAND]`.
 */
#include "cmd/gen.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One character of text, escaped for roff: "\" as \e, "-" as \- (a flag's
 * dash must not become a hyphen), anything outside ASCII as \[uXXXX]. */
static const char *put_char(FILE *out, const char *p)
{
	unsigned char c = (unsigned char)*p;
	if (c == '\\')
		fputs("\\e", out);
	else if (c == '-')
		fputs("\\-", out);
	else if (c < 0x80)
		fputc(c, out);
	else {
		unsigned cp = 0;
		int more = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
		cp = more == 3 ? c & 0x07 : more == 2 ? c & 0x0f : c & 0x1f;
		for (int i = 0; i < more && (p[1] & 0xc0) == 0x80; i++)
			cp = (cp << 6) | ((unsigned char)*++p & 0x3f);
		fprintf(out, more ? "\\[u%04X]" : "?", cp);
	}
	return p + 1;
}

/* The output column, to keep roff source lines short (mandoc's lint
 * asks for at most 80 bytes). */
static int col;
static int nowrap; /* in .nf: lines stay as they are */

/* Text of at most n bytes, escaped, broken at a space past column 70; a
 * line must not start with "." or "'" (a request), so such a start gets
 * the zero-width \&. The caller ends the line. */
static void put_text(FILE *out, const char *s, size_t n)
{
	const char *end = s + n;
	int start = 1;
	while (s < end && *s) {
		if (*s == ' ' && !nowrap && col >= 70 && s + 1 < end && s[1]) {
			fputc('\n', out);
			col = 0;
			start = 1;
			s++;
			continue;
		}
		if (start && col == 0 && (*s == '.' || *s == '\''))
			fputs("\\&", out);
		start = 0;
		const char *next = put_char(out, s);
		col += (int)(next - s) + (*s == '-' || *s == '\\');
		s = next;
	}
}

/* Literal roff, tracking the column as text does. */
static void raw(FILE *out, const char *s)
{
	fputs(s, out);
	const char *nl = strrchr(s, '\n');
	col = nl ? (int)strlen(nl + 1) : col + (int)strlen(s);
}

/* Start a new source line (the next text is at column 0). */
static void newline(FILE *out)
{
	fputc('\n', out);
	col = 0;
}

static void put(FILE *out, const char *s)
{
	put_text(out, s, strlen(s));
}

/* A help paragraph block ("  text\n" lines; a blank line between
 * paragraphs; lines indented past the paragraph's first line, or past two
 * spaces, are shown as they are, one per line: the "Examples:" of a
 * footer, whose lines are indented two, ran together into one filled line
 * before, issue 26). heading: it follows .SH or .SS, which starts a
 * paragraph already. */
static void put_paragraphs(FILE *out, const char *text, int heading)
{
	int literal = 0, start = 1, first = 1;
	size_t base = 2; /* the indent of the paragraph's first line, at most 2 */
	while (text && *text) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text);
		size_t ind = 0;
		while (ind < len && text[ind] == ' ')
			ind++;
		if (start && ind < len && !literal)
			base = ind < 2 ? ind : 2;
		int deep = ind > base && ind < len;
		if (literal && !deep) {
			raw(out, ".fi\n.RE\n");
			literal = nowrap = 0;
		}
		if (ind == len) {
			start = 1;
		} else {
			if (deep && !literal) {
				raw(out, ".RS 4\n.nf\n");
				literal = nowrap = 1;
			} else if (start && !deep && !(first && heading))
				raw(out, ".PP\n");
			start = first = 0;
			put_text(out, text + ind, len - ind);
			newline(out);
		}
		text = nl ? nl + 1 : text + len;
	}
	if (literal)
		raw(out, ".fi\n.RE\n");
	nowrap = 0;
}

/* "-f, -file=FILE" as \fB\-f\fR, \fB\-file\fR=\fIFILE\fR */
static void put_flag_name(FILE *out, const char *name)
{
	const char *eq = strchr(name, '=');
	const char *comma = strstr(name, ", ");
	if (comma && (!eq || comma < eq)) {
		raw(out, "\\fB");
		put_text(out, name, (size_t)(comma - name));
		raw(out, "\\fR, ");
		name = comma + 2;
		eq = strchr(name, '=');
	}
	raw(out, "\\fB");
	put_text(out, name, eq ? (size_t)(eq - name) : strlen(name));
	raw(out, "\\fR");
	if (eq) {
		raw(out, "=\\fI");
		put(out, eq + 1);
		raw(out, "\\fR");
	}
	newline(out);
}

/* The options of a (leaf) command, each with its default and range as
 * -help shows them (tpf_flag_describe). */
static void put_options(FILE *out, const struct tpf_cmd *c)
{
	struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
	int help = 0;
	struct tpf_flag *flags = tpf_cmd_flags(c, &o, &help);
	for (const struct tpf_flag *f = flags; f->name; f++) {
		if (!f->help)
			continue;
		char name[64], def[96];
		tpf_flag_describe(f, name, sizeof(name), def, sizeof(def));
		raw(out, ".TP\n");
		put_flag_name(out, name);
		put(out, f->help);
		put(out, def);
		newline(out);
	}
	free(flags);
}

static void put_synopsis(FILE *out, const struct tpf_cmd *c, const char *path)
{
	char usage[256];
	tpf_help_usage_line(c, path, usage, sizeof(usage));
	size_t cmdlen = strlen("tpuform ") + strlen(path);
	raw(out, ".B tpuform ");
	put(out, path);
	newline(out);
	if (usage[cmdlen]) {
		put(out, usage + cmdlen + 1);
		newline(out);
	}
}

/* .TH: the page's title, section, date, source and manual. */
static void put_header(FILE *out, const char *title)
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	time_t t = sde && *sde ? (time_t)strtoll(sde, NULL, 10) : time(NULL);
	struct tm tm;
	char date[32] = "";
	if (gmtime_r(&t, &tm))
		strftime(date, sizeof(date), "%Y-%m-%d", &tm);
	raw(out, ".\\\" Generated by `tpuform help -man` from the command table (cmd/man.c).\n");
	fprintf(out, ".TH \"%s\" 1 \"%s\" \"tpuform %s\" \"tpuform manual\"\n", title, date,
		TPF_VERSION);
}

/* tpuform(1): every code any command exits with. */
static void put_exit_status(FILE *out)
{
	raw(out, ".SH \"EXIT STATUS\"\n"
		 ".TP\n0\nSuccess.\n"
		 ".TP\n1\nAn error: the diagnostics on standard error (or, with\n"
		 "\\fB\\-json\\fR, as JSON lines on standard output) say what and why.\n"
		 ".TP\n2\nOnly \\fBplan \\-detailed\\-exitcode\\fR: success, with changes.\n"
		 ".TP\n3\nOnly \\fBplan \\-detailed\\-exitcode\\fR: no changes, but the fleet\n"
		 "is not as declared (restarts used up, waiting for quota or a queued\n"
		 "resource).\n"
		 ".TP\n130, 143\nA read-only command stopped by SIGINT or SIGTERM dies of the\n"
		 "signal, as the shell reports it.\n");
}

static void put_status(FILE *out, const char *code, const char *meaning)
{
	raw(out, ".TP\n");
	put(out, code);
	newline(out);
	put(out, meaning);
	newline(out);
}

/* c's own codes (cmd.h exit_status), else 0 and 1, plan's 2 and 3 with
 * -detailed-exitcode, and what its signal handling exits with
 * (cmd/signals.c): never a code the command does not use. */
static void put_command_exit_status(FILE *out, const struct tpf_cmd *c)
{
	raw(out, ".SH \"EXIT STATUS\"\n");
	if (c->exit_status) {
		for (const char *const *e = c->exit_status; e[0]; e += 2)
			put_status(out, e[0], e[1]);
	} else {
		int detailed = 0;
		for (const struct tpf_flag *f = c->flags; f && f->name && !detailed; f++)
			detailed = !strcmp(f->name, "detailed-exitcode");
		put_status(out, "0", detailed ? "Success (with -detailed-exitcode: no changes, and the "
						"fleet is as declared)."
					      : "Success.");
		put_status(out, "1", "An error: the diagnostics on standard error (or, with -json, "
				     "as JSON lines on standard output) say what and why.");
		if (detailed) {
			put_status(out, "2", "Only with -detailed-exitcode: success, with changes.");
			put_status(out, "3", "Only with -detailed-exitcode: no changes, but the fleet is "
					     "not as declared (restarts used up, waiting for quota or a "
					     "queued resource).");
		}
	}
	if (c->signals == TPF_SIG_STOP)
		put_status(out, "130, 143", "Stopped by SIGINT or SIGTERM: it dies of the signal, as the "
					    "shell reports it.");
	else if (c->signals == TPF_SIG_GRACEFUL)
		put_status(out, "1", "Also after an interrupt: the first SIGINT or SIGTERM lets what "
				     "runs finish and records the state; a second exits at once.");
	else if (c->signals == TPF_SIG_FORWARD)
		put_status(out, "130", "A third SIGINT or SIGTERM (the first two go to the remote "
				       "commands) exits at once.");
}

/* tpuform-NAME(1) */
static void command_page(FILE *out, const struct tpf_cmd *c)
{
	char title[96];
	snprintf(title, sizeof(title), "TPUFORM-%s", c->name);
	for (char *p = title; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	put_header(out, title);
	raw(out, ".SH NAME\ntpuform\\-");
	put(out, c->name);
	raw(out, " \\- ");
	put(out, c->summary);
	raw(out, "\n.SH SYNOPSIS\n");
	put_synopsis(out, c, c->name);
	raw(out, ".SH DESCRIPTION\n");
	put_paragraphs(out, c->description, 1);
	if (c->subs) {
		raw(out, ".SH SUBCOMMANDS\n");
		for (const struct tpf_cmd *const *s = c->subs; *s; s++) {
			char path[64];
			snprintf(path, sizeof(path), "%s %s", c->name, (*s)->name);
			raw(out, ".SS \"");
			put(out, path);
			raw(out, "\"\n");
			put_synopsis(out, *s, path);
			put_paragraphs(out, (*s)->description, 0);
			raw(out, ".PP\nOptions:\n");
			put_options(out, *s);
			if ((*s)->footer)
				put_paragraphs(out, (*s)->footer, 0);
		}
	} else {
		raw(out, ".SH OPTIONS\n");
		put_options(out, c);
		if (c->footer) {
			raw(out, ".SH NOTES\n");
			put_paragraphs(out, c->footer, 1);
		}
	}
	put_command_exit_status(out, c);
	raw(out, ".SH ENVIRONMENT\n"
		 "\\fBNO_COLOR\\fR turns colour off; the variables that tune timeouts,\n"
		 "retries and endpoints are listed in\n.BR tpuform (1).\n"
		 ".SH \"SEE ALSO\"\n.BR tpuform (1)\n");
}

/* What tpuform reads from its environment: each name the code reads
 * (getenv, tpf_env_seconds, tpf_env_int), with its meaning. t710 checks
 * that every name read in the sources is here. */
static const char *const env_vars[][2] = {
	{ "NO_COLOR", "set: no ANSI colour (https://no-color.org)" },
	{ "TPUFORM_IN_AUTOMATION", "set: plan leaves out the \"apply this plan\" advice" },
	{ "USER", "the default ssh.user" },
	{ "HOME", "where ~/.ssh and gcloud's configuration are looked for" },
	{ "SHELL", "the local provider's login shell for tpuform ssh" },
	{ "TMPDIR", "where temporary files go" },
	{ "SSH_AUTH_SOCK", "ssh-agent, used when ssh.private_key is not set" },
	{ "GOOGLE_APPLICATION_CREDENTIALS", "a credentials file (Application Default Credentials)" },
	{ "CLOUDSDK_CONFIG", "gcloud's configuration directory (application default credentials)" },
	{ "GCE_METADATA_HOST", "the metadata server (GCE_METADATA_ROOT: its older name)" },
	{ "GCE_METADATA_ROOT", "the metadata server, older name of GCE_METADATA_HOST" },
	{ "GOOGLE_CLOUD_QUOTA_PROJECT", "the project billed for quota (x-goog-user-project)" },
	{ "TPUFORM_ACCESS_TOKEN", "a ready OAuth access token for the Google APIs" },
	{ "TPUFORM_IMPERSONATE_SERVICE_ACCOUNT", "impersonate this service account" },
	{ "TPUFORM_TPU_ENDPOINT", "the Cloud TPU API endpoint (https, or http to loopback)" },
	{ "TPUFORM_STORAGE_ENDPOINT", "the Cloud Storage endpoint of state.gcs" },
	{ "TPUFORM_IAMCREDENTIALS_ENDPOINT", "the IAM Credentials endpoint" },
	{ "TPUFORM_COMPUTE_ENDPOINT", "the Compute Engine endpoint (OS Login checks)" },
	{ "TPUFORM_OSLOGIN_ENDPOINT", "the OS Login endpoint" },
	{ "TPUFORM_TOKENINFO_ENDPOINT", "the OAuth token info endpoint" },
	{ "TPUFORM_OSLOGIN_TTL", "how long an OS Login key import lasts (default 24h)" },
	{ "TPUFORM_GCP_POLL_MIN", "operation polling, first interval" },
	{ "TPUFORM_GCP_POLL_MAX", "operation polling, longest interval" },
	{ "TPUFORM_GCP_RETRY_BASE", "first retry delay of a Google API request" },
	{ "TPUFORM_GCP_RETRY_CAP", "longest retry delay of a Google API request" },
	{ "TPUFORM_GCP_TRIES", "tries of a Google API request (1 to 100)" },
	{ "TPUFORM_GCP_TOKEN_MARGIN", "replace a token this long before it expires (default 240s)" },
	{ "TPUFORM_GCP_OP_TIMEOUT", "give up waiting for a long-running operation" },
	{ "TPUFORM_GCP_CONNECT_TIMEOUT", "connect timeout of a Google API request" },
	{ "TPUFORM_GCP_STALL_TIMEOUT", "a request that receives nothing this long is dropped" },
	{ "TPUFORM_GCP_REQUEST_TIMEOUT", "whole-request timeout of a Google API request" },
	{ "TPUFORM_GCP_MAX_BODY", "the largest response body accepted, bytes" },
	{ "TPUFORM_SSH_CONNECT_TIMEOUT", "one SSH connection attempt" },
	{ "TPUFORM_SSH_RETRY", "how long to retry reaching a worker" },
	{ "TPUFORM_SSH_IO_TIMEOUT", "an SSH read or write that makes no progress" },
	{ "TPUFORM_SSH_KEEPALIVE", "SSH keepalive interval (default 15s)" },
	{ "TPUFORM_SSH_PROGRAM", "the ssh(1) that tpuform ssh runs" },
	{ "TPUFORM_HEARTBEAT", "how often a job's heartbeat is looked at (default 10s)" },
	{ "TPUFORM_WAIT_TIMEOUT", "give up waiting for a node to be READY (default 20m)" },
	{ "TPUFORM_ATTACH_WINDOW", "watch's job waits on the local transport: seconds a wait "
				   "blocks before it is asked again (default 10)" },
	{ "TPUFORM_ATTACH_BEAT", "watch's job waits over SSH: seconds between a wait's heartbeats "
				 "(default 60)" },
	{ "TPUFORM_NOTIFY_BACKOFF", "first retry delay of a webhook notification" },
	{ "TPUFORM_NOTIFY_DRAIN", "how long watch delivers queued notifications on exit (10s)" },
	{ "TPUFORM_LEDGER", "off: write no run ledger" },
	{ "TPUFORM_BUDGET_REFRESH", "how often watch measures the budgets' spend from the run ledger (60s)" },
	{ "TPUFORM_LEDGER_REFRESH", "how often watch -metrics-addr rebuilds the ledger's metrics and page (5m)" },
	{ "TPUFORM_LEDGER_SEGMENT_BYTES", "bytes of one local run ledger segment (default 16 MiB)" },
	{ "TPUFORM_BILLING_API_KEY", "prices -refresh: an API key for the Cloud Billing Catalog API, "
				     "instead of the fleet's credentials" },
	{ "TPUFORM_MONITORING_ENDPOINT", "the Cloud Monitoring API endpoint (default "
					 "https://monitoring.googleapis.com)" },
	{ "TPUFORM_MONITORING_INTERVAL", "for tests: how often watch writes to Cloud Monitoring "
					 "(default 1m, at least 5s)" },
	{ "TPUFORM_LOCAL_NO_QUOTA", "local provider, for tests: zones that refuse for quota" },
	{ "TPUFORM_LOCAL_NO_CAPACITY", "local provider, for tests: zones without capacity" },
	{ "TPUFORM_LOCAL_FAIL_CREATE", "local provider, for tests: nodes whose create fails" },
	{ "SOURCE_DATE_EPOCH", "help -man: the date of the pages (reproducible builds)" },
};

static const char *const files[][2] = {
	{ "tpuform.yaml", "the fleet file, unless -f names another" },
	{ "tpuform.state.json", "the state, beside the fleet file, unless its state: says otherwise "
				"(a file, or state.gcs: a Cloud Storage object)" },
	{ "tpuform.state.json.backup", "the state before the last write" },
	{ "tpuform.state.json.ledger.jsonl", "the run ledger beside a local state (rotated to .1 "
					     "... .7; tpuform report reads it)" },
	{ ".tpuform.state.json.lock.info", "who holds the state lock (a local state)" },
	{ "errored.tfstate", "a state whose write to Cloud Storage failed; tpuform state push "
			     "puts it back" },
	{ ".tpuform/local", "the local provider's nodes, beside the fleet file" },
};

static void put_term_list(FILE *out, const char *const (*list)[2], size_t n, int bold)
{
	for (size_t i = 0; i < n; i++) {
		raw(out, bold ? ".TP\n.B " : ".TP\n.I ");
		put(out, list[i][0]);
		newline(out);
		put(out, list[i][1]);
		newline(out);
	}
}

/* tpuform(1) */
static void overview_page(FILE *out, const struct tpf_cmd *const *cmds)
{
	put_header(out, "TPUFORM");
	raw(out, ".SH NAME\ntpuform \\- keep fleets of Cloud TPU VMs in a declared state\n"
		 ".SH SYNOPSIS\n.B tpuform\n[global options] \\fIcommand\\fR [options] [args]\n"
		 ".SH DESCRIPTION\n");
	put(out, "tpuform reads a fleet file (YAML) that declares groups of Cloud TPU VMs and "
		 "the job every worker runs, compares it with its state and with the nodes that "
		 "exist, and creates, replaces and deletes nodes until they match, as Terraform "
		 "does for its resources.");
	newline(out);
	raw(out, ".SH \"GLOBAL OPTIONS\"\nBefore the command:\n"
		 ".TP\n\\fB\\-chdir\\fR=\\fIDIR\\fR\nswitch to directory DIR first\n"
		 ".TP\n\\fB\\-no\\-color\\fR\nno ANSI colour\n"
		 ".TP\n\\fB\\-help\\fR\nthe list of commands\n"
		 ".TP\n\\fB\\-version\\fR\nthe version\n"
		 ".SH COMMANDS\n");
	for (const struct tpf_cmd *const *c = cmds; *c; c++) {
		if ((*c)->hidden)
			continue;
		raw(out, ".TP\n.BR tpuform\\-");
		put(out, (*c)->name);
		raw(out, " (1)\n");
		put(out, (*c)->summary);
		newline(out);
	}
	put_exit_status(out);
	raw(out, ".SH ENVIRONMENT\n");
	put(out, "Durations are in seconds or with a unit: 500ms, 10s, 2m, 1h; a value that "
		 "does not parse is an error.");
	newline(out);
	put_term_list(out, env_vars, sizeof(env_vars) / sizeof(env_vars[0]), 1);
	raw(out, ".SH FILES\nRelative to the fleet file's directory:\n");
	put_term_list(out, files, sizeof(files) / sizeof(files[0]), 0);
	raw(out, ".SH \"SEE ALSO\"\n");
	for (const struct tpf_cmd *const *c = cmds; *c; c++) {
		if ((*c)->hidden)
			continue;
		raw(out, ".BR tpuform\\-");
		put(out, (*c)->name);
		raw(out, c[1] ? " (1),\n" : " (1)\n");
	}
	raw(out, ".PP\nThe README of the project, its reference pages under\n/usr/share/doc/tpuform/docs, and /usr/share/doc/tpuform/examples.\n");
}

void tpf_man_page(FILE *out, const struct tpf_cmd *const *cmds, const struct tpf_cmd *c)
{
	col = 0;
	if (c)
		command_page(out, c);
	else
		overview_page(out, cmds);
}
