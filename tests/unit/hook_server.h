/*
 * A webhook receiver for unit tests (header only: each test binary links
 * one test file): a libmicrohttpd server on 127.0.0.1 that records every
 * POST body and answers as told.
 */
#ifndef TPF_TESTS_HOOK_SERVER_H
#define TPF_TESTS_HOOK_SERVER_H

#include "util/buf.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POSTS 32

struct hook {
	struct MHD_Daemon *daemon;
	char url[64];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int fail;                /* answer the first `fail` posts 503 */
	const char *retry_after; /* on the first failure, else no header */
	unsigned status;         /* after the failures (0: 200) */
	int hold;                /* block each answer until cleared */
	int arrived;             /* posts seen (counted before holding) */
	char *bodies[MAX_POSTS]; /* every attempt, in order */
	double times[MAX_POSTS];
	int n;
};

struct upload {
	struct tpf_buf body;
};

static inline enum MHD_Result on_post(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *data,
			       size_t *size, void **con_cls)
{
	struct hook *h = cls;
	(void)url, (void)method, (void)version;
	struct upload *u = *con_cls;
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
	pthread_mutex_lock(&h->mu);
	int i = h->n < MAX_POSTS ? h->n++ : MAX_POSTS - 1;
	h->bodies[i] = tpf_buf_detach(&u->body, NULL);
	h->times[i] = tpf_now_mono();
	h->arrived++;
	pthread_cond_broadcast(&h->cv);
	while (h->hold)
		pthread_cond_wait(&h->cv, &h->mu);
	unsigned status = i < h->fail ? 503 : h->status ? h->status : 200;
	const char *after = i == 0 && h->fail ? h->retry_after : NULL;
	pthread_mutex_unlock(&h->mu);
	free(u);
	*con_cls = NULL;
	struct MHD_Response *r = MHD_create_response_from_buffer(2, (void *)"ok",
								 MHD_RESPMEM_PERSISTENT);
	if (after)
		MHD_add_response_header(r, "Retry-After", after);
	enum MHD_Result ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static inline void hook_start(struct hook *h)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	h->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_post, h,
				     MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_END);
	const union MHD_DaemonInfo *info =
		h->daemon ? MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT) : NULL;
	snprintf(h->url, sizeof(h->url), "http://127.0.0.1:%u/hook",
		 info ? (unsigned)info->port : 0);
}

static inline void hook_stop(struct hook *h)
{
	pthread_mutex_lock(&h->mu);
	h->hold = 0;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	if (h->daemon)
		MHD_stop_daemon(h->daemon);
	for (int i = 0; i < h->n; i++)
		free(h->bodies[i]);
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
}

static inline void hook_wait_arrived(struct hook *h, int n)
{
	double end = tpf_now_mono() + 10;
	pthread_mutex_lock(&h->mu);
	while (h->arrived < n && tpf_now_mono() < end) {
		pthread_mutex_unlock(&h->mu);
		tpf_sleep(0.01);
		pthread_mutex_lock(&h->mu);
	}
	pthread_mutex_unlock(&h->mu);
}

#endif
