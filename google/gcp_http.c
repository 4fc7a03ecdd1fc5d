#include "google/gcp_http.h"
#include "util/xalloc.h"

#include <openssl/crypto.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A request handed to the engine thread; lives on the caller's stack. */
struct pending {
	CURL *easy;
	int done;
	CURLcode result;
	struct pending *next;
};

struct tpf_gcp_http {
	CURLM *multi;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t done_cv;
	struct pending *head, *tail; /* submitted, not yet added to multi */
	int stop;
	struct tpf_gcp_http_opts o;
	long requests, connects;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static pthread_mutex_t observer_mu = PTHREAD_MUTEX_INITIALIZER;
static tpf_gcp_http_observer_fn observer;
static void *observer_ctx;

void tpf_gcp_http_set_observer(tpf_gcp_http_observer_fn fn, void *ctx)
{
	pthread_mutex_lock(&observer_mu);
	observer = fn;
	observer_ctx = ctx;
	pthread_mutex_unlock(&observer_mu);
}

static void observe(const char *method, long status)
{
	pthread_mutex_lock(&observer_mu);
	tpf_gcp_http_observer_fn fn = observer;
	void *ctx = observer_ctx;
	pthread_mutex_unlock(&observer_mu);
	if (fn)
		fn(method, status, ctx);
}

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

void tpf_gcp_curl_init(void)
{
	pthread_once(&curl_once, curl_init_once);
}

static void finish(struct tpf_gcp_http *h, struct pending *p, CURLcode res)
{
	pthread_mutex_lock(&h->mu);
	p->result = res;
	p->done = 1;
	pthread_cond_broadcast(&h->done_cv);
	pthread_mutex_unlock(&h->mu);
}

static void *engine(void *arg)
{
	struct tpf_gcp_http *h = arg;
	int running = 0;
	for (;;) {
		pthread_mutex_lock(&h->mu);
		struct pending *q = h->head;
		h->head = h->tail = NULL;
		int stop = h->stop;
		pthread_mutex_unlock(&h->mu);
		while (q) {
			struct pending *next = q->next;
			if (curl_multi_add_handle(h->multi, q->easy) != CURLM_OK)
				finish(h, q, CURLE_FAILED_INIT);
			else
				running++;
			q = next;
		}
		if (stop && !running)
			break;
		curl_multi_perform(h->multi, &running);
		CURLMsg *m;
		int left;
		while ((m = curl_multi_info_read(h->multi, &left))) {
			if (m->msg != CURLMSG_DONE)
				continue;
			CURL *e = m->easy_handle;
			CURLcode res = m->data.result; /* m is invalid after remove */
			struct pending *p = NULL;
			curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&p);
			curl_multi_remove_handle(h->multi, e);
			finish(h, p, res);
		}
		/* curl_multi_wakeup() from a submitter ends the wait early */
		curl_multi_poll(h->multi, NULL, 0, 1000, NULL);
	}
	return NULL;
}

int tpf_gcp_http_new(struct tpf_gcp_http **out, const struct tpf_gcp_http_opts *o,
		     struct tpf_diags *d)
{
	tpf_gcp_curl_init();
	struct tpf_gcp_http *h = xcalloc(1, sizeof(*h));
	h->o = *o;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->done_cv, NULL);
	h->multi = curl_multi_init();
	if (!h->multi)
		goto fail;
	/* keep idle connections for a parallel apply's worth of requests */
	curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, 32L);
	curl_multi_setopt(h->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
	if (pthread_create(&h->thread, NULL, engine, h))
		goto fail;
	*out = h;
	return 0;
fail:
	if (h->multi)
		curl_multi_cleanup(h->multi);
	pthread_cond_destroy(&h->done_cv);
	pthread_mutex_destroy(&h->mu);
	free(h);
	return tpf_error(d, "cannot start the HTTP client (libcurl multi handle or thread)");
}

void tpf_gcp_http_free(struct tpf_gcp_http *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->stop = 1;
	pthread_mutex_unlock(&h->mu);
	curl_multi_wakeup(h->multi);
	pthread_join(h->thread, NULL);
	curl_multi_cleanup(h->multi);
	pthread_cond_destroy(&h->done_cv);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

void tpf_gcp_response_release(struct tpf_gcp_response *r)
{
	tpf_buf_release(&r->body);
	free(r->retry_after);
	r->retry_after = NULL;
	r->status = 0;
	r->metadata_flavor = 0;
	r->curl_code = CURLE_OK;
	r->error[0] = '\0';
	r->too_large = 0;
}

/* Past the body's cap, a short count makes libcurl abort the transfer
 * with CURLE_WRITE_ERROR (CURLOPT_WRITEFUNCTION's contract). */
static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	if (tpf_buf_add(userdata, ptr, size * nmemb) < 0)
		return 0;
	return size * nmemb;
}

static size_t max_body(const struct tpf_gcp_http *h)
{
	return h->o.max_body ? h->o.max_body : TPF_GCP_MAX_BODY;
}

int tpf_gcp_http_too_large(const struct tpf_gcp_http *h, const struct tpf_gcp_request *rq,
			   const char *what, const char *address, struct tpf_diags *d)
{
	char lim[32];
	return tpf_errorx(d, address,
			  "a Cloud TPU API answer is a few kilobytes: check the endpoint "
			  "(provider.gcp.endpoint, TPUFORM_TPU_ENDPOINT); TPUFORM_GCP_MAX_BODY "
			  "(bytes) raises the limit",
			  "%s: the answer to %s %s is larger than the limit of %s", what,
			  rq->method ? rq->method : "GET", rq->url, tpf_fmt_bytes(max_body(h), lim));
}

/* libcurl's messages say how long a failed connect took ("Failed to
 * connect to H port P after 0 ms: ...", "... timed out after 10001
 * milliseconds ..."). The figure tells people nothing, and it made the
 * same failure of several requests (one per zone) read as different
 * errors, so each was printed (util/diag.h prints a diagnostic once).
 * Removes every " after N ms" and " after N milliseconds" in place. */
static void drop_elapsed(char *s)
{
	static const char *const units[] = { " ms", " milliseconds" };
	char *p = s;
	while ((p = strstr(p, " after ")) != NULL) {
		char *d = p + 7, *e = d;
		while (*e >= '0' && *e <= '9')
			e++;
		size_t cut = 0;
		for (size_t i = 0; e > d && !cut && i < sizeof(units) / sizeof(units[0]); i++)
			if (!strncmp(e, units[i], strlen(units[i])))
				cut = (size_t)(e - p) + strlen(units[i]);
		if (cut)
			memmove(p, p + cut, strlen(p + cut) + 1);
		else
			p++;
	}
}

static int is_transient(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR: /* includes a reset during the handshake */
	case CURLE_AGAIN:
		return 1;
	default:
		return 0;
	}
}

/* Token-bearing strings are wiped before their memory is reused. */
static void free_headers(struct curl_slist *l)
{
	for (struct curl_slist *i = l; i; i = i->next)
		OPENSSL_cleanse(i->data, strlen(i->data));
	curl_slist_free_all(l);
}

static long ms(double seconds)
{
	return seconds > 0 ? (long)(seconds * 1000) : 0;
}

int tpf_gcp_http_do(struct tpf_gcp_http *h, const struct tpf_gcp_request *rq,
		    struct tpf_gcp_response *rs)
{
	tpf_gcp_response_release(rs);
	tpf_buf_set_max(&rs->body, max_body(h));
	struct pending p = { 0 };
	struct curl_slist *hdrs = NULL;
	CURL *e = curl_easy_init();
	if (!e) {
		rs->curl_code = CURLE_FAILED_INIT;
		snprintf(rs->error, sizeof(rs->error), "cannot create a libcurl handle");
		return TPF_ERROR;
	}
	p.easy = e;
	curl_easy_setopt(e, CURLOPT_URL, rq->url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, TPF_GCP_USER_AGENT);
	double ct = rq->connect_timeout > 0 ? rq->connect_timeout : h->o.connect_timeout;
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ms(ct));
	long stall = (long)(h->o.stall_timeout + 0.5);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, stall < 1 ? 1L : stall);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, ms(h->o.request_timeout));
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	/* Wait to multiplex only where a connection can: HTTPS, whose ALPN
	 * may give HTTP/2. Over plain http libcurl speaks HTTP/1.1, one
	 * request a connection, so a wait (libcurl's: until the first
	 * connection's answer shows its protocol) only held every concurrent
	 * request behind the first answer (the emulator: 8 zones' lists
	 * started one round trip late, tests/bench/compute_bench.sh). */
	if (!strncasecmp(rq->url, "https://", 8))
		curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &rs->body);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, rs->error);
	curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)&p);

	const char *m = rq->method ? rq->method : "GET";
	int has_body = rq->body != NULL || !strcasecmp(m, "POST") || !strcasecmp(m, "PATCH");
	if (!strcasecmp(m, "POST")) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
	} else if (strcasecmp(m, "GET")) {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m);
	}
	if (has_body) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)(rq->body ? rq->body_len : 0));
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
		char *ctype = xasprintf("Content-Type: %s",
					rq->content_type ? rq->content_type : "application/json");
		hdrs = curl_slist_append(hdrs, ctype);
		free(ctype);
		/* no 100-continue round trip for small bodies */
		hdrs = curl_slist_append(hdrs, "Expect:");
	}
	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	if (rq->bearer) {
		char *auth = xasprintf("Authorization: Bearer %s", rq->bearer);
		hdrs = curl_slist_append(hdrs, auth);
		OPENSSL_cleanse(auth, strlen(auth));
		free(auth);
	}
	if (rq->metadata_flavor)
		hdrs = curl_slist_append(hdrs, "Metadata-Flavor: Google");
	for (size_t i = 0; rq->headers && rq->headers[i]; i++)
		hdrs = curl_slist_append(hdrs, rq->headers[i]);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);

	pthread_mutex_lock(&h->mu);
	/* p lives on this stack while queued: the multi thread unlinks it before
	 * it sets p.done, and this function returns only after p.done. */
	if (h->tail)
		h->tail->next = &p;
	else
		h->head = &p; // cppcheck-suppress autoVariables ; unlinked before p.done, awaited below
	h->tail = &p; // cppcheck-suppress autoVariables ; as above
	pthread_mutex_unlock(&h->mu);
	curl_multi_wakeup(h->multi);

	pthread_mutex_lock(&h->mu);
	while (!p.done)
		pthread_cond_wait(&h->done_cv, &h->mu);
	pthread_mutex_unlock(&h->mu);

	long nconn = 0;
	curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &nconn);
	pthread_mutex_lock(&h->mu);
	h->requests++;
	h->connects += nconn;
	pthread_mutex_unlock(&h->mu);

	int rc = 0;
	rs->curl_code = p.result;
	if (p.result == CURLE_OK) {
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &rs->status);
		struct curl_header *hv;
		if (curl_easy_header(e, "Retry-After", 0, CURLH_HEADER, -1, &hv) == CURLHE_OK)
			rs->retry_after = xstrdup(hv->value);
		if (curl_easy_header(e, "Metadata-Flavor", 0, CURLH_HEADER, -1, &hv) == CURLHE_OK)
			rs->metadata_flavor = !strcmp(hv->value, "Google");
	} else if (p.result == CURLE_WRITE_ERROR && tpf_buf_overflowed(&rs->body)) {
		char lim[32];
		rs->too_large = 1;
		snprintf(rs->error, sizeof(rs->error), "response body larger than the limit of %s",
			 tpf_fmt_bytes(max_body(h), lim));
		rc = TPF_ERROR;
	} else {
		if (!rs->error[0])
			snprintf(rs->error, sizeof(rs->error), "%s", curl_easy_strerror(p.result));
		drop_elapsed(rs->error);
		rc = is_transient(p.result) ? TPF_ETRANSIENT : TPF_ERROR;
	}
	curl_easy_cleanup(e);
	free_headers(hdrs);
	observe(m, rs->status);
	return rc;
}

void tpf_gcp_http_stats(struct tpf_gcp_http *h, long *requests, long *connects)
{
	pthread_mutex_lock(&h->mu);
	if (requests)
		*requests = h->requests;
	if (connects)
		*connects = h->connects;
	pthread_mutex_unlock(&h->mu);
}

char *tpf_gcp_escape(const char *s)
{
	tpf_gcp_curl_init();
	/* the handle argument is ignored by libcurl since 7.82 */
	char *e = curl_easy_escape(NULL, s ? s : "", 0);
	if (!e)
		abort();
	char *r = xstrdup(e);
	curl_free(e);
	return r;
}
