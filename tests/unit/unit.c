#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_checks, n_failed;
static const char *current = "";

void unit_begin(const char *name)
{
	if (n_checks == 0)
		printf("TAP version 13\n");
	current = name;
}

void unit_check(int cond, const char *file, int line, const char *what, const char *fmt, ...)
{
	if (n_checks == 0 && !*current)
		printf("TAP version 13\n");
	n_checks++;
	printf("%s %d - %s: %s\n", cond ? "ok" : "not ok", n_checks, current, what);
	if (!cond) {
		n_failed++;
		printf("#   at %s:%d\n", file, line);
		if (fmt) {
			va_list ap;
			va_start(ap, fmt);
			printf("#   ");
			vprintf(fmt, ap);
			printf("\n");
			va_end(ap);
		}
	}
	fflush(stdout);
}

static void print_commented(const char *label, const char *s)
{
	printf("#   %s:", label);
	if (!s) {
		printf(" (null)\n");
		return;
	}
	printf("\n#     ");
	for (; *s; s++) {
		putchar(*s);
		if (*s == '\n' && s[1])
			printf("#     ");
	}
	printf("\n");
}

void unit_check_str(const char *got, const char *want, const char *file, int line,
		    const char *what)
{
	int ok = (got && want) ? !strcmp(got, want) : got == want;
	unit_check(ok, file, line, what, NULL);
	if (!ok) {
		print_commented("got", got);
		print_commented("want", want);
	}
}

int unit_done(void)
{
	printf("1..%d\n", n_checks);
	return n_failed ? 1 : 0;
}

char *unit_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *tmpl = xasprintf("%s/tpuform-unit-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		abort();
	}
	return tmpl;
}
