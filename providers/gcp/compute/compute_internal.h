/*
 * Private to providers/gcp/compute*.c: the Compute Engine client's fields.
 */
#ifndef TPF_GCP_COMPUTE_INTERNAL_H
#define TPF_GCP_COMPUTE_INTERNAL_H

#include "providers/gcp/gcp_client.h"

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

#endif
