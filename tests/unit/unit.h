/*
 * Minimal TAP unit-test harness.
 *
 * A test file defines `static void test_<module>__<case>(void)` functions and
 * lists them in main() with RUN(fn). Checks print "ok N - ..." / "not ok N -
 * ..." lines (TAP version 13); main returns unit_done(), non-zero if any
 * check failed. tests/run.sh counts the lines.
 */
#ifndef TPF_UNIT_H
#define TPF_UNIT_H

#include <stddef.h>

void unit_check(int cond, const char *file, int line, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void unit_check_str(const char *got, const char *want, const char *file, int line,
		    const char *what);
void unit_begin(const char *name);
int unit_done(void);
/* A fresh temporary directory for this test process; caller frees. */
char *unit_tmpdir(void);

#define CHECK(cond) unit_check(!!(cond), __FILE__, __LINE__, #cond, NULL)
#define CHECKF(cond, ...) unit_check(!!(cond), __FILE__, __LINE__, #cond, __VA_ARGS__)
#define CHECK_STR(got, want) unit_check_str((got), (want), __FILE__, __LINE__, #got)
#define CHECK_INT(got, want)                                                              \
	do {                                                                              \
		long long g_ = (long long)(got), w_ = (long long)(want);                  \
		unit_check(g_ == w_, __FILE__, __LINE__, #got " == " #want,                \
			   "got %lld, want %lld", g_, w_);                                \
	} while (0)
#define RUN(fn) (unit_begin(#fn), fn())

#endif
