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
#include "providers/provider.h"

/* Port the TPU runtime listens on in networkEndpoints[].port: never SSH. */
#define TPF_GCP_TPU_RUNTIME_PORT 8470

/* The part after the last '/' of a resource name (borrowed; the whole
 * string when there is no '/'). NULL gives NULL. */
const char *tpf_gcp_last_segment(const char *name);

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
 * The nodes.create body for a recipe (new reference; caller decrefs):
 * acceleratorType, runtimeVersion, labels (all of r->labels),
 * schedulingConfig {preemptible|spot} (omitted for on-demand), metadata
 * (a copy of `metadata`, an object of strings, when not NULL: the ssh-keys
 * entry and any declared entries, gcp_sshkeys.h) and, when external_ips,
 * networkConfig {enableExternalIps:true} so that workers get an external
 * address tpuform can SSH to (the API default is none).
 */
json_t *tpf_gcp_node_body(const struct tpf_recipe *r, int external_ips, json_t *metadata);

/* {"labels":{...}} for nodes.patch?updateMask=labels (new reference). */
json_t *tpf_gcp_labels_body(const struct tpf_kvlist *labels);

#endif
