/*
 * The watch metrics (engine/telemetry/metrics.c, engine/telemetry/metrics_http.c): the
 * exposition text (format 0.0.4), the listen address rules, and the
 * server, scraped through the Cloud TPU HTTP layer so that its request
 * observer (google/gcp_http.h) is exercised too.
 */
#include "engine/telemetry/metrics.h"
#include "google/gcp_http.h"
#include "tests/unit/unit.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; (p = strstr(p, line)); p += n)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return 1;
	return 0;
}

#define CHECK_LINE(text, line) CHECKF(has_line((text), (line)), "line: %s", (line))

static void test_metrics__exposition(void)
{
	struct tpf_metrics *m = tpf_metrics_new();
	struct tpf_metrics_nodes t = TPF_METRICS_NODES_INIT;
	tpf_metrics_nodes_add(&t, "a", TPF_COND_ALIVE);
	tpf_metrics_nodes_add(&t, "a", TPF_COND_ALIVE);
	tpf_metrics_nodes_add(&t, "a", TPF_COND_DEAD);
	tpf_metrics_nodes_add(&t, "q\"x\\y\nz", TPF_COND_WAITING);
	tpf_metrics_nodes_add(&t, "a", TPF_COND_COMPLETED); /* not counted */
	tpf_metrics_set_nodes(m, "f", &t);
	CHECK_INT(t.n, 0);
	long workers[TPF_METRICS_NSESSIONS] = { 0 };
	workers[tpf_metrics_session_index(TPF_JOB_STATE_ALIVE)] = 3;
	workers[tpf_metrics_session_index(TPF_JOB_STATE_UNREACHABLE)] = 1;
	tpf_metrics_set_workers(m, workers);
	tpf_metrics_preemption(m, "preempted", 0.3);
	tpf_metrics_preemption(m, "preempted", 7);
	tpf_metrics_preemption(m, "terminated", -1);
	tpf_metrics_replacement(m);
	tpf_metrics_restarts(m, 4);
	tpf_metrics_api_request("GET", 200, m);
	tpf_metrics_api_request("GET", 200, m);
	tpf_metrics_api_request("DELETE", 0, m);
	tpf_metrics_round_done(m, 1795370000.5);
	tpf_metrics_round_failed(m);
	tpf_metrics_set_notifications(m, 5, 1, 2);

	struct tpf_buf b = TPF_BUF_INIT;
	tpf_metrics_render(m, &b);
	const char *x = b.buf;
	CHECK_LINE(x, "# TYPE tpuform_nodes gauge");
	CHECK_LINE(x, "tpuform_info{fleet=\"f\",version=\"" TPF_VERSION "\"} 1");
	CHECK_LINE(x, "tpuform_nodes{group=\"a\",state=\"alive\"} 2");
	CHECK_LINE(x, "tpuform_nodes{group=\"a\",state=\"dead\"} 1");
	CHECK_LINE(x, "tpuform_nodes{group=\"a\",state=\"queued\"} 0");
	CHECK_LINE(x, "tpuform_nodes{group=\"q\\\"x\\\\y\\nz\",state=\"waiting\"} 1");
	CHECK_LINE(x, "tpuform_workers{session=\"alive\"} 3");
	CHECK_LINE(x, "tpuform_workers{session=\"unreachable\"} 1");
	CHECK_LINE(x, "tpuform_workers{session=\"dead\"} 0");
	CHECK_LINE(x, "# TYPE tpuform_preemptions_total counter");
	CHECK_LINE(x, "tpuform_preemptions_total{reason=\"preempted\"} 2");
	CHECK_LINE(x, "tpuform_preemptions_total{reason=\"terminated\"} 1");
	CHECK_LINE(x, "tpuform_replacements_total 1");
	CHECK_LINE(x, "tpuform_restarts_total 4");
	CHECK_LINE(x, "# TYPE tpuform_detection_latency_seconds histogram");
	CHECK_LINE(x, "tpuform_detection_latency_seconds_bucket{le=\"0.25\"} 0");
	CHECK_LINE(x, "tpuform_detection_latency_seconds_bucket{le=\"0.5\"} 1");
	CHECK_LINE(x, "tpuform_detection_latency_seconds_bucket{le=\"5\"} 1");
	CHECK_LINE(x, "tpuform_detection_latency_seconds_bucket{le=\"10\"} 2");
	CHECK_LINE(x, "tpuform_detection_latency_seconds_bucket{le=\"+Inf\"} 2");
	CHECK_LINE(x, "tpuform_detection_latency_seconds_sum 7.300000");
	CHECK_LINE(x, "tpuform_detection_latency_seconds_count 2");
	CHECK_LINE(x, "tpuform_api_requests_total{method=\"GET\",code=\"200\"} 2");
	CHECK_LINE(x, "tpuform_api_requests_total{method=\"DELETE\",code=\"none\"} 1");
	CHECK_LINE(x, "tpuform_notifications_total{result=\"sent\"} 5");
	CHECK_LINE(x, "tpuform_notifications_total{result=\"dropped\"} 2");
	CHECK_LINE(x, "tpuform_rounds_total 1");
	CHECK_LINE(x, "tpuform_round_failures_total 1");
	CHECK_LINE(x, "tpuform_last_round_timestamp_seconds 1795370000.500");
	CHECKF(!strstr(x, "no-such-state"), "unknown states are not exposed");
	tpf_buf_release(&b);
	tpf_metrics_free(m);
}

/* Before the first round: families are announced, no node or worker
 * samples are invented. */
static void test_metrics__empty(void)
{
	struct tpf_metrics *m = tpf_metrics_new();
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_metrics_render(m, &b);
	CHECK_LINE(b.buf, "# TYPE tpuform_workers gauge");
	CHECK(!strstr(b.buf, "tpuform_workers{"));
	CHECK(!strstr(b.buf, "tpuform_nodes{"));
	CHECK_LINE(b.buf, "tpuform_last_round_timestamp_seconds 0.000");
	tpf_buf_release(&b);
	tpf_metrics_free(m);
}

static void test_metrics__addresses(void)
{
	static const struct {
		const char *addr;
		int ok, loopback;
		const char *error; /* part of the summary */
	} cases[] = {
		{ "127.0.0.1:9100", 1, 1, NULL },
		{ "127.9.9.9:0", 1, 1, NULL },
		{ "localhost:9100", 1, 1, NULL },
		{ "[::1]:9100", 1, 1, NULL },
		{ "0.0.0.0:9100", 1, 0, NULL },
		{ "10.1.2.3:80", 1, 0, NULL },
		{ "[::]:9100", 1, 0, NULL },
		{ ":9100", 0, 0, "has no host: metrics are never served on every interface" },
		{ "9100", 0, 0, "expected HOST:PORT" },
		{ "::1:9100", 0, 0, "expected HOST:PORT" },
		{ "[::1]9100", 0, 0, "expected [IPV6]:PORT" },
		{ "example.com:9100", 0, 0, "'example.com' is not an IP address" },
		{ "127.0.0.1:65536", 0, 0, "the port must be 0 to 65535" },
		{ "127.0.0.1:", 0, 0, "the port must be 0 to 65535" },
		{ "127.0.0.1:+80", 0, 0, "the port must be 0 to 65535" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss;
		socklen_t len;
		int loopback = -1;
		struct tpf_diags d = TPF_DIAGS_INIT;
		int rc = tpf_metrics_parse_addr(cases[i].addr, &ss, &len, &loopback, &d);
		CHECKF((rc == 0) == cases[i].ok, "%s: %s", cases[i].addr,
		       d.n ? d.items[0].summary : "accepted");
		if (cases[i].ok)
			CHECKF(loopback == cases[i].loopback, "%s: loopback %d", cases[i].addr, loopback);
		else
			CHECKF(d.n && strstr(d.items[0].summary, cases[i].error), "%s: %s", cases[i].addr,
			       d.n ? d.items[0].summary : "");
		tpf_diags_release(&d);
	}
}

/* GET through google/gcp_http.c: the observer counts it. */
static long get(struct tpf_gcp_http *h, const char *method, const char *url,
		struct tpf_buf *body)
{
	struct tpf_gcp_request rq = { .method = method, .url = url };
	struct tpf_gcp_response rs = TPF_GCP_RESPONSE_INIT;
	tpf_gcp_http_do(h, &rq, &rs);
	long status = rs.status;
	if (body)
		tpf_buf_adds(body, rs.body.buf);
	tpf_gcp_response_release(&rs);
	return status;
}

static void test_metrics__served_and_observed(void)
{
	struct tpf_metrics *m = tpf_metrics_new();
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *bound = NULL;
	int loopback = 0;
	CHECK(tpf_metrics_serve(m, "127.0.0.1:0", &bound, &loopback, &d) == 0);
	CHECK(loopback == 1);
	CHECKF(bound && !strncmp(bound, "127.0.0.1:", 10) && strcmp(bound, "127.0.0.1:0"),
	       "bound to a real port: %s", bound ? bound : "(null)");
	struct tpf_gcp_http_opts ho = { 2, 5, 5, 0 };
	struct tpf_gcp_http *h = NULL;
	CHECK(tpf_gcp_http_new(&h, &ho, &d) == 0);
	char *url = bound ? xasprintf("http://%s/metrics", bound) : NULL;
	char *other = bound ? xasprintf("http://%s/other", bound) : NULL;
	struct tpf_buf body = TPF_BUF_INIT;
	CHECK_INT(get(h, "GET", url, NULL), 200);
	CHECK_INT(get(h, "GET", other, NULL), 404);
	CHECK_INT(get(h, "DELETE", url, NULL), 405);
	CHECK_INT(get(h, "GET", url, &body), 200);
	/* The three requests before the last one are in its answer. */
	CHECK_LINE(body.buf, "tpuform_api_requests_total{method=\"GET\",code=\"200\"} 1");
	CHECK_LINE(body.buf, "tpuform_api_requests_total{method=\"GET\",code=\"404\"} 1");
	CHECK_LINE(body.buf, "tpuform_api_requests_total{method=\"DELETE\",code=\"405\"} 1");
	tpf_buf_release(&body);
	tpf_metrics_free(m);
	/* Not serving any more, and the observer is gone with it. */
	CHECK_INT(get(h, "GET", url, NULL), 0);
	tpf_gcp_http_free(h);
	free(url);
	free(other);
	free(bound);
	tpf_diags_release(&d);
}

int main(void)
{
	RUN(test_metrics__exposition);
	RUN(test_metrics__empty);
	RUN(test_metrics__addresses);
	RUN(test_metrics__served_and_observed);
	return unit_done();
}
