/*
 * The Cloud Monitoring API v3 subset `watch` writes to (tests/fakegcp/README.md
 * "Cloud Monitoring"): projects.metricDescriptors.create and
 * projects.timeSeries.create, with the request shapes the real API checks
 * (https://cloud.google.com/monitoring/api/ref_v3/rest/v3/projects.timeSeries/create,
 * .../v3/TimeSeries, .../projects.metricDescriptors): at most 200 time
 * series a request, one point each, an interval with an end time, a value
 * of the metric's value type, a monitored resource that user-defined
 * metrics may use, with its labels; points of one series in order and no
 * more often than every 5 seconds. Malformed requests get Google's 400
 * INVALID_ARGUMENT shape; accepted ones are in the request log.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/str.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#define SERIES_MAX 200
#define SAMPLING_SECONDS 5.0
#define LABELS_MAX 30

/* Under fg_lock: project/type -> MetricDescriptor; series key -> last end time. */
static json_t *descriptors, *last_end;

static const char *const kinds[] = { "GAUGE", "DELTA", "CUMULATIVE", NULL };
static const char *const value_types[] = { "BOOL", "INT64", "DOUBLE", "STRING", "DISTRIBUTION",
					   NULL };
static const char *const value_fields[] = { "boolValue", "int64Value", "doubleValue",
					    "stringValue", "distributionValue", NULL };

/* The monitored resource types user-defined metrics may use that are
 * emulated, with their labels (all required). */
static const struct {
	const char *type;
	const char *labels[6];
} resources[] = {
	{ "global", { "project_id", NULL } },
	{ "generic_task", { "project_id", "location", "namespace", "job", "task_id", NULL } },
	{ "generic_node", { "project_id", "location", "namespace", "node_id", NULL } },
};

static int one_of(const char *s, const char *const *words)
{
	for (int i = 0; s && words[i]; i++)
		if (!strcmp(s, words[i]))
			return i;
	return -1;
}

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* [a-z][a-z0-9_]*, at most 100 bytes: a label key. */
static int label_key_ok(const char *k)
{
	if (!k || !*k || strlen(k) > 100 || *k < 'a' || *k > 'z')
		return 0;
	for (; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9') || *k == '_'))
			return 0;
	return 1;
}

/* A problem with field `field` of the request: 400 in the API's words. */
static char *bad(const char *field, const char *fmt, const char *what)
{
	return xasprintf("Field %s had an invalid value: %s%s", field, fmt, what ? what : "");
}

static char *check_descriptor(json_t *d)
{
	const char *type = str(d, "type");
	if (!type || (strncmp(type, "custom.googleapis.com/", 22) &&
		      strncmp(type, "external.googleapis.com/", 24)))
		return bad("metricDescriptor.type", "a user-defined metric type starts with "
			   "custom.googleapis.com/, got ", type ? type : "none");
	if (one_of(str(d, "metricKind"), kinds) < 0)
		return bad("metricDescriptor.metricKind", "must be GAUGE, DELTA or CUMULATIVE", NULL);
	if (one_of(str(d, "valueType"), value_types) < 0)
		return bad("metricDescriptor.valueType", "must be BOOL, INT64, DOUBLE, STRING or "
			   "DISTRIBUTION", NULL);
	json_t *labels = json_object_get(d, "labels");
	if (labels && (!json_is_array(labels) || json_array_size(labels) > LABELS_MAX))
		return bad("metricDescriptor.labels", "a list of at most 30 labels", NULL);
	size_t i;
	json_t *l;
	json_array_foreach(labels, i, l) {
		if (!label_key_ok(str(l, "key")))
			return bad("metricDescriptor.labels.key", "must match [a-z][a-z0-9_]*, got ",
				   str(l, "key") ? str(l, "key") : "none");
		const char *vt = str(l, "valueType");
		if (vt && strcmp(vt, "STRING") && strcmp(vt, "BOOL") && strcmp(vt, "INT64"))
			return bad("metricDescriptor.labels.valueType", "must be STRING, BOOL or INT64",
				   NULL);
	}
	return NULL;
}

static char *descriptor_key(const char *project, const char *type)
{
	return xasprintf("%s/%s", project, type);
}

static void descriptors_create(struct fg_req *r, const char *project)
{
	json_t *d = json_loadb(r->body.buf ? r->body.buf : "", r->body.len, 0, NULL);
	char *why = json_is_object(d) ? check_descriptor(d)
				      : xstrdup("Invalid JSON payload received: a MetricDescriptor");
	if (why) {
		fg_bad_request(r, "metricDescriptor", why);
		free(why);
		json_decref(d);
		return;
	}
	char *name = xasprintf("projects/%s/metricDescriptors/%s", project, str(d, "type"));
	json_object_set_new(d, "name", json_string(name));
	char *key = descriptor_key(project, str(d, "type"));
	fg_lock();
	if (!descriptors)
		descriptors = json_object();
	json_object_set(descriptors, key, d);
	fg_unlock();
	free(key);
	free(name);
	fg_reply_json(r, 200, d);
}

/* The resource: one of the emulated types, every label of it and no
 * other, project_id the request's. */
static char *check_resource(json_t *res, const char *project, const char *field)
{
	const char *type = str(res, "type");
	size_t k = 0, n = sizeof(resources) / sizeof(resources[0]);
	while (k < n && !(type && !strcmp(resources[k].type, type)))
		k++;
	if (k == n)
		return bad(field, "the emulated monitored resource types for user-defined metrics "
			   "are global, generic_task and generic_node, got ", type ? type : "none");
	json_t *labels = json_object_get(res, "labels");
	size_t want = 0;
	for (; resources[k].labels[want]; want++)
		if (!str(labels, resources[k].labels[want]) ||
		    !*str(labels, resources[k].labels[want]))
			return bad(field, "the resource needs the label ", resources[k].labels[want]);
	if (json_object_size(labels) != want)
		return bad(field, "the resource has labels its type does not define", NULL);
	if (strcmp(str(labels, "project_id"), project))
		return bad(field, "resource.labels.project_id must be the project written to: ",
			   project);
	return NULL;
}

/* The one point: an interval ending at a valid time (a GAUGE's start, if
 * given, is its end) and one value, of the metric's type. *end: its end. */
static char *check_point(json_t *ts, const char *kind, const char *vtype, double *end)
{
	json_t *points = json_object_get(ts, "points");
	if (!json_is_array(points) || json_array_size(points) != 1)
		return bad("timeSeries.points", "a time series written takes exactly one point", NULL);
	json_t *p = json_array_get(points, 0), *iv = json_object_get(p, "interval");
	*end = tpf_parse_rfc3339(str(iv, "endTime"));
	if (*end < 0)
		return bad("timeSeries.points.interval.endTime", "an RFC 3339 time is required",
			   NULL);
	double start = str(iv, "startTime") ? tpf_parse_rfc3339(str(iv, "startTime")) : -1;
	if (!strcmp(kind, "GAUGE") && str(iv, "startTime") && start != *end)
		return bad("timeSeries.points.interval.startTime",
			   "a GAUGE point's start time, if given, must equal its end time", NULL);
	if (strcmp(kind, "GAUGE") && (start < 0 || start >= *end))
		return bad("timeSeries.points.interval.startTime",
			   "a DELTA or CUMULATIVE point needs a start time before its end time", NULL);
	json_t *value = json_object_get(p, "value");
	int which = -1, nvalues = 0;
	for (int i = 0; value_fields[i]; i++)
		if (json_object_get(value, value_fields[i])) {
			which = i;
			nvalues++;
		}
	if (nvalues != 1)
		return bad("timeSeries.points.value", "exactly one typed value is required", NULL);
	if (which != one_of(vtype, value_types))
		return bad("timeSeries.points.value", "the value's type is not the metric's: ", vtype);
	if (which == 2 && !json_is_number(json_object_get(value, "doubleValue")))
		return bad("timeSeries.points.value.doubleValue", "must be a number", NULL);
	return NULL;
}

/* Series i of the request, its metric's descriptor (auto-created, as the
 * real API does, when there is none) and key. */
static char *check_series(json_t *ts, const char *project, json_t *created, char **key,
			  double *end)
{
	json_t *metric = json_object_get(ts, "metric");
	const char *type = str(metric, "type");
	if (!type)
		return bad("timeSeries.metric.type", "is required", NULL);
	char *why = check_resource(json_object_get(ts, "resource"), project, "timeSeries.resource");
	if (why)
		return why;
	char *dk = descriptor_key(project, type);
	json_t *desc = json_object_get(descriptors, dk);
	if (!desc)
		desc = json_object_get(created, dk);
	const char *kind = desc ? str(desc, "metricKind") : str(ts, "metricKind");
	const char *vtype = desc ? str(desc, "valueType") : str(ts, "valueType");
	if (!kind)
		kind = "GAUGE";
	if (!vtype)
		vtype = "DOUBLE";
	if (str(ts, "metricKind") && strcmp(str(ts, "metricKind"), kind))
		why = bad("timeSeries.metricKind", "must be the metric's: ", kind);
	else if (str(ts, "valueType") && strcmp(str(ts, "valueType"), vtype))
		why = bad("timeSeries.valueType", "must be the metric's: ", vtype);
	const char *lk;
	json_t *lv;
	json_object_foreach(json_object_get(metric, "labels"), lk, lv) {
		int known = !desc;
		size_t i;
		json_t *l;
		json_array_foreach(json_object_get(desc, "labels"), i, l)
			known |= tpf_streq(str(l, "key"), lk);
		if (!why && (!json_is_string(lv) || !known))
			why = bad("timeSeries.metric.labels", "a label the metric does not define: ", lk);
	}
	if (!why)
		why = check_point(ts, kind, vtype, end);
	if (!why && !desc)
		json_object_set_new(created, dk, json_pack("{s:s,s:s,s:s}", "type", type, "metricKind",
							    kind, "valueType", vtype));
	free(dk);
	if (!why) {
		char *m = json_dumps(metric, JSON_SORT_KEYS | JSON_COMPACT);
		char *res = json_dumps(json_object_get(ts, "resource"), JSON_SORT_KEYS | JSON_COMPACT);
		*key = xasprintf("%s %s", m, res);
		free(m);
		free(res);
	}
	return why;
}

/* Every series, before anything is written: duplicates, order, sampling. */
static char *check_request(json_t *body, const char *project, json_t *keys)
{
	json_t *list = json_object_get(body, "timeSeries");
	if (!json_is_array(list) || !json_array_size(list))
		return xstrdup("Field timeSeries had an invalid value: at least one time series is "
			       "required");
	if (json_array_size(list) > SERIES_MAX)
		return xasprintf("Field timeSeries had an invalid value: at most %d TimeSeries can "
				 "be written in one request, got %zu", SERIES_MAX,
				 json_array_size(list));
	json_t *created = json_object();
	char *why = NULL;
	size_t i;
	json_t *ts;
	json_array_foreach(list, i, ts) {
		char *key = NULL;
		double end = 0;
		why = check_series(ts, project, created, &key, &end);
		if (!why && json_object_get(keys, key))
			why = xasprintf("Field timeSeries[%zu] had an invalid value: Duplicate "
					"TimeSeries encountered. Only one point can be written per "
					"TimeSeries per request.", i);
		json_t *last = why ? NULL : json_object_get(last_end, key);
		if (last && end <= json_real_value(last))
			why = xasprintf("Points must be written in order. One or more of the points "
					"specified had an older start time than the most recent "
					"point. (timeSeries[%zu])", i);
		else if (last && end - json_real_value(last) < SAMPLING_SECONDS)
			why = xasprintf("One or more points were written more frequently than the "
					"maximum sampling period configured for the metric. "
					"(timeSeries[%zu])", i);
		if (!why)
			json_object_set_new(keys, key, json_real(end));
		free(key);
		if (why)
			break;
	}
	if (!why)
		json_object_update(descriptors, created);
	json_decref(created);
	return why;
}

static void series_create(struct fg_req *r, const char *project)
{
	json_t *body = json_loadb(r->body.buf ? r->body.buf : "", r->body.len, 0, NULL);
	json_t *keys = json_object();
	fg_lock();
	if (!descriptors)
		descriptors = json_object();
	if (!last_end)
		last_end = json_object();
	char *why = json_is_object(body) ? check_request(body, project, keys)
				 : xstrdup("Invalid JSON payload received: a CreateTimeSeriesRequest");
	if (!why)
		json_object_update(last_end, keys);
	fg_unlock();
	if (why)
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "%s", why);
	else
		fg_reply_json(r, 200, json_object());
	free(why);
	json_decref(keys);
	json_decref(body);
}

int fg_monitoring_serve(struct fg_req *r)
{
	static const char prefix[] = "/v3/projects/";
	if (strncmp(r->path, prefix, sizeof(prefix) - 1))
		return 0;
	const char *rest = r->path + sizeof(prefix) - 1, *slash = strchr(rest, '/');
	if (fg_auth_check(r) < 0)
		return 1;
	char *project = slash ? xstrndup(rest, (size_t)(slash - rest)) : NULL;
	if (!project || strcmp(project, fg_opt.project)) {
		fg_reply_error(r, 403, "PERMISSION_DENIED", NULL,
			       "Permission monitoring.timeSeries.create denied (or the resource may "
			       "not exist).");
	} else if (strcmp(r->method, "POST")) {
		fg_reply_error(r, 404, "NOT_FOUND", NULL, "Method %s is not allowed on %s.", r->method,
			       r->path);
	} else if (!strcmp(slash, "/timeSeries")) {
		series_create(r, project);
	} else if (!strcmp(slash, "/metricDescriptors")) {
		descriptors_create(r, project);
	} else {
		fg_reply_error(r, 404, "NOT_FOUND", NULL,
			       "%s %s: the requested URL was not found on this server.", r->method,
			       r->path);
	}
	free(project);
	return 1;
}

void fg_monitoring_free(void)
{
	json_decref(descriptors);
	json_decref(last_end);
	descriptors = last_end = NULL;
}
