#include "providers/gcp/gcp_sshkeys.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The "TYPE BASE64" head of a key line: lengths of both fields, 0 if the
 * line is not one (a type, one space, then padded base64). */
static int key_fields(const char *key, size_t *tlen, size_t *blen)
{
	if (!key)
		return 0;
	size_t t = strcspn(key, " \t\r\n");
	if (!t || key[t] != ' ')
		return 0;
	const char *b = key + t + 1;
	size_t n = 0;
	while (b[n] && (isalnum((unsigned char)b[n]) || b[n] == '+' || b[n] == '/' || b[n] == '='))
		n++;
	/* OpenSSH writes padded base64: whole groups of four */
	if (!n || n % 4 || (b[n] && !isspace((unsigned char)b[n])))
		return 0;
	*tlen = t;
	*blen = n;
	return 1;
}

static int user_ok(const char *user)
{
	if (!user || !*user)
		return 0;
	for (const char *p = user; *p; p++)
		if (*p == ':' || isspace((unsigned char)*p) || iscntrl((unsigned char)*p))
			return 0;
	return 1;
}

char *tpf_gcp_ssh_key_entry(const char *user, const char *public_key)
{
	size_t t, b;
	if (!user_ok(user) || !key_fields(public_key, &t, &b))
		return NULL;
	return xasprintf("%s:%.*s %s", user, (int)(t + 1 + b), public_key, user);
}

/* Does one ssh-keys line (not NUL-terminated: len bytes) give user this key? */
static int line_has(const char *line, size_t len, const char *user, const char *key, size_t klen)
{
	size_t ulen = strlen(user);
	if (len < ulen + 1 + klen || strncmp(line, user, ulen) || line[ulen] != ':')
		return 0;
	const char *k = line + ulen + 1;
	if (strncmp(k, key, klen))
		return 0;
	const char *rest = k + klen, *end = line + len;
	if (rest == end || *rest == '\r')
		return 1;
	if (*rest != ' ' && *rest != '\t')
		return 0; /* a longer base64: another key */
	while (rest < end && (*rest == ' ' || *rest == '\t'))
		rest++;
	/* "google-ssh {"userName":...,"expireOn":...}" expires (guest agent). */
	// cppcheck-suppress knownConditionTrueFalse ; false positive: test_gcp_sshkeys has both outcomes
	return !((size_t)(end - rest) >= 10 && !strncmp(rest, "google-ssh", 10));
}

int tpf_gcp_ssh_keys_has(const char *value, const char *user, const char *public_key)
{
	size_t t, b;
	if (!value || !user_ok(user) || !key_fields(public_key, &t, &b))
		return 0;
	for (const char *p = value; *p;) {
		size_t len = strcspn(p, "\n");
		const char *line = p;
		while (len && (*line == ' ' || *line == '\t')) {
			line++;
			len--;
		}
		if (line_has(line, len, user, public_key, t + 1 + b))
			return 1;
		p = line + len;
		if (*p == '\n')
			p++;
	}
	return 0;
}

char *tpf_gcp_ssh_keys_append(const char *old, const char *entry)
{
	return xasprintf("%s\n%s", old ? old : "", entry);
}

/* A copy of the string entries of a metadata object (others dropped: the
 * API's map holds strings only). */
static json_t *copy_strings(json_t *md)
{
	json_t *out = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(md, k, v) {
		if (json_is_string(v))
			json_object_set(out, k, v);
	}
	return out;
}

json_t *tpf_gcp_metadata_for_create(json_t *declared, const char *user, const char *public_key,
				    const char *entry)
{
	json_t *md = copy_strings(declared);
	const char *old = json_string_value(json_object_get(md, TPF_GCP_MD_SSH_KEYS));
	if (old && tpf_gcp_ssh_keys_has(old, user, public_key))
		return md;
	char *v = old && *old ? tpf_gcp_ssh_keys_append(old, entry) : xstrdup(entry);
	json_object_set_new(md, TPF_GCP_MD_SSH_KEYS, json_string(v));
	free(v);
	return md;
}

json_t *tpf_gcp_metadata_patch(json_t *current, const char *user, const char *public_key,
			       const char *entry)
{
	const char *old = json_string_value(json_object_get(current, TPF_GCP_MD_SSH_KEYS));
	if (tpf_gcp_ssh_keys_has(old, user, public_key))
		return NULL;
	json_t *md = copy_strings(current);
	char *v = tpf_gcp_ssh_keys_append(old, entry);
	json_object_set_new(md, TPF_GCP_MD_SSH_KEYS, json_string(v));
	free(v);
	json_t *body = json_object();
	json_object_set_new(body, "metadata", md);
	return body;
}

int tpf_gcp_metadata_bool(json_t *metadata, const char *key)
{
	const char *v = json_string_value(json_object_get(metadata, key));
	if (!v)
		return -1;
	if (!strcasecmp(v, "true"))
		return 1;
	if (!strcasecmp(v, "false"))
		return 0;
	return -1;
}

int tpf_gcp_oslogin_enabled(json_t *node_metadata, json_t *project_metadata, int fleet_on)
{
	if (fleet_on)
		return 1;
	int v = tpf_gcp_metadata_bool(node_metadata, TPF_GCP_MD_OSLOGIN);
	if (v < 0)
		v = tpf_gcp_metadata_bool(project_metadata, TPF_GCP_MD_OSLOGIN);
	return v == 1;
}

int tpf_gcp_key_in_metadata(json_t *node_metadata, json_t *project_metadata, const char *user,
			    const char *public_key)
{
	const char *node = json_string_value(json_object_get(node_metadata, TPF_GCP_MD_SSH_KEYS));
	if (tpf_gcp_ssh_keys_has(node, user, public_key))
		return 1;
	if (tpf_gcp_metadata_bool(node_metadata, TPF_GCP_MD_BLOCK_PROJECT_KEYS) == 1)
		return 0;
	const char *proj = json_string_value(json_object_get(project_metadata, TPF_GCP_MD_SSH_KEYS));
	return tpf_gcp_ssh_keys_has(proj, user, public_key);
}

void tpf_gcp_guest_host_keys(json_t *resp, int worker, char ***keys, size_t *n)
{
	size_t alloc = 0;
	*keys = NULL;
	*n = 0;
	json_t *ga = worker >= 0 ? json_array_get(json_object_get(resp, "guestAttributes"),
						  (size_t)worker) : NULL;
	size_t i;
	json_t *it;
	json_array_foreach(json_object_get(json_object_get(ga, "queryValue"), "items"), i, it) {
		const char *ns = json_string_value(json_object_get(it, "namespace"));
		const char *type = json_string_value(json_object_get(it, "key"));
		const char *value = json_string_value(json_object_get(it, "value"));
		if (!ns || strcmp(ns, "hostkeys") || !type || !*type || !value || !*value)
			continue;
		/* The agent publishes the base64 alone; accept "TYPE BASE64" too. */
		char *key = strchr(value, ' ') ? xstrdup(value) : xasprintf("%s %s", type, value);
		size_t t, b;
		if (!key_fields(key, &t, &b) || strncmp(key, type, t) || type[t]) {
			free(key);
			continue;
		}
		key[t + 1 + b] = '\0'; /* no comment */
		XGROW(*keys, *n + 1, alloc);
		(*keys)[(*n)++] = key;
	}
}

json_t *tpf_gcp_compute_metadata(json_t *common_instance_metadata)
{
	json_t *out = json_object();
	size_t i;
	json_t *it;
	json_array_foreach(json_object_get(common_instance_metadata, "items"), i, it) {
		const char *k = json_string_value(json_object_get(it, "key"));
		json_t *v = json_object_get(it, "value");
		if (k && json_is_string(v))
			json_object_set(out, k, v);
	}
	return out;
}
