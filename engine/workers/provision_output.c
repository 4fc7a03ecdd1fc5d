/*
 * What the bootstrap script printed (engine/workers/provision_internal.h): its
 * "TPUFORM key=value" lines, its message and the tail of its output,
 * cleaned (UTF-8, no control characters) and redacted for diagnostics and
 * the state file.
 */
#include "engine/workers/provision_internal.h"
#include "plan/plan.h"
#include "util/buf.h"
#include "util/kv.h"
#include "util/redact.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Lines of script output quoted in a failure diagnostic. */
#define TAIL_LINES 15

/*
 * A copy of s fit for a diagnostic or the state file (JSON needs UTF-8):
 * invalid UTF-8 bytes become '?', control characters other than newline
 * and tab are dropped, and at most max bytes are kept, cut at a character
 * boundary.
 */
char *tpf_prov_clean_text(const char *s, size_t max)
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

void tpf_prov_said_release(struct script_said *s)
{
	tpf_kvlist_release(&s->kv);
	tpf_buf_release(&s->warnings);
	tpf_buf_release(&s->text);
}

static enum tpf_script_result result_of(const char *word)
{
	static const char *const WORDS[] = {
		[TPF_SCRIPT_STARTED] = "started", [TPF_SCRIPT_UNCHANGED] = "unchanged",
		[TPF_SCRIPT_STOPPED] = "stopped", [TPF_SCRIPT_TOLD] = "told",
		[TPF_SCRIPT_NO_JOB] = "no_job",	  [TPF_SCRIPT_FAILED] = "failed",
	};
	if (!word)
		return TPF_SCRIPT_NONE;
	for (size_t i = TPF_SCRIPT_STARTED; i < sizeof(WORDS) / sizeof(WORDS[0]); i++)
		if (!strcmp(WORDS[i], word))
			return (enum tpf_script_result)i;
	return TPF_SCRIPT_OTHER;
}

void tpf_prov_said_parse(const char *out, struct script_said *s)
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
	s->result = result_of(tpf_kvlist_get(&s->kv, "result"));
}

/* A non-negative number the script said under `key`, or -1. */
long tpf_prov_said_number(const struct script_said *s, const char *key)
{
	const char *v = tpf_kvlist_get(&s->kv, key);
	char *end = NULL;
	long n = v && *v ? strtol(v, &end, 10) : -1;
	return end && !*end && n >= 0 ? n : -1;
}

/* The last TAIL_LINES lines of text, redacted and cleaned; caller frees. */
char *tpf_prov_output_tail(const char *text, const struct tpf_kvlist *secrets)
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
	char *clean = tpf_prov_clean_text(b.buf, 8192);
	tpf_buf_release(&b);
	return clean;
}

/* The message line alone ("setup exited with status 3"), cleaned. */
char *tpf_prov_message_line(const struct script_said *s, const struct tpf_kvlist *secrets)
{
	if (!s->message)
		return NULL;
	const char *eol = strchr(s->message, '\n');
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_buf_add(&b, s->message, eol ? (size_t)(eol - s->message) : strlen(s->message));
	tpf_redact_kv(&b, secrets);
	char *clean = tpf_prov_clean_text(b.buf, 1000);
	tpf_buf_release(&b);
	return clean;
}
