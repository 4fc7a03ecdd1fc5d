/*
 * The webhook payload (engine/telemetry/notify.h): jansson builds it; every string
 * in it is redacted first.
 */
#include "engine/telemetry/notify.h"
#include "util/buf.h"
#include "util/redact.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Bytes of message and last_log kept: a chat line, not a log dump. */
#define FIELD_MAX 500

/* s with every secret value of TPF_REDACT_MIN bytes or more replaced by "***",
 * control characters (newlines too: the text is one line) by spaces, and
 * cut to FIELD_MAX bytes (on a UTF-8 boundary). NULL for NULL; caller frees. */
static char *clean(const char *s, const struct tpf_kvlist *secrets)
{
	if (!s)
		return NULL;
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_buf_adds(&b, s);
	tpf_redact_kv(&b, secrets);
	size_t len = b.len;
	if (len > FIELD_MAX) {
		len = FIELD_MAX;
		while (len && ((unsigned char)b.buf[len] & 0xC0) == 0x80)
			len--;
	}
	char *out = xstrndup(b.buf, len);
	for (char *c = out; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	tpf_wipe(b.buf, b.len);
	tpf_buf_release(&b);
	return out;
}

/* Set key to a cleaned copy of s (null when s is NULL); jansson refuses
 * invalid UTF-8, which then reads as null too. */
static void set_clean(json_t *j, const char *key, const char *s, const struct tpf_kvlist *secrets)
{
	char *c = clean(s, secrets);
	json_t *v = c ? json_string(c) : NULL;
	json_object_set_new(j, key, v ? v : json_null());
	free(c);
}

/* The one line people read: "tpuform FLEET: MESSAGE". */
static char *text_line(const struct tpf_notify_event_data *ev, const char *fleet)
{
	const char *what = ev->message ? ev->message : tpf_notify_event_name(ev->event);
	return xasprintf("tpuform %s: %s", fleet ? fleet : "fleet", what ? what : "event");
}

json_t *tpf_notify_payload(const struct tpf_notify_event_data *ev, const char *fleet,
			   const struct tpf_kvlist *secrets, int text_only)
{
	json_t *j = json_object();
	char *text = text_line(ev, fleet);
	set_clean(j, "text", text, secrets);
	free(text);
	if (text_only)
		return j;
	char when[40];
	tpf_rfc3339(ev->time > 0 ? ev->time : tpf_now_wall(), when, sizeof(when));
	set_clean(j, "fleet", fleet, secrets);
	json_object_set_new(j, "event", json_string(tpf_notify_event_name(ev->event)));
	set_clean(j, "node", ev->node, secrets);
	json_object_set_new(j, "worker", ev->worker >= 0 ? json_integer(ev->worker) : json_null());
	json_object_set_new(j, "time", json_string(when));
	set_clean(j, "message", ev->message, secrets);
	set_clean(j, "reason", ev->reason, secrets);
	json_object_set_new(j, "exit_code",
			    ev->exit_code >= 0 ? json_integer(ev->exit_code) : json_null());
	set_clean(j, "last_log", ev->last_log, secrets);
	return j;
}
