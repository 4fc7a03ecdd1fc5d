/*
 * What each zone offers (`tpuform accelerators`, providers/gcp/gcp.h
 * tpf_gcp_offerings): Cloud TPU accelerator types and runtime versions,
 * and the Compute Engine TPU machine types, listed from the APIs.
 */
#include "model/compute.h"
#include "providers/gcp/gcp.h"
#include "providers/gcp/tpu/gcp_api.h"
#include "providers/gcp/gcp_client_internal.h"
#include "providers/gcp/gcp_oslogin.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* {"error": the first diagnostic's summary}; d is emptied. */
static json_t *error_of(struct tpf_diags *d)
{
	json_t *e = json_pack("{s:s}", "error", d->n ? d->items[0].summary : "unknown error");
	tpf_diags_release(d);
	tpf_diags_init(d);
	return e;
}

static json_t *strv_json(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(a, json_string(v[i]));
		free(v[i]);
	}
	free(v);
	return a;
}

/* The Cloud TPU API's offering in zone. */
static json_t *tpu_offering(struct tpf_gcp_client *c, const char *zone)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	char **types = NULL, **runtimes = NULL;
	size_t nt = 0, nr = 0;
	if (tpf_gcp_list_accelerator_types(c, zone, &types, &nt, &d) < 0 ||
	    tpf_gcp_list_runtime_versions(c, zone, &runtimes, &nr, &d) < 0) {
		json_decref(strv_json(types, nt));
		json_t *e = error_of(&d);
		tpf_diags_release(&d);
		return e;
	}
	tpf_diags_release(&d);
	return json_pack("{s:o,s:o}", "accelerator_types", strv_json(types, nt), "runtime_versions",
			 strv_json(runtimes, nr));
}

/* A machineTypes item: appended to the array when tpuform knows it. */
static int each_machine_type(json_t *it, void *arg)
{
	const char *name = json_string_value(json_object_get(it, "name"));
	const struct tpf_machine_type *mt = name ? tpf_machine_type_lookup(name, NULL) : NULL;
	if (mt)
		json_array_append_new(arg, json_pack("{s:s,s:i,s:s,s:s,s:s}", "name", mt->name, "chips",
						     mt->chips, "generation", mt->generation,
						     "topology", mt->own, "image_family",
						     mt->image_family));
	return 0;
}

/* Compute Engine's TPU machine types in zone (machineTypes.list). */
static json_t *compute_offering(struct tpf_gcp_client *c, const char *zone)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *base = NULL;
	if (tpf_gcp_service_endpoint("TPUFORM_COMPUTE_ENDPOINT", TPF_GCP_DEFAULT_COMPUTE_ENDPOINT,
				     "Compute Engine endpoint", &base, &d) < 0)
		return error_of(&d);
	char *p = tpf_gcp_escape(tpf_gcp_client_project(c));
	char *z = tpf_gcp_escape(zone);
	char *url = xasprintf("%s/compute/v1/projects/%s/zones/%s/machineTypes", base, p, z);
	char *what = xasprintf("list machine types in zone '%s'", zone);
	json_t *types = json_array();
	json_t *out = tpf_gcp_list_all(c, url, "items", "nextPageToken,items/name", what,
					       each_machine_type, types, &d) < 0
			      ? error_of(&d)
			      : json_pack("{s:O}", "machine_types", types);
	json_decref(types);
	tpf_diags_release(&d);
	free(what);
	free(url);
	free(z);
	free(p);
	free(base);
	return out;
}

int tpf_gcp_offerings(const struct tpf_fleet *f, const char *zone, json_t **out,
		      struct tpf_diags *d)
{
	*out = NULL;
	size_t nz = 0;
	const char **zones = zone ? NULL : tpf_fleet_zones(f, &nz);
	if (zone)
		nz = 1;
	if (!nz) {
		free(zones);
		return tpf_errorx(d, NULL, "Name one with -zone ZONE.",
				  "the fleet file names no zone to list");
	}
	struct tpf_gcp_client *c = NULL;
	if (tpf_gcp_client_open_fleet(&c, f, d) < 0) {
		free(zones);
		return TPF_ERROR;
	}
	json_t *list = json_array();
	for (size_t i = 0; i < nz; i++) {
		const char *z = zone ? zone : zones[i];
		json_array_append_new(list, json_pack("{s:s,s:o,s:o}", "zone", z, "tpu",
						      tpu_offering(c, z), "compute",
						      compute_offering(c, z)));
	}
	*out = json_pack("{s:o}", "zones", list);
	tpf_gcp_client_free(c);
	free(zones);
	return 0;
}
