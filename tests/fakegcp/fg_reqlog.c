/*
 * The request log: one JSON object per request (admin requests excepted),
 * kept in memory for GET /__admin/requests and appended as a JSON line to
 * --log FILE:
 *   {"t":<epoch seconds>,"method":..,"path":..,"query":<raw or null>,
 *    "body":<JSON, or the text, or null>,"status":<int or null if dropped>,
 *    "fault":<kind or null>,"ms":<time to answer>}
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/fakegcp/fakegcp.h"

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static json_t *entries;
static FILE *log_file;

int fg_reqlog_open(const char *path, char *err, size_t errlen)
{
	entries = json_array();
	if (!path)
		return 0;
	log_file = fopen(path, "a");
	if (!log_file) {
		snprintf(err, errlen, "cannot open log file '%s': %m", path);
		return -1;
	}
	return 0;
}

static json_t *body_json(struct fg_req *r)
{
	json_t *v;

	if (r->log_body)
		return json_incref(r->log_body);
	if (!r->body.len)
		return json_null();
	v = json_loadb(r->body.buf, r->body.len, JSON_DECODE_ANY, NULL);
	return v ? v : json_stringn(r->body.buf, r->body.len);
}

void fg_reqlog_add(struct fg_req *r)
{
	struct timespec ts;

	if (r->no_log)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	json_t *e = json_pack("{s:f, s:s, s:s, s:o, s:o, s:o, s:o, s:f}",
			      "t", (double)ts.tv_sec + (double)ts.tv_nsec / 1e9,
			      "method", r->method, "path", r->path,
			      "query", r->query ? json_string(r->query) : json_null(),
			      "body", body_json(r),
			      "status", r->drop || !r->status ? json_null() : json_integer(r->status),
			      "fault", r->fault ? json_string(r->fault) : json_null(),
			      "ms", (fg_mono() - r->t0) * 1000.0);
	if (!e)
		return;
	pthread_mutex_lock(&log_mu);
	if (log_file) {
		char *line = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
		if (line) {
			fprintf(log_file, "%s\n", line);
			fflush(log_file);
			free(line);
		}
	}
	json_array_append_new(entries, e);
	pthread_mutex_unlock(&log_mu);
}

json_t *fg_reqlog_json(void)
{
	pthread_mutex_lock(&log_mu);
	json_t *copy = json_deep_copy(entries);
	pthread_mutex_unlock(&log_mu);
	return copy;
}

void fg_reqlog_clear(void)
{
	pthread_mutex_lock(&log_mu);
	json_array_clear(entries);
	pthread_mutex_unlock(&log_mu);
}

void fg_reqlog_close(void)
{
	if (log_file)
		fclose(log_file);
	log_file = NULL;
	json_decref(entries);
	entries = NULL;
}
