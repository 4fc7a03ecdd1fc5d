#include "util/timeutil.h"

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
		long n = (long)((wall - (double)t) * (double)unit[digits] + 0.5);
		n = n < 0 ? 0 : n >= unit[digits] ? unit[digits] - 1 : n;
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

int tpf_parse_duration(const char *s, double *seconds)
{
	double total = 0;
	const char *p = s;
	if (!*p)
		return -1;
	while (*p) {
		char *end;
		errno = 0;
		double v = strtod(p, &end);
		if (end == p || errno || v < 0)
			return -1;
		p = end;
		if (!strncmp(p, "ms", 2)) {
			total += v / 1000.0;
			p += 2;
		} else if (*p == 's') {
			total += v;
			p++;
		} else if (*p == 'm') {
			total += v * 60;
			p++;
		} else if (*p == 'h') {
			total += v * 3600;
			p++;
		} else if (*p == '\0' && total == 0) {
			total = v; /* bare number: seconds */
		} else {
			return -1;
		}
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
	return (double)(timegm(&tm) - offset) + frac;
}
