/*
 * The node fields (model/node_fields.h) as the Cloud TPU v2 Node spells
 * them, both ways, and a node's condition notes (healthDescription,
 * symptoms, upcomingMaintenance). Field names: the discovery document's
 * schemas Node, NetworkConfig, ServiceAccount (its list is `scope`,
 * singular), AttachedDisk, ShieldedInstanceConfig, SchedulingConfig,
 * AcceleratorConfig, Symptom, UpcomingMaintenance (docs/cloud-tpu-api.md
 * section 4).
 */
#include "providers/gcp/tpu/gcp_node.h"
#include "model/accel.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static json_t *strv(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

json_t *tpf_gcp_network_config(const struct tpf_node_fields *nf, int external_ips)
{
	json_t *nc = json_object();
	if (nf->network)
		json_object_set_new(nc, "network", json_string(nf->network));
	if (nf->subnetwork)
		json_object_set_new(nc, "subnetwork", json_string(nf->subnetwork));
	if (nf->enable_external_ips != TPF_TRI_UNSET)
		external_ips = nf->enable_external_ips == TPF_TRI_TRUE;
	if (external_ips || nf->enable_external_ips == TPF_TRI_FALSE)
		json_object_set_new(nc, "enableExternalIps", json_boolean(external_ips));
	if (nf->can_ip_forward != TPF_TRI_UNSET)
		json_object_set_new(nc, "canIpForward",
				    json_boolean(nf->can_ip_forward == TPF_TRI_TRUE));
	if (!json_object_size(nc)) {
		json_decref(nc);
		return NULL;
	}
	return nc;
}

json_t *tpf_gcp_tags_json(const struct tpf_node_fields *nf)
{
	return strv(nf->tags, nf->ntags);
}

void tpf_gcp_node_fields_body(const struct tpf_recipe *r, json_t *b)
{
	const struct tpf_node_fields *nf = &r->node;
	if (nf->topology && r->accelerator_type) {
		/* acceleratorConfig instead of acceleratorType: the API refuses both. */
		char *family = xstrdup(r->accelerator_type);
		char *dash = strrchr(family, '-');
		if (dash)
			*dash = '\0';
		json_object_del(b, "acceleratorType");
		json_object_set_new(b, "acceleratorConfig",
				    json_pack("{s:s, s:s}", "type", tpf_accel_config_type(family),
					      "topology", nf->topology));
		free(family);
	}
	if (nf->reserved && !r->queued) {
		json_t *sc = json_object_get(b, "schedulingConfig");
		if (!sc)
			json_object_set_new(b, "schedulingConfig", sc = json_object());
		json_object_set_new(sc, "reserved", json_true());
	}
	if (nf->ntags)
		json_object_set_new(b, "tags", tpf_gcp_tags_json(nf));
	if (nf->sa_email || nf->nsa_scopes) {
		json_t *sa = json_object();
		if (nf->sa_email)
			json_object_set_new(sa, "email", json_string(nf->sa_email));
		if (nf->nsa_scopes)
			json_object_set_new(sa, "scope", strv(nf->sa_scopes, nf->nsa_scopes));
		json_object_set_new(b, "serviceAccount", sa);
	}
	if (nf->ndisks) {
		json_t *a = json_array();
		for (size_t i = 0; i < nf->ndisks; i++) {
			json_t *dk = json_pack("{s:s}", "sourceDisk", nf->disks[i].source_disk);
			if (nf->disks[i].mode)
				json_object_set_new(dk, "mode", json_string(nf->disks[i].mode));
			json_array_append_new(a, dk);
		}
		json_object_set_new(b, "dataDisks", a);
	}
	if (nf->secure_boot != TPF_TRI_UNSET)
		json_object_set_new(b, "shieldedInstanceConfig",
				    json_pack("{s:b}", "enableSecureBoot",
					      nf->secure_boot == TPF_TRI_TRUE));
}

static char **strv_of(json_t *a, size_t *n)
{
	size_t i;
	json_t *v;
	*n = 0;
	if (!json_array_size(a))
		return NULL;
	char **out = xcalloc(json_array_size(a), sizeof(*out));
	json_array_foreach(a, i, v)
		if (json_is_string(v))
			out[(*n)++] = xstrdup(json_string_value(v));
	return out;
}

static enum tpf_tri tri_of(json_t *v)
{
	return json_is_boolean(v) ? TPF_TRI(json_is_true(v)) : TPF_TRI_UNSET;
}

static char *str_of(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v && *v ? xstrdup(v) : NULL;
}

void tpf_gcp_node_fields_parse(json_t *node, struct tpf_node_fields *nf)
{
	json_t *nc = json_object_get(node, "networkConfig");
	json_t *sa = json_object_get(node, "serviceAccount");
	json_t *disks = json_object_get(node, "dataDisks"), *v;
	const char *k;
	size_t i;
	tpf_node_fields_release(nf);
	nf->network = str_of(nc, "network");
	nf->subnetwork = str_of(nc, "subnetwork");
	/* proto3: an absent boolean is false. */
	nf->enable_external_ips = TPF_TRI(json_is_true(json_object_get(nc, "enableExternalIps")));
	nf->can_ip_forward = TPF_TRI(json_is_true(json_object_get(nc, "canIpForward")));
	nf->tags = strv_of(json_object_get(node, "tags"), &nf->ntags);
	nf->sa_email = str_of(sa, "email");
	nf->sa_scopes = strv_of(json_object_get(sa, "scope"), &nf->nsa_scopes);
	json_object_foreach(json_object_get(node, "metadata"), k, v)
		if (json_is_string(v))
			tpf_kvlist_set(&nf->metadata, k, json_string_value(v));
	if (json_array_size(disks))
		nf->disks = xcalloc(json_array_size(disks), sizeof(*nf->disks));
	json_array_foreach(disks, i, v) {
		char *src = str_of(v, "sourceDisk");
		if (!src)
			continue;
		nf->disks[nf->ndisks].source_disk = src;
		nf->disks[nf->ndisks++].mode = str_of(v, "mode");
	}
	nf->secure_boot =
		tri_of(json_object_get(json_object_get(node, "shieldedInstanceConfig"), "enableSecureBoot"));
	if (nf->secure_boot == TPF_TRI_UNSET && json_object_get(node, "shieldedInstanceConfig"))
		nf->secure_boot = TPF_TRI_FALSE;
	nf->reserved = json_is_true(json_object_get(json_object_get(node, "schedulingConfig"),
						    "reserved"));
	nf->topology = str_of(json_object_get(node, "acceleratorConfig"), "topology");
}

/* "OUT_OF_MEMORY (worker 1): details" for each Symptom, joined by "; ". */
static char *symptoms_text(json_t *a)
{
	struct tpf_buf b = TPF_BUF_INIT;
	size_t i;
	json_t *s;
	json_array_foreach(a, i, s) {
		const char *type = json_string_value(json_object_get(s, "symptomType"));
		const char *worker = json_string_value(json_object_get(s, "workerId"));
		const char *details = json_string_value(json_object_get(s, "details"));
		if (b.len)
			tpf_buf_adds(&b, "; ");
		tpf_buf_adds(&b, type && *type ? type : "SYMPTOM_TYPE_UNSPECIFIED");
		if (worker && *worker)
			tpf_buf_addf(&b, " (worker %s)", worker);
		if (details && *details)
			tpf_buf_addf(&b, ": %s", details);
	}
	return b.len ? tpf_buf_detach(&b, NULL) : (tpf_buf_release(&b), NULL);
}

void tpf_gcp_node_notes_parse(json_t *node, struct tpf_live_node *out)
{
	out->health_description = str_of(node, "healthDescription");
	out->symptoms = symptoms_text(json_object_get(node, "symptoms"));
	tpf_gcp_maintenance_parse(json_object_get(node, "upcomingMaintenance"), out);
}
