/*
 * The node fields of a recipe: copy, release, and their JSON form in state
 * files and saved plans (model/node_fields.h).
 */
#include "model/node_fields.h"
#include "model/json_field.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static char **copy_strv(char **v, size_t n)
{
	if (!n)
		return NULL;
	char **out = xcalloc(n, sizeof(*out));
	for (size_t i = 0; i < n; i++)
		out[i] = xstrdup(v[i]);
	return out;
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void tpf_node_fields_copy(struct tpf_node_fields *dst, const struct tpf_node_fields *src)
{
	struct tpf_node_fields t = *src;
	t.network = xstrdup(src->network);
	t.subnetwork = xstrdup(src->subnetwork);
	t.tags = copy_strv(src->tags, src->ntags);
	t.sa_email = xstrdup(src->sa_email);
	t.sa_scopes = copy_strv(src->sa_scopes, src->nsa_scopes);
	t.metadata = (struct tpf_kvlist)TPF_KVLIST_INIT;
	tpf_kvlist_merge(&t.metadata, &src->metadata);
	t.disks = src->ndisks ? xcalloc(src->ndisks, sizeof(*t.disks)) : NULL;
	for (size_t i = 0; i < src->ndisks; i++) {
		t.disks[i].source_disk = xstrdup(src->disks[i].source_disk);
		t.disks[i].mode = xstrdup(src->disks[i].mode);
	}
	t.reservation = xstrdup(src->reservation);
	t.topology = xstrdup(src->topology);
	tpf_node_fields_release(dst);
	*dst = t;
}

void tpf_node_fields_release(struct tpf_node_fields *f)
{
	free(f->network);
	free(f->subnetwork);
	free_strv(f->tags, f->ntags);
	free(f->sa_email);
	free_strv(f->sa_scopes, f->nsa_scopes);
	tpf_kvlist_release(&f->metadata);
	for (size_t i = 0; i < f->ndisks; i++) {
		free(f->disks[i].source_disk);
		free(f->disks[i].mode);
	}
	free(f->disks);
	free(f->reservation);
	free(f->topology);
	memset(f, 0, sizeof(*f));
}

int tpf_node_fields_empty(const struct tpf_node_fields *f)
{
	return !f->network && !f->subnetwork && !f->enable_external_ips &&
	       !f->can_ip_forward && !f->ntags && !f->sa_email && !f->nsa_scopes &&
	       !f->metadata.n && !f->ndisks && !f->secure_boot && !f->reserved &&
	       !f->reservation && !f->topology;
}

char *tpf_patch_mask(unsigned fields)
{
	static const struct {
		unsigned bit;
		const char *path;
	} paths[] = {
		{ TPF_PATCH_LABELS, "labels" },
		{ TPF_PATCH_TAGS, "tags" },
		{ TPF_PATCH_METADATA, "metadata" },
		{ TPF_PATCH_EXTERNAL_IPS, "network_config.enable_external_ips" },
	};
	struct tpf_buf b = TPF_BUF_INIT;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (!(fields & paths[i].bit))
			continue;
		if (b.len)
			tpf_buf_addch(&b, ',');
		tpf_buf_adds(&b, paths[i].path);
	}
	return b.len ? tpf_buf_detach(&b, NULL) : (tpf_buf_release(&b), NULL);
}

static json_t *strv_json(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static void set_tri(json_t *o, const char *k, enum tpf_tri v)
{
	if (v != TPF_TRI_UNSET)
		json_object_set_new(o, k, json_boolean(v == TPF_TRI_TRUE));
}

void tpf_node_fields_to_json(const struct tpf_node_fields *f, json_t *o)
{
	tpf_json_set_str(o, "network", f->network);
	tpf_json_set_str(o, "subnetwork", f->subnetwork);
	set_tri(o, "enable_external_ips", f->enable_external_ips);
	set_tri(o, "can_ip_forward", f->can_ip_forward);
	if (f->ntags)
		json_object_set_new(o, "tags", strv_json(f->tags, f->ntags));
	if (f->sa_email || f->nsa_scopes) {
		json_t *sa = json_object();
		tpf_json_set_str(sa, "email", f->sa_email);
		if (f->nsa_scopes)
			json_object_set_new(sa, "scopes", strv_json(f->sa_scopes, f->nsa_scopes));
		json_object_set_new(o, "service_account", sa);
	}
	if (f->metadata.n) {
		json_t *m = json_object();
		for (size_t i = 0; i < f->metadata.n; i++)
			json_object_set_new(m, f->metadata.items[i].key,
					    json_string(f->metadata.items[i].value));
		json_object_set_new(o, "metadata", m);
	}
	if (f->ndisks) {
		json_t *a = json_array();
		for (size_t i = 0; i < f->ndisks; i++) {
			json_t *dk = json_object();
			tpf_json_set_str(dk, "source_disk", f->disks[i].source_disk);
			tpf_json_set_str(dk, "mode", f->disks[i].mode);
			json_array_append_new(a, dk);
		}
		json_object_set_new(o, "data_disks", a);
	}
	if (f->secure_boot != TPF_TRI_UNSET)
		json_object_set_new(o, "shielded_instance",
				    json_pack("{s:b}", "secure_boot", f->secure_boot == TPF_TRI_TRUE));
	if (f->reserved)
		json_object_set_new(o, "reserved", json_true());
	tpf_json_set_str(o, "reservation", f->reservation);
	tpf_json_set_str(o, "topology", f->topology);
}

static int get_tri(json_t *o, const char *k, enum tpf_tri *out, const char *what,
		   struct tpf_diags *d)
{
	json_t *v = json_object_get(o, k);
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return tpf_error(d, "%s: '%s' must be true or false", what, k);
	*out = TPF_TRI(json_is_true(v));
	return 0;
}

static int get_strv(json_t *o, const char *k, char ***out, size_t *n, const char *what,
		    struct tpf_diags *d)
{
	json_t *a = json_object_get(o, k), *v;
	size_t i;
	if (!a)
		return 0;
	if (!json_is_array(a))
		return tpf_error(d, "%s: '%s' must be a list of strings", what, k);
	*out = xcalloc(json_array_size(a) + 1, sizeof(**out));
	json_array_foreach(a, i, v) {
		if (!json_is_string(v))
			return tpf_error(d, "%s: '%s' must be a list of strings", what, k);
		(*out)[(*n)++] = xstrdup(json_string_value(v));
	}
	return 0;
}

static int get_disks(struct tpf_node_fields *f, json_t *a, const char *what, struct tpf_diags *d)
{
	size_t i;
	json_t *v;
	if (!a)
		return 0;
	if (!json_is_array(a))
		return tpf_error(d, "%s: 'data_disks' must be a list", what);
	f->disks = xcalloc(json_array_size(a) + 1, sizeof(*f->disks));
	json_array_foreach(a, i, v) {
		struct tpf_data_disk *dk = &f->disks[f->ndisks++];
		if (!json_is_object(v) || tpf_json_get_str(v, "source_disk", &dk->source_disk, what, d) ||
		    tpf_json_get_str(v, "mode", &dk->mode, what, d))
			return tpf_error(d, "%s: 'data_disks' entry %zu is malformed", what, i);
	}
	return 0;
}

int tpf_node_fields_from_json(struct tpf_node_fields *f, json_t *o, const char *what,
			      struct tpf_diags *d)
{
	json_t *sa = json_object_get(o, "service_account");
	json_t *sh = json_object_get(o, "shielded_instance");
	json_t *md = json_object_get(o, "metadata"), *v;
	json_t *rsv = json_object_get(o, "reserved");
	const char *k;
	if (rsv && !json_is_boolean(rsv))
		return tpf_error(d, "%s: 'reserved' must be true or false", what);
	f->reserved = json_is_true(rsv);
	if (tpf_json_get_str(o, "network", &f->network, what, d) ||
	    tpf_json_get_str(o, "subnetwork", &f->subnetwork, what, d) ||
	    get_tri(o, "enable_external_ips", &f->enable_external_ips, what, d) ||
	    get_tri(o, "can_ip_forward", &f->can_ip_forward, what, d) ||
	    get_strv(o, "tags", &f->tags, &f->ntags, what, d) ||
	    tpf_json_get_str(sa, "email", &f->sa_email, what, d) ||
	    get_strv(sa, "scopes", &f->sa_scopes, &f->nsa_scopes, what, d) ||
	    get_disks(f, json_object_get(o, "data_disks"), what, d) ||
	    get_tri(sh, "secure_boot", &f->secure_boot, what, d) ||
	    tpf_json_get_str(o, "reservation", &f->reservation, what, d) ||
	    tpf_json_get_str(o, "topology", &f->topology, what, d))
		return TPF_ERROR;
	if (md && !json_is_object(md))
		return tpf_error(d, "%s: 'metadata' must be an object of strings", what);
	json_object_foreach(md, k, v) {
		if (!json_is_string(v))
			return tpf_error(d, "%s: metadata '%s' must be a string", what, k);
		tpf_kvlist_set(&f->metadata, k, json_string_value(v));
	}
	return 0;
}

/* 1 when every line of `want` is a line of `have`. */
static int lines_within(const char *want, const char *have)
{
	const char *p = want;
	while (p && *p) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		int found = n == 0;
		for (const char *h = have; !found && h && *h;) {
			const char *he = strchr(h, '\n');
			size_t hn = he ? (size_t)(he - h) : strlen(h);
			found = hn == n && !strncmp(h, p, n);
			h = he ? he + 1 : NULL;
		}
		if (!found)
			return 0;
		p = e ? e + 1 : NULL;
	}
	return 1;
}

int tpf_metadata_matches(const struct tpf_kvlist *declared, const struct tpf_kvlist *live)
{
	static const char ssh_keys[] = "ssh-keys";
	for (size_t i = 0; i < declared->n; i++) {
		const char *k = declared->items[i].key, *v = tpf_kvlist_get(live, k);
		if (!v)
			return 0;
		if (!strcmp(k, ssh_keys) ? !lines_within(declared->items[i].value, v)
					 : strcmp(v, declared->items[i].value) != 0)
			return 0;
	}
	for (size_t i = 0; i < live->n; i++)
		if (strcmp(live->items[i].key, ssh_keys) && !tpf_kvlist_get(declared, live->items[i].key))
			return 0;
	return 1;
}
