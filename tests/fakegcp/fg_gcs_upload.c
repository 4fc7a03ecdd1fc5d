/*
 * objects.insert: POST /upload/storage/v1/b/BUCKET/o with uploadType=media
 * (the bytes are the body, the name in ?name=) or uploadType=multipart (a
 * multipart/related body: the Object metadata as JSON, then the bytes).
 * Sources: cloud.google.com/storage/docs/json_api/v1/objects/insert,
 * cloud.google.com/storage/docs/uploading-objects (single-request uploads),
 * RFC 2387 (multipart/related) and RFC 2046 section 5.1.1 (boundaries).
 * Resumable uploads are not served (gcloud and Terraform use them only for
 * large objects; tpuform's state is small).
 *
 * gcloud's multipart bodies quote the boundary with single quotes and end
 * lines with a bare LF; Terraform's Go client streams the body chunked. Both
 * are accepted, as the real service accepts them.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tests/fakegcp/fg_gcs.h"
#include "util/xalloc.h"

struct part {
	char *ctype; /* fresh, or NULL */
	const char *data;
	size_t len;
};

/* The boundary parameter of a multipart Content-Type (fresh), or NULL. */
static char *boundary_of(const char *ctype)
{
	const char *b = ctype ? strcasestr(ctype, "boundary=") : NULL;

	if (!b)
		return NULL;
	b += strlen("boundary=");
	if (*b == '"' || *b == '\'') {
		const char *end = strchr(b + 1, *b);
		return end && end > b + 1 ? xstrndup(b + 1, (size_t)(end - b - 1)) : NULL;
	}
	size_t n = strcspn(b, "; \t");
	return n ? xstrndup(b, n) : NULL;
}

/* Index of "--boundary" at the start of a line, from `from` on; -1 if none. */
static long find_delim(const char *body, size_t len, const char *delim, size_t from)
{
	size_t dl = strlen(delim);

	while (from + dl <= len) {
		const char *hit = memmem(body + from, len - from, delim, dl);
		if (!hit)
			return -1;
		size_t at = (size_t)(hit - body);
		if (at == 0 || body[at - 1] == '\n')
			return (long)at;
		from = at + 1;
	}
	return -1;
}

/* Headers of one part from `at`: Content-Type into p->ctype; returns the
 * index where the content starts, or -1. */
static long part_headers(const char *body, size_t len, size_t at, struct part *p)
{
	while (at < len) {
		const char *nl = memchr(body + at, '\n', len - at);
		if (!nl)
			return -1;
		size_t end = (size_t)(nl - body), ll = end - at;
		if (ll && body[end - 1] == '\r')
			ll--;
		if (!ll)
			return (long)end + 1;
		if (ll > 13 && !strncasecmp(body + at, "content-type:", 13) && !p->ctype) {
			size_t s = at + 13;
			while (s < at + ll && (body[s] == ' ' || body[s] == '\t'))
				s++;
			p->ctype = xstrndup(body + s, at + ll - s);
		}
		at = end + 1;
	}
	return -1;
}

/* Exactly two parts (metadata, media) into parts[]; -1 if malformed. */
static int split_parts(const char *body, size_t len, const char *boundary, struct part parts[2])
{
	char *delim = xasprintf("--%s", boundary);
	size_t dl = strlen(delim);
	long at = find_delim(body, len, delim, 0);
	int n = 0, rc = -1;

	while (at >= 0) {
		size_t q = (size_t)at + dl;
		if (q + 2 <= len && body[q] == '-' && body[q + 1] == '-') {
			rc = n == 2 ? 0 : -1; /* the close delimiter */
			break;
		}
		const char *nl = memchr(body + q, '\n', len - q);
		if (!nl || n == 2)
			break;
		long start = part_headers(body, len, (size_t)(nl - body) + 1, &parts[n]);
		long next = start < 0 ? -1 : find_delim(body, len, delim, (size_t)start);
		if (next < 0)
			break;
		size_t end = (size_t)next;
		/* The line break before a delimiter belongs to the delimiter. */
		if (end > (size_t)start && body[end - 1] == '\n')
			end--;
		if (end > (size_t)start && body[end - 1] == '\r')
			end--;
		parts[n].data = body + start;
		parts[n].len = end - (size_t)start;
		n++;
		at = next;
	}
	free(delim);
	return rc;
}

/* The custom metadata must be an object of strings; -1 after answering 400. */
static int check_metadata(struct fg_req *r, json_t *md)
{
	const char *k;
	json_t *v;

	if (!md || json_is_null(md))
		return 0;
	if (!json_is_object(md)) {
		fg_gcs_error(r, 400, "invalid", "Invalid value for metadata: an object expected.");
		return -1;
	}
	json_object_foreach(md, k, v)
		if (!json_is_string(v)) {
			fg_gcs_error(r, 400, "invalid", "Invalid value for metadata.%s: a string "
				     "expected.", k);
			return -1;
		}
	return 0;
}

/* A client-sent md5Hash or crc32c must match the bytes (the real check). */
static int check_hashes(struct fg_req *r, json_t *meta, const void *data, size_t len)
{
	const char *md5 = json_string_value(json_object_get(meta, "md5Hash"));
	const char *crc = json_string_value(json_object_get(meta, "crc32c"));
	char m[32], c[12];

	if (!md5 && !crc)
		return 0;
	fg_gcs_hashes(data, len, m, c);
	if (md5 && strcmp(md5, m)) {
		fg_gcs_error(r, 400, "invalid", "Provided MD5 hash \"%s\" doesn't match calculated "
			     "MD5 hash \"%s\".", md5, m);
		return -1;
	}
	if (crc && strcmp(crc, c)) {
		fg_gcs_error(r, 400, "invalid", "Provided CRC32C \"%s\" doesn't match calculated "
			     "CRC32C \"%s\".", crc, c);
		return -1;
	}
	return 0;
}

static void store(struct fg_req *r, const char *bucket, const char *name, const struct part *media,
		  const char *ctype, json_t *meta)
{
	if (!name || !*name) {
		fg_gcs_error(r, 400, "required", "Required");
		return;
	}
	if (!fg_gcs_object_name_ok(name)) {
		fg_gcs_error(r, 400, "invalid", "The specified object name is not valid.");
		return;
	}
	if (check_metadata(r, json_object_get(meta, "metadata")) < 0 ||
	    check_hashes(r, meta, media->data, media->len) < 0)
		return;
	fg_lock();
	struct fg_gcs_bucket *b = fg_gcs_bucket_find(bucket);
	if (!b) {
		fg_gcs_error(r, 404, "notFound", "The specified bucket does not exist.");
	} else if (fg_gcs_preconditions(r, fg_gcs_obj_find(b, name), 0) == 0) {
		json_t *md = json_object_get(meta, "metadata");
		struct fg_gcs_obj *o = fg_gcs_obj_put(b, name, media->data, media->len, ctype,
						      json_is_object(md) ? md : NULL);
		fg_reply_json(r, 200, fg_gcs_obj_json(b, o, fg_gcs_host(r)));
	}
	fg_unlock();
}

static void multipart(struct fg_req *r, const char *bucket, const char *ctype)
{
	struct part parts[2] = { { 0 }, { 0 } };
	char *boundary = boundary_of(ctype);
	json_t *meta = NULL;

	if (!ctype || strncasecmp(ctype, "multipart/related", 17) || !boundary ||
	    split_parts(r->body.buf, r->body.len, boundary, parts) < 0) {
		fg_gcs_error(r, 400, "badContent", "Invalid multipart request: expected "
			     "multipart/related with a boundary and two parts (metadata, media).");
		goto done;
	}
	meta = json_loadb(parts[0].data, parts[0].len, 0, NULL);
	if (!json_is_object(meta)) {
		fg_gcs_error(r, 400, "parseError", "Parse Error: the first part is not a JSON "
			     "object.");
		goto done;
	}
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *mct = json_string_value(json_object_get(meta, "contentType"));
	store(r, bucket, name ? name : fg_gcs_arg(r, "name"), &parts[1], mct ? mct : parts[1].ctype,
	      meta);
done:
	json_decref(meta);
	free(parts[0].ctype);
	free(parts[1].ctype);
	free(boundary);
}

void fg_gcs_insert(struct fg_req *r, const char *bucket)
{
	const char *type = fg_gcs_arg(r, "uploadType");
	const char *ctype = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Type");

	if (r->body_too_large) {
		fg_gcs_error(r, 413, "uploadTooLarge", "The upload is larger than fakegcp's %u "
			     "bytes.", FG_BODY_MAX);
	} else if (!type) {
		fg_gcs_error(r, 400, "wrongUrlForUpload", "Upload requests must include an "
			     "uploadType URL parameter and a URL path beginning with /upload/");
	} else if (!strcmp(type, "media")) {
		struct part media = { NULL, r->body.buf, r->body.len };
		store(r, bucket, fg_gcs_arg(r, "name"), &media, ctype, NULL);
	} else if (!strcmp(type, "multipart")) {
		multipart(r, bucket, ctype);
	} else if (!strcmp(type, "resumable")) {
		fg_gcs_error(r, 501, "notImplemented", "uploadType=resumable is not served by "
			     "fakegcp; use media or multipart.");
	} else {
		fg_gcs_error(r, 400, "invalidParameter", "Invalid upload type: %s", type);
	}
}
