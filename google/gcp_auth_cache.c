/*
 * The process-wide token cache. A credentials object lives as long as its
 * client, and `watch` opens a pipeline, hence a client, every round
 * (engine/watch/watch.c). Without this cache every round would start with a new
 * grant: a JWT exchange, or for workload identity federation an ID-token
 * request, an STS exchange and a generateAccessToken call, every interval,
 * from one process, for as long as it runs. With it a token is reused
 * until its refresh time (gcp_auth.h), whichever client holds it, and
 * refreshed before it expires.
 *
 * Keys are SHA-256 digests of everything the token depends on (see
 * cache_key in gcp_auth.c), so different credentials never share a token.
 * A handful of entries is plenty: one process talks to one project with one
 * set of credentials, a test to a few. Tokens are wiped when replaced.
 */
#include "google/gcp_auth_internal.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENTRIES 8

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct entry {
	char key[65];
	char *token;
	double refresh_at; /* monotonic */
	unsigned long used; /* for replacing the least recently used */
} cache[ENTRIES];
static unsigned long clock_;

int tpf_gcp_token_cache_get(const char *key, char **token, double *refresh_at)
{
	int found = 0;
	pthread_mutex_lock(&cache_mu);
	for (size_t i = 0; i < ENTRIES; i++) {
		if (cache[i].token && !strcmp(cache[i].key, key)) {
			*token = xstrdup(cache[i].token);
			*refresh_at = cache[i].refresh_at;
			cache[i].used = ++clock_;
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(&cache_mu);
	return found;
}

void tpf_gcp_token_cache_put(const char *key, const char *token, double refresh_at)
{
	pthread_mutex_lock(&cache_mu);
	struct entry *e = NULL;
	for (size_t i = 0; i < ENTRIES && !e; i++) /* this key's entry */
		if (cache[i].token && !strcmp(cache[i].key, key))
			e = &cache[i];
	for (size_t i = 0; i < ENTRIES && !e; i++) /* else a free one */
		if (!cache[i].token)
			e = &cache[i];
	if (!e) { /* else the least recently used */
		e = &cache[0];
		for (size_t i = 1; i < ENTRIES; i++)
			if (cache[i].used < e->used)
				e = &cache[i];
	}
	tpf_gcp_wipe_free(e->token);
	snprintf(e->key, sizeof(e->key), "%s", key);
	e->token = xstrdup(token);
	e->refresh_at = refresh_at;
	e->used = ++clock_;
	pthread_mutex_unlock(&cache_mu);
}

void tpf_gcp_token_cache_drop(const char *key, const char *token)
{
	pthread_mutex_lock(&cache_mu);
	for (size_t i = 0; i < ENTRIES; i++) {
		if (cache[i].token && !strcmp(cache[i].key, key) &&
		    (!token || !strcmp(cache[i].token, token))) {
			tpf_gcp_wipe_free(cache[i].token);
			cache[i].token = NULL;
		}
	}
	pthread_mutex_unlock(&cache_mu);
}

void tpf_gcp_auth_cache_clear(void)
{
	pthread_mutex_lock(&cache_mu);
	for (size_t i = 0; i < ENTRIES; i++) {
		tpf_gcp_wipe_free(cache[i].token);
		cache[i].token = NULL;
	}
	pthread_mutex_unlock(&cache_mu);
}
