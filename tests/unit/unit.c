#include "tests/unit/unit.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static int n_checks, n_failed;
static const char *current = "";

/* The cases asked for (unit.h): each name, and whether it named a case. */
static struct {
	char **names;
	int *hit;
	size_t n, alloc;
	int loaded;
} sel;

static void select_words(const char *s)
{
	const char *seps = " ,\t\n";
	while (*(s += strspn(s, seps))) {
		size_t len = strcspn(s, seps);
		XGROW(sel.names, sel.n + 1, sel.alloc);
		sel.names[sel.n++] = xstrndup(s, len);
		s += len;
	}
}

/* UNIT_CASES, then the program's arguments (read back from /proc, as every
 * test's main takes none). */
static void select_load(void)
{
	if (sel.loaded)
		return;
	sel.loaded = 1;
	const char *env = getenv("UNIT_CASES");
	if (env)
		select_words(env);
	FILE *f = fopen("/proc/self/cmdline", "r");
	if (f) {
		char *arg = NULL;
		size_t cap = 0;
		for (int i = 0; getdelim(&arg, &cap, '\0', f) > 0; i++)
			if (i > 0)
				select_words(arg);
		free(arg);
		fclose(f);
	}
	sel.hit = xcalloc(sel.n ? sel.n : 1, sizeof(*sel.hit));
}

static int case_named(const char *want, const char *fn)
{
	const char *sep = strstr(fn, "__");
	return !strcmp(want, fn) || (sep && !strcmp(want, sep + 2));
}

int unit_selected(const char *fn)
{
	select_load();
	if (!sel.n)
		return 1;
	int any = 0;
	for (size_t i = 0; i < sel.n; i++)
		if (case_named(sel.names[i], fn))
			any = sel.hit[i] = 1;
	return any;
}

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
	select_load();
	current = "unit_selected";
	for (size_t i = 0; i < sel.n; i++) {
		unit_check(sel.hit[i], __FILE__, __LINE__, "the case asked for exists",
			   "no case named '%s' ran", sel.names[i]);
		free(sel.names[i]);
	}
	free(sel.names);
	free(sel.hit);
	memset(&sel, 0, sizeof(sel));
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

/* Run a shell snippet with the harness sourced; its stdout, trimmed.
 * Caller frees. *rc gets the exit status. */
char *unit_sshd_harness(const char *script, int *rc)
{
	char *cmd = xasprintf("sh -c '. \"$TPF_TOP/tests/e2e/sshd.sh\"; %s'", script);
	FILE *p = popen(cmd, "r");
	struct tpf_buf out = TPF_BUF_INIT;
	char buf[4096];
	size_t n;
	while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0)
		tpf_buf_add(&out, buf, n);
	int st = p ? pclose(p) : -1;
	if (rc)
		*rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	free(cmd);
	tpf_buf_rtrim(&out);
	return tpf_buf_detach(&out, NULL);
}

void unit_sshd_harness_do(const char *script)
{
	free(unit_sshd_harness(script, NULL));
}

char *unit_sshd_export(const char *dir, int n, const char *base_ip, int port)
{
	char num[16];
	snprintf(num, sizeof(num), "%d", n);
	setenv("SSHD_DIR", dir, 1);
	setenv("SSHD_N", num, 1);
	setenv("SSHD_BASE", base_ip, 1);
	snprintf(num, sizeof(num), "%d", port);
	setenv("SSHD_PORT", num, 1);
	char *keyfile = xasprintf("%s/id_ed25519", dir);
	setenv("SSHD_KEY", keyfile, 1);
	return keyfile;
}
