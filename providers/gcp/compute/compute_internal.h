/*
 * Private to providers/gcp/compute/: the Compute Engine client's fields and
 * the refresh's steps (compute_refresh.c) for the back-end's table
 * (compute_backend.c).
 */
#ifndef TPF_GCP_COMPUTE_INTERNAL_H
#define TPF_GCP_COMPUTE_INTERNAL_H

#include "providers/gcp/gcp_client.h"
#include "model/live.h"

struct tpf_compute_client {
	struct tpf_gcp_client *c; /* borrowed: credentials, settings, interrupt flag */
	char *base;               /* <root>/compute/v1/projects/<project> */
};

/* Wait for Compute Engine operation `op` (zonal, regional or global:
 * google/gapi.h TPF_GAPI_OP_COMPUTE, through its selfLink) to be DONE.
 * 0, or the operation's error with `what` and `address` in diagnostics. */
int tpf_compute_wait_op(struct tpf_compute_client *cc, json_t *op, const char *what,
			const char *address, struct tpf_diags *d);

/*
 * DELETE `url` (a Compute Engine resource; requestId added) and wait for
 * its operation; a resource already gone is 0. A 400 resourceNotReady
 * ("The resource '...' is not ready": another operation on it runs, most
 * often a delete an earlier run sent and did not see to its end; a TPU
 * slice's MIG takes minutes to delete its members) is sent again, with the
 * operation poll's growing pause, until it is accepted or answers 404, at
 * most the client's op_timeout; then its error. Errors with diagnostics
 * naming `what` and `address`; TPF_EINTERRUPTED without.
 */
int tpf_compute_delete_url(struct tpf_compute_client *cc, const char *url, const char *what,
			   const char *address, struct tpf_diags *d);

/*
 * A refresh's fleet-wide lists (compute_refresh.c): the fleet's MIGs and
 * the preemptions, each one aggregated walk, into *all (free with
 * tpf_compute_refresh_free; NULL frees nothing); the preempted instances'
 * ids into ids (model/live.h), so the plan can say why a node is gone. A
 * preemption list that cannot be read is a warning: losses are then not
 * called preemptions. 0, or the MIG list's error.
 */
int tpf_compute_refresh_fleet(struct tpf_compute_client *cc, const char *fleet, void **all,
			      struct tpf_live_set *ids, struct tpf_diags *d);
void tpf_compute_refresh_free(void *all);
/*
 * Complete a zone's listing (tpf_compute_list: instances in set, slice
 * members in members) with the fleet-wide lists: lost instances a
 * preemption names are PREEMPTED, and each MIG of the zone with its
 * members becomes a slice node appended to set (a multislice node's
 * slices one node). Returns how many of set's nodes are single instances
 * (the first ones); members are left to the caller to release.
 */
size_t tpf_compute_refresh_zone(struct tpf_compute_client *cc, void *all, const char *zone,
				struct tpf_live_set *set, struct tpf_live_set *members);

#endif
