/*
 * Admin hooks for the Compute Engine subset (tests/fakegcp/README.md,
 * "Compute Engine"): what Google does on its own (preemption, stockouts,
 * quota, flex-start capacity) and a view of everything. Under
 * /__admin/compute..., no auth, not logged, like the other admin hooks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fg_compute.h"
#include "util/xalloc.h"

static const char *arg(struct fg_req *r, const char *key)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

static void ok(struct fg_req *r)
{
	fg_reply_json(r, 200, json_pack("{s:b}", "ok", 1));
}

static void bad(struct fg_req *r, const char *msg)
{
	fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "%s", msg);
}

/* Every resource of a two-level map as one array, each with "zone" or
 * "scope" added (public copies). */
static json_t *flatten(json_t *map, const char *what)
{
	json_t *out = json_array(), *scope, *v;
	const char *s, *n;

	json_object_foreach(map, s, scope) {
		json_object_foreach(scope, n, v) {
			json_t *c = ce_public(v);
			json_object_set_new(c, what, json_string(s));
			json_array_append_new(out, c);
		}
	}
	return out;
}

static json_t *view(void)
{
	json_t *migs = json_array(), *scope, *v;
	const char *s, *n;

	json_object_foreach(ce.migs, s, scope) {
		json_object_foreach(scope, n, v) {
			json_t *c = ce_public(v);
			json_object_set_new(c, "members", json_deep_copy(json_object_get(v, "__members")));
			json_object_set_new(c, "deleting", json_boolean(json_object_get(v, "__gone")));
			json_array_append_new(migs, c);
		}
	}
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:O, s:O, s:O, s:O}", "instances",
			 flatten(ce.inst, "__zone"), "instanceGroupManagers", migs,
			 "instanceTemplates", flatten(ce.tmpl, "__scope"), "resourcePolicies",
			 flatten(ce.rp, "__region"), "operations", flatten(ce.ops, "__scope"),
			 "stockout", ce.stockout, "quota", ce.quota, "flex", ce.flex_ok,
			 "unreachable", ce.unreach);
}

/* Everything due now: operations that have an end, instance and MIG
 * steps. Flex-start waits stay (they need a grant). */
static void settle(void)
{
	const char *s, *n;
	json_t *scope, *v;
	double now = fg_mono();

	for (int round = 0; round < 5; round++) {
		json_object_foreach(ce.inst, s, scope) {
			json_object_foreach(scope, n, v) {
				static const char *const keys[] = { "__next", "__gone", "__stop" };
				for (int k = 0; k < 3; k++)
					if (json_object_get(v, keys[k]))
						json_object_set_new(v, keys[k], json_real(now));
			}
		}
		json_object_foreach(ce.migs, s, scope)
			json_object_foreach(scope, n, v)
				if (json_object_get(v, "__gone"))
					json_object_set_new(v, "__gone", json_real(now));
		json_object_foreach(ce.ops, s, scope)
			json_object_foreach(scope, n, v)
				if (json_real_value(json_object_get(v, "__done_at")) >= 0)
					json_object_set_new(v, "__done_at", json_real(now));
		ce_tick();
	}
}

/* The key of a stockout in ce.stockout: the zone for every machine type,
 * "ZONE/MACHINE_TYPE" for one. Caller frees. */
static char *stockout_key(const char *zone, const char *mtype)
{
	return mtype ? xasprintf("%s/%s", zone, mtype) : xstrdup(zone);
}

const char *ce_stockout_of(const char *zone, const char *mtype)
{
	char *key = stockout_key(zone, mtype);
	const char *so = json_string_value(json_object_get(ce.stockout, zone));
	if (!so)
		so = json_string_value(json_object_get(ce.stockout, key));
	free(key);
	return so;
}

/* zones/ZONE:stockout?value=on|details|off[&machine_type=T]: lasts until
 * value=off clears it (for that machine type, or the zone's). */
static void stockout(struct fg_req *r, const char *zone, const char *v)
{
	const char *mtype = arg(r, "machine_type");
	if (!v || (strcmp(v, "on") && strcmp(v, "details") && strcmp(v, "off"))) {
		bad(r, "expected ?value=on|details|off[&machine_type=T]");
		return;
	}
	if (mtype && !ce_mtype(mtype)) {
		bad(r, "no such machine type");
		return;
	}
	char *key = stockout_key(zone, mtype);
	if (!strcmp(v, "off"))
		json_object_del(ce.stockout, key);
	else
		json_object_set_new(ce.stockout, key, json_string(v));
	free(key);
	ok(r);
}

static void zone_action(struct fg_req *r, const char *zone, const char *action)
{
	const char *v = arg(r, "value");

	if (!ce_zone_ok(zone)) {
		bad(r, "no such zone");
	} else if (!strcmp(action, "stockout")) {
		stockout(r, zone, v);
	} else if (!strcmp(action, "flex")) {
		if (!v || (strcmp(v, "grant") && strcmp(v, "off")))
			{ bad(r, "expected ?value=grant|off"); return; }
		if (!strcmp(v, "off"))
			json_object_del(ce.flex_ok, zone);
		else
			json_object_set_new(ce.flex_ok, zone, json_true());
		ce_tick();
		ok(r);
	} else if (!strcmp(action, "unreachable")) {
		if (!v || (strcmp(v, "on") && strcmp(v, "off"))) {
			bad(r, "expected ?value=on|off");
			return;
		}
		if (!strcmp(v, "off"))
			json_object_del(ce.unreach, zone);
		else
			json_object_set_new(ce.unreach, zone, json_true());
		ok(r);
	} else {
		bad(r, "expected zones/ZONE:stockout, :flex or :unreachable");
	}
}

static void quota(struct fg_req *r)
{
	const char *region = arg(r, "region"), *limit = arg(r, "limit"), *mode = arg(r, "mode");
	char *end = NULL;
	long n = limit ? strtol(limit, &end, 10) : 0;

	if (!region || !limit || !*limit || (*end && strcmp(limit, "none")) ||
	    (mode && strcmp(mode, "sync") && strcmp(mode, "operation")))
		{ bad(r, "expected ?region=R&limit=CHIPS|none[&mode=sync|operation]"); return; }
	if (!strcmp(limit, "none"))
		json_object_del(ce.quota, region);
	else
		json_object_set_new(ce.quota, region, json_pack("{s:i, s:s}", "limit", (int)n, "mode",
								mode ? mode : "sync"));
	ok(r);
}

/*
 * ?value=SCHEDULED|UNSCHEDULED[&status=PENDING|ONGOING][&start=T&end=T]
 * sets the instance's resourceStatus.upcomingMaintenance (Compute v1
 * UpcomingMaintenance: type, maintenanceStatus, windowStartTime,
 * windowEndTime, canReschedule; gcloud 528's compute_v1_messages.py);
 * ?value=off clears it. NULL, or what is wrong.
 */
static const char *instance_maintenance(struct fg_req *r, json_t *inst)
{
	const char *type = arg(r, "value"), *status = arg(r, "status");
	json_t *rs = json_object_get(inst, "resourceStatus");
	if (type && !strcmp(type, "off")) {
		if (rs)
			json_object_del(rs, "upcomingMaintenance");
		return NULL;
	}
	if (!type || (strcmp(type, "SCHEDULED") && strcmp(type, "UNSCHEDULED")) ||
	    (status && strcmp(status, "PENDING") && strcmp(status, "ONGOING")))
		return "expected ?value=SCHEDULED|UNSCHEDULED|off[&status=PENDING|ONGOING]"
		       "[&start=RFC3339&end=RFC3339]";
	json_t *m = json_pack("{s:s, s:b}", "type", type, "canReschedule", 0);
	if (status)
		json_object_set_new(m, "maintenanceStatus", json_string(status));
	if (arg(r, "start"))
		json_object_set_new(m, "windowStartTime", json_string(arg(r, "start")));
	if (arg(r, "end"))
		json_object_set_new(m, "windowEndTime", json_string(arg(r, "end")));
	if (!json_is_object(rs))
		json_object_set_new(inst, "resourceStatus", rs = json_object());
	json_object_set_new(rs, "upcomingMaintenance", m);
	return NULL;
}

/* POST /__admin/compute/instances/{zone}/{name}:preempt|delete|maintenance */
static void instance_action(struct fg_req *r, const char *rest)
{
	const char *slash = strchr(rest, '/'), *colon = slash ? strrchr(slash, ':') : NULL;
	const char *why = NULL;

	if (!slash || !colon)
		{ bad(r, "expected instances/ZONE/NAME:preempt|delete|maintenance"); return; }
	char *zone = xstrndup(rest, (size_t)(slash - rest));
	char *name = xstrndup(slash + 1, (size_t)(colon - slash - 1));
	json_t *inst = ce_map2(ce.inst, zone, name);
	if (!strcmp(colon + 1, "preempt")) {
		if (ce_instance_preempt(zone, name, &why) < 0)
			bad(r, why);
		else
			ok(r);
	} else if (!strcmp(colon + 1, "maintenance") && inst) {
		if ((why = instance_maintenance(r, inst)))
			bad(r, why);
		else
			ok(r);
	} else if (!strcmp(colon + 1, "delete") && inst) {
		json_object_del(ce_scope(ce.inst, zone, 0), name);
		ok(r);
	} else {
		bad(r, inst ? "unknown action" : "no such instance");
	}
	free(zone);
	free(name);
}

void fg_compute_admin(struct fg_req *r, const char *rest)
{
	const char *p = rest + strlen("compute");
	int get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST");

	fg_lock();
	ce_tick();
	if (post)
		ce_changed(); /* capacity, quota, flex, preemption, seeds */
	if (get && !*p) {
		fg_reply_json(r, 200, view());
	} else if (post && !strncmp(p, "/instances/", 11)) {
		instance_action(r, p + 11);
	} else if (post && !strncmp(p, "/zones/", 7) && strchr(p + 7, ':')) {
		char *zone = xstrndup(p + 7, (size_t)(strchr(p + 7, ':') - p - 7));
		zone_action(r, zone, strchr(p + 7, ':') + 1);
		free(zone);
	} else if (post && !strcmp(p, "/instanceGroupManagers:seed")) {
		ce_seed(r, 1);
	} else if (post && !strcmp(p, "/instances:seed")) {
		ce_seed(r, 0);
	} else if (post && !strcmp(p, "/quota")) {
		quota(r);
	} else if (post && !strcmp(p, ":settle")) {
		settle();
		ok(r);
	} else {
		fg_reply_error(r, 404, "NOT_FOUND", NULL, "no admin endpoint %s %s", r->method, r->path);
	}
	fg_unlock();
}
