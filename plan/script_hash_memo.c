/*
 * The hashes of worker scripts already made, by their rendered head
 * (plan/script_hash_memo.h says why).
 */
#include "plan/script_hash_memo.h"
#include "util/hash.h"
#include "util/strindex.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;
static struct tpf_strindex memo_index = TPF_STRINDEX_INIT; /* head -> slot */
static char **memo_heads, **memo_hashes; /* owned; memo_index borrows heads */
static size_t memo_n, memo_cap, memo_bytes;
static const char *memo_body; /* the body every held hash is of */
static size_t memo_hits, memo_made;

/* Caller holds memo_mu. */
static void memo_empty(void)
{
	for (size_t i = 0; i < memo_n; i++) {
		free(memo_heads[i]);
		free(memo_hashes[i]);
	}
	memo_n = 0;
	memo_bytes = 0;
	tpf_strindex_clear(&memo_index);
}

/* Caller holds memo_mu; head and hash are copied. */
static void memo_keep(const char *head, size_t head_len, const char *hash)
{
	size_t cost = head_len + strlen(hash) + 2;
	if (memo_bytes + cost > TPF_SCRIPT_HASH_MEMO_BYTES)
		memo_empty();
	if (cost > TPF_SCRIPT_HASH_MEMO_BYTES)
		return;
	if (memo_n == memo_cap) {
		memo_cap = memo_cap ? 2 * memo_cap : 256;
		memo_heads = xrealloc(memo_heads, memo_cap * sizeof(*memo_heads));
		memo_hashes = xrealloc(memo_hashes, memo_cap * sizeof(*memo_hashes));
	}
	memo_heads[memo_n] = xstrndup(head, head_len);
	memo_hashes[memo_n] = xstrdup(hash);
	tpf_strindex_put(&memo_index, memo_heads[memo_n], memo_n);
	memo_n++;
	memo_bytes += cost;
}

char *tpf_script_hash_memo(const char *head, const char *body)
{
	size_t slot;
	pthread_mutex_lock(&memo_mu);
	if (body != memo_body) { /* another body: no held hash is of it */
		memo_empty();
		memo_body = body;
	}
	if (tpf_strindex_get(&memo_index, head, &slot)) {
		char *hash = xstrdup(memo_hashes[slot]);
		memo_hits++;
		pthread_mutex_unlock(&memo_mu);
		return hash;
	}
	pthread_mutex_unlock(&memo_mu);

	/* Hash outside the lock: two threads may both make the same hash,
	 * and the second keep is a no-op (the index keeps the first). */
	size_t head_len = strlen(head);
	char *hash = tpf_sha256_tagged2(head, head_len, body, strlen(body));

	pthread_mutex_lock(&memo_mu);
	memo_made++;
	if (body == memo_body && !tpf_strindex_get(&memo_index, head, &slot))
		memo_keep(head, head_len, hash);
	pthread_mutex_unlock(&memo_mu);
	return hash;
}

void tpf_script_hash_memo_clear(void)
{
	pthread_mutex_lock(&memo_mu);
	memo_empty();
	pthread_mutex_unlock(&memo_mu);
}

void tpf_script_hash_memo_counts(size_t *hits, size_t *made)
{
	pthread_mutex_lock(&memo_mu);
	if (hits)
		*hits = memo_hits;
	if (made)
		*made = memo_made;
	pthread_mutex_unlock(&memo_mu);
}
