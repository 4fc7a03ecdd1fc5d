/*
 * -worker's grammar (model/worker_set.h): gcloud's --worker.
 */
#include "model/worker_set.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* A worker number at *p (digits only), advancing *p. 0, or -1 with why. */
static int number(const char **p, const char *item, size_t ilen, long *out, char *why, size_t len)
{
	const char *s = *p;
	long n = 0;
	if (!isdigit((unsigned char)*s)) {
		snprintf(why, len, "'%.*s' is not a worker number (workers are N, A-B, A,B or all)",
			 (int)ilen, item);
		return -1;
	}
	for (; isdigit((unsigned char)*s); s++) {
		n = n * 10 + (*s - '0');
		if (n > TPF_WORKER_ID_MAX) {
			size_t digits = strspn(*p, "0123456789");
			snprintf(why, len, "worker %.*s is beyond the largest worker number, %d",
				 (int)digits, *p, TPF_WORKER_ID_MAX);
			return -1;
		}
	}
	*p = s;
	*out = n;
	return 0;
}

/* One item of the list: N or A-B, without surrounding blanks. */
static int item(const char *it, size_t ilen, struct tpf_worker_set *set, char *why, size_t len)
{
	const char *p = it, *end = it + ilen;
	long lo, hi;
	if (number(&p, it, ilen, &lo, why, len))
		return -1;
	hi = lo;
	if (p < end && *p == '-') {
		p++;
		if (p == end) {
			snprintf(why, len, "'%.*s' is not a range of workers (A-B, such as 0-3)",
				 (int)ilen, it);
			return -1;
		}
		if (number(&p, it, ilen, &hi, why, len))
			return -1;
	}
	if (p != end) {
		snprintf(why, len, "'%.*s' is not a worker number or range (workers are N, A-B, A,B or all)",
			 (int)ilen, it);
		return -1;
	}
	if (hi < lo) {
		snprintf(why, len, "range '%.*s' runs backwards: write %ld-%ld", (int)ilen, it, hi, lo);
		return -1;
	}
	for (long w = lo; w <= hi; w++)
		set->bits[w / 64] |= (uint64_t)1 << (w % 64);
	return 0;
}

int tpf_worker_set_parse(const char *text, struct tpf_worker_set *out, char *why, size_t len)
{
	struct tpf_worker_set set;
	memset(&set, 0, sizeof(set));
	set.given = 1;
	const char *p = text;
	while (isspace((unsigned char)*p))
		p++;
	size_t tl = strlen(p);
	while (tl && isspace((unsigned char)p[tl - 1]))
		tl--;
	if (tl == 3 && !strncasecmp(p, "all", 3)) {
		set.all = 1;
		*out = set;
		return 0;
	}
	int named = 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		const char *it = p, *e = p + n;
		while (it < e && isspace((unsigned char)*it))
			it++;
		while (e > it && isspace((unsigned char)e[-1]))
			e--;
		// cppcheck-suppress knownConditionTrueFalse ; false positive: "all,1" has an item "all" (test_worker_set)
		if (e - it == 3 && !strncasecmp(it, "all", 3)) {
			snprintf(why, len, "'all' stands alone: it is every worker");
			return -1;
		}
		if (e > it) { /* gcloud skips empty items ("0,1,") */
			if (item(it, (size_t)(e - it), &set, why, len))
				return -1;
			named = 1;
		}
		p += n + (p[n] == ',');
	}
	if (!named) {
		snprintf(why, len, "no worker named (workers are N, A-B, A,B or all)");
		return -1;
	}
	*out = set;
	return 0;
}

int tpf_worker_set_has(const struct tpf_worker_set *s, int w)
{
	if (w < 0 || w > TPF_WORKER_ID_MAX)
		return 0;
	if (!s->given || s->all)
		return 1;
	return (s->bits[w / 64] >> (w % 64)) & 1;
}

int tpf_worker_set_max(const struct tpf_worker_set *s)
{
	if (!s->given || s->all)
		return -1;
	for (int w = TPF_WORKER_ID_MAX; w >= 0; w--)
		if ((s->bits[w / 64] >> (w % 64)) & 1)
			return w;
	return -1;
}

size_t tpf_worker_set_count(const struct tpf_worker_set *s, size_t nworkers)
{
	size_t n = 0;
	for (size_t w = 0; w < nworkers && w <= TPF_WORKER_ID_MAX; w++)
		n += (size_t)tpf_worker_set_has(s, (int)w);
	return n;
}

int tpf_worker_in_range(int w, size_t nworkers)
{
	return w >= 0 && (size_t)w < nworkers;
}
