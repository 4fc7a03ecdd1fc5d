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

/* The one RFC 3339 formatter (RFC 3339 section 5.6), into out (40 bytes
 * always suffice; shorter is truncated): wall (seconds since the epoch) with `digits` fractional digits
 * (0 to 6) and "Z", or with TPF_RFC3339_LOCAL the local offset "+hh:mm".
 * The fraction is rounded to the nearest unit but never into the next
 * second (it stops at .999...); with 0 digits the second is truncated.
 * The forms in use: 0 digits UTC, state, plans and webhooks
 * ("2026-11-21T13:45:00Z"); 3 digits UTC, the ledger (tpf_ledger_time,
 * "...:00.123Z"); 6 digits UTC, the lock's Created (Go's time.Time in JSON,
 * "...:00.123456Z"); 6 digits local, Terraform's -json "@timestamp"
 * ("...:00.123456+00:00"). */
#define TPF_RFC3339_LOCAL 1u
void tpf_rfc3339_fmt(double wall, int digits, unsigned flags, char *out, size_t outlen);
/* tpf_rfc3339_fmt(wall, 0, 0, ...): "2026-11-21T13:45:00Z". */
void tpf_rfc3339(double wall, char *out, size_t outlen);

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
