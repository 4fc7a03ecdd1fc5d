/*
 * Webhook notifications (docs/watch.md "Notifications"): one JSON document per
 * event, POSTed with libcurl from a thread of its own, so that a slow or
 * failing receiver never holds up the watch loop or its heals.
 *
 * The payload (jansson builds it), with payload: full (the default):
 *   { "text": "<one line for people>", "fleet": F, "event": E,
 *     "node": N|null, "worker": W|null, "time": "<RFC 3339 UTC>",
 *     "message": M, "reason": R|null, "exit_code": X|null,
 *     "last_log": L|null }
 * and with payload: text only { "text": ... }: Slack's and Google Chat's
 * incoming webhooks show `text` as a chat message (Google Chat refuses
 * fields it does not know, hence the text-only form).
 *
 * Secrets: every string of a payload is redacted before it is queued:
 * each resolved secret value (config/config.h f->secrets) of 4 bytes or
 * more is replaced by "***", as engine/workers/provision.c does for quoted output.
 * Shorter values cannot be masked without mangling the text around them.
 *
 * Queue: at most TPF_NOTIFY_QUEUE_MAX documents wait. When it is full, the
 * oldest waiting document is dropped for the new one, and a warning counts
 * the drops (at the 1st, 2nd, 4th, 8th, ... drop, so a flood does not
 * flood the output too). Documents are delivered in order.
 *
 * Delivery: a 2xx answer is success. A transport error, 408, 425, 429 or
 * 5xx is retried up to TPF_NOTIFY_ATTEMPTS times in all, after a wait that
 * doubles from the base (1 s; TPUFORM_NOTIFY_BACKOFF) up to 60 s, with
 * full jitter in [wait/2, wait]; a Retry-After header (seconds or an HTTP
 * date, RFC 9110 section 10.2.3) replaces the wait, capped at 300 s. The
 * backoff and the Retry-After parser are google/gcp_retry.h's, the Google
 * client's own (tpf_gcp_backoff, tpf_gcp_parse_retry_after); the tries,
 * the caps and "Retry-After replaces the wait" are the webhook's. Any
 * other status is final. A document given up on is a warning. Warnings
 * never contain the webhook URL (its path is a secret for Slack and Chat).
 */
#ifndef TPF_ENGINE_NOTIFY_H
#define TPF_ENGINE_NOTIFY_H

#include <jansson.h>
#include <stddef.h>
#include "config/config.h"
#include "util/diag.h"
#include "util/kv.h"

#define TPF_NOTIFY_QUEUE_MAX 256 /* documents waiting for delivery */
#define TPF_NOTIFY_ATTEMPTS 8    /* tries of one document, the first included */

struct tpf_notifier;

/* A warning for people (a drop, a document given up on); called on the
 * notifier's thread or the posting one; msg is borrowed for the call. */
typedef void (*tpf_notify_warn_fn)(const char *msg, void *ctx);

struct tpf_notify_opts {
	double backoff;          /* first retry wait, seconds (<= 0: 1) */
	double request_timeout;  /* seconds for one POST (<= 0: 10) */
	size_t queue_max;        /* 0: TPF_NOTIFY_QUEUE_MAX */
	tpf_notify_warn_fn warn; /* may be NULL */
	void *ctx;
};

/* One event, all fields borrowed for the call. */
struct tpf_notify_event_data {
	enum tpf_notify_event event;
	const char *node;     /* may be NULL: the fleet */
	int worker;           /* -1: none */
	const char *message;  /* what happened, for people and machines */
	const char *reason;   /* the plan's reason code, may be NULL */
	int exit_code;        /* -1: none */
	const char *last_log; /* the job's last log line, may be NULL */
	double time;          /* wall-clock seconds (0: now) */
};

/* Start the delivery thread. Returns 0, or TPF_ERROR with a diagnostic
 * (no thread could be started). *out is freed with tpf_notifier_free. */
int tpf_notifier_new(struct tpf_notifier **out, const struct tpf_notify_opts *o,
		     struct tpf_diags *d);

/*
 * Where and how to post from now on (documents already queued still go
 * where they were queued for): cfg->webhook NULL stops posting (new
 * events are ignored).
 * fleet: the fleet's name; secrets: the resolved values to redact (copied;
 * the copy is wiped when replaced or freed). All borrowed for the call.
 */
void tpf_notifier_configure(struct tpf_notifier *n, const struct tpf_notify_config *cfg,
			    const char *fleet, const struct tpf_kvlist *secrets);

/*
 * Queue ev when the configured events include it. Never blocks on the
 * network: builds the document (redacted), queues it and returns. Returns
 * 1 when queued, 0 when not wanted (no webhook, event not listed).
 */
int tpf_notifier_post(struct tpf_notifier *n, const struct tpf_notify_event_data *ev);

struct tpf_notify_stats {
	long sent;    /* delivered (2xx) */
	long failed;  /* given up on: final status, attempts used up, or exit */
	long dropped; /* pushed out of a full queue */
	long retries; /* attempts after the first */
};
void tpf_notifier_stats(struct tpf_notifier *n, struct tpf_notify_stats *out);

/*
 * Deliver what is queued for up to `drain` seconds (a request in flight is
 * aborted when the time is up), then stop the thread and free n (NULL:
 * no-op). Documents not delivered by then count as failed, with a warning.
 */
void tpf_notifier_free(struct tpf_notifier *n, double drain);

/*
 * The payload of ev as posted (new reference): for tests and for the
 * docs/watch.md's examples. fleet may be NULL; secrets as for configure (may be
 * NULL); text_only: payload: text.
 */
json_t *tpf_notify_payload(const struct tpf_notify_event_data *ev, const char *fleet,
			   const struct tpf_kvlist *secrets, int text_only);

#endif
