/*
 * `ssh-keys` metadata and what surrounds it (providers/gcp/gcp_sshkeys.h):
 * the metadata value is text anyone with access to the project may have
 * written ("USER:TYPE BASE64 COMMENT" lines, "google-ssh {...}" comments,
 * junk), and the JSON around it comes from the API (Node.metadata,
 * Compute's commonInstanceMetadata, getGuestAttributes, OS Login's
 * loginProfile). Each input is taken as the ssh-keys value, looked up and
 * appended to as gcp_access.c does (with a fixed key, and with the user
 * and key of the value's own first line so that matches happen), and, when
 * it is JSON, as each of those API answers.
 */
#include "tests/fuzz/fuzz.h"
#include "providers/gcp/gcp_oslogin.h"
#include "providers/gcp/gcp_sshkeys.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define USER "fuzz"
#define KEY "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFuzzFuzzFuzzFuzzFuzzFuzzFuzzFuzzFuzzFuzzFuz"

static void as_value(const char *value)
{
	char *entry = tpf_gcp_ssh_key_entry(USER, KEY);
	(void)tpf_gcp_ssh_keys_has(value, USER, KEY);
	free(tpf_gcp_ssh_keys_append(value, entry));
	/* "USER:KEY" of the first line, so that the comparison paths run */
	const char *colon = strchr(value, ':'), *eol = strchr(value, '\n');
	if (colon && (!eol || colon < eol)) {
		char *user = xstrndup(value, (size_t)(colon - value));
		char *key = eol ? xstrndup(colon + 1, (size_t)(eol - colon - 1)) : xstrdup(colon + 1);
		char *own = tpf_gcp_ssh_key_entry(user, key);
		(void)tpf_gcp_ssh_keys_has(value, user, key);
		free(own);
		free(user);
		free(key);
	}
	json_t *md = json_pack("{s:s}", TPF_GCP_MD_SSH_KEYS, value);
	if (md) { /* NULL when value is not UTF-8 */
		json_decref(tpf_gcp_metadata_patch(md, USER, KEY, entry));
		json_decref(tpf_gcp_metadata_for_create(md, USER, KEY, entry));
		(void)tpf_gcp_key_in_metadata(md, md, USER, KEY);
		json_decref(md);
	}
	free(entry);
}

static void as_json(json_t *j)
{
	char *entry = tpf_gcp_ssh_key_entry(USER, KEY);
	json_t *md = json_object_get(j, "metadata");
	json_decref(tpf_gcp_metadata_patch(md ? md : j, USER, KEY, entry));
	json_decref(tpf_gcp_metadata_for_create(md ? md : j, USER, KEY, entry));
	(void)tpf_gcp_metadata_bool(j, TPF_GCP_MD_OSLOGIN);
	(void)tpf_gcp_oslogin_enabled(md, j, 0);
	(void)tpf_gcp_key_in_metadata(md, j, USER, KEY);
	for (int w = 0; w < 3; w++) {
		char **keys = NULL;
		size_t n = 0;
		tpf_gcp_guest_host_keys(j, w, &keys, &n);
		for (size_t i = 0; i < n; i++)
			free(keys[i]);
		free(keys);
	}
	json_t *cim = json_object_get(j, "commonInstanceMetadata");
	json_decref(tpf_gcp_compute_metadata(cim ? cim : j));
	(void)tpf_gcp_oslogin_username(j);
	free(entry);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *value = fuzz_cstr(data, size);
	as_value(value);
	json_t *j = json_loadb((const char *)data, size, 0, NULL);
	if (j)
		as_json(j);
	json_decref(j);
	free(value);
	return 0;
}
