/*
 * Private to google/ (and its tests and fuzz harnesses): the parser of
 * Cloud Storage's Object resource, apart from the HTTP call, so that
 * tests/fuzz/fuzz_gcs.c can feed it any bytes.
 */
#ifndef TPF_GCS_INTERNAL_H
#define TPF_GCS_INTERNAL_H

#include <stddef.h>
#include "google/gcs.h"
#include "util/diag.h"

/*
 * An Object resource (https://cloud.google.com/storage/docs/json_api/v1/objects#resource:
 * generation, metageneration and size are int64 written as decimal strings;
 * md5Hash, updated) from an answer body of len bytes (need not be
 * NUL-terminated; NULL reads as empty) into *o, which the caller zeroed and
 * releases with tpf_gcs_object_release whatever the result. TPF_ERROR with
 * a diagnostic naming `what` and the HTTP status when the body is not a
 * JSON object or names no positive generation.
 */
int tpf_gcs_parse_object(const char *body, size_t len, const char *what, long status,
			 struct tpf_gcs_object *o, struct tpf_diags *d);

#endif
