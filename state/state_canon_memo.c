/*
 * The canonical text of the last state parsed, by its bytes
 * (state_priv.h, tpf_state_parse_memo).
 */
#include "state/state_priv.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;
static char *memo_text; /* the bytes parsed last (owned) */
static size_t memo_len;
static int memo_is_file;
static char *memo_canon; /* their canonical text (owned) */

/* The canonical text memoised for these bytes (a copy), or NULL. */
static char *memo_get(const char *text, size_t len, int is_file)
{
	char *canon = NULL;
	pthread_mutex_lock(&memo_mu);
	if (memo_canon && memo_len == len && memo_is_file == is_file &&
	    !memcmp(memo_text, text, len))
		canon = xstrdup(memo_canon);
	pthread_mutex_unlock(&memo_mu);
	return canon;
}

static void memo_put(const char *text, size_t len, int is_file, const char *canon)
{
	char *t = xmalloc(len ? len : 1);
	memcpy(t, text, len);
	char *c = xstrdup(canon);
	pthread_mutex_lock(&memo_mu);
	free(memo_text);
	free(memo_canon);
	memo_text = t;
	memo_len = len;
	memo_is_file = is_file;
	memo_canon = c;
	pthread_mutex_unlock(&memo_mu);
}

int tpf_state_parse_memo(struct tpf_state *st, const char *text, size_t len, json_t *root,
			 const char *what, int is_file, struct tpf_diags *d)
{
	char *canon = text ? memo_get(text, len, is_file) : NULL;
	int hit = canon != NULL;
	int rc = tpf_state_parse_canon(st, root, what, is_file, canon, d); /* takes canon */
	if (!rc && !hit && text && st->last_json)
		memo_put(text, len, is_file, st->last_json);
	return rc;
}
