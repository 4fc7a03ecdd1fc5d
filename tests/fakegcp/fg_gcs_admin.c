/*
 * Admin endpoints for Cloud Storage (tests/fakegcp/README.md, "Cloud
 * Storage"): create a bucket, see every object, stand in for a metadata-only
 * change (metageneration + 1), and queue faults for the next storage
 * requests so that a test decides exactly which request fails, and how.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fg_gcs.h"
#include "util/xalloc.h"

#define MAX_FAULTS 32

struct queued_fault {
	unsigned code;  /* HTTP status to answer */
	int count;      /* requests still to fail */
	char *method;   /* only this method, or NULL */
	char *match;    /* only requests whose path or raw URI contains this, or NULL */
};
static struct queued_fault queue[MAX_FAULTS];
static int n_queue;

static int fault_matches(const struct queued_fault *f, struct fg_req *r)
{
	if (f->method && strcmp(f->method, r->method))
		return 0;
	return !f->match || strstr(r->path, f->match) || strstr(r->raw_uri, f->match);
}

unsigned fg_gcs_fault_take(struct fg_req *r)
{
	unsigned code = 0;

	fg_lock();
	for (int i = 0; i < n_queue && !code; i++) {
		if (!fault_matches(&queue[i], r))
			continue;
		code = queue[i].code;
		if (--queue[i].count == 0) {
			free(queue[i].method);
			free(queue[i].match);
			queue[i] = queue[--n_queue];
		}
	}
	fg_unlock();
	return code;
}

static const char *arg(struct fg_req *r, const char *key)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

static void ok(struct fg_req *r)
{
	fg_reply_json(r, 200, json_pack("{s:b}", "ok", 1));
}

/* POST /__admin/storage:fail?code=N[&count=K][&method=M][&match=S] */
static void queue_fault(struct fg_req *r)
{
	const char *code = arg(r, "code"), *count = arg(r, "count");
	const char *method = arg(r, "method"), *match = arg(r, "match");
	long c = code ? strtol(code, NULL, 10) : 0, k = count ? strtol(count, NULL, 10) : 1;

	if (c < 400 || c > 599 || k < 1 || k > 1000) {
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "expected ?code=400..599 "
			       "[&count=1..1000] [&method=GET|POST|DELETE] [&match=SUBSTRING]");
		return;
	}
	fg_lock();
	if (n_queue == MAX_FAULTS) {
		fg_unlock();
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "at most %d queued storage "
			       "faults", MAX_FAULTS);
		return;
	}
	queue[n_queue++] = (struct queued_fault){ (unsigned)c, (int)k,
						  method && *method ? xstrdup(method) : NULL,
						  match && *match ? xstrdup(match) : NULL };
	fg_unlock();
	ok(r);
}

static json_t *dump(void)
{
	json_t *bs = json_array(), *faults = json_array();

	for (size_t i = 0; i < fg_gcs_bucket_count(); i++) {
		struct fg_gcs_bucket *b = fg_gcs_bucket_at(i);
		json_t *objs = json_array();
		for (size_t k = 0; k < b->n; k++) {
			const struct fg_gcs_obj *o = b->objs[k];
			json_array_append_new(objs, json_pack(
				"{s:s, s:o, s:o, s:I, s:s}", "name", o->name,
				"generation", json_sprintf("%lld", (long long)o->generation),
				"metageneration", json_sprintf("%lld", (long long)o->metageneration),
				"size", (json_int_t)o->size, "contentType", o->content_type));
		}
		json_array_append_new(bs, json_pack("{s:s, s:o}", "name", b->name, "objects", objs));
	}
	for (int i = 0; i < n_queue; i++)
		json_array_append_new(faults, json_pack("{s:i, s:i, s:s?, s:s?}", "code",
							(int)queue[i].code, "count", queue[i].count,
							"method", queue[i].method, "match",
							queue[i].match));
	return json_pack("{s:o, s:o}", "buckets", bs, "faults", faults);
}

/* POST /__admin/storage:touch?bucket=B&object=O: metageneration + 1, as an
 * objects.patch (not served) would do. */
static void touch(struct fg_req *r)
{
	const char *bn = arg(r, "bucket"), *on = arg(r, "object");

	fg_lock();
	struct fg_gcs_bucket *b = bn ? fg_gcs_bucket_find(bn) : NULL;
	struct fg_gcs_obj *o = b && on ? fg_gcs_obj_find(b, on) : NULL;
	if (o)
		o->metageneration++;
	fg_unlock();
	if (o)
		ok(r);
	else
		fg_reply_error(r, 404, "NOT_FOUND", NULL, "no object '%s' in bucket '%s'",
			       on ? on : "", bn ? bn : "");
}

void fg_gcs_admin(struct fg_req *r, const char *rest)
{
	int get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST");

	if (get && !strcmp(rest, "storage")) {
		fg_lock();
		json_t *v = dump();
		fg_unlock();
		fg_reply_json(r, 200, v);
	} else if (post && !strcmp(rest, "storage/buckets")) {
		const char *name = arg(r, "name");
		if (!name || fg_gcs_bucket_option(name) < 0)
			fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "expected ?name= a valid "
				       "bucket name (3-63 of a-z 0-9 - _ .)");
		else
			ok(r);
	} else if (post && !strcmp(rest, "storage:fail")) {
		queue_fault(r);
	} else if (post && !strcmp(rest, "storage:touch")) {
		touch(r);
	} else {
		fg_reply_error(r, 404, "NOT_FOUND", NULL, "no admin endpoint %s %s", r->method,
			       r->path);
	}
}

void fg_gcs_faults_free(void)
{
	for (int i = 0; i < n_queue; i++) {
		free(queue[i].method);
		free(queue[i].match);
	}
	n_queue = 0;
}
