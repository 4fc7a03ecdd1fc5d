/*
 * The Cloud TPU provider (providers/provider.h) and what cmd/ needs from
 * it beyond the provider interface.
 *
 * tpf_gcp_provider_open (the row "gcp" of providers/registry/registry.c) builds a
 * provider on the REST client of gcp_client.h for fleet->gcp: project,
 * endpoint (else $TPUFORM_TPU_ENDPOINT, else https://tpu.googleapis.com;
 * plain http only to loopback) and credentials (else the ADC order of
 * google/gcp_auth.h). Its ops are thread-safe and run in parallel.
 *
 * transport() returns the SSH transport of providers/ssh for the fleet's
 * ssh settings, made at open and shared by every thread, wrapped by the
 * access layer of gcp_access.h (the key in ssh-keys metadata or OS Login,
 * host keys from guest attributes); workers are reached at the addresses
 * of networkEndpoints (gcp_node.h). create() sends the node's metadata with
 * the SSH key (gcp_access.h) and creates nothing when there is no key.
 *
 * Queued resources (gcp_qr.h): create() of a recipe with `queued` asks
 * queuedResources.create and returns once the queued resource waits
 * (the live node then carries its state, not READY) or its node is up;
 * refresh() also lists each zone's queued resources when a group is
 * queued, and merges them into the live nodes; remove() of a node that
 * came from a queued resource deletes the queued resource (force=true).
 */
#ifndef TPF_GCP_H
#define TPF_GCP_H

#include "config/config.h"
#include "providers/provider.h"
#include "util/diag.h"

/* Open the gcp provider for fleet f (borrowed; outlives it). *out: caller
 * frees with tpf_provider_free. 0, or TPF_ERROR with a diagnostic (no
 * project, a bad endpoint or credentials file). */
int tpf_gcp_provider_open(struct tpf_provider **out, const struct tpf_fleet *f,
			  struct tpf_diags *d);

/*
 * `tpuform validate -remote`: for every group, check in each of its zones
 * that the accelerator type and runtime version are offered
 * (acceleratorTypes.list, runtimeVersions.list; each zone listed once).
 * Returns 0 when everything is offered, TPF_ERROR with one diagnostic per
 * missing offering (address = group name, hint = what the zone offers) or
 * per API failure.
 */
int tpf_gcp_validate_remote(const struct tpf_fleet *f, struct tpf_diags *d);

/*
 * `tpuform accelerators`: what each zone offers, from the APIs. zone: one
 * zone, or NULL for every zone the fleet's groups name. *out (new
 * reference, caller json_decref) is
 *   {"zones": [{"zone": Z,
 *               "tpu": {"accelerator_types": [...], "runtime_versions": [...]}
 *                      (Cloud TPU v2 acceleratorTypes.list, runtimeVersions.list),
 *               "compute": {"machine_types": [{"name", "chips", "generation",
 *                          "topology", "image_family"}, ...]}
 *                      (Compute Engine machineTypes.list, the TPU machine types
 *                       tpuform knows, model/compute.h)
 *              }, ...]}
 * An API that cannot be listed in a zone gives {"error": MESSAGE} in place
 * of its object (a project may use one API and not the other). Returns 0,
 * or TPF_ERROR with a diagnostic when no client could be made or no zone
 * is named.
 */
int tpf_gcp_offerings(const struct tpf_fleet *f, const char *zone, json_t **out,
		      struct tpf_diags *d);

#endif
