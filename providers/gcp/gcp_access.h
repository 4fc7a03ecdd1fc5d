/*
 * SSH access to the workers of Cloud TPU nodes, the way
 * `gcloud compute tpus tpu-vm ssh` gets it (rules: gcp_sshkeys.h), wrapped
 * around the SSH transport of providers/ssh.
 *
 * The transport tpf_gcp_access_transport returns is the gcp provider's
 * (providers/provider.h transport()). Before its connect (and interactive)
 * reaches a worker of node N for the first time in this process:
 *   1. OS Login or metadata keys: OS Login governs the node when
 *      ssh.os_login is true, or enable-oslogin says so in N's metadata,
 *      else in the project's (Compute projects.get, read once);
 *   2. metadata keys: unless N's ssh-keys (or the project's, when N does not
 *      block them) already give ssh.user the key, nodes.patch
 *      updateMask=metadata adds the entry "USER:KEY USER" to N's metadata,
 *      keeping every other entry and key, and waits for the operation; the
 *      guest agent then installs it (the SSH transport retries refused
 *      authentication before the first contact). Not done for a worker ref
 *      marked read_only (status probes, stops before a delete): those never
 *      change a node;
 *   3. OS Login: the key is imported for the credentials' account
 *      (gcp_oslogin.h, once per process and TPUFORM_OSLOGIN_TTL / 2) and the
 *      login user is the POSIX user name the import returns;
 *   4. host keys: a worker without a pin in the state gets the keys N
 *      publishes in its guest attributes (nodes.getGuestAttributes,
 *      queryPath hostkeys/, read once per node id): the worker must present
 *      one of them, else it is refused before any credential is sent. A
 *      worker that publishes none is trusted on first use, with a warning.
 * A node is found by its name in what the client read last (refresh,
 * create: tpf_gcp_client_on_node), else by asking each zone of the fleet.
 * A node that cannot be found is reached as the SSH transport alone would.
 *
 * New nodes: tpf_gcp_access_create_metadata gives the metadata for
 * nodes.create and for the node of a queued resource, with the entry in
 * ssh-keys, so the key is there from the first boot.
 *
 * Thread-safe; one preparation per node at a time, others wait for it.
 */
#ifndef TPF_GCP_ACCESS_H
#define TPF_GCP_ACCESS_H

#include <jansson.h>
#include "config/config.h"
#include "providers/gcp/gcp_client.h"
#include "providers/transport.h"
#include "util/diag.h"

struct tpf_gcp_access;

/*
 * A new access layer over client c and SSH transport ssh (both borrowed,
 * must outlive it) for fleet f (borrowed: zones, ssh.os_login). Registers
 * itself with tpf_gcp_client_on_node. Free with tpf_gcp_access_free.
 */
struct tpf_gcp_access *tpf_gcp_access_new(struct tpf_gcp_client *c, struct tpf_transport *ssh,
					  const struct tpf_fleet *f);
void tpf_gcp_access_free(struct tpf_gcp_access *a);

/*
 * The back-ends (gcp_backend.h) that reach nodes, in the order a node
 * never seen is looked for in the fleet's zones (reach[0] also serves a
 * node whose shape's back-end is not among them); g their context. Each
 * node's key goes into its metadata, and its host keys are read from its
 * guest attributes (hostkeys/), through the back-end of its shape as the
 * client's observer last recorded it. All borrowed. Before any connect.
 */
struct tpf_gcp_ctx;
struct tpf_gcp_backend;
void tpf_gcp_access_set_backends(struct tpf_gcp_access *a, struct tpf_gcp_ctx *g,
				 const struct tpf_gcp_backend *const *reach, size_t n);

/*
 * Learn what access `from` knows of every node (zone, id, metadata,
 * shape, slice members: what its client's lists and gets returned), as if
 * a's own client had read them, so that reaching those nodes' workers
 * through a sends no nodes.get / instances.get (a node is read again only
 * when a worker names an id other than the one learnt: a new VM). Both
 * borrowed; from is only read. Keys a added and host keys a read are
 * kept. For a second provider of the same fleet in one process: watch's
 * job waits, which connect through a provider of their own (issue 28).
 */
void tpf_gcp_access_learn_from(struct tpf_gcp_access *a, struct tpf_gcp_access *from);

/* The wrapping transport (borrowed from a). */
struct tpf_transport *tpf_gcp_access_transport(struct tpf_gcp_access *a);

/*
 * The metadata of a node about to be created (*out: new reference, an
 * object): every entry of `declared` (the fleet's metadata for the node, an
 * object of strings; may be NULL), with the entry for ssh.user and the
 * public key (tpf_ssh_public_key) added to ssh-keys: declared keys are
 * kept, never overwritten (tpf_gcp_metadata_for_create). Errors (TPF_ERROR,
 * with the key's diagnostic): no public key can be found, and then nothing
 * must be created: tpuform could not log in to it.
 */
int tpf_gcp_access_create_metadata(struct tpf_gcp_access *a, json_t *declared, json_t **out,
				   struct tpf_diags *d);

#endif
