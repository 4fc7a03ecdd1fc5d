/*
 * The node fields real projects need (issue 10 point 3): network, service
 * account, metadata, disks, shielded VM, reservations and topology. They
 * are part of a node's recipe (model/recipe.h) and of its live side
 * (model/live.h), and are declared per group with fleet-wide defaults
 * (config/config_node.c).
 *
 * Contract: the Cloud TPU v2 discovery document, schemas Node,
 * NetworkConfig, ServiceAccount, AttachedDisk, ShieldedInstanceConfig,
 * SchedulingConfig, AcceleratorConfig and QueuedResource
 * (docs/cloud-tpu-api.md sections 4 and 5). Which change patches in place
 * follows nodes.patch's documented updateMask list ("Supported fields:
 * [description, tags, labels, metadata, network_config.enable_external_ips]")
 * and Terraform's google_tpu_v2_vm (docs/cloud-tpu-api.md section 8); every
 * other field forces replacement.
 *
 * Unset values: strings NULL, tri-state booleans TPF_TRI_UNSET, lists and
 * maps empty: a zeroed struct is all unset (recipes are often calloc'd). A recipe whose fields are all unset serialises to nothing, so
 * state files of fleets that use none of them stay byte-identical.
 */
#ifndef TPF_NODE_FIELDS_H
#define TPF_NODE_FIELDS_H

#include <stddef.h>
#include <jansson.h>
#include "util/diag.h"
#include "util/kv.h"

/* A boolean the fleet file may leave unset (then the API's default). */
enum tpf_tri { TPF_TRI_UNSET = 0, TPF_TRI_FALSE, TPF_TRI_TRUE };
#define TPF_TRI(b) ((b) ? TPF_TRI_TRUE : TPF_TRI_FALSE)

/* AttachedDisk: sourceDisk (a full disk path) and mode. */
struct tpf_data_disk {
	char *source_disk; /* "projects/P/zones/Z/disks/D" */
	char *mode;        /* "READ_WRITE" or "READ_ONLY"; NULL: the API's default (READ_WRITE) */
};

struct tpf_node_fields {
	char *network;          /* networkConfig.network; NULL: the API's "default" */
	char *subnetwork;       /* networkConfig.subnetwork */
	enum tpf_tri enable_external_ips; /* networkConfig.enableExternalIps; unset: from ssh.address */
	enum tpf_tri can_ip_forward; /* networkConfig.canIpForward */
	char **tags;            /* Node.tags (firewall tags), in order */
	size_t ntags;
	char *sa_email;         /* serviceAccount.email; NULL: the default compute account */
	char **sa_scopes;       /* serviceAccount.scope (singular in the API) */
	size_t nsa_scopes;
	struct tpf_kvlist metadata; /* Node.metadata as declared (tpuform's ssh-keys entry is
				     * added at create time, not stored here) */
	struct tpf_data_disk *disks; /* Node.dataDisks */
	size_t ndisks;
	enum tpf_tri secure_boot; /* shieldedInstanceConfig.enableSecureBoot */
	int reserved;           /* nodes: schedulingConfig.reserved; queued resources:
				 * reservationName ".../reservations/-" (as gcloud sends) */
	char *reservation;      /* queued resources only: reservationName's last segment,
				 * or a full projects/.../reservations/NAME path */
	char *topology;         /* acceleratorConfig.topology ("2x2x2"); NULL: acceleratorType */
};

/* What nodes.patch can change (its updateMask paths), as a bit set. */
enum {
	TPF_PATCH_LABELS = 1u << 0,       /* labels */
	TPF_PATCH_TAGS = 1u << 1,         /* tags */
	TPF_PATCH_METADATA = 1u << 2,     /* metadata */
	TPF_PATCH_EXTERNAL_IPS = 1u << 3, /* network_config.enable_external_ips */
};

/* Deep copy (dst released first; dst must be initialised or zeroed). */
void tpf_node_fields_copy(struct tpf_node_fields *dst, const struct tpf_node_fields *src);
/* Free everything and zero *f (all unset). */
void tpf_node_fields_release(struct tpf_node_fields *f);
/* 1 when nothing is set. */
int tpf_node_fields_empty(const struct tpf_node_fields *f);

/* The updateMask for a TPF_PATCH_* set, in the API's spelling and a fixed
 * order: "labels,tags,metadata,network_config.enable_external_ips".
 * Caller frees; NULL for 0. */
char *tpf_patch_mask(unsigned fields);

/*
 * The JSON form kept in state files and saved plans: each set field under
 * its fleet-file key (network, subnetwork, enable_external_ips,
 * can_ip_forward, tags, service_account {email, scopes}, metadata,
 * data_disks [{source_disk, mode}], shielded_instance {secure_boot},
 * reserved (only when true), reservation, topology) added to object o;
 * nothing when unset. from_json reads them back from o (absent keys:
 * unset); 0, or TPF_ERROR with a diagnostic naming `what` and the key.
 */
void tpf_node_fields_to_json(const struct tpf_node_fields *f, json_t *o);
int tpf_node_fields_from_json(struct tpf_node_fields *f, json_t *o, const char *what,
			      struct tpf_diags *d);

/* 1 when every entry of `declared` metadata is in `live` with the same
 * value, except ssh-keys, whose declared lines need only all be among
 * live's (tpuform adds its own key line; docs/cloud-tpu-api.md section 4),
 * and live has no other key that declared lacks. */
int tpf_metadata_matches(const struct tpf_kvlist *declared, const struct tpf_kvlist *live);

#endif
