/*
 * node.json: the local provider's record of one node, shaped like the Cloud
 * TPU v2 Node resource (tests/fakegcp/tpu.v2.discovery.json), plus the
 * per-node lock and path helpers.
 */
#include "model/node_state.h"
#include "providers/local/local_internal.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

void tpf_local_node_release(struct tpf_local_node *n)
{
	free(n->name);
	free(n->id);
	free(n->state);
	free(n->health);
	free(n->create_time);
	tpf_recipe_release(&n->recipe);
	memset(n, 0, sizeof(*n));
}

int tpf_local_name_valid(const char *name)
{
	size_t len = name ? strlen(name) : 0;
	if (len < 1 || len > 63 || name[0] < 'a' || name[0] > 'z' || name[len - 1] == '-')
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return 0;
	}
	return 1;
}

char *tpf_local_root(const struct tpf_fleet *f, struct tpf_diags *d)
{
	if (!f->local.root || !*f->local.root) {
		tpf_errorx(d, NULL, "set provider.local.root in the fleet file, or leave it out to use the default",
			   "fleet '%s' has no local provider root", f->name ? f->name : "");
		return NULL;
	}
	if (f->local.root[0] == '/')
		return xstrdup(f->local.root);
	/* Commands run with the worker's home as cwd, so every path handed to
	 * them (HOME, TPUFORM_BUCKET) must be absolute. */
	char *cwd = getcwd(NULL, 0);
	if (!cwd) {
		tpf_error(d, "cannot resolve local provider root '%s': %s", f->local.root,
			  strerror(errno));
		return NULL;
	}
	char *root = tpf_path_join(cwd, f->local.root);
	free(cwd);
	return root;
}

char *tpf_local_node_dir(const char *root, const char *name)
{
	return xasprintf("%s/nodes/%s", root, name);
}

char *tpf_local_node_file(const char *root, const char *name)
{
	return xasprintf("%s/nodes/%s/node.json", root, name);
}

char *tpf_local_home_path(const char *root, const char *name, int worker)
{
	return xasprintf("%s/nodes/%s/workers/%d", root, name, worker);
}

int tpf_local_mkdir_private(const char *path, struct tpf_diags *d)
{
	if (tpf_mkdir_p(path, 0700, d) < 0)
		return TPF_ERROR;
	if (chmod(path, 0700) < 0)
		return tpf_error(d, "cannot chmod '%s': %s", path, strerror(errno));
	return 0;
}

void tpf_local_new_id(char out[20])
{
	int i = 0;
	while (i < 19) {
		unsigned char b[32];
		if (RAND_bytes(b, sizeof(b)) != 1)
			abort(); /* no entropy: nothing sensible to do */
		for (size_t k = 0; k < sizeof(b) && i < 19; k++) {
			if (b[k] >= 250)
				continue; /* keep digits uniform */
			int digit = b[k] % 10;
			if (i == 0 && digit == 0)
				continue;
			out[i++] = (char)('0' + digit);
		}
	}
	out[19] = '\0';
}

int tpf_local_lock(const char *root, const char *name, int *fd_out, struct tpf_diags *d)
{
	char *dir = xasprintf("%s/locks", root);
	char *path = xasprintf("%s/%s.lock", dir, name);
	int err = 0, fd = -1;

	*fd_out = -1;
	if (tpf_mkdir_p(dir, 0700, d) < 0) {
		err = TPF_ERROR;
		goto done;
	}
	/* O_CLOEXEC: a worker's screen daemon must never inherit the lock. */
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = tpf_error(d, "cannot open lock file '%s': %s", path, strerror(errno));
		goto done;
	}
	while (flock(fd, LOCK_EX) < 0) {
		if (errno == EINTR)
			continue;
		err = tpf_error(d, "cannot lock '%s': %s", path, strerror(errno));
		goto done;
	}
	*fd_out = fd;
	fd = -1;
done:
	if (fd >= 0)
		close(fd);
	free(dir);
	free(path);
	return err;
}

void tpf_local_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* releases the flock */
}

/* A string member, or NULL if absent; sets *bad when present but not a string. */
static const char *get_str(json_t *o, const char *key, const char **bad)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_string(v)) {
		*bad = key;
		return NULL;
	}
	return json_string_value(v);
}

static int parse_node(json_t *root, const char *name, struct tpf_local_node *n, char **why)
{
	const char *bad = NULL;
	if (!json_is_object(root)) {
		*why = xstrdup("expected a JSON object");
		return TPF_ERROR;
	}
	const char *id = get_str(root, "id", &bad);
	const char *zone = get_str(root, "zone", &bad);
	const char *type = get_str(root, "acceleratorType", &bad);
	const char *runtime = get_str(root, "runtimeVersion", &bad);
	const char *state = get_str(root, "state", &bad);
	const char *health = get_str(root, "health", &bad);
	const char *ctime = get_str(root, "createTime", &bad);
	if (bad) {
		*why = xasprintf("'%s' must be a string", bad);
		return TPF_ERROR;
	}
	const char *missing = !id ? "id" : !zone ? "zone" : !type ? "acceleratorType"
			    : !runtime ? "runtimeVersion" : !state ? "state" : NULL;
	if (missing) {
		*why = xasprintf("'%s' is missing", missing);
		return TPF_ERROR;
	}
	json_t *workers = json_object_get(root, "workers");
	if (!json_is_integer(workers) || json_integer_value(workers) < 1 ||
	    json_integer_value(workers) > 4096) {
		*why = xstrdup("'workers' must be an integer from 1 to 4096");
		return TPF_ERROR;
	}
	json_t *ready = json_object_get(root, "readyAt");
	if (ready && !json_is_number(ready)) {
		*why = xstrdup("'readyAt' must be a number (epoch seconds)");
		return TPF_ERROR;
	}
	json_t *sched = json_object_get(root, "schedulingConfig");
	if (sched && !json_is_object(sched)) {
		*why = xstrdup("'schedulingConfig' must be an object");
		return TPF_ERROR;
	}
	json_t *labels = json_object_get(root, "labels");
	if (labels && !json_is_object(labels)) {
		*why = xstrdup("'labels' must be an object");
		return TPF_ERROR;
	}
	const char *key;
	json_t *val;
	json_object_foreach(labels, key, val) {
		if (!json_is_string(val)) {
			*why = xasprintf("label '%s' must be a string", key);
			return TPF_ERROR;
		}
	}

	n->name = xstrdup(name);
	n->id = xstrdup(id);
	n->state = xstrdup(state);
	n->health = xstrdup(health);
	n->create_time = xstrdup(ctime);
	n->ready_at = ready ? json_number_value(ready) : 0;
	n->recipe.zone = xstrdup(zone);
	n->recipe.accelerator_type = xstrdup(type);
	n->recipe.runtime_version = xstrdup(runtime);
	n->recipe.preemptible = json_is_true(json_object_get(sched, "preemptible"));
	n->recipe.spot = json_is_true(json_object_get(sched, "spot"));
	n->recipe.workers = (int)json_integer_value(workers);
	json_object_foreach(labels, key, val)
		tpf_kvlist_set(&n->recipe.labels, key, json_string_value(val));
	struct tpf_diags fd = TPF_DIAGS_INIT;
	if (tpf_node_fields_from_json(&n->recipe.node, json_object_get(root, "nodeFields"), "node",
				      &fd) < 0) {
		*why = xstrdup("'nodeFields' is malformed");
		tpf_diags_release(&fd);
		return TPF_ERROR;
	}
	tpf_diags_release(&fd);
	return 0;
}

static int load_once(const char *root, const char *name, struct tpf_local_node *out,
		     struct tpf_diags *d)
{
	char *path = tpf_local_node_file(root, name);
	struct tpf_buf text = TPF_BUF_INIT;
	json_t *json = NULL;
	char *why = NULL;
	int err;

	memset(out, 0, sizeof(*out));
	err = tpf_read_file(path, &text, d);
	if (err < 0)
		goto done;
	json_error_t jerr;
	json = json_loadb(text.buf, text.len, 0, &jerr);
	if (!json)
		why = xasprintf("line %d: %s", jerr.line, jerr.text);
	else if (parse_node(json, name, out, &why) < 0)
		tpf_local_node_release(out);
	if (why) {
		char *dir = tpf_local_node_dir(root, name);
		char *hint = xasprintf("fix the file, or delete the directory '%s' to forget the node "
				       "(tpuform then stops what its workers still run)",
				       dir);
		err = tpf_errorx(d, name, hint, "'%s' is not a valid local node file: %s", path, why);
		free(hint);
		free(dir);
	}
done:
	json_decref(json);
	free(why);
	tpf_buf_release(&text);
	free(path);
	return err;
}

static int ready_due(const struct tpf_local_node *n)
{
	return tpf_node_state_of(n->state) == TPF_NODE_STATE_CREATING && tpf_now_wall() >= n->ready_at;
}

int tpf_local_node_load(const char *root, const char *name, int settle,
			struct tpf_local_node *out, struct tpf_diags *d)
{
	int err = load_once(root, name, out, d);
	if (err < 0 || !settle || !ready_due(out))
		return err;

	/* Re-read under the lock: a preemption or delete may have landed
	 * since, and must not be overwritten with READY. */
	int fd;
	tpf_local_node_release(out);
	if (tpf_local_lock(root, name, &fd, d) < 0)
		return TPF_ERROR;
	err = load_once(root, name, out, d);
	if (err == 0 && ready_due(out)) {
		xstrset(&out->state, "READY");
		xstrset(&out->health, "HEALTHY");
		err = tpf_local_node_save(root, out, d);
		if (err < 0)
			tpf_local_node_release(out);
	}
	tpf_local_unlock(fd);
	return err;
}

int tpf_local_node_save(const char *root, const struct tpf_local_node *n, struct tpf_diags *d)
{
	const struct tpf_recipe *r = &n->recipe;
	json_t *labels = json_object();
	for (size_t i = 0; i < r->labels.n; i++)
		json_object_set_new(labels, r->labels.items[i].key,
				    json_string(r->labels.items[i].value));
	json_t *o = json_object();
	json_object_set_new(o, "name", json_string(n->name));
	json_object_set_new(o, "id", json_string(n->id));
	json_object_set_new(o, "zone", json_string(r->zone));
	json_object_set_new(o, "acceleratorType", json_string(r->accelerator_type));
	json_object_set_new(o, "runtimeVersion", json_string(r->runtime_version));
	json_object_set_new(o, "schedulingConfig",
			    json_pack("{s:b,s:b}", "preemptible", r->preemptible, "spot", r->spot));
	json_object_set_new(o, "labels", labels);
	json_object_set_new(o, "state", json_string(n->state));
	if (n->health)
		json_object_set_new(o, "health", json_string(n->health));
	if (n->create_time)
		json_object_set_new(o, "createTime", json_string(n->create_time));
	json_object_set_new(o, "readyAt", json_real(n->ready_at));
	json_object_set_new(o, "workers", json_integer(r->workers));
	if (!tpf_node_fields_empty(&r->node)) {
		/* The node fields as the recipe spells them (model/node_fields.h). */
		json_t *nf = json_object();
		tpf_node_fields_to_json(&r->node, nf);
		json_object_set_new(o, "nodeFields", nf);
	}

	char *text = json_dumps(o, JSON_INDENT(2));
	json_decref(o);
	if (!text)
		return tpf_error(d, "cannot serialise node '%s' to JSON", n->name);
	size_t len = strlen(text);
	char *withnl = xasprintf("%s\n", text);
	free(text);
	char *path = tpf_local_node_file(root, n->name);
	int err = tpf_write_file_atomic(path, withnl, len + 1, 0600, d);
	free(path);
	free(withnl);
	return err;
}
