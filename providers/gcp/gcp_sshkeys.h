/*
 * SSH access to Cloud TPU VMs as the Google Cloud CLI gives it: the rules,
 * as pure functions over the API's JSON (the calls are in gcp_access.c).
 *
 * Sources:
 *   - docs/cloud-tpu-api.md and shared/contracts/tpu.v2.discovery.json
 *     (Node.metadata: a map of strings; nodes.patch updateMask=metadata
 *     replaces the whole map; nodes.getGuestAttributes);
 *   - what `gcloud compute tpus tpu-vm ssh` sends, recorded against a
 *     loopback server (Google Cloud CLI 528; the notes
 *     "gcloud-observed"): the ssh-keys entry "USER:TYPE BASE64 USER"
 *     (comment = user name), appended to the old value after a "\n" (an
 *     absent value counts as "", so the result starts with "\n"), existing
 *     entries never removed, no expiry; enable-oslogin read from the
 *     node's metadata, else the project's ("FALSE" on the node wins);
 *   - the guest agent (GoogleCloudPlatform/guest-agent,
 *     google_guest_agent/instance_setup.go) publishes each host key as the
 *     guest attribute hostkeys/<TYPE> with the base64 blob as value; it
 *     installs ssh-keys entries into each user's authorized_keys, and none
 *     when OS Login is on.
 */
#ifndef TPF_GCP_SSHKEYS_H
#define TPF_GCP_SSHKEYS_H

#include <jansson.h>
#include <stddef.h>

#define TPF_GCP_MD_SSH_KEYS "ssh-keys"
#define TPF_GCP_MD_OSLOGIN "enable-oslogin"
#define TPF_GCP_MD_BLOCK_PROJECT_KEYS "block-project-ssh-keys"
/* The guest attribute namespace of host keys (queryPath "hostkeys/"). */
#define TPF_GCP_HOSTKEYS_PATH "hostkeys/"

/*
 * The ssh-keys entry for user and public key ("TYPE BASE64", any comment
 * dropped): "USER:TYPE BASE64 USER". Caller frees. NULL when the user is
 * empty or has ':' or whitespace, or the key is not "TYPE BASE64".
 */
char *tpf_gcp_ssh_key_entry(const char *user, const char *public_key);

/*
 * 1 if ssh-keys `value` (may be NULL) has a line for `user` with the same
 * key type and base64 as public_key, whatever its comment, except a
 * "google-ssh {...}" comment (an entry with an expiry, which the guest
 * agent drops once passed). Else 0.
 */
int tpf_gcp_ssh_keys_has(const char *value, const char *user, const char *public_key);

/* `old` (NULL: "") + "\n" + entry, as gcloud writes it. Caller frees. */
char *tpf_gcp_ssh_keys_append(const char *old, const char *entry);

/*
 * The metadata of a node to create (new reference): every entry of
 * `declared` (an object of strings, may be NULL), with `entry` added to
 * ssh-keys: the declared value + "\n" + entry, or entry alone when none is
 * declared. A declared value that already has the key is kept as it is.
 */
json_t *tpf_gcp_metadata_for_create(json_t *declared, const char *user, const char *public_key,
				    const char *entry);

/*
 * The body of nodes.patch?updateMask=metadata that gives the node the key
 * (new reference): {"metadata": every entry of `current` (may be NULL),
 * ssh-keys appended with tpf_gcp_ssh_keys_append}. NULL when current
 * already has the key (nothing to send).
 */
json_t *tpf_gcp_metadata_patch(json_t *current, const char *user, const char *public_key,
			       const char *entry);

/* A boolean metadata value: 1 for "true", 0 for "false" (any case), -1 when
 * absent or anything else. metadata may be NULL. */
int tpf_gcp_metadata_bool(json_t *metadata, const char *key);

/*
 * Whether OS Login governs SSH to a node: the node's enable-oslogin when
 * it says true or false, else the project's, else off; forced on by
 * ssh.os_login (`fleet_on`). Metadata objects may be NULL.
 */
int tpf_gcp_oslogin_enabled(json_t *node_metadata, json_t *project_metadata, int fleet_on);

/*
 * 1 if the key reaches the node through metadata already: in the node's
 * ssh-keys, or in the project's unless the node sets
 * block-project-ssh-keys true (gcloud then writes nothing).
 */
int tpf_gcp_key_in_metadata(json_t *node_metadata, json_t *project_metadata, const char *user,
			    const char *public_key);

/*
 * The host keys worker `worker` publishes, from a GetGuestAttributesResponse
 * for every worker ({"guestAttributes": [...]}, matched by position, as
 * gcloud does): each item of namespace "hostkeys" as "TYPE BASE64" (the
 * value may also carry the type itself). *keys: caller frees each and the
 * array; *n = 0 when the worker publishes none.
 */
void tpf_gcp_guest_host_keys(json_t *resp, int worker, char ***keys, size_t *n);

/* Metadata as a JSON object from Compute's {"items": [{"key","value"}]}
 * (Project.commonInstanceMetadata). New reference; empty when absent. */
json_t *tpf_gcp_compute_metadata(json_t *common_instance_metadata);

#endif
