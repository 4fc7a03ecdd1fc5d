/*
 * Source pinning with libgit2, checked against the git CLI: resolve refs
 * of a local path and of a URL (file://), check out into a directory, and
 * bundles the git CLI can verify and clone.
 */
#include "tests/unit/unit.h"
#include "source/source.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/fs.h"
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *tmp, *repo, *url;
static char c1[41], c2[41], c3[41];

#define GIT "git -c user.name=t -c user.email=t@example.com -c commit.gpgsign=false " \
	    "-c init.defaultBranch=main -c advice.detachedHead=false "

/* Run a shell command; returns its exit status, *out (if given) its
 * stdout with the trailing newline removed. */
static int sh(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sh(char **out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *cmd = xvasprintf(fmt, ap);
	va_end(ap);
	struct tpf_buf b = TPF_BUF_INIT;
	FILE *p = popen(cmd, "r");
	char chunk[4096];
	size_t n;
	while (p && (n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		tpf_buf_add(&b, chunk, n);
	int st = p ? pclose(p) : -1;
	tpf_buf_rtrim(&b);
	if (out)
		*out = tpf_buf_detach(&b, NULL);
	tpf_buf_release(&b);
	free(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void rev(const char *dir, const char *what, char out[41])
{
	char *s = NULL;
	sh(&s, "git -C '%s' rev-parse '%s'", dir, what);
	snprintf(out, 41, "%s", s ? s : "");
	free(s);
}

static char *file_text(const char *path)
{
	struct tpf_buf b = TPF_BUF_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_read_file(path, &b, &d);
	tpf_diags_release(&d);
	return tpf_buf_detach(&b, NULL);
}

/* main: c1 "one" (tag light), c2 "two" (annotated tag v2, HEAD);
 * feature: c3 "three". */
static void make_repo(void)
{
	repo = xasprintf("%s/repo", tmp);
	url = xasprintf("file://%s", repo);
	CHECK(sh(NULL, GIT "init -q '%s'", repo) == 0);
	CHECK(sh(NULL, "cd '%s' && echo one >f && " GIT "add f && " GIT "commit -qm one && "
		       GIT "tag light", repo) == 0);
	CHECK(sh(NULL, "cd '%s' && echo two >f && " GIT "commit -qam two && " GIT "tag -a v2 -m v2",
		 repo) == 0);
	CHECK(sh(NULL, "cd '%s' && " GIT "checkout -qb feature && echo three >f && mkdir -p sub && "
		       "echo deep >sub/g && " GIT "add sub && " GIT "commit -qam three && "
		       GIT "checkout -q main", repo) == 0);
	rev(repo, "light", c1);
	rev(repo, "v2^{commit}", c2);
	rev(repo, "feature", c3);
	CHECK(strlen(c1) == 40 && strlen(c2) == 40 && strlen(c3) == 40);
}

static void check_resolves(const char *where, const char *ref, const char *want)
{
	char out[41] = "";
	struct tpf_diags d = TPF_DIAGS_INIT;
	int rc = tpf_source_resolve(where, ref, out, &d);
	CHECKF(rc == 0, "resolve '%s' of '%s': %s", ref, where, d.n ? d.items[0].summary : "");
	CHECKF(!strcmp(out, want), "resolve '%s' of '%s': got %s, want %s", ref, where, out, want);
	tpf_diags_release(&d);
}

static void test_source__resolve_local(void)
{
	char short1[9];
	snprintf(short1, sizeof(short1), "%.8s", c1);
	check_resolves(repo, "HEAD", c2);
	check_resolves(repo, "main", c2);
	check_resolves(repo, "feature", c3);
	check_resolves(repo, "light", c1);
	check_resolves(repo, "v2", c2); /* annotated: peeled to the commit */
	check_resolves(repo, short1, c1);
	check_resolves(repo, c3, c3);
	check_resolves(repo, "main~1", c1);
	check_resolves(repo, NULL, c2); /* default HEAD */

	char out[41] = "";
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_source_resolve(repo, "no-such-branch", out, &d) < 0);
	CHECK_INT(d.n, 1);
	if (d.n) {
		CHECK(strstr(d.items[0].summary, "'no-such-branch'") != NULL);
		CHECK(strstr(d.items[0].summary, repo) != NULL);
		CHECK(d.items[0].detail && strstr(d.items[0].detail, "committed"));
	}
	tpf_diags_release(&d);

	char *notrepo = xasprintf("%s/not-a-repo", tmp);
	mkdir(notrepo, 0700);
	CHECK(tpf_source_resolve(notrepo, "HEAD", out, &d) < 0);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "cannot open repo"));
	tpf_diags_release(&d);
	free(notrepo);
}

/* Changes to tracked files are never deployed: resolving says so. */
static void test_source__uncommitted_changes_warn(void)
{
	char out[41] = "";
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_source_resolve(repo, "HEAD", out, &d), 0);
	CHECK_INT(d.n, 0); /* clean */
	CHECK(sh(NULL, "cd '%s' && echo untracked >new-file", repo) == 0);
	CHECK_INT(tpf_source_resolve(repo, "HEAD", out, &d), 0);
	CHECK_INT(d.n, 0); /* untracked files do not count */
	CHECK(sh(NULL, "cd '%s' && echo edited >f", repo) == 0);
	CHECK_INT(tpf_source_resolve(repo, "HEAD", out, &d), 0);
	CHECK_STR(out, c2);
	CHECK_INT(d.n, 1);
	if (d.n) {
		CHECK_INT(d.items[0].severity, TPF_SEV_WARNING);
		CHECKF(strstr(d.items[0].summary, "uncommitted changes to 1 tracked file (first: f)") &&
			       strstr(d.items[0].summary, "not deployed"),
		       "got: %s", d.items[0].summary);
	}
	tpf_diags_release(&d);
	CHECK(sh(NULL, "cd '%s' && " GIT "checkout -q f && rm -f new-file", repo) == 0);
	CHECK_INT(tpf_source_resolve(repo, "HEAD", out, &d), 0);
	CHECK_INT(d.n, 0);
	tpf_diags_release(&d);
}

static void test_source__resolve_url(void)
{
	check_resolves(url, "HEAD", c2);
	check_resolves(url, "main", c2);
	check_resolves(url, "feature", c3);
	check_resolves(url, "light", c1);
	check_resolves(url, "v2", c2);
	check_resolves(url, "refs/heads/feature", c3);
	check_resolves(url, c1, c1);

	char out[41] = "";
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_source_resolve(url, "no-such-branch", out, &d) < 0);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "'no-such-branch'") &&
	      strstr(d.items[0].summary, url));
	CHECK(d.n == 1 && d.items[0].detail && strstr(d.items[0].detail, "is the ref pushed?"));
	tpf_diags_release(&d);

	char short1[9];
	snprintf(short1, sizeof(short1), "%.8s", c1);
	CHECK(tpf_source_resolve(url, short1, out, &d) < 0);
	CHECK(d.n == 1 && d.items[0].detail && strstr(d.items[0].detail, "full 40-hex"));
	tpf_diags_release(&d);

	char *missing = xasprintf("file://%s/nowhere", tmp);
	CHECK(tpf_source_resolve(missing, "main", out, &d) < 0);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "cannot list refs"));
	tpf_diags_release(&d);
	free(missing);
}

static void check_checkout(const char *dest, const char *commit, const char *want_f)
{
	char head[41] = "";
	rev(dest, "HEAD", head);
	CHECK_STR(head, commit);
	/* Detached: HEAD is not a symbolic ref. */
	CHECK(sh(NULL, "git -C '%s' symbolic-ref -q HEAD", dest) != 0);
	char *fp = xasprintf("%s/f", dest);
	char *f = file_text(fp);
	CHECK_STR(f, want_f);
	free(f);
	free(fp);
}

static void test_source__checkout(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *dest = xasprintf("%s/co/deeper/src", tmp);
	CHECK(tpf_source_checkout(repo, c1, dest, &d) == 0);
	check_checkout(dest, c1, "one\n");

	/* Another commit in the same directory. */
	CHECK(tpf_source_checkout(repo, c3, dest, &d) == 0);
	check_checkout(dest, c3, "three\n");
	char *g = xasprintf("%s/sub/g", dest);
	CHECK(access(g, F_OK) == 0);

	/* Back: files of c3 only go; a modified tracked file is reset; an
	 * untracked file stays. */
	char *fp = xasprintf("%s/f", dest);
	char *keep = xasprintf("%s/keep.txt", dest);
	CHECK(sh(NULL, "echo changed >'%s' && echo mine >'%s'", fp, keep) == 0);
	CHECK(tpf_source_checkout(repo, c2, dest, &d) == 0);
	check_checkout(dest, c2, "two\n");
	CHECK(access(g, F_OK) != 0);
	CHECK(access(keep, F_OK) == 0);

	/* A commit the clone has not seen yet is fetched. */
	CHECK(sh(NULL, "cd '%s' && " GIT "checkout -q feature && echo four >f && "
		       GIT "commit -qam four && " GIT "checkout -q main", repo) == 0);
	char c4[41];
	rev(repo, "feature", c4);
	CHECK(tpf_source_checkout(repo, c4, dest, &d) == 0);
	check_checkout(dest, c4, "four\n");
	CHECKF(d.n == 0, "%s", d.n ? d.items[0].summary : "");
	tpf_diags_release(&d);

	/* From a URL, into an existing directory that is not a repository. */
	char *dest2 = xasprintf("%s/co2", tmp);
	char *keep2 = xasprintf("%s/keep.txt", dest2);
	CHECK(sh(NULL, "mkdir -p '%s' && echo mine >'%s'", dest2, keep2) == 0);
	CHECK(tpf_source_checkout(url, c2, dest2, &d) == 0);
	check_checkout(dest2, c2, "two\n");
	CHECK(access(keep2, F_OK) == 0);
	CHECKF(d.n == 0, "%s", d.n ? d.items[0].summary : "");
	tpf_diags_release(&d);

	/* Errors: not a commit id; a commit that exists nowhere. */
	CHECK(tpf_source_checkout(repo, "main", dest, &d) < 0);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "40-hex"));
	tpf_diags_release(&d);
	CHECK(tpf_source_checkout(repo, "0123456789abcdef0123456789abcdef01234567", dest, &d) < 0);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "not found") &&
	      strstr(d.items[0].summary, repo));
	tpf_diags_release(&d);
	check_checkout(dest, c4, "four\n"); /* untouched by the failures */

	free(keep2);
	free(dest2);
	free(keep);
	free(fp);
	free(g);
	free(dest);
}

static void check_bundle(const char *from, const char *commit, const char *name, const char *want_f)
{
	struct tpf_buf b = TPF_BUF_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_source_bundle(from, commit, &b, &d) == 0);
	CHECKF(d.n == 0, "%s", d.n ? d.items[0].summary : "");
	char *hdr = xasprintf("# v2 git bundle\n%s refs/heads/tpuform\n", commit);
	CHECK(b.len > strlen(hdr) && !memcmp(b.buf, hdr, strlen(hdr)));
	char *path = xasprintf("%s/%s.bundle", tmp, name);
	CHECK(tpf_write_file_atomic(path, b.buf, b.len, 0600, &d) == 0);

	CHECK(sh(NULL, "git -C '%s' bundle verify -q '%s' >/dev/null 2>&1", repo, path) == 0);
	char *dir = xasprintf("%s/%s-clone", tmp, name);
	CHECK(sh(NULL, "git clone -q '%s' '%s' 2>/dev/null", path, dir) == 0);
	char head[41] = "";
	rev(dir, "HEAD", head);
	CHECK_STR(head, commit);
	char *fp = xasprintf("%s/f", dir);
	char *f = file_text(fp);
	CHECK_STR(f, want_f);
	/* The whole history came along. */
	CHECK(sh(NULL, "git -C '%s' cat-file -e '%s^{commit}'", dir, c1) == 0);
	CHECK(sh(NULL, "git -C '%s' fsck --strict --no-dangling --no-progress 2>&1", dir) == 0);
	free(f);
	free(fp);
	free(dir);
	free(path);
	free(hdr);
	tpf_diags_release(&d);
	tpf_buf_release(&b);
}

static void test_source__bundle(void)
{
	check_bundle(repo, c2, "local", "two\n");
	check_bundle(url, c3, "remote", "three\n");

	/* A worker fetching a newer bundle into its existing checkout. */
	struct tpf_buf b = TPF_BUF_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_source_bundle(repo, c3, &b, &d) == 0);
	char *path = xasprintf("%s/next.bundle", tmp);
	CHECK(tpf_write_file_atomic(path, b.buf, b.len, 0600, &d) == 0);
	char *dir = xasprintf("%s/local-clone", tmp);
	CHECK(sh(NULL, "git -C '%s' fetch -q '%s' '+refs/heads/tpuform:refs/tpuform/bundle' && "
		       "git -C '%s' -c advice.detachedHead=false checkout -q '%s'",
		 dir, path, dir, c3) == 0);
	char *fp = xasprintf("%s/f", dir);
	char *f = file_text(fp);
	CHECK_STR(f, "three\n");

	/* Errors leave the buffer as it was. */
	tpf_buf_reset(&b);
	tpf_buf_adds(&b, "keep");
	CHECK(tpf_source_bundle(repo, "0123456789abcdef0123456789abcdef01234567", &b, &d) < 0);
	CHECK_STR(b.buf, "keep");
	CHECK(d.n == 1 && strstr(d.items[0].summary, repo));
	tpf_diags_release(&d);
	CHECK(tpf_source_bundle(repo, "HEAD", &b, &d) < 0);
	CHECK_STR(b.buf, "keep");
	tpf_diags_release(&d);

	free(f);
	free(fp);
	free(dir);
	free(path);
	tpf_buf_release(&b);
}

int main(void)
{
	tmp = unit_tmpdir();
	make_repo();
	RUN(test_source__resolve_local);
	RUN(test_source__uncommitted_changes_warn);
	RUN(test_source__resolve_url);
	RUN(test_source__checkout);
	RUN(test_source__bundle);

	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_remove_tree(tmp, &d);
	tpf_diags_release(&d);
	free(repo);
	free(url);
	free(tmp);
	return unit_done();
}
