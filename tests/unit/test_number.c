/*
 * The one number grammar (util/number.h) and the one duration grammar
 * (util/timeutil.h), and RFC 3339 times that do not exist (issue 26 item
 * 10: `chip_hours: 1e3` was refused, `8d` was no duration outside report,
 * '999999999999999999999999h' was accepted, 2026-02-30 became March 2nd).
 */
#include "tests/unit/unit.h"
#include "util/number.h"
#include "util/timeutil.h"

#include <math.h>
#include <string.h>

static double num(const char *s)
{
	double v = -12345;
	return tpf_parse_number(s, &v) < 0 ? -1 : v;
}

static void test_number__grammar(void)
{
	CHECK(num("100") == 100);
	CHECK(num("12.5") == 12.5);
	CHECK(num("1e3") == 1000);
	CHECK(num("1E3") == 1000);
	CHECK(num("2.5e+2") == 250);
	CHECK(fabs(num("1e-3") - 0.001) < 1e-12);
	CHECK(num("007") == 7);
	/* refused: what strtod alone would take, and half-numbers */
	const char *bad[] = { "", "-1", "+1", ".5", "5.", "1.e5", "0x10", "inf", "nan", "1e",
			      "1e+", " 1", "1 ", "1,5", "1e999", "12a" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECKF(num(bad[i]) == -1, "'%s' is not a number", bad[i]);
	CHECK(tpf_parse_number(NULL, &(double){ 0 }) < 0);
	const char *end = NULL;
	double v = 0;
	CHECK_INT(tpf_parse_number_prefix("128-255", &v, &end), 0);
	CHECK(v == 128 && !strcmp(end, "-255"));
}

static void test_number__whole(void)
{
	long n = -1;
	CHECK_INT(tpf_parse_whole("1e3", 0, 5000, &n), 0);
	CHECK_INT((int)n, 1000);
	CHECK_INT(tpf_parse_whole("2.0", 0, 5, &n), 0);
	CHECK_INT((int)n, 2);
	CHECK_INT(tpf_parse_whole("2.5", 0, 5, &n), -1);
	CHECK_INT(tpf_parse_whole("1e3", 0, 999, &n), -2);
	CHECK_INT(tpf_parse_whole("0", 1, 9, &n), -2);
	CHECK_INT(tpf_parse_whole("99999999999999999999999", 0, 10, &n), -2);
	CHECK_INT(tpf_parse_whole("1e300", 0, 10, &n), -2);
	CHECK_INT(tpf_parse_whole("abc", 0, 10, &n), -1);
}

static double dur(const char *s)
{
	double v = -12345;
	int rc = tpf_parse_duration(s, &v);
	return rc < 0 ? rc : v;
}

static void test_number__duration(void)
{
	CHECK(dur("30s") == 30);
	CHECK(dur("500ms") == 0.5);
	CHECK(dur("5m") == 300);
	CHECK(dur("6h") == 21600);
	CHECK(dur("7d") == 7 * 86400);
	CHECK(dur("8d") == 8 * 86400);
	CHECK(dur("1d12h") == 36 * 3600);
	CHECK(dur("1h30m") == 5400);
	CHECK(dur("1.5h") == 5400);
	CHECK(dur("1e3s") == 1000);
	CHECK(dur("90") == 90);
	CHECK(dur("0") == 0);
	CHECK(dur("36500d") == TPF_DURATION_MAX);
	const char *bad[] = { "", "s", "-5s", "5x", "1m30", "1 h", "5.s", "0x10s", "infh", "1w" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECKF(dur(bad[i]) == -1, "'%s' is not a duration", bad[i]);
	CHECK(dur("999999999999999999999999h") == -2);
	CHECK(dur("36501d") == -2);
	CHECK(dur("1e300s") == -2);
	CHECK(dur("1e999s") == -1); /* not a number at all */
}

static void test_number__rfc3339_exists(void)
{
	CHECK(tpf_parse_rfc3339("2026-02-28T00:00:00Z") > 0);
	CHECK(tpf_parse_rfc3339("2024-02-29T00:00:00Z") > 0); /* a leap year */
	CHECK(tpf_parse_rfc3339("2026-02-30T00:00:00Z") < 0);
	CHECK(tpf_parse_rfc3339("2026-02-29T00:00:00Z") < 0);
	CHECK(tpf_parse_rfc3339("2026-04-31T00:00:00Z") < 0);
	CHECK(tpf_parse_rfc3339("2026-01-01T24:00:00Z") < 0);
	CHECK(tpf_parse_rfc3339("2026-01-01T23:59:60Z") < 0);
	CHECK(tpf_parse_rfc3339("2026-12-31T23:59:59.5+01:00") > 0);
}

int main(void)
{
	RUN(test_number__grammar);
	RUN(test_number__whole);
	RUN(test_number__duration);
	RUN(test_number__rfc3339_exists);
	return unit_done();
}
