/*
 * The metrics registry and its exposition text (engine/telemetry/metrics.h). The
 * HTTP side is engine/telemetry/metrics_http.c.
 */
#include "engine/telemetry/metrics.h"
#include "engine/telemetry/metrics_internal.h"
#include "engine/ledger/report_follow.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The job states counted, in the order shown; the last takes the rest. */
static const enum tpf_job_state sessions[TPF_METRICS_NSESSIONS] = {
	TPF_JOB_STATE_ALIVE, TPF_JOB_STATE_EXITED, TPF_JOB_STATE_DEAD, TPF_JOB_STATE_NONE,
	TPF_JOB_STATE_UNREACHABLE,
};
/* Upper bounds of the latency buckets, seconds (+Inf is implied). */
static const double latency_bounds[TPF_METRICS_NBUCKETS] = {
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
};

struct tpf_metrics *tpf_metrics_new(void)
{
	struct tpf_metrics *m = xcalloc(1, sizeof(*m));
	pthread_mutex_init(&m->mu, NULL);
	return m;
}

void tpf_metrics_release_data(struct tpf_metrics *m)
{
	tpf_metrics_nodes_release(&m->nodes);
	for (size_t i = 0; i < m->nlosses; i++)
		free(m->losses[i].reason);
	free(m->losses);
	free(m->api);
	free(m->fleet);
	free(m->ledger_text);
	free(m->page);
	tpf_report_follow_free(m->ledger_follow);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

/* ---- updates -------------------------------------------------------------- */

void tpf_metrics_nodes_add(struct tpf_metrics_nodes *t, const char *group,
			   enum tpf_node_condition state)
{
	int s = (int)state;
	if (s < 0 || s >= TPF_METRICS_NSTATES || !group)
		return;
	size_t i = 0;
	while (i < t->n && strcmp(t->rows[i].group, group))
		i++;
	if (i == t->n) {
		XGROW(t->rows, t->n + 1, t->alloc);
		memset(&t->rows[i], 0, sizeof(t->rows[i]));
		t->rows[i].group = xstrdup(group);
		t->n++;
	}
	t->rows[i].count[s]++;
}

void tpf_metrics_nodes_release(struct tpf_metrics_nodes *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->rows[i].group);
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

void tpf_metrics_set_nodes(struct tpf_metrics *m, const char *fleet, struct tpf_metrics_nodes *t)
{
	pthread_mutex_lock(&m->mu);
	tpf_metrics_nodes_release(&m->nodes);
	m->nodes = *t;
	memset(t, 0, sizeof(*t));
	xstrset(&m->fleet, fleet);
	pthread_mutex_unlock(&m->mu);
}

int tpf_metrics_session_index(enum tpf_job_state session)
{
	for (int i = 0; i < TPF_METRICS_NSESSIONS; i++)
		if (sessions[i] == session)
			return i;
	return TPF_METRICS_NSESSIONS - 1; /* unreachable */
}

void tpf_metrics_set_workers(struct tpf_metrics *m, const long counts[TPF_METRICS_NSESSIONS])
{
	pthread_mutex_lock(&m->mu);
	memcpy(m->workers, counts, sizeof(m->workers));
	m->have_workers = 1;
	pthread_mutex_unlock(&m->mu);
}

void tpf_metrics_round_done(struct tpf_metrics *m, double wall)
{
	pthread_mutex_lock(&m->mu);
	m->rounds++;
	m->last_round = wall;
	pthread_mutex_unlock(&m->mu);
}

void tpf_metrics_round_failed(struct tpf_metrics *m)
{
	pthread_mutex_lock(&m->mu);
	m->round_failures++;
	pthread_mutex_unlock(&m->mu);
}

void tpf_metrics_set_notifications(struct tpf_metrics *m, long sent, long failed, long dropped)
{
	pthread_mutex_lock(&m->mu);
	m->notify_sent = sent;
	m->notify_failed = failed;
	m->notify_dropped = dropped;
	pthread_mutex_unlock(&m->mu);
}

void tpf_metrics_preemption(struct tpf_metrics *m, const char *reason, double latency)
{
	pthread_mutex_lock(&m->mu);
	size_t i = 0;
	while (i < m->nlosses && strcmp(m->losses[i].reason, reason))
		i++;
	if (i == m->nlosses) {
		XGROW(m->losses, m->nlosses + 1, m->losses_alloc);
		m->losses[i].reason = xstrdup(reason);
		m->losses[i].n = 0;
		m->nlosses++;
	}
	m->losses[i].n++;
	if (latency >= 0) {
		for (int b = 0; b < TPF_METRICS_NBUCKETS; b++)
			if (latency <= latency_bounds[b])
				m->latency_buckets[b]++;
		m->latency_count++;
		m->latency_sum += latency;
	}
	pthread_mutex_unlock(&m->mu);
}

void tpf_metrics_replacement(struct tpf_metrics *m)
{
	pthread_mutex_lock(&m->mu);
	m->replacements++;
	pthread_mutex_unlock(&m->mu);
}

void tpf_metrics_restarts(struct tpf_metrics *m, long workers)
{
	pthread_mutex_lock(&m->mu);
	m->restarts += workers;
	pthread_mutex_unlock(&m->mu);
}

void tpf_metrics_api_request(const char *method, long status, void *ctx)
{
	struct tpf_metrics *m = ctx;
	char meth[sizeof(m->api[0].method)];
	snprintf(meth, sizeof(meth), "%s", method ? method : "GET");
	pthread_mutex_lock(&m->mu);
	size_t i = 0;
	while (i < m->napi && (m->api[i].status != status || strcmp(m->api[i].method, meth)))
		i++;
	if (i == m->napi) {
		XGROW(m->api, m->napi + 1, m->api_alloc);
		memcpy(m->api[i].method, meth, sizeof(meth));
		m->api[i].status = status;
		m->api[i].n = 0;
		m->napi++;
	}
	m->api[i].n++;
	pthread_mutex_unlock(&m->mu);
}

/* ---- the exposition text ------------------------------------------------- */

/* A label value with \, " and newline escaped (format 0.0.4). */
static void label(struct tpf_buf *b, const char *name, const char *value, int first)
{
	tpf_buf_addf(b, "%s%s=\"", first ? "" : ",", name);
	for (const char *c = value ? value : ""; *c; c++) {
		if (*c == '\\')
			tpf_buf_adds(b, "\\\\");
		else if (*c == '"')
			tpf_buf_adds(b, "\\\"");
		else if (*c == '\n')
			tpf_buf_adds(b, "\\n");
		else
			tpf_buf_addch(b, *c);
	}
	tpf_buf_addch(b, '"');
}

static void family(struct tpf_buf *b, const char *name, const char *type, const char *help)
{
	tpf_buf_addf(b, "# HELP tpuform_%s %s\n# TYPE tpuform_%s %s\n", name, help, name, type);
}

static void scalar(struct tpf_buf *b, const char *name, const char *type, const char *help,
		   long value)
{
	family(b, name, type, help);
	tpf_buf_addf(b, "tpuform_%s %ld\n", name, value);
}

static void render_nodes(const struct tpf_metrics *m, struct tpf_buf *b)
{
	tpf_buf_adds(b, "# HELP tpuform_info The fleet this watch keeps.\n"
			"# TYPE tpuform_info gauge\ntpuform_info{");
	label(b, "fleet", m->fleet, 1);
	label(b, "version", TPF_METRICS_VERSION, 0);
	tpf_buf_adds(b, "} 1\n");
	family(b, "nodes", "gauge",
	       "Desired nodes by group and state (alive, creating, waiting for quota, dead, "
	       "missing, queued), as of the last round.");
	for (size_t i = 0; i < m->nodes.n; i++) {
		for (int s = 0; s < TPF_METRICS_NSTATES; s++) {
			tpf_buf_adds(b, "tpuform_nodes{");
			label(b, "group", m->nodes.rows[i].group, 1);
			label(b, "state", tpf_node_condition_name((enum tpf_node_condition)s), 0);
			tpf_buf_addf(b, "} %ld\n", m->nodes.rows[i].count[s]);
		}
	}
	family(b, "workers", "gauge", "Workers by job session, as of the last session check.");
	for (int s = 0; m->have_workers && s < TPF_METRICS_NSESSIONS; s++) {
		tpf_buf_adds(b, "tpuform_workers{");
		label(b, "session", tpf_job_state_name(sessions[s]), 1);
		tpf_buf_addf(b, "} %ld\n", m->workers[s]);
	}
}

static void render_latency(const struct tpf_metrics *m, struct tpf_buf *b)
{
	family(b, "detection_latency_seconds", "histogram",
	       "Seconds from the refresh that saw a node dead to its replacement's delete.");
	for (int i = 0; i < TPF_METRICS_NBUCKETS; i++)
		tpf_buf_addf(b, "tpuform_detection_latency_seconds_bucket{le=\"%g\"} %ld\n",
			     latency_bounds[i], m->latency_buckets[i]);
	tpf_buf_addf(b, "tpuform_detection_latency_seconds_bucket{le=\"+Inf\"} %ld\n",
		     m->latency_count);
	tpf_buf_addf(b, "tpuform_detection_latency_seconds_sum %.6f\n", m->latency_sum);
	tpf_buf_addf(b, "tpuform_detection_latency_seconds_count %ld\n", m->latency_count);
}

static void render_counters(const struct tpf_metrics *m, struct tpf_buf *b)
{
	family(b, "preemptions_total", "counter",
	       "Nodes lost (preempted, terminated, ...) whose replacement started, by reason.");
	for (size_t i = 0; i < m->nlosses; i++) {
		tpf_buf_adds(b, "tpuform_preemptions_total{");
		label(b, "reason", m->losses[i].reason, 1);
		tpf_buf_addf(b, "} %ld\n", m->losses[i].n);
	}
	scalar(b, "replacements_total", "counter", "Replacement nodes created.", m->replacements);
	scalar(b, "restarts_total", "counter", "Worker jobs restarted.", m->restarts);
	family(b, "api_requests_total", "counter",
	       "Cloud TPU API and token requests by method and HTTP status (none: no answer).");
	for (size_t i = 0; i < m->napi; i++) {
		char code[24];
		if (m->api[i].status)
			snprintf(code, sizeof(code), "%ld", m->api[i].status);
		else
			snprintf(code, sizeof(code), "none");
		tpf_buf_adds(b, "tpuform_api_requests_total{");
		label(b, "method", m->api[i].method, 1);
		label(b, "code", code, 0);
		tpf_buf_addf(b, "} %ld\n", m->api[i].n);
	}
	family(b, "notifications_total", "counter",
	       "Webhook notifications: sent, failed (given up on), dropped (queue full).");
	tpf_buf_addf(b, "tpuform_notifications_total{result=\"sent\"} %ld\n", m->notify_sent);
	tpf_buf_addf(b, "tpuform_notifications_total{result=\"failed\"} %ld\n", m->notify_failed);
	tpf_buf_addf(b, "tpuform_notifications_total{result=\"dropped\"} %ld\n", m->notify_dropped);
	scalar(b, "rounds_total", "counter", "Watch rounds completed.", m->rounds);
	scalar(b, "round_failures_total", "counter", "Watch rounds that failed (retried).",
	       m->round_failures);
	family(b, "last_round_timestamp_seconds", "gauge",
	       "Unix time the last completed round ended (0: none yet).");
	tpf_buf_addf(b, "tpuform_last_round_timestamp_seconds %.3f\n", m->last_round);
}

void tpf_metrics_render(struct tpf_metrics *m, struct tpf_buf *out)
{
	pthread_mutex_lock(&m->mu);
	render_nodes(m, out);
	render_counters(m, out);
	render_latency(m, out);
	if (m->ledger_text)
		tpf_buf_adds(out, m->ledger_text);
	pthread_mutex_unlock(&m->mu);
}
