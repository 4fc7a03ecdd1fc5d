/*
 * The node fields of the fleet file (issue 10 point 3; docs/fleet-file.md "Node
 * fields"): network, subnetwork, enable_external_ips, can_ip_forward, tags,
 * service_account, metadata, data_disks, shielded_instance, reserved,
 * reservation -- fleet-wide defaults that a group's own keys override
 * (metadata merges key by key, as env does) -- and the group-only
 * `topology`. Values go to struct tpf_node_fields (model/node_fields.h),
 * which the provider sends as the Cloud TPU v2 discovery document spells
 * them (docs/cloud-tpu-api.md section 4).
 */
#include "config/config_walk.h"
#include "model/accel.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static const char *const sa_keys[] = { "email", "scopes", NULL };
static const char *const disk_keys[] = { "source_disk", "mode", NULL };
static const char *const shielded_keys[] = { "secure_boot", NULL };
static const char *const mode_words[] = { "read-write", "read-only", "READ_WRITE", "READ_ONLY",
					  NULL };

/* GCE network tags: RFC 1035 labels, https://cloud.google.com/vpc/docs/add-remove-network-tags
 * ("lowercase letters, numbers and hyphens; start with a letter, end with
 * a letter or number; at most 63 characters"). */
static int tag_ok(const char *s)
{
	size_t n = strlen(s);
	return n && n <= 63 && s[0] >= 'a' && s[0] <= 'z' && s[n - 1] != '-' && cfg_all_of(s, "-");
}

/* Metadata keys: https://cloud.google.com/compute/docs/metadata/setting-custom-metadata
 * ("[a-zA-Z0-9-_], at most 128 bytes"). */
static int md_key_ok(const char *s)
{
	size_t n = strlen(s);
	return n && n <= 128 &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == n;
}

/* A list of scalars (a lone scalar reads as a list of one) into a fresh
 * array; ok(s) checks each. *n counts the good ones. */
static char **read_list(struct cfg *c, yaml_node_t *v, const char *name, const char *expect,
			int (*ok)(const char *), size_t *n)
{
	yaml_node_item_t *it, *end;
	*n = 0;
	if (v->type != YAML_SEQUENCE_NODE) {
		cfg_type_error(c, v, name, expect, NULL);
		return NULL;
	}
	it = v->data.sequence.items.start;
	end = v->data.sequence.items.top;
	char **out = xcalloc((size_t)(end - it) + 1, sizeof(*out));
	for (; it < end; it++) {
		yaml_node_t *x = cfg_node(c, *it);
		const char *s = x->type == YAML_SCALAR_NODE && !cfg_is_null(x) ? cfg_text(x) : NULL;
		if (!s || !ok(s)) {
			struct tpf_buf got = TPF_BUF_INIT;
			cfg_describe(&got, x, 0);
			cfg_error(c, x, NULL, "each entry of '%s' must be %s, got %s", name, expect,
				  got.buf);
			tpf_buf_release(&got);
			continue;
		}
		out[(*n)++] = xstrdup(s);
	}
	return out;
}

static int scope_ok(const char *s)
{
	return !strncmp(s, "https://www.googleapis.com/auth/", 32) && s[32];
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void read_service_account(struct cfg *c, yaml_node_t *v, struct tpf_node_fields *nf)
{
	struct cfg_map m;
	yaml_node_t *x;
	if (cfg_map_open(&m, c, v, "'service_account'", "a mapping with 'email' and 'scopes'",
			 sa_keys, "in service_account", "service_account") < 0)
		return;
	free(nf->sa_email);
	nf->sa_email = NULL;
	free_strv(nf->sa_scopes, nf->nsa_scopes);
	nf->sa_scopes = NULL;
	nf->nsa_scopes = 0;
	if ((x = cfg_map_get(&m, "email"))) {
		const char *s = cfg_want_text(c, x, "email", "a service account email", 0);
		if (s && !strchr(s, '@'))
			cfg_error(c, x, "e.g. trainer@my-project.iam.gserviceaccount.com",
				  "'email' must be a service account email, got '%s'", s);
		else if (s)
			nf->sa_email = xstrdup(s);
	}
	if ((x = cfg_map_get(&m, "scopes")))
		nf->sa_scopes = read_list(c, x, "scopes",
					  "an OAuth scope URL such as "
					  "'https://www.googleapis.com/auth/cloud-platform'",
					  scope_ok, &nf->nsa_scopes);
}

static void metadata_pair(struct cfg *c, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	const char *key = cfg_text(k);
	if (!md_key_ok(key)) {
		cfg_error(c, k, "metadata keys are 1 to 128 letters, digits, '-' or '_'",
			  "metadata key '%s' is not a valid key", key);
		return;
	}
	const char *s = cfg_want_text(c, v, key, "text (a string)", 1);
	if (s)
		tpf_kvlist_set(arg, key, s);
}

static void read_disk(struct cfg *c, yaml_node_t *v, struct tpf_data_disk *dk)
{
	struct cfg_map m;
	yaml_node_t *x;
	int e;
	if (cfg_map_open(&m, c, v, "each data disk", "a mapping with 'source_disk' and 'mode'",
			 disk_keys, "in data_disks", "data disk") < 0)
		return;
	if ((x = cfg_map_require(&m, "source_disk",
				 "the disk's full path: projects/P/zones/Z/disks/NAME"))) {
		const char *s = cfg_want_text(c, x, "source_disk", "a disk path", 0);
		if (s && (strncmp(s, "projects/", 9) || !strstr(s, "/disks/")))
			cfg_error(c, x, "the API wants the full path of an existing disk",
				  "'source_disk' must be projects/P/zones/Z/disks/NAME, got '%s'", s);
		else if (s)
			dk->source_disk = xstrdup(s);
	}
	if ((x = cfg_map_get(&m, "mode")) &&
	    cfg_want_enum(c, x, "mode", mode_words, "read-write or read-only", &e) == 0)
		dk->mode = xstrdup(e % 2 == 0 ? "READ_WRITE" : "READ_ONLY");
}

static void read_disks(struct cfg *c, yaml_node_t *v, struct tpf_node_fields *nf)
{
	for (size_t i = 0; i < nf->ndisks; i++) {
		free(nf->disks[i].source_disk);
		free(nf->disks[i].mode);
	}
	free(nf->disks);
	nf->disks = NULL;
	nf->ndisks = 0;
	if (v->type != YAML_SEQUENCE_NODE) {
		cfg_type_error(c, v, "data_disks", "a list of {source_disk, mode}", NULL);
		return;
	}
	yaml_node_item_t *it = v->data.sequence.items.start, *end = v->data.sequence.items.top;
	nf->disks = xcalloc((size_t)(end - it) + 1, sizeof(*nf->disks));
	for (; it < end; it++) {
		struct tpf_data_disk *dk = &nf->disks[nf->ndisks];
		read_disk(c, cfg_node(c, *it), dk);
		if (dk->source_disk) {
			nf->ndisks++;
		} else {
			free(dk->mode);
			dk->mode = NULL;
		}
	}
}

static void read_tri(struct cfg *c, const struct cfg_map *m, const char *key, enum tpf_tri *out)
{
	yaml_node_t *x = cfg_map_get(m, key);
	int b;
	if (x && cfg_want_bool(c, x, key, &b) == 0)
		*out = TPF_TRI(b);
}

static void read_text(struct cfg *c, const struct cfg_map *m, const char *key, const char *expect,
		      char **out)
{
	yaml_node_t *x = cfg_map_get(m, key);
	const char *s = x ? cfg_want_text(c, x, key, expect, 0) : NULL;
	if (s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_/.") !=
			 strlen(s))
		cfg_error(c, x, NULL, "'%s' must be %s, got '%s'", key, expect, s);
	else if (s)
		xstrset(out, s);
}

void cfg_read_node_fields(struct cfg *c, const struct cfg_map *m, struct tpf_node_fields *nf)
{
	yaml_node_t *x;
	struct cfg_map sm;
	read_text(c, m, "network", "a network name or path such as 'default'", &nf->network);
	read_text(c, m, "subnetwork", "a subnetwork name or path", &nf->subnetwork);
	read_tri(c, m, "enable_external_ips", &nf->enable_external_ips);
	read_tri(c, m, "can_ip_forward", &nf->can_ip_forward);
	if ((x = cfg_map_get(m, "tags"))) {
		free_strv(nf->tags, nf->ntags);
		nf->tags = read_list(c, x, "tags", "a network tag (lowercase letters, digits and '-')",
				     tag_ok, &nf->ntags);
	}
	if ((x = cfg_map_get(m, "service_account")))
		read_service_account(c, x, nf);
	if ((x = cfg_map_get(m, "metadata")) &&
	    cfg_map_open(&sm, c, x, "'metadata'", "a mapping of metadata keys to text", NULL,
			 "in metadata", "metadata") == 0)
		cfg_each_pair(c, &sm, metadata_pair, &nf->metadata);
	if ((x = cfg_map_get(m, "data_disks")))
		read_disks(c, x, nf);
	if ((x = cfg_map_get(m, "shielded_instance")) &&
	    cfg_map_open(&sm, c, x, "'shielded_instance'", "a mapping with 'secure_boot'",
			 shielded_keys, "in shielded_instance", "shielded_instance") == 0)
		read_tri(c, &sm, "secure_boot", &nf->secure_boot);
	if ((x = cfg_map_get(m, "reserved")))
		cfg_want_bool(c, x, "reserved", &nf->reserved);
	read_text(c, m, "reservation", "a reservation name or projects/P/locations/Z/reservations/R",
		  &nf->reservation);
}

void cfg_check_group_node(struct cfg *c, const struct cfg_map *m, struct tpf_group *g,
			  const char *label)
{
	const struct tpf_node_fields *nf = &g->node;
	yaml_node_t *at = cfg_map_get(m, "reservation");
	if (nf->reservation && !g->queued)
		cfg_error(c, at ? at : m->at,
			  "a node is created under a reservation with 'reserved: true'; a named "
			  "reservation is a queued resource's reservationName: add 'queued: true'",
			  "'reservation' in group %s applies to queued resources only", label);
	if ((nf->reserved || nf->reservation) && (g->spot || g->preemptible)) {
		at = cfg_map_get(m, "spot") ? cfg_map_get(m, "spot") : cfg_map_get(m, "preemptible");
		cfg_error(c, at ? at : m->at, "reserved capacity is its own tier; choose one",
			  "group %s asks for reserved capacity and for %s nodes", label,
			  g->spot ? "spot" : "preemptible");
	}
}

int cfg_read_topology(struct cfg *c, const struct cfg_map *m, struct tpf_group *g,
		      yaml_node_t *type_at)
{
	yaml_node_t *x = cfg_map_get(m, "topology");
	const char *family = cfg_text(type_at), *why = NULL;
	struct tpf_accel a;
	if (!x)
		return 0;
	const char *topo = cfg_want_text(c, x, "topology", "a chip topology such as 2x2x2", 0);
	if (!topo)
		return 1;
	if (!tpf_accel_config_type(family)) {
		cfg_error(c, type_at,
			  "with 'topology', accelerator_type names the TPU version only, as "
			  "gcloud's --type does: accelerator_type: v4, topology: 2x2x2",
			  "'accelerator_type' must be one of v2, v3, v4, v5p, v5litepod or v6e when "
			  "'topology' is set, got '%s'", family ? family : "");
		return 1;
	}
	if (tpf_accel_topology(family, topo, &a, &why) < 0) {
		cfg_error(c, x, NULL, "'topology' must be %s, got '%s'", why, topo);
		return 1;
	}
	/* The type the API reports back for it (acceleratorType), so quota
	 * rules and the plan speak of v4-16 whichever way it was written. */
	g->accelerator_type = xasprintf("%s-%d", family, a.size);
	g->workers = a.workers;
	g->node.topology = xstrdup(topo);
	return 1;
}
