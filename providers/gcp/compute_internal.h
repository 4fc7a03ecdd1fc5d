/*
 * Private to providers/gcp/compute*.c: the Compute Engine client's fields.
 */
#ifndef TPF_GCP_COMPUTE_INTERNAL_H
#define TPF_GCP_COMPUTE_INTERNAL_H

#include "providers/gcp/gcp_api.h"

struct tpf_compute_client {
	struct tpf_gcp_client *c; /* borrowed: credentials, settings, interrupt flag */
	char *base;               /* <root>/compute/v1/projects/<project> */
};

#endif
