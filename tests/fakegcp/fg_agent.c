/*
 * The guest agent of each worker VM, for workers that are real sshd
 * daemons laid out by tests/e2e/sshd.sh (--worker-dir DIR): worker i (the
 * address --worker-ip-base + i) keeps its login user's home in
 * DIR/w<i>/home and its host key in DIR/w<i>/hostkey.pub.
 *
 * As GoogleCloudPlatform/guest-agent does on a VM:
 *   - authorized_keys of the login user (--worker-user, default root) is
 *     written from the node's metadata ssh-keys, plus the project's
 *     (--project-metadata) unless the node sets block-project-ssh-keys:
 *     every "USER:KEY" line for that user; with OS Login on (enable-oslogin
 *     true in the node's metadata, else the project's) from the keys
 *     imported through OS Login for that POSIX user instead (fg_account.c;
 *     also when an organization policy requires OS Login: /__admin/oslogin).
 *     Nothing else ever writes it: a key tpuform did not send is not there.
 *     It is rewritten when the node becomes READY, when a metadata patch
 *     applies and when a key is imported;
 *   - the host key is published as the guest attribute hostkeys/<TYPE> with
 *     the base64 key as value (instance_setup.go), read from hostkey.pub at
 *     each request: a VM whose keys are regenerated publishes the new ones.
 * nodes.getGuestAttributes serves them. Without --worker-dir no file is
 * written and each worker publishes a made-up ssh-ed25519 key
 * (fg_hostkey.c), as every real VM publishes some.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/fs.h"
#include "util/xalloc.h"

/* DIR/w<i> of the worker at address ip, or NULL when it is not a harness
 * worker (no --worker-dir, an address below the base, or no such worker:
 * more addresses were handed out than workers started). */
static char *worker_dir_at(uint32_t ip)
{
	if (!fg_opt.worker_dir || ip < fg_opt.worker_ip_base)
		return NULL;
	char *dir = xasprintf("%s/w%u", fg_opt.worker_dir, ip - fg_opt.worker_ip_base);
	if (access(dir, F_OK) == 0)
		return dir;
	free(dir);
	return NULL;
}

static int md_true(json_t *md, const char *key)
{
	const char *v = json_string_value(json_object_get(md, key));
	return v && !strcasecmp(v, "true");
}

static int md_false(json_t *md, const char *key)
{
	const char *v = json_string_value(json_object_get(md, key));
	return v && !strcasecmp(v, "false");
}

int fg_agent_oslogin_md(json_t *md)
{
	json_t *proj = fg_project_metadata();
	if (fg_oslogin_required() || md_true(md, "enable-oslogin"))
		return 1;
	return !md_false(md, "enable-oslogin") && md_true(proj, "enable-oslogin");
}

int fg_agent_oslogin(const struct fg_node *n)
{
	return fg_agent_oslogin_md(json_object_get(n->res, "metadata"));
}

/* The "USER:KEY" lines of an ssh-keys value for the login user, as
 * authorized_keys lines, into b. */
static void keys_of(const char *value, struct tpf_buf *b)
{
	size_t ulen = strlen(fg_opt.worker_user);
	for (const char *p = value ? value : ""; *p;) {
		size_t len = strcspn(p, "\n");
		while (len && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		if (len > ulen + 1 && !strncmp(p, fg_opt.worker_user, ulen) && p[ulen] == ':') {
			tpf_buf_add(b, p + ulen + 1, len - ulen - 1);
			tpf_buf_addch(b, '\n');
		}
		p += len;
		if (*p == '\n')
			p++;
	}
}

void fg_agent_write(uint32_t first_ip, int count, json_t *md)
{
	if (!fg_opt.worker_dir)
		return;
	struct tpf_buf keys = TPF_BUF_INIT;
	if (fg_agent_oslogin_md(md)) {
		fg_oslogin_keys(fg_opt.worker_user, &keys);
	} else {
		keys_of(json_string_value(json_object_get(md, "ssh-keys")), &keys);
		if (!md_true(md, "block-project-ssh-keys"))
			keys_of(json_string_value(json_object_get(fg_project_metadata(), "ssh-keys")),
				&keys);
	}
	for (int k = 0; k < count; k++) {
		char *dir = worker_dir_at(first_ip + (uint32_t)k);
		char *ssh = dir ? xasprintf("%s/home/.ssh", dir) : NULL;
		struct tpf_diags d = TPF_DIAGS_INIT;
		if (ssh && tpf_mkdir_p(ssh, 0700, &d) == 0) {
			char *path = xasprintf("%s/authorized_keys", ssh);
			tpf_write_file_atomic(path, keys.buf, keys.len, 0600, &d);
			free(path);
		}
		for (size_t i = 0; i < d.n; i++)
			fprintf(stderr, "fakegcp: guest agent: %s\n", d.items[i].summary);
		tpf_diags_release(&d);
		free(ssh);
		free(dir);
	}
	tpf_buf_release(&keys);
}

void fg_agent_sync(const struct fg_node *n)
{
	const char *state = json_string_value(json_object_get(n->res, "state"));
	if (!state || strcmp(state, "READY"))
		return;
	fg_agent_write(n->first_ip, n->workers, json_object_get(n->res, "metadata"));
}

void fg_agent_sync_all(void)
{
	size_t count;
	struct fg_node **v = fg_nodes_in(NULL, &count);
	for (size_t i = 0; i < count; i++)
		fg_agent_sync(v[i]);
	free(v);
	fg_compute_agent_sync_all();
}

json_t *fg_agent_host_keys(uint32_t ip, const char *name, int k)
{
	json_t *items = json_array();
	char *dir = worker_dir_at(ip);
	char *path = dir ? xasprintf("%s/hostkey.pub", dir) : NULL;
	struct tpf_buf b = TPF_BUF_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	if (path && tpf_read_file(path, &b, &d) == 0) {
		char *save = NULL, *type = strtok_r(b.buf, " \t\n", &save);
		char *key = type ? strtok_r(NULL, " \t\n", &save) : NULL;
		if (key)
			json_array_append_new(items, json_pack("{s:s, s:s, s:s}", "namespace",
							       "hostkeys", "key", type, "value", key));
	} else if (!fg_opt.worker_dir) {
		json_t *made_up = fg_made_up_host_key(name ? name : "", k);
		if (made_up)
			json_array_append_new(items, made_up);
	}
	tpf_diags_release(&d);
	tpf_buf_release(&b);
	free(path);
	free(dir);
	return items;
}

/* hostkeys/ items of worker k: {"namespace","key","value"} from its
 * hostkey.pub ("TYPE BASE64 comment"). */
static json_t *host_key_items(const struct fg_node *n, int k)
{
	return fg_agent_host_keys(n->first_ip + (uint32_t)k,
				  json_string_value(json_object_get(n->res, "name")), k);
}

/* nodes.getGuestAttributes: one GuestAttributes per worker asked (all when
 * workerIds is empty or [""], as gcloud sends it), in worker order. */
void fg_nodes_guest_attributes(struct fg_req *r, struct fg_match *mt)
{
	const char *zone = fg_match_var(mt, "locationsId"), *id = fg_match_var(mt, "nodesId");
	const char *path = json_string_value(json_object_get(mt->body, "queryPath"));
	json_t *ids = json_object_get(mt->body, "workerIds");

	fg_lock();
	fg_ops_tick();
	struct fg_node *n = fg_node_find(zone, id);
	if (!n) {
		char *name = fg_node_name(zone, id);
		fg_reply_error(r, 404, "NOT_FOUND", json_pack("[o]", fg_resource_info(name)),
			       "Resource '%s' was not found", name);
		free(name);
		goto done;
	}
	json_t *want = json_array();
	size_t i;
	json_t *w;
	int all = !json_array_size(ids) ||
		  (json_array_size(ids) == 1 && !*json_string_value(json_array_get(ids, 0)));
	for (int k = 0; all && k < n->workers; k++)
		json_array_append_new(want, json_integer(k));
	json_array_foreach(all ? NULL : ids, i, w) {
		char *end = NULL;
		long k = strtol(json_string_value(w), &end, 10);
		if (!*json_string_value(w) || *end || k < 0 || k >= n->workers) {
			char *msg = xasprintf("Cloud TPU received a bad request. worker_ids contains "
					      "\"%s\": the node has workers 0 to %d.",
					      json_string_value(w), n->workers - 1);
			fg_bad_request(r, "worker_ids", msg);
			free(msg);
			json_decref(want);
			goto done;
		}
		json_array_append_new(want, json_integer(k));
	}
	/* Only hostkeys/ is published; another path finds nothing. */
	int hostkeys = !path || !*path || !strcmp(path, "hostkeys/") || !strcmp(path, "hostkeys");
	json_t *out = json_array();
	json_array_foreach(want, i, w) {
		json_t *items = hostkeys ? host_key_items(n, (int)json_integer_value(w)) : json_array();
		json_t *ga = json_object();
		if (path && *path) /* proto3 JSON prints no empty string */
			json_object_set_new(ga, "queryPath", json_string(path));
		if (json_array_size(items))
			json_object_set_new(ga, "queryValue", json_pack("{s:o}", "items", items));
		else
			json_decref(items);
		json_array_append_new(out, ga);
	}
	json_decref(want);
	fg_reply_json(r, 200, json_pack("{s:o}", "guestAttributes", out));
done:
	fg_unlock();
}
