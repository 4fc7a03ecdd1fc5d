/*
 * The one Google REST client (google/gapi.h) against a scripted
 * libmicrohttpd server: retries of 429 and 503 with Retry-After (seconds
 * and HTTP-date, read through an injected clock: no real waiting), a
 * dropped connection, a 401 that fetches a new token, the AIP-194 rule
 * (a POST without requestId or precondition is sent once; with a requestId
 * it is retried with the same id), pages, and operations of both shapes
 * ending in an error whose message reaches the diagnostic.
 */
#include "google/gapi.h"
#include "tests/unit/unit.h"
#include "util/hash.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_STEPS 16

/* One scripted answer: status and body, a Retry-After, or a dropped connection. */
struct step {
	unsigned status;
	const char *body;
	const char *retry_after;
	int drop;
};

/* One request as the server saw it. */
struct seen {
	char method[8];
	char path[128];
	char page_token[64];
	char request_id[64];
	char auth[64];
};

static struct server {
	struct MHD_Daemon *daemon;
	char url[64];
	pthread_mutex_t mu;
	struct step steps[MAX_STEPS];
	int nsteps, next;
	struct seen seen[MAX_STEPS];
	int n;
} srv;

static void copy_value(struct MHD_Connection *conn, enum MHD_ValueKind kind, const char *key,
		       char *out, size_t size)
{
	const char *v = MHD_lookup_connection_value(conn, kind, key);
	snprintf(out, size, "%s", v ? v : "");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *size, void **con_cls)
{
	(void)cls, (void)version, (void)data;
	if (!*con_cls) { /* headers only: wait for the body */
		*con_cls = (void *)1;
		return MHD_YES;
	}
	if (*size) {
		*size = 0; /* the body is not looked at */
		return MHD_YES;
	}
	pthread_mutex_lock(&srv.mu);
	struct step st = srv.next < srv.nsteps ? srv.steps[srv.next++]
					       : (struct step){ 500, "{}", NULL, 0 };
	if (srv.n < MAX_STEPS) {
		struct seen *s = &srv.seen[srv.n++];
		snprintf(s->method, sizeof(s->method), "%s", method);
		snprintf(s->path, sizeof(s->path), "%s", url);
		copy_value(conn, MHD_GET_ARGUMENT_KIND, "pageToken", s->page_token,
			   sizeof(s->page_token));
		copy_value(conn, MHD_GET_ARGUMENT_KIND, "requestId", s->request_id,
			   sizeof(s->request_id));
		copy_value(conn, MHD_HEADER_KIND, "Authorization", s->auth, sizeof(s->auth));
	}
	pthread_mutex_unlock(&srv.mu);
	if (st.drop)
		return MHD_NO; /* close the socket without an answer */
	const char *b = st.body ? st.body : "";
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(b), (void *)b,
								 MHD_RESPMEM_MUST_COPY);
	MHD_add_response_header(r, "Content-Type", "application/json");
	/* A fresh connection per request: libcurl itself resends a request
	 * once when a reused connection turns out dead before any answer,
	 * which would hide the dropped connection from the client's loop. */
	MHD_add_response_header(r, "Connection", "close");
	if (st.retry_after)
		MHD_add_response_header(r, "Retry-After", st.retry_after);
	enum MHD_Result ret = MHD_queue_response(conn, st.status, r);
	MHD_destroy_response(r);
	return ret;
}

static void server_start(void)
{
	memset(&srv, 0, sizeof(srv));
	pthread_mutex_init(&srv.mu, NULL);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	srv.daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request,
				      NULL, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_END);
	const union MHD_DaemonInfo *info =
		srv.daemon ? MHD_get_daemon_info(srv.daemon, MHD_DAEMON_INFO_BIND_PORT) : NULL;
	snprintf(srv.url, sizeof(srv.url), "http://127.0.0.1:%u", info ? (unsigned)info->port : 0);
	CHECK(srv.daemon != NULL);
}

static void server_stop(void)
{
	if (srv.daemon)
		MHD_stop_daemon(srv.daemon);
	pthread_mutex_destroy(&srv.mu);
}

/* Script the next answers (replacing what was left) and forget what was seen. */
static void script(const struct step *steps, int n)
{
	pthread_mutex_lock(&srv.mu);
	memcpy(srv.steps, steps, (size_t)n * sizeof(*steps));
	srv.nsteps = n;
	srv.next = 0;
	srv.n = 0;
	pthread_mutex_unlock(&srv.mu);
}

/* The injected clock: sleeps are recorded, never slept; a fixed wall time. */
static struct clock_rec {
	double slept[MAX_STEPS];
	int n;
} clk;

#define WALL 1700000000.0

static void fake_sleep(void *ctx, double s)
{
	struct clock_rec *c = ctx;
	if (c->n < MAX_STEPS)
		c->slept[c->n++] = s;
}

static double fake_wall(void *ctx)
{
	(void)ctx;
	return WALL;
}

static struct tpf_gapi *client(void)
{
	struct tpf_gcp_settings s;
	tpf_gcp_settings_default(&s);
	s.tries = 4;
	s.retry_base = 0.01;
	s.retry_cap = 0.04;
	s.poll_min = 0.01;
	s.poll_max = 0.02;
	s.op_timeout = 30;
	struct tpf_gapi_config cfg = { .endpoint = srv.url, .project = "p", .settings = &s };
	struct tpf_gapi *api = NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_gapi_open(&api, &cfg, &d), 0);
	tpf_diags_release(&d);
	struct tpf_gapi_clock c = { fake_sleep, fake_wall, &clk };
	tpf_gapi_set_clock(api, &c);
	memset(&clk, 0, sizeof(clk));
	return api;
}

/* GET <server><path> through the client; returns its code, *attempts. */
static int get(struct tpf_gapi *api, const char *method, unsigned flags, int *attempts,
	       struct tpf_diags *d)
{
	char *url = xasprintf("%s/v1/thing", srv.url);
	struct tpf_gapi_call c = TPF_GAPI_CALL_INIT;
	c.rq.method = method;
	c.rq.url = url;
	c.flags = flags;
	c.what = "get the thing";
	int rc = tpf_gapi_send(api, &c, d);
	*attempts = c.attempts;
	tpf_gapi_call_release(&c);
	free(url);
	return rc;
}

static void test_gapi__429_then_success(void)
{
	struct tpf_gapi *api = client();
	struct tpf_diags d = TPF_DIAGS_INIT;
	const struct step st[] = {
		{ 429, "{\"error\":{\"code\":429,\"message\":\"Rate exceeded.\","
		       "\"status\":\"RESOURCE_EXHAUSTED\"}}", NULL, 0 },
		{ 200, "{}", NULL, 0 },
	};
	script(st, 2);
	int attempts = 0;
	CHECK_INT(get(api, "GET", 0, &attempts, &d), 0);
	CHECK_INT(attempts, 2);
	CHECK_INT(srv.n, 2);
	/* one backoff, with equal jitter: in [base/2, base] */
	CHECK_INT(clk.n, 1);
	CHECKF(clk.slept[0] >= 0.005 && clk.slept[0] <= 0.01, "slept %g", clk.slept[0]);
	CHECK_INT(d.n, 0);
	tpf_diags_release(&d);
	tpf_gapi_free(api);
}

static void test_gapi__503_retry_after_seconds_and_date(void)
{
	struct tpf_gapi *api = client();
	struct tpf_diags d = TPF_DIAGS_INIT;
	/* an HTTP-date 30 s after the injected wall clock (RFC 9110 IMF-fixdate) */
	char date[64];
	time_t t = (time_t)WALL + 30;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	const struct step st[] = {
		{ 503, "{\"error\":{\"code\":503,\"message\":\"busy\"}}", "7", 0 },
		{ 503, "upstream connect error", date, 0 },
		{ 200, "{}", NULL, 0 },
	};
	script(st, 3);
	int attempts = 0;
	CHECK_INT(get(api, "GET", 0, &attempts, &d), 0);
	CHECK_INT(attempts, 3);
	CHECK_INT(clk.n, 2);
	/* the server's wait, not the 10 ms backoff */
	CHECKF(clk.slept[0] == 7, "slept %g", clk.slept[0]);
	CHECKF(clk.slept[1] == 30, "slept %g", clk.slept[1]);
	/* more than TPF_GCP_RETRY_AFTER_MAX is capped */
	const struct step st2[] = { { 503, "", "100000", 0 }, { 200, "{}", NULL, 0 } };
	script(st2, 2);
	clk.n = 0;
	CHECK_INT(get(api, "GET", 0, &attempts, &d), 0);
	CHECKF(clk.n == 1 && clk.slept[0] == TPF_GCP_RETRY_AFTER_MAX, "slept %g", clk.slept[0]);
	CHECK_INT(d.n, 0);
	tpf_diags_release(&d);
	tpf_gapi_free(api);
}

static void test_gapi__dropped_connection_then_success(void)
{
	struct tpf_gapi *api = client();
	struct tpf_diags d = TPF_DIAGS_INIT;
	const struct step st[] = { { 0, NULL, NULL, 1 }, { 200, "{\"ok\":true}", NULL, 0 } };
	script(st, 2);
	int attempts = 0;
	CHECK_INT(get(api, "GET", 0, &attempts, &d), 0);
	CHECK_INT(attempts, 2);
	CHECK_INT(srv.n, 2);
	CHECK_INT(clk.n, 1);
	CHECK_INT(d.n, 0);
	/* a DELETE is idempotent too: dropped, then done */
	script(st, 2);
	CHECK_INT(get(api, "DELETE", 0, &attempts, &d), 0);
	CHECK_INT(attempts, 2);
	tpf_diags_release(&d);
	tpf_gapi_free(api);
}

static void test_gapi__gives_up_after_tries(void)
{
	struct tpf_gapi *api = client();
	struct tpf_diags d = TPF_DIAGS_INIT;
	const struct step st[] = {
		{ 503, "{\"error\":{\"code\":503,\"message\":\"The service is currently "
		       "unavailable.\",\"status\":\"UNAVAILABLE\"}}", NULL, 0 },
		{ 503, "{\"error\":{\"code\":503,\"message\":\"The service is currently "
		       "unavailable.\",\"status\":\"UNAVAILABLE\"}}", NULL, 0 },
		{ 503, "{\"error\":{\"code\":503,\"message\":\"The service is currently "
		       "unavailable.\",\"status\":\"UNAVAILABLE\"}}", NULL, 0 },
		{ 503, "{\"error\":{\"code\":503,\"message\":\"The service is currently "
		       "unavailable.\",\"status\":\"UNAVAILABLE\"}}", NULL, 0 },
	};
	script(st, 4);
	int attempts = 0;
	CHECK_INT(get(api, "GET", 0, &attempts, &d), TPF_ETRANSIENT);
	CHECK_INT(attempts, 4);
	CHECK_INT(clk.n, 3);
	/* the API's own status and message, the count, and a hint */
	CHECK(d.n == 1 && strstr(d.items[0].summary, "get the thing: HTTP 503 UNAVAILABLE: The "
				 "service is currently unavailable. (gave up after 4 tries)"));
	CHECK(d.n == 1 && d.items[0].detail && *d.items[0].detail);
	tpf_diags_release(&d);
	tpf_gapi_free(api);
}

static int is_uuid4(const char *s)
{
	if (strlen(s) != 36 || s[14] != '4' || !strchr("89ab", s[19]))
		return 0;
	for (int i = 0; i < 36; i++)
		if (i == 8 || i == 13 || i == 18 || i == 23 ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

static void test_gapi__post_without_request_id_is_not_retried(void)
{
	struct tpf_gapi *api = client();
	struct tpf_diags d = TPF_DIAGS_INIT;
	const struct step fail[] = { { 503, "{\"error\":{\"code\":503,\"message\":\"busy\"}}", NULL, 0 },
				     { 200, "{}", NULL, 0 } };
	script(fail, 2);
	int attempts = 0;
	CHECK_INT(get(api, "POST", 0, &attempts, &d), TPF_ETRANSIENT);
	CHECK_INT(attempts, 1);
	CHECK_INT(srv.n, 1);
	CHECK_INT(clk.n, 0);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "not retried"));
	tpf_diags_release(&d);
	/* nor after a dropped connection: the server may have acted */
	const struct step drop[] = { { 0, NULL, NULL, 1 }, { 200, "{}", NULL, 0 } };
	script(drop, 2);
	CHECK(get(api, "PATCH", 0, &attempts, &d) < 0);
	CHECK_INT(srv.n, 1);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "not retried"));
	tpf_diags_release(&d);
	/* with a requestId it is retried, with the same id every time */
	script(fail, 2);
	CHECK_INT(get(api, "POST", TPF_GAPI_REQUEST_ID, &attempts, &d), 0);
	CHECK_INT(attempts, 2);
	CHECK_INT(srv.n, 2);
	CHECK(is_uuid4(srv.seen[0].request_id));
	CHECK_STR(srv.seen[1].request_id, srv.seen[0].request_id);
	/* a new logical request gets a new id */
	char first[sizeof(srv.seen[0].request_id)];
	memcpy(first, srv.seen[0].request_id, sizeof(first));
	script(fail + 1, 1);
	CHECK_INT(get(api, "POST", TPF_GAPI_REQUEST_ID, &attempts, &d), 0);
	CHECK(is_uuid4(srv.seen[0].request_id) && strcmp(srv.seen[0].request_id, first));
	/* and with a precondition */
	script(fail, 2);
	CHECK_INT(get(api, "POST", TPF_GAPI_PRECONDITION, &attempts, &d), 0);
	CHECK_INT(attempts, 2);
	CHECK_INT(d.n, 0);
	tpf_diags_release(&d);
	tpf_gapi_free(api);
}

/* Credentials that hand out "t1", then "t2" once t1 is rejected. */
static int token_gen;
static int fake_token(void *ctx, char **out, struct tpf_diags *d)
{
	(void)ctx, (void)d;
	*out = xasprintf("t%d", token_gen);
	return 0;
}
static int fake_invalidate(void *ctx, const char *used)
{
	(void)ctx, (void)used;
	token_gen++;
	return 1;
}
static const char *fake_hint(void *ctx)
{
	(void)ctx;
	return "log in again";
}

static void test_gapi__401_fetches_a_new_token_once(void)
{
	struct tpf_gapi *api = client();
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_gapi_creds cr = { .token = fake_token, .invalidate = fake_invalidate,
				     .reject_hint = fake_hint };
	tpf_gapi_set_creds(api, &cr);
	token_gen = 1;
	const char *denied = "{\"error\":{\"code\":401,\"message\":\"Request had invalid "
			     "authentication credentials.\",\"status\":\"UNAUTHENTICATED\"}}";
	const struct step st[] = { { 401, denied, NULL, 0 }, { 200, "{}", NULL, 0 } };
	script(st, 2);
	int attempts = 0;
	CHECK_INT(get(api, "GET", 0, &attempts, &d), 0);
	CHECK_STR(srv.seen[0].auth, "Bearer t1");
	CHECK_STR(srv.seen[1].auth, "Bearer t2");
	/* rejected twice: the reject hint, no loop */
	const struct step st2[] = { { 401, denied, NULL, 0 }, { 401, denied, NULL, 0 },
				    { 200, "{}", NULL, 0 } };
	script(st2, 3);
	CHECK_INT(get(api, "GET", 0, &attempts, &d), TPF_ERROR);
	CHECK_INT(srv.n, 2);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "UNAUTHENTICATED"));
	CHECK(d.n == 1 && d.items[0].detail && strstr(d.items[0].detail, "log in again"));
	tpf_diags_release(&d);
	tpf_gapi_free(api);
}

struct names {
	char got[64];
};

static int each_page(json_t *page, void *ctx, struct tpf_diags *d)
{
	struct names *x = ctx;
	size_t i;
	json_t *it;
	(void)d;
	json_array_foreach(json_object_get(page, "items"), i, it) {
		size_t n = strlen(x->got);
		snprintf(x->got + n, sizeof(x->got) - n, "%s", json_string_value(it));
	}
	return 0;
}

static void test_gapi__pages(void)
{
	struct tpf_gapi *api = client();
	struct tpf_diags d = TPF_DIAGS_INIT;
	const struct step st[] = {
		{ 200, "{\"items\":[\"a\",\"b\"],\"nextPageToken\":\"t1\"}", NULL, 0 },
		{ 503, "", NULL, 0 }, /* a page that fails once is retried alone */
		{ 200, "{\"items\":[\"c\"],\"nextPageToken\":\"t 2&x\"}", NULL, 0 },
		{ 200, "{\"items\":[\"d\"]}", NULL, 0 },
	};
	script(st, 4);
	char *url = xasprintf("%s/v1/things?prefix=p", srv.url);
	struct names x = { "" };
	CHECK_INT(tpf_gapi_pages(api, url, "list things", NULL, 0, each_page, &x, &d), 0);
	CHECK_STR(x.got, "abcd");
	CHECK_INT(srv.n, 4);
	CHECK_STR(srv.seen[0].page_token, "");
	CHECK_STR(srv.seen[1].page_token, "t1");
	CHECK_STR(srv.seen[2].page_token, "t1");
	CHECK_STR(srv.seen[3].page_token, "t 2&x"); /* escaped on the way, whole on arrival */
	CHECK_INT(d.n, 0);
	/* a server that hands out the same token again is not followed forever */
	const struct step loop[] = {
		{ 200, "{\"items\":[],\"nextPageToken\":\"same\"}", NULL, 0 },
		{ 200, "{\"items\":[],\"nextPageToken\":\"same\"}", NULL, 0 },
	};
	script(loop, 2);
	CHECK_INT(tpf_gapi_pages(api, url, "list things", NULL, 0, each_page, &x, &d), TPF_ERROR);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "twice"));
	free(url);
	tpf_diags_release(&d);
	tpf_gapi_free(api);
}

static void test_gapi__lro_ends_in_error(void)
{
	struct tpf_gapi *api = client();
	struct tpf_diags d = TPF_DIAGS_INIT;
	const struct step st[] = {
		{ 200, "{\"name\":\"projects/p/locations/z/operations/op1\",\"done\":false}", NULL, 0 },
		{ 404, "{\"error\":{\"code\":404,\"message\":\"not yet\"}}", NULL, 0 },
		{ 200, "{\"name\":\"projects/p/locations/z/operations/op1\",\"done\":true,"
		       "\"error\":{\"code\":8,\"message\":\"There is no more capacity in the zone "
		       "\\\"z\\\"\"}}", NULL, 0 },
	};
	script(st, 3);
	json_t *op = json_pack("{s:s, s:b}", "name", "projects/p/locations/z/operations/op1",
			       "done", 0);
	char *root = xasprintf("%s/v2/", srv.url);
	struct tpf_gapi_op how = { TPF_GAPI_OP_LRO, root };
	int failed = 0;
	script(st + 1, 2);
	CHECK_INT(tpf_gapi_wait(api, &how, op, "create node 'n'", "n", &failed, &d),
		  TPF_ECAPACITY);
	CHECK_INT(failed, 1);
	CHECK_INT(srv.n, 2);
	CHECK_STR(srv.seen[0].method, "GET");
	CHECK_STR(srv.seen[0].path, "/v2/projects/p/locations/z/operations/op1");
	CHECK(d.n == 1 && strstr(d.items[0].summary, "create node 'n': operation failed with "
				 "code 8 (RESOURCE_EXHAUSTED): There is no more capacity"));
	CHECK(d.n == 1 && d.items[0].detail && strstr(d.items[0].detail, "next zone"));
	tpf_diags_release(&d);
	/* an operation already done succeeds without a request */
	json_t *done = json_pack("{s:s, s:b}", "name", "operations/x", "done", 1);
	script(st, 0);
	CHECK_INT(tpf_gapi_wait(api, &how, done, "w", NULL, &failed, &d), 0);
	CHECK_INT(srv.n, 0);
	CHECK_INT(failed, 0);
	json_decref(done);
	json_decref(op);
	free(root);
	tpf_diags_release(&d);
	tpf_gapi_free(api);
}

static void test_gapi__compute_operation_ends_in_error(void)
{
	struct tpf_gapi *api = client();
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *self = xasprintf("%s/compute/v1/projects/p/zones/z/operations/op-1", srv.url);
	json_t *op = json_pack("{s:s, s:s, s:s}", "kind", "compute#operation", "status", "RUNNING",
			       "selfLink", self);
	const struct step st[] = {
		{ 200, "{\"status\":\"RUNNING\"}", NULL, 0 },
		{ 200, "{\"status\":\"DONE\",\"httpErrorStatusCode\":403,\"error\":{\"errors\":"
		       "[{\"code\":\"QUOTA_EXCEEDED\",\"message\":\"Quota 'CPUS' exceeded. Limit: "
		       "24.0 in region us-central1.\"}]}}", NULL, 0 },
	};
	script(st, 2);
	struct tpf_gapi_op how = { TPF_GAPI_OP_COMPUTE, NULL };
	int failed = 0;
	CHECK_INT(tpf_gapi_wait(api, &how, op, "create instance 'i'", "i", &failed, &d),
		  TPF_EQUOTA);
	CHECK_INT(failed, 1);
	CHECK_INT(srv.n, 2);
	CHECK_STR(srv.seen[0].method, "POST");
	CHECK_STR(srv.seen[0].path, "/compute/v1/projects/p/zones/z/operations/op-1/wait");
	CHECK(d.n == 1 && strstr(d.items[0].summary, "Quota 'CPUS' exceeded"));
	CHECK(d.n == 1 && strstr(d.items[0].summary, "PERMISSION_DENIED"));
	json_decref(op);
	free(self);
	tpf_diags_release(&d);
	tpf_gapi_free(api);
}

static void test_gapi__request_ids_are_uuids(void)
{
	char a[TPF_GAPI_REQUEST_ID_SIZE], b[TPF_GAPI_REQUEST_ID_SIZE];
	CHECK_INT(tpf_uuid4_try(a), 0);
	CHECK_INT(tpf_uuid4_try(b), 0);
	CHECK(is_uuid4(a) && is_uuid4(b));
	CHECK(strcmp(a, b) != 0);
}

int main(void)
{
	server_start();
	RUN(test_gapi__429_then_success);
	RUN(test_gapi__503_retry_after_seconds_and_date);
	RUN(test_gapi__dropped_connection_then_success);
	RUN(test_gapi__gives_up_after_tries);
	RUN(test_gapi__post_without_request_id_is_not_retried);
	RUN(test_gapi__401_fetches_a_new_token_once);
	RUN(test_gapi__pages);
	RUN(test_gapi__lro_ends_in_error);
	RUN(test_gapi__compute_operation_ends_in_error);
	RUN(test_gapi__request_ids_are_uuids);
	server_stop();
	return unit_done();
}
