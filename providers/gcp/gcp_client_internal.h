/*
 * The Cloud TPU flavour of the Google REST client (google/gapi.h), made in
 * gcp_client.c, for the resource files of the client: nodes (tpu/gcp_api.c),
 * queued resources (tpu/gcp_qr_api.c), instances and MIGs (compute/), OS
 * Login (gcp_oslogin.c). Not for use outside providers/gcp/ and its two
 * back-end folders.
 */
#ifndef TPF_GCP_CLIENT_INTERNAL_H
#define TPF_GCP_CLIENT_INTERNAL_H

#include <jansson.h>
#include "providers/gcp/gcp_client.h"
#include "google/gapi.h"
#include "google/gcp_errors.h"

/* Bit for tpf_gcp_call's `quiet`: errors of that class get no diagnostic. */
#define TPF_GCP_QUIET(cls) (1u << (cls))
/*
 * More bits for `quiet`: how a POST or PATCH may be repeated (google/gapi.h
 * TPF_GAPI_*; without one of them it is sent once, never retried).
 * TPF_GCP_IDEMPOTENT: repeating it is harmless (a read sent as POST, a
 * PATCH of whole values under an updateMask). TPF_GCP_PRECONDITION: a
 * client-chosen id (nodeId, queuedResourceId) whose repeat is a 409 the
 * caller handles. TPF_GCP_REQUEST_ID: the method takes a requestId
 * (queuedResources.create), added to the URL, the same for every attempt.
 */
#define TPF_GCP_FLAG_SHIFT 16
#define TPF_GCP_IDEMPOTENT (TPF_GAPI_IDEMPOTENT << TPF_GCP_FLAG_SHIFT)
#define TPF_GCP_PRECONDITION (TPF_GAPI_PRECONDITION << TPF_GCP_FLAG_SHIFT)
#define TPF_GCP_REQUEST_ID (TPF_GAPI_REQUEST_ID << TPF_GCP_FLAG_SHIFT)
/* A failed connect (no such host, refused) is final: for reads that are
 * optional, so an endpoint that does not resolve costs one try, not the
 * retry budget (google/gapi.h TPF_GAPI_CONNECT_ONCE). */
#define TPF_GCP_CONNECT_ONCE (TPF_GAPI_CONNECT_ONCE << TPF_GCP_FLAG_SHIFT)

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
 * One API request through the Google REST client (google/gapi.h
 * tpf_gapi_json: its retries, its error messages). 0 and *out (new
 * reference) on 2xx; else a negative code with a diagnostic naming `what`,
 * except for error classes in `quiet` (and the flag bits above). res may
 * be NULL.
 */
int tpf_gcp_call(struct tpf_gcp_client *c, const char *method, const char *url, json_t *body,
		 const char *what, const char *address, unsigned quiet, json_t **out,
		 struct tpf_gcp_outcome *res, struct tpf_diags *d);

/* Poll a long-running operation (google.longrunning.Operation, named
 * relative to <endpoint>/v2/) until done: google/gapi.h tpf_gapi_wait.
 * *failed is set when the operation itself failed (diagnostic added,
 * class code returned). */
int tpf_gcp_wait_op(struct tpf_gcp_client *c, json_t *op, const char *what, const char *address,
		    int *failed, struct tpf_diags *d);

/* Sleep between two polls, looking at the interrupt flag at least every
 * 0.2 s: 0, or TPF_EINTERRUPTED (no diagnostic) once it is set. */
int tpf_gcp_poll_sleep(struct tpf_gcp_client *c, double seconds);

/* Is the resource there? 0 yes, TPF_ENOTFOUND gone, or another error
 * (diagnostic in d). */
typedef int (*tpf_gcp_probe_fn)(struct tpf_gcp_client *c, const char *zone, const char *name,
				struct tpf_diags *d);

/* After a delete operation finished: poll probe until it says TPF_ENOTFOUND
 * (0), an error (its code), the operation timeout passes (TPF_ERROR, "WHAT:
 * NOUN still listed N seconds after its delete operation finished") or an
 * interrupt (TPF_EINTERRUPTED). The API can list a resource for a while
 * after its delete operation is done. */
int tpf_gcp_wait_gone(struct tpf_gcp_client *c, const char *zone, const char *name,
		      const char *noun, const char *what, tpf_gcp_probe_fn probe,
		      struct tpf_diags *d);

/* "<sep>prettyPrint=false&fields=<fields, escaped>" (fresh): a partial
 * response (the `fields` system parameter,
 * https://cloud.google.com/apis/docs/system-parameters) without the
 * indentation Google adds by default (prettyPrint, the same page), to
 * append to a URL; sep is '?' or '&'. */
char *tpf_gcp_fields_query(char sep, const char *fields);

/* Every page of a list method (google/gapi.h tpf_gapi_pages); each(item,
 * ctx) for the items of `key`; a page naming unreachable locations is an
 * error. fields: the partial response asked for (the `fields` system
 * parameter, https://cloud.google.com/apis/docs/system-parameters), the
 * whole page's: "nextPageToken,unreachable,nodes(name,labels)"; NULL:
 * whole pages. */
int tpf_gcp_list_all(struct tpf_gcp_client *c, const char *base, const char *key,
		     const char *fields,
		     const char *what, int (*each)(json_t *, void *), void *ctx,
		     struct tpf_diags *d);

/*
 * The page size tpuform asks of the Cloud TPU lists that grow with the
 * fleet (nodes.list, queuedResources.list: the `pageSize` query parameter,
 * https://cloud.google.com/tpu/docs/reference/rest/v2/projects.locations.nodes/list).
 * The reference gives neither a default nor a maximum ("the maximum number
 * of items to return"); Google's API design rule for list methods, AIP-158
 * (https://google.aip.dev/158), has a value above the maximum coerced to
 * it, never refused, and gives 1,000 as the example maximum. So 1,000: at
 * 10,000 nodes a zone of 1,250 is 2 pages one after another, not the 25 of
 * a server default of 50 (tests/fakegcp answers as AIP-158 says: 50 when
 * none is asked, at most --page-size, default 1,000). A page must fit the
 * response cap (TPF_GCP_MAX_BODY, 64 MiB; TPUFORM_GCP_MAX_BODY raises
 * it): with the fields tpuform asks, 1,000 nodes whose metadata averages
 * under 60 KB.
 */
#define TPF_GCP_PAGE_SIZE 1000

/* tpf_gcp_list_all asking page_size items a page (`pageSize`; 0: none
 * asked, the server's default). */
int tpf_gcp_list_pages(struct tpf_gcp_client *c, const char *base, const char *key,
		       const char *fields, int page_size, const char *what,
		       int (*each)(json_t *, void *), void *ctx, struct tpf_diags *d);

/* Hand what a back-end read of a node to the tpf_gcp_client_on_node
 * observer, if any. */
void tpf_gcp_client_seen(struct tpf_gcp_client *c, const char *zone,
			 const struct tpf_gcp_seen *n);

/* The client's REST client, settings and facts (borrowed). */
struct tpf_gapi *tpf_gcp_client_api(struct tpf_gcp_client *c);
const char *tpf_gcp_client_project(struct tpf_gcp_client *c);
int tpf_gcp_client_ssh_port(struct tpf_gcp_client *c);
int tpf_gcp_client_external_ips(struct tpf_gcp_client *c);

#endif
