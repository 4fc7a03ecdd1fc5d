/*
 * The XML API reads that Terraform's gcs backend makes: its Go client
 * (cloud.google.com/go/storage) reads object data with GET /BUCKET/OBJECT
 * even when given a JSON API endpoint. Served only for buckets that exist,
 * so nothing else on this port is shadowed. Preconditions come as
 * x-goog-if-generation-match and x-goog-if-metageneration-match headers;
 * errors are the XML API's <Error> documents.
 * Sources: cloud.google.com/storage/docs/xml-api/get-object-download,
 * cloud.google.com/storage/docs/xml-api/reference-status,
 * cloud.google.com/storage/docs/request-preconditions (the XML API column).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fg_gcs.h"
#include "util/xalloc.h"

/* Fixed texts only (no names): nothing here needs XML escaping. */
static void xml_error(struct fg_req *r, unsigned http, const char *code, const char *msg)
{
	char *doc = xasprintf("<?xml version='1.0' encoding='UTF-8'?><Error><Code>%s</Code>"
			      "<Message>%s</Message></Error>", code, msg);

	fg_reply_text(r, http, "application/xml; charset=UTF-8", doc);
	free(doc);
}

/* An int64 header: 0 absent, 1 present, -1 after answering 400. */
static int int64_header(struct fg_req *r, const char *name, int64_t *out)
{
	const char *v = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
	char *end;

	if (!v)
		return 0;
	long long n = strtoll(v, &end, 10);
	if (!*v || *end) {
		xml_error(r, 400, "InvalidArgument", "Invalid argument.");
		return -1;
	}
	*out = (int64_t)n;
	return 1;
}

/* 0 to serve o, -1 after answering. */
static int xml_preconditions(struct fg_req *r, const struct fg_gcs_obj *o)
{
	int64_t g = 0, m = 0;
	int hg = int64_header(r, "x-goog-if-generation-match", &g);
	int hm = hg < 0 ? -1 : int64_header(r, "x-goog-if-metageneration-match", &m);

	if (hg < 0 || hm < 0)
		return -1;
	if ((hg && o->generation != g) || (hm && o->metageneration != m)) {
		xml_error(r, 412, "PreconditionFailed",
			  "At least one of the pre-conditions you specified did not hold.");
		return -1;
	}
	return 0;
}

static void serve_object(struct fg_req *r, const char *bucket, const char *name)
{
	int64_t gen = 0;
	int has_gen = fg_gcs_int64_arg(r, "generation", &gen);

	if (has_gen < 0)
		return;
	fg_lock();
	struct fg_gcs_bucket *b = fg_gcs_bucket_find(bucket);
	struct fg_gcs_obj *o = b ? fg_gcs_obj_find(b, name) : NULL;
	if (!b)
		xml_error(r, 404, "NoSuchBucket", "The specified bucket does not exist.");
	else if (!o || (has_gen && gen != o->generation))
		xml_error(r, 404, "NoSuchKey", "The specified key does not exist.");
	else if (xml_preconditions(r, o) == 0)
		fg_gcs_media_reply(r, o);
	fg_unlock();
}

int fg_gcs_xml_serve(struct fg_req *r)
{
	const char *slash;
	int exists;

	if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD"))
		return 0;
	if (r->path[0] != '/' || !(slash = strchr(r->path + 1, '/')) || !slash[1])
		return 0;
	char *bucket = xstrndup(r->path + 1, (size_t)(slash - r->path - 1));
	fg_lock();
	exists = fg_gcs_bucket_find(bucket) != NULL;
	fg_unlock();
	if (exists && !fg_gcs_front(r))
		serve_object(r, bucket, slash + 1);
	free(bucket);
	return exists;
}
