/*
 * SSH access rules of the gcp provider (providers/gcp/gcp_sshkeys.h): the
 * ssh-keys entry as gcloud writes it, merging into declared and existing
 * metadata without losing anything, OS Login's switch, and the host keys
 * of guest attributes.
 */
#include "providers/gcp/gcp_sshkeys.h"
#include "tests/unit/unit.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define KEY "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOv4"
#define KEY2 "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOv5"

static void test_gcp_sshkeys__entry(void)
{
	char *e = tpf_gcp_ssh_key_entry("alice", KEY " alice@laptop");
	/* gcloud: "USER:TYPE BASE64 USER", the comment replaced by the user */
	CHECK_STR(e, "alice:" KEY " alice");
	free(e);
	e = tpf_gcp_ssh_key_entry("root", KEY);
	CHECK_STR(e, "root:" KEY " root");
	free(e);
	CHECK(tpf_gcp_ssh_key_entry("a:b", KEY) == NULL);
	CHECK(tpf_gcp_ssh_key_entry("a b", KEY) == NULL);
	CHECK(tpf_gcp_ssh_key_entry("", KEY) == NULL);
	CHECK(tpf_gcp_ssh_key_entry("alice", "ssh-ed25519") == NULL);
	CHECK(tpf_gcp_ssh_key_entry("alice", "ssh-ed25519 not base64!") == NULL);
}

static void test_gcp_sshkeys__has(void)
{
	CHECK(tpf_gcp_ssh_keys_has("alice:" KEY " alice", "alice", KEY));
	/* whatever the comment, among other lines, with CRLF or indentation */
	CHECK(tpf_gcp_ssh_keys_has("bob:" KEY2 " bob\n  alice:" KEY " me@host\r\n", "alice", KEY));
	CHECK(tpf_gcp_ssh_keys_has("\nalice:" KEY, "alice", KEY " other-comment"));
	/* another user, another key, a key that only starts the same */
	CHECK(!tpf_gcp_ssh_keys_has("bob:" KEY " bob", "alice", KEY));
	CHECK(!tpf_gcp_ssh_keys_has("alice:" KEY2 " alice", "alice", KEY));
	CHECK(!tpf_gcp_ssh_keys_has("alice:" KEY "xyz alice", "alice", KEY));
	CHECK(!tpf_gcp_ssh_keys_has("xalice:" KEY " alice", "alice", KEY));
	/* an entry that expires does not count: the agent drops it */
	CHECK(!tpf_gcp_ssh_keys_has("alice:" KEY " google-ssh {\"userName\":\"a\",\"expireOn\":\"x\"}",
				    "alice", KEY));
	CHECK(!tpf_gcp_ssh_keys_has(NULL, "alice", KEY));
	CHECK(!tpf_gcp_ssh_keys_has("", "alice", KEY));
}

static void test_gcp_sshkeys__append(void)
{
	char *v = tpf_gcp_ssh_keys_append(NULL, "alice:" KEY " alice");
	/* as gcloud sends it: an absent value counts as "" */
	CHECK_STR(v, "\nalice:" KEY " alice");
	free(v);
	v = tpf_gcp_ssh_keys_append("bob:" KEY2 " bob", "alice:" KEY " alice");
	CHECK_STR(v, "bob:" KEY2 " bob\nalice:" KEY " alice");
	free(v);
}

static const char *md_get(json_t *md, const char *k)
{
	return json_string_value(json_object_get(md, k));
}

static void test_gcp_sshkeys__create_metadata(void)
{
	const char *entry = "alice:" KEY " alice";
	json_t *md = tpf_gcp_metadata_for_create(NULL, "alice", KEY, entry);
	CHECK_INT(json_object_size(md), 1);
	CHECK_STR(md_get(md, "ssh-keys"), entry);
	json_decref(md);

	/* declared entries are kept; declared keys come first */
	json_t *declared = json_pack("{s:s, s:s}", "startup-script", "#!/bin/sh\necho hi",
				     "ssh-keys", "bob:" KEY2 " bob");
	md = tpf_gcp_metadata_for_create(declared, "alice", KEY, entry);
	CHECK_STR(md_get(md, "startup-script"), "#!/bin/sh\necho hi");
	CHECK_STR(md_get(md, "ssh-keys"), "bob:" KEY2 " bob\nalice:" KEY " alice");
	/* the declared object itself is not changed */
	CHECK_STR(md_get(declared, "ssh-keys"), "bob:" KEY2 " bob");
	json_decref(md);
	json_decref(declared);

	/* a declared value that already gives alice the key stays as written */
	declared = json_pack("{s:s}", "ssh-keys", "alice:" KEY " laptop");
	md = tpf_gcp_metadata_for_create(declared, "alice", KEY, entry);
	CHECK_STR(md_get(md, "ssh-keys"), "alice:" KEY " laptop");
	json_decref(md);
	json_decref(declared);
}

static void test_gcp_sshkeys__patch_body(void)
{
	const char *entry = "alice:" KEY " alice";
	json_t *cur = json_pack("{s:s, s:s, s:s}", "startup-script", "x", "enable-oslogin", "FALSE",
				"ssh-keys", "bob:" KEY2 " bob");
	json_t *b = tpf_gcp_metadata_patch(cur, "alice", KEY, entry);
	json_t *md = json_object_get(b, "metadata");
	CHECK_INT(json_object_size(b), 1);
	/* every existing entry, the old keys, then ours */
	CHECK_INT(json_object_size(md), 3);
	CHECK_STR(md_get(md, "startup-script"), "x");
	CHECK_STR(md_get(md, "enable-oslogin"), "FALSE");
	CHECK_STR(md_get(md, "ssh-keys"), "bob:" KEY2 " bob\nalice:" KEY " alice");
	json_decref(b);

	/* nothing to send when the key is there */
	json_object_set_new(cur, "ssh-keys", json_string("alice:" KEY " alice"));
	CHECK(tpf_gcp_metadata_patch(cur, "alice", KEY, entry) == NULL);
	json_decref(cur);

	/* no metadata at all */
	b = tpf_gcp_metadata_patch(NULL, "alice", KEY, entry);
	CHECK_STR(md_get(json_object_get(b, "metadata"), "ssh-keys"), "\nalice:" KEY " alice");
	json_decref(b);
}

static void test_gcp_sshkeys__oslogin(void)
{
	json_t *on = json_pack("{s:s}", "enable-oslogin", "TRUE");
	json_t *on_lower = json_pack("{s:s}", "enable-oslogin", "true");
	json_t *off = json_pack("{s:s}", "enable-oslogin", "FALSE");
	json_t *other = json_pack("{s:s}", "enable-oslogin", "1");
	CHECK_INT(tpf_gcp_metadata_bool(on, "enable-oslogin"), 1);
	CHECK_INT(tpf_gcp_metadata_bool(off, "enable-oslogin"), 0);
	CHECK_INT(tpf_gcp_metadata_bool(other, "enable-oslogin"), -1);
	CHECK_INT(tpf_gcp_metadata_bool(NULL, "enable-oslogin"), -1);
	CHECK(!tpf_gcp_oslogin_enabled(NULL, NULL, 0));
	CHECK(tpf_gcp_oslogin_enabled(on_lower, NULL, 0));
	CHECK(tpf_gcp_oslogin_enabled(NULL, on, 0));
	/* the node's FALSE wins over the project's TRUE */
	CHECK(!tpf_gcp_oslogin_enabled(off, on, 0));
	CHECK(tpf_gcp_oslogin_enabled(on, off, 0));
	/* a value that is neither: the project decides */
	CHECK(tpf_gcp_oslogin_enabled(other, on, 0));
	/* ssh.os_login: true forces it */
	CHECK(tpf_gcp_oslogin_enabled(off, off, 1));
	json_decref(on);
	json_decref(on_lower);
	json_decref(off);
	json_decref(other);
}

static void test_gcp_sshkeys__key_in_metadata(void)
{
	json_t *proj = json_pack("{s:s}", "ssh-keys", "alice:" KEY " alice");
	json_t *node = json_pack("{s:s}", "ssh-keys", "bob:" KEY2 " bob");
	json_t *blocking = json_pack("{s:s}", "block-project-ssh-keys", "TRUE");
	CHECK(tpf_gcp_key_in_metadata(proj, NULL, "alice", KEY));
	CHECK(!tpf_gcp_key_in_metadata(node, NULL, "alice", KEY));
	/* the project's keys reach nodes that do not block them */
	CHECK(tpf_gcp_key_in_metadata(node, proj, "alice", KEY));
	CHECK(tpf_gcp_key_in_metadata(NULL, proj, "alice", KEY));
	CHECK(!tpf_gcp_key_in_metadata(blocking, proj, "alice", KEY));
	json_decref(proj);
	json_decref(node);
	json_decref(blocking);
}

static void test_gcp_sshkeys__guest_host_keys(void)
{
	/* as the guest agent publishes them: key = type, value = base64 */
	json_t *resp = json_loads(
		"{\"guestAttributes\":["
		"{\"queryPath\":\"hostkeys/\",\"queryValue\":{\"items\":["
		"{\"namespace\":\"hostkeys\",\"key\":\"ssh-ed25519\",\"value\":\"AAAAC3Nz\"},"
		"{\"namespace\":\"other\",\"key\":\"ssh-rsa\",\"value\":\"AAAAB3Nz\"},"
		"{\"namespace\":\"hostkeys\",\"key\":\"ecdsa-sha2-nistp256\",\"value\":\"ecdsa-sha2-nistp256 AAAAE2Vj comment\"},"
		"{\"namespace\":\"hostkeys\",\"key\":\"ssh-rsa\",\"value\":\"ssh-ed25519 AAAAC3Nz\"},"
		"{\"namespace\":\"hostkeys\",\"key\":\"ssh-rsa\",\"value\":\"not base64!\"}]}},"
		"{\"queryPath\":\"hostkeys/\"}]}", 0, NULL);
	char **keys = NULL;
	size_t n = 0;
	tpf_gcp_guest_host_keys(resp, 0, &keys, &n);
	/* another namespace, a type that is not the key's, and junk: dropped */
	CHECK_INT(n, 2);
	if (n == 2) {
		CHECK_STR(keys[0], "ssh-ed25519 AAAAC3Nz");
		CHECK_STR(keys[1], "ecdsa-sha2-nistp256 AAAAE2Vj");
	}
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	tpf_gcp_guest_host_keys(resp, 1, &keys, &n); /* publishes nothing */
	CHECK_INT(n, 0);
	tpf_gcp_guest_host_keys(resp, 2, &keys, &n); /* no such worker */
	CHECK_INT(n, 0);
	tpf_gcp_guest_host_keys(NULL, 0, &keys, &n); /* the read failed */
	CHECK_INT(n, 0);
	json_decref(resp);
}

static void test_gcp_sshkeys__compute_metadata(void)
{
	json_t *cim = json_loads("{\"kind\":\"compute#metadata\",\"items\":["
				 "{\"key\":\"enable-oslogin\",\"value\":\"TRUE\"},"
				 "{\"key\":\"ssh-keys\",\"value\":\"a:b c a\"},{\"key\":\"nothing\"}]}",
				 0, NULL);
	json_t *md = tpf_gcp_compute_metadata(cim);
	CHECK_INT(json_object_size(md), 2);
	CHECK_STR(md_get(md, "enable-oslogin"), "TRUE");
	CHECK_STR(md_get(md, "ssh-keys"), "a:b c a");
	json_decref(md);
	json_decref(cim);
	md = tpf_gcp_compute_metadata(NULL);
	CHECK_INT(json_object_size(md), 0);
	json_decref(md);
}

int main(void)
{
	RUN(test_gcp_sshkeys__entry);
	RUN(test_gcp_sshkeys__has);
	RUN(test_gcp_sshkeys__append);
	RUN(test_gcp_sshkeys__create_metadata);
	RUN(test_gcp_sshkeys__patch_body);
	RUN(test_gcp_sshkeys__oslogin);
	RUN(test_gcp_sshkeys__key_in_metadata);
	RUN(test_gcp_sshkeys__guest_host_keys);
	RUN(test_gcp_sshkeys__compute_metadata);
	return unit_done();
}
