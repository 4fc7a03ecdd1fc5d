/*
 * Minimal TAP unit-test harness.
 *
 * A test file defines `static void test_<module>__<case>(void)` functions and
 * lists them in main() with RUN(fn). Checks print "ok N - ..." / "not ok N -
 * ..." lines (TAP version 13); main returns unit_done(), non-zero if any
 * check failed. tests/run.sh counts the lines.
 *
 * One case alone: name it on the command line or in UNIT_CASES (words
 * separated by spaces or commas), by its function name or the part after
 * "__", and RUN skips every other case:
 *   tests/unit/test_state json_round_trip_every_field
 *   UNIT_CASES=test_state__version_compare tests/unit/test_state
 *   TESTS=test_state:version_compare sh tests/run.sh
 * Code in main() outside RUN still runs. A name that matches no case is a
 * failed check (unit_done), so a typo does not pass by running nothing.
 */
#ifndef TPF_UNIT_H
#define TPF_UNIT_H

#include <stddef.h>

void unit_check(int cond, const char *file, int line, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void unit_check_str(const char *got, const char *want, const char *file, int line,
		    const char *what);
void unit_begin(const char *name);
/* Whether the case named fn is to run (see above). */
int unit_selected(const char *fn);
int unit_done(void);
/* A fresh temporary directory for this test process; caller frees. */
char *unit_tmpdir(void);
/* Run a shell snippet with tests/e2e/sshd.sh sourced ($TPF_TOP set): its
 * stdout, trimmed (caller frees); *rc (may be NULL) its exit status. The
 * _do form drops the output. */
char *unit_sshd_harness(const char *script, int *rc);
void unit_sshd_harness_do(const char *script);
/* The environment later harness calls need (SSHD_DIR, _N, _BASE, _PORT,
 * _KEY) for n workers from base_ip in dir, sshd on port: set. Returns
 * the client's private key file (caller frees). */
char *unit_sshd_export(const char *dir, int n, const char *base_ip, int port);

#define CHECK(cond) unit_check(!!(cond), __FILE__, __LINE__, #cond, NULL)
#define CHECKF(cond, ...) unit_check(!!(cond), __FILE__, __LINE__, #cond, __VA_ARGS__)
#define CHECK_STR(got, want) unit_check_str((got), (want), __FILE__, __LINE__, #got)
#define CHECK_INT(got, want)                                                              \
	do {                                                                              \
		long long g_ = (long long)(got), w_ = (long long)(want);                  \
		unit_check(g_ == w_, __FILE__, __LINE__, #got " == " #want,                \
			   "got %lld, want %lld", g_, w_);                                \
	} while (0)
#define RUN(fn) (unit_selected(#fn) ? (unit_begin(#fn), fn()) : (void)0)

#endif
