/*
 * Compute Engine Instance JSON, both ways (providers/gcp/compute/compute_engine.h):
 * the instances.insert body of a recipe, and an Instance as a live node.
 * Field names: the Compute Engine v1 reference, Instance, AttachedDisk,
 * NetworkInterface, Scheduling, ReservationAffinity, ServiceAccount,
 * Metadata, ShieldedInstanceConfig, Tags
 * (https://cloud.google.com/compute/docs/reference/rest/v1/instances);
 * values as gcloud 528 sends them (docs/compute-engine.md "The instance
 * body").
 */
#include "providers/gcp/compute/compute_engine.h"
#include "providers/gcp/gcp_fields.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "Only the https://www.googleapis.com/auth/cloud-platform scope": every
 * Google TPU-on-Compute sample, and the reference section 2.2. */
#define CLOUD_PLATFORM "https://www.googleapis.com/auth/cloud-platform"
#define RESERVATION_KEY "compute.googleapis.com/reservation-name"

char *tpf_compute_region(const char *zone)
{
	const char *dash = zone ? strrchr(zone, '-') : NULL;
	return dash ? xstrndup(zone, (size_t)(dash - zone)) : xstrdup(zone ? zone : "");
}

/* A partial URL: s as given when it is a path, else prefix + s. */
static json_t *path_or(const char *prefix, const char *s)
{
	if (strchr(s, '/'))
		return json_string(s);
	char *p = xasprintf("%s%s", prefix, s);
	json_t *j = json_string(p);
	free(p);
	return j;
}

static json_t *seconds(long s)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%ld", s); /* int64 fields are JSON strings */
	return json_pack("{s:s}", "seconds", buf);
}

static json_t *disks_json(const struct tpf_recipe *r)
{
	const struct tpf_compute *c = &r->compute;
	json_t *a = json_array(), *init = json_object();
	if (c->image)
		json_object_set_new(init, "sourceImage", json_string(c->image));
	if (c->disk_size_gb > 0) {
		char gb[16];
		snprintf(gb, sizeof(gb), "%d", c->disk_size_gb);
		json_object_set_new(init, "diskSizeGb", json_string(gb));
	}
	if (c->disk_type) {
		char *t = xasprintf("zones/%s/diskTypes/%s", r->zone, c->disk_type);
		json_object_set_new(init, "diskType", json_string(t));
		free(t);
	}
	json_array_append_new(a, json_pack("{s:b, s:b, s:s, s:s, s:o}", "boot", 1, "autoDelete", 1,
					   "type", "PERSISTENT", "mode", "READ_WRITE",
					   "initializeParams", init));
	for (size_t i = 0; i < r->node.ndisks; i++)
		json_array_append_new(a, json_pack("{s:s, s:s, s:b}", "source",
						   r->node.disks[i].source_disk, "mode",
						   r->node.disks[i].mode ? r->node.disks[i].mode
									 : "READ_WRITE",
						   "autoDelete", 0));
	return a;
}

static json_t *network_json(const struct tpf_recipe *r, int external_ips)
{
	const struct tpf_node_fields *nf = &r->node;
	json_t *ni = json_object();
	json_object_set_new(ni, "network", path_or("global/networks/", nf->network ? nf->network
										   : "default"));
	if (nf->subnetwork) {
		char *region = tpf_compute_region(r->zone);
		char *prefix = xasprintf("regions/%s/subnetworks/", region);
		json_object_set_new(ni, "subnetwork", path_or(prefix, nf->subnetwork));
		free(prefix);
		free(region);
	}
	if (nf->enable_external_ips != TPF_TRI_UNSET)
		external_ips = nf->enable_external_ips == TPF_TRI_TRUE;
	if (external_ips) /* gcloud's default access config; none: --no-address */
		json_object_set_new(ni, "accessConfigs",
				    json_pack("[{s:s, s:s}]", "type", "ONE_TO_ONE_NAT", "name",
					      "external-nat"));
	return json_pack("[o]", ni);
}

/* Scheduling and reservationAffinity (reference sections 3.1, 3.2). */
static void scheduling_json(const struct tpf_recipe *r, json_t *b)
{
	const struct tpf_compute *c = &r->compute;
	json_t *s = json_object();
	json_object_set_new(s, "onHostMaintenance", json_string("TERMINATE"));
	if (r->spot) {
		json_object_set_new(s, "provisioningModel", json_string("SPOT"));
		json_object_set_new(s, "preemptible", json_true());
		json_object_set_new(s, "automaticRestart", json_false());
		json_object_set_new(s, "instanceTerminationAction",
				    json_string(c->termination_action ? c->termination_action
								      : "DELETE"));
	} else if (c->flex_start) {
		json_object_set_new(s, "provisioningModel", json_string("FLEX_START"));
		json_object_set_new(s, "automaticRestart", json_false());
		json_object_set_new(s, "instanceTerminationAction", json_string("DELETE"));
	} else {
		json_object_set_new(s, "provisioningModel", json_string("STANDARD"));
		json_object_set_new(s, "automaticRestart", json_true());
	}
	if (c->max_run_duration > 0)
		json_object_set_new(s, "maxRunDuration", seconds(c->max_run_duration));
	json_object_set_new(b, "scheduling", s);
	if (c->flex_start)
		json_object_set_new(b, "reservationAffinity",
				    json_pack("{s:s}", "consumeReservationType", "NO_RESERVATION"));
	else if (r->node.reservation)
		json_object_set_new(b, "reservationAffinity",
				    json_pack("{s:s, s:s, s:[s]}", "consumeReservationType",
					      "SPECIFIC_RESERVATION", "key", RESERVATION_KEY,
					      "values", r->node.reservation));
}

static json_t *metadata_json(json_t *metadata)
{
	json_t *items = json_array(), *v;
	const char *k;
	json_object_foreach(metadata, k, v) {
		if (json_is_string(v) && strcmp(k, "enable-guest-attributes"))
			json_array_append_new(items, json_pack("{s:s, s:O}", "key", k, "value", v));
	}
	/* Host keys are published as guest attributes only with this
	 * (reference section 7; gcp_access.c pins them). */
	json_array_append_new(items, json_pack("{s:s, s:s}", "key", "enable-guest-attributes",
					       "value", "TRUE"));
	return json_pack("{s:o}", "items", items);
}

static json_t *strv(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

json_t *tpf_compute_instance_body(const char *name, const struct tpf_recipe *r, json_t *metadata,
				  int external_ips)
{
	const struct tpf_node_fields *nf = &r->node;
	json_t *b = json_object();
	json_object_set_new(b, "name", json_string(name));
	char *mt = xasprintf("zones/%s/machineTypes/%s", r->zone, r->compute.machine_type);
	json_object_set_new(b, "machineType", json_string(mt));
	free(mt);
	json_object_set_new(b, "disks", disks_json(r));
	json_object_set_new(b, "networkInterfaces", network_json(r, external_ips));
	if (nf->can_ip_forward != TPF_TRI_UNSET)
		json_object_set_new(b, "canIpForward", json_boolean(nf->can_ip_forward == TPF_TRI_TRUE));
	scheduling_json(r, b);
	json_t *scopes = nf->nsa_scopes ? strv(nf->sa_scopes, nf->nsa_scopes)
					: json_pack("[s]", CLOUD_PLATFORM);
	json_object_set_new(b, "serviceAccounts",
			    json_pack("[{s:s, s:o}]", "email", nf->sa_email ? nf->sa_email : "default",
				      "scopes", scopes));
	json_t *labels = json_object();
	for (size_t i = 0; i < r->labels.n; i++)
		json_object_set_new(labels, r->labels.items[i].key,
				    json_string(r->labels.items[i].value));
	json_object_set_new(b, "labels", labels);
	json_object_set_new(b, "metadata", metadata_json(metadata));
	if (nf->secure_boot != TPF_TRI_UNSET)
		json_object_set_new(b, "shieldedInstanceConfig",
				    json_pack("{s:b}", "enableSecureBoot",
					      nf->secure_boot == TPF_TRI_TRUE));
	if (nf->ntags)
		json_object_set_new(b, "tags", json_pack("{s:o}", "items", strv(nf->tags, nf->ntags)));
	return b;
}

const char *tpf_compute_state(const char *status, int preempted)
{
	static const struct {
		const char *status, *state, *spot_state;
	} map[] = {
		{ "PENDING", "CREATING", "CREATING" },
		{ "PROVISIONING", "CREATING", "CREATING" },
		{ "STAGING", "CREATING", "CREATING" },
		{ "RUNNING", "READY", "READY" },
		{ "REPAIRING", "REPAIRING", "REPAIRING" },
		{ "DEPROVISIONING", "DELETING", "DELETING" },
		{ "STOPPING", "STOPPING", "PREEMPTED" },
		{ "PENDING_STOP", "STOPPING", "PREEMPTED" },
		{ "SUSPENDING", "STOPPING", "PREEMPTED" },
		{ "STOPPED", "STOPPED", "PREEMPTED" },
		{ "SUSPENDED", "STOPPED", "PREEMPTED" },
		{ "TERMINATED", "TERMINATED", "PREEMPTED" },
	};
	for (size_t i = 0; status && i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i].status, status))
			return preempted ? map[i].spot_state : map[i].state;
	return status && *status ? status : "STATE_UNSPECIFIED";
}

static char *str_of(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v && *v ? xstrdup(v) : NULL;
}

static char *last_of(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v && *v ? xstrdup(tpf_gcp_last_segment(v)) : NULL;
}

/* The node fields an Instance reports (model/node_fields.h). */
static void fields_parse(json_t *inst, struct tpf_node_fields *nf)
{
	json_t *ni = json_array_get(json_object_get(inst, "networkInterfaces"), 0), *v;
	json_t *sa = json_array_get(json_object_get(inst, "serviceAccounts"), 0);
	json_t *tags = json_object_get(json_object_get(inst, "tags"), "items");
	json_t *ra = json_object_get(inst, "reservationAffinity");
	size_t i;
	nf->network = last_of(ni, "network");
	nf->subnetwork = last_of(ni, "subnetwork");
	nf->enable_external_ips = TPF_TRI(json_array_size(json_object_get(ni, "accessConfigs")) > 0);
	nf->can_ip_forward = TPF_TRI(json_is_true(json_object_get(inst, "canIpForward")));
	if (json_array_size(tags))
		nf->tags = xcalloc(json_array_size(tags), sizeof(*nf->tags));
	json_array_foreach(tags, i, v)
		if (json_is_string(v))
			nf->tags[nf->ntags++] = xstrdup(json_string_value(v));
	nf->sa_email = str_of(sa, "email");
	json_t *scopes = json_object_get(sa, "scopes");
	if (json_array_size(scopes))
		nf->sa_scopes = xcalloc(json_array_size(scopes), sizeof(*nf->sa_scopes));
	json_array_foreach(scopes, i, v)
		if (json_is_string(v))
			nf->sa_scopes[nf->nsa_scopes++] = xstrdup(json_string_value(v));
	json_array_foreach(json_object_get(json_object_get(inst, "metadata"), "items"), i, v) {
		const char *k = json_string_value(json_object_get(v, "key"));
		const char *val = json_string_value(json_object_get(v, "value"));
		if (k && val && strcmp(k, "enable-guest-attributes")) /* tpuform's own */
			tpf_kvlist_set(&nf->metadata, k, val);
	}
	json_t *sic = json_object_get(inst, "shieldedInstanceConfig");
	if (sic)
		nf->secure_boot = TPF_TRI(json_is_true(json_object_get(sic, "enableSecureBoot")));
	const char *rt = json_string_value(json_object_get(ra, "consumeReservationType"));
	if (rt && !strcmp(rt, "SPECIFIC_RESERVATION"))
		nf->reservation = xstrdup(json_string_value(json_array_get(json_object_get(ra, "values"),
									 0)));
}

static void scheduling_parse(json_t *inst, struct tpf_recipe *r)
{
	json_t *s = json_object_get(inst, "scheduling");
	const char *model = json_string_value(json_object_get(s, "provisioningModel"));
	r->spot = (model && !strcmp(model, "SPOT")) ||
		  (!model && json_is_true(json_object_get(s, "preemptible")));
	r->compute.flex_start = model && !strcmp(model, "FLEX_START");
	if (r->spot)
		r->compute.termination_action = str_of(s, "instanceTerminationAction");
	const char *secs = json_string_value(json_object_get(json_object_get(s, "maxRunDuration"),
							     "seconds"));
	json_t *isecs = json_object_get(json_object_get(s, "maxRunDuration"), "seconds");
	r->compute.max_run_duration = secs ? strtol(secs, NULL, 10)
				      : json_is_integer(isecs) ? (long)json_integer_value(isecs) : 0;
}

int tpf_compute_instance_parse(json_t *inst, const char *zone, int ssh_port,
			       struct tpf_live_node *out)
{
	tpf_live_node_release(out);
	const char *name = json_string_value(json_object_get(inst, "name"));
	if (!json_is_object(inst) || !name || !*name)
		return -1;
	struct tpf_recipe *r = &out->recipe;
	out->name = xstrdup(name);
	out->id = str_of(inst, "id");
	out->create_time = str_of(inst, "creationTimestamp");
	tpf_gcp_maintenance_parse(json_object_get(json_object_get(inst, "resourceStatus"),
						  "upcomingMaintenance"),
				  out);
	r->zone = last_of(inst, "zone");
	if (!r->zone)
		r->zone = xstrdup(zone);
	r->compute.api = TPF_API_COMPUTE;
	r->compute.machine_type = last_of(inst, "machineType");
	scheduling_parse(inst, r);
	const char *status = json_string_value(json_object_get(inst, "status"));
	/* PREEMPTED only when a compute.instances.preempted operation says
	 * so (tpf_compute_mark_preempted), not because the VM is spot. */
	out->state = xstrdup(tpf_compute_state(status, 0));
	/* A FLEX_START VM waits PENDING until its capacity comes
	 * (docs/compute-engine.md section 3, "Flex-start"). */
	out->capacity_wait = r->compute.flex_start && status && !strcmp(status, "PENDING");
	fields_parse(inst, &r->node);
	const struct tpf_machine_type *mt = tpf_machine_type_lookup(r->compute.machine_type, NULL);
	r->node.topology = mt ? xstrdup(mt->own) : NULL;
	const char *k;
	json_t *v, *ni = json_array_get(json_object_get(inst, "networkInterfaces"), 0);
	json_object_foreach(json_object_get(inst, "labels"), k, v)
		if (json_is_string(v))
			tpf_kvlist_set(&r->labels, k, json_string_value(v));
	r->workers = 1;
	out->endpoints = xcalloc(1, sizeof(*out->endpoints));
	out->nendpoints = 1;
	out->endpoints[0].ip = str_of(ni, "networkIP");
	out->endpoints[0].external_ip =
		str_of(json_array_get(json_object_get(ni, "accessConfigs"), 0), "natIP");
	out->endpoints[0].port = ssh_port;
	return 0;
}
