/*
 * Time helpers. Durations are in seconds (double) unless a name says ms.
 */
#ifndef TPF_TIMEUTIL_H
#define TPF_TIMEUTIL_H

#include <stddef.h>
#include <time.h>

/* Monotonic clock, seconds. For elapsed times and timeouts. */
double tpf_now_mono(void);
/* Wall clock, seconds since the epoch. */
double tpf_now_wall(void);

/* RFC 3339 UTC timestamp with second precision ("2026-11-21T13:45:00Z")
 * into out (at least 32 bytes). */
void tpf_rfc3339(double wall, char *out, size_t outlen);
/* RFC 3339 with local offset and microseconds, as Terraform's -json
 * "@timestamp" ("2026-11-21T13:45:00.123456+00:00"). */
void tpf_rfc3339_micro(double wall, char *out, size_t outlen);

/*
 * An RFC 3339 timestamp ("2025-01-02T03:04:05.123Z", or with +hh:mm) as
 * wall-clock seconds since the epoch; -1 when NULL or malformed (anything
 * after the offset is malformed, and so is a date or time that does not
 * exist: February 30th, 24:00, a leap second). The one parser: what tpf_rfc3339 writes,
 * Google's expireTime / createTime fields and the state's times all go
 * through it.
 */
double tpf_parse_rfc3339(const char *s);

/* Terraform's heartbeat format "%02dm%02ds" ("00m10s"). */
void tpf_fmt_elapsed(double seconds, char *out, size_t outlen);
/* Go's time.Duration style used in "Creation complete after 1m2s". */
void tpf_fmt_duration(double seconds, char *out, size_t outlen);

/*
 * The one duration grammar, for every duration people write (fleet-file
 * keys, flags such as -interval and report -since, TPUFORM_* knobs): one or
 * more NUMBER UNIT pairs, units ms, s, m, h and d (a day is 86400 s), such
 * as "500ms", "30s", "1h30m", "7d", "1.5h", or a bare number of seconds;
 * each NUMBER is util/number.h's. Go's time.ParseDuration, with days added
 * (Go stops at hours; people write 7d). Returns 0 and sets *seconds; -1
 * when s is not a duration; -2 when it is longer than TPF_DURATION_MAX.
 */
int tpf_parse_duration(const char *s, double *seconds);

/* The longest duration tpuform takes: 36500 days (100 years). Longer is an
 * error, never a wrap or an overflow (issue 26: '-since
 * 999999999999999999999999h' was accepted). */
#define TPF_DURATION_MAX (36500.0 * 86400)

/* What a duration looks like, for messages. */
#define TPF_DURATION_EXAMPLES \
	"a duration such as 500ms, 30s, 5m, 6h, 7d or 1h30m (a bare number is seconds), at most 36500d"

/* Sleep for the given seconds (restarts on EINTR unless *stop becomes set). */
void tpf_sleep(double seconds);

#endif
