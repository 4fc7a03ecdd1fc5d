/*
 * The request machinery of gcp_api.c, for the other API files of the
 * client (gcp_qr_api.c). Not for use outside providers/gcp/.
 */
#ifndef TPF_GCP_API_INTERNAL_H
#define TPF_GCP_API_INTERNAL_H

#include <jansson.h>
#include "providers/gcp/gcp_api.h"
#include "google/gcp_errors.h"

/* Bit for tpf_gcp_call's `quiet`: errors of that class get no diagnostic. */
#define TPF_GCP_QUIET(cls) (1u << (cls))

/* How a call ended, when the caller wants to look closer. */
struct tpf_gcp_outcome {
	int api_error;           /* 1: the API answered with an error: cls and err hold it */
	enum tpf_gcp_class cls;
	int attempts;            /* requests sent, retries included */
	struct tpf_gcp_error err; /* TPF_GCP_ERROR_INIT before; release after */
};

/* <endpoint>/v2/projects/P/locations/ZONE<suffix> (caller frees). */
char *tpf_gcp_zone_url(struct tpf_gcp_client *c, const char *zone, const char *suffix);

/*
 * One API request with the client's retries (gcp_api.h). 0 and *out (new
 * reference) on 2xx; else a negative code with a diagnostic naming `what`,
 * except for error classes in `quiet`. res may be NULL.
 */
int tpf_gcp_call(struct tpf_gcp_client *c, const char *method, const char *url, json_t *body,
		 const char *what, const char *address, unsigned quiet, json_t **out,
		 struct tpf_gcp_outcome *res, struct tpf_diags *d);

/* Poll a long-running operation until done; *failed is set when the
 * operation itself failed (diagnostic added, class code returned). */
int tpf_gcp_wait_op(struct tpf_gcp_client *c, json_t *op, const char *what, const char *address,
		    int *failed, struct tpf_diags *d);

/* Sleep between two polls, looking at the interrupt flag at least every
 * 0.2 s: 0, or TPF_EINTERRUPTED (no diagnostic) once it is set. */
int tpf_gcp_poll_sleep(struct tpf_gcp_client *c, double seconds);

/* Every page of a list method; each(item, ctx) for the items of `key`. */
int tpf_gcp_list_all(struct tpf_gcp_client *c, const char *base, const char *key,
		     const char *what, int (*each)(json_t *, void *), void *ctx,
		     struct tpf_diags *d);

/* Poll node `name` until it leaves CREATING. TPF_ENOTFOUND if it is gone. */
int tpf_gcp_wait_node_settled(struct tpf_gcp_client *c, const char *zone, const char *name,
			      const char *what, struct tpf_live_node *out, struct tpf_diags *d);

/* The client's settings and facts (borrowed). */
const char *tpf_gcp_client_project(struct tpf_gcp_client *c);
int tpf_gcp_client_ssh_port(struct tpf_gcp_client *c);
int tpf_gcp_client_external_ips(struct tpf_gcp_client *c);

#endif
