/*
 * QueuedResource JSON <-> tpuform (gcp_qr.h). No network here.
 */
#include "model/node_state.h"
#include "providers/gcp/tpu/gcp_qr.h"
#include "model/accel.h"
#include "providers/gcp/tpu/gcp_multislice.h"
#include "providers/gcp/tpu/gcp_node.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *node_spec(json_t *qr)
{
	return json_array_get(json_object_get(json_object_get(qr, "tpu"), "nodeSpec"), 0);
}

int tpf_gcp_qr_in_fleet(json_t *qr, const char *fleet)
{
	return tpf_gcp_node_in_fleet(json_object_get(node_spec(qr), "node"), fleet);
}

void tpf_gcp_qr_release(struct tpf_gcp_qr *q)
{
	free(q->id);
	free(q->node_id);
	free(q->state);
	free(q->error);
	tpf_recipe_release(&q->recipe);
	memset(q, 0, sizeof(*q));
}

int tpf_gcp_qr_parse(json_t *qr, const char *zone, struct tpf_gcp_qr *out)
{
	tpf_gcp_qr_release(out);
	const char *full = json_string_value(json_object_get(qr, "name"));
	json_t *spec = node_spec(qr);
	const char *node_id = json_string_value(json_object_get(spec, "nodeId"));
	int slices = 0; /* multislice: the prefix names the unit (gcp_multislice.h) */
	if (full && *full && (!node_id || !*node_id))
		node_id = tpf_gcp_multislice_prefix(spec, tpf_gcp_last_segment(full), &slices);
	if (!json_is_object(qr) || !full || !*full || !node_id || !*node_id)
		return -1;
	out->id = xstrdup(tpf_gcp_last_segment(full));
	out->node_id = xstrdup(node_id);
	json_t *st = json_object_get(qr, "state");
	const char *s = json_string_value(json_object_get(st, "state"));
	out->state = xstrdup(s && *s ? s : "STATE_UNSPECIFIED");
	json_t *err = json_object_get(json_object_get(st, "failedData"), "error");
	if (json_is_object(err)) {
		json_t *code = json_object_get(err, "code");
		out->error_code = json_is_integer(code) ? (int)json_integer_value(code) : 2;
		const char *m = json_string_value(json_object_get(err, "message"));
		out->error = xstrdup(m && *m ? m : NULL);
	}

	/* The node as asked for: the same fields as a Node. */
	struct tpf_live_node tmp = { 0 };
	json_t *node = json_object_get(spec, "node");
	json_t *named = json_is_object(node) ? json_copy(node) : json_object();
	char *nname = xasprintf("%s/nodes/%s", json_string_value(json_object_get(spec, "parent"))
						   ? json_string_value(json_object_get(spec, "parent"))
						   : "",
				node_id);
	json_object_set_new(named, "name", json_string(nname));
	tpf_gcp_node_parse(named, zone, 22, &tmp);
	out->recipe = tmp.recipe; /* moved */
	memset(&tmp.recipe, 0, sizeof(tmp.recipe));
	tpf_live_node_release(&tmp);
	json_decref(named);
	free(nname);
	/* The queued resource's own name is the authority on its zone. */
	char *z = tpf_gcp_name_zone(full);
	if (z) {
		free(out->recipe.zone);
		out->recipe.zone = z;
	}
	if (json_object_get(qr, "spot")) {
		out->recipe.spot = 1;
		out->recipe.preemptible = 0;
	}
	out->recipe.queued = 1;
	if (slices > 1) {
		/* the node spec is one slice: its workers times the slices */
		out->recipe.workers = (out->recipe.workers > 0 ? out->recipe.workers : 1) * slices;
		out->recipe.slices = slices;
	}
	const char *rn = json_string_value(json_object_get(qr, "reservationName"));
	const char *rseg = tpf_gcp_last_segment(rn);
	if (rseg && !strcmp(rseg, "-"))
		out->recipe.node.reserved = 1;
	else if (rseg && *rseg)
		xstrset(&out->recipe.node.reservation, rseg);
	return 0;
}

char *tpf_gcp_duration(const char *text)
{
	double secs;
	if (!text || tpf_parse_duration(text, &secs) < 0 || !(secs >= 0 && secs < 1e15))
		return NULL;
	if (secs == (double)(long long)secs)
		return xasprintf("%llds", (long long)secs);
	/* google.protobuf.Duration: at most nanoseconds, no trailing zeros */
	char buf[64];
	snprintf(buf, sizeof(buf), "%.9f", secs);
	char *e = buf + strlen(buf) - 1;
	while (*e == '0')
		*e-- = '\0';
	return xasprintf("%ss", buf);
}

void tpf_gcp_qr_reservation(json_t *b, const char *project, const struct tpf_recipe *r)
{
	const char *name = r->node.reservation ? r->node.reservation : r->node.reserved ? "-" : NULL;
	if (!name)
		return;
	char *full = strchr(name, '/') ? xstrdup(name)
				       : xasprintf("projects/%s/locations/%s/reservations/%s", project,
						   r->zone ? r->zone : "", name);
	json_object_set_new(b, "reservationName", json_string(full));
	free(full);
}

json_t *tpf_gcp_qr_body(const char *project, const char *name, const struct tpf_recipe *r,
			int external_ips, json_t *metadata, struct tpf_diags *d)
{
	char *until = NULL;
	if (r->valid_until && !(until = tpf_gcp_duration(r->valid_until))) {
		tpf_errorx(d, name, "write a duration such as '6h' or '90m'",
			   "valid_until '%s' of node '%s' is not a duration", r->valid_until, name);
		return NULL;
	}
	json_t *node = tpf_gcp_node_body(r, external_ips, metadata);
	if (r->spot) /* the spot tier says it */
		json_object_del(node, "schedulingConfig");
	char *parent = xasprintf("projects/%s/locations/%s", project, r->zone ? r->zone : "");
	json_t *b = json_pack("{s:{s:[{s:s, s:s, s:o}]}}", "tpu", "nodeSpec", "parent", parent,
			      "nodeId", name, "node", node);
	if (r->spot)
		json_object_set_new(b, "spot", json_object());
	tpf_gcp_multislice_body(b, name, r);
	if (until)
		json_object_set_new(b, "queueingPolicy",
				    json_pack("{s:s}", "validUntilDuration", until));
	tpf_gcp_qr_reservation(b, project, r);
	free(parent);
	free(until);
	return b;
}

void tpf_gcp_qr_live(const struct tpf_gcp_qr *q, struct tpf_live_node *out)
{
	tpf_live_node_release(out);
	out->name = xstrdup(q->node_id);
	out->state = xstrdup(q->state);
	out->queued_state = xstrdup(q->state);
	tpf_recipe_copy(&out->recipe, &q->recipe);
}

void tpf_gcp_qr_merge(struct tpf_live_set *set, const struct tpf_gcp_qr *qrs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct tpf_gcp_qr *q = &qrs[i];
		tpf_gcp_multislice_fold(set, q);
		struct tpf_live_node *ln = tpf_live_set_find(set, q->node_id);
		if (!ln) {
			tpf_gcp_qr_live(q, tpf_live_set_add(set));
			continue;
		}
		xstrset(&ln->queued_state, q->state);
		ln->recipe.queued = 1;
		if (tpf_queued_state_dead(q->state))
			xstrset(&ln->state, q->state);
	}
}
