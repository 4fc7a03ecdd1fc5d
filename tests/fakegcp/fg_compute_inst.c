/*
 * Compute instances: insert (requestId), get, list, aggregatedList,
 * delete, setMetadata, setLabels, getGuestAttributes; the checks an
 * instance body (or a template's properties) must pass; the status
 * lifecycle; capacity (stockout, quota, flex-start waits) and preemption.
 *
 * Lifecycle (docs/compute-engine.md section 5): a TPU instance starts
 * PENDING ("TPU instances start instead in the PENDING state", instance
 * lifecycle doc), then PROVISIONING, STAGING, RUNNING, one
 * --compute-stage-seconds each. The insert operation is DONE after
 * --op-seconds, before the instance is RUNNING: a client must wait for
 * RUNNING itself. A FLEX_START instance stays PENDING, its insert
 * operation RUNNING, until the zone is granted capacity (admin) or
 * params.requestValidForDuration passes (then the operation fails with
 * ZONE_RESOURCE_POOL_EXHAUSTED and the instance goes). Delete: STOPPING,
 * gone after --op-seconds. Preemption (admin, SPOT only): a DONE zone
 * operation compute.instances.preempted, STOPPING, then TERMINATED (STOP)
 * or gone (DELETE) one stage later.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tests/fakegcp/fg_compute.h"
#include "util/xalloc.h"

#define NAME_RE "(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)"
#define TPU_MAX_RUN 604800 /* 7 days: flex-start's maxRunDuration */

static const char *sget(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

int ce_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 63 || !islower((unsigned char)s[0]) || s[n - 1] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-')
			return 0;
	return 1;
}

int ce_is_flex(json_t *props)
{
	const char *pm = sget(json_object_get(props, "scheduling"), "provisioningModel");
	return pm && !strcmp(pm, "FLEX_START");
}

/* ------------------------------------------------------------- checks */

static int bad(struct fg_req *r, const char *at, const char *field, const char *value,
	       const char *why)
{
	char *f = xasprintf("%s.%s", at, field);
	ce_invalid(r, f, value, why);
	free(f);
	return -1;
}

static int required(struct fg_req *r, const char *at, const char *field)
{
	ce_error(r, 400, "required", "Required field '%s.%s' not specified", at, field);
	return -1;
}

int ce_check_labels(struct fg_req *r, json_t *labels, const char *at)
{
	const char *k;
	json_t *v;

	if (json_object_size(labels) > 64)
		return bad(r, at, "labels", "", "A resource can have at most 64 labels.");
	json_object_foreach(labels, k, v) {
		const char *val = json_string_value(v);
		int ok = islower((unsigned char)k[0]) && strlen(k) <= 63;
		for (const char *p = k; ok && *p; p++)
			ok = islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_' ||
			     *p == '-';
		for (const char *p = val ? val : ""; ok && *p; p++)
			ok = islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_' ||
			     *p == '-';
		if (!ok || !val || strlen(val) > 63)
			return bad(r, at, "labels", k, "Label keys must start with a lowercase letter "
				   "and, like values, contain at most 63 lowercase letters, digits, "
				   "'_' and '-'.");
	}
	return 0;
}

int ce_check_metadata(struct fg_req *r, json_t *md, const char *at)
{
	json_t *seen = json_object(), *it;
	size_t i;
	int rc = 0;

	json_array_foreach(json_object_get(md, "items"), i, it) {
		const char *k = sget(it, "key"), *v = sget(it, "value");
		size_t n = k ? strlen(k) : 0;
		int ok = n > 0 && n <= 128;
		for (size_t j = 0; ok && j < n; j++)
			ok = isalnum((unsigned char)k[j]) || k[j] == '-' || k[j] == '_';
		char *f = xasprintf("metadata.items[%zu].key", i);
		if (!ok)
			rc = bad(r, at, f, k ? k : "", "Must be a match of regex '[a-zA-Z0-9-_]{1,128}'");
		else if (json_object_get(seen, k))
			rc = bad(r, at, f, k, "Duplicate keys are not allowed.");
		else if (v && strlen(v) > 262144)
			rc = bad(r, at, f, k, "Metadata values are limited to 256 KiB.");
		free(f);
		if (rc)
			break;
		json_object_set_new(seen, k, json_true());
	}
	json_decref(seen);
	return rc;
}

static int check_reservation(struct fg_req *r, json_t *b, const char *at)
{
	json_t *ra = json_object_get(b, "reservationAffinity");
	const char *t = sget(ra, "consumeReservationType");
	const char *pm = sget(json_object_get(b, "scheduling"), "provisioningModel");

	if (pm && !strcmp(pm, "FLEX_START") && (!t || strcmp(t, "NO_RESERVATION")))
		return bad(r, at, "reservationAffinity.consumeReservationType", t ? t : "",
			   "Flex-start VMs must not consume reservations: use NO_RESERVATION.");
	if (pm && !strcmp(pm, "RESERVATION_BOUND") && (!t || strcmp(t, "SPECIFIC_RESERVATION")))
		return bad(r, at, "reservationAffinity.consumeReservationType", t ? t : "",
			   "RESERVATION_BOUND needs a specific reservation.");
	if (t && !strcmp(t, "SPECIFIC_RESERVATION") &&
	    (!sget(ra, "key") || strcmp(sget(ra, "key"), "compute.googleapis.com/reservation-name") ||
	     !json_array_size(json_object_get(ra, "values"))))
		return bad(r, at, "reservationAffinity", t, "A specific reservation needs key "
			   "'compute.googleapis.com/reservation-name' and the reservation in values.");
	if (t && strcmp(t, "SPECIFIC_RESERVATION") &&
	    (sget(ra, "key") || json_array_size(json_object_get(ra, "values"))))
		return bad(r, at, "reservationAffinity", t, "key and values are only for "
			   "SPECIFIC_RESERVATION.");
	return 0;
}

/* maxRunDuration.seconds within [lo, hi]; -1 after answering. */
static int check_duration(struct fg_req *r, json_t *d, const char *at, long lo, long hi)
{
	json_t *s = json_object_get(d, "seconds");
	long long v = json_is_string(s) ? strtoll(json_string_value(s), NULL, 10)
					: json_integer_value(s);
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", v);
	if (v < lo || v > hi) {
		char *why = xasprintf("Must be between %ld and %ld seconds.", lo, hi);
		bad(r, at, "scheduling.maxRunDuration.seconds", buf, why);
		free(why);
		return -1;
	}
	return 0;
}

static int check_scheduling(struct fg_req *r, json_t *b, const char *at)
{
	json_t *s = json_object_get(b, "scheduling");
	const char *pm = sget(s, "provisioningModel"), *ohm = sget(s, "onHostMaintenance");
	const char *ita = sget(s, "instanceTerminationAction");
	json_t *pre = json_object_get(s, "preemptible"), *ar = json_object_get(s, "automaticRestart");
	json_t *mrd = json_object_get(s, "maxRunDuration");
	int spot = pm && !strcmp(pm, "SPOT"), flex = pm && !strcmp(pm, "FLEX_START");

	if (spot && json_is_false(pre))
		return bad(r, at, "scheduling.preemptible", "false", "Spot VMs are preemptible.");
	if (json_is_true(pre) && pm && !spot)
		return bad(r, at, "scheduling.provisioningModel", pm,
			   "Preemptible VMs must use the SPOT provisioning model.");
	if ((spot || json_is_true(pre)) && json_is_true(ar))
		return bad(r, at, "scheduling.automaticRestart", "true",
			   "Preemptible instances cannot be automatically restarted.");
	if (!ohm || strcmp(ohm, "TERMINATE"))
		return bad(r, at, "scheduling.onHostMaintenance", ohm ? ohm : "MIGRATE",
			   "Instances with TPU accelerators do not support live migration: "
			   "onHostMaintenance must be TERMINATE.");
	if (flex && !mrd)
		return required(r, at, "scheduling.maxRunDuration");
	if (flex && (!ita || strcmp(ita, "DELETE")))
		return bad(r, at, "scheduling.instanceTerminationAction", ita ? ita : "",
			   "Flex-start VMs must use the DELETE termination action.");
	if (ita && !spot && !flex && !(pm && !strcmp(pm, "RESERVATION_BOUND")) && !mrd &&
	    !sget(s, "terminationTime"))
		return bad(r, at, "scheduling.instanceTerminationAction", ita,
			   "A termination action needs SPOT, FLEX_START, RESERVATION_BOUND, "
			   "maxRunDuration or terminationTime.");
	if (mrd && check_duration(r, mrd, at, 30, flex ? TPU_MAX_RUN : 120L * 86400) < 0)
		return -1;
	return check_reservation(r, b, at);
}

static int disk_type_ok(const char *t)
{
	static const char *const ok[] = { "hyperdisk-balanced", "hyperdisk-extreme",
					  "hyperdisk-ml", "hyperdisk-throughput", "pd-balanced",
					  "pd-ssd", "pd-standard", NULL };
	for (int i = 0; ok[i]; i++)
		if (!strcmp(ce_basename(t), ok[i]))
			return 1;
	return 0;
}

static int check_disks(struct fg_req *r, json_t *b, const char *at)
{
	json_t *disks = json_object_get(b, "disks"), *d;
	size_t i;

	if (!json_array_size(disks))
		return required(r, at, "disks");
	json_array_foreach(disks, i, d) {
		int boot = json_is_true(json_object_get(d, "boot"));
		char *f = xasprintf("disks[%zu]", i);
		int rc = 0;
		if (boot != (i == 0))
			rc = bad(r, at, f, "", "Boot disk must be the first disk attached to the "
				 "instance.");
		json_t *ip = json_object_get(d, "initializeParams");
		const char *img = sget(ip, "sourceImage"), *dt = sget(ip, "diskType");
		char *fi = xasprintf("%s.initializeParams.sourceImage", f);
		char *ft = xasprintf("%s.initializeParams.diskType", f);
		if (!rc && boot && !img && !sget(d, "source"))
			rc = required(r, at, fi);
		if (!rc && sget(d, "source"))
			rc = bad(r, at, f, sget(d, "source"), "The referenced disk resource cannot be "
				 "found.");
		if (!rc && img && !ce_image_ok(img))
			rc = bad(r, at, fi, img, "The referenced image resource cannot be found.");
		if (!rc && dt && !disk_type_ok(dt))
			rc = bad(r, at, ft, dt, "The referenced diskType resource cannot be found.");
		free(fi);
		free(ft);
		free(f);
		if (rc)
			return -1;
	}
	return 0;
}

/* machineType: a (partial) URL ending zones/ZONE/machineTypes/T for an
 * instance; only the name for a template (InstanceProperties.machineType:
 * "This field only accepts a machine type name"; templates insert checks
 * URLs first, fg_compute_mig.c). */
static int check_machine_type(struct fg_req *r, json_t *b, const char *zone, const char *at,
			      int template, const struct ce_mtype **mt)
{
	const char *v = sget(b, "machineType");

	if (!v || !*v)
		return required(r, at, "machineType");
	const char *m = strstr(v, "machineTypes/");
	const char *z = strstr(v, "zones/");
	if (!template && (!m || !z || z > m || (z != v && z[-1] != '/')))
		return bad(r, at, "machineType", v, "Must be a URL of a machine type, e.g. "
			   "zones/ZONE/machineTypes/TYPE.");
	if (!template) {
		size_t zl = (size_t)(m - z - 7);
		if (zl != strlen(zone) || strncmp(z + 6, zone, zl))
			return bad(r, at, "machineType", v, "The machine type must be in the "
				   "instance's zone.");
	}
	*mt = ce_mtype(template ? v : m + 13);
	if (!*mt || (!template && !ce_mtype_in_zone(*mt, zone))) {
		char *why = template ? xasprintf("Machine type with name '%s' does not exist.", v)
				     : xasprintf("Machine type with name '%s' does not exist in zone "
						 "'%s'.", m + 13, zone);
		bad(r, at, "machineType", v, why);
		free(why);
		return -1;
	}
	return 0;
}

int ce_instance_check(struct fg_req *r, json_t *b, const char *zone, const char *at, int template,
		      const struct ce_mtype **mt)
{
	const char *name = sget(b, "name");

	if (!template && !name)
		return required(r, at, "name");
	if (!template && !ce_name_ok(name))
		return bad(r, at, "name", name, "Must be a match of regex '" NAME_RE "'");
	if (check_machine_type(r, b, zone, at, template, mt) < 0 || check_disks(r, b, at) < 0)
		return -1;
	if (!json_array_size(json_object_get(b, "networkInterfaces")))
		return required(r, at, "networkInterfaces");
	if (json_array_size(json_object_get(b, "serviceAccounts")) > 1)
		return bad(r, at, "serviceAccounts", "", "At most one service account is allowed.");
	if (json_array_size(json_object_get(b, "guestAccelerators")))
		return bad(r, at, "guestAccelerators", "", "TPU machine types come with their "
			   "accelerators: guestAccelerators must not be set.");
	if (ce_check_labels(r, json_object_get(b, "labels"), at) < 0 ||
	    ce_check_metadata(r, json_object_get(b, "metadata"), at) < 0)
		return -1;
	return check_scheduling(r, b, at);
}
