/*
 * The one grammar of numbers (util/number.h).
 */
#include "util/number.h"
#include "util/xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static int digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

/* The length of the grammar's number at the start of s; 0: none. */
static size_t number_length(const char *s)
{
	size_t n = 0;
	while (digit(s[n]))
		n++;
	if (!n)
		return 0;
	if (s[n] == '.' && digit(s[n + 1])) {
		n++;
		while (digit(s[n]))
			n++;
	}
	if (s[n] == 'e' || s[n] == 'E') {
		size_t e = n + 1;
		if (s[e] == '+' || s[e] == '-')
			e++;
		if (digit(s[e])) {
			while (digit(s[e]))
				e++;
			n = e;
		}
	}
	return n;
}

int tpf_parse_number_prefix(const char *s, double *out, const char **end)
{
	size_t n = s ? number_length(s) : 0;
	if (!n)
		return -1;
	/* strtod takes more than the grammar ("1.e5", hex): give it the span
	 * alone. */
	char *span = xstrndup(s, n);
	errno = 0;
	double v = strtod(span, NULL);
	int range = errno == ERANGE && v != 0; /* an underflow to 0 is 0 */
	free(span);
	if (range || !isfinite(v))
		return -1;
	*out = v;
	if (end)
		*end = s + n;
	return 0;
}

int tpf_parse_number(const char *s, double *out)
{
	const char *end = NULL;
	double v;
	if (tpf_parse_number_prefix(s, &v, &end) < 0 || *end)
		return -1;
	*out = v;
	return 0;
}

int tpf_parse_whole(const char *s, long min, long max, long *out)
{
	double v;
	if (tpf_parse_number(s, &v) < 0 || v != floor(v))
		return -1;
	/* (double)LONG_MAX rounds up to 2^63: stop short of it. */
	if (v < (double)min || v > (double)max || v >= 9e18)
		return -2;
	*out = (long)v;
	return 0;
}
