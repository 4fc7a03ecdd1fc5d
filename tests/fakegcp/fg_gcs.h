/*
 * Private to the Cloud Storage part of the emulator (fg_gcs*.c): the
 * in-memory buckets and objects, and the helpers the handlers share.
 * The contract served is tests/fakegcp/README.md, "Cloud Storage".
 *
 * Every function here that touches buckets or objects needs fg_lock().
 */
#ifndef FG_GCS_H
#define FG_GCS_H

#include <stdint.h>
#include "tests/fakegcp/fakegcp.h"

/* One live object. No versioning: an overwrite replaces it. */
struct fg_gcs_obj {
	char *name;
	unsigned char *data;
	size_t size;            /* bytes */
	char *content_type;
	json_t *metadata;       /* custom metadata (object of strings), or NULL */
	int64_t generation;     /* microseconds since the epoch at the write, rising */
	int64_t metageneration; /* 1 for a new generation */
	char md5[32];           /* base64 of the MD5 digest */
	char crc32c[12];        /* base64 of the big-endian CRC32C */
};

struct fg_gcs_bucket {
	char *name;
	int64_t created_us;
	struct fg_gcs_obj **objs; /* sorted by name (byte order, as list returns them) */
	size_t n, cap;
};

/* ---- fg_gcs_store.c ---- */
/* 1 if name follows the bucket naming rules (3-63 of [a-z0-9._-], alnum ends). */
int fg_gcs_bucket_name_ok(const char *name);
/* 1 if name is a valid object name: 1-1024 bytes, no CR or LF. */
int fg_gcs_object_name_ok(const char *name);
struct fg_gcs_bucket *fg_gcs_bucket_find(const char *name);
/* Create the bucket (or return the existing one). */
struct fg_gcs_bucket *fg_gcs_bucket_add(const char *name);
size_t fg_gcs_bucket_count(void);
struct fg_gcs_bucket *fg_gcs_bucket_at(size_t i);
struct fg_gcs_obj *fg_gcs_obj_find(struct fg_gcs_bucket *b, const char *name);
/* Index of the first object whose name is > after (or >= 0 when after is NULL). */
size_t fg_gcs_obj_lower(struct fg_gcs_bucket *b, const char *after);
/*
 * Write a new generation of object `name` (a copy of data; ctype NULL gives
 * application/octet-stream; metadata borrowed, NULL for none). Returns the
 * object (borrowed).
 */
struct fg_gcs_obj *fg_gcs_obj_put(struct fg_gcs_bucket *b, const char *name, const void *data,
				  size_t len, const char *ctype, json_t *metadata);
void fg_gcs_obj_delete(struct fg_gcs_bucket *b, struct fg_gcs_obj *o);
/* The Object resource (fresh). host: the request's Host, for the links. */
json_t *fg_gcs_obj_json(const struct fg_gcs_bucket *b, const struct fg_gcs_obj *o,
			const char *host);
/* The Bucket resource (fresh). */
json_t *fg_gcs_bucket_json(const struct fg_gcs_bucket *b, const char *host);
/* MD5 and CRC32C of data, base64, as the API prints them. */
void fg_gcs_hashes(const void *data, size_t len, char md5[32], char crc32c[12]);

/* ---- fg_gcs.c ---- */
/*
 * The JSON API's error body: {"error": {"code", "message", "errors": [{"message",
 * "domain": "global", "reason"}]}} (cloud.google.com/storage/docs/json_api/v1/status-codes).
 */
void fg_gcs_error(struct fg_req *r, unsigned http, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* 412 conditionNotMet in the real wording. */
void fg_gcs_precondition_failed(struct fg_req *r);
/* A query argument (decoded) or NULL. */
const char *fg_gcs_arg(struct fg_req *r, const char *key);
/* The Host header, or "storage.googleapis.com". */
const char *fg_gcs_host(struct fg_req *r);
/*
 * Check ifGenerationMatch, ifGenerationNotMatch, ifMetagenerationMatch and
 * ifMetagenerationNotMatch against o (NULL: no live object). `read`: a GET,
 * where a NotMatch failure is 304 rather than 412. 0 to go on, or -1 after
 * answering (400 for a value that is not an int64).
 */
int fg_gcs_preconditions(struct fg_req *r, const struct fg_gcs_obj *o, int read);
/* What every storage request meets first: latency, a queued or random fault,
 * the bearer token (--auth token). 1 if that answered r. */
int fg_gcs_front(struct fg_req *r);
/* Answer with o's bytes and the x-goog-generation, -metageneration, -hash,
 * -stored-content-length headers (objects.get alt=media and the XML API). */
void fg_gcs_media_reply(struct fg_req *r, const struct fg_gcs_obj *o);
/* An int64 query argument: 0 absent, 1 present (*out set), -1 after answering 400. */
int fg_gcs_int64_arg(struct fg_req *r, const char *key, int64_t *out);

/* ---- fg_gcs_upload.c: objects.insert (uploadType media and multipart) ---- */
void fg_gcs_insert(struct fg_req *r, const char *bucket);

/* ---- fg_gcs_admin.c (fg_gcs_admin itself is in fakegcp.h) ---- */
/* A queued storage fault for this request: its HTTP code, or 0. */
unsigned fg_gcs_fault_take(struct fg_req *r);
void fg_gcs_faults_free(void);

#endif
