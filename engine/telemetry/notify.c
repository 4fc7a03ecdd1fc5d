/*
 * The webhook notifier (engine/telemetry/notify.h): a bounded queue of documents and
 * one delivery thread that POSTs them in order, with retries.
 */
#include "engine/telemetry/notify.h"
#include "google/gcp_http.h"
#include "google/gcp_retry.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BACKOFF_CAP 60.0      /* seconds: the longest wait between tries */
#define RETRY_AFTER_CAP 300.0 /* seconds: the longest Retry-After honoured */
#define CONNECT_TIMEOUT 5L    /* seconds */

struct doc {
	char *body;            /* the JSON document */
	char *url;             /* where it goes: the webhook when it was queued */
	char *event, *node;    /* for warnings */
};

struct tpf_notifier {
	pthread_mutex_t mu;
	pthread_cond_t cv;     /* work queued, or stop */
	pthread_t thread;
	struct tpf_notify_opts o;
	/* configuration (under mu) */
	char *url;
	unsigned events;
	int text_only;
	char *fleet;
	struct tpf_kvlist secrets;
	/* the queue: a ring of queue_max slots (under mu) */
	struct doc *ring;
	size_t head, count;
	int stop;
	double deadline;       /* monotonic: give up after it once stopping */
	struct tpf_notify_stats st;
};

static void doc_free(struct doc *d)
{
	free(d->body);
	free(d->url);
	free(d->event);
	free(d->node);
	memset(d, 0, sizeof(*d));
}

static void warn(struct tpf_notifier *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct tpf_notifier *n, const char *fmt, ...)
{
	if (!n->o.warn)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n->o.warn(msg, n->o.ctx);
}

static void wipe_secrets(struct tpf_kvlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->items[i].value)
			explicit_bzero(l->items[i].value, strlen(l->items[i].value));
	tpf_kvlist_release(l);
}

/* ---- delivery ----------------------------------------------------------- */

static size_t discard(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	(void)ptr;
	(void)userdata;
	return size * nmemb;
}

/* Abort a transfer once stopping and past the drain deadline. */
static int on_progress(void *clientp, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct tpf_notifier *n = clientp;
	(void)dt, (void)dn, (void)ut, (void)un;
	pthread_mutex_lock(&n->mu);
	int late = n->stop && tpf_now_mono() > n->deadline;
	pthread_mutex_unlock(&n->mu);
	return late;
}

/* Seconds a Retry-After value asks for (google/gcp_retry.h's parser:
 * delay-seconds or an HTTP date), or -1 when absent or unreadable. */
static double retry_after(CURL *e)
{
	struct curl_header *h;
	if (curl_easy_header(e, "Retry-After", 0, CURLH_HEADER, -1, &h) != CURLHE_OK)
		return -1;
	return tpf_gcp_parse_retry_after(h->value, tpf_now_wall());
}

struct outcome {
	long status;     /* 0: no response */
	int retryable;
	double after;    /* Retry-After seconds, -1: none */
	char error[CURL_ERROR_SIZE];
};

static void post_once(struct tpf_notifier *n, CURL *e, const char *url, const char *body,
		      struct outcome *out)
{
	struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json; charset=utf-8");
	memset(out, 0, sizeof(*out));
	out->after = -1;
	curl_easy_reset(e);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, TPF_GCP_USER_AGENT);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(n->o.request_timeout * 1000));
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, out->error);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, n);
	CURLcode rc = curl_easy_perform(e);
	if (rc == CURLE_OK) {
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &out->status);
		long s = out->status;
		out->retryable = s == 408 || s == 425 || s == 429 || s >= 500;
		out->after = retry_after(e);
	} else {
		if (!out->error[0])
			snprintf(out->error, sizeof(out->error), "%s", curl_easy_strerror(rc));
		/* A bad URL or TLS that fails verification will not mend itself;
		 * an unreachable or slow receiver may. */
		out->retryable = rc != CURLE_URL_MALFORMAT && rc != CURLE_UNSUPPORTED_PROTOCOL &&
				 rc != CURLE_PEER_FAILED_VERIFICATION && rc != CURLE_SSL_CACERT_BADFILE &&
				 rc != CURLE_ABORTED_BY_CALLBACK;
	}
	curl_slist_free_all(hdrs);
}

/* The wait before try number `attempt` + 1: google/gcp_retry.h's backoff
 * (doubling from the base, capped at BACKOFF_CAP, jittered in [w/2, w]);
 * Retry-After wins when given, capped at RETRY_AFTER_CAP (engine/telemetry/notify.h). */
static double next_wait(struct tpf_notifier *n, int attempt, double after)
{
	if (after >= 0)
		return after < RETRY_AFTER_CAP ? after : RETRY_AFTER_CAP;
	return tpf_gcp_backoff(attempt - 1, n->o.backoff, BACKOFF_CAP, tpf_gcp_random_unit());
}

/* Sleep up to `seconds` (mu held); returns early, 1, when stopping and
 * past the deadline. */
static int wait_locked(struct tpf_notifier *n, double seconds)
{
	double end = tpf_now_mono() + seconds;
	for (;;) {
		double now = tpf_now_mono();
		if (n->stop && now > n->deadline)
			return 1;
		if (now >= end)
			return 0;
		double until = n->stop && n->deadline < end ? n->deadline : end;
		double wall = tpf_now_wall() + (until - now);
		struct timespec ts = { (time_t)wall, (long)((wall - (double)(time_t)wall) * 1e9) };
		pthread_cond_timedwait(&n->cv, &n->mu, &ts);
	}
}

/* Deliver one document (mu not held). */
static void deliver(struct tpf_notifier *n, CURL *e, struct doc *d)
{
	struct outcome out;
	for (int attempt = 1;; attempt++) {
		post_once(n, e, d->url, d->body, &out);
		pthread_mutex_lock(&n->mu);
		if (out.status >= 200 && out.status < 300) {
			n->st.sent++;
			pthread_mutex_unlock(&n->mu);
			return;
		}
		int give_up = !out.retryable || attempt >= TPF_NOTIFY_ATTEMPTS ||
			      wait_locked(n, next_wait(n, attempt, out.after));
		if (give_up)
			n->st.failed++;
		else
			n->st.retries++;
		pthread_mutex_unlock(&n->mu);
		if (give_up) {
			char why[CURL_ERROR_SIZE + 32];
			if (out.status)
				snprintf(why, sizeof(why), "HTTP %ld", out.status);
			else
				snprintf(why, sizeof(why), "%s", out.error);
			warn(n, "notify: gave up on event %s%s%s after %d attempt%s: %s", d->event,
			     d->node ? " of " : "", d->node ? d->node : "", attempt,
			     attempt > 1 ? "s" : "", why);
			return;
		}
	}
}

static void *delivery_thread(void *arg)
{
	struct tpf_notifier *n = arg;
	CURL *e = curl_easy_init();
	pthread_mutex_lock(&n->mu);
	for (;;) {
		while (!n->count && !n->stop)
			pthread_cond_wait(&n->cv, &n->mu);
		if (!n->count || (n->stop && tpf_now_mono() > n->deadline))
			break;
		struct doc d = n->ring[n->head];
		memset(&n->ring[n->head], 0, sizeof(d));
		n->head = (n->head + 1) % n->o.queue_max;
		n->count--;
		pthread_mutex_unlock(&n->mu);
		if (e)
			deliver(n, e, &d);
		doc_free(&d);
		pthread_mutex_lock(&n->mu);
	}
	size_t left = n->count;
	n->st.failed += (long)left;
	pthread_mutex_unlock(&n->mu);
	if (left)
		warn(n, "notify: %zu event%s not delivered before exit", left, left > 1 ? "s" : "");
	if (e)
		curl_easy_cleanup(e);
	return NULL;
}

/* ---- the public side ---------------------------------------------------- */

int tpf_notifier_new(struct tpf_notifier **out, const struct tpf_notify_opts *o,
		     struct tpf_diags *d)
{
	struct tpf_notifier *n = xcalloc(1, sizeof(*n));
	n->o = *o;
	if (n->o.backoff <= 0)
		n->o.backoff = 1;
	if (n->o.request_timeout <= 0)
		n->o.request_timeout = 10;
	if (!n->o.queue_max)
		n->o.queue_max = TPF_NOTIFY_QUEUE_MAX;
	n->ring = xcalloc(n->o.queue_max, sizeof(*n->ring));
	pthread_mutex_init(&n->mu, NULL);
	pthread_cond_init(&n->cv, NULL);
	tpf_gcp_curl_init();
	if (pthread_create(&n->thread, NULL, delivery_thread, n)) {
		pthread_cond_destroy(&n->cv);
		pthread_mutex_destroy(&n->mu);
		free(n->ring);
		free(n);
		*out = NULL;
		return tpf_errorx(d, NULL, NULL, "notify: cannot start the delivery thread");
	}
	*out = n;
	return 0;
}

void tpf_notifier_configure(struct tpf_notifier *n, const struct tpf_notify_config *cfg,
			    const char *fleet, const struct tpf_kvlist *secrets)
{
	pthread_mutex_lock(&n->mu);
	xstrset(&n->url, cfg ? cfg->webhook : NULL);
	n->events = cfg ? cfg->events : 0;
	n->text_only = cfg ? cfg->text_only : 0;
	xstrset(&n->fleet, fleet);
	if (!secrets || !tpf_kvlist_equal(&n->secrets, secrets)) {
		wipe_secrets(&n->secrets);
		if (secrets)
			tpf_kvlist_copy(&n->secrets, secrets);
	}
	pthread_mutex_unlock(&n->mu);
}

int tpf_notifier_post(struct tpf_notifier *n, const struct tpf_notify_event_data *ev)
{
	pthread_mutex_lock(&n->mu);
	if (!n->url || !(n->events & (1u << ev->event)) || n->stop) {
		pthread_mutex_unlock(&n->mu);
		return 0;
	}
	json_t *j = tpf_notify_payload(ev, n->fleet, &n->secrets, n->text_only);
	struct doc d = { json_dumps(j, JSON_COMPACT), xstrdup(n->url),
			 xstrdup(tpf_notify_event_name(ev->event)), xstrdup(ev->node) };
	json_decref(j);
	if (!d.body) { /* out of memory in jansson: nothing sensible to send */
		doc_free(&d);
		pthread_mutex_unlock(&n->mu);
		return 0;
	}
	long dropped = 0;
	if (n->count == n->o.queue_max) {
		doc_free(&n->ring[n->head]);
		n->head = (n->head + 1) % n->o.queue_max;
		n->count--;
		dropped = ++n->st.dropped;
	}
	n->ring[(n->head + n->count) % n->o.queue_max] = d;
	n->count++;
	pthread_cond_signal(&n->cv);
	pthread_mutex_unlock(&n->mu);
	/* 1, 2, 4, 8, ...: counted, and quiet during a flood. */
	if (dropped && !(dropped & (dropped - 1)))
		warn(n, "notify: the queue of %zu events is full (the webhook is slow or down): "
			"dropped the oldest; %ld dropped so far",
		     n->o.queue_max, dropped);
	return 1;
}

void tpf_notifier_stats(struct tpf_notifier *n, struct tpf_notify_stats *out)
{
	pthread_mutex_lock(&n->mu);
	*out = n->st;
	pthread_mutex_unlock(&n->mu);
}

void tpf_notifier_free(struct tpf_notifier *n, double drain)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->mu);
	n->stop = 1;
	n->deadline = tpf_now_mono() + (drain > 0 ? drain : 0);
	pthread_cond_broadcast(&n->cv);
	pthread_mutex_unlock(&n->mu);
	pthread_join(n->thread, NULL);
	for (size_t i = 0; i < n->o.queue_max; i++)
		doc_free(&n->ring[i]);
	free(n->ring);
	free(n->url);
	free(n->fleet);
	wipe_secrets(&n->secrets);
	pthread_cond_destroy(&n->cv);
	pthread_mutex_destroy(&n->mu);
	free(n);
}
