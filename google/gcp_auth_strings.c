/*
 * The two string helpers every gcp_auth*.c file shares: wiping a secret
 * before freeing it, and copying a string member of a credentials JSON.
 * They live here, below the other gcp_auth files, so that none of them has
 * to call back into gcp_auth.c (no call circle in google/, see
 * tests/lint/calls.sh).
 */
#include "google/gcp_auth_internal.h"
#include "util/xalloc.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

void tpf_gcp_wipe_free(char *s)
{
	if (s) {
		OPENSSL_cleanse(s, strlen(s));
		free(s);
	}
}

char *tpf_gcp_jstr(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v && *v ? xstrdup(v) : NULL;
}
