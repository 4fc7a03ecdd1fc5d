/*
 * The diff of a node's fields (model/node_fields.h): which change patches
 * in place and which replaces the node.
 *
 * Rule (docs/cloud-tpu-api.md section 8; docs/fleet-file.md "Node fields"): what
 * nodes.patch supports -- tags, metadata, network_config.enable_external_ips
 * (and labels, in diff.c) -- is updated in place with one patch whose
 * updateMask lists them; any other field forces replacement, and the plan
 * line says "# forces replacement", as Terraform's google_tpu_v2_vm does.
 *
 * A field the fleet file leaves unset is not compared (the API fills in
 * defaults: the "default" network, the compute service account; a node
 * adopted or imported keeps the metadata and tags it had). tags, metadata
 * and data_disks are also compared when the state records that tpuform
 * set them, so that removing them from the file removes them from the
 * node. Network paths compare by their last segment ("default" and
 * "projects/p/global/networks/default" are the same network). Reservations
 * compare with the state's record of how the node was requested when
 * there is one: a queued resource's node does not say.
 */
#include "plan/plan_internal.h"
#include "util/str.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* A JSON value as the plan shows it (compact); v is stolen. */
static char *show(json_t *v)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(v);
	return s ? s : xstrdup("null");
}

static json_t *strv(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static void change(struct tpf_action *a, const char *field, json_t *before, json_t *after,
		   int forces)
{
	char *b = before ? show(before) : NULL, *v = after ? show(after) : NULL;
	tpf_action_change_take(a, field, b, v, forces);
}

static json_t *tri(enum tpf_tri t)
{
	return t == TPF_TRI_UNSET ? json_null() : json_boolean(t == TPF_TRI_TRUE);
}

static json_t *sa_json(const struct tpf_node_fields *f)
{
	json_t *o = json_object();
	if (f->sa_email)
		json_object_set_new(o, "email", json_string(f->sa_email));
	if (f->nsa_scopes)
		json_object_set_new(o, "scopes", strv(f->sa_scopes, f->nsa_scopes));
	return o;
}

static json_t *disks_json(const struct tpf_node_fields *f)
{
	json_t *a = json_array();
	for (size_t i = 0; i < f->ndisks; i++)
		json_array_append_new(a, json_pack("{s:s, s:s}", "source_disk",
						   f->disks[i].source_disk, "mode",
						   f->disks[i].mode ? f->disks[i].mode : "READ_WRITE"));
	return a;
}

/* Metadata for people: ssh-keys hidden unless declared (tpuform's own
 * key line is not the user's business, and long). */
static json_t *md_json(const struct tpf_kvlist *m, int with_ssh_keys)
{
	json_t *o = json_object();
	for (size_t i = 0; i < m->n; i++)
		if (with_ssh_keys || strcmp(m->items[i].key, "ssh-keys"))
			json_object_set_new(o, m->items[i].key, json_string(m->items[i].value));
	return o;
}

static const char *last_segment(const char *s)
{
	const char *p = s ? strrchr(s, '/') : NULL;
	return p ? p + 1 : s;
}

static int same_strv(char **a, size_t na, char **b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]))
			return 0;
	return 1;
}

static int same_disks(const struct tpf_node_fields *a, const struct tpf_node_fields *b)
{
	if (a->ndisks != b->ndisks)
		return 0;
	for (size_t i = 0; i < a->ndisks; i++) {
		const char *ma = a->disks[i].mode ? a->disks[i].mode : "READ_WRITE";
		const char *mb = b->disks[i].mode ? b->disks[i].mode : "READ_WRITE";
		if (!tpf_streq(a->disks[i].source_disk, b->disks[i].source_disk) || strcmp(ma, mb))
			return 0;
	}
	return 1;
}

void tpf_diff_node_new(struct tpf_action *a, const struct tpf_recipe *r)
{
	const struct tpf_node_fields *f = &r->node;
	if (f->can_ip_forward)
		change(a, "can_ip_forward", NULL, tri(f->can_ip_forward), 0);
	if (f->ndisks)
		change(a, "data_disks", NULL, disks_json(f), 0);
	if (f->enable_external_ips)
		change(a, "enable_external_ips", NULL, tri(f->enable_external_ips), 0);
	if (f->metadata.n)
		change(a, "metadata", NULL, md_json(&f->metadata, 1), 0);
	if (f->network)
		change(a, "network", NULL, json_string(f->network), 0);
	if (f->reservation)
		change(a, "reservation", NULL, json_string(f->reservation), 0);
	if (f->reserved)
		change(a, "reserved", NULL, json_true(), 0);
	if (f->sa_email || f->nsa_scopes)
		change(a, "service_account", NULL, sa_json(f), 0);
	if (f->secure_boot)
		change(a, "shielded_instance", NULL,
		       json_pack("{s:o}", "secure_boot", tri(f->secure_boot)), 0);
	if (f->subnetwork)
		change(a, "subnetwork", NULL, json_string(f->subnetwork), 0);
	if (f->ntags)
		change(a, "tags", NULL, strv(f->tags, f->ntags), 0);
	if (f->topology)
		change(a, "topology", NULL, json_string(f->topology), 0);
}

/* The network fields, compared only when declared. */
static void replace_network(struct tpf_action *a, const struct tpf_node_fields *w,
			    const struct tpf_node_fields *l)
{
	if (w->network && strcmp(last_segment(w->network), last_segment(l->network ? l->network
										   : "default")))
		change(a, "network", l->network ? json_string(l->network) : json_null(),
		       json_string(w->network), 1);
	if (w->subnetwork &&
	    strcmp(last_segment(w->subnetwork), last_segment(l->subnetwork ? l->subnetwork : "")))
		change(a, "subnetwork", l->subnetwork ? json_string(l->subnetwork) : json_null(),
		       json_string(w->subnetwork), 1);
	if (w->can_ip_forward && w->can_ip_forward != (l->can_ip_forward ? l->can_ip_forward
								       : TPF_TRI_FALSE))
		change(a, "can_ip_forward", tri(l->can_ip_forward), tri(w->can_ip_forward), 1);
}

void tpf_diff_node_replace(struct tpf_action *a, const struct tpf_recipe *want,
			   const struct tpf_recipe *live, const struct tpf_recipe *recorded)
{
	const struct tpf_node_fields *w = &want->node, *l = &live->node;
	const struct tpf_node_fields *asked = recorded ? &recorded->node : l;
	replace_network(a, w, l);
	if ((w->ndisks || (recorded && recorded->node.ndisks)) && !same_disks(w, l))
		change(a, "data_disks", disks_json(l), disks_json(w), 1);
	if (!tpf_streq(w->reservation, asked->reservation))
		change(a, "reservation", asked->reservation ? json_string(asked->reservation)
							    : json_null(),
		       w->reservation ? json_string(w->reservation) : json_null(), 1);
	if (!w->reserved != !asked->reserved)
		change(a, "reserved", json_boolean(asked->reserved), json_boolean(w->reserved), 1);
	int sa_differs = (w->sa_email && !tpf_streq(w->sa_email, l->sa_email)) ||
			 (w->nsa_scopes &&
			  !same_strv(w->sa_scopes, w->nsa_scopes, l->sa_scopes, l->nsa_scopes));
	if (sa_differs)
		change(a, "service_account", sa_json(l), sa_json(w), 1);
	if (w->secure_boot && w->secure_boot != (l->secure_boot ? l->secure_boot : TPF_TRI_FALSE))
		change(a, "shielded_instance", json_pack("{s:o}", "secure_boot", tri(l->secure_boot)),
		       json_pack("{s:o}", "secure_boot", tri(w->secure_boot)), 1);
	if (w->topology && !tpf_streq(w->topology, l->topology))
		change(a, "topology", l->topology ? json_string(l->topology) : json_null(),
		       json_string(w->topology), 1);
}

unsigned tpf_diff_node_patch(struct tpf_action *a, const struct tpf_recipe *want,
			     const struct tpf_recipe *live, const struct tpf_recipe *recorded)
{
	int owns_md = want->node.metadata.n || (recorded && recorded->node.metadata.n);
	int owns_tags = want->node.ntags || (recorded && recorded->node.ntags);
	const struct tpf_node_fields *w = &want->node, *l = &live->node;
	unsigned fields = 0;
	if (w->enable_external_ips &&
	    w->enable_external_ips != (l->enable_external_ips ? l->enable_external_ips
							       : TPF_TRI_FALSE)) {
		fields |= TPF_PATCH_EXTERNAL_IPS;
		change(a, "enable_external_ips", tri(l->enable_external_ips),
		       tri(w->enable_external_ips), 0);
	}
	if (owns_md && !tpf_metadata_matches(&w->metadata, &l->metadata)) {
		int ssh = tpf_kvlist_get(&w->metadata, "ssh-keys") != NULL;
		fields |= TPF_PATCH_METADATA;
		change(a, "metadata", md_json(&l->metadata, ssh), md_json(&w->metadata, ssh), 0);
	}
	if (owns_tags && !same_strv(w->tags, w->ntags, l->tags, l->ntags)) {
		fields |= TPF_PATCH_TAGS;
		change(a, "tags", strv(l->tags, l->ntags), strv(w->tags, w->ntags), 0);
	}
	return fields;
}

void tpf_diff_node_notes(const struct tpf_live_node *ln, struct tpf_diags *d)
{
	if (ln->health_description)
		tpf_warn(d, ln->name, "note: node '%s' health: %s", ln->name, ln->health_description);
	if (ln->symptoms)
		tpf_warn(d, ln->name, "note: node '%s' symptoms: %s", ln->name, ln->symptoms);
	if (ln->maintenance)
		tpf_warn(d, ln->name, "note: node '%s' upcoming maintenance: %s", ln->name,
			 ln->maintenance);
}
