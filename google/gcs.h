/*
 * A small Cloud Storage JSON API client: the object calls a state backend
 * needs (https://cloud.google.com/storage/docs/json_api/v1/objects):
 * metadata (objects.get), media (objects.get ?alt=media), simple media
 * upload (objects.insert ?uploadType=media), delete and list by prefix,
 * each with the generation preconditions that make compare-and-swap and a
 * create-if-absent lock possible
 * (https://cloud.google.com/storage/docs/request-preconditions):
 * ifGenerationMatch=N proceeds only if the live object's generation is N,
 * and ifGenerationMatch=0 only if no live object exists. A failed
 * precondition is HTTP 412.
 *
 * Plumbing is google/'s: the same HTTP engine, credentials (ADC,
 * provider.gcp.credentials, impersonation, quota project) and endpoint
 * policy as the Cloud TPU client, and every request goes through the one
 * REST client (gapi.h), whose retries (transient answers, dropped
 * connections, Retry-After) match Cloud Storage's retry strategy
 * (https://cloud.google.com/storage/docs/retry-strategy). A write is
 * retried only when it carries a generation precondition (if_generation
 * >= 0: "conditionally idempotent"); one without is sent once. When
 * a retried write answers 412 (the first attempt did land, but its answer
 * was lost), the object's MD5 is compared with what was sent, and a match
 * counts as success; likewise a retried delete answering 404.
 *
 * Thread-safe: calls may run concurrently on one client.
 */
#ifndef TPF_GCS_H
#define TPF_GCS_H

#include <stddef.h>
#include "google/gcp_auth.h"
#include "util/buf.h"
#include "util/diag.h"

/* Production root of the JSON API. */
#define TPF_GCS_DEFAULT_ENDPOINT "https://storage.googleapis.com"

struct tpf_gcs;

struct tpf_gcs_config {
	const char *endpoint; /* state.gcs.endpoint; NULL: $TPUFORM_STORAGE_ENDPOINT, else default */
	struct tpf_gcp_auth_config auth; /* the fleet's provider.gcp credentials (may be all NULL) */
};

/*
 * The endpoint in effect: `configured`, else $TPUFORM_STORAGE_ENDPOINT, else
 * TPF_GCS_DEFAULT_ENDPOINT, checked with tpf_gcp_endpoint_check (https, or
 * http to a loopback host only). *out: caller frees. TPF_ERROR with a
 * diagnostic naming the variable or key.
 */
int tpf_gcs_endpoint_resolve(const char *configured, char **out, struct tpf_diags *d);

/* Open a client (settings from TPUFORM_GCP_* as gcp_retry.h says). No request is
 * sent until the first call. Returns 0 or TPF_ERROR with a diagnostic;
 * free with tpf_gcs_free (NULL ok). */
int tpf_gcs_open(struct tpf_gcs **out, const struct tpf_gcs_config *cfg, struct tpf_diags *d);
void tpf_gcs_free(struct tpf_gcs *g);
/* The endpoint in use (borrowed), for messages. */
const char *tpf_gcs_endpoint(const struct tpf_gcs *g);

/* The Object resource fields tpuform uses (int64 fields arrive as decimal
 * strings in the JSON API). */
struct tpf_gcs_object {
	long long generation;
	long long metageneration;
	long long size;  /* bytes */
	char *md5;       /* md5Hash, base64; may be NULL */
	char *updated;   /* RFC 3339; may be NULL */
};
void tpf_gcs_object_release(struct tpf_gcs_object *o);

/*
 * Object metadata. TPF_ENOTFOUND (no diagnostic) when the object does not
 * exist; other failures TPF_ERROR/TPF_ETRANSIENT with a diagnostic. *o is
 * overwritten (zeroed first); release it after success.
 */
int tpf_gcs_stat(struct tpf_gcs *g, const char *bucket, const char *name,
		 struct tpf_gcs_object *o, struct tpf_diags *d);

/*
 * The object's bytes and the generation they belong to: metadata first,
 * then ?alt=media&ifGenerationMatch=<that generation>, so the bytes and the
 * generation always match; a write in between (412) starts over (up to 5
 * times). data is reset first; at most `max` bytes (else TPF_ERROR).
 * TPF_ENOTFOUND (no diagnostic, *generation 0) when there is no object.
 */
int tpf_gcs_read(struct tpf_gcs *g, const char *bucket, const char *name, size_t max,
		 struct tpf_buf *data, long long *generation, struct tpf_diags *d);

/*
 * Upload len bytes as the object (simple media upload) with
 * ifGenerationMatch=if_generation (0: only if no object exists; < 0: no
 * precondition). On success *generation (may be NULL) is the new one.
 * Without a precondition the upload is sent once (Cloud Storage's retry
 * strategy: only conditional uploads are idempotent), except with
 * TPF_GCS_REPEATABLE: no precondition, and the caller knows that writing
 * the same bytes twice is harmless (an object only it writes, under the
 * state lock), so transient failures are retried.
 * A failed precondition: TPF_ESTALE with no diagnostic (the caller says
 * what it means: a held lock, a writer that skipped the lock).
 */
#define TPF_GCS_REPEATABLE (-2LL)
int tpf_gcs_write(struct tpf_gcs *g, const char *bucket, const char *name, const char *data,
		  size_t len, const char *content_type, long long if_generation,
		  long long *generation, struct tpf_diags *d);

/*
 * Delete the object, with ifGenerationMatch=if_generation when >= 1.
 * TPF_ENOTFOUND (no diagnostic) when it does not exist, TPF_ESTALE (no
 * diagnostic) when its generation differs.
 */
int tpf_gcs_delete(struct tpf_gcs *g, const char *bucket, const char *name,
		   long long if_generation, struct tpf_diags *d);

/*
 * Names of the objects whose names start with prefix, every page followed
 * (nextPageToken). *names is a NULL-terminated array the caller frees with
 * tpf_gcs_names_free; *n its length.
 */
int tpf_gcs_list(struct tpf_gcs *g, const char *bucket, const char *prefix, char ***names,
		 size_t *n, struct tpf_diags *d);
/* The same, with each object's generation in (*generations)[i] (a new
 * array the caller frees; generations may be NULL), from the list's own
 * Object resources: no request per object. */
int tpf_gcs_list_gen(struct tpf_gcs *g, const char *bucket, const char *prefix, char ***names,
		     long long **generations, size_t *n, struct tpf_diags *d);
void tpf_gcs_names_free(char **names);

/* Requests sent so far, every attempt counted (for tests). */
long tpf_gcs_requests(struct tpf_gcs *g);

#endif
