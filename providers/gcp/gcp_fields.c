/*
 * Fields both Google APIs of the gcp provider spell alike (gcp_fields.h).
 */
#include "providers/gcp/gcp_fields.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

const char *tpf_gcp_last_segment(const char *name)
{
	if (!name)
		return NULL;
	const char *s = strrchr(name, '/');
	return s ? s + 1 : name;
}

json_t *tpf_gcp_declared_metadata(const struct tpf_recipe *r)
{
	if (!r->node.metadata.n)
		return NULL;
	json_t *md = json_object();
	for (size_t i = 0; i < r->node.metadata.n; i++)
		json_object_set_new(md, r->node.metadata.items[i].key,
				    json_string(r->node.metadata.items[i].value));
	return md;
}

/* "SCHEDULED maintenance PENDING, window START to END". */
static char *maintenance_text(json_t *m)
{
	if (!json_is_object(m) || !json_object_size(m))
		return NULL;
	const char *type = json_string_value(json_object_get(m, "type"));
	const char *status = json_string_value(json_object_get(m, "maintenanceStatus"));
	const char *start = json_string_value(json_object_get(m, "windowStartTime"));
	const char *end = json_string_value(json_object_get(m, "windowEndTime"));
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_buf_addf(&b, "%s maintenance", type && *type ? type : "UNKNOWN_TYPE");
	if (status && *status)
		tpf_buf_addf(&b, " %s", status);
	if (start && *start)
		tpf_buf_addf(&b, ", window %s to %s", start, end && *end ? end : "?");
	if (json_is_true(json_object_get(m, "canReschedule")))
		tpf_buf_adds(&b, " (can be rescheduled)");
	return tpf_buf_detach(&b, NULL);
}

void tpf_gcp_maintenance_parse(json_t *m, struct tpf_live_node *out)
{
	free(out->maintenance);
	free(out->maintenance_start);
	out->maintenance = maintenance_text(m);
	const char *start = json_string_value(json_object_get(m, "windowStartTime"));
	out->maintenance_start = out->maintenance && start && *start ? xstrdup(start) : NULL;
}
