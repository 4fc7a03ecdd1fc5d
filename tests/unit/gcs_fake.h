/*
 * A Cloud Storage stand-in for unit tests (header only: each test binary
 * links one test file): a libmicrohttpd server on 127.0.0.1 keeping
 * objects in memory, with the JSON API calls google/gcs.c makes and their
 * generation preconditions (412 on a mismatch), faults on demand and a
 * request log. The e2e tests use the full emulator (tests/fakegcp).
 */
#ifndef TPF_TESTS_GCS_FAKE_H
#define TPF_TESTS_GCS_FAKE_H

#include "util/buf.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GCS_FAKE_MAX 64

struct gcs_fake_obj {
	char *name;
	struct tpf_buf data;
	long long generation;
};

struct gcs_fake {
	struct MHD_Daemon *daemon;
	char url[64];
	pthread_mutex_t mu;
	struct gcs_fake_obj objs[GCS_FAKE_MAX];
	int nobjs;
	long long next_gen;
	int fail;        /* answer the next `fail` requests 503 */
	int lose;        /* carry out the next `lose` writes, then answer 503 */
	int n412, n503;  /* answers given */
	struct tpf_buf log; /* "METHOD PATH?QUERY STATUS\n" per request */
};

struct gcs_fake_up {
	struct tpf_buf body;
};

static inline struct gcs_fake_obj *gcs_fake_find(struct gcs_fake *f, const char *name)
{
	for (int i = 0; i < f->nobjs; i++)
		if (!strcmp(f->objs[i].name, name))
			return &f->objs[i];
	return NULL;
}

static inline char *gcs_fake_md5(const struct tpf_buf *b)
{
	unsigned char md[EVP_MAX_MD_SIZE], out[64];
	unsigned int n = 0;
	EVP_Digest(b->buf ? b->buf : "", b->len, md, &n, EVP_md5(), NULL);
	EVP_EncodeBlock(out, md, (int)n);
	return xstrdup((const char *)out);
}

static inline json_t *gcs_fake_meta(const struct gcs_fake_obj *o)
{
	char *md5 = gcs_fake_md5(&o->data), gen[32], size[32];
	snprintf(gen, sizeof(gen), "%lld", o->generation);
	snprintf(size, sizeof(size), "%zu", o->data.len);
	json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s}", "name", o->name, "generation", gen,
			      "metageneration", "1", "size", size, "md5Hash", md5);
	free(md5);
	return j;
}

static inline enum MHD_Result gcs_fake_answer(struct MHD_Connection *conn, unsigned status,
					      const char *body, size_t len)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ok = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ok;
}

static inline unsigned gcs_fake_error(struct gcs_fake *f, unsigned status, char **out)
{
	if (status == 412)
		f->n412++;
	if (status == 503)
		f->n503++;
	*out = xasprintf("{\"error\":{\"code\":%u,\"message\":\"fake %u\"}}", status, status);
	return status;
}

/* The request's outcome, with f->mu held. *out: the body (caller frees). */
static inline unsigned gcs_fake_serve(struct gcs_fake *f, struct MHD_Connection *conn,
				      const char *method, const char *url,
				      const struct tpf_buf *body, char **out)
{
	const char *igm = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "ifGenerationMatch");
	const char *alt = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "alt");
	const char *prefix = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "prefix");
	const char *oname = strstr(url, "/o/");
	*out = NULL;
	if (f->fail > 0) {
		f->fail--;
		return gcs_fake_error(f, 503, out);
	}
	if (!strcmp(method, "POST") && strstr(url, "/upload/storage/v1/b/")) {
		const char *name = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "name");
		struct gcs_fake_obj *o = name ? gcs_fake_find(f, name) : NULL;
		if (!name)
			return gcs_fake_error(f, 400, out);
		if (igm && atoll(igm) != (o ? o->generation : 0))
			return gcs_fake_error(f, 412, out);
		if (!o) {
			o = &f->objs[f->nobjs++];
			o->name = xstrdup(name);
			tpf_buf_init(&o->data);
		}
		tpf_buf_reset(&o->data);
		tpf_buf_add(&o->data, body->buf ? body->buf : "", body->len);
		o->generation = ++f->next_gen;
		if (f->lose > 0) {
			f->lose--;
			return gcs_fake_error(f, 503, out);
		}
		json_t *j = gcs_fake_meta(o);
		*out = json_dumps(j, JSON_COMPACT);
		json_decref(j);
		return 200;
	}
	if (!oname && !strcmp(method, "GET")) { /* list */
		json_t *items = json_array();
		for (int i = 0; i < f->nobjs; i++)
			if (!prefix || !strncmp(f->objs[i].name, prefix, strlen(prefix)))
				json_array_append_new(items, gcs_fake_meta(&f->objs[i]));
		json_t *j = json_pack("{s:o}", "items", items);
		*out = json_dumps(j, JSON_COMPACT);
		json_decref(j);
		return 200;
	}
	if (!oname)
		return gcs_fake_error(f, 400, out);
	struct gcs_fake_obj *o = gcs_fake_find(f, oname + 3);
	if (!o)
		return gcs_fake_error(f, 404, out);
	if (igm && atoll(igm) != o->generation)
		return gcs_fake_error(f, 412, out);
	if (!strcmp(method, "DELETE")) {
		free(o->name);
		tpf_buf_release(&o->data);
		*o = f->objs[--f->nobjs];
		*out = xstrdup("");
		return 204;
	}
	if (alt && !strcmp(alt, "media")) {
		*out = xstrndup(o->data.buf ? o->data.buf : "", o->data.len);
		return 200;
	}
	json_t *j = gcs_fake_meta(o);
	*out = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return 200;
}

static inline enum MHD_Result gcs_fake_handler(void *cls, struct MHD_Connection *conn,
					       const char *url, const char *method,
					       const char *version, const char *data, size_t *size,
					       void **con_cls)
{
	struct gcs_fake *f = cls;
	(void)version;
	struct gcs_fake_up *u = *con_cls;
	if (!u) {
		u = xcalloc(1, sizeof(*u));
		tpf_buf_init(&u->body);
		*con_cls = u;
		return MHD_YES;
	}
	if (*size) {
		tpf_buf_add(&u->body, data, *size);
		*size = 0;
		return MHD_YES;
	}
	char *out = NULL;
	pthread_mutex_lock(&f->mu);
	unsigned status = gcs_fake_serve(f, conn, method, url, &u->body, &out);
	const char *igm = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "ifGenerationMatch");
	tpf_buf_addf(&f->log, "%s %s%s%s %u\n", method, url, igm ? " ifGenerationMatch=" : "",
		     igm ? igm : "", status);
	pthread_mutex_unlock(&f->mu);
	enum MHD_Result ok = gcs_fake_answer(conn, status, out ? out : "", out ? strlen(out) : 0);
	free(out);
	tpf_buf_release(&u->body);
	free(u);
	*con_cls = NULL;
	return ok;
}

static inline int gcs_fake_start(struct gcs_fake *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	tpf_buf_init(&f->log);
	f->next_gen = 1000;
	f->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION,
				     0, NULL, NULL, gcs_fake_handler, f, MHD_OPTION_END);
	if (!f->daemon)
		return -1;
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(f->daemon, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%u", (unsigned)info->port);
	return 0;
}

static inline void gcs_fake_stop(struct gcs_fake *f)
{
	MHD_stop_daemon(f->daemon);
	for (int i = 0; i < f->nobjs; i++) {
		free(f->objs[i].name);
		tpf_buf_release(&f->objs[i].data);
	}
	tpf_buf_release(&f->log);
	pthread_mutex_destroy(&f->mu);
}

#endif
