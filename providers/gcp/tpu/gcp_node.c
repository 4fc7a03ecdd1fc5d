#include "providers/gcp/tpu/gcp_node.h"
#include "model/accel.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

char *tpf_gcp_name_zone(const char *name)
{
	const char *p = name ? strstr(name, "/locations/") : NULL;
	if (!p)
		return NULL;
	p += strlen("/locations/");
	const char *e = strchr(p, '/');
	size_t n = e ? (size_t)(e - p) : strlen(p);
	return n ? xstrndup(p, n) : NULL;
}

int tpf_gcp_node_in_fleet(json_t *node, const char *fleet)
{
	const char *v = json_string_value(json_object_get(json_object_get(node, "labels"),
							 TPF_LABEL_FLEET));
	return v && fleet && !strcmp(v, fleet);
}

static char *str_or_null(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v && *v ? xstrdup(v) : NULL;
}

int tpf_gcp_node_parse(json_t *node, const char *zone, int ssh_port, struct tpf_live_node *out)
{
	tpf_live_node_release(out);
	const char *full = json_string_value(json_object_get(node, "name"));
	if (!json_is_object(node) || !full || !*full)
		return -1;
	out->name = xstrdup(tpf_gcp_last_segment(full));
	out->id = str_or_null(node, "id");
	out->state = str_or_null(node, "state");
	if (!out->state)
		out->state = xstrdup("STATE_UNSPECIFIED");
	out->health = str_or_null(node, "health");
	out->create_time = str_or_null(node, "createTime");

	struct tpf_recipe *r = &out->recipe;
	r->accelerator_type = str_or_null(node, "acceleratorType");
	r->runtime_version = str_or_null(node, "runtimeVersion");
	r->zone = tpf_gcp_name_zone(full);
	if (!r->zone)
		r->zone = xstrdup(zone);
	tpf_gcp_node_fields_parse(node, &r->node);
	tpf_gcp_node_notes_parse(node, out);
	json_t *sc = json_object_get(node, "schedulingConfig");
	r->preemptible = json_is_true(json_object_get(sc, "preemptible"));
	r->spot = json_is_true(json_object_get(sc, "spot"));
	const char *qr = json_string_value(json_object_get(node, "queuedResource"));
	r->queued = qr && *qr;
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(node, "labels"), k, v) {
		if (json_is_string(v))
			tpf_kvlist_set(&r->labels, k, json_string_value(v));
	}

	json_t *eps = json_object_get(node, "networkEndpoints");
	size_t n = json_is_array(eps) ? json_array_size(eps) : 0;
	if (n) {
		out->endpoints = xcalloc(n, sizeof(*out->endpoints));
		for (size_t i = 0; i < n; i++) {
			json_t *ep = json_array_get(eps, i);
			struct tpf_endpoint *e = &out->endpoints[out->nendpoints++];
			e->ip = str_or_null(ep, "ipAddress");
			e->external_ip = str_or_null(json_object_get(ep, "accessConfig"), "externalIp");
			json_t *port = json_object_get(ep, "port");
			long p = json_is_integer(port) ? (long)json_integer_value(port) : 0;
			e->port = p > 0 && p < 65536 && p != TPF_GCP_TPU_RUNTIME_PORT ? (int)p : ssh_port;
		}
	}
	struct tpf_accel acc;
	if (out->nendpoints)
		r->workers = (int)out->nendpoints;
	else if (r->accelerator_type && tpf_accel_lookup(r->accelerator_type, &acc, NULL) == 0)
		r->workers = acc.workers;
	else
		r->workers = 1;
	return 0;
}

json_t *tpf_gcp_labels_body(const struct tpf_kvlist *labels)
{
	json_t *l = json_object();
	for (size_t i = 0; labels && i < labels->n; i++)
		json_object_set_new(l, labels->items[i].key, json_string(labels->items[i].value));
	json_t *b = json_object();
	json_object_set_new(b, "labels", l);
	return b;
}

json_t *tpf_gcp_node_body(const struct tpf_recipe *r, int external_ips, json_t *metadata)
{
	json_t *b = json_object();
	if (r->accelerator_type)
		json_object_set_new(b, "acceleratorType", json_string(r->accelerator_type));
	if (r->runtime_version)
		json_object_set_new(b, "runtimeVersion", json_string(r->runtime_version));
	if (r->spot)
		json_object_set_new(b, "schedulingConfig", json_pack("{s:b}", "spot", 1));
	else if (r->preemptible)
		json_object_set_new(b, "schedulingConfig", json_pack("{s:b}", "preemptible", 1));
	json_t *lb = tpf_gcp_labels_body(&r->labels);
	json_object_set(b, "labels", json_object_get(lb, "labels"));
	json_decref(lb);
	if (json_is_object(metadata))
		json_object_set_new(b, "metadata", json_deep_copy(metadata));
	json_t *nc = tpf_gcp_network_config(&r->node, external_ips);
	if (nc)
		json_object_set_new(b, "networkConfig", nc);
	tpf_gcp_node_fields_body(r, b);
	return b;
}
