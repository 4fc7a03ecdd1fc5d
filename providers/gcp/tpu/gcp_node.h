/*
 * Cloud TPU Node JSON <-> tpuform's live node and recipe.
 *
 * Field names: tests/fakegcp/tpu.v2.discovery.json schema "Node"
 * (docs/cloud-tpu-api.md section 4).
 */
#ifndef TPF_GCP_NODE_H
#define TPF_GCP_NODE_H

#include <jansson.h>
#include "model/recipe.h"
#include "providers/gcp/gcp_fields.h"
#include "providers/provider.h"

/* Port the TPU runtime listens on in networkEndpoints[].port: never SSH. */
#define TPF_GCP_TPU_RUNTIME_PORT 8470

/* The zone in "projects/P/locations/ZONE/..." as a fresh string (caller
 * frees), or NULL when name has no locations segment. */
char *tpf_gcp_name_zone(const char *name);

/* 1 if the Node's labels carry tpuform-fleet == fleet. */
int tpf_gcp_node_in_fleet(json_t *node, const char *fleet);

/*
 * Convert a Node object into *out (released first; caller releases).
 * name = last segment of Node.name; zone from Node.name, else `zone`;
 * recipe from acceleratorType, runtimeVersion, schedulingConfig and every
 * label (recipe.queued when the node names the queuedResource it came from); endpoints from networkEndpoints (ipAddress, accessConfig.externalIp;
 * port: the endpoint's port unless absent or the TPU runtime's 8470, then
 * `ssh_port`, because the real API reports the runtime port there while
 * the emulator reports the worker's SSH port); workers = number of
 * endpoints, else the accelerator table's (model/accel.h), else 1.
 * Returns 0, or -1 when node is not an object with a name.
 */
int tpf_gcp_node_parse(json_t *node, const char *zone, int ssh_port, struct tpf_live_node *out);

/*
 * Every field of a Node tpuform reads, as a partial response asks for them
 * (the `fields` system parameter, https://cloud.google.com/apis/docs/system-parameters):
 * what tpf_gcp_node_parse, tpf_gcp_node_fields_parse, tpf_gcp_node_notes_parse
 * and tpf_gcp_node_in_fleet read, and what gcp_api.c tells the SSH access
 * layer (node_seen: id, metadata, networkEndpoints, multisliceNode). Every
 * nodes.list and nodes.get asks for these, a queued resource's node spec
 * too (gcp_qr.h). Reading a new field means adding it here:
 * tests/unit/test_gcp_fields.c fails otherwise. metadata is asked whole:
 * the drift check compares every key (model/node_fields.h).
 */
#define TPF_GCP_NODE_FIELDS                                                               \
	"name,id,state,health,createTime,acceleratorType,runtimeVersion,labels,queuedResource," \
	"networkConfig(network,subnetwork,enableExternalIps,canIpForward),tags,"             \
	"serviceAccount(email,scope),metadata,dataDisks(sourceDisk,mode),"                   \
	"shieldedInstanceConfig,schedulingConfig(preemptible,spot,reserved),"               \
	"acceleratorConfig/topology,networkEndpoints(ipAddress,port,accessConfig/externalIp)," \
	"multisliceNode,healthDescription,symptoms(symptomType,workerId,details),"          \
	"upcomingMaintenance(" TPF_GCP_MAINTENANCE_FIELDS ")"

/*
 * The nodes.create body for a recipe (new reference; caller decrefs):
 * acceleratorType, runtimeVersion, labels (all of r->labels),
 * schedulingConfig {preemptible|spot} (omitted for on-demand), metadata
 * (a copy of `metadata`, an object of strings, when not NULL: the ssh-keys
 * entry and any declared entries, gcp_sshkeys.h) and, when external_ips,
 * networkConfig {enableExternalIps:true} so that workers get an external
 * address tpuform can SSH to (the API default is none).
 */
json_t *tpf_gcp_node_body(const struct tpf_recipe *r, int external_ips, json_t *metadata);

/*
 * The node fields (model/node_fields.h) in Node's spelling
 * (providers/gcp/gcp_node_fields.c, discovery document schema Node):
 * - tpf_gcp_node_fields_body adds to a nodes.create body b: acceleratorConfig
 *   {type, topology} in place of acceleratorType when a topology is set,
 *   schedulingConfig.reserved (plain nodes; a queued resource says it with
 *   reservationName), tags, serviceAccount {email, scope}, dataDisks
 *   [{sourceDisk, mode}], shieldedInstanceConfig {enableSecureBoot}.
 * - tpf_gcp_network_config: networkConfig {network, subnetwork,
 *   enableExternalIps, canIpForward}; enableExternalIps is the declared
 *   value, else `external_ips` (true only); NULL when there is nothing.
 * - tpf_gcp_tags_json: Node.tags (new reference).
 * - tpf_gcp_node_fields_parse: the live values of a Node into *nf
 *   (released first); absent booleans read as false (proto3).
 * - tpf_gcp_node_notes_parse: healthDescription, symptoms and
 *   upcomingMaintenance into out's notes (model/live.h).
 */
void tpf_gcp_node_fields_body(const struct tpf_recipe *r, json_t *b);
json_t *tpf_gcp_network_config(const struct tpf_node_fields *nf, int external_ips);
json_t *tpf_gcp_tags_json(const struct tpf_node_fields *nf);
void tpf_gcp_node_fields_parse(json_t *node, struct tpf_node_fields *nf);
void tpf_gcp_node_notes_parse(json_t *node, struct tpf_live_node *out);

/* {"labels":{...}} for nodes.patch?updateMask=labels (new reference). */
json_t *tpf_gcp_labels_body(const struct tpf_kvlist *labels);

#endif
