/*
 * The Compute Engine v1 subset: routing under /compute/v1/projects/{p}/,
 * Google's Compute error body, names and URLs, zones, regions, machine
 * types, images and operations (get, list, delete, wait). The resources
 * are in fg_compute_inst.c and fg_compute_mig.c; sources for every
 * behaviour in docs/compute-engine.md.
 *
 * Order a request meets: latency, injected fault, bearer auth (as the TPU
 * side), project, zone/region, query parameters, body (JSON, then the
 * schema in fg_compute_schema.c), handler.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/evp.h>

#include "tests/fakegcp/fg_compute.h"
#include "util/xalloc.h"

struct ce_world ce;

#define IMAGE_PROJECT "ubuntu-os-accelerator-images"

/* docs/compute-engine.md section 1: chips, vCPU and memory per machine
 * type, and the regions that list it. */
#define R_TPU7X "europe-west2 us-central1 us-east1"
#define R_V6E "asia-east1 asia-northeast1 asia-south1 asia-southeast1 europe-west4 " \
	      "southamerica-east1 southamerica-west1 us-central1 us-east1 us-east4 us-east5 us-west1"
#define R_V5P "europe-west1 europe-west4 us-central1 us-east1 us-east5 us-south1"
static const struct ce_mtype mtypes[] = {
	{ "ct5p-hightpu-4t", "ct5p", 4, 208, 448, "2x2x1", R_V5P },
	{ "ct6e-standard-1t", "ct6e", 1, 44, 176, "1x1", R_V6E },
	{ "ct6e-standard-4t", "ct6e", 4, 180, 720, "2x2", R_V6E },
	{ "ct6e-standard-8t", "ct6e", 8, 360, 1440, "2x4", R_V6E },
	{ "tpu7x-standard-1t", "tpu7x", 1, 56, 240, "1x1x1", R_TPU7X },
	{ "tpu7x-standard-4t", "tpu7x", 4, 224, 960, "2x2x1", R_TPU7X },
};

/* The zones served: each region above with the zone letters listed. */
static const char *const zones[] = {
	"asia-east1-a", "asia-east1-b", "asia-east1-c", "asia-northeast1-a", "asia-northeast1-b",
	"asia-northeast1-c", "asia-south1-a", "asia-south1-b", "asia-south1-c",
	"asia-southeast1-a", "asia-southeast1-b", "asia-southeast1-c", "europe-west1-b",
	"europe-west1-c", "europe-west1-d", "europe-west2-a", "europe-west2-b", "europe-west2-c",
	"europe-west4-a", "europe-west4-b", "europe-west4-c", "southamerica-east1-a",
	"southamerica-east1-b", "southamerica-east1-c", "southamerica-west1-a",
	"southamerica-west1-b", "southamerica-west1-c", "us-central1-a", "us-central1-b",
	"us-central1-c", "us-central1-f", "us-east1-b", "us-east1-c", "us-east1-d", "us-east4-a",
	"us-east4-b", "us-east4-c", "us-east5-a", "us-east5-b", "us-east5-c", "us-south1-a",
	"us-south1-b", "us-south1-c", "us-west1-a", "us-west1-b", "us-west1-c",
};
#define N_ZONES (sizeof(zones) / sizeof(zones[0]))

/* Image families in IMAGE_PROJECT (docs/compute-engine.md section 2). */
static const char *const families[] = {
	"ubuntu-accel-2204-amd64-tpu-v5e-v5p-v6e",
	"ubuntu-accel-2404-amd64-tpu-tpu7x",
};
#define IMAGE_DATE "v20260803"

/* ---------------------------------------------------------------- errors */

static json_t *error_body(unsigned http, const char *reason, const char *msg)
{
	return json_pack("{s:{s:i, s:s, s:[{s:s, s:s, s:s}]}}", "error", "code", (int)http,
			 "message", msg, "errors", "message", msg, "domain",
			 !strcmp(reason, "quotaExceeded") ? "usageLimits" : "global", "reason", reason);
}

void ce_error(struct fg_req *r, unsigned http, const char *reason, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	fg_reply_json(r, http, error_body(http, reason, msg));
	free(msg);
}

void ce_not_found(struct fg_req *r, const char *path)
{
	ce_error(r, 404, "notFound", "The resource 'projects/%s/%s' was not found", fg_opt.project,
		 path);
}

void ce_not_ready(struct fg_req *r, const char *collection, const char *zone, const char *name)
{
	ce_error(r, 400, "resourceNotReady", "The resource 'projects/%s/zones/%s/%s/%s' is not ready",
		 fg_opt.project, zone, collection, name);
}

void ce_invalid(struct fg_req *r, const char *field, const char *value, const char *why)
{
	ce_error(r, 400, "invalid", "Invalid value for field '%s': '%s'. %s", field, value, why);
}

const char *ce_arg(struct fg_req *r, const char *key)
{
	if (r->args)
		return json_string_value(json_object_get(r->args, key));
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

struct qcheck {
	const char *const *allowed;
	const char *bad;
};

/* System parameters every Google API takes. */
static const char *const std_params[] = {
	"alt", "prettyPrint", "fields", "key", "quotaUser", "userIp", "access_token", "$.xgafv",
	"callback", "upload_protocol", "uploadType", NULL,
};

static int in_list(const char *const *l, const char *k)
{
	for (; l && *l; l++)
		if (!strcmp(*l, k))
			return 1;
	return 0;
}

static enum MHD_Result q_one(void *cls, enum MHD_ValueKind kind, const char *key,
			     const char *value)
{
	struct qcheck *qc = cls;

	(void)kind;
	(void)value;
	if (!qc->bad && !in_list(std_params, key) && !in_list(qc->allowed, key))
		qc->bad = key;
	return MHD_YES;
}

int ce_check_query(struct fg_req *r, const char *const *allowed)
{
	struct qcheck qc = { allowed, NULL };

	if (r->args) {
		const char *k;
		json_t *v;
		json_object_foreach(r->args, k, v)
			q_one(&qc, MHD_GET_ARGUMENT_KIND, k, json_string_value(v));
	} else {
		MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, q_one, &qc);
	}
	if (!qc.bad)
		return 0;
	/* ESF's request binding, as on the TPU side (fg_discovery.c). */
	ce_error(r, 400, "invalid", "Invalid JSON payload received. Unknown name \"%s\": Cannot "
		 "bind query parameter. Field '%s' could not be found in request message.",
		 qc.bad, qc.bad);
	return -1;
}

/* ------------------------------------------------------- names and URLs */

char *ce_url(const char *rel)
{
	return xasprintf("%sprojects/%s/%s", ce.base ? ce.base : "", fg_opt.project, rel);
}

const char *ce_basename(const char *url)
{
	const char *s = strrchr(url, '/');
	return s ? s + 1 : url;
}

char *ce_region_of(const char *zone)
{
	const char *d = strrchr(zone, '-');
	return d ? xstrndup(zone, (size_t)(d - zone)) : xstrdup(zone);
}

int ce_zone_ok(const char *zone)
{
	for (size_t i = 0; i < N_ZONES; i++)
		if (!strcmp(zones[i], zone))
			return 1;
	return 0;
}

static int region_ok(const char *region)
{
	for (size_t i = 0; i < N_ZONES; i++) {
		char *rg = ce_region_of(zones[i]);
		int same = !strcmp(rg, region);
		free(rg);
		if (same)
			return 1;
	}
	return 0;
}

const char *ce_zone_at(size_t i)
{
	return i < N_ZONES ? zones[i] : NULL;
}

static const char *item_key(json_t *v);

static int by_key(const void *a, const void *b)
{
	return strcmp(item_key(*(json_t *const *)a), item_key(*(json_t *const *)b));
}

void ce_sort(json_t *arr)
{
	size_t n = json_array_size(arr), i;
	json_t **v = xcalloc(n ? n : 1, sizeof(*v));

	for (i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(arr, i));
	qsort(v, n, sizeof(*v), by_key);
	json_array_clear(arr);
	for (i = 0; i < n; i++)
		json_array_append_new(arr, v[i]);
	free(v);
}

const struct ce_mtype *ce_mtype(const char *name)
{
	for (size_t i = 0; i < sizeof(mtypes) / sizeof(mtypes[0]); i++)
		if (!strcmp(mtypes[i].name, name))
			return &mtypes[i];
	return NULL;
}

int ce_mtype_in_zone(const struct ce_mtype *t, const char *zone)
{
	char *rg = ce_region_of(zone);
	size_t n = strlen(rg);
	int found = 0;

	for (const char *p = t->regions; (p = strstr(p, rg)); p += n)
		if ((p == t->regions || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			found = 1;
	free(rg);
	return found;
}

char *ce_new_id(void)
{
	/* 19 digits within int64, like real instance ids. */
	return xasprintf("%llu", 1000000000000000000ULL +
				 (unsigned long long)(fg_rand_id() % 8000000000000000000ULL));
}

char *ce_fingerprint(void)
{
	uint64_t v = fg_rand_id();
	unsigned char raw[8], out[16];

	memcpy(raw, &v, sizeof(raw));
	EVP_EncodeBlock(out, raw, (int)sizeof(raw));
	return xstrdup((const char *)out);
}

void ce_timestamp(char out[40])
{
	struct timespec ts;
	struct tm tm;
	char base[24];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	if (!strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm))
		base[0] = '\0';
	snprintf(out, 40, "%.19s.%03d+00:00", base, (int)(ts.tv_nsec / 1000000L));
}

json_t *ce_wrap(json_t *res, const char *zone, char *key)
{
	json_t *w = json_pack("{s:O, s:s}", "__ref", res, "__zone", zone);
	if (key)
		json_object_set_new(w, "__key", json_string(key));
	else
		json_object_set(w, "__key", json_object_get(res, "name"));
	free(key);
	return w;
}

json_t *ce_public(json_t *res)
{
	json_t *ref = json_object_get(res, "__ref");
	json_t *out = json_object(), *v;
	const char *k;

	/* A shallow copy: the values are the resource's own, which is safe
	 * while the lock is held, and every answer is serialized under it
	 * (a deep copy of 10,000 instances was most of a list's time). */
	json_object_foreach(ref ? ref : res, k, v)
		if (strncmp(k, "__", 2))
			json_object_set(out, k, v);
	return out;
}

json_t *ce_scope(json_t *obj, const char *k1, int create)
{
	json_t *m = json_object_get(obj, k1);
	if (!m && create) {
		m = json_object();
		json_object_set_new(obj, k1, m);
	}
	return m;
}

json_t *ce_map2(json_t *obj, const char *k1, const char *k2)
{
	return json_object_get(json_object_get(obj, k1), k2);
}

/* ------------------------------------------------------------ operations */

static const char *http_text(int http)
{
	switch (http) {
	case 400: return "BAD REQUEST";
	case 403: return "FORBIDDEN";
	case 404: return "NOT FOUND";
	case 409: return "CONFLICT";
	case 412: return "PRECONDITION FAILED";
	default: return "SERVICE UNAVAILABLE";
	}
}

json_t *ce_op_new(const char *scope, const char *type, const char *target, const char *target_id,
		  double after)
{
	char ts[40];
	unsigned long long ms = (unsigned long long)time(NULL) * 1000ULL;
	uint64_t a = fg_rand_id(), b = fg_rand_id();
	char *name = xasprintf("operation-%llu-%013llx-%08x-%08x", ms,
			       (unsigned long long)(a & 0xfffffffffffffULL), (unsigned)(b >> 32),
			       (unsigned)b);
	char *rel = xasprintf("%s/operations/%s", scope, name);
	char *self = ce_url(rel), *tl = ce_url(target), *id = ce_new_id();

	ce_timestamp(ts);
	json_t *op = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:s}", "kind",
			       "compute#operation", "id", id, "name", name, "operationType", type,
			       "targetLink", tl, "status", "RUNNING", "user", fg_opt.token_email,
			       "progress", 0, "insertTime", ts, "startTime", ts, "selfLink", self);
	if (target_id)
		json_object_set_new(op, "targetId", json_string(target_id));
	if (!strncmp(scope, "zones/", 6) || !strncmp(scope, "regions/", 8)) {
		char *u = ce_url(scope);
		json_object_set_new(op, scope[0] == 'z' ? "zone" : "region", json_string(u));
		free(u);
	}
	json_object_set_new(op, "__done_at", json_real(after < 0 ? -1 : fg_mono() + after));
	json_object_set_new(ce_scope(ce.ops, scope, 1), name, op);
	free(name);
	free(rel);
	free(self);
	free(tl);
	free(id);
	return op;
}

json_t *ce_op_errors(const char *code, const char *message)
{
	return json_pack("{s:s, s:s}", "code", code, "message", message);
}

void ce_op_finish(json_t *op, json_t *error, int http)
{
	char ts[40];

	ce_timestamp(ts);
	json_object_set_new(op, "status", json_string("DONE"));
	json_object_set_new(op, "progress", json_integer(100));
	json_object_set_new(op, "endTime", json_string(ts));
	json_object_set_new(op, "__done_at", json_real(fg_mono()));
	if (error) {
		json_object_set_new(op, "error", error);
		json_object_set_new(op, "httpErrorStatusCode", json_integer(http));
		json_object_set_new(op, "httpErrorMessage", json_string(http_text(http)));
	}
}

static void ops_tick(double now)
{
	const char *s, *n;
	json_t *scope, *op;

	json_object_foreach(ce.ops, s, scope) {
		json_object_foreach(scope, n, op) {
			double at = json_real_value(json_object_get(op, "__done_at"));
			const char *st = json_string_value(json_object_get(op, "status"));
			if (strcmp(st, "DONE") && at >= 0 && now >= at) {
				json_t *e = json_object_get(op, "__error");
				ce_op_finish(op, e ? json_incref(e) : NULL,
					     (int)json_integer_value(json_object_get(op, "__http")));
			}
		}
	}
}

void ce_changed(void)
{
	ce.gen++;
}

void ce_tick(void)
{
	double now = fg_mono();

	ce_instances_tick(now);
	ce_migs_tick(now);
	ops_tick(now);
}

void ce_reply_op(struct fg_req *r, json_t *op)
{
	fg_reply_json(r, 200, ce_public(op));
}

/* requestId: a UUID other than the zero one (compute.proto, every
 * mutating request's request_id comment). */
static int uuid_ok(const char *s)
{
	if (strlen(s) != 36 || !strcmp(s, "00000000-0000-0000-0000-000000000000"))
		return 0;
	for (int i = 0; i < 36; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !strchr("0123456789abcdefABCDEF", s[i]))
			return 0;
	}
	return 1;
}

int ce_request_id(struct fg_req *r, json_t **op)
{
	const char *id = ce_arg(r, "requestId");

	*op = NULL;
	if (!id)
		return 0;
	if (!uuid_ok(id)) {
		ce_invalid(r, "requestId", id, "The request id must be a valid UUID with the "
		       "exception that zero UUID is not supported.");
		return -1;
	}
	json_t *k = json_object_get(ce.req_ids, id);
	if (k)
		*op = ce_map2(ce.ops, json_string_value(json_object_get(k, "scope")),
			      json_string_value(json_object_get(k, "name")));
	return 0;
}

void ce_request_id_keep(struct fg_req *r, json_t *op)
{
	const char *id = ce_arg(r, "requestId");
	const char *self = json_string_value(json_object_get(op, "selfLink"));
	const char *p = self ? strstr(self, "/projects/") : NULL;

	if (!id || !p)
		return;
	p = strchr(p + 10, '/'); /* after the project */
	const char *o = p ? strstr(p, "/operations/") : NULL;
	if (!o)
		return;
	char *scope = xstrndup(p + 1, (size_t)(o - p - 1));
	json_object_set_new(ce.req_ids, id, json_pack("{s:s, s:s}", "scope", scope, "name",
						      o + 12));
	free(scope);
}

/* --------------------------------------------------------------- paging */

static const char *item_key(json_t *v)
{
	const char *k = json_string_value(json_object_get(v, "__key"));
	return k ? k : json_string_value(json_object_get(v, "name"));
}

/* maxResults and pageToken; -1 after answering 400. *after fresh or NULL. */
static int page_args(struct fg_req *r, long *max, char **after)
{
	const char *mr = ce_arg(r, "maxResults"), *pt = ce_arg(r, "pageToken");
	char *end = NULL;

	*max = mr && *mr ? strtol(mr, &end, 10) : 500;
	*after = NULL;
	if ((mr && (!*mr || *end)) || *max < 0 || *max > 500) {
		ce_invalid(r, "maxResults", mr ? mr : "", "Must be less than or equal to 500");
		return -1;
	}
	if (*max == 0)
		*max = 500;
	if (pt && *pt) {
		size_t len;
		unsigned char *raw = fg_b64url_decode(pt, strlen(pt), &len);
		if (!raw || !len || memchr(raw, 0, len)) {
			free(raw);
			ce_invalid(r, "pageToken", pt, "Invalid page token.");
			return -1;
		}
		*after = xstrndup((const char *)raw, len);
		free(raw);
	}
	return 0;
}

int ce_page(struct fg_req *r, json_t *items, json_t **page, char **next)
{
	char *after;
	long max;
	size_t i;
	json_t *v;

	*page = NULL;
	*next = NULL;
	if (page_args(r, &max, &after) < 0) {
		json_decref(items);
		return -1;
	}
	*page = json_array();
	json_array_foreach(items, i, v) {
		if (after && strcmp(item_key(v), after) <= 0)
			continue;
		if ((long)json_array_size(*page) == max) {
			json_t *last = json_array_get(*page, json_array_size(*page) - 1);
			*next = fg_page_token(item_key(last));
			break;
		}
		json_array_append(*page, v);
	}
	free(after);
	json_decref(items);
	return 0;
}

void ce_items_add(struct ce_items *it, json_t *res, const char *zone, char *key)
{
	XGROW(it->v, it->n + 1, it->a);
	it->v[it->n++] = (struct ce_item){ key ? key : xstrdup(json_string_value(
						     json_object_get(res, "name"))), res, zone };
}

void ce_items_free(struct ce_items *it)
{
	for (size_t i = 0; i < it->n; i++)
		free(it->v[i].key);
	free(it->v);
	*it = (struct ce_items){ 0 };
}

static int item_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ce_item *)a)->key, ((const struct ce_item *)b)->key);
}

int ce_items_page(struct fg_req *r, struct ce_items *it, json_t **page, char **next)
{
	char *after;
	long max;
	size_t i = 0, lo, hi;

	*page = NULL;
	*next = NULL;
	if (page_args(r, &max, &after) < 0)
		return -1;
	if (it->n) /* qsort wants a non-null base even for 0 items */
		qsort(it->v, it->n, sizeof(*it->v), item_cmp);
	for (lo = 0, hi = it->n; after && lo < hi;) { /* first key > after */
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(it->v[mid].key, after) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*page = json_array();
	for (i = after ? lo : 0; i < it->n && (long)json_array_size(*page) < max; i++)
		json_array_append_new(*page, ce_wrap(it->v[i].res, it->v[i].zone,
						     xstrdup(it->v[i].key)));
	if (i < it->n && i > 0)
		*next = fg_page_token(it->v[i - 1].key);
	free(after);
	return 0;
}

json_t *ce_list_json(const char *kind, const char *rel, json_t *items, char *next)
{
	char *id = xasprintf("projects/%s/%s", fg_opt.project, rel), *self = ce_url(rel);
	json_t *out = json_pack("{s:s, s:s}", "kind", kind, "id", id);
	size_t i;
	json_t *v;

	json_array_foreach(items, i, v)
		json_array_set_new(items, i, ce_public(v));
	if (json_array_size(items))
		json_object_set(out, "items", items);
	json_decref(items);
	if (next)
		json_object_set_new(out, "nextPageToken", json_string(next));
	json_object_set_new(out, "selfLink", json_string(self));
	free(next);
	free(id);
	free(self);
	return out;
}

/* ----------------------------------------------- zones, types, images */

static json_t *zone_json(const char *z)
{
	char *rg = ce_region_of(z), *rrel = xasprintf("regions/%s", rg);
	char *zrel = xasprintf("zones/%s", z), *ru = ce_url(rrel), *self = ce_url(zrel);
	unsigned long long id = 2000 + (unsigned long long)(strlen(z) * 131 + (unsigned char)z[0]);
	json_t *out = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b}", "kind", "compute#zone",
				"id", "", "name", z, "description", z, "status", "UP", "region",
				ru, "selfLink", self, "supportsPzs", 0);
	char idbuf[24];
	snprintf(idbuf, sizeof(idbuf), "%llu", id);
	json_object_set_new(out, "id", json_string(idbuf));
	free(rg);
	free(rrel);
	free(zrel);
	free(ru);
	free(self);
	return out;
}

static json_t *mtype_json(const struct ce_mtype *t, const char *zone)
{
	char *rel = xasprintf("zones/%s/machineTypes/%s", zone, t->name), *self = ce_url(rel);
	char *desc = xasprintf("%d vCPUs, %d GB RAM, %d TPU chip%s", t->cpus, t->memory_gb, t->chips,
			       t->chips > 1 ? "s" : "");
	json_t *out = json_pack(
		"{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:s, s:b, s:[{s:s, s:i}], s:s, s:s}", "kind",
		"compute#machineType", "id", "", "name", t->name, "description", desc, "guestCpus",
		t->cpus, "memoryMb", t->memory_gb * 1024, "imageSpaceGb", 0,
		"maximumPersistentDisks", 128, "maximumPersistentDisksSizeGb", "263168",
		"isSharedCpu", 0, "accelerators", "guestAcceleratorType", t->accel,
		"guestAcceleratorCount", t->chips, "zone", zone, "selfLink", self);
	char id[24];
	snprintf(id, sizeof(id), "%d", 90000 + t->cpus * 10 + t->chips);
	json_object_set_new(out, "id", json_string(id));
	free(rel);
	free(self);
	free(desc);
	return out;
}

static void zones_get(struct ce_req *q)
{
	if (q->nseg == 1) {
		json_t *items = json_array();
		for (size_t i = 0; i < N_ZONES; i++)
			json_array_append_new(items, zone_json(zones[i]));
		json_t *page;
		char *next;
		if (ce_page(q->r, items, &page, &next) == 0)
			fg_reply_json(q->r, 200, ce_list_json("compute#zoneList", "zones", page, next));
		return;
	}
	if (!ce_zone_ok(q->seg[1])) {
		char *rel = xasprintf("zones/%s", q->seg[1]);
		ce_not_found(q->r, rel);
		free(rel);
		return;
	}
	fg_reply_json(q->r, 200, zone_json(q->seg[1]));
}

static void region_get(struct ce_req *q)
{
	char *rel = xasprintf("regions/%s", q->seg[1]);
	if (!region_ok(q->seg[1])) {
		ce_not_found(q->r, rel);
	} else {
		char *self = ce_url(rel);
		fg_reply_json(q->r, 200, json_pack("{s:s, s:s, s:s, s:s}", "kind", "compute#region",
						   "name", q->seg[1], "status", "UP", "selfLink",
						   self));
		free(self);
	}
	free(rel);
}

static void machine_types(struct ce_req *q)
{
	const char *zone = q->seg[1];

	if (q->nseg == 3) {
		json_t *items = json_array();
		for (size_t i = 0; i < sizeof(mtypes) / sizeof(mtypes[0]); i++)
			if (ce_mtype_in_zone(&mtypes[i], zone))
				json_array_append_new(items, mtype_json(&mtypes[i], zone));
		struct ce_filter *f;
		if (ce_filter_parse(q->r, ce_arg(q->r, "filter"), &f) < 0) {
			json_decref(items);
			return;
		}
		json_t *kept = json_array(), *page, *v;
		size_t i;
		json_array_foreach(items, i, v)
			if (ce_filter_match(f, v))
				json_array_append(kept, v);
		json_decref(items);
		ce_filter_free(f);
		char *next, *rel = xasprintf("zones/%s/machineTypes", zone);
		if (ce_page(q->r, kept, &page, &next) == 0)
			fg_reply_json(q->r, 200, ce_list_json("compute#machineTypeList", rel, page,
							      next));
		free(rel);
		return;
	}
	const struct ce_mtype *t = ce_mtype(q->seg[3]);
	if (!t || !ce_mtype_in_zone(t, zone)) {
		char *rel = xasprintf("zones/%s/machineTypes/%s", zone, q->seg[3]);
		ce_not_found(q->r, rel);
		free(rel);
		return;
	}
	fg_reply_json(q->r, 200, mtype_json(t, zone));
}

/* GET projects/ubuntu-os-accelerator-images/global/images/{family/F | NAME} */
static void image_get(struct fg_req *r, char **seg, int nseg)
{
	const char *fam = nseg == 5 && !strcmp(seg[3], "family") ? seg[4] : NULL;
	const char *name = nseg == 4 ? seg[3] : NULL;

	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		char *img = xasprintf("%s-%s", families[i], IMAGE_DATE);
		if ((fam && !strcmp(fam, families[i])) || (name && !strcmp(name, img))) {
			char *self = xasprintf("%sprojects/%s/global/images/%s", ce.base, IMAGE_PROJECT,
					       img);
			fg_reply_json(r, 200, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
							"kind", "compute#image", "id",
							"7000000000000000001", "name", img, "family",
							families[i], "status", "READY", "diskSizeGb",
							"10", "architecture", "X86_64", "selfLink",
							self));
			free(self);
			free(img);
			return;
		}
		free(img);
	}
	ce_error(r, 404, "notFound", "The resource 'projects/%s/global/images/%s%s' was not found",
		 seg[0], fam ? "family/" : "", fam ? fam : nseg > 3 ? seg[3] : "");
}

int ce_image_ok(const char *url)
{
	const char *p = strstr(url, "projects/" IMAGE_PROJECT "/");
	if (!p || (p != url && p[-1] != '/'))
		return 0;
	p += strlen("projects/" IMAGE_PROJECT "/");
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		char *a = xasprintf("global/images/family/%s", families[i]);
		char *b = xasprintf("zones/-/imageFamilyViews/%s", families[i]);
		char *c = xasprintf("global/images/%s-%s", families[i], IMAGE_DATE);
		int ok = !strcmp(p, a) || !strcmp(p, b) || !strcmp(p, c);
		free(a);
		free(b);
		free(c);
		if (ok)
			return 1;
	}
	return 0;
}

/* ------------------------------------------------------ operations API */

static void op_wait(struct fg_req *r, const char *scope, const char *name)
{
	double until = fg_mono() + ce.wait_s;

	for (;;) {
		fg_lock();
		ce_tick();
		json_t *op = ce_map2(ce.ops, scope, name);
		if (!op) {
			char *rel = xasprintf("%s/operations/%s", scope, name);
			ce_not_found(r, rel);
			free(rel);
			fg_unlock();
			return;
		}
		const char *st = json_string_value(json_object_get(op, "status"));
		if (!strcmp(st, "DONE") || fg_mono() >= until) {
			ce_reply_op(r, op);
			fg_unlock();
			return;
		}
		fg_unlock();
		fg_sleep(0.02);
	}
}

static void operations(struct ce_req *q, const char *scope, int at)
{
	struct fg_req *r = q->r;
	int get = !strcmp(r->method, "GET");
	const char *name = q->nseg > at + 1 ? q->seg[at + 1] : NULL;

	if (!name && get) {
		static const char *const ok[] = { "filter", "maxResults", "pageToken", "orderBy",
						  "returnPartialSuccess", NULL };
		struct ce_filter *f;
		if (ce_check_query(r, ok) < 0 || ce_filter_parse(r, ce_arg(r, "filter"), &f) < 0)
			return;
		json_t *items = json_array(), *op, *page;
		const char *k;
		json_object_foreach(ce_scope(ce.ops, scope, 0), k, op)
			if (ce_filter_match(f, op))
				json_array_append(items, op);
		ce_filter_free(f);
		ce_sort(items);
		char *next, *rel = xasprintf("%s/operations", scope);
		if (ce_page(r, items, &page, &next) == 0)
			fg_reply_json(r, 200, ce_list_json("compute#operationList", rel, page, next));
		free(rel);
		return;
	}
	json_t *op = name ? ce_map2(ce.ops, scope, name) : NULL;
	if (name && q->nseg == at + 3 && !strcmp(q->seg[at + 2], "wait") &&
	    !strcmp(r->method, "POST")) {
		fg_unlock(); /* op_wait takes the lock in turns */
		op_wait(r, scope, name);
		fg_lock();
	} else if (!op || q->nseg != at + 2) {
		char *rel = xasprintf("%s/operations/%s", scope, name ? name : "");
		ce_not_found(r, rel);
		free(rel);
	} else if (get) {
		ce_reply_op(r, op);
	} else if (!strcmp(r->method, "DELETE")) {
		json_object_del(ce_scope(ce.ops, scope, 0), name);
		fg_reply_bytes(r, 204, "application/json; charset=UTF-8", "", 0);
	} else {
		ce_error(r, 405, "methodNotAllowed", "Method %s is not allowed here.", r->method);
	}
}

/* GET aggregated/operations: every scope's operations, keyed "zones/Z",
 * "regions/R" or "global" (OperationAggregatedList), with the same
 * filter and paging as the lists. A scope without any has a
 * NO_RESULTS_ON_PAGE warning only when it is a zone (ce_aggregate). */
static void operations_aggregated(struct ce_req *q)
{
	static const char *const ok[] = { "filter", "maxResults", "pageToken", "orderBy",
					  "returnPartialSuccess", "includeAllScopes",
					  "serviceProjectNumber", NULL };
	struct ce_items it = { 0 };
	struct ce_filter *f;
	const char *s, *n;
	json_t *scope, *op, *page, *v;
	char *next;
	size_t i;

	if (ce_check_query(q->r, ok) < 0 || ce_filter_parse(q->r, ce_arg(q->r, "filter"), &f) < 0)
		return;
	json_object_foreach(ce.ops, s, scope)
		json_object_foreach(scope, n, op)
			if (ce_filter_match(f, op))
				ce_items_add(&it, op, s, xasprintf("%s/%s", s, n));
	ce_filter_free(f);
	if (ce_items_page(q->r, &it, &page, &next) == 0) {
		/* ce_aggregate keys by zone: give it the zone's, keep the others */
		json_t *zonal = json_array(), *other = json_object();
		json_array_foreach(page, i, v) {
			const char *sc = json_string_value(json_object_get(v, "__zone"));
			if (!strncmp(sc, "zones/", 6)) {
				json_object_set_new(v, "__zone", json_string(sc + 6));
				json_array_append(zonal, v);
				continue;
			}
			json_t *l = ce_scope(other, sc, 1), *arr = ce_scope(l, "operations", 0);
			if (!arr) {
				arr = json_array();
				json_object_set_new(l, "operations", arr);
			}
			json_array_append_new(arr, ce_public(v));
		}
		json_decref(page);
		json_t *items = ce_aggregate(zonal, "operations");
		json_object_update(items, other);
		json_decref(other);
		fg_reply_json(q->r, 200, ce_aggregated_json(q->r, "compute#operationAggregatedList",
							    "aggregated/operations", items, next));
	}
	ce_items_free(&it);
}

/* ------------------------------------------------------------ routing */

static void autoscalers(struct ce_req *q)
{
	char *rel = xasprintf("zones/%s/autoscalers", q->seg[1]);
	fg_reply_json(q->r, 200, ce_list_json("compute#autoscalerList", rel, json_array(), NULL));
	free(rel);
}

/* Zone and region path segments must name ones served: 400 as Google
 * words it ("Unknown zone.", "Unknown region."). */
static int scope_ok(struct ce_req *q)
{
	if (q->nseg >= 3 && !strcmp(q->seg[0], "zones") && !ce_zone_ok(q->seg[1])) {
		ce_invalid(q->r, "zone", q->seg[1], "Unknown zone.");
		return 0;
	}
	if (q->nseg >= 3 && !strcmp(q->seg[0], "regions") && !region_ok(q->seg[1])) {
		ce_invalid(q->r, "region", q->seg[1], "Unknown region.");
		return 0;
	}
	return !(q->nseg >= 3 && !strcmp(q->seg[0], "zones") && ce_unreachable(q->r, q->seg[1]));
}

static void dispatch(struct ce_req *q)
{
	char **s = q->seg;
	int n = q->nseg, get = !strcmp(q->r->method, "GET");

	if (!scope_ok(q))
		return;
	if (!strcmp(s[0], "zones") && n <= 2 && get) {
		zones_get(q);
	} else if (!strcmp(s[0], "regions") && n == 2 && get) {
		region_get(q);
	} else if (!strcmp(s[0], "aggregated") && n == 2 && !strcmp(s[1], "instances") && get) {
		ce_instances_aggregated(q);
	} else if (!strcmp(s[0], "aggregated") && n == 2 && !strcmp(s[1], "operations") && get) {
		operations_aggregated(q);
	} else if (!strcmp(s[0], "aggregated") && n == 2 && !strcmp(s[1], "instanceGroupManagers") &&
		   get) {
		ce_migs_aggregated(q);
	} else if (n >= 3 && !strcmp(s[0], "zones") && !strcmp(s[2], "machineTypes") && n <= 4 &&
		   get) {
		machine_types(q);
	} else if (n >= 3 && !strcmp(s[0], "zones") && !strcmp(s[2], "instances")) {
		ce_instances(q);
	} else if (n >= 3 && !strcmp(s[0], "zones") && !strcmp(s[2], "instanceGroupManagers")) {
		ce_migs(q);
	} else if (n == 3 && !strcmp(s[0], "zones") && !strcmp(s[2], "instanceGroups") && get) {
		ce_instance_groups(q);
	} else if (n == 3 && !strcmp(s[0], "zones") && !strcmp(s[2], "autoscalers") && get) {
		autoscalers(q);
	} else if (n >= 2 && !strcmp(s[0], "global") && !strcmp(s[1], "instanceTemplates")) {
		ce_templates(q, "global");
	} else if (n >= 3 && !strcmp(s[0], "regions") && !strcmp(s[2], "instanceTemplates")) {
		char *scope = xasprintf("regions/%s", s[1]);
		ce_templates(q, scope);
		free(scope);
	} else if (n >= 3 && !strcmp(s[0], "regions") && !strcmp(s[2], "resourcePolicies")) {
		ce_policies(q, s[1]);
	} else if (n >= 2 && !strcmp(s[0], "global") && !strcmp(s[1], "operations")) {
		operations(q, "global", 1);
	} else if (n >= 3 && strcmp(s[0], "global") && !strcmp(s[2], "operations")) {
		char *scope = xasprintf("%s/%s", s[0], s[1]);
		operations(q, scope, 2);
		free(scope);
	} else {
		ce_error(q->r, 404, "notFound", "The requested URL /compute/v1/projects/%s/%s was not "
			 "found on this server (or is outside what fakegcp emulates).",
			 fg_opt.project, q->r->path + strlen(CE_PATH) + strlen(fg_opt.project) + 1);
	}
}

static void set_base(struct fg_req *r)
{
	const char *host = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Host");
	char *b = xasprintf("http://%s/compute/v1/", host ? host : "localhost");
	free(ce.base);
	ce.base = b;
}

/* The body as JSON; NULL after answering 400 (never for an empty body:
 * then *body stays NULL). */
static int parse_body(struct fg_req *r, json_t **body)
{
	json_error_t je;

	*body = NULL;
	if (!r->body.len)
		return 0;
	*body = json_loadb(r->body.buf, r->body.len, 0, &je);
	if (*body)
		return 0;
	ce_error(r, 400, "parseError", "Invalid JSON payload received. %s at line %d column %d.",
		 je.text, je.line, je.column);
	return -1;
}

static int split(struct ce_req *q, const char *rest)
{
	char *copy = xstrdup(rest), *save = NULL;

	for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
		if (q->nseg == (int)(sizeof(q->seg) / sizeof(q->seg[0]))) {
			free(copy);
			return -1;
		}
		q->seg[q->nseg++] = xstrdup(t);
	}
	free(copy);
	return 0;
}

static void serve(struct fg_req *r, const char *project, const char *rest)
{
	struct ce_req q = { .r = r };

	if (split(&q, rest) < 0 || q.nseg == 0) {
		ce_error(r, 404, "notFound", "The requested URL was not found on this server.");
	} else if (!strcmp(project, IMAGE_PROJECT)) {
		char *all[13] = { (char *)project };
		for (int i = 0; i < q.nseg; i++)
			all[i + 1] = q.seg[i];
		if (strcmp(r->method, "GET") || q.nseg < 3 || strcmp(q.seg[0], "global") ||
		    strcmp(q.seg[1], "images"))
			ce_error(r, 403, "forbidden", "Required 'compute.images.get' permission for "
				 "'projects/%s'", project);
		else
			image_get(r, all, q.nseg + 1);
	} else if (strcmp(project, fg_opt.project) && strcmp(project, fg_opt.project_number)) {
		ce_error(r, 403, "forbidden", "Permission denied on resource project %s.", project);
	} else if (parse_body(r, &q.body) == 0) {
		fg_lock();
		set_base(r);
		ce_tick();
		dispatch(&q);
		fg_unlock();
	}
	json_decref(q.body);
	for (int i = 0; i < q.nseg; i++)
		free(q.seg[i]);
}

/* --auth token: a bearer issued here (the TPU side's rule, fg_token.c),
 * refused in Compute's error body, ESF's status and reason added. */
static int auth(struct fg_req *r)
{
	const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
	const char *tok = h && !strncasecmp(h, "Bearer ", 7) ? h + 7 : ce_arg(r, "access_token");
	int ok;

	if (!fg_opt.auth_token)
		return 0;
	fg_lock();
	ok = tok && fg_token_valid(tok);
	fg_unlock();
	if (ok)
		return 0;
	const char *msg = !tok ? "Request is missing required authentication credential. "
				 "Expected OAuth 2 access token, login cookie or other valid "
				 "authentication credential. See https://developers.google.com/identity/"
				 "sign-in/web/devconsole-project."
			       : "Request had invalid authentication credentials. Expected OAuth 2 "
				 "access token, login cookie or other valid authentication credential. "
				 "See https://developers.google.com/identity/sign-in/web/"
				 "devconsole-project.";
	json_t *body = error_body(401, !tok ? "required" : "authError", msg);
	json_t *e = json_object_get(body, "error");
	json_t *e0 = json_array_get(json_object_get(e, "errors"), 0);
	json_object_set_new(e0, "message", json_string(!tok ? "Login Required." : "Invalid Credentials"));
	json_object_set_new(e0, "locationType", json_string("header"));
	json_object_set_new(e0, "location", json_string("Authorization"));
	json_object_set_new(e, "status", json_string("UNAUTHENTICATED"));
	fg_reply_json(r, 401, body);
	fg_reply_header(r, "WWW-Authenticate", "Bearer realm=\"https://accounts.google.com/\"");
	return -1;
}

int fg_compute_request(struct fg_req *r)
{
	const char *p = r->path;

	if (strncmp(p, CE_PATH, strlen(CE_PATH)))
		return 0;
	const char *project = p + strlen(CE_PATH);
	const char *slash = strchr(project, '/');
	if (!slash)
		return 0; /* projects.get: fg_account.c */
	char *proj = xstrndup(project, (size_t)(slash - project));
	if (!strcmp(proj, IMAGE_PROJECT)) {
		fg_lock();
		set_base(r);
		fg_unlock();
	}
	serve(r, proj, slash + 1);
	free(proj);
	return 1;
}

int fg_compute_serve(struct fg_req *r)
{
	const char *p = r->path;
	int batch = !strcmp(p, "/batch/compute/v1");

	if (!batch && (strncmp(p, CE_PATH, strlen(CE_PATH)) || !strchr(p + strlen(CE_PATH), '/')))
		return 0; /* not Compute, or projects.get (fg_account.c) */
	if (fg_opt.latency_ms > 0)
		fg_sleep(fg_opt.latency_ms / 1000.0);
	const char *kind = fg_fault_pick();
	if (kind && fg_fault_apply(r, kind))
		return 1;
	if (auth(r) < 0 || fg_user_project_check(r) < 0)
		return 1;
	return batch ? fg_compute_batch(r) : fg_compute_request(r);
}

int fg_compute_init(const char *schema, char *err, size_t errlen)
{
	ce.inst = json_object();
	ce.migs = json_object();
	ce.tmpl = json_object();
	ce.rp = json_object();
	ce.ops = json_object();
	ce.req_ids = json_object();
	ce.stockout = json_object();
	ce.quota = json_object();
	ce.flex_ok = json_object();
	ce.unreach = json_object();
	ce.active = json_object();
	ce.stage_s = fg_opt.compute_stage_s >= 0 ? fg_opt.compute_stage_s : fg_opt.op_seconds;
	ce.wait_s = fg_opt.compute_wait_s;
	ce.delete_s = fg_opt.delete_s >= 0 ? fg_opt.delete_s : fg_opt.op_seconds;
	return ce_schema_load(schema, err, errlen);
}

void fg_compute_free(void)
{
	json_decref(ce.inst);
	json_decref(ce.migs);
	json_decref(ce.tmpl);
	json_decref(ce.rp);
	json_decref(ce.ops);
	json_decref(ce.req_ids);
	json_decref(ce.stockout);
	json_decref(ce.quota);
	json_decref(ce.flex_ok);
	json_decref(ce.unreach);
	json_decref(ce.active);
	free(ce.base);
	ce_schema_free();
	memset(&ce, 0, sizeof(ce));
}
