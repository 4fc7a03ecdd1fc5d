#include "util/timeutil.h"
#include "util/number.h"

#include <errno.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double tpf_now_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double tpf_now_wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void tpf_rfc3339_fmt(double wall, int digits, unsigned flags, char *out, size_t outlen)
{
	static const long unit[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
	time_t t = (time_t)wall;
	struct tm tm;
	char base[32], zone[16] = "Z", frac[32] = "";
	if (flags & TPF_RFC3339_LOCAL)
		localtime_r(&t, &tm);
	else
		gmtime_r(&t, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	if (flags & TPF_RFC3339_LOCAL) {
		char z[8];
		strftime(z, sizeof(z), "%z", &tm); /* +hhmm */
		snprintf(zone, sizeof(zone), "%.3s:%s", z, z + 3);
	}
	if (digits > 6)
		digits = 6;
	if (digits > 0) {
		long scale = unit[digits < 6 ? digits : 6]; /* 10^digits */
		long n = (long)((wall - (double)t) * (double)scale + 0.5);
		n = n < 0 ? 0 : n >= scale ? scale - 1 : n;
		snprintf(frac, sizeof(frac), ".%0*ld", digits, n);
	}
	snprintf(out, outlen, "%s%s%s", base, frac, zone);
}

void tpf_rfc3339(double wall, char *out, size_t outlen)
{
	tpf_rfc3339_fmt(wall, 0, 0, out, outlen);
}

void tpf_fmt_elapsed(double seconds, char *out, size_t outlen)
{
	long s = (long)seconds;
	snprintf(out, outlen, "%02ldm%02lds", s / 60, s % 60);
}

void tpf_fmt_duration(double seconds, char *out, size_t outlen)
{
	long s = (long)(seconds + 0.5);
	if (s < 60)
		snprintf(out, outlen, "%lds", s);
	else if (s < 3600)
		snprintf(out, outlen, "%ldm%lds", s / 60, s % 60);
	else
		snprintf(out, outlen, "%ldh%ldm%lds", s / 3600, (s / 60) % 60, s % 60);
}

/* The unit at p: its length and seconds; 0 when there is none. */
static size_t duration_unit(const char *p, double *scale)
{
	static const struct {
		const char *word;
		double seconds;
	} units[] = { { "ms", 0.001 }, { "s", 1 }, { "m", 60 }, { "h", 3600 }, { "d", 86400 } };
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t n = strlen(units[i].word);
		if (!strncmp(p, units[i].word, n)) {
			*scale = units[i].seconds;
			return n;
		}
	}
	return 0;
}

int tpf_parse_duration(const char *s, double *seconds)
{
	double total = 0;
	const char *p = s;
	if (!p || !*p)
		return -1;
	while (*p) {
		const char *end;
		double v, scale = 0;
		if (tpf_parse_number_prefix(p, &v, &end) < 0)
			return -1;
		size_t unit = duration_unit(end, &scale);
		if (!unit && !*end && p == s)
			scale = 1; /* a bare number: seconds */
		else if (!unit)
			return -1;
		total += v * scale;
		if (!(total <= TPF_DURATION_MAX))
			return -2;
		p = end + unit;
	}
	*seconds = total;
	return 0;
}

void tpf_sleep(double seconds)
{
	if (seconds <= 0)
		return;
	struct timespec ts = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

double tpf_parse_rfc3339(const char *s)
{
	struct tm tm = { 0 };
	const char *p = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	double frac = 0;
	if (!p)
		return -1;
	if (*p == '.') {
		char *end;
		frac = strtod(p, &end);
		if (end == p + 1)
			return -1;
		p = end;
	}
	long offset = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int hh, mm, used = 0;
		if (sscanf(p + 1, "%2d:%2d%n", &hh, &mm, &used) != 2 || used != 5)
			return -1;
		offset = (hh * 60L + mm) * 60 * (*p == '+' ? 1 : -1);
		p += 6;
	} else {
		return -1;
	}
	if (*p)
		return -1;
	/* strptime takes February 30th and timegm moves it to March 2nd:
	 * a date that does not exist is malformed. */
	struct tm want = tm, back;
	time_t t = timegm(&tm);
	if (!gmtime_r(&t, &back) || back.tm_year != want.tm_year || back.tm_mon != want.tm_mon ||
	    back.tm_mday != want.tm_mday || back.tm_hour != want.tm_hour ||
	    back.tm_min != want.tm_min || back.tm_sec != want.tm_sec)
		return -1;
	return (double)(t - offset) + frac;
}
