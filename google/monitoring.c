/*
 * Cloud Monitoring API v3 calls (google/monitoring.h), each one call of the
 * Google REST client (gapi.h).
 */
#include "google/monitoring.h"
#include "google/gclient.h"
#include "google/gcp_errors.h"
#include "google/gcp_http.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct tpf_monitoring {
	char *endpoint;
	struct tpf_gclient c;
};

static char *monitoring_hint(void *ctx, const struct tpf_gcp_error *e, enum tpf_gcp_class cls)
{
	(void)ctx;
	if (cls == TPF_GCP_AUTH)
		return NULL;
	if (e->http == 403)
		return xstrdup("The credentials in use need monitoring.timeSeries.create and "
			       "monitoring.metricDescriptors.create on the project "
			       "(roles/monitoring.metricWriter and roles/monitoring.editor), and the "
			       "project needs the Cloud Monitoring API enabled.");
	return xstrdup("");
}

int tpf_monitoring_open(struct tpf_monitoring **out, const struct tpf_gcp_auth_config *auth,
			struct tpf_diags *d)
{
	struct tpf_monitoring *m = xcalloc(1, sizeof(*m));
	*out = NULL;
	if (tpf_gclient_endpoint("TPUFORM_MONITORING_ENDPOINT", TPF_MONITORING_DEFAULT_ENDPOINT,
				 "monitoring endpoint", &m->endpoint, d) < 0 ||
	    tpf_gclient_open(&m->c, m->endpoint, auth, monitoring_hint, d) < 0) {
		tpf_monitoring_free(m);
		return TPF_ERROR;
	}
	*out = m;
	return 0;
}

void tpf_monitoring_free(struct tpf_monitoring *m)
{
	if (!m)
		return;
	tpf_gclient_close(&m->c);
	free(m->endpoint);
	free(m);
}

/* POST {endpoint}/v3/projects/P/<what> with body. */
static int post(struct tpf_monitoring *m, const char *project, const char *collection,
		json_t *body, unsigned flags, const char *what, struct tpf_diags *d)
{
	char *p = tpf_gcp_escape(project);
	char *url = xasprintf("%s/v3/projects/%s/%s", m->endpoint, p, collection);
	struct tpf_gapi_call k = TPF_GAPI_CALL_INIT;
	k.rq.method = "POST";
	k.rq.url = url;
	k.flags = flags;
	k.what = what;
	json_t *answer = NULL;
	int rc = tpf_gapi_json(m->c.api, &k, body, &answer, d);
	json_decref(answer);
	tpf_gapi_call_release(&k);
	free(url);
	free(p);
	return rc < 0 ? TPF_ERROR : 0;
}

int tpf_monitoring_create_descriptor(struct tpf_monitoring *m, const char *project,
				     json_t *descriptor, struct tpf_diags *d)
{
	char *what = xasprintf("creating the metric descriptor %s in project %s",
			       json_string_value(json_object_get(descriptor, "type")), project);
	int rc = post(m, project, "metricDescriptors", descriptor, TPF_GAPI_IDEMPOTENT, what, d);
	free(what);
	return rc;
}

int tpf_monitoring_write(struct tpf_monitoring *m, const char *project, json_t *series,
			 struct tpf_diags *d)
{
	if (json_array_size(series) > TPF_MONITORING_SERIES_MAX)
		return tpf_error(d, "internal: %zu time series in one request, over the API's %d",
				 json_array_size(series), TPF_MONITORING_SERIES_MAX);
	json_t *body = json_pack("{s:O}", "timeSeries", series);
	char *what = xasprintf("writing %zu time series to Cloud Monitoring in project %s",
			       json_array_size(series), project);
	int rc = post(m, project, "timeSeries", body, 0, what, d);
	free(what);
	json_decref(body);
	return rc;
}
