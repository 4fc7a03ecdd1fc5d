/*
 * The bootstrap renderer: hostile values must reach the worker's shell
 * byte for byte and never execute; secrets stay out of the script; the
 * output is deterministic.
 */
#include "tests/unit/unit.h"
#include "templates/render.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/kv.h"
#include "util/shquote.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *tmp;
static char *pwned; /* a file that exists only if a value got executed */

/* Values that break naive quoting. */
static const char *hostile[] = {
	"it's",
	"say \"hi\" and \\\"escaped\\\"",
	NULL, /* "$(touch PWNED)", filled in main */
	NULL, /* "`touch PWNED`" */
	NULL, /* "a; touch PWNED" */
	"line1\nline2\n\n",
	"back\\slash\\",
	"\xc3\xbc" "n\xc3\xaf" "c\xc3\xb8" "d\xc3\xa9 \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac",
	"",
	"-n",
	"--help -e",
	"'$HOME' \"$HOME\" ${HOME} $0 $1 $@",
	"* ? [a-z] ~",
	"'\\''",
	"tab\there\rcr",
	"!history !! #comment",
};
#define NHOSTILE (sizeof(hostile) / sizeof(hostile[0]))

/* Run `sh path` and return its stdout; *status gets the exit status. */
static char *run_sh(const char *path, int *status)
{
	struct tpf_buf out = TPF_BUF_INIT;
	char *cmd = xasprintf("cd '%s' && /bin/sh '%s' 2>&1", tmp, path);
	FILE *p = popen(cmd, "r");
	char chunk[4096];
	size_t n;
	while (p && (n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		tpf_buf_add(&out, chunk, n);
	int st = p ? pclose(p) : -1;
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	free(cmd);
	return tpf_buf_detach(&out, NULL);
}

static void write_text(const char *path, const char *text)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_write_file_atomic(path, text, strlen(text), 0700, &d) == 0);
	tpf_diags_release(&d);
}

static size_t header_len(const char *script)
{
	size_t n = strlen(script), t = strlen(tpf_template_bootstrap_sh);
	return n >= t ? n - t : 0;
}

/* The assignments of `script` (not the body), then `tail`, run by sh. */
static char *run_header(const char *script, const char *tail, int *status)
{
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_buf_add(&b, script, header_len(script));
	tpf_buf_adds(&b, tail);
	char *path = xasprintf("%s/header.sh", tmp);
	write_text(path, b.buf);
	char *out = run_sh(path, status);
	free(path);
	tpf_buf_release(&b);
	return out;
}

/* The values a list of variables has, each followed by \001. */
static char *print_vars_tail(const char *const *names, size_t n)
{
	struct tpf_buf b = TPF_BUF_INIT;
	for (size_t i = 0; i < n; i++)
		tpf_buf_addf(&b, "printf '%%s\\001' \"$%s\"\n", names[i]);
	return tpf_buf_detach(&b, NULL);
}

static struct tpf_bootstrap_params base_params(const struct tpf_kvlist *env)
{
	struct tpf_bootstrap_params p = {
		.fleet = "demo",
		.node = "demo-a-0",
		.worker = 1,
		.nworkers = 4,
		.retry = 2,
		.commit = "0123456789abcdef0123456789abcdef01234567",
		.repo = "https://example.com/org/repo.git",
		.source_mode = "clone",
		.setup = "pip install -r requirements.txt",
		.run = "python train.py --resume",
		.env = env,
		.session = "tpuform-demo",
		.coordinator = "10.0.0.2",
		.secrets_hash = "sha256:00",
	};
	return p;
}

static void test_render__hostile_values_arrive_intact(void)
{
	struct tpf_kvlist env = TPF_KVLIST_INIT;
	const char *names[NHOSTILE];
	char *keys[NHOSTILE];
	for (size_t i = 0; i < NHOSTILE; i++) {
		keys[i] = xasprintf("V_%02zu", i);
		names[i] = keys[i];
		tpf_kvlist_set(&env, keys[i], hostile[i]);
	}
	for (size_t h = 0; h < NHOSTILE; h++) {
		struct tpf_bootstrap_params p = base_params(&env);
		p.run = hostile[h];
		p.setup = hostile[(h + 1) % NHOSTILE];
		p.node = hostile[(h + 2) % NHOSTILE];
		p.fleet = hostile[(h + 3) % NHOSTILE];
		p.repo = hostile[(h + 4) % NHOSTILE];
		p.coordinator = hostile[(h + 5) % NHOSTILE];
		char *script = tpf_bootstrap_render(&p);
		static const char *const own[] = {
			"TPUFORM_RUN", "TPUFORM_SETUP", "TPUFORM_NODE", "TPUFORM_FLEET",
			"TPUFORM_REPO", "TPUFORM_COORDINATOR",
		};
		char *tail1 = print_vars_tail(own, 6);
		char *tail2 = print_vars_tail(names, NHOSTILE);
		char *tail = xasprintf("%s%s", tail1, tail2);
		int status = -1;
		char *out = run_header(script, tail, &status);
		CHECK_INT(status, 0);

		struct tpf_buf want = TPF_BUF_INIT;
		for (size_t i = 0; i < 6; i++)
			tpf_buf_addf(&want, "%s\001", hostile[(h + i) % NHOSTILE]);
		for (size_t i = 0; i < NHOSTILE; i++)
			tpf_buf_addf(&want, "%s\001", hostile[i]);
		CHECKF(!strcmp(out, want.buf), "values differ for hostile set %zu", h);
		CHECKF(access(pwned, F_OK) != 0, "a value was executed (set %zu)", h);

		/* The whole script is valid sh, whatever the values. */
		char *path = xasprintf("%s/full.sh", tmp);
		write_text(path, script);
		char *cmd = xasprintf("/bin/sh -n '%s'", path);
		CHECKF(system(cmd) == 0, "sh -n rejects the script for hostile set %zu", h);
		free(cmd);
		free(path);

		tpf_buf_release(&want);
		free(out);
		free(tail);
		free(tail1);
		free(tail2);
		free(script);
	}
	for (size_t i = 0; i < NHOSTILE; i++)
		free(keys[i]);
	tpf_kvlist_release(&env);
}

static void test_render__exported_settings(void)
{
	struct tpf_kvlist env = TPF_KVLIST_INIT;
	tpf_kvlist_set(&env, "WANDB_PROJECT", "llm");
	struct tpf_bootstrap_params p = base_params(&env);
	char *script = tpf_bootstrap_render(&p);
	int status = -1;
	/* What a child process (the job) sees: exported values only. */
	char *out = run_header(script,
			       "env | grep -E '^(TPUFORM_|WANDB_PROJECT=)' | LC_ALL=C sort\n",
			       &status);
	CHECK_INT(status, 0);
	CHECK_STR(out, "TPUFORM_COMMIT=0123456789abcdef0123456789abcdef01234567\n"
		       "TPUFORM_COORDINATOR=10.0.0.2\n"
		       "TPUFORM_FLEET=demo\n"
		       "TPUFORM_NODE=demo-a-0\n"
		       "TPUFORM_NUM_WORKERS=4\n"
		       "TPUFORM_RETRY=2\n"
		       "TPUFORM_WORKER_ID=1\n"
		       "WANDB_PROJECT=llm\n");
	free(out);
	CHECK(!strncmp(script, "#!/bin/sh\n# ", 12));
	CHECK(strstr(script, "worker 1 of node 'demo-a-0'") != NULL);
	CHECK(!strcmp(script + header_len(script), tpf_template_bootstrap_sh));
	free(script);

	/* NULL commit and coordinator: empty values, not "(null)". */
	p.commit = NULL;
	p.coordinator = NULL;
	p.setup = NULL;
	script = tpf_bootstrap_render(&p);
	static const char *const v[] = { "TPUFORM_COMMIT", "TPUFORM_COORDINATOR", "TPUFORM_SETUP" };
	char *tail = print_vars_tail(v, 3);
	out = run_header(script, tail, &status);
	CHECK_STR(out, "\001\001\001");
	free(out);
	free(tail);
	free(script);
	tpf_kvlist_release(&env);
}

static void test_render__env_cannot_override_settings(void)
{
	struct tpf_kvlist env = TPF_KVLIST_INIT;
	tpf_kvlist_set(&env, "TPUFORM_RUN", "echo hijacked");
	tpf_kvlist_set(&env, "TPUFORM_RETRY", "99");
	tpf_kvlist_set(&env, "BAD-NAME", "x");
	tpf_kvlist_set(&env, "1ABC", "x");
	tpf_kvlist_set(&env, "OK_1", "fine");
	struct tpf_bootstrap_params p = base_params(&env);
	char *script = tpf_bootstrap_render(&p);
	CHECK(strstr(script, "hijacked") == NULL);
	CHECK(strstr(script, "BAD-NAME") == NULL);
	CHECK(strstr(script, "1ABC") == NULL);
	CHECK(strstr(script, "export OK_1='fine'\n") != NULL);
	static const char *const v[] = { "TPUFORM_RUN", "TPUFORM_RETRY" };
	char *tail = print_vars_tail(v, 2);
	int status = -1;
	char *out = run_header(script, tail, &status);
	CHECK_STR(out, "python train.py --resume\0012\001");
	free(out);
	free(tail);
	free(script);
	tpf_kvlist_release(&env);
}

static void test_render__env_name_rules(void)
{
	CHECK(tpf_env_name_valid("PATH"));
	CHECK(tpf_env_name_valid("_x1"));
	CHECK(tpf_env_name_valid("a"));
	CHECK(!tpf_env_name_valid(""));
	CHECK(!tpf_env_name_valid(NULL));
	CHECK(!tpf_env_name_valid("1A"));
	CHECK(!tpf_env_name_valid("A-B"));
	CHECK(!tpf_env_name_valid("A B"));
	CHECK(!tpf_env_name_valid("A=B"));
	CHECK(!tpf_env_name_valid("\xc3\xa9"));
	CHECK(tpf_env_name_reserved("TPUFORM_X"));
	CHECK(!tpf_env_name_reserved("TPUFORMX"));
	CHECK(!tpf_env_name_reserved("tpuform_x"));
}

static void test_render__deterministic(void)
{
	struct tpf_kvlist a = TPF_KVLIST_INIT, b = TPF_KVLIST_INIT;
	tpf_kvlist_set(&a, "B", "2");
	tpf_kvlist_set(&a, "A", "1");
	tpf_kvlist_set(&a, "C", "3");
	tpf_kvlist_set(&b, "C", "3");
	tpf_kvlist_set(&b, "A", "1");
	tpf_kvlist_set(&b, "B", "2");
	struct tpf_bootstrap_params p = base_params(&a);
	char *s1 = tpf_bootstrap_render(&p);
	char *s2 = tpf_bootstrap_render(&p);
	p.env = &b;
	char *s3 = tpf_bootstrap_render(&p);
	CHECK_STR(s1, s2);
	CHECK_STR(s1, s3); /* env order does not matter */
	CHECK(strstr(s1, "export A='1'\nexport B='2'\nexport C='3'\n") != NULL);

	char *h1 = tpf_sha256_tagged(s1, strlen(s1));
	p.run = "python train.py --resume --lr 3e-4";
	char *s4 = tpf_bootstrap_render(&p);
	char *h4 = tpf_sha256_tagged(s4, strlen(s4));
	CHECK(strcmp(h1, h4) != 0);
	p.run = "python train.py --resume";
	p.secrets_hash = "sha256:01";
	char *s5 = tpf_bootstrap_render(&p);
	CHECK(strcmp(s1, s5) != 0); /* a changed secret changes the script */
	p.secrets_hash = "sha256:00";
	p.retry = 3;
	char *s6 = tpf_bootstrap_render(&p);
	CHECK(strcmp(s1, s6) != 0);

	free(h1);
	free(h4);
	free(s1);
	free(s2);
	free(s3);
	free(s4);
	free(s5);
	free(s6);
	tpf_kvlist_release(&a);
	tpf_kvlist_release(&b);
}

/* The script is its head and then the fixed body, byte for byte, so that
 * hashing the two parts in turn (tpf_sha256_tagged2) hashes the script. */
static void test_render__head_and_body(void)
{
	struct tpf_kvlist env = TPF_KVLIST_INIT;
	tpf_kvlist_set(&env, "X", "a'b\nc");
	int bad = 0;
	for (size_t h = 0; h < NHOSTILE; h++) {
		struct tpf_bootstrap_params p = base_params(&env);
		p.node = hostile[h];
		p.run = hostile[(h + 1) % NHOSTILE];
		p.nslices = (int)(h % 3);
		p.slice = 1;
		char *script = tpf_bootstrap_render(&p);
		char *head = tpf_bootstrap_render_head(&p);
		size_t hl = strlen(head);
		bad += strncmp(script, head, hl) != 0 ||
		       strcmp(script + hl, tpf_template_bootstrap_sh) != 0;
		char *whole = tpf_sha256_tagged(script, strlen(script));
		char *parts = tpf_sha256_tagged2(head, hl, tpf_template_bootstrap_sh,
						 strlen(tpf_template_bootstrap_sh));
		/* and split anywhere else, the same hash */
		size_t cut = strlen(script) / (h + 2);
		char *other = tpf_sha256_tagged2(script, cut, script + cut, strlen(script) - cut);
		bad += strcmp(whole, parts) != 0 || strcmp(whole, other) != 0;
		free(whole);
		free(parts);
		free(other);
		free(head);
		free(script);
	}
	CHECK_INT(bad, 0);
	char *empty = tpf_sha256_tagged2("", 0, "", 0);
	CHECK_STR(empty, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	free(empty);
	tpf_kvlist_release(&env);
}

static void test_render__secrets_file(void)
{
	struct tpf_kvlist sec = TPF_KVLIST_INIT;
	tpf_kvlist_set(&sec, "Z_TOKEN", "s3cr3t-zzz-'quoted'-$(touch x)");
	tpf_kvlist_set(&sec, "A_KEY", "s3cr3t-aaa\nsecond line");
	tpf_kvlist_set(&sec, "M_EMPTY", "");
	tpf_kvlist_set(&sec, "TPUFORM_RUN", "s3cr3t-hijack");
	char *file = tpf_secrets_render(&sec);
	CHECK(file[0] == '#');
	const char *a = strstr(file, "export A_KEY=");
	const char *m = strstr(file, "export M_EMPTY=");
	const char *z = strstr(file, "export Z_TOKEN=");
	CHECK(a && m && z && a < m && m < z); /* sorted by name */
	CHECK(strstr(file, "hijack") == NULL);

	char *path = xasprintf("%s/secrets.env", tmp);
	write_text(path, file);
	char *tailsh = xasprintf(". '%s'\nprintf '%%s\\001' \"$A_KEY\" \"$M_EMPTY\" \"$Z_TOKEN\"\n"
				 "env | grep -c '^Z_TOKEN='\n", path);
	char *script_path = xasprintf("%s/src.sh", tmp);
	write_text(script_path, tailsh);
	int status = -1;
	char *out = run_sh(script_path, &status);
	CHECK_INT(status, 0);
	CHECK_STR(out, "s3cr3t-aaa\nsecond line\001\001s3cr3t-zzz-'quoted'-$(touch x)\0011\n");
	free(out);

	/* The script carries only the file's hash, never a value. */
	char *h = tpf_sha256_tagged(file, strlen(file));
	struct tpf_kvlist env = TPF_KVLIST_INIT;
	struct tpf_bootstrap_params p = base_params(&env);
	p.secrets_hash = h;
	char *script = tpf_bootstrap_render(&p);
	CHECK(strstr(script, "s3cr3t") == NULL);
	CHECK(strstr(script, h) != NULL);
	free(script);
	free(h);

	struct tpf_kvlist none = TPF_KVLIST_INIT;
	char *empty = tpf_secrets_render(&none);
	CHECK(empty[0] == '#' && strchr(empty, '\n') == empty + strlen(empty) - 1);
	free(empty);

	free(script_path);
	free(tailsh);
	free(path);
	free(file);
	tpf_kvlist_release(&sec);
}

/* The template itself passes shellcheck (when installed) as POSIX sh. */
static void test_render__template_lint(void)
{
	struct tpf_kvlist env = TPF_KVLIST_INIT;
	struct tpf_bootstrap_params p = base_params(&env);
	char *script = tpf_bootstrap_render(&p);
	char *path = xasprintf("%s/lint.sh", tmp);
	write_text(path, script);
	char *cmd = xasprintf("/bin/sh -n '%s'", path);
	CHECK(system(cmd) == 0);
	free(cmd);
	if (system("command -v shellcheck >/dev/null 2>&1") == 0) {
		cmd = xasprintf("shellcheck -s sh -S warning '%s' >&2", path);
		CHECK(system(cmd) == 0);
		free(cmd);
	}
	/* An unknown verb: usage on stderr, status 2. */
	int status = -1;
	char *out = run_sh(path, &status);
	CHECK_INT(status, 2);
	free(out);
	free(path);
	free(script);
}

int main(void)
{
	tmp = unit_tmpdir();
	pwned = xasprintf("%s/pwned", tmp);
	char *q = tpf_shquote(pwned);
	char *h2 = xasprintf("$(touch %s)", q);
	char *h3 = xasprintf("`touch %s`", q);
	char *h4 = xasprintf("a; touch %s", q);
	hostile[2] = h2;
	hostile[3] = h3;
	hostile[4] = h4;

	RUN(test_render__hostile_values_arrive_intact);
	RUN(test_render__exported_settings);
	RUN(test_render__env_cannot_override_settings);
	RUN(test_render__env_name_rules);
	RUN(test_render__deterministic);
	RUN(test_render__head_and_body);
	RUN(test_render__secrets_file);
	RUN(test_render__template_lint);

	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_remove_tree(tmp, &d);
	tpf_diags_release(&d);
	free(h2);
	free(h3);
	free(h4);
	free(q);
	free(pwned);
	free(tmp);
	return unit_done();
}
