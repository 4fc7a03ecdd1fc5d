/*
 * A small Cloud Monitoring API v3 client: the two calls `watch` needs to
 * write the fleet's goodput as user-defined metrics
 * (https://cloud.google.com/monitoring/custom-metrics):
 * projects.metricDescriptors.create (POST /v3/projects/P/metricDescriptors,
 * "updated if it already exists, except that metric labels are never
 * removed") and projects.timeSeries.create (POST /v3/projects/P/timeSeries:
 * at most 200 time series a request, each with exactly one point).
 *
 * Plumbing is google/'s: the same HTTP engine, credentials and endpoint
 * policy as the Cloud TPU and Cloud Storage clients; every request goes
 * through the one REST client (gapi.h). A descriptor create is repeated on
 * a transient failure (it is idempotent); a timeSeries.create is sent once
 * (a repeated point is refused by the API as written out of order).
 *
 * Thread-safe as gapi.h is.
 */
#ifndef TPF_GOOGLE_MONITORING_H
#define TPF_GOOGLE_MONITORING_H

#include <jansson.h>
#include "google/gcp_auth.h"
#include "util/diag.h"

/* Production root of the API. */
#define TPF_MONITORING_DEFAULT_ENDPOINT "https://monitoring.googleapis.com"
/* timeSeries.create's bound on time series per request. */
#define TPF_MONITORING_SERIES_MAX 200

struct tpf_monitoring;

/*
 * Open a client with the fleet's credentials (auth may be all NULL: the
 * application default credentials), at $TPUFORM_MONITORING_ENDPOINT or
 * TPF_MONITORING_DEFAULT_ENDPOINT (checked by tpf_gcp_endpoint_check:
 * https, or http to a loopback host only). No request yet. 0, or TPF_ERROR
 * with a diagnostic naming the variable. Free with tpf_monitoring_free.
 */
int tpf_monitoring_open(struct tpf_monitoring **out, const struct tpf_gcp_auth_config *auth,
			struct tpf_diags *d);
void tpf_monitoring_free(struct tpf_monitoring *m);

/* projects.metricDescriptors.create of descriptor (a MetricDescriptor
 * object, borrowed) in project. 0, or an error with the API's message and
 * status in a diagnostic. */
int tpf_monitoring_create_descriptor(struct tpf_monitoring *m, const char *project,
				     json_t *descriptor, struct tpf_diags *d);

/* projects.timeSeries.create of series (an array of at most
 * TPF_MONITORING_SERIES_MAX TimeSeries objects, borrowed) in project.
 * 0, or an error with the API's message and status in a diagnostic. */
int tpf_monitoring_write(struct tpf_monitoring *m, const char *project, json_t *series,
			 struct tpf_diags *d);

#endif
