/*
 * Fields both Google APIs of the gcp provider spell alike: a resource
 * name's last segment, the declared metadata, upcoming maintenance
 * (gcp_fields.c). Used by both back-ends (tpu/, compute/).
 */
#ifndef TPF_GCP_FIELDS_H
#define TPF_GCP_FIELDS_H

#include <jansson.h>
#include "model/live.h"
#include "model/recipe.h"

/* The part after the last '/' of a resource name (borrowed; the whole
 * string when there is no '/'). NULL gives NULL. */
const char *tpf_gcp_last_segment(const char *name);

/* The recipe's declared metadata (node.metadata) as an object of strings,
 * NULL when none (new reference). */
json_t *tpf_gcp_declared_metadata(const struct tpf_recipe *r);

/*
 * An UpcomingMaintenance object (the Cloud TPU Node's upcomingMaintenance,
 * or a Compute Engine instance's resourceStatus.upcomingMaintenance:
 * https://cloud.google.com/compute/docs/reference/rest/v1/instances, the
 * same fields type, maintenanceStatus, windowStartTime, windowEndTime,
 * canReschedule) into out->maintenance (text for people) and
 * out->maintenance_start (windowStartTime), replacing what they held;
 * both NULL when m is not a non-empty object.
 */
void tpf_gcp_maintenance_parse(json_t *m, struct tpf_live_node *out);
/* The fields of an UpcomingMaintenance tpf_gcp_maintenance_parse reads (a
 * partial response's sub-selection, the `fields` system parameter). */
#define TPF_GCP_MAINTENANCE_FIELDS "type,maintenanceStatus,windowStartTime,windowEndTime,canReschedule"

#endif
