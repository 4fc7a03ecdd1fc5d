/*
 * Private to engine/metrics*.c: the registry behind engine/telemetry/metrics.h.
 */
#ifndef TPF_ENGINE_METRICS_INTERNAL_H
#define TPF_ENGINE_METRICS_INTERNAL_H

#include <pthread.h>
#include "engine/telemetry/metrics.h"

#ifndef TPF_VERSION
#define TPF_VERSION "dev"
#endif
#define TPF_METRICS_VERSION TPF_VERSION

/* Node states counted: the conditions of model/node_state.h before
 * TPF_COND_COMPLETED. */
enum { TPF_METRICS_NSTATES = TPF_COND_COMPLETED, TPF_METRICS_NBUCKETS = 10 };

struct tpf_metrics_group_row {
	char *group;
	long count[TPF_METRICS_NSTATES];
};

struct tpf_metrics_loss {
	char *reason;
	long n;
};

struct tpf_metrics_api {
	char method[16];
	long status;
	long n;
};

struct tpf_metrics {
	pthread_mutex_t mu;
	char *fleet;
	struct tpf_metrics_nodes nodes;
	long workers[TPF_METRICS_NSESSIONS];
	int have_workers;
	struct tpf_metrics_loss *losses;
	size_t nlosses, losses_alloc;
	long replacements, restarts;
	long latency_buckets[TPF_METRICS_NBUCKETS]; /* cumulative, as exposed */
	long latency_count;
	double latency_sum;
	struct tpf_metrics_api *api;
	size_t napi, api_alloc;
	long notify_sent, notify_failed, notify_dropped;
	long rounds, round_failures;
	double last_round;
	void *daemon; /* struct MHD_Daemon *, when serving */
	/* From the run ledger (engine/telemetry/metrics_ledger.c): its families in the
	 * exposition format, and the report's page served at "/"; NULL: none yet. */
	char *ledger_text;
	char *page;
	size_t page_len;
	/* The ledger as read so far (engine/ledger/report_follow.h): a refresh
	 * reads only what was appended since. Used by the refreshing thread
	 * only (watch's loop), not under mu. */
	struct tpf_report_follow *ledger_follow;
};

/* Free everything but the server (metrics.c); tpf_metrics_free stops the
 * server first (metrics_http.c). */
void tpf_metrics_release_data(struct tpf_metrics *m);

#endif
