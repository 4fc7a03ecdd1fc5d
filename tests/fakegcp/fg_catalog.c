/*
 * What every zone offers: a fixed table of accelerator types and runtime
 * versions (tests/fakegcp/README.md), the worker count and topology of a
 * type (docs/cloud-tpu-api.md section 9), and the locations list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

static const char *const base_types[] = {
	"v2-8", "v3-8", "v4-8", "v4-16", "v4-32", "v5litepod-8", "v5litepod-16", "v6e-8",
};
static const char *const runtimes[] = {
	"tpu-ubuntu2204-base", "tpu-vm-base", "v2-alpha-tpuv5-lite", "v2-alpha-tpuv6e",
};
static const char *const default_zones[] = {
	"europe-west4-a", "us-central1-a", "us-central1-b", "us-central1-f",
	"us-central2-b", "us-east1-d", "us-east5-a",
};

static char **extra_types;
static size_t n_extra, a_extra;
static char **zones;
static size_t n_zones, a_zones;

struct family {
	const char *prefix;
	const char *config;
	int per_chip;  /* the name counts cores (2 per chip) or chips (1) */
	int dims;      /* topology dimensions */
};

static const struct family families[] = {
	{ "v2-", "V2", 2, 2 },
	{ "v3-", "V3", 2, 2 },
	{ "v4-", "V4", 2, 3 },
	{ "v5p-", "V5P", 2, 3 },
	{ "v5litepod-", "V5LITE_POD", 1, 2 },
	{ "v6e-", "V6E", 1, 2 },
};

static int is_pow2(long n)
{
	return n > 0 && !(n & (n - 1));
}

static const struct family *parse_type(const char *type, long *n)
{
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		size_t len = strlen(families[i].prefix);
		char *end;

		if (strncmp(type, families[i].prefix, len))
			continue;
		*n = strtol(type + len, &end, 10);
		if (end == type + len || *end || *n <= 0)
			return NULL;
		if (families[i].per_chip == 2 ? (*n % 8 || !is_pow2(*n / 8)) : (!is_pow2(*n) || *n == 2))
			return NULL;
		return &families[i];
	}
	return NULL;
}

int fg_type_workers(const char *type)
{
	long n;
	const struct family *f = parse_type(type, &n);

	if (!f)
		return 0;
	if (f->per_chip == 2)
		return n / 8 > 1 ? (int)(n / 8) : 1;
	return n <= 8 ? 1 : (int)(n / 4);
}

static int ilog2(long n)
{
	int k = 0;

	while (n > 1) {
		n >>= 1;
		k++;
	}
	return k;
}

json_t *fg_type_config(const char *type)
{
	long n;
	const struct family *f = parse_type(type, &n);
	char topo[48];

	if (!f)
		return NULL;
	long chips = n / f->per_chip;
	if (f->dims == 2) {
		long a = 1L << (ilog2(chips) / 2);
		snprintf(topo, sizeof(topo), "%ldx%ld", a, chips / a);
	} else {
		/* 2x2x1, 2x2x2, 2x2x4, 2x4x4, 4x4x4, 4x4x8, ... as in the docs. */
		long d[3] = { 1, 1, 1 };
		long c = chips;
		if (c >= 4) {
			d[0] = d[1] = 2;
			c /= 4;
		}
		while (c > 1) {
			int k = 2;
			for (int j = 2; j >= 0; j--)
				if (d[j] < d[k])
					k = j;
			d[k] *= 2;
			c /= 2;
		}
		snprintf(topo, sizeof(topo), "%ldx%ldx%ld", d[0], d[1], d[2]);
	}
	return json_pack("{s:s, s:s}", "type", f->config, "topology", topo);
}

char *fg_type_from_config(json_t *cfg)
{
	const char *type = json_string_value(json_object_get(cfg, "type"));
	const char *topo = json_string_value(json_object_get(cfg, "topology"));
	long chips = 1;

	if (!type || !topo)
		return NULL;
	for (const char *p = topo; *p;) {
		char *end;
		long d = strtol(p, &end, 10);
		if (end == p || d <= 0)
			return NULL;
		chips *= d;
		p = *end == 'x' ? end + 1 : end;
		if (*end && *end != 'x')
			return NULL;
	}
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		if (strcmp(families[i].config, type))
			continue;
		char *name = xasprintf("%s%ld", families[i].prefix, chips * families[i].per_chip);
		json_t *back = fg_type_config(name);
		int same = back && json_equal(json_object_get(back, "topology"),
					      json_object_get(cfg, "topology"));
		json_decref(back);
		if (same)
			return name;
		free(name);
		return NULL;
	}
	return NULL;
}

int fg_type_offered(const char *zone, const char *type)
{
	for (size_t i = 0; i < sizeof(base_types) / sizeof(base_types[0]); i++)
		if (!strcmp(base_types[i], type))
			return 1;
	for (size_t i = 0; i < n_extra; i++)
		if (!strcmp(extra_types[i], type))
			return 1;
	return 0;
}

void fg_catalog_add_type(const char *type)
{
	XGROW(extra_types, n_extra + 1, a_extra);
	extra_types[n_extra++] = xstrdup(type);
}

void fg_zone_seen(const char *zone)
{
	for (size_t i = 0; i < n_zones; i++)
		if (!strcmp(zones[i], zone))
			return;
	XGROW(zones, n_zones + 1, a_zones);
	zones[n_zones++] = xstrdup(zone);
}

void fg_catalog_free(void)
{
	for (size_t i = 0; i < n_extra; i++)
		free(extra_types[i]);
	free(extra_types);
	for (size_t i = 0; i < n_zones; i++)
		free(zones[i]);
	free(zones);
	extra_types = zones = NULL;
	n_extra = a_extra = n_zones = a_zones = 0;
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * One page of `names` (sorted) as an array under `key`, each item built by
 * make(parent, name). Empty lists are answered as {} (proto3 JSON omits
 * empty repeated fields, and so does the real API).
 */
static void list_page(struct fg_req *r, const char *parent, const char **names, size_t n,
		      const char *key, json_t *(*make)(const char *, const char *))
{
	int size;
	char *after = NULL;
	json_t *out = json_object(), *arr = json_array();
	size_t i = 0;

	if (fg_page_params(r, &size, &after) < 0) {
		json_decref(out);
		json_decref(arr);
		return;
	}
	qsort(names, n, sizeof(*names), by_string);
	if (after)
		while (i < n && strcmp(names[i], after) <= 0)
			i++;
	for (; i < n && json_array_size(arr) < (size_t)size; i++)
		json_array_append_new(arr, make(parent, names[i]));
	if (json_array_size(arr))
		json_object_set(out, key, arr);
	if (i < n) {
		char *tok = fg_page_token(names[i - 1]);
		json_object_set_new(out, "nextPageToken", json_string(tok));
		free(tok);
	}
	json_decref(arr);
	free(after);
	fg_reply_json(r, 200, out);
}

static json_t *accel_json(const char *parent, const char *type)
{
	json_t *cfg = fg_type_config(type);

	return json_pack("{s:s++, s:s, s:[o]}", "name", parent, "/acceleratorTypes/", type,
			 "type", type, "acceleratorConfigs", cfg ? cfg : json_object());
}

static json_t *runtime_json(const char *parent, const char *version)
{
	return json_pack("{s:s++, s:s}", "name", parent, "/runtimeVersions/", version,
			 "version", version);
}

static char *parent_of(struct fg_match *mt)
{
	return xasprintf("projects/%s/locations/%s", fg_match_var(mt, "projectsId"),
			 fg_match_var(mt, "locationsId"));
}

void fg_accel_list(struct fg_req *r, struct fg_match *mt)
{
	size_t nb = sizeof(base_types) / sizeof(base_types[0]), n = 0;
	const char **names = xcalloc(nb + n_extra + 1, sizeof(*names));
	char *parent = parent_of(mt);

	for (size_t i = 0; i < nb; i++)
		names[n++] = base_types[i];
	for (size_t i = 0; i < n_extra; i++)
		names[n++] = extra_types[i];
	list_page(r, parent, names, n, "acceleratorTypes", accel_json);
	free(names);
	free(parent);
}

void fg_accel_get(struct fg_req *r, struct fg_match *mt)
{
	const char *type = fg_match_var(mt, "acceleratorTypesId");
	char *parent = parent_of(mt);

	if (fg_type_offered(fg_match_var(mt, "locationsId"), type)) {
		fg_reply_json(r, 200, accel_json(parent, type));
	} else {
		char *name = xasprintf("%s/acceleratorTypes/%s", parent, type);
		fg_reply_error(r, 404, "NOT_FOUND", json_pack("[o]", fg_resource_info(name)),
			       "Resource '%s' was not found", name);
		free(name);
	}
	free(parent);
}

void fg_runtime_list(struct fg_req *r, struct fg_match *mt)
{
	size_t n = sizeof(runtimes) / sizeof(runtimes[0]);
	const char **names = xcalloc(n, sizeof(*names));
	char *parent = parent_of(mt);

	for (size_t i = 0; i < n; i++)
		names[i] = runtimes[i];
	list_page(r, parent, names, n, "runtimeVersions", runtime_json);
	free(names);
	free(parent);
}

void fg_runtime_get(struct fg_req *r, struct fg_match *mt)
{
	const char *v = fg_match_var(mt, "runtimeVersionsId");
	char *parent = parent_of(mt);

	for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++) {
		if (!strcmp(runtimes[i], v)) {
			fg_reply_json(r, 200, runtime_json(parent, v));
			free(parent);
			return;
		}
	}
	char *name = xasprintf("%s/runtimeVersions/%s", parent, v);
	fg_reply_error(r, 404, "NOT_FOUND", json_pack("[o]", fg_resource_info(name)),
		       "Resource '%s' was not found", name);
	free(name);
	free(parent);
}

static json_t *location_json(const char *parent, const char *zone)
{
	return json_pack("{s:s++, s:s}", "name", parent, "/locations/", zone, "locationId", zone);
}

void fg_locations_list(struct fg_req *r, struct fg_match *mt)
{
	size_t nd = sizeof(default_zones) / sizeof(default_zones[0]), n = 0;
	const char **names = xcalloc(nd + n_zones + 1, sizeof(*names));
	char *parent = xasprintf("projects/%s", fg_match_var(mt, "projectsId"));

	fg_lock();
	for (size_t i = 0; i < nd; i++)
		names[n++] = default_zones[i];
	for (size_t i = 0; i < n_zones; i++) {
		size_t j;
		for (j = 0; j < nd && strcmp(default_zones[j], zones[i]); j++)
			;
		if (j == nd)
			names[n++] = zones[i];
	}
	list_page(r, parent, names, n, "locations", location_json);
	fg_unlock();
	free(names);
	free(parent);
}

void fg_locations_get(struct fg_req *r, struct fg_match *mt)
{
	char *parent = xasprintf("projects/%s", fg_match_var(mt, "projectsId"));

	fg_reply_json(r, 200, location_json(parent, fg_match_var(mt, "locationsId")));
	free(parent);
}
