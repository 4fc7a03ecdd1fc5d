/*
 * Cloud Storage buckets and objects in memory, and the Object and Bucket
 * resources as the JSON API prints them
 * (cloud.google.com/storage/docs/json_api/v1/objects#resource):
 * int64 fields (generation, metageneration, size) are decimal strings,
 * md5Hash and crc32c are base64, times are RFC 3339 with milliseconds.
 *
 * Generations are the write's wall-clock time in microseconds, made strictly
 * rising across the whole emulator, as the real service's generations are
 * microsecond timestamps (cloud.google.com/storage/docs/metadata#generation-number).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>
#include <openssl/evp.h>

#include "tests/fakegcp/fg_gcs.h"
#include "util/xalloc.h"

static struct fg_gcs_bucket **buckets;
static size_t n_buckets, cap_buckets;
static int64_t last_generation;

int fg_gcs_bucket_name_ok(const char *name)
{
	size_t len = strlen(name);

	/* cloud.google.com/storage/docs/buckets#naming (the dotted form's 222 aside). */
	if (len < 3 || len > 63 || !isalnum((unsigned char)name[0]) ||
	    !isalnum((unsigned char)name[len - 1]))
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!islower((unsigned char)name[i]) && !isdigit((unsigned char)name[i]) &&
		    !strchr("-_.", name[i]))
			return 0;
	return 1;
}

int fg_gcs_object_name_ok(const char *name)
{
	/* cloud.google.com/storage/docs/objects#naming */
	size_t len = strlen(name);

	return len >= 1 && len <= 1024 && !strpbrk(name, "\r\n");
}

struct fg_gcs_bucket *fg_gcs_bucket_find(const char *name)
{
	for (size_t i = 0; i < n_buckets; i++)
		if (!strcmp(buckets[i]->name, name))
			return buckets[i];
	return NULL;
}

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct fg_gcs_bucket *fg_gcs_bucket_add(const char *name)
{
	struct fg_gcs_bucket *b = fg_gcs_bucket_find(name);

	if (b)
		return b;
	b = xcalloc(1, sizeof(*b));
	b->name = xstrdup(name);
	b->created_us = now_us();
	if (n_buckets == cap_buckets) {
		cap_buckets = cap_buckets ? 2 * cap_buckets : 4;
		buckets = xrealloc(buckets, cap_buckets * sizeof(*buckets));
	}
	buckets[n_buckets++] = b;
	return b;
}

size_t fg_gcs_bucket_count(void)
{
	return n_buckets;
}

struct fg_gcs_bucket *fg_gcs_bucket_at(size_t i)
{
	return i < n_buckets ? buckets[i] : NULL;
}

/* First index whose name is >= name (strict: > name). */
static size_t lower_bound(struct fg_gcs_bucket *b, const char *name, int strict)
{
	size_t lo = 0, hi = b->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(b->objs[mid]->name, name);
		if (c < 0 || (strict && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t fg_gcs_obj_lower(struct fg_gcs_bucket *b, const char *after)
{
	return after ? lower_bound(b, after, 1) : 0;
}

struct fg_gcs_obj *fg_gcs_obj_find(struct fg_gcs_bucket *b, const char *name)
{
	size_t i = lower_bound(b, name, 0);

	return i < b->n && !strcmp(b->objs[i]->name, name) ? b->objs[i] : NULL;
}

void fg_gcs_hashes(const void *data, size_t len, char md5[32], char crc32c[12])
{
	unsigned char digest[EVP_MAX_MD_SIZE], be[4];
	unsigned int dlen = 0;
	const unsigned char *p = data;
	uint32_t crc = 0xffffffffu;

	EVP_Digest(data, len, digest, &dlen, EVP_md5(), NULL);
	EVP_EncodeBlock((unsigned char *)md5, digest, (int)dlen);
	/* CRC32C (Castagnoli), reflected polynomial 0x82F63B78: RFC 3720 appendix B.4. */
	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
	}
	crc ^= 0xffffffffu;
	be[0] = (unsigned char)(crc >> 24);
	be[1] = (unsigned char)(crc >> 16);
	be[2] = (unsigned char)(crc >> 8);
	be[3] = (unsigned char)crc;
	EVP_EncodeBlock((unsigned char *)crc32c, be, 4);
}

static void obj_free(struct fg_gcs_obj *o)
{
	if (!o)
		return;
	free(o->name);
	free(o->data);
	free(o->content_type);
	json_decref(o->metadata);
	free(o);
}

struct fg_gcs_obj *fg_gcs_obj_put(struct fg_gcs_bucket *b, const char *name, const void *data,
				  size_t len, const char *ctype, json_t *metadata)
{
	struct fg_gcs_obj *o = xcalloc(1, sizeof(*o));
	size_t i = lower_bound(b, name, 0);
	int64_t gen = now_us();

	o->name = xstrdup(name);
	o->data = xmalloc(len ? len : 1);
	if (len)
		memcpy(o->data, data, len);
	o->size = len;
	o->content_type = xstrdup(ctype && *ctype ? ctype : "application/octet-stream");
	o->metadata = metadata ? json_deep_copy(metadata) : NULL;
	o->generation = gen > last_generation ? gen : last_generation + 1;
	last_generation = o->generation;
	o->metageneration = 1;
	fg_gcs_hashes(data, len, o->md5, o->crc32c);
	if (i < b->n && !strcmp(b->objs[i]->name, name)) {
		obj_free(b->objs[i]); /* no versioning: the old generation is gone */
		b->objs[i] = o;
		return o;
	}
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 8;
		b->objs = xrealloc(b->objs, b->cap * sizeof(*b->objs));
	}
	memmove(b->objs + i + 1, b->objs + i, (b->n - i) * sizeof(*b->objs));
	b->objs[i] = o;
	b->n++;
	return o;
}

void fg_gcs_obj_delete(struct fg_gcs_bucket *b, struct fg_gcs_obj *o)
{
	size_t i = lower_bound(b, o->name, 0);

	if (i >= b->n || b->objs[i] != o)
		return;
	obj_free(o);
	memmove(b->objs + i, b->objs + i + 1, (b->n - i - 1) * sizeof(*b->objs));
	b->n--;
}

/* RFC 3339 UTC with milliseconds, as the API prints times. */
static json_t *time_json(int64_t us)
{
	time_t secs = (time_t)(us / 1000000);
	struct tm tm;
	char base[24];

	gmtime_r(&secs, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	return json_sprintf("%s.%03dZ", base, (int)(us % 1000000 / 1000));
}

static json_t *int64_json(int64_t v)
{
	return json_sprintf("%lld", (long long)v);
}

static char *escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, (int)strlen(s));
	char *out = xstrdup(e ? e : "");

	curl_free(e);
	return out;
}

json_t *fg_gcs_obj_json(const struct fg_gcs_bucket *b, const struct fg_gcs_obj *o,
			const char *host)
{
	char *en = escape(o->name);
	unsigned char tag[24];
	char etag[40];
	/* The etag changes with the generation and metageneration, like the real one. */
	int tn = snprintf((char *)tag, sizeof(tag), "%llx/%llx", (unsigned long long)o->generation,
			  (unsigned long long)o->metageneration);

	EVP_EncodeBlock((unsigned char *)etag, tag, tn);
	json_t *v = json_pack(
		"{s:s, s:o, s:o, s:o, s:s, s:s, s:o, s:o, s:s, s:s, s:o, s:s, s:s, s:s, s:o, "
		"s:o, s:o}",
		"kind", "storage#object",
		"id", json_sprintf("%s/%s/%lld", b->name, o->name, (long long)o->generation),
		"selfLink", json_sprintf("http://%s/storage/v1/b/%s/o/%s", host, b->name, en),
		"mediaLink", json_sprintf("http://%s/download/storage/v1/b/%s/o/%s?generation=%lld"
					  "&alt=media", host, b->name, en, (long long)o->generation),
		"name", o->name, "bucket", b->name,
		"generation", int64_json(o->generation),
		"metageneration", int64_json(o->metageneration),
		"contentType", o->content_type, "storageClass", "STANDARD",
		"size", int64_json((int64_t)o->size),
		"md5Hash", o->md5, "crc32c", o->crc32c, "etag", etag,
		"timeCreated", time_json(o->generation), "updated", time_json(o->generation),
		"timeStorageClassUpdated", time_json(o->generation));
	if (o->metadata)
		json_object_set(v, "metadata", o->metadata);
	free(en);
	return v;
}

json_t *fg_gcs_bucket_json(const struct fg_gcs_bucket *b, const char *host)
{
	return json_pack("{s:s, s:s, s:o, s:s, s:s, s:o, s:s, s:o, s:s, s:s}",
			 "kind", "storage#bucket", "id", b->name, "selfLink",
			 json_sprintf("http://%s/storage/v1/b/%s", host, b->name),
			 "projectNumber", fg_opt.project_number,
			 "name", b->name, "timeCreated", time_json(b->created_us),
			 "metageneration", "1", "updated", time_json(b->created_us),
			 "location", "US", "storageClass", "STANDARD");
}

void fg_gcs_free(void)
{
	fg_gcs_faults_free();
	for (size_t i = 0; i < n_buckets; i++) {
		for (size_t k = 0; k < buckets[i]->n; k++)
			obj_free(buckets[i]->objs[k]);
		free(buckets[i]->objs);
		free(buckets[i]->name);
		free(buckets[i]);
	}
	free(buckets);
	buckets = NULL;
	n_buckets = cap_buckets = 0;
}
