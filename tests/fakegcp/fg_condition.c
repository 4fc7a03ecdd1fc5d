/*
 * A node's condition as the real service reports it and tests inject it
 * (admin only): Node.healthDescription, Node.symptoms[] (schema Symptom:
 * createTime, symptomType, details, workerId) and Node.upcomingMaintenance
 * (schema UpcomingMaintenance: type, canReschedule, windowStartTime,
 * windowEndTime, latestWindowStartTime, maintenanceStatus). Enum values are
 * checked against the discovery document, so a test cannot inject what the
 * API would never send.
 *
 *   POST /__admin/nodes/Z/N:symptom?value=OUT_OF_MEMORY&worker=1&details=...
 *   POST /__admin/nodes/Z/N:healthDescription?value=TEXT
 *   POST /__admin/nodes/Z/N:maintenance?value=SCHEDULED&status=PENDING&start=T&end=T
 *   POST /__admin/nodes/Z/N:clearCondition
 */
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

static const char *arg(struct fg_req *r, const char *key)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

/* v is one of schema.field's enum values in the discovery document. */
static int enum_ok(const char *schema, const char *field, const char *v)
{
	json_t *en = json_object_get(
		json_object_get(json_object_get(fg_schema(schema), "properties"), field), "enum");
	size_t i;
	json_t *e;
	json_array_foreach(en, i, e)
		if (v && !strcmp(json_string_value(e), v))
			return 1;
	return 0;
}

static void set_opt(json_t *o, const char *k, const char *v)
{
	if (v && *v)
		json_object_set_new(o, k, json_string(v));
}

/* The condition actions; NULL when done, else the refusal for people. */
const char *fg_node_condition(struct fg_req *r, struct fg_node *n, const char *action)
{
	const char *value = arg(r, "value");
	char ts[40];
	if (!strcmp(action, "symptom")) {
		if (!enum_ok("Symptom", "symptomType", value))
			return "expected ?value= a Symptom.symptomType of the discovery document, "
			       "e.g. OUT_OF_MEMORY";
		json_t *list = json_object_get(n->res, "symptoms");
		if (!json_is_array(list))
			json_object_set_new(n->res, "symptoms", list = json_array());
		fg_timestamp(ts);
		json_t *s = json_pack("{s:s, s:s}", "createTime", ts, "symptomType", value);
		set_opt(s, "details", arg(r, "details"));
		set_opt(s, "workerId", arg(r, "worker"));
		json_array_append_new(list, s);
	} else if (!strcmp(action, "healthDescription")) {
		if (!value || !*value)
			return "expected ?value=TEXT";
		json_object_set_new(n->res, "healthDescription", json_string(value));
	} else if (!strcmp(action, "maintenance")) {
		const char *status = arg(r, "status");
		if (!enum_ok("UpcomingMaintenance", "type", value) ||
		    (status && !enum_ok("UpcomingMaintenance", "maintenanceStatus", status)))
			return "expected ?value= SCHEDULED or UNSCHEDULED and optional status= PENDING "
			       "or ONGOING (UpcomingMaintenance in the discovery document)";
		json_t *m = json_pack("{s:s}", "type", value);
		set_opt(m, "maintenanceStatus", status);
		set_opt(m, "windowStartTime", arg(r, "start"));
		set_opt(m, "windowEndTime", arg(r, "end"));
		json_object_set_new(n->res, "upcomingMaintenance", m);
	} else if (!strcmp(action, "clearCondition")) {
		json_object_del(n->res, "symptoms");
		json_object_del(n->res, "healthDescription");
		json_object_del(n->res, "upcomingMaintenance");
	} else {
		return "unknown node action; expected preempt, terminate, delete, state, health, "
		       "symptom, healthDescription, maintenance or clearCondition";
	}
	return NULL;
}
