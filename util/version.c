/*
 * Dotted version numbers (util/version.h).
 */
#include "util/version.h"

#include <stdlib.h>
#include <string.h>

int tpf_version_cmp(const char *a, const char *b)
{
	while (*a || *b) {
		char *ea, *eb;
		long x = strtol(a, &ea, 10), y = strtol(b, &eb, 10);
		if (ea == a)
			x = 0;
		if (eb == b)
			y = 0;
		if (x != y)
			return x < y ? -1 : 1;
		a = *ea ? ea + strcspn(ea, ".") : ea;
		b = *eb ? eb + strcspn(eb, ".") : eb;
		a += *a == '.';
		b += *b == '.';
	}
	return 0;
}
