/*
 * The local provider's operations: nodes are directories under
 * <root>/nodes, created, listed, relabelled and deleted with the Cloud TPU
 * API's observable behaviour (states, errors, messages). See local.h.
 */
#include "model/node_state.h"
#include "providers/local/local.h"
#include "providers/local/local_internal.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Steps of the wait for CREATING to end (seconds). */
#define POLL_STEP 0.05
/* How long an injected create failure takes, at most (seconds). */
#define FAIL_DELAY 0.2

static struct tpf_local *impl_of(struct tpf_provider *p)
{
	return p->impl;
}

/* 1 if `item` is one of the comma-separated entries of env var `var`. */
static int env_list_has(const char *var, const char *item)
{
	const char *list = getenv(var);
	size_t len = strlen(item);
	while (list && *list) {
		const char *comma = strchr(list, ',');
		size_t n = comma ? (size_t)(comma - list) : strlen(list);
		while (n && list[0] == ' ') {
			list++;
			n--;
		}
		while (n && list[n - 1] == ' ')
			n--;
		if (n == len && !strncmp(list, item, len))
			return 1;
		list = comma ? comma + 1 : NULL;
	}
	return 0;
}

static int bad_name(struct tpf_diags *d, const char *name)
{
	return tpf_errorx(d, name,
			  "node names are 1 to 63 characters: a lowercase letter, then lowercase letters, digits or '-', not ending in '-'",
			  "node name '%s' is not valid", name ? name : "");
}

/* Label rules of Google Cloud resources: keys 1 to 63 characters starting
 * with a lowercase letter, values up to 63; lowercase letters, digits, '_'
 * and '-' (bytes >= 0x80 let UTF-8 "international characters" through),
 * at most 64 labels. The API refuses anything else with a 400. */
static int label_part_ok(const char *s, int is_key)
{
	size_t len = strlen(s);
	unsigned char first = (unsigned char)s[0];
	if (len > 63 || (is_key && !((first >= 'a' && first <= 'z') || first >= 0x80)))
		return 0;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' ||
		      *c == '-' || *c >= 0x80))
			return 0;
	return 1;
}

static int check_labels(const char *name, const struct tpf_kvlist *labels, struct tpf_diags *d)
{
	const char *rule = "label keys are 1 to 63 characters, values up to 63: lowercase letters, digits, '_' and '-', keys starting with a letter; at most 64 labels";
	if (labels->n > 64)
		return tpf_errorx(d, name, rule, "node '%s' has %zu labels: the API allows 64",
				  name, labels->n);
	for (size_t i = 0; i < labels->n; i++) {
		const struct tpf_kv *kv = &labels->items[i];
		if (!label_part_ok(kv->key, 1))
			return tpf_errorx(d, name, rule, "label key '%s' of node '%s' is not valid",
					  kv->key, name);
		if (!label_part_ok(kv->value ? kv->value : "", 0))
			return tpf_errorx(d, name, rule,
					  "value '%s' of label '%s' of node '%s' is not valid",
					  kv->value, kv->key, name);
	}
	return 0;
}

static void to_live(const struct tpf_local_node *n, struct tpf_live_node *out)
{
	struct tpf_live_node tmp = {
		.name = xstrdup(n->name),
		.id = xstrdup(n->id),
		.state = xstrdup(n->state),
		.health = xstrdup(n->health),
		.create_time = xstrdup(n->create_time),
	};
	tpf_recipe_copy(&tmp.recipe, &n->recipe);
	tmp.nendpoints = (size_t)n->recipe.workers;
	tmp.endpoints = xcalloc(tmp.nendpoints, sizeof(*tmp.endpoints));
	for (size_t i = 0; i < tmp.nendpoints; i++) {
		tmp.endpoints[i].ip = xstrdup("127.0.0.1");
		tmp.endpoints[i].port = 0;
	}
	tpf_live_node_release(out);
	*out = tmp;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int in_zones(const char *zone, const char *const *zones, size_t nzones)
{
	for (size_t i = 0; i < nzones; i++)
		if (zones[i] && !strcmp(zones[i], zone))
			return 1;
	return 0;
}

static int local_refresh(struct tpf_provider *p, const char *const *zones, size_t nzones,
			 struct tpf_live_set *out, struct tpf_diags *d)
{
	struct tpf_local *l = impl_of(p);
	char *nodes_dir = xasprintf("%s/nodes", l->root);
	char **names = NULL;
	size_t n = 0, alloc = 0;
	int err = 0;

	/* Listing is when a node directory found removed is noticed. A
	 * failure there is reported, but listing goes on. */
	tpf_local_reap_orphans(l->root, NULL, 0, d);
	DIR *dir = opendir(nodes_dir);
	if (!dir) {
		if (errno != ENOENT)
			err = tpf_error(d, "cannot list local nodes in '%s': %s", nodes_dir,
					strerror(errno));
		goto done; /* no node was ever created here */
	}
	struct dirent *e;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		struct stat st;
		char *path = xasprintf("%s/%s", nodes_dir, e->d_name);
		int is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
		free(path);
		if (!is_dir)
			continue;
		XGROW(names, n + 1, alloc);
		names[n++] = xstrdup(e->d_name);
	}
	closedir(dir);
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);

	for (size_t i = 0; i < n; i++) {
		struct tpf_local_node node = { 0 };
		int r = tpf_local_node_load(l->root, names[i], 1, &node, d);
		if (r == TPF_ENOTFOUND)
			continue; /* being created or deleted right now */
		if (r < 0)
			continue; /* reported (file, hint); the others still count */
		const char *fleet = tpf_kvlist_get(&node.recipe.labels, TPF_LABEL_FLEET);
		if (fleet && p->fleet->name && !strcmp(fleet, p->fleet->name) &&
		    in_zones(node.recipe.zone, zones, nzones))
			to_live(&node, tpf_live_set_add(out));
		tpf_local_node_release(&node);
	}
done:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(nodes_dir);
	return err;
}

static void quota_message(const struct tpf_recipe *r, struct tpf_buf *b)
{
	/* The shape of the API's 429 (docs/cloud-tpu-api.md section 6). */
	tpf_buf_adds(b, "Quota limit 'TPU");
	for (const char *s = r->accelerator_type; *s && *s != '-'; s++)
		tpf_buf_addch(b, (*s >= 'a' && *s <= 'z') ? *s - 'a' + 'A' : *s);
	if (r->spot || r->preemptible)
		tpf_buf_adds(b, "Preemptible");
	tpf_buf_addf(b, "PerProjectPerZoneForTPUAPI' has been exceeded. Limit: 0 in zone %s.",
		     r->zone);
}

/* Remove a node's directory and what its workers keep elsewhere. */
static int remove_files(const char *root, const char *name, int workers, struct tpf_diags *d)
{
	char *dir = tpf_local_node_dir(root, name);
	int err = 0;
	for (int w = 0; w < workers; w++) {
		char *home = tpf_local_home_path(root, name, w);
		if (tpf_local_forget_home(home, d) < 0)
			err = TPF_ERROR;
		free(home);
	}
	if (tpf_remove_tree(dir, d) < 0)
		err = TPF_ERROR;
	free(dir);
	return err;
}

/* Everything a new node needs on disk; the caller holds the node's lock. */
static int make_node(struct tpf_local *l, const char *name, const struct tpf_recipe *r,
		     struct tpf_diags *d)
{
	char *dir = tpf_local_node_dir(l->root, name);
	struct tpf_local_node n = { 0 };
	int err = 0;

	/* A directory without node.json is debris of a crashed create. */
	if (tpf_remove_tree(dir, d) < 0 || tpf_local_mkdir_private(dir, d) < 0) {
		err = TPF_ERROR;
		goto done;
	}
	for (int w = 0; w < r->workers; w++) {
		char *home = tpf_local_home_path(l->root, name, w);
		err = tpf_local_prepare_home(l->root, home, d);
		free(home);
		if (err)
			goto done;
	}

	char id[20], created[32];
	double now = tpf_now_wall();
	tpf_local_new_id(id);
	tpf_rfc3339(now, created, sizeof(created));
	n.name = xstrdup(name);
	n.id = xstrdup(id);
	n.state = xstrdup("CREATING");
	n.create_time = xstrdup(created);
	n.ready_at = now + (l->create_delay > 0 ? l->create_delay : 0);
	tpf_recipe_copy(&n.recipe, r);
	err = tpf_local_node_save(l->root, &n, d);
done:
	if (err)
		remove_files(l->root, name, r->workers, d);
	tpf_local_node_release(&n);
	free(dir);
	return err;
}

/*
 * Wait while node `name` is CREATING; then *node is the node as it is.
 * TPF_EINTERRUPTED when the provider's interrupt flag is seen (looked at
 * every POLL_STEP): the node stays CREATING and turns READY on its own, as
 * a node whose create operation nobody polls.
 */
static int wait_created(struct tpf_provider *p, const char *name, struct tpf_local_node *node,
			struct tpf_diags *d)
{
	struct tpf_local *l = impl_of(p);
	for (;;) {
		tpf_local_node_release(node);
		int rc = tpf_local_node_load(l->root, name, 1, node, d);
		if (rc == TPF_ENOTFOUND)
			return tpf_errorx(d, name, NULL, "node '%s' was deleted while it was being created",
					  name);
		if (rc < 0)
			return TPF_ERROR;
		if (tpf_node_state_of(node->state) != TPF_NODE_STATE_CREATING)
			return 0;
		if (tpf_provider_interrupted(p))
			return TPF_EINTERRUPTED;
		double left = node->ready_at - tpf_now_wall();
		tpf_sleep(left < POLL_STEP ? (left > 0.005 ? left : 0.005) : POLL_STEP);
	}
}

static int local_create(struct tpf_provider *p, const char *name, const struct tpf_recipe *r,
			struct tpf_live_node *out, struct tpf_diags *d)
{
	struct tpf_local *l = impl_of(p);
	struct tpf_recipe rr = { 0 };
	struct tpf_local_node node = { 0 };
	char *file = NULL;
	int err = 0, fd = -1;

	if (!tpf_local_name_valid(name))
		return bad_name(d, name);
	if (!r->zone || !*r->zone || !r->accelerator_type || !*r->accelerator_type ||
	    !r->runtime_version || !*r->runtime_version)
		return tpf_errorx(d, name, NULL,
				  "cannot create node '%s': zone, accelerator type and runtime version are required",
				  name);
	if (check_labels(name, &r->labels, d) < 0)
		return TPF_ERROR;
	tpf_recipe_copy(&rr, r);
	if (rr.workers < 1)
		rr.workers = 1;

	if (env_list_has("TPUFORM_LOCAL_NO_QUOTA", rr.zone)) {
		/* Quota is refused synchronously (HTTP 429). */
		struct tpf_buf msg = TPF_BUF_INIT;
		quota_message(&rr, &msg);
		tpf_errorx(d, name, "injected by TPUFORM_LOCAL_NO_QUOTA",
			   "cannot create node '%s' in zone '%s': %s", name, rr.zone, msg.buf);
		tpf_buf_release(&msg);
		err = TPF_EQUOTA;
		goto done;
	}
	if (env_list_has("TPUFORM_LOCAL_NO_CAPACITY", rr.zone)) {
		/* A stockout arrives as the failed create operation (code 8). */
		tpf_sleep(l->create_delay < FAIL_DELAY ? l->create_delay : FAIL_DELAY);
		tpf_errorx(d, name, "injected by TPUFORM_LOCAL_NO_CAPACITY",
			   "cannot create node '%s' in zone '%s': There is no more capacity in the zone \"%s\"; you can try in another zone where Cloud TPU Nodes are offered (see https://cloud.google.com/tpu/docs/regions)",
			   name, rr.zone, rr.zone);
		err = TPF_ECAPACITY;
		goto done;
	}

	if (tpf_local_lock(l->root, name, &fd, d) < 0) {
		err = TPF_ERROR;
		goto done;
	}
	file = tpf_local_node_file(l->root, name);
	if (access(file, F_OK) == 0) {
		err = tpf_errorx(d, name, "delete it first, or choose another name",
				 "node '%s' already exists", name);
		goto done;
	}
	/* An earlier node of this name whose directory was removed must not
	 * run its job next to the new one's. */
	if (tpf_local_reap_orphans(l->root, name, 1, d) < 0) {
		err = TPF_ERROR;
		goto done;
	}
	if (make_node(l, name, &rr, d) < 0) {
		err = TPF_ERROR;
		goto done;
	}
	tpf_local_unlock(fd);
	fd = -1;

	if (env_list_has("TPUFORM_LOCAL_FAIL_CREATE", name)) {
		tpf_sleep(l->create_delay < FAIL_DELAY ? l->create_delay : FAIL_DELAY);
		if (tpf_local_lock(l->root, name, &fd, d) == 0)
			remove_files(l->root, name, rr.workers, d);
		err = tpf_errorx(d, name, "injected by TPUFORM_LOCAL_FAIL_CREATE",
				 "cannot create node '%s': the create operation failed: Internal error",
				 name);
		goto done;
	}

	err = wait_created(p, name, &node, d);
	if (err)
		goto done;
	to_live(&node, out);
done:
	tpf_local_unlock(fd);
	tpf_local_node_release(&node);
	tpf_recipe_release(&rr);
	free(file);
	return err;
}

/* Kill every worker's processes; the caller holds the node's lock. */
static int stop_workers(const char *root, const struct tpf_local_node *n, struct tpf_diags *d)
{
	int err = 0;
	for (int w = 0; w < n->recipe.workers; w++) {
		char *home = tpf_local_home_path(root, n->name, w);
		char *address = xasprintf("%s/w%d", n->name, w);
		if (tpf_local_kill_worker(root, home, address, d) < 0)
			err = TPF_ERROR;
		free(address);
		free(home);
	}
	return err;
}

static int local_remove(struct tpf_provider *p, const char *zone, const char *name,
			const struct tpf_delete_guard *guard, struct tpf_diags *d)
{
	struct tpf_local *l = impl_of(p);
	struct tpf_local_node node = { 0 };
	char *dir = NULL;
	int err = 0, fd = -1;

	if (!tpf_local_name_valid(name))
		return bad_name(d, name);
	dir = tpf_local_node_dir(l->root, name);
	if (tpf_local_lock(l->root, name, &fd, d) < 0) {
		err = TPF_ERROR;
		goto done;
	}
	int r = tpf_local_node_load(l->root, name, 0, &node, d);
	if (r == TPF_ENOTFOUND) {
		/* Gone already is success; clear the debris of a crash. */
		err = tpf_remove_tree(dir, d);
		goto done;
	}
	if (r < 0) {
		err = TPF_ERROR;
		goto done;
	}
	if (zone && strcmp(zone, node.recipe.zone))
		goto done; /* a node by that name in another zone: 404 there, as on GCP */
	/* Read under the node's lock: whoever made it cannot swap it now. */
	err = tpf_delete_check(guard, "node", name, node.recipe.zone,
			       tpf_kvlist_get(&node.recipe.labels, TPF_LABEL_LINEAGE), node.id, d);
	if (err < 0)
		goto done;

	xstrset(&node.state, "DELETING");
	xstrset(&node.health, NULL);
	if (tpf_local_node_save(l->root, &node, d) < 0 || stop_workers(l->root, &node, d) < 0) {
		err = TPF_ERROR;
		goto done;
	}
	struct tpf_diags first = TPF_DIAGS_INIT;
	if (remove_files(l->root, name, node.recipe.workers, &first) < 0) {
		/* A process that died late may have written a file meanwhile. */
		if (stop_workers(l->root, &node, d) < 0 ||
		    remove_files(l->root, name, node.recipe.workers, d) < 0)
			err = TPF_ERROR;
	}
	tpf_diags_release(&first);
done:
	tpf_local_unlock(fd);
	tpf_local_node_release(&node);
	free(dir);
	return err;
}

static int not_found(struct tpf_diags *d, const char *root, const char *name, const char *zone)
{
	if (zone)
		tpf_errorx(d, name, NULL, "node '%s' not found in zone '%s' (local root '%s')", name,
			   zone, root);
	else
		tpf_errorx(d, name, NULL, "node '%s' not found (local root '%s')", name, root);
	return TPF_ENOTFOUND;
}

/* Copy the nodes.patch fields (TPF_PATCH_*) of r onto the stored node. */
static void patch_fields(struct tpf_local_node *n, const struct tpf_recipe *r, unsigned fields)
{
	struct tpf_node_fields nf = { 0 };
	tpf_node_fields_copy(&nf, &n->recipe.node);
	if (fields & TPF_PATCH_TAGS) {
		struct tpf_node_fields tmp = { 0 };
		tpf_node_fields_copy(&tmp, &r->node);
		for (size_t i = 0; i < nf.ntags; i++)
			free(nf.tags[i]);
		free(nf.tags);
		nf.tags = tmp.tags;
		nf.ntags = tmp.ntags;
		tmp.tags = NULL;
		tmp.ntags = 0;
		tpf_node_fields_release(&tmp);
	}
	if (fields & TPF_PATCH_METADATA)
		tpf_kvlist_copy(&nf.metadata, &r->node.metadata);
	if (fields & TPF_PATCH_EXTERNAL_IPS)
		nf.enable_external_ips = r->node.enable_external_ips;
	tpf_node_fields_copy(&n->recipe.node, &nf);
	tpf_node_fields_release(&nf);
}

static int local_update(struct tpf_provider *p, const char *zone, const char *name,
			const struct tpf_kvlist *labels, const struct tpf_recipe *r,
			unsigned fields, struct tpf_diags *d);

static int local_set_labels(struct tpf_provider *p, const char *zone, const char *name,
			    const struct tpf_kvlist *labels, struct tpf_diags *d)
{
	return local_update(p, zone, name, labels, NULL, 0, d);
}

static int local_patch(struct tpf_provider *p, const char *zone, const char *name,
		       const struct tpf_recipe *r, unsigned fields, struct tpf_diags *d)
{
	return local_update(p, zone, name, fields & TPF_PATCH_LABELS ? &r->labels : NULL, r,
			    fields, d);
}

/* Labels (NULL: kept) and the patchable node fields of r (NULL: none). */
static int local_update(struct tpf_provider *p, const char *zone, const char *name,
			const struct tpf_kvlist *labels, const struct tpf_recipe *r,
			unsigned fields, struct tpf_diags *d)
{
	struct tpf_local *l = impl_of(p);
	struct tpf_local_node node = { 0 };
	int err = 0, fd = -1;

	if (!tpf_local_name_valid(name))
		return bad_name(d, name);
	if (labels && check_labels(name, labels, d) < 0)
		return TPF_ERROR;
	if (tpf_local_lock(l->root, name, &fd, d) < 0)
		return TPF_ERROR;
	err = tpf_local_node_load(l->root, name, 1, &node, d);
	if (err == TPF_ENOTFOUND || (err == 0 && zone && strcmp(zone, node.recipe.zone))) {
		err = not_found(d, l->root, name, zone);
		goto done;
	}
	if (err < 0)
		goto done;
	if (tpf_node_state_reclaimed(node.state)) {
		/* The API's answer (docs/cloud-tpu-api.md section 4). */
		err = tpf_errorx(d, name, "delete and re-create the node",
				 "cannot update the labels of node '%s': update is not supported while in state %s",
				 name, node.state);
		goto done;
	}
	if (labels)
		tpf_kvlist_copy(&node.recipe.labels, labels);
	if (r)
		patch_fields(&node, r, fields);
	err = tpf_local_node_save(l->root, &node, d);
done:
	tpf_local_unlock(fd);
	tpf_local_node_release(&node);
	return err;
}

static int local_get(struct tpf_provider *p, const char *zone, const char *name,
		     struct tpf_live_node *out, struct tpf_diags *d)
{
	struct tpf_local *l = impl_of(p);
	if (!tpf_local_name_valid(name))
		return bad_name(d, name);
	struct tpf_local_node node = { 0 };
	int rc = tpf_local_node_load(l->root, name, 1, &node, d);
	if (rc == 0 && zone && strcmp(zone, node.recipe.zone))
		rc = TPF_ENOTFOUND; /* a node by that name in another zone: 404 here */
	if (rc == 0)
		to_live(&node, out);
	tpf_local_node_release(&node);
	return rc;
}

static struct tpf_transport *local_transport(struct tpf_provider *p)
{
	return &impl_of(p)->transport;
}

static void local_free(struct tpf_provider *p)
{
	if (!p)
		return;
	struct tpf_local *l = impl_of(p);
	if (l)
		free(l->root);
	free(l);
	free(p);
}

static const struct tpf_provider_ops local_ops = {
	.name = "local",
	.refresh = local_refresh,
	.create = local_create,
	.remove = local_remove,
	.set_labels = local_set_labels,
	.patch = local_patch,
	.get = local_get,
	.transport = local_transport,
	.free = local_free,
};

int tpf_local_provider_open(struct tpf_provider **out, const struct tpf_fleet *f,
			    struct tpf_diags *d)
{
	*out = NULL;
	char *root = tpf_local_root(f, d);
	if (!root)
		return TPF_ERROR;
	struct tpf_local *l = xcalloc(1, sizeof(*l));
	l->root = root;
	l->create_delay = f->local.create_delay;
	l->fleet = f;
	l->transport.ops = &tpf_local_transport_ops;
	l->transport.impl = l;
	struct tpf_provider *p = xcalloc(1, sizeof(*p));
	p->ops = &local_ops;
	p->fleet = f;
	p->impl = l;
	*out = p;
	return 0;
}

static const char *const down_states[] = { "PREEMPTED", "TERMINATED", "STOPPED" };

int tpf_local_preempt(const struct tpf_fleet *f, const char *name, const char *new_state,
		      struct tpf_diags *d)
{
	struct tpf_local_node node = { 0 };
	char *root = NULL;
	int err = 0, fd = -1, known = 0;

	if (!new_state)
		new_state = "PREEMPTED";
	for (size_t i = 0; i < sizeof(down_states) / sizeof(down_states[0]); i++)
		known |= !strcmp(new_state, down_states[i]);
	if (!known)
		return tpf_errorx(d, name, NULL,
				  "cannot put node '%s' in state '%s': expected PREEMPTED, TERMINATED or STOPPED",
				  name ? name : "", new_state);
	if (!tpf_local_name_valid(name))
		return bad_name(d, name);
	root = tpf_local_root(f, d);
	if (!root)
		return TPF_ERROR;
	if (tpf_local_lock(root, name, &fd, d) < 0) {
		err = TPF_ERROR;
		goto done;
	}
	err = tpf_local_node_load(root, name, 1, &node, d);
	if (err == TPF_ENOTFOUND) {
		err = not_found(d, root, name, NULL);
		goto done;
	}
	if (err < 0)
		goto done;
	xstrset(&node.state, new_state);
	xstrset(&node.health, NULL);
	if (tpf_local_node_save(root, &node, d) < 0 || stop_workers(root, &node, d) < 0)
		err = TPF_ERROR;
done:
	tpf_local_unlock(fd);
	tpf_local_node_release(&node);
	free(root);
	return err;
}

int tpf_local_worker_home(const struct tpf_fleet *f, const char *name, int worker, char **out)
{
	struct tpf_diags quiet = TPF_DIAGS_INIT;
	struct tpf_local_node node = { 0 };
	char *root = NULL;
	int err = 0;

	*out = NULL;
	if (!tpf_local_name_valid(name) || worker < 0) {
		err = TPF_ENOTFOUND;
		goto done;
	}
	root = tpf_local_root(f, &quiet);
	if (!root) {
		err = TPF_ERROR;
		goto done;
	}
	err = tpf_local_node_load(root, name, 0, &node, &quiet);
	if (err < 0)
		goto done;
	if (worker >= node.recipe.workers) {
		err = TPF_ENOTFOUND;
		goto done;
	}
	*out = tpf_local_home_path(root, name, worker);
done:
	tpf_local_node_release(&node);
	tpf_diags_release(&quiet);
	free(root);
	return err;
}
