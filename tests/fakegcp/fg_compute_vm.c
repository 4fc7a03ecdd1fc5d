/*
 * Compute instances, the served side: creation (what the server adds to a
 * body), capacity (stockout, quota), the status lifecycle described in
 * fg_compute_inst.c, preemption, and the instances.* methods.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tests/fakegcp/fg_compute.h"
#include "util/xalloc.h"

static const char *sget(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

json_t *ce_md_obj(json_t *inst)
{
	json_t *out = json_object(), *it;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(inst, "metadata"), "items"), i, it)
		if (sget(it, "key") && sget(it, "value"))
			json_object_set(out, sget(it, "key"), json_object_get(it, "value"));
	return out;
}

/* A reference in a body as a full URL (fresh): kept if it is one, else
 * made one under base ("projects/...") or under this project. */
static char *full_url(const char *v)
{
	if (!strncmp(v, "http://", 7) || !strncmp(v, "https://", 8))
		return xstrdup(v);
	if (!strncmp(v, "projects/", 9))
		return xasprintf("%s%s", ce.base, v);
	return ce_url(v);
}

static void set_url(json_t *o, const char *k, const char *v)
{
	char *u = full_url(v);
	json_object_set_new(o, k, json_string(u));
	free(u);
}

static void set_str(json_t *o, const char *k, char *fresh)
{
	json_object_set_new(o, k, json_string(fresh));
	free(fresh);
}

static json_t *expand_nics(json_t *nics, uint32_t ip)
{
	json_t *out = json_array(), *n;
	size_t i;
	struct in_addr a = { htonl(ip) };
	char dotted[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a, dotted, sizeof(dotted));
	json_array_foreach(nics, i, n) {
		json_t *c = json_deep_copy(n), *ac;
		size_t j;
		set_str(c, "name", xasprintf("nic%zu", i));
		set_url(c, "network", sget(n, "network") ? sget(n, "network")
							  : "global/networks/default");
		if (sget(n, "subnetwork"))
			set_url(c, "subnetwork", sget(n, "subnetwork"));
		json_object_set_new(c, "networkIP", json_string(dotted));
		json_object_set_new(c, "kind", json_string("compute#networkInterface"));
		json_object_set_new(c, "stackType", json_string("IPV4_ONLY"));
		set_str(c, "fingerprint", ce_fingerprint());
		json_array_foreach(json_object_get(c, "accessConfigs"), j, ac) {
			json_object_set_new(ac, "kind", json_string("compute#accessConfig"));
			json_object_set_new(ac, "natIP", json_string(dotted));
			json_object_set_new(ac, "networkTier", json_string("PREMIUM"));
		}
		json_array_append_new(out, c);
	}
	return out;
}

static json_t *expand_disks(json_t *disks, const char *zone, const char *name)
{
	json_t *out = json_array(), *d;
	size_t i;

	json_array_foreach(disks, i, d) {
		json_t *ip = json_object_get(d, "initializeParams");
		const char *size = sget(ip, "diskSizeGb");
		char *dname = i ? xasprintf("%s-%zu", name, i) : xstrdup(name);
		char *rel = xasprintf("zones/%s/disks/%s", zone, dname);
		char *dev = xasprintf("persistent-disk-%zu", i);
		json_t *c = json_pack("{s:s, s:s, s:s, s:o, s:s, s:i, s:b, s:b, s:s, s:s, s:s}", "kind",
				      "compute#attachedDisk", "type", "PERSISTENT", "mode",
				      sget(d, "mode") ? sget(d, "mode") : "READ_WRITE", "source",
				      json_null(), "deviceName", dev, "index", (int)i,
				      "boot", json_is_true(json_object_get(d, "boot")), "autoDelete",
				      !json_is_false(json_object_get(d, "autoDelete")), "interface",
				      "NVME", "diskSizeGb", size ? size : "10", "architecture", "X86_64");
		set_url(c, "source", rel);
		json_array_append_new(out, c);
		free(dev);
		free(rel);
		free(dname);
	}
	return out;
}

static void expand_scheduling(json_t *inst)
{
	json_t *s = json_object_get(inst, "scheduling");
	int spot;

	if (!s) {
		s = json_object();
		json_object_set_new(inst, "scheduling", s);
	}
	spot = (sget(s, "provisioningModel") && !strcmp(sget(s, "provisioningModel"), "SPOT")) ||
	       json_is_true(json_object_get(s, "preemptible"));
	if (!json_object_get(s, "provisioningModel"))
		json_object_set_new(s, "provisioningModel", json_string("STANDARD"));
	if (!json_object_get(s, "preemptible"))
		json_object_set_new(s, "preemptible", json_boolean(spot));
	if (!json_object_get(s, "automaticRestart"))
		json_object_set_new(s, "automaticRestart", json_boolean(!spot));
	if (spot && !json_object_get(s, "instanceTerminationAction"))
		json_object_set_new(s, "instanceTerminationAction", json_string("STOP"));
}

static void expand_service_accounts(json_t *inst)
{
	json_t *sa;
	size_t i;

	json_array_foreach(json_object_get(inst, "serviceAccounts"), i, sa)
		if (!sget(sa, "email") || !strcmp(sget(sa, "email"), "default"))
			set_str(sa, "email", xasprintf("%s-compute@developer.gserviceaccount.com",
						       fg_opt.project_number));
}

json_t *ce_instance_create(const char *zone, const char *name, json_t *props, const char *mig)
{
	json_t *inst = json_deep_copy(props), *md = json_object_get(props, "metadata");
	const char *mt = sget(props, "machineType");
	const struct ce_mtype *t = ce_mtype(ce_basename(mt));
	char ts[40], *rel = xasprintf("zones/%s/instances/%s", zone, name);
	char *mtrel = xasprintf("zones/%s/machineTypes/%s", zone, ce_basename(mt));
	char *zrel = xasprintf("zones/%s", zone);
	uint32_t ip = fg_alloc_ips(1);

	ce_timestamp(ts);
	json_object_set_new(inst, "kind", json_string("compute#instance"));
	set_str(inst, "id", ce_new_id());
	json_object_set_new(inst, "creationTimestamp", json_string(ts));
	json_object_set_new(inst, "name", json_string(name));
	set_url(inst, "machineType", mtrel);
	set_url(inst, "zone", zrel);
	set_url(inst, "selfLink", rel);
	json_object_set_new(inst, "status", json_string("PENDING"));
	json_object_set_new(inst, "cpuPlatform", json_string("Unknown CPU Platform"));
	json_object_set_new(inst, "networkInterfaces",
			    expand_nics(json_object_get(props, "networkInterfaces"), ip));
	json_object_set_new(inst, "disks", expand_disks(json_object_get(props, "disks"), zone, name));
	json_t *m = json_pack("{s:s}", "kind", "compute#metadata");
	set_str(m, "fingerprint", ce_fingerprint());
	if (json_array_size(json_object_get(md, "items")))
		json_object_set(m, "items", json_object_get(md, "items"));
	json_object_set_new(inst, "metadata", m);
	expand_scheduling(inst);
	expand_service_accounts(inst);
	set_str(inst, "labelFingerprint", ce_fingerprint());
	set_str(inst, "fingerprint", ce_fingerprint());
	json_object_set_new(inst, "startRestricted", json_false());
	if (!json_object_get(inst, "deletionProtection"))
		json_object_set_new(inst, "deletionProtection", json_false());
	if (!json_object_get(inst, "canIpForward"))
		json_object_set_new(inst, "canIpForward", json_false());
	if (!json_object_get(inst, "reservationAffinity"))
		json_object_set_new(inst, "reservationAffinity",
				    json_pack("{s:s}", "consumeReservationType", "ANY_RESERVATION"));
	json_object_set_new(inst, "__ip", json_integer(ip));
	json_object_set_new(inst, "__chips", json_integer(t ? t->chips : 0));
	if (mig)
		json_object_set_new(inst, "__mig", json_string(mig));
	json_t *valid = json_object_get(json_object_get(json_object_get(props, "params"),
							"requestValidForDuration"), "seconds");
	if (ce_is_flex(props) && !json_is_true(json_object_get(ce.flex_ok, zone))) {
		json_object_set_new(inst, "__wait", json_true());
		if (valid)
			json_object_set_new(inst, "__valid_until",
					    json_real(fg_mono() + atof(json_string_value(valid)
								       ? json_string_value(valid)
								       : "0")));
	} else {
		json_object_set_new(inst, "__next", json_real(fg_mono() + ce.stage_s));
	}
	json_object_set_new(ce_scope(ce.inst, zone, 1), name, inst);
	json_object_set_new(inst, "__zone_name", json_string(zone));
	ce_activate(inst, zone);
	ce_changed();
	free(rel);
	free(mtrel);
	free(zrel);
	return inst;
}

void ce_activate(json_t *inst, const char *zone)
{
	json_object_set_new(ce_scope(ce.active, zone, 1), json_string_value(json_object_get(inst,
				"name")), json_true());
}

void ce_instance_delete(json_t *inst)
{
	ce_changed();
	ce_activate(inst, sget(inst, "__zone_name"));
	json_object_set_new(inst, "status", json_string("STOPPING"));
	json_object_del(inst, "__next");
	json_object_del(inst, "__stop");
	json_object_del(inst, "__wait");
	json_object_set_new(inst, "__gone", json_real(fg_mono() + ce.delete_s));
}

/* ------------------------------------------------------------ capacity */

static json_t *stockout_error(const char *zone, const struct ce_mtype *mt, int details)
{
	/* Codes and wording: the resource-error doc; the _WITH_DETAILS form's
	 * errorDetails as gcloud printed them (capture C46). */
	char *msg = details ? xasprintf("The zone 'projects/%s/zones/%s' does not have enough "
					"resources available to fulfill the request.  '(resource "
					"type:compute)'.", fg_opt.project, zone)
			    : xasprintf("The zone 'projects/%s/zones/%s' does not have enough "
					"resources available to fulfill the request.  Try a "
					"different zone, or try again later.", fg_opt.project, zone);
	json_t *e = ce_op_errors(details ? "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"
					 : "ZONE_RESOURCE_POOL_EXHAUSTED", msg);
	if (details)
		json_object_set_new(e, "errorDetails", json_pack(
			"[{s:{s:s, s:s, s:{s:s, s:s}}}, {s:{s:[{s:s, s:s}]}}]", "errorInfo", "domain",
			"compute.googleapis.com", "reason", "resource_availability", "metadatas",
			"vmType", mt->name, "zone", zone, "help", "links", "description",
			"Troubleshooting documentation", "url",
			"https://cloud.google.com/compute/docs/resource-error"));
	free(msg);
	return json_pack("{s:[o]}", "errors", e);
}

static long chips_in_region(const char *region)
{
	const char *z, *n;
	json_t *zone, *inst;
	long total = 0;

	json_object_foreach(ce.inst, z, zone) {
		char *rg = ce_region_of(z);
		int same = !strcmp(rg, region);
		free(rg);
		json_object_foreach(same ? zone : NULL, n, inst)
			if (!json_object_get(inst, "__gone"))
				total += (long)json_integer_value(json_object_get(inst, "__chips"));
	}
	return total;
}

json_t *ce_capacity_error(const char *zone, const struct ce_mtype *mt, int count, int flex,
			  int *http, int *sync)
{
	const char *so = ce_stockout_of(zone, mt->name);
	char *region = ce_region_of(zone);
	json_t *q = json_object_get(ce.quota, region), *out = NULL;

	*sync = 0;
	if (q && chips_in_region(region) + (long)count * mt->chips >
			 (long)json_integer_value(json_object_get(q, "limit"))) {
		long limit = (long)json_integer_value(json_object_get(q, "limit"));
		char *msg = xasprintf("Quota 'TPUS_PER_TPU_FAMILY' exceeded.  Limit: %ld.0 in region "
				      "%s.", limit, region);
		json_t *e = ce_op_errors("QUOTA_EXCEEDED", msg);
		json_object_set_new(e, "errorDetails", json_pack(
			"[{s:{s:s, s:s, s:{s:s, s:s}, s:f}}]", "quotaInfo", "metricName",
			"compute.googleapis.com/tpus_per_tpu_family", "limitName",
			"TPUS-PER-TPU-FAMILY-per-project-region", "dimensions", "region", region,
			"tpu_family", mt->accel, "limit", (double)limit));
		out = json_pack("{s:[o]}", "errors", e);
		*http = 403;
		*sync = !strcmp(json_string_value(json_object_get(q, "mode")), "sync");
		free(msg);
	} else if (so && !flex) {
		out = stockout_error(zone, mt, !strcmp(so, "details"));
		*http = 503;
	}
	free(region);
	return out;
}

/* ----------------------------------------------------------- lifecycle */

void fg_compute_agent_sync_all(void)
{
	const char *z, *n;
	json_t *zone, *inst;

	json_object_foreach(ce.inst, z, zone) {
		json_object_foreach(zone, n, inst) {
			if (strcmp(sget(inst, "status"), "RUNNING"))
				continue;
			json_t *md = ce_md_obj(inst);
			fg_agent_write((uint32_t)json_integer_value(json_object_get(inst, "__ip")), 1,
				       md);
			json_decref(md);
		}
	}
}

static void become_running(json_t *inst)
{
	char ts[40];
	json_t *md = ce_md_obj(inst);

	ce_timestamp(ts);
	json_object_set_new(inst, "status", json_string("RUNNING"));
	json_object_set_new(inst, "lastStartTimestamp", json_string(ts));
	fg_agent_write((uint32_t)json_integer_value(json_object_get(inst, "__ip")), 1, md);
	json_decref(md);
}

/* The insert operation of a waiting flex-start instance. */
static json_t *insert_op(json_t *inst, const char *zone)
{
	char *scope = xasprintf("zones/%s", zone);
	json_t *op = ce_map2(ce.ops, scope, sget(inst, "__op") ? sget(inst, "__op") : "");
	free(scope);
	return op;
}

/* 1 if the instance is to be removed now. */
static int step(json_t *inst, const char *zone, double now)
{
	static const char *const order[] = { "PENDING", "PROVISIONING", "STAGING", "RUNNING" };
	json_t *at;

	if ((at = json_object_get(inst, "__gone")))
		return now >= json_real_value(at);
	if ((at = json_object_get(inst, "__stop")) && now >= json_real_value(at)) {
		char ts[40];
		ce_timestamp(ts);
		json_object_set_new(inst, "status", json_string("TERMINATED"));
		json_object_set_new(inst, "lastStopTimestamp", json_string(ts));
		json_object_del(inst, "__stop");
	}
	if (json_is_true(json_object_get(inst, "__wait"))) {
		json_t *op = insert_op(inst, zone);
		if (json_is_true(json_object_get(ce.flex_ok, zone))) {
			json_object_del(inst, "__wait");
			json_object_set_new(inst, "__next", json_real(now + ce.stage_s));
			if (op)
				json_object_set_new(op, "__done_at", json_real(now + fg_opt.op_seconds));
		} else if ((at = json_object_get(inst, "__valid_until")) && now >= json_real_value(at)) {
			if (op && strcmp(sget(op, "status"), "DONE"))
				ce_op_finish(op, json_pack("{s:[o]}", "errors", ce_op_errors(
					"ZONE_RESOURCE_POOL_EXHAUSTED", "The flex-start request's "
					"requestValidForDuration passed before capacity was found.")),
					503);
			return 1;
		}
		return 0;
	}
	while ((at = json_object_get(inst, "__next")) && now >= json_real_value(at)) {
		const char *st = sget(inst, "status");
		int i = 0;
		while (i < 3 && strcmp(order[i], st))
			i++;
		if (i >= 3) {
			json_object_del(inst, "__next");
			break;
		}
		double next = json_real_value(at) + ce.stage_s;
		if (i == 2) {
			become_running(inst);
			json_object_del(inst, "__next");
		} else {
			json_object_set_new(inst, "status", json_string(order[i + 1]));
			json_object_set_new(inst, "__next", json_real(next));
		}
	}
	return 0;
}

void ce_instances_tick(double now)
{
	const char *z, *n;
	json_t *zone, *inst;
	void *tmp;

	json_t *act;

	json_object_foreach(ce.active, z, act) {
		zone = json_object_get(ce.inst, z);
		json_t *v;
		json_object_foreach_safe(act, tmp, n, v) {
			inst = json_object_get(zone, n);
			/* held, so a replaced status is a new object */
			json_t *before = json_incref(json_object_get(inst, "status"));
			if (inst && step(inst, z, now)) {
				json_object_del(zone, n);
				ce_changed();
			} else if (inst && json_object_get(inst, "status") != before) {
				ce_changed();
			}
			json_decref(before);
			inst = json_object_get(zone, n);
			if (!inst || !(json_object_get(inst, "__next") || json_object_get(inst, "__gone") ||
				       json_object_get(inst, "__stop") || json_object_get(inst, "__wait")))
				json_object_del(act, n);
		}
	}
}

int ce_instance_preempt(const char *zone, const char *name, const char **why)
{
	json_t *inst = ce_map2(ce.inst, zone, name);
	json_t *s = json_object_get(inst, "scheduling");
	const char *st = sget(inst, "status");

	if (!inst) {
		*why = "no such instance";
		return -1;
	}
	if (!json_is_true(json_object_get(s, "preemptible"))) {
		*why = "only SPOT (preemptible) instances are preempted";
		return -1;
	}
	if (!strcmp(st, "STOPPING") || !strcmp(st, "TERMINATED") || json_object_get(inst, "__wait")) {
		*why = "the instance is not running";
		return -1;
	}
	char *scope = xasprintf("zones/%s", zone), *rel = xasprintf("zones/%s/instances/%s", zone, name);
	json_t *op = ce_op_new(scope, "compute.instances.preempted", rel, sget(inst, "id"), 0);
	json_object_set_new(op, "user", json_string("system"));
	json_object_set_new(op, "statusMessage", json_string("Instance was preempted."));
	ce_op_finish(op, NULL, 0);
	const char *action = sget(s, "instanceTerminationAction");
	ce_changed();
	ce_activate(inst, zone);
	json_object_set_new(inst, "status", json_string("STOPPING"));
	json_object_del(inst, "__next");
	if (action && !strcmp(action, "DELETE"))
		json_object_set_new(inst, "__gone", json_real(fg_mono() + ce.stage_s));
	else
		json_object_set_new(inst, "__stop", json_real(fg_mono() + ce.stage_s));
	free(scope);
	free(rel);
	return 0;
}

/* ------------------------------------------------------------- methods */

static void insert(struct ce_req *q, const char *zone)
{
	static const char *const ok[] = { "requestId", NULL };
	struct fg_req *r = q->r;
	const struct ce_mtype *mt;
	json_t *op;
	int http = 0, sync = 0;

	if (ce_check_query(r, ok) < 0 || ce_request_id(r, &op) < 0)
		return;
	if (op) { /* the same requestId: the same operation, nothing new */
		ce_reply_op(r, op);
		return;
	}
	if (ce_validate(r, "Instance", q->body, "resource") < 0 ||
	    ce_instance_check(r, q->body, zone, "resource", 0, &mt) < 0)
		return;
	const char *name = sget(q->body, "name");
	char *rel = xasprintf("zones/%s/instances/%s", zone, name);
	char *scope = xasprintf("zones/%s", zone);
	if (ce_map2(ce.inst, zone, name)) {
		ce_error(r, 409, "alreadyExists", "The resource 'projects/%s/%s' already exists",
			 fg_opt.project, rel);
		goto done;
	}
	int flex = ce_is_flex(q->body);
	json_t *err = ce_capacity_error(zone, mt, 1, flex, &http, &sync);
	if (err && sync) {
		ce_error(r, 403, "quotaExceeded", "%s",
			 sget(json_array_get(json_object_get(err, "errors"), 0), "message"));
		json_decref(err);
		goto done;
	}
	if (err) {
		op = ce_op_new(scope, "insert", rel, NULL, fg_opt.op_seconds);
		json_object_set_new(op, "__error", err);
		json_object_set_new(op, "__http", json_integer(http));
	} else {
		json_t *inst = ce_instance_create(zone, name, q->body, NULL);
		int waits = json_is_true(json_object_get(inst, "__wait"));
		op = ce_op_new(scope, "insert", rel, sget(inst, "id"), waits ? -1 : fg_opt.op_seconds);
		json_object_set(inst, "__op", json_object_get(op, "name"));
	}
	ce_request_id_keep(r, op);
	ce_reply_op(r, op);
done:
	free(rel);
	free(scope);
}

/* Instances of zone passing the filter f into it; with key_zone the key
 * is "ZONE/NAME". An unreachable zone has none to show. */
static void select_in(struct ce_filter *f, const char *zone, struct ce_items *it, int key_zone)
{
	const char *n;
	json_t *inst;

	json_object_foreach(json_is_true(json_object_get(ce.unreach, zone)) ? NULL
			    : json_object_get(ce.inst, zone), n, inst)
		if (ce_filter_match(f, inst))
			ce_items_add(it, inst, zone, key_zone ? xasprintf("%s/%s", zone, n) : NULL);
}

static int order_ok(struct fg_req *r)
{
	const char *o = ce_arg(r, "orderBy");
	if (!o || !strcmp(o, "name") || !strcmp(o, "creationTimestamp desc"))
		return 0;
	ce_invalid(r, "orderBy", o, "Allowed values are 'name' and 'creationTimestamp desc'.");
	return -1;
}

static const char *const list_params[] = { "filter", "maxResults", "pageToken", "orderBy",
					   "returnPartialSuccess", NULL };

static void list(struct ce_req *q, const char *zone)
{
	struct ce_items it = { 0 };
	struct ce_filter *f;
	json_t *page;
	char *next;

	if (ce_check_query(q->r, list_params) < 0 || order_ok(q->r) < 0 ||
	    ce_filter_parse(q->r, ce_arg(q->r, "filter"), &f) < 0)
		return;
	select_in(f, zone, &it, 0);
	ce_filter_free(f);
	char *rel = xasprintf("zones/%s/instances", zone);
	if (ce_items_page(q->r, &it, &page, &next) == 0)
		fg_reply_json(q->r, 200, ce_list_json("compute#instanceList", rel, page, next));
	ce_items_free(&it);
	free(rel);
}

/* items of an aggregated list: every zone, with its resources under `key`
 * or a NO_RESULTS_ON_PAGE warning (InstancesScopedList), as the real
 * aggregated lists answer. page is stolen. */
json_t *ce_aggregate(json_t *page, const char *key)
{
	json_t *items = json_object(), *v;
	const char *z;
	size_t i;

	for (i = 0; (z = ce_zone_at(i)); i++) {
		char *scope = xasprintf("zones/%s", z);
		json_object_set_new(items, scope, json_object());
		free(scope);
	}
	json_array_foreach(page, i, v) {
		char *scope = xasprintf("zones/%s", sget(v, "__zone"));
		json_t *s = json_object_get(items, scope), *arr = json_object_get(s, key);
		if (!arr) {
			arr = json_array();
			json_object_set_new(s, key, arr);
		}
		json_array_append_new(arr, ce_public(v));
		free(scope);
	}
	json_object_foreach(items, z, v)
		if (json_is_true(json_object_get(ce.unreach, z + 6)))
			json_object_set_new(v, "warning", json_pack(
				"{s:s, s:s++, s:[{s:s, s:s}]}", "code", "UNREACHABLE", "message",
				"Scope '", z, "' is unreachable.", "data", "key", "scope", "value", z));
		else if (!json_object_size(v))
			json_object_set_new(v, "warning", json_pack(
				"{s:s, s:s++, s:[{s:s, s:s}]}", "code", "NO_RESULTS_ON_PAGE", "message",
				"There are no results for scope '", z, "' on this page.", "data", "key",
				"scope", "value", z));
	json_decref(page);
	return items;
}

void ce_instances_aggregated(struct ce_req *q)
{
	static const char *const ok[] = { "filter", "maxResults", "pageToken", "orderBy",
					  "returnPartialSuccess", "includeAllScopes",
					  "serviceProjectNumber", NULL };
	struct ce_items it = { 0 };
	struct ce_filter *f;
	json_t *page;
	const char *z;
	char *next;

	if (ce_check_query(q->r, ok) < 0 || order_ok(q->r) < 0 ||
	    ce_filter_parse(q->r, ce_arg(q->r, "filter"), &f) < 0)
		return;
	for (size_t i = 0; (z = ce_zone_at(i)); i++)
		select_in(f, z, &it, 1);
	ce_filter_free(f);
	if (ce_items_page(q->r, &it, &page, &next) == 0)
		fg_reply_json(q->r, 200, ce_aggregated_json(q->r, "compute#instanceAggregatedList",
							    "aggregated/instances",
							    ce_aggregate(page, "instances"), next));
	ce_items_free(&it);
}

json_t *ce_aggregated_json(struct fg_req *r, const char *kind, const char *rel, json_t *items,
			   char *next)
{
	char *id = xasprintf("projects/%s/%s", fg_opt.project, rel), *self = ce_url(rel);
	const char *ps = ce_arg(r, "returnPartialSuccess");
	json_t *out = json_pack("{s:s, s:s, s:o}", "kind", kind, "id", id, "items", items);
	json_t *un = json_array(), *v;
	const char *z;

	json_object_foreach(ce.unreach, z, v) {
		char *scope = xasprintf("zones/%s", z);
		json_array_append_new(un, json_string(scope));
		free(scope);
	}
	if (ps && !strcasecmp(ps, "true") && json_array_size(un))
		json_object_set(out, "unreachables", un);
	json_decref(un);
	if (next)
		json_object_set_new(out, "nextPageToken", json_string(next));
	json_object_set_new(out, "selfLink", json_string(self));
	free(next);
	free(id);
	free(self);
	return out;
}

int ce_unreachable(struct fg_req *r, const char *zone)
{
	if (!json_is_true(json_object_get(ce.unreach, zone)))
		return 0;
	ce_error(r, 503, "backendError", "The service is currently unavailable.");
	return 1;
}

static json_t *mutation(struct ce_req *q, const char *zone, const char *name, const char *type)
{
	char *scope = xasprintf("zones/%s", zone), *rel = xasprintf("zones/%s/instances/%s", zone, name);
	json_t *inst = ce_map2(ce.inst, zone, name);
	json_t *op = ce_op_new(scope, type, rel, sget(inst, "id"), fg_opt.op_seconds);

	ce_request_id_keep(q->r, op);
	free(scope);
	free(rel);
	return op;
}

/* Fingerprints are bytes (TYPE_BYTES), sent base64: gcloud's apitools
 * re-encodes them in the URL-safe alphabet ('-', '_'), so both spellings
 * of the same bytes match. */
static int fp_equal(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char x = *a == '-' ? '+' : *a == '_' ? '/' : *a;
		char y = *b == '-' ? '+' : *b == '_' ? '/' : *b;
		if (x != y)
			return 0;
	}
	return *a == *b;
}

static void set_metadata(struct ce_req *q, json_t *inst, const char *zone, const char *name)
{
	json_t *md = json_object_get(inst, "metadata");
	const char *fp = sget(q->body, "fingerprint");

	if (ce_validate(q->r, "Metadata", q->body, "resource") < 0)
		return;
	if (!fp) {
		ce_error(q->r, 400, "required", "Required field 'resource.fingerprint' not specified");
		return;
	}
	if (!fp_equal(fp, sget(md, "fingerprint"))) {
		ce_error(q->r, 412, "conditionNotMet", "Supplied fingerprint does not match current "
			 "metadata fingerprint.");
		return;
	}
	if (ce_check_metadata(q->r, q->body, "resource") < 0)
		return;
	json_t *items = json_object_get(q->body, "items");
	if (json_array_size(items))
		json_object_set(md, "items", items);
	else
		json_object_del(md, "items");
	set_str(md, "fingerprint", ce_fingerprint());
	if (!strcmp(sget(inst, "status"), "RUNNING")) {
		json_t *m = ce_md_obj(inst);
		fg_agent_write((uint32_t)json_integer_value(json_object_get(inst, "__ip")), 1, m);
		json_decref(m);
	}
	ce_reply_op(q->r, mutation(q, zone, name, "setMetadata"));
}

static void set_labels(struct ce_req *q, json_t *inst, const char *zone, const char *name)
{
	const char *fp = sget(q->body, "labelFingerprint");

	if (ce_validate(q->r, "InstancesSetLabelsRequest", q->body, "resource") < 0 ||
	    ce_check_labels(q->r, json_object_get(q->body, "labels"), "resource") < 0)
		return;
	if (!fp) {
		ce_error(q->r, 400, "required",
			 "Required field 'resource.labelFingerprint' not specified");
		return;
	}
	if (!fp_equal(fp, sget(inst, "labelFingerprint"))) {
		ce_error(q->r, 412, "conditionNotMet", "Labels fingerprint either invalid or "
			 "resource labels have changed");
		return;
	}
	json_t *labels = json_object_get(q->body, "labels");
	if (json_object_size(labels))
		json_object_set(inst, "labels", labels);
	else
		json_object_del(inst, "labels");
	set_str(inst, "labelFingerprint", ce_fingerprint());
	ce_reply_op(q->r, mutation(q, zone, name, "setLabels"));
}

static int md_is_true(json_t *md, const char *k)
{
	const char *v = json_string_value(json_object_get(md, k));
	return v && !strcasecmp(v, "true");
}

/* getGuestAttributes (queryPath=hostkeys/ or variableKey=hostkeys/TYPE):
 * published by the guest agent once the VM runs, and only when
 * enable-guest-attributes is TRUE in the instance's metadata, else the
 * project's. Otherwise the 404 gcloud takes for "no keys yet"
 * (ssh_utils.py). */
static void guest_attributes(struct ce_req *q, json_t *inst, const char *name)
{
	static const char *const ok[] = { "queryPath", "variableKey", NULL };
	const char *qp = ce_arg(q->r, "queryPath"), *vk = ce_arg(q->r, "variableKey");
	json_t *md = ce_md_obj(inst);
	json_t *proj = fg_project_metadata();
	int on = md_is_true(md, "enable-guest-attributes") ||
		 (!json_object_get(md, "enable-guest-attributes") &&
		  md_is_true(proj, "enable-guest-attributes"));
	const char *what = vk ? vk : qp ? qp : "";
	json_decref(md);
	if (ce_check_query(q->r, ok) < 0)
		return;
	json_t *items = on && !strcmp(sget(inst, "status"), "RUNNING") &&
			((qp && !strcmp(qp, "hostkeys/")) || (vk && !strncmp(vk, "hostkeys/", 9)))
		? fg_agent_host_keys((uint32_t)json_integer_value(json_object_get(inst, "__ip")),
				     name, 0)
		: json_array();
	json_t *it;
	size_t i;
	json_array_foreach(vk ? items : NULL, i, it)
		if (!strcmp(vk + 9, sget(it, "key")))
			break;
	if (!json_array_size(items) || (vk && i == json_array_size(items))) {
		ce_error(q->r, 404, "notFound", "The resource '%s' of type 'Guest Attribute' was not "
			 "found.", what);
	} else if (vk) {
		fg_reply_json(q->r, 200, json_pack("{s:s, s:s, s:O}", "kind", "compute#guestAttributes",
						   "variableKey", vk, "variableValue",
						   json_object_get(json_array_get(items, i), "value")));
	} else {
		char *self = xasprintf("%s/getGuestAttributes", sget(inst, "selfLink"));
		fg_reply_json(q->r, 200, json_pack("{s:s, s:s, s:s, s:{s:O}}", "kind",
						   "compute#guestAttributes", "queryPath", qp,
						   "selfLink", self, "queryValue", "items", items));
		free(self);
	}
	json_decref(items);
}

static void one(struct ce_req *q, const char *zone, const char *name, const char *verb)
{
	struct fg_req *r = q->r;
	json_t *inst = ce_map2(ce.inst, zone, name), *op = NULL;
	static const char *const rid[] = { "requestId", NULL };
	static const char *const none[] = { NULL };
	int get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST");

	if (!get) {
		if (ce_check_query(r, rid) < 0 || ce_request_id(r, &op) < 0)
			return;
		if (op) { /* a retried request: its first answer */
			ce_reply_op(r, op);
			return;
		}
	} else if (!verb && ce_check_query(r, none) < 0) {
		return;
	}
	if (!inst) {
		char *rel = xasprintf("zones/%s/instances/%s", zone, name);
		ce_not_found(r, rel);
		free(rel);
	} else if (!verb && get) {
		fg_reply_json(r, 200, ce_public(inst));
	} else if (!verb && !strcmp(r->method, "DELETE") && json_object_get(inst, "__gone")) {
		ce_not_ready(r, "instances", zone, name); /* its delete runs */
	} else if (!verb && !strcmp(r->method, "DELETE")) {
		ce_instance_delete(inst);
		op = mutation(q, zone, name, "delete");
		json_object_set_new(op, "__done_at", json_real(fg_mono() + ce.delete_s));
		ce_reply_op(r, op);
	} else if (verb && post && !strcmp(verb, "setMetadata")) {
		set_metadata(q, inst, zone, name);
	} else if (verb && post && !strcmp(verb, "setLabels")) {
		set_labels(q, inst, zone, name);
	} else if (verb && get && !strcmp(verb, "getGuestAttributes")) {
		guest_attributes(q, inst, name);
	} else {
		ce_error(r, 404, "notFound", "The requested URL was not found on this server.");
	}
}

void ce_instances(struct ce_req *q)
{
	const char *zone = q->seg[1];
	int get = !strcmp(q->r->method, "GET");

	if (q->nseg == 3 && get)
		list(q, zone);
	else if (q->nseg == 3 && !strcmp(q->r->method, "POST"))
		insert(q, zone);
	else if (q->nseg == 4 || q->nseg == 5)
		one(q, zone, q->seg[3], q->nseg == 5 ? q->seg[4] : NULL);
	else
		ce_error(q->r, 404, "notFound", "The requested URL was not found on this server.");
}
