/*
 * The Cloud Storage JSON API subset that tpuform, gcloud and Terraform's gcs
 * backend use (tests/fakegcp/README.md, "Cloud Storage"): buckets get, list
 * and insert; objects get (metadata, or alt=media), delete and list; the
 * request preconditions; the JSON API's error bodies. Uploads are in
 * fg_gcs_upload.c, the XML API reads in fg_gcs_xml.c.
 *
 * A storage request meets, in order: latency, a queued or random fault,
 * the bearer token, then its handler.
 * Sources: cloud.google.com/storage/docs/json_api/v1/objects/get, .../delete,
 * .../list, cloud.google.com/storage/docs/request-preconditions,
 * cloud.google.com/storage/docs/json_api/v1/status-codes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tests/fakegcp/fg_gcs.h"
#include "util/xalloc.h"

#define LIST_MAX 1000 /* objects.list maxResults: default and largest */

const char *fg_gcs_arg(struct fg_req *r, const char *key)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *fg_gcs_host(struct fg_req *r)
{
	const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Host");

	return h && *h ? h : "storage.googleapis.com";
}

void fg_gcs_error(struct fg_req *r, unsigned http, const char *reason, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	json_t *e = json_pack("{s:{s:i, s:s, s:[{s:s, s:s, s:s}]}}", "error", "code", (int)http,
			      "message", msg, "errors", "message", msg, "domain", "global",
			      "reason", reason);
	free(msg);
	fg_reply_json(r, http, e);
}

void fg_gcs_precondition_failed(struct fg_req *r)
{
	json_t *e = json_pack("{s:{s:i, s:s, s:[{s:s, s:s, s:s, s:s, s:s}]}}", "error", "code",
			      412, "message",
			      "At least one of the pre-conditions you specified did not hold.",
			      "errors", "message",
			      "At least one of the pre-conditions you specified did not hold.",
			      "domain", "global", "reason", "conditionNotMet", "locationType",
			      "header", "location", "If-Match");
	fg_reply_json(r, 412, e);
}

int fg_gcs_int64_arg(struct fg_req *r, const char *key, int64_t *out)
{
	const char *v = fg_gcs_arg(r, key);
	char *end;

	if (!v)
		return 0;
	long long n = strtoll(v, &end, 10);
	if (!*v || *end) {
		fg_gcs_error(r, 400, "invalid", "Invalid argument for %s: '%s' is not an int64.",
			     key, v);
		return -1;
	}
	*out = (int64_t)n;
	return 1;
}

int fg_gcs_preconditions(struct fg_req *r, const struct fg_gcs_obj *o, int read)
{
	static const char *const keys[] = { "ifGenerationMatch", "ifGenerationNotMatch",
					    "ifMetagenerationMatch", "ifMetagenerationNotMatch" };
	int64_t v[4];
	int has[4];

	for (int i = 0; i < 4; i++)
		if ((has[i] = fg_gcs_int64_arg(r, keys[i], &v[i])) < 0)
			return -1;
	/* ifGenerationMatch=0: only if there is no live object (the create-if-absent). */
	if (has[0] && (o ? o->generation != v[0] : v[0] != 0))
		goto failed;
	/* No live object fails every other precondition. */
	if ((has[2] || has[3] || has[1]) && !o)
		goto failed;
	if (has[2] && o->metageneration != v[2])
		goto failed;
	if ((has[1] && o->generation == v[1]) || (has[3] && o->metageneration == v[3])) {
		if (read) {
			fg_reply_bytes(r, 304, NULL, "", 0);
			return -1;
		}
		goto failed;
	}
	return 0;
failed:
	fg_gcs_precondition_failed(r);
	return -1;
}

static int auth(struct fg_req *r)
{
	const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
	const char *tok = fg_gcs_arg(r, "access_token");
	int valid = 0;

	if (!fg_opt.auth_token)
		return 0;
	if (h && !strncasecmp(h, "Bearer ", 7))
		tok = h + 7;
	if (tok) {
		fg_lock();
		valid = fg_token_valid(tok);
		fg_unlock();
		if (valid)
			return 0;
	}
	/* The documented 401 bodies (json_api/v1/status-codes): no credential, a bad one. */
	json_t *e = json_pack("{s:{s:i, s:s, s:[{s:s, s:s, s:s, s:s, s:s}]}}", "error", "code",
			      401, "message", tok ? "Invalid Credentials" : "Login Required",
			      "errors", "message", tok ? "Invalid Credentials" : "Login Required",
			      "domain", "global", "reason", tok ? "authError" : "required",
			      "locationType", "header", "location", "Authorization");
	fg_reply_json(r, 401, e);
	fg_reply_header(r, "WWW-Authenticate", "Bearer realm=\"https://accounts.google.com/\"");
	return -1;
}

/* Storage's own words for the faults (the front end's 5xx are the same). */
static void fault_reply(struct fg_req *r, unsigned code)
{
	if (code == 429) {
		fg_gcs_error(r, 429, "rateLimitExceeded",
			     "The rate of change requests to the object exceeds the rate limit. "
			     "Please reduce the rate of create, update, and delete requests.");
		fg_reply_header(r, "Retry-After", "1");
	} else if (code == 503) {
		fg_gcs_error(r, 503, "backendError", "Backend Error");
	} else {
		fg_gcs_error(r, code, code >= 500 ? "backendError" : "invalid",
			     "Injected error %u.", code);
	}
}

/* 0 to go on; 1 if a fault answered (or dropped) r. */
static int faults(struct fg_req *r)
{
	unsigned code = fg_gcs_fault_take(r);
	const char *kind;

	if (code) {
		r->fault = "queued";
		fault_reply(r, code);
		return 1;
	}
	kind = fg_fault_pick();
	if (!kind)
		return 0;
	if (!strcmp(kind, "drop") || !strcmp(kind, "slow"))
		return fg_fault_apply(r, kind);
	r->fault = kind;
	fault_reply(r, (unsigned)strtoul(kind, NULL, 10));
	return 1;
}

int fg_gcs_front(struct fg_req *r)
{
	if (fg_opt.latency_ms > 0)
		fg_sleep(fg_opt.latency_ms / 1000.0);
	return faults(r) || auth(r) < 0;
}

static struct fg_gcs_bucket *bucket_or_404(struct fg_req *r, const char *name)
{
	struct fg_gcs_bucket *b = fg_gcs_bucket_find(name);

	if (!b)
		fg_gcs_error(r, 404, "notFound", "The specified bucket does not exist.");
	return b;
}

/* The live object, or NULL after answering 404 (also for ?generation= of an
 * older generation: there is no versioning here). */
static struct fg_gcs_obj *object_or_404(struct fg_req *r, struct fg_gcs_bucket *b,
					const char *name)
{
	struct fg_gcs_obj *o = fg_gcs_obj_find(b, name);
	int64_t gen;
	int has = fg_gcs_int64_arg(r, "generation", &gen);

	if (has < 0)
		return NULL;
	if (!o || (has && gen != o->generation)) {
		fg_gcs_error(r, 404, "notFound", "No such object: %s/%s", b->name, name);
		return NULL;
	}
	return o;
}

void fg_gcs_media_reply(struct fg_req *r, const struct fg_gcs_obj *o)
{
	char num[32], hash[64];

	fg_reply_bytes(r, 200, o->content_type, o->data, o->size);
	snprintf(num, sizeof(num), "%lld", (long long)o->generation);
	fg_reply_header(r, "x-goog-generation", num);
	snprintf(num, sizeof(num), "%lld", (long long)o->metageneration);
	fg_reply_header(r, "x-goog-metageneration", num);
	snprintf(hash, sizeof(hash), "crc32c=%s,md5=%s", o->crc32c, o->md5);
	fg_reply_header(r, "x-goog-hash", hash);
	snprintf(num, sizeof(num), "%zu", o->size);
	fg_reply_header(r, "x-goog-stored-content-length", num);
	fg_reply_header(r, "x-goog-stored-content-encoding", "identity");
	fg_reply_header(r, "x-goog-storage-class", "STANDARD");
}

/* objects.get and objects.delete; media: /download/... (alt=media implied). */
static void object_call(struct fg_req *r, const char *bucket, const char *name, int download)
{
	const char *alt = fg_gcs_arg(r, "alt");
	int get = !strcmp(r->method, "GET");

	if (!get && strcmp(r->method, "DELETE")) {
		fg_gcs_error(r, 405, "methodNotAllowed", "Method %s is not served by fakegcp for "
			     "objects (get and delete are).", r->method);
		return;
	}
	if (alt && strcmp(alt, "json") && strcmp(alt, "media")) {
		fg_gcs_error(r, 400, "invalidParameter", "Invalid value for alt: %s", alt);
		return;
	}
	fg_lock();
	struct fg_gcs_bucket *b = bucket_or_404(r, bucket);
	struct fg_gcs_obj *o = b ? object_or_404(r, b, name) : NULL;
	if (o && fg_gcs_preconditions(r, o, get) == 0) {
		if (!get) {
			fg_gcs_obj_delete(b, o);
			fg_reply_bytes(r, 204, NULL, "", 0);
		} else if (download || (alt && !strcmp(alt, "media"))) {
			fg_gcs_media_reply(r, o);
		} else {
			fg_reply_json(r, 200, fg_gcs_obj_json(b, o, fg_gcs_host(r)));
		}
	}
	fg_unlock();
}

/* 1 if name is in this page: not already shown (after), under prefix. */
static int list_wanted(const char *name, const char *prefix, const char *after,
		       const char *delim)
{
	if (strncmp(name, prefix, strlen(prefix)))
		return 0;
	if (!after)
		return 1;
	/* A prefix already shown hides every name under it. */
	size_t al = strlen(after), dl = delim ? strlen(delim) : 0;
	if (dl && al >= dl && !strcmp(after + al - dl, delim) && !strncmp(name, after, al))
		return 0;
	return 1;
}

/* Is anything left to list from index i on, once `last` was shown? */
static int more_after(struct fg_gcs_bucket *b, size_t i, const char *prefix, const char *last,
		      const char *delim)
{
	for (; i < b->n; i++)
		if (list_wanted(b->objs[i]->name, prefix, last, delim))
			return 1;
	return 0;
}

/* pageToken: the base64url of the last name or prefix shown (fg_page_token). */
static int page_after(struct fg_req *r, char **after)
{
	const char *pt = fg_gcs_arg(r, "pageToken");
	size_t len;

	*after = NULL;
	if (!pt || !*pt)
		return 0;
	unsigned char *raw = fg_b64url_decode(pt, strlen(pt), &len);
	if (!raw || !len || memchr(raw, 0, len)) {
		free(raw);
		fg_gcs_error(r, 400, "invalid", "Invalid pageToken: '%s'.", pt);
		return -1;
	}
	*after = xstrndup((const char *)raw, len);
	free(raw);
	return 0;
}

static void list_objects(struct fg_req *r, struct fg_gcs_bucket *b)
{
	const char *prefix = fg_gcs_arg(r, "prefix"), *delim = fg_gcs_arg(r, "delimiter");
	json_t *items = json_array(), *prefixes = json_array(), *out;
	char *after = NULL, *last = NULL;
	int64_t max = LIST_MAX;
	size_t shown = 0, i;

	if (fg_gcs_int64_arg(r, "maxResults", &max) < 0)
		goto done;
	if (max <= 0 || max > LIST_MAX)
		max = LIST_MAX;
	if (page_after(r, &after) < 0)
		goto done;
	prefix = prefix ? prefix : "";
	delim = delim && *delim ? delim : NULL;
	for (i = fg_gcs_obj_lower(b, after); i < b->n; i++) {
		const char *name = b->objs[i]->name, *cut;
		if (!list_wanted(name, prefix, after, delim))
			continue;
		if (shown == (size_t)max)
			break;
		cut = delim ? strstr(name + strlen(prefix), delim) : NULL;
		if (cut) {
			char *p = xstrndup(name, (size_t)(cut - name) + strlen(delim));
			size_t np = json_array_size(prefixes);
			if (np && !strcmp(json_string_value(json_array_get(prefixes, np - 1)), p)) {
				free(p);
				continue;
			}
			json_array_append_new(prefixes, json_string(p));
			free(last);
			last = p;
		} else {
			json_array_append_new(items, fg_gcs_obj_json(b, b->objs[i], fg_gcs_host(r)));
			free(last);
			last = xstrdup(name);
		}
		shown++;
	}
	out = json_pack("{s:s}", "kind", "storage#objects");
	if (last && more_after(b, i, prefix, last, delim)) {
		char *tok = fg_page_token(last);
		json_object_set_new(out, "nextPageToken", json_string(tok));
		free(tok);
	}
	if (json_array_size(prefixes))
		json_object_set(out, "prefixes", prefixes);
	if (json_array_size(items))
		json_object_set(out, "items", items);
	fg_reply_json(r, 200, out);
done:
	json_decref(items);
	json_decref(prefixes);
	free(after);
	free(last);
}

static void bucket_insert(struct fg_req *r)
{
	json_t *body = r->body.len ? json_loadb(r->body.buf, r->body.len, 0, NULL) : NULL;
	const char *name = json_string_value(json_object_get(body, "name"));

	if (!fg_gcs_arg(r, "project")) {
		fg_gcs_error(r, 400, "required", "Required parameter: project");
	} else if (!name) {
		fg_gcs_error(r, 400, "required", "Required");
	} else if (!fg_gcs_bucket_name_ok(name)) {
		fg_gcs_error(r, 400, "invalid", "Invalid bucket name: '%s'", name);
	} else {
		fg_lock();
		if (fg_gcs_bucket_find(name)) {
			fg_gcs_error(r, 409, "conflict", "Your previous request to create the named "
				     "bucket succeeded and you already own it.");
		} else {
			struct fg_gcs_bucket *b = fg_gcs_bucket_add(name);
			fg_reply_json(r, 200, fg_gcs_bucket_json(b, fg_gcs_host(r)));
		}
		fg_unlock();
	}
	json_decref(body);
}

static void bucket_list(struct fg_req *r)
{
	json_t *items = json_array();

	if (!fg_gcs_arg(r, "project")) {
		json_decref(items);
		fg_gcs_error(r, 400, "required", "Required parameter: project");
		return;
	}
	fg_lock();
	for (size_t i = 0; i < fg_gcs_bucket_count(); i++)
		json_array_append_new(items, fg_gcs_bucket_json(fg_gcs_bucket_at(i),
								 fg_gcs_host(r)));
	fg_unlock();
	json_t *out = json_pack("{s:s}", "kind", "storage#buckets");
	if (json_array_size(items))
		json_object_set(out, "items", items);
	json_decref(items);
	fg_reply_json(r, 200, out);
}

/* rest: what follows /storage/v1/b (or /download/storage/v1/b). */
static void json_api(struct fg_req *r, const char *rest, int download)
{
	int get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST");

	if (!*rest && !download) {
		if (post)
			bucket_insert(r);
		else if (get)
			bucket_list(r);
		else
			fg_gcs_error(r, 405, "methodNotAllowed", "Method %s is not allowed.",
				     r->method);
		return;
	}
	if (*rest != '/' || !rest[1]) {
		fg_gcs_error(r, 404, "notFound", "Not Found");
		return;
	}
	const char *bstart = rest + 1, *slash = strchr(bstart, '/');
	char *bucket = xstrndup(bstart, slash ? (size_t)(slash - bstart) : strlen(bstart));
	if (!slash && get && !download) {
		fg_lock();
		struct fg_gcs_bucket *b = bucket_or_404(r, bucket);
		if (b)
			fg_reply_json(r, 200, fg_gcs_bucket_json(b, fg_gcs_host(r)));
		fg_unlock();
	} else if (slash && !strcmp(slash, "/o") && !download) {
		if (get) {
			fg_lock();
			struct fg_gcs_bucket *b = bucket_or_404(r, bucket);
			if (b)
				list_objects(r, b);
			fg_unlock();
		} else {
			/* objects.insert lives under /upload/ only. */
			fg_gcs_error(r, 400, "wrongUrlForUpload", "Upload requests must include an "
				     "uploadType URL parameter and a URL path beginning with "
				     "/upload/");
		}
	} else if (slash && !strncmp(slash, "/o/", 3) && slash[3]) {
		object_call(r, bucket, slash + 3, download);
	} else {
		fg_gcs_error(r, 404, "notFound", "Not Found");
	}
	free(bucket);
}

int fg_gcs_serve(struct fg_req *r)
{
	static const char json_p[] = "/storage/v1/b", up_p[] = "/upload/storage/v1/b",
			  down_p[] = "/download/storage/v1/b";
	const char *p = r->path;
	int kind = !strncmp(p, json_p, sizeof(json_p) - 1) ? 1
		   : !strncmp(p, up_p, sizeof(up_p) - 1) ? 2
		   : !strncmp(p, down_p, sizeof(down_p) - 1) ? 3 : 0;

	if (!kind)
		return 0;
	if (kind == 2 && r->body.len) {
		/* The log keeps JSON or text bodies as they are (fg_reqlog.c); binary
		 * data cannot be a JSON string, so it is logged by its size. */
		json_t *t = json_stringn(r->body.buf, r->body.len);
		if (!t)
			r->log_body = json_pack("{s:I}", "bytes", (json_int_t)r->body.len);
		json_decref(t);
	}
	if (fg_gcs_front(r))
		return 1;
	if (kind == 2) {
		const char *rest = p + sizeof(up_p) - 1;
		const char *slash = rest[0] == '/' ? strchr(rest + 1, '/') : NULL;
		if (!strcmp(r->method, "POST") && slash && !strcmp(slash, "/o")) {
			char *bucket = xstrndup(rest + 1, (size_t)(slash - rest - 1));
			fg_gcs_insert(r, bucket);
			free(bucket);
		} else {
			fg_gcs_error(r, 404, "notFound", "Not Found");
		}
		return 1;
	}
	json_api(r, p + (kind == 1 ? sizeof(json_p) : sizeof(down_p)) - 1, kind == 3);
	return 1;
}

int fg_gcs_bucket_option(const char *name)
{
	if (!fg_gcs_bucket_name_ok(name))
		return -1;
	fg_lock();
	fg_gcs_bucket_add(name);
	fg_unlock();
	return 0;
}
