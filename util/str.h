/*
 * Small string rules used in every layer.
 */
#ifndef TPF_STR_H
#define TPF_STR_H

#include <string.h>

/* 1 when a and b are both NULL or hold the same bytes, else 0. The one
 * NULL-safe equality: an absent field equals only an absent field. */
static inline int tpf_streq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

#endif
