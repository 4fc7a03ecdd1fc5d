/*
 * Edit distance and the "did you mean" pick (util/similar.h).
 */
#include "util/similar.h"

#include <string.h>

#define MAXLEN 64

size_t tpf_edit_distance(const char *a, const char *b)
{
	size_t la = strnlen(a, MAXLEN), lb = strnlen(b, MAXLEN);
	/* d[i][j]: the distance of a's first i bytes and b's first j. */
	size_t d[MAXLEN + 1][MAXLEN + 1];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t best = d[i - 1][j] + 1; /* deletion */
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1; /* insertion */
			if (d[i - 1][j - 1] + cost < best)
				best = d[i - 1][j - 1] + cost; /* substitution */
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1; /* transposition */
			d[i][j] = best;
		}
	}
	return d[la][lb];
}

const char *tpf_similar_name(const char *given, const char *const *names, size_t n)
{
	const char *pick = NULL;
	size_t best = 3;
	for (size_t i = 0; i < n; i++) {
		if (!names[i] || !strcmp(names[i], given))
			continue;
		size_t dist = tpf_edit_distance(given, names[i]);
		if (dist < best && dist * 3 <= strlen(names[i])) {
			best = dist;
			pick = names[i];
		}
	}
	return pick;
}
