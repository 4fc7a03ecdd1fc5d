/*
 * The object store seam (state/objstore.h): the same contract checked on
 * the local row (files) and on the Cloud Storage row (against the
 * in-memory stand-in, tests/unit/gcs_fake.h): put-if-generation refuses a
 * stale or an "only if absent" write and leaves the object as it was,
 * every write gives a new generation, delete of a missing object and of a
 * stale generation, list under a prefix. Then the local row's own rules:
 * conditional puts from several processes at once (exactly one wins), no
 * rename over a directory, and a link to a regular file kept.
 */
#include "state/backend.h"
#include "state/objstore.h"
#include "tests/unit/gcs_fake.h"
#include "tests/unit/unit.h"
#include "util/fs.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static struct gcs_fake fake;

static int put(struct tpf_objstore *s, const char *name, const char *text, long long if_gen,
	       long long *gen)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	int rc = tpf_objstore_put(s, name, text, strlen(text), "text/plain", if_gen, gen, &d);
	tpf_diags_release(&d);
	return rc;
}

/* The object's text ("" when absent) and generation. */
static char *get(struct tpf_objstore *s, const char *name, long long *gen)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_buf b = TPF_BUF_INIT;
	int rc = tpf_objstore_get(s, name, 1 << 20, "object", &b, gen, &d);
	char *text = xstrdup(rc ? "" : b.buf ? b.buf : "");
	tpf_buf_release(&b);
	tpf_diags_release(&d);
	return text;
}

static void check_generations(struct tpf_objstore *s)
{
	long long g1 = 0, g2 = 0, g3 = 0, seen = -1;
	char *t;
	CHECK_INT(put(s, "a/x", "one", 0, &g1), 0);
	CHECK(g1 > 0);
	/* only if absent: it exists now */
	CHECK_INT(put(s, "a/x", "two", 0, &g2), TPF_ESTALE);
	CHECK_STR(t = get(s, "a/x", &seen), "one");
	free(t);
	CHECK(seen == g1);
	CHECK_INT(put(s, "a/x", "two", g1, &g2), 0);
	CHECK(g2 > 0 && g2 != g1);
	/* a writer still holding g1 is refused; the object stays "two" */
	CHECK_INT(put(s, "a/x", "stale", g1, &g3), TPF_ESTALE);
	CHECK_STR(t = get(s, "a/x", &seen), "two");
	free(t);
	CHECK(seen == g2);
	/* a run of rewrites, each on the generation the last one gave */
	long long g = g2;
	for (int i = 0; i < 20; i++) {
		long long next = 0;
		CHECKF(put(s, "a/x", i % 2 ? "odd" : "even", g, &next) == 0, "rewrite %d", i);
		CHECKF(next != g && next > 0, "rewrite %d kept generation %lld", i, g);
		g = next;
	}
	CHECK_INT(put(s, "a/x", "any", TPF_OBJ_ANY, &g3), 0);
	CHECK(g3 != g);
	struct tpf_diags d = TPF_DIAGS_INIT;
	long long st = 0;
	CHECK_INT(tpf_objstore_stat(s, "a/x", &st, &d), 0);
	CHECK(st == g3);
	/* delete: a stale generation is refused, the right one deletes */
	CHECK_INT(tpf_objstore_delete(s, "a/x", g, &d), TPF_ESTALE);
	CHECK_INT(tpf_objstore_delete(s, "a/x", g3, &d), 0);
	struct tpf_buf b = TPF_BUF_INIT;
	CHECK_INT(tpf_objstore_get(s, "a/x", 100, "object", &b, &seen, &d), TPF_ENOTFOUND);
	tpf_buf_release(&b);
	CHECK(seen == 0);
	CHECK_INT(tpf_objstore_stat(s, "a/x", &st, &d), TPF_ENOTFOUND);
	/* delete of what is not there */
	CHECK_INT(tpf_objstore_delete(s, "a/x", TPF_OBJ_ANY, &d), TPF_ENOTFOUND);
	CHECK_INT(tpf_objstore_delete(s, "a/never", 5, &d), TPF_ENOTFOUND);
	CHECKF(d.n == 0, "%s", d.n ? d.items[0].summary : "");
	tpf_diags_release(&d);
}

static int has(char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return 1;
	return 0;
}

static void check_list(struct tpf_objstore *s)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	char **names = NULL;
	size_t n = 9;
	CHECK_INT(tpf_objstore_list(s, "none/", &names, &n, &d), 0);
	CHECK(n == 0 && names && !names[0]);
	tpf_objstore_names_free(names);
	CHECK_INT(put(s, "l/one", "1", TPF_OBJ_ANY, NULL), 0);
	CHECK_INT(put(s, "l/two", "2", TPF_OBJ_ANY, NULL), 0);
	CHECK_INT(put(s, "lx/other", "3", TPF_OBJ_ANY, NULL), 0);
	CHECK_INT(tpf_objstore_list(s, "l/", &names, &n, &d), 0);
	CHECK_INT((long)n, 2);
	CHECK(has(names, n, "one") && has(names, n, "two") && !names[n]);
	tpf_objstore_names_free(names);
	CHECK_INT(tpf_objstore_delete(s, "l/one", TPF_OBJ_ANY, &d), 0);
	CHECK_INT(tpf_objstore_list(s, "l/", &names, &n, &d), 0);
	CHECK(n == 1 && has(names, n, "two"));
	tpf_objstore_names_free(names);
	tpf_diags_release(&d);
}

static void test_objstore__local_contract(void)
{
	char *dir = unit_tmpdir();
	char *prefix = xasprintf("%s/s.json.logs/", dir);
	struct tpf_objstore *s = tpf_objstore_open_local(prefix);
	CHECK(!tpf_objstore_shared(s));
	char *where = tpf_objstore_where(s, "a/x");
	char *want = xasprintf("%sa/x", prefix);
	CHECK_STR(where, want);
	check_generations(s);
	check_list(s);
	/* the files are where the prefix says, 0600 */
	char *path = xasprintf("%sl/two", prefix);
	struct stat st;
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	tpf_objstore_free(s);
	free(path);
	free(where);
	free(want);
	free(prefix);
	free(dir);
}

static void test_objstore__local_one_conditional_winner(void)
{
	char *dir = unit_tmpdir();
	char *prefix = xasprintf("%s/", dir);
	struct tpf_objstore *s = tpf_objstore_open_local(prefix);
	long long g = 0;
	CHECK_INT(put(s, "lease", "nobody", 0, &g), 0);
	enum { N = 6 };
	pid_t pids[N];
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			char text[32];
			snprintf(text, sizeof(text), "writer %d", i);
			_exit(put(s, "lease", text, g, NULL) == 0 ? 0 : 1);
		}
	}
	int won = 0;
	for (int i = 0; i < N; i++) {
		int status = -1;
		waitpid(pids[i], &status, 0);
		won += WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	CHECK_INT(won, 1);
	long long now = 0;
	char *t = get(s, "lease", &now);
	CHECK(!strncmp(t, "writer ", 7) && now != g);
	free(t);
	tpf_objstore_free(s);
	free(prefix);
	free(dir);
}

static void test_objstore__local_never_renames_over_a_directory(void)
{
	char *dir = unit_tmpdir();
	char *prefix = xasprintf("%s/", dir);
	char *sub = xasprintf("%s/busy", dir);
	CHECK_INT(mkdir(sub, 0700), 0);
	struct tpf_objstore *s = tpf_objstore_open_local(prefix);
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_objstore_put(s, "busy", "x", 1, "text/plain", TPF_OBJ_ANY, NULL, &d),
		  TPF_ERROR);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "not a regular file"));
	struct stat st;
	CHECK(stat(sub, &st) == 0 && S_ISDIR(st.st_mode));
	tpf_diags_release(&d);
	tpf_objstore_free(s);
	free(sub);
	free(prefix);
	free(dir);
}

/* util/fs.h's rule, which the state file and the ledger's writers share: a
 * link to a regular file is kept and its target replaced. */
static void test_objstore__local_keeps_a_link(void)
{
	char *dir = unit_tmpdir();
	char *prefix = xasprintf("%s/", dir);
	char *target = xasprintf("%s/real.json", dir), *link_path = xasprintf("%s/s.json", dir);
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_write_file_atomic(target, "old", 3, 0600, &d), 0);
	CHECK_INT(symlink("real.json", link_path), 0);
	struct tpf_objstore *s = tpf_objstore_open_local(prefix);
	CHECK_INT(put(s, "s.json", "new", TPF_OBJ_ANY, NULL), 0);
	struct stat st;
	CHECK(lstat(link_path, &st) == 0 && S_ISLNK(st.st_mode));
	char *t = get(s, "real.json", NULL);
	CHECK_STR(t, "new");
	free(t);
	/* a dangling link is refused, and stays */
	CHECK_INT(unlink(target), 0);
	CHECK_INT(tpf_write_file_atomic(link_path, "x", 1, 0600, &d), TPF_ERROR);
	CHECK(lstat(link_path, &st) == 0 && S_ISLNK(st.st_mode));
	tpf_diags_release(&d);
	tpf_objstore_free(s);
	free(target);
	free(link_path);
	free(prefix);
	free(dir);
}

static void test_objstore__gcs_contract(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_gcs_config c = { 0 };
	c.endpoint = fake.url;
	struct tpf_objstore *s = NULL;
	CHECK_INT(tpf_objstore_open_gcs(&s, "bkt", "team/f.logs/", &c, &d), 0);
	if (!s)
		return;
	CHECK(tpf_objstore_shared(s));
	char *where = tpf_objstore_where(s, "n/g1-w0.log");
	CHECK_STR(where, "gs://bkt/team/f.logs/n/g1-w0.log");
	free(where);
	check_generations(s);
	check_list(s);
	CHECK(gcs_fake_find(&fake, "team/f.logs/l/two") != NULL);
	tpf_objstore_free(s);
	/* beside a state: the backend's layout */
	struct tpf_backend_gcs_config bc;
	memset(&bc, 0, sizeof(bc));
	bc.bucket = "bkt";
	bc.prefix = "team//";
	bc.fleet = "f";
	bc.gcs = c;
	CHECK_INT(tpf_objstore_open_beside(&s, NULL, &bc, ".ledger/", &d), 0);
	where = tpf_objstore_where(s, "w.000001.jsonl");
	CHECK_STR(where, "gs://bkt/team/f.ledger/w.000001.jsonl");
	free(where);
	tpf_objstore_free(s);
	CHECK_INT(tpf_objstore_open_beside(&s, "/srv/s.json", NULL, ".logs/", &d), 0);
	where = tpf_objstore_where(s, "n/");
	CHECK_STR(where, "/srv/s.json.logs/n/");
	free(where);
	tpf_objstore_free(s);
	tpf_diags_release(&d);
}

int main(void)
{
	setenv("TPUFORM_ACCESS_TOKEN", "test-token", 1);
	setenv("TPUFORM_GCP_RETRY_BASE", "0.01", 1);
	setenv("TPUFORM_GCP_TRIES", "3", 1);
	RUN(test_objstore__local_contract);
	RUN(test_objstore__local_one_conditional_winner);
	RUN(test_objstore__local_never_renames_over_a_directory);
	RUN(test_objstore__local_keeps_a_link);
	if (gcs_fake_start(&fake)) {
		printf("# SKIP the Cloud Storage tests: cannot start the stand-in\n");
		return unit_done();
	}
	RUN(test_objstore__gcs_contract);
	gcs_fake_stop(&fake);
	return unit_done();
}
