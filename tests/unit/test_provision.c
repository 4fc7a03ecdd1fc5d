/*
 * The bootstrap script end to end on this machine, the way a local worker
 * runs it (a private HOME with its own SCREENDIR), first without any
 * transport, then through tpf_provision_* with a minimal in-test
 * transport. Every screen session started here is stopped at the end and
 * the test checks that no process is left behind.
 */
#include "tests/unit/unit.h"
#include "engine/workers/provision.h"
#include "engine/workers/provision_internal.h"
#include "source/source.h"
#include "templates/render.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/shquote.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *tmp, *repo;
static char c1[41], c2[41], c3[41];

#define MAX_HOMES 16
static char *homes[MAX_HOMES];
static size_t nhomes;

#define GIT "git -c user.name=t -c user.email=t@example.com -c commit.gpgsign=false " \
	    "-c init.defaultBranch=main "

/* ---- running commands as a worker ---------------------------------------- */

static char **worker_env(const char *home)
{
	char **env = xcalloc(12, sizeof(*env));
	const char *path = getenv("PATH");
	env[0] = xasprintf("PATH=%s", path && *path ? path : "/usr/bin:/bin");
	env[1] = xasprintf("HOME=%s", home);
	env[2] = xasprintf("SCREENDIR=%s/.screen", home);
	env[3] = xasprintf("TMPDIR=%s/tmp", home);
	env[4] = xasprintf("TPUFORM_LIBTPU_LOCKFILE=%s/tmp/libtpu_lockfile", home);
	env[5] = xstrdup("LANG=C.UTF-8");
	env[6] = xstrdup("USER=tpuform");
	env[7] = xasprintf("TPUFORM_TPU_DEVICES=%s/dev/accel*", home);
	env[8] = xasprintf("TPUFORM_METADATA_DIR=%s/metadata", home);
	return env;
}

static void free_env(char **env)
{
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

/*
 * /bin/sh -c cmd in home with the worker's environment; output (stdout and
 * stderr) to out, read to EOF. Returns the exit status, or -1 when the
 * output did not reach EOF within `timeout` seconds (something kept the
 * pipe open: the process group is killed).
 */
static int run_in(const char *home, const char *cmd, struct tpf_buf *out, double timeout)
{
	int fds[2];
	char **env = worker_env(home);
	if (pipe2(fds, O_CLOEXEC) < 0)
		abort();
	pid_t pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		int null_fd = open("/dev/null", O_RDONLY);
		dup2(null_fd, 0);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		if (chdir(home) < 0)
			_exit(127);
		char *argv[] = { "sh", "-c", (char *)cmd, NULL };
		execve("/bin/sh", argv, env);
		_exit(127);
	}
	close(fds[1]);
	double deadline = tpf_now_mono() + timeout;
	int eof = 0;
	while (!eof) {
		double left = deadline - tpf_now_mono();
		if (left <= 0)
			break;
		struct pollfd p = { fds[0], POLLIN, 0 };
		if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
			continue;
		char chunk[4096];
		ssize_t n = read(fds[0], chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			eof = 1;
		else if (out)
			tpf_buf_add(out, chunk, (size_t)n);
	}
	close(fds[0]);
	int st = 0;
	if (!eof)
		kill(-pid, SIGKILL);
	waitpid(pid, &st, 0);
	free_env(env);
	if (!eof)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *home_path(const char *home, const char *rel)
{
	return xasprintf("%s/%s", home, rel);
}

static char *make_home(const char *name)
{
	char *home = xasprintf("%s/%s", tmp, name);
	char *screen = home_path(home, ".screen"), *t = home_path(home, "tmp");
	mkdir(home, 0700);
	mkdir(screen, 0700);
	mkdir(t, 0700);
	free(screen);
	free(t);
	if (nhomes < MAX_HOMES)
		homes[nhomes++] = xstrdup(home);
	return home;
}

static int exists(const char *home, const char *rel)
{
	char *p = home_path(home, rel);
	int ok = access(p, F_OK) == 0;
	free(p);
	return ok;
}

static void touch(const char *home, const char *rel)
{
	char *p = home_path(home, rel);
	int fd = open(p, O_WRONLY | O_CREAT, 0600);
	if (fd >= 0)
		close(fd);
	free(p);
}

static void rm(const char *home, const char *rel)
{
	char *p = home_path(home, rel);
	unlink(p);
	free(p);
}

static char *slurp(const char *home, const char *rel)
{
	struct tpf_buf b = TPF_BUF_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *p = home_path(home, rel);
	tpf_read_file(p, &b, &d);
	tpf_diags_release(&d);
	free(p);
	return tpf_buf_detach(&b, NULL);
}

static int count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* Write a rendered script and its secrets file into home/tpuform.
 * Returns the script's "sha256:" hash (caller frees). */
static char *install(const char *home, struct tpf_bootstrap_params *p,
		     const struct tpf_kvlist *secrets)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *sec = tpf_secrets_render(secrets);
	char *sec_hash = tpf_sha256_tagged(sec, strlen(sec));
	p->secrets_hash = sec_hash;
	char *script = tpf_bootstrap_render(p);
	p->secrets_hash = NULL;
	char *dir = home_path(home, TPF_REMOTE_DIR);
	char *sp = home_path(home, TPF_REMOTE_SCRIPT), *ep = home_path(home, TPF_REMOTE_SECRETS);
	CHECK(tpf_mkdir_p(dir, 0700, &d) == 0);
	CHECK(tpf_write_file_atomic(sp, script, strlen(script), 0700, &d) == 0);
	CHECK(tpf_write_file_atomic(ep, sec, strlen(sec), 0600, &d) == 0);
	char *hash = tpf_sha256_tagged(script, strlen(script));
	free(dir);
	free(sp);
	free(ep);
	free(script);
	free(sec);
	free(sec_hash);
	tpf_diags_release(&d);
	return hash;
}

/* sh tpuform/bootstrap.sh VERB in home; *out gets its output. */
static int verb_quiet(const char *home, const char *v, char **out)
{
	struct tpf_buf b = TPF_BUF_INIT;
	char *cmd = xasprintf("sh " TPF_REMOTE_SCRIPT " %s", v);
	int st = run_in(home, cmd, &b, 120);
	free(cmd);
	if (out)
		*out = tpf_buf_detach(&b, NULL);
	tpf_buf_release(&b);
	return st;
}

/* The same, checking that the output reached EOF in time (nothing, e.g.
 * the screen daemon, kept the pipe open). */
static int verb(const char *home, const char *v, char **out)
{
	struct tpf_buf b = TPF_BUF_INIT;
	char *cmd = xasprintf("sh " TPF_REMOTE_SCRIPT " %s", v);
	int st = run_in(home, cmd, &b, 120);
	CHECKF(st != -1, "'%s' kept its output open past the timeout: %s", v, b.buf);
	free(cmd);
	if (out)
		*out = tpf_buf_detach(&b, NULL);
	tpf_buf_release(&b);
	return st;
}

/* The value of "TPUFORM key=value" in out (first match), or NULL. For
 * multi-pair lines the value ends at a space. Caller frees. */
static char *said(const char *out, const char *key)
{
	char *pat = xasprintf("TPUFORM %s=", key);
	char *val = NULL;
	for (const char *l = out; l && *l;) {
		const char *eol = strchr(l, '\n');
		size_t len = eol ? (size_t)(eol - l) : strlen(l);
		const char *hit = NULL;
		if (!strncmp(l, "TPUFORM ", 8)) {
			char *line = xstrndup(l, len);
			char *pair = xasprintf(" %s=", key);
			char *h = strstr(line, pair);
			if (h) {
				hit = l + (h - line) + strlen(pair);
				size_t vlen = len - (size_t)(hit - l);
				if (strcmp(key, "last_log") && strcmp(key, "script")) {
					const char *sp = memchr(hit, ' ', vlen);
					if (sp)
						vlen = (size_t)(sp - hit);
				}
				val = xstrndup(hit, vlen);
			}
			free(pair);
			free(line);
			if (val)
				break;
		}
		l = eol ? eol + 1 : NULL;
	}
	free(pat);
	return val;
}

static int said_is(const char *out, const char *key, const char *want)
{
	char *v = said(out, key);
	int ok = v && !strcmp(v, want);
	if (!ok)
		printf("#   TPUFORM %s: got '%s', want '%s'\n", key, v ? v : "(none)", want);
	free(v);
	return ok;
}

/* Poll status until session=want (or timeout seconds); returns the last
 * status output (caller frees). */
static char *wait_session(const char *home, const char *want, double timeout)
{
	double deadline = tpf_now_mono() + timeout;
	char *out = NULL;
	for (;;) {
		free(out);
		out = NULL;
		verb_quiet(home, "status", &out);
		char *s = said(out, "session");
		int ok = s && !strcmp(s, want);
		free(s);
		if (ok || tpf_now_mono() > deadline)
			return out;
		tpf_sleep(0.1);
	}
}

static int wait_file(const char *home, const char *rel, double timeout)
{
	double deadline = tpf_now_mono() + timeout;
	while (!exists(home, rel)) {
		if (tpf_now_mono() > deadline)
			return 0;
		tpf_sleep(0.05);
	}
	return 1;
}

static long job_pgid(const char *home)
{
	char *s = slurp(home, "tpuform/run/job.pid");
	long v = strtol(s, NULL, 10);
	free(s);
	return v;
}

/* Has process group pg a member that is not a zombie? (Zombies linger
 * where nothing reaps orphans, e.g. a container without an init.) */
static int group_alive(long pg)
{
	if (pg <= 0 || kill((pid_t)-pg, 0) != 0)
		return 0;
	int found = 0;
	DIR *dir = opendir("/proc");
	struct dirent *e;
	while (dir && !found && (e = readdir(dir))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char *path = xasprintf("/proc/%s/stat", e->d_name);
		struct tpf_buf st = TPF_BUF_INIT;
		struct tpf_diags d = TPF_DIAGS_INIT;
		char state = 0;
		long pgrp = 0;
		if (tpf_read_file(path, &st, &d) == 0) {
			const char *rp = strrchr(st.buf, ')');
			if (rp && sscanf(rp + 1, " %c %*d %ld", &state, &pgrp) == 2)
				found = pgrp == pg && state != 'Z';
		}
		tpf_diags_release(&d);
		tpf_buf_release(&st);
		free(path);
	}
	if (dir)
		closedir(dir);
	return found;
}

static int group_gone_within(long pg, double timeout)
{
	double deadline = tpf_now_mono() + timeout;
	while (group_alive(pg)) {
		if (tpf_now_mono() > deadline)
			return 0;
		tpf_sleep(0.05);
	}
	return 1;
}

/* ---- the script without a transport ------------------------------------- */

static const char *job_run =
	"echo \"job fleet=$TPUFORM_FLEET node=$TPUFORM_NODE w=$TPUFORM_WORKER_ID "
	"n=$TPUFORM_NUM_WORKERS retry=$TPUFORM_RETRY commit=$TPUFORM_COMMIT "
	"coord=$TPUFORM_COORDINATOR\"\n"
	"echo \"env=$MYVAR secret=$MYSECRET pwd=$(pwd -P)\"\n"
	": >\"$HOME/started\"\n"
	"while [ ! -f \"$HOME/release\" ]; do sleep 0.1; done\n"
	"echo bye\n"
	"exit 7";

static struct tpf_bootstrap_params params(const struct tpf_kvlist *env)
{
	struct tpf_bootstrap_params p = {
		.fleet = "ut",
		.node = "ut-a-0",
		.worker = 0,
		.nworkers = 1,
		.retry = 0,
		.commit = NULL,
		.repo = NULL,
		.source_mode = "none",
		.setup = "echo once >>\"$HOME/setup-count\"; echo \"$MYSECRET\" >\"$HOME/setup-saw\"",
		.run = job_run,
		.env = env,
		.session = "tpuform-ut",
		.coordinator = NULL,
	};
	return p;
}

/* Run apply's write command for "d/f" (mode 600, want bytes) in dir,
 * feeding it `give` bytes of "x" on stdin: its exit status. */
static int run_write(const char *dir, size_t want, size_t give)
{
	char *cmd = tpf_prov_write_command("d/f", "600", want);
	char *q = tpf_shquote(cmd), *qd = tpf_shquote(dir);
	char *line = xasprintf("cd %s && sh -c %s", qd, q);
	FILE *p = popen(line, "w");
	for (size_t i = 0; p && i < give; i++)
		fputc('x', p);
	int st = p ? pclose(p) : -1;
	free(line);
	free(qd);
	free(q);
	free(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Count the files in dir/d (the target and any temporary one). */
static int files_in(const char *dir)
{
	char *d = xasprintf("%s/d", dir);
	DIR *h = opendir(d);
	int n = 0;
	for (struct dirent *e; h && (e = readdir(h)) != NULL;)
		n += e->d_name[0] != '.';
	if (h)
		closedir(h);
	free(d);
	return n;
}

/* apply's uploads on the event loop (engine/workers/provision_job.c): a
 * file arrives whole with its mode, or not at all: a stdin that ends
 * early (a connection lost mid-way looks so to the command) leaves
 * neither a truncated file nor a temporary one, and the old file stays. */
static void test_provision__write_command(void)
{
	char *dir = xasprintf("%s/wc", tmp);
	char *f = xasprintf("%s/d/f", dir);
	mkdir(dir, 0700);
	struct stat st;
	CHECK_INT(run_write(dir, 100, 100), 0);
	CHECK(stat(f, &st) == 0 && st.st_size == 100 && (st.st_mode & 0777) == 0600);
	char *parent = xasprintf("%s/d", dir);
	CHECK(stat(parent, &st) == 0 && (st.st_mode & 0777) == 0700);
	CHECK_INT(files_in(dir), 1);
	/* Cut short: fails, nothing placed, the old file (100 bytes) stays. */
	CHECK(run_write(dir, 200, 150) != 0);
	CHECK(stat(f, &st) == 0 && st.st_size == 100);
	CHECK_INT(files_in(dir), 1);
	/* More than announced fails too. */
	CHECK(run_write(dir, 50, 60) != 0);
	CHECK(stat(f, &st) == 0 && st.st_size == 100);
	CHECK_INT(files_in(dir), 1);
	/* Nothing at all. */
	CHECK(run_write(dir, 10, 0) != 0);
	CHECK_INT(files_in(dir), 1);
	free(parent);
	free(f);
	free(dir);
}

static void test_provision__script_lifecycle(void)
{
	char *home = make_home("w-none");
	struct tpf_kvlist env = TPF_KVLIST_INIT, sec = TPF_KVLIST_INIT;
	tpf_kvlist_set(&env, "MYVAR", "it's \"v\"");
	tpf_kvlist_set(&sec, "MYSECRET", "s3cr3t value");
	struct tpf_bootstrap_params p = params(&env);
	char *hash = install(home, &p, &sec);
	char *out = NULL;

	touch(home, "tmp/libtpu_lockfile"); /* left by a "preempted" job */
	CHECK_INT(verb(home, "start", &out), 0);
	CHECK(said_is(out, "result", "started"));
	CHECK(!exists(home, "tmp/libtpu_lockfile"));
	CHECK(strstr(out, "s3cr3t") == NULL);
	free(out);
	CHECK(wait_file(home, "started", 30));

	out = wait_session(home, "alive", 10);
	CHECK(said_is(out, "session", "alive"));
	CHECK(said_is(out, "exit_code", "-1"));
	CHECK(said_is(out, "script", hash));
	char *last = said(out, "last_log");
	CHECKF(last && strstr(last, "env=it's \"v\" secret=s3cr3t value"), "last_log: %s", last);
	free(last);
	free(out);

	/* Same script, session alive: nothing touched. */
	CHECK_INT(verb(home, "start", &out), 0);
	CHECK(said_is(out, "result", "unchanged"));
	free(out);
	char *count = slurp(home, "setup-count");
	CHECK_INT(count_lines(count), 1);
	free(count);
	char *saw = slurp(home, "setup-saw");
	CHECK_STR(saw, "s3cr3t value\n"); /* setup gets the secrets */
	free(saw);

	char *log = slurp(home, "tpuform/logs/current.log");
	CHECKF(strstr(log, "job fleet=ut node=ut-a-0 w=0 n=1 retry=0 commit= coord=\n"), "%s", log);
	char *src = home_path(home, "tpuform/src");
	char *want = xasprintf("pwd=%s\n", src);
	CHECKF(strstr(log, want) != NULL, "job runs in src: %s", log);
	free(want);
	free(src);
	free(log);
	struct stat st;
	char *cur = home_path(home, "tpuform/logs/current.log");
	CHECK(lstat(cur, &st) == 0 && S_ISLNK(st.st_mode));
	free(cur);
	char *secp = home_path(home, TPF_REMOTE_SECRETS);
	CHECK(stat(secp, &st) == 0 && (st.st_mode & 0777) == 0600);
	free(secp);

	/* The job ends: its exit status is recorded. */
	touch(home, "release");
	out = wait_session(home, "exited", 30);
	CHECK(said_is(out, "session", "exited"));
	CHECK(said_is(out, "exit_code", "7"));
	CHECK(said_is(out, "last_log", "bye"));
	free(out);
	CHECK_INT(verb(home, "logs 1", &out), 0);
	CHECK_STR(out, "bye\n");
	free(out);
	CHECK_INT(verb(home, "logs 0", &out), 0);
	CHECK(!strncmp(out, "# tpuform: node ut-a-0 worker 0 retry 0", 39));
	CHECK(count_lines(out) == 4);
	free(out);

	/* Same script again after it exited: started again, setup not rerun. */
	CHECK_INT(verb(home, "start", &out), 0);
	CHECK(said_is(out, "result", "started"));
	free(out);
	out = wait_session(home, "exited", 30);
	CHECK(said_is(out, "exit_code", "7"));
	free(out);

	/* A new retry: new script, same (commit, setup): no setup. */
	p.retry = 1;
	free(hash);
	hash = install(home, &p, &sec);
	CHECK_INT(verb(home, "start", &out), 0);
	CHECK(said_is(out, "result", "started"));
	free(out);
	out = wait_session(home, "exited", 30);
	CHECK(said_is(out, "script", hash));
	free(out);
	log = slurp(home, "tpuform/logs/current.log");
	CHECK(strstr(log, "retry=1 ") != NULL);
	free(log);
	count = slurp(home, "setup-count");
	CHECK_INT(count_lines(count), 1);
	free(count);

	/* A changed setup runs. */
	p.setup = "echo twice >>\"$HOME/setup-count\"";
	free(hash);
	hash = install(home, &p, &sec);
	CHECK_INT(verb(home, "start", &out), 0);
	free(out);
	count = slurp(home, "setup-count");
	CHECK_INT(count_lines(count), 2);
	free(count);
	free(wait_session(home, "exited", 30));

	/* The session is killed under the job: dead, not exited. The job
	 * ignores SIGHUP (as some trainers do), so it outlives the session
	 * and still holds the TPU: the next start must end it. */
	rm(home, "release");
	rm(home, "started");
	p.retry = 2;
	char *hup_run = xasprintf("trap '' HUP\n%s", job_run);
	p.run = hup_run;
	free(hash);
	hash = install(home, &p, &sec);
	CHECK_INT(verb(home, "start", &out), 0);
	free(out);
	CHECK(wait_file(home, "started", 30));
	long pg = job_pgid(home);
	CHECK(group_alive(pg));
	struct tpf_buf kb = TPF_BUF_INIT;
	CHECK(run_in(home, "screen -S tpuform-ut -X quit", &kb, 30) == 0);
	tpf_buf_release(&kb);
	out = wait_session(home, "dead", 30);
	CHECK(said_is(out, "session", "dead"));
	CHECK(said_is(out, "exit_code", "-1"));
	free(out);
	CHECK(group_alive(pg)); /* the orphaned job */

	/* restart: always a new job, the old one gone. */
	rm(home, "started");
	CHECK_INT(verb(home, "restart", &out), 0);
	CHECK(said_is(out, "result", "started"));
	free(out);
	CHECK(wait_file(home, "started", 30));
	CHECK(group_gone_within(pg, 10)); /* the orphan is gone */
	long pg1 = job_pgid(home);
	rm(home, "started");
	CHECK_INT(verb(home, "restart", &out), 0);
	CHECK(said_is(out, "result", "started"));
	free(out);
	CHECK(wait_file(home, "started", 30));
	long pg2 = job_pgid(home);
	CHECK(pg1 != pg2);
	CHECK(group_gone_within(pg1, 10));
	CHECK(group_alive(pg2));

	/* stop: the job's whole process group goes. */
	CHECK_INT(verb(home, "stop", &out), 0);
	CHECK(said_is(out, "result", "stopped"));
	free(out);
	CHECK(group_gone_within(pg2, 10));
	out = wait_session(home, "none", 5);
	CHECK(said_is(out, "session", "none"));
	free(out);

	/* A failing setup is reported with its output; no job starts. */
	p.setup = "echo boom-setup; echo to-stderr >&2; exit 3";
	free(hash);
	hash = install(home, &p, &sec);
	CHECK_INT(verb(home, "start", &out), 1);
	CHECK(said_is(out, "result", "failed"));
	CHECK(said_is(out, "step", "setup"));
	CHECK(said_is(out, "exit_code", "3"));
	CHECK(strstr(out, "boom-setup") && strstr(out, "to-stderr"));
	free(out);
	out = wait_session(home, "none", 5);
	CHECK(said_is(out, "session", "none"));
	free(out);

	/* secrets.env that is not the one rendered with the script. */
	p.setup = NULL;
	free(hash);
	hash = install(home, &p, &sec);
	char *ep = home_path(home, TPF_REMOTE_SECRETS);
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_write_file_atomic(ep, "export X='y'\n", 13, 0600, &d) == 0);
	tpf_diags_release(&d);
	free(ep);
	CHECK_INT(verb(home, "start", &out), 1);
	CHECK(said_is(out, "step", "secrets"));
	free(out);

	CHECK_INT(verb(home, "bogus", &out), 2);
	free(out);

	free(hup_run);
	free(hash);
	free(home);
	tpf_kvlist_release(&env);
	tpf_kvlist_release(&sec);
}

/* The script starts the session even when the job ends at once. */
static void test_provision__quick_job(void)
{
	char *home = make_home("w-quick");
	struct tpf_kvlist env = TPF_KVLIST_INIT, sec = TPF_KVLIST_INIT;
	struct tpf_bootstrap_params p = params(&env);
	p.setup = NULL;
	p.run = "echo quick; exit 0";
	char *hash = install(home, &p, &sec);
	char *out = NULL;
	CHECK_INT(verb(home, "start", &out), 0);
	CHECK(said_is(out, "result", "started"));
	free(out);
	out = wait_session(home, "exited", 30);
	CHECK(said_is(out, "exit_code", "0"));
	CHECK(said_is(out, "last_log", "quick"));
	free(out);
	CHECK_INT(verb(home, "logs 5", &out), 0);
	CHECK(strstr(out, "quick\n") != NULL);
	free(out);
	free(hash);
	free(home);
}

/* A screen session slower to start than 5 s (as under 4,096 emulated
 * workers on 2 cores) still starts: start waits for it up to 30 s, and
 * asks `screen -ls` every 5 s meanwhile. It failed with "screen session
 * ... did not appear" when the wait was 5 s. */
static void test_provision__slow_session(void)
{
	char *home = make_home("w-slow");
	struct tpf_kvlist env = TPF_KVLIST_INIT, sec = TPF_KVLIST_INIT;
	struct tpf_bootstrap_params p = params(&env);
	p.setup = NULL;
	p.run = "echo slow; exit 0";
	char *hash = install(home, &p, &sec);
	/* home/bin/screen: starts a session 7 s late; anything else is the
	 * real screen (the next one on PATH). */
	char *bin = home_path(home, "bin"), *shim = home_path(home, "bin/screen");
	mkdir(bin, 0700);
	FILE *fp = fopen(shim, "w");
	CHECK(fp != NULL);
	if (fp) {
		fputs("#!/bin/sh\nPATH=${PATH#*:}\n"
		      "if [ \"$1\" = -dmS ]; then\n"
		      "  (sleep 7; exec screen \"$@\") </dev/null >/dev/null 2>&1 &\n"
		      "  exit 0\nfi\nexec screen \"$@\"\n", fp);
		fclose(fp);
	}
	chmod(shim, 0700);
	struct tpf_buf b = TPF_BUF_INIT;
	int st = run_in(home, "PATH=\"$HOME/bin:$PATH\" sh " TPF_REMOTE_SCRIPT " start", &b, 60);
	CHECKF(st == 0, "start: %d %s", st, b.buf ? b.buf : "");
	CHECK(said_is(b.buf, "result", "started"));
	tpf_buf_release(&b);
	char *out = wait_session(home, "exited", 30);
	CHECK(said_is(out, "exit_code", "0"));
	free(out);
	free(shim);
	free(bin);
	free(hash);
	free(home);
}

/* Set the modification time of home/rel (following links) to `ago`
 * seconds before now. */
static void age(const char *home, const char *rel, double ago)
{
	char *p = home_path(home, rel);
	struct timespec ts[2];
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= (time_t)ago;
	ts[1] = ts[0];
	CHECKF(utimensat(AT_FDCWD, p, ts, 0) == 0, "utimensat %s", p);
	free(p);
}

/* stalled_for in status output, or -1 when absent. */
static long stalled_for(const char *out)
{
	char *v = said(out, "stalled_for");
	long n = v ? strtol(v, NULL, 10) : -1;
	free(v);
	return n;
}

/* status reports how long a running job has shown no progress: the later
 * of its log's last growth and its $TPUFORM_HEARTBEAT touch. */
/* A process holding a TPU device file open, as a stray job would: the
 * child of a fork that opens home/rel and becomes `sleep 60`. */
static pid_t hold(const char *home, const char *rel)
{
	char *path = home_path(home, rel);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			_exit(1);
		execl("/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	free(path);
	tpf_sleep(0.2); /* until the child has the file open */
	return pid;
}

/* The preflight (issue 21): a held device file fails start with the
 * holder's PID and command line; tpu_busy: kill ends the holder and starts;
 * require_tpu_devices fails a host without devices; a failing user
 * preflight command fails with its status and its last line. */
static void test_provision__preflight(void)
{
	char *home = make_home("w-preflight");
	char *dev = home_path(home, "dev");
	mkdir(dev, 0700);
	free(dev);
	touch(home, "dev/accel0");
	struct tpf_kvlist env = TPF_KVLIST_INIT, sec = TPF_KVLIST_INIT;
	struct tpf_bootstrap_params p = params(&env);
	p.setup = NULL;
	free(install(home, &p, &sec));
	pid_t holder = hold(home, "dev/accel0");
	char *out = NULL;
	CHECK_INT(verb(home, "start", &out), 1);
	CHECK(said_is(out, "result", "failed"));
	CHECK(said_is(out, "step", "preflight"));
	char *want = xasprintf("pid %d (sleep 60) holds %s/dev/accel0", (int)holder, home);
	CHECKF(strstr(out, want) != NULL, "output: %s", out);
	CHECK(strstr(out, "set tpu_busy: kill or tpu_busy: wait") != NULL);
	free(want);
	free(out);
	CHECK(!exists(home, "tpuform/run/job.pid"));

	p.tpu_busy = "kill";
	free(install(home, &p, &sec));
	CHECK_INT(verb(home, "start", &out), 0);
	CHECKF(said_is(out, "result", "started"), "output: %s", out);
	free(out);
	int st = 0;
	CHECK_INT(waitpid(holder, &st, 0), holder);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	CHECK_INT(verb(home, "stop", NULL), 0);

	rm(home, "dev/accel0");
	p.tpu_busy = NULL;
	p.require_devices = 1;
	free(install(home, &p, &sec));
	CHECK_INT(verb(home, "start", &out), 1);
	CHECK(said_is(out, "step", "preflight"));
	CHECKF(strstr(out, "no TPU device on this host") != NULL, "output: %s", out);
	free(out);

	p.require_devices = 0;
	p.preflight = "echo 'jax.device_count() is 4, expected 8'; exit 3";
	free(install(home, &p, &sec));
	CHECK_INT(verb(home, "start", &out), 1);
	CHECK(said_is(out, "step", "preflight"));
	CHECK(said_is(out, "exit_code", "3"));
	CHECKF(strstr(out, "tpuform: the preflight command exited with status 3: jax.device_count() "
			   "is 4, expected 8") != NULL,
	       "output: %s", out);
	free(out);
	free(home);
}

/* Disruptions (issue 21): a preemption notice on the (fake) metadata
 * server reaches the job as $TPUFORM_DISRUPTION and the chosen signal; the
 * checkpoint it printed is reported by status and handed to the next start
 * as TPUFORM_LAST_CHECKPOINT; a stop with a reason writes the file too. */
static void test_provision__disruption(void)
{
	char *home = make_home("w-disrupt");
	char *md = home_path(home, "metadata/instance");
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_mkdir_p(md, 0700, &d) == 0);
	free(md);
	struct tpf_kvlist env = TPF_KVLIST_INIT, sec = TPF_KVLIST_INIT;
	struct tpf_bootstrap_params p = params(&env);
	p.setup = NULL;
	p.disruption_signal = "SIGUSR1";
	p.run = "echo \"last=$TPUFORM_LAST_CHECKPOINT\" >>\"$HOME/lasts\"; "
		/* Written aside, then renamed: the test waits for "saw" to
		 * exist, and must not read it half-written. */
		"trap 'cat \"$TPUFORM_DISRUPTION\" >\"$HOME/saw.tmp\"; mv \"$HOME/saw.tmp\" "
		"\"$HOME/saw\"; exit 7' USR1; "
		"echo TPUFORM_CHECKPOINT=1200; : >\"$HOME/started\"; "
		"while :; do sleep 0.1; done";
	free(install(home, &p, &sec));
	char *out = NULL;
	CHECK_INT(verb(home, "start", &out), 0);
	free(out);
	CHECK(wait_file(home, "started", 30));
	char *mdf = home_path(home, "metadata/instance/preempted");
	CHECK(tpf_write_file_atomic(mdf, "TRUE\n", 5, 0600, &d) == 0);
	free(mdf);
	CHECK(wait_file(home, "saw", 10));
	char *saw = slurp(home, "saw");
	CHECKF(saw && strstr(saw, "reason=preempted\n") && strstr(saw, "deadline=") &&
		       strstr(saw, "signal=SIGUSR1\n"),
	       "disruption file: %s", saw ? saw : "(none)");
	free(saw);
	out = wait_session(home, "exited", 10);
	CHECK(said_is(out, "exit_code", "7"));
	CHECK(said_is(out, "checkpoint", "1200"));
	CHECK(said_is(out, "disruption", "preempted"));
	free(out);
	/* The next start on this VM gets the checkpoint. */
	rm(home, "metadata/instance/preempted");
	rm(home, "started");
	CHECK_INT(verb(home, "restart", &out), 0);
	free(out);
	CHECK(wait_file(home, "started", 30));
	char *lasts = slurp(home, "lasts");
	CHECKF(lasts && strstr(lasts, "last=\nlast=1200\n"), "lasts: %s", lasts ? lasts : "");
	free(lasts);
	/* A stop with a reason (a planned replacement) writes the file first. */
	rm(home, "saw");
	CHECK_INT(verb(home, "stop replaced", &out), 0);
	free(out);
	saw = slurp(home, "saw");
	CHECKF(saw && strstr(saw, "reason=replaced\n"), "disruption file: %s", saw ? saw : "");
	free(saw);
	tpf_diags_release(&d);
	free(home);
}

/* A worker home with the bootstrap installed for the job `run`, no setup
 * and no secrets. Caller frees. */
static char *job_home(const char *name, const char *run)
{
	char *home = make_home(name);
	struct tpf_kvlist env = TPF_KVLIST_INIT, sec = TPF_KVLIST_INIT;
	struct tpf_bootstrap_params p = params(&env);
	p.setup = NULL;
	p.run = run;
	free(install(home, &p, &sec));
	return home;
}

/* A replacement VM has no checkpoint of its own: the one tpuform's state
 * recorded (start's TPUFORM_SAVED_CHECKPOINT, engine/workers/provision.c) becomes
 * the job's TPUFORM_LAST_CHECKPOINT; once the VM's own job reported one,
 * that one wins (it is at least as new). */
static void test_provision__saved_checkpoint(void)
{
	char *home = make_home("w-saved-ck");
	struct tpf_kvlist env = TPF_KVLIST_INIT, sec = TPF_KVLIST_INIT;
	struct tpf_bootstrap_params p = params(&env);
	p.setup = NULL;
	p.run = "echo \"last=$TPUFORM_LAST_CHECKPOINT\" >>\"$HOME/lasts\"; "
		"echo TPUFORM_CHECKPOINT=1300; : >\"$HOME/started\"; "
		"while :; do sleep 0.1; done";
	free(install(home, &p, &sec));
	struct tpf_buf b = TPF_BUF_INIT;
	CHECK_INT(run_in(home, "TPUFORM_SAVED_CHECKPOINT='step 900' sh " TPF_REMOTE_SCRIPT " start",
			 &b, 120), 0);
	CHECK(wait_file(home, "started", 30));
	char *out = wait_session(home, "alive", 10);
	free(out);
	rm(home, "started");
	tpf_buf_release(&b);
	CHECK_INT(run_in(home, "TPUFORM_SAVED_CHECKPOINT='step 900' sh " TPF_REMOTE_SCRIPT
			 " restart", &b, 120), 0);
	tpf_buf_release(&b);
	CHECK(wait_file(home, "started", 30));
	char *lasts = slurp(home, "lasts");
	CHECKF(lasts && !strcmp(lasts, "last=step 900\nlast=1300\n"), "lasts: %s",
	       lasts ? lasts : "");
	free(lasts);
	CHECK_INT(verb(home, "stop", &out), 0);
	free(out);
	free(home);
}

/* The wait verb (issue 21 part 4): returns at once with the job's token
 * when it differs from the one given; blocks while it is the same, and
 * returns as soon as the job exits (its wrapper wakes the waiter), long
 * before its window ends; returns with the same token when the window ends. */
static void test_provision__wait_verb(void)
{
	char *home = make_home("w-wait");
	struct tpf_kvlist env = TPF_KVLIST_INIT, sec = TPF_KVLIST_INIT;
	struct tpf_bootstrap_params p = params(&env);
	p.setup = NULL;
	p.run = ": >\"$HOME/started\"; while [ ! -f \"$HOME/go\" ]; do sleep 0.05; done; exit 5";
	free(install(home, &p, &sec));
	char *out = NULL;
	CHECK_INT(verb(home, "wait none 5", &out), 0);
	CHECK(said_is(out, "token", "none"));
	CHECK(said_is(out, "session", "none"));
	free(out);
	CHECK_INT(verb(home, "start", &out), 0);
	free(out);
	CHECK(wait_file(home, "started", 30));
	CHECK_INT(verb(home, "wait '' 5", &out), 0);
	char *tok = said(out, "token");
	free(out);
	CHECKF(tok && strstr(tok, ":alive"), "token: %s", tok ? tok : "(none)");
	if (tok) {
		char *cmd = xasprintf("(sleep 0.5; : >\"$HOME/go\") & sh " TPF_REMOTE_SCRIPT
				      " wait '%s' 20",
				      tok);
		struct tpf_buf b = TPF_BUF_INIT;
		double t0 = tpf_now_mono();
		CHECK_INT(run_in(home, cmd, &b, 30), 0);
		double took = tpf_now_mono() - t0;
		/* Woken by the job's end, not by the window (20 s): the bound is
		 * half the window, so a loaded machine does not fail it. */
		CHECKF(took < 10.0, "wait took %.2f s after the job ended", took);
		CHECK(said_is(b.buf, "session", "exited"));
		CHECK(said_is(b.buf, "exit_code", "5"));
		char *pg = xstrndup(tok, strcspn(tok, ":"));
		char *want = xasprintf("%s:exited:5", pg);
		CHECK(said_is(b.buf, "token", want));
		/* The same token again: the window (1 s) ends, same answer. */
		free(cmd);
		cmd = xasprintf("sh " TPF_REMOTE_SCRIPT " wait '%s' 1", want);
		tpf_buf_release(&b);
		t0 = tpf_now_mono();
		CHECK_INT(run_in(home, cmd, &b, 30), 0);
		took = tpf_now_mono() - t0;
		CHECKF(took >= 0.9 && took < 10.0, "a 1 s window took %.2f s", took);
		CHECK(said_is(b.buf, "token", want));
		tpf_buf_release(&b);
		free(cmd);
		free(pg);
		free(want);
	}
	free(tok);
	CHECK_INT(verb(home, "stop", NULL), 0);
	free(home);
}

/* Processes below pid (its children, theirs...) whose command name is
 * `comm`, read from /proc/PID/stat (comm, then state, then ppid). */
static int descendants_named(long pid, const char *comm)
{
	enum { MAXP = 65536 };
	static long ppid[MAXP];
	static char name[MAXP][16];
	memset(ppid, 0, sizeof(ppid));
	DIR *dir = opendir("/proc");
	struct dirent *e;
	while (dir && (e = readdir(dir))) {
		long p = strtol(e->d_name, NULL, 10);
		if (p <= 0 || p >= MAXP)
			continue;
		char *path = xasprintf("/proc/%ld/stat", p), line[512];
		FILE *f = fopen(path, "r");
		free(path);
		if (!f)
			continue;
		size_t n = fread(line, 1, sizeof(line) - 1, f);
		fclose(f);
		line[n] = '\0';
		char *open = strchr(line, '('), *close = strrchr(line, ')');
		if (!open || !close || close < open)
			continue;
		snprintf(name[p], sizeof(name[p]), "%.*s", (int)(close - open - 1), open + 1);
		char state;
		long pp;
		if (sscanf(close + 1, " %c %ld", &state, &pp) == 2 && state != 'Z')
			ppid[p] = pp;
	}
	if (dir)
		closedir(dir);
	int found = 0;
	for (long p = 1; p < MAXP; p++) {
		long q = ppid[p];
		for (int hops = 0; q > 1 && q != pid && hops < 64; hops++)
			q = q < MAXP ? ppid[q] : 0;
		found += q == pid && !strcmp(name[p], comm);
	}
	return found;
}

/* Lines "TPUFORM token=" in home's file rel (records of a wait). */
static int records(const char *home, const char *rel)
{
	char *s = slurp(home, rel);
	int n = 0;
	for (const char *p = s; p && (p = strstr(p, "TPUFORM token=")); p++)
		n++;
	free(s);
	return n;
}

/* A long wait (wait TOKEN SECONDS BEAT, issue 28) on a job whose wrapper
 * holds its life lock: a heartbeat record every BEAT seconds, each the
 * full status (a log line written between two beats shows in the next one:
 * the repeat of an unchanged record must not hide it); no process started
 * every second meanwhile (the ticker sleeps in flock(1) on the wrapper's
 * lock, not in `sleep 1` a second: 4,096 emulated workers on one machine);
 * and the session killed with its wrapper (SIGKILL: no wake) still ends the
 * wait at once with a dead token. */
static void test_provision__wait_beat(void)
{
	char *home = make_home("w-beat");
	struct tpf_kvlist env = TPF_KVLIST_INIT, sec = TPF_KVLIST_INIT;
	struct tpf_bootstrap_params p = params(&env);
	p.setup = NULL;
	p.run = "echo first-line; : >\"$HOME/started\"; "
		"while [ ! -f \"$HOME/go\" ]; do sleep 0.1; done; echo second-line; exec sleep 1000";
	free(install(home, &p, &sec));
	char *out = NULL;
	CHECK_INT(verb(home, "start", &out), 0);
	free(out);
	CHECK(wait_file(home, "started", 30));
	CHECK_INT(verb(home, "wait '' 5", &out), 0);
	char *tok = said(out, "token");
	free(out);
	CHECKF(tok && strstr(tok, ":alive"), "token: %s", tok ? tok : "(none)");
	if (!tok)
		goto done;
	char *cmd = xasprintf("sh " TPF_REMOTE_SCRIPT " wait '%s' 5 1 >beat.out 2>&1 & echo $!", tok);
	struct tpf_buf b = TPF_BUF_INIT;
	CHECK_INT(run_in(home, cmd, &b, 30), 0);
	long pid = strtol(b.buf, NULL, 10);
	tpf_buf_release(&b);
	free(cmd);
	double deadline = tpf_now_mono() + 30;
	while (records(home, "beat.out") < 3 && tpf_now_mono() < deadline)
		tpf_sleep(0.1);
	CHECKF(records(home, "beat.out") >= 3, "3 heartbeats (1 s beat) within 30 s");
	/* 10 looks over about a second: a `sleep 1` ticker is (almost) always
	 * there. */
	int sleeps = 0;
	for (int i = 0; i < 10; i++) {
		sleeps += descendants_named(pid, "sleep");
		tpf_sleep(0.1);
	}
	CHECKF(sleeps == 0, "the wait started a `sleep` in %d of 10 looks", sleeps);
	char *s = slurp(home, "beat.out");
	CHECK(said_is(s, "session", "alive"));
	CHECKF(strstr(s, "TPUFORM last_log=first-line\n") && strstr(s, "TPUFORM stalled_for="),
	       "heartbeats: %s", s);
	free(s);
	touch(home, "go");
	deadline = tpf_now_mono() + 30;
	while ((s = slurp(home, "beat.out")) && !strstr(s, "last_log=second-line") &&
	       tpf_now_mono() < deadline) {
		free(s);
		tpf_sleep(0.1);
	}
	CHECKF(s && strstr(s, "TPUFORM last_log=second-line\n"), "the log's new line: %s", s);
	free(s);
	/* The session killed with its wrapper: nothing wakes the wait but
	 * the lock's release. */
	long pg = job_pgid(home);
	double t0 = tpf_now_mono();
	kill((pid_t)-pg, SIGKILL);
	while (kill((pid_t)pid, 0) == 0 && tpf_now_mono() - t0 < 30) {
		char *st = xasprintf("/proc/%ld/stat", pid), *txt = NULL;
		struct tpf_buf sb = TPF_BUF_INIT;
		struct tpf_diags d = TPF_DIAGS_INIT;
		if (tpf_read_file(st, &sb, &d) == 0)
			txt = strrchr(sb.buf, ')');
		int zombie = txt && txt[2] == 'Z';
		tpf_buf_release(&sb);
		tpf_diags_release(&d);
		free(st);
		if (zombie)
			break;
		tpf_sleep(0.05);
	}
	double took = tpf_now_mono() - t0;
	CHECKF(took < 15, "the wait ended %.1f s after its session was killed", took);
	s = slurp(home, "beat.out");
	char *want = xasprintf("TPUFORM token=%ld:dead\n", pg);
	CHECKF(s && strstr(s, want), "the last record names the dead session: %s", s);
	free(want);
	free(s);
done:
	free(tok);
	verb_quiet(home, "stop", NULL);
	free(home);
}

/* A new connection's long wait (an empty token with BEAT): the record at
 * once, then the wait goes on from the token it gave, so that watch's
 * attach is one exec per worker (issue 28). It ended after the record
 * before. The job's end still ends it, with the dead session's record. */
static void test_provision__wait_first_record(void)
{
	char *home = make_home("w-first");
	struct tpf_kvlist env = TPF_KVLIST_INIT, sec = TPF_KVLIST_INIT;
	struct tpf_bootstrap_params p = params(&env);
	p.setup = NULL;
	p.run = "exec sleep 1000";
	free(install(home, &p, &sec));
	char *out = NULL;
	CHECK_INT(verb(home, "start", &out), 0);
	free(out);
	struct tpf_buf b = TPF_BUF_INIT;
	CHECK_INT(run_in(home, "sh " TPF_REMOTE_SCRIPT " wait '' 5 30 >first.out 2>&1 & echo $!",
			 &b, 30), 0);
	long pid = strtol(b.buf ? b.buf : "0", NULL, 10);
	tpf_buf_release(&b);
	double deadline = tpf_now_mono() + 20;
	while (records(home, "first.out") < 1 && tpf_now_mono() < deadline)
		tpf_sleep(0.05);
	CHECKF(records(home, "first.out") == 1, "the first record at once");
	char *s = slurp(home, "first.out");
	CHECKF(s && strstr(s, ":alive\n") && said_is(s, "session", "alive"), "first: %s", s);
	free(s);
	tpf_sleep(1.5);
	CHECKF(pid > 0 && kill((pid_t)pid, 0) == 0, "the wait goes on after its first record");
	CHECK_INT(records(home, "first.out"), 1);
	long pg = job_pgid(home);
	kill((pid_t)-pg, SIGKILL);
	deadline = tpf_now_mono() + 20;
	while (records(home, "first.out") < 2 && tpf_now_mono() < deadline)
		tpf_sleep(0.05);
	s = slurp(home, "first.out");
	char *want = xasprintf("TPUFORM token=%ld:dead\n", pg);
	CHECKF(s && strstr(s, want), "the job's end ends it: %s", s);
	free(want);
	free(s);
	verb_quiet(home, "stop", NULL);
	free(home);
}

/* What status reads from the job's log (issue 28 made it fewer processes;
 * these are the answers it must keep giving): the last non-blank line of
 * the log's last 4 KiB, a progress bar's last redraw (\r), without
 * terminal escapes or control characters; the step, the last
 * TPUFORM_STEP=N of the last 64 KiB (the last on its line); the last
 * "checkpoint saved at step N" there; the checkpoint, the last whole line
 * TPUFORM_CHECKPOINT=X without control characters. */
static void test_provision__status_reads_log(void)
{
	char *home = job_home(
		"w-logread",
		"printf 'TPUFORM_STEP=3 checkpoint saved at step 2\\n'; "
		"head -c 70000 /dev/zero | tr '\\000' x; echo; "
		"printf 'TPUFORM_CHECKPOINT=gs://b/ck-8\\nTPUFORM_CHECKPOINT=bad\\001x\\n"
		"xTPUFORM_CHECKPOINT=no\\nstep TPUFORM_STEP=5 then TPUFORM_STEP=6 done\\n"
		"Checkpoint saved at step 40\\ncheckpoint saved at step 41, checkpoint saved at step 42.\\n"
		"n\\000ul \\033[1mbold\\033[0m loss\\001 0.5\\n"
		"  1%%\\r 10%%\\r\\033[2K 20%% done\\r\\n\\n   \\n'; "
		": >\"$HOME/started\"; sleep 60");
	char *out = NULL;
	CHECK_INT(verb(home, "start", &out), 0);
	free(out);
	CHECK(wait_file(home, "started", 30));
	out = wait_session(home, "alive", 10);
	CHECK(said_is(out, "last_log", " 20% done"));
	CHECK(said_is(out, "step", "6"));
	CHECK(said_is(out, "checkpoint_step", "42"));
	CHECK(said_is(out, "checkpoint", "gs://b/ck-8"));
	free(out);
	/* A log whose last lines are only a bar: the bar's last redraw; and
	 * the heartbeat's step file wins over the log. */
	char *log = home_path(home, "tpuform/logs/current.log");
	FILE *f = fopen(log, "a");
	CHECK(f != NULL);
	if (f) {
		fputs("TPUFORM_STEP=9\n\033[1mn\001ul\033[0m\0", f);
		fclose(f);
	}
	char *step = home_path(home, "tpuform/run/heartbeat.step");
	f = fopen(step, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("77\n", f);
		fclose(f);
	}
	verb_quiet(home, "status", &out);
	CHECK(said_is(out, "last_log", "nul"));
	CHECK(said_is(out, "step", "77"));
	free(out);
	verb_quiet(home, "stop", NULL);
	free(step);
	free(log);
	free(home);
}

static void test_provision__stall_clock(void)
{
	char *home = job_home("w-stall", "echo \"hb=$TPUFORM_HEARTBEAT\"; touch \"$HOME/started\"; sleep 60");
	char *out = NULL;
	CHECK_INT(verb(home, "start", &out), 0);
	free(out);
	CHECK(wait_file(home, "started", 30));
	out = wait_session(home, "alive", 10);
	long s = stalled_for(out);
	CHECKF(s >= 0 && s <= 5, "a job that just printed: stalled_for=%ld", s);
	free(out);
	char *log = slurp(home, "tpuform/logs/current.log");
	char *want = home_path(home, "tpuform/run/heartbeat");
	char *line = xasprintf("hb=%s\n", want);
	CHECKF(strstr(log, line) != NULL, "the job sees TPUFORM_HEARTBEAT=%s: %s", want, log);
	free(line);
	free(log);

	age(home, "tpuform/logs/current.log", 500);
	verb_quiet(home, "status", &out);
	s = stalled_for(out);
	CHECKF(s >= 500 && s <= 510, "log quiet for 500 s: stalled_for=%ld", s);
	free(out);
	touch(home, "tpuform/run/heartbeat");
	verb_quiet(home, "status", &out);
	s = stalled_for(out);
	CHECKF(s >= 0 && s <= 5, "heartbeat just touched: stalled_for=%ld", s);
	free(out);
	age(home, "tpuform/run/heartbeat", 100);
	verb_quiet(home, "status", &out);
	s = stalled_for(out);
	CHECKF(s >= 100 && s <= 110, "the later of the two (heartbeat 100 s): stalled_for=%ld", s);
	free(out);

	/* A restart clears the old heartbeat; a stopped job reports none. */
	CHECK_INT(verb(home, "stop", &out), 0);
	free(out);
	verb_quiet(home, "status", &out);
	CHECK_INT(stalled_for(out), -1);
	free(out);
	CHECK_INT(verb(home, "restart", &out), 0);
	free(out);
	CHECK(!exists(home, "tpuform/run/heartbeat"));
	CHECK_INT(verb(home, "stop", &out), 0);
	free(out);
	free(want);
	free(home);
}

static void git_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void git_cmd(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *cmd = xvasprintf(fmt, ap);
	va_end(ap);
	struct tpf_buf out = TPF_BUF_INIT;
	int st = run_in(tmp, cmd, &out, 60);
	CHECKF(st == 0, "%s: %s", cmd, out.buf);
	tpf_buf_release(&out);
	free(cmd);
}

static void rev(const char *what, char out[41])
{
	struct tpf_buf b = TPF_BUF_INIT;
	char *cmd = xasprintf("git -C '%s' rev-parse '%s'", repo, what);
	run_in(tmp, cmd, &b, 30);
	tpf_buf_rtrim(&b);
	snprintf(out, 41, "%s", b.buf);
	tpf_buf_release(&b);
	free(cmd);
}

static void make_repo(void)
{
	repo = xasprintf("%s/repo", tmp);
	git_cmd(GIT "init -q '%s'", repo);
	git_cmd("cd '%s' && echo one >f && " GIT "add f && " GIT "commit -qm one", repo);
	rev("HEAD", c1);
	git_cmd("cd '%s' && echo two >f && " GIT "commit -qam two", repo);
	rev("HEAD", c2);
}

/* Run source mode `mode` at `commit` and check the job saw file f. */
static void check_job_sees(const char *home, struct tpf_bootstrap_params *p, const char *want)
{
	struct tpf_kvlist sec = TPF_KVLIST_INIT;
	char *hash = install(home, p, &sec);
	char *out = NULL;
	CHECK_INT(verb(home, "start", &out), 0);
	CHECKF(said_is(out, "result", "started"), "%s", out);
	free(out);
	out = wait_session(home, "exited", 30);
	CHECK(said_is(out, "exit_code", "0"));
	free(out);
	char *log = slurp(home, "tpuform/logs/current.log");
	CHECKF(strstr(log, want) != NULL, "want '%s' in: %s", want, log);
	free(log);
	free(hash);
}

static void test_provision__source_modes(void)
{
	struct tpf_kvlist env = TPF_KVLIST_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_bootstrap_params p = params(&env);
	p.setup = NULL;
	p.run = "echo \"f=$(cat f) commit=$TPUFORM_COMMIT\"";
	p.repo = repo;

	/* present: tpuform put the checkout there. */
	char *home = make_home("w-present");
	char *src = home_path(home, TPF_REMOTE_SRC);
	CHECK(tpf_source_checkout(repo, c1, src, &d) == 0);
	p.source_mode = "present";
	p.commit = c1;
	char *want = xasprintf("f=one commit=%s", c1);
	check_job_sees(home, &p, want);
	free(want);
	/* ... and refuses a checkout at another commit. */
	p.commit = c2;
	struct tpf_kvlist sec = TPF_KVLIST_INIT;
	char *hash = install(home, &p, &sec);
	char *out = NULL;
	CHECK_INT(verb(home, "start", &out), 1);
	CHECK(said_is(out, "step", "source"));
	CHECK(strstr(out, c2) != NULL);
	free(out);
	free(hash);
	free(src);
	free(home);

	/* clone: the script fetches it (a local path stands in for a URL). */
	home = make_home("w-clone");
	p.source_mode = "clone";
	p.commit = c2;
	check_job_sees(home, &p, "f=two");
	p.commit = c1;
	check_job_sees(home, &p, "f=one");
	git_cmd("cd '%s' && echo three >f && " GIT "commit -qam three", repo);
	rev("HEAD", c3);
	p.commit = c3;
	check_job_sees(home, &p, "f=three"); /* needs a fetch */
	free(home);

	/* bundle: tpuform uploaded source.bundle. */
	home = make_home("w-bundle");
	struct tpf_buf b = TPF_BUF_INIT;
	CHECK(tpf_source_bundle(repo, c2, &b, &d) == 0);
	char *bp = home_path(home, TPF_REMOTE_BUNDLE);
	char *dir = home_path(home, TPF_REMOTE_DIR);
	CHECK(tpf_mkdir_p(dir, 0700, &d) == 0);
	CHECK(tpf_write_file_atomic(bp, b.buf, b.len, 0600, &d) == 0);
	p.source_mode = "bundle";
	p.commit = c2;
	check_job_sees(home, &p, "f=two");
	/* A newer bundle into the same checkout. */
	tpf_buf_reset(&b);
	CHECK(tpf_source_bundle(repo, c3, &b, &d) == 0);
	CHECK(tpf_write_file_atomic(bp, b.buf, b.len, 0600, &d) == 0);
	p.commit = c3;
	check_job_sees(home, &p, "f=three");
	free(bp);
	free(dir);
	free(home);

	/* bundle mode without the bundle: a clear failure, no retries. */
	home = make_home("w-nobundle");
	p.commit = c2;
	hash = install(home, &p, &sec);
	CHECK_INT(verb(home, "start", &out), 1);
	CHECK(said_is(out, "step", "source"));
	CHECK(strstr(out, "source.bundle is missing") != NULL);
	free(out);
	free(hash);
	free(home);

	CHECKF(d.n == 0, "%s", d.n ? d.items[0].summary : "");
	tpf_buf_release(&b);
	tpf_diags_release(&d);
}

/* ---- through tpf_provision_* with an in-test transport -------------------- */

struct fake {
	char *home;
	int unreachable;
	int put_sources;
};

struct tpf_conn {
	struct fake *f;
};

static int fake_connect(struct tpf_transport *t, const struct tpf_worker_ref *w,
			struct tpf_conn **out, char **host_key_out, struct tpf_diags *d)
{
	struct fake *f = t->impl;
	if (f->unreachable)
		return tpf_diags_add(d, TPF_SEV_ERROR, NULL, "cannot reach the worker", NULL),
		       TPF_EUNREACHABLE;
	*out = xcalloc(1, sizeof(**out));
	(*out)->f = f;
	if (host_key_out)
		*host_key_out = xstrdup("SHA256:fake");
	return 0;
}

static int fake_put(struct tpf_conn *c, const char *path, const void *data, size_t len,
		    mode_t mode, struct tpf_diags *d)
{
	char *full = home_path(c->f->home, path);
	char *dir = tpf_dirname(full);
	int err = tpf_mkdir_p(dir, 0700, d);
	if (!err)
		err = tpf_write_file_atomic(full, data, len, mode, d);
	free(dir);
	free(full);
	return err;
}

static int fake_exec(struct tpf_conn *c, const char *command, struct tpf_buf *out, int *status,
		     double timeout, struct tpf_diags *d)
{
	struct tpf_buf b = TPF_BUF_INIT;
	*status = run_in(c->f->home, command, &b, timeout > 0 ? timeout : 600);
	if (out)
		tpf_buf_add(out, b.buf, b.len);
	tpf_buf_release(&b);
	if (*status == -1)
		return tpf_error(d, "command timed out");
	return 0;
}

static int fake_put_source(struct tpf_conn *c, const char *r, const char *commit,
			   const char *dest, struct tpf_diags *d)
{
	c->f->put_sources++;
	char *full = home_path(c->f->home, dest);
	int err = tpf_source_checkout(r, commit, full, d);
	free(full);
	return err;
}

static void fake_close(struct tpf_conn *c)
{
	free(c);
}

static const struct tpf_transport_ops fake_ops = {
	.connect = fake_connect,
	.put = fake_put,
	.exec = fake_exec,
	.put_source = fake_put_source,
	.close = fake_close,
};

static void node_init(struct tpf_state_node *n, int nworkers)
{
	memset(n, 0, sizeof(*n));
	n->name = xstrdup("ut-a-0");
	n->id = xstrdup("id-1");
	n->recipe.workers = nworkers;
	n->nworkers = (size_t)nworkers;
	n->workers = xcalloc((size_t)nworkers, sizeof(*n->workers));
	for (int i = 0; i < nworkers; i++) {
		n->workers[i].index = i;
		n->workers[i].exit_code = -1;
	}
}

static void node_free(struct tpf_state_node *n)
{
	for (size_t i = 0; i < n->nworkers; i++) {
		struct tpf_state_worker *w = &n->workers[i];
		free(w->script_hash);
		free(w->session);
		free(w->address);
		free(w->host_key);
		free(w->provisioned_at);
	}
	free(n->workers);
	free(n->name);
	free(n->id);
	tpf_recipe_release(&n->recipe);
	tpf_job_release(&n->job);
}

static void test_provision__worker_via_transport(void)
{
	struct fake fk = { .home = make_home("w-transport") };
	struct tpf_transport t = { &fake_ops, &fk };
	struct tpf_fleet f;
	memset(&f, 0, sizeof(f));
	f.name = "ut";
	f.provider = TPF_PROVIDER_LOCAL;
	tpf_kvlist_set(&f.secrets, "MYSECRET", "sval-12345");
	struct tpf_state_node n;
	node_init(&n, 1);
	n.job.commit = xstrdup(c1);
	n.job.repo = xstrdup(repo);
	n.job.setup = xstrdup("echo setup-ran");
	n.job.run = xstrdup("echo \"f=$(cat f) s=$MYSECRET\"; sleep 60");
	struct tpf_diags d = TPF_DIAGS_INIT;
	int changed = -1;

	char *want_hash = NULL;
	char *script = tpf_provision_render(&f, &n, NULL, 0, &want_hash);
	CHECK(strstr(script, "TPUFORM_SOURCE='present'") != NULL);
	CHECK(strstr(script, "sval") == NULL);
	free(script);

	CHECK_INT(tpf_provision_worker(&t, &f, &n, NULL, 0, 0, &changed, &d), 0);
	CHECKF(d.n == 0, "%s: %s", d.n ? d.items[0].summary : "", d.n && d.items[0].detail ? d.items[0].detail : "");
	CHECK_INT(changed, 1);
	CHECK_INT(fk.put_sources, 1);
	struct tpf_state_worker *w = &n.workers[0];
	CHECK_STR(w->script_hash, want_hash);
	CHECK_STR(w->session, "tpuform-ut");
	CHECK_INT(w->job_state, TPF_JOB_STATE_ALIVE);
	CHECK_STR(w->host_key, "SHA256:fake");
	CHECK(w->provisioned_at && strlen(w->provisioned_at) == 20);
	CHECK(w->address == NULL);

	/* Already running this script: ok, not changed, source untouched. */
	changed = -1;
	CHECK_INT(tpf_provision_worker(&t, &f, &n, NULL, 0, 0, &changed, &d), 0);
	CHECK_INT(changed, 0);
	CHECK_INT(fk.put_sources, 1);

	struct tpf_worker_report r;
	CHECK_INT(tpf_provision_probe(&t, &n, NULL, 0, 0, &r, &d), 0);
	CHECK_INT(r.reachable, 1);
	CHECK_INT(r.state, TPF_JOB_STATE_ALIVE);
	CHECK_INT(r.exit_code, -1);
	CHECK_STR(r.script_hash, want_hash);
	CHECK_STR(r.host_key, "SHA256:fake");
	CHECKF(r.stalled_for >= 0 && r.stalled_for < 30, "stalled_for %g", r.stalled_for);
	tpf_worker_report_release(&r);

	/* The job has printed its line by now (or soon). */
	struct tpf_buf logs = TPF_BUF_INIT;
	double deadline = tpf_now_mono() + 30;
	while (!strstr(logs.buf, "f=one") && tpf_now_mono() < deadline) {
		tpf_buf_reset(&logs);
		CHECK_INT(tpf_provision_logs(&t, &n, NULL, 0, 0, &logs, &d), 0);
		if (!strstr(logs.buf, "f=one"))
			tpf_sleep(0.1);
	}
	CHECKF(strstr(logs.buf, "f=one s=sval-12345") != NULL, "%s", logs.buf);
	tpf_buf_release(&logs);

	/* force: restarted even though unchanged; source put again. */
	CHECK_INT(tpf_provision_worker(&t, &f, &n, NULL, 0, 1, &changed, &d), 0);
	CHECK_INT(changed, 1);
	CHECK_INT(fk.put_sources, 2);

	CHECK_INT(tpf_provision_stop(&t, &n, NULL, 0, NULL, &d), 0);
	CHECK_INT(tpf_provision_probe(&t, &n, NULL, 0, 0, &r, &d), 0);
	CHECK_INT(r.state, TPF_JOB_STATE_NONE);
	tpf_worker_report_release(&r);
	CHECKF(d.n == 0, "%s", d.n ? d.items[0].summary : "");

	/* A failing setup that prints the secret: reported, redacted. */
	free(n.job.setup);
	n.job.setup = xstrdup("echo \"token=$MYSECRET\"; exit 5");
	CHECK(tpf_provision_worker(&t, &f, &n, NULL, 0, 0, &changed, &d) == TPF_ERROR);
	CHECK_INT(w->job_state, TPF_JOB_STATE_FAILED);
	CHECK_STR(w->script_hash, want_hash); /* still the last good one */
	CHECK_INT(d.n, 1);
	if (d.n == 1) {
		const struct tpf_diag *x = &d.items[0];
		CHECK_STR(x->address, "ut-a-0/w0");
		CHECKF(strstr(x->summary, "step 'setup'") && strstr(x->summary, "exit status 5"),
		       "%s", x->summary);
		CHECKF(x->detail && strstr(x->detail, "token=***"), "%s", x->detail);
		CHECK(!strstr(x->summary, "sval") && (!x->detail || !strstr(x->detail, "sval")));
	}
	tpf_diags_release(&d);

	/* Logs of a worker with no job log: an error, nothing appended. */
	char *home2 = make_home("w-empty");
	struct fake fk2 = { .home = home2 };
	struct tpf_transport t2 = { &fake_ops, &fk2 };
	tpf_buf_adds(&logs, "keep");
	CHECK(tpf_provision_logs(&t2, &n, NULL, 0, 10, &logs, &d) < 0);
	CHECK_STR(logs.buf, "keep");
	CHECK(d.n == 1 && strstr(d.items[0].summary, "job log"));
	tpf_diags_release(&d);
	tpf_buf_release(&logs);
	/* Probe and stop of a never-provisioned worker. */
	CHECK_INT(tpf_provision_probe(&t2, &n, NULL, 0, 0, &r, &d), 0);
	CHECK_INT(r.state, TPF_JOB_STATE_NONE);
	tpf_worker_report_release(&r);
	CHECK_INT(tpf_provision_stop(&t2, &n, NULL, 0, NULL, &d), 0);
	CHECK_INT(d.n, 0);

	/* Unreachable: provisioning fails, a probe just says so. */
	fk.unreachable = 1;
	CHECK_INT(tpf_provision_worker(&t, &f, &n, NULL, 0, 0, &changed, &d), TPF_EUNREACHABLE);
	CHECK_INT(w->job_state, TPF_JOB_STATE_UNREACHABLE);
	tpf_diags_release(&d);
	CHECK_INT(tpf_provision_probe(&t, &n, NULL, 0, 0, &r, &d), 0);
	CHECK_INT(r.reachable, 0);
	CHECK_INT(r.state, TPF_JOB_STATE_UNREACHABLE);
	CHECK_INT(tpf_diags_errors(&d), 0);
	CHECK_INT(d.n, 1);
	tpf_worker_report_release(&r);
	tpf_diags_release(&d);
	CHECK(tpf_provision_stop(&t, &n, NULL, 0, NULL, &d) == TPF_EUNREACHABLE);
	CHECK_INT(tpf_diags_errors(&d), 1);
	tpf_diags_release(&d);
	fk.unreachable = 0;

	CHECK(tpf_provision_worker(&t, &f, &n, NULL, 3, 0, &changed, &d) < 0);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "worker 3"));
	tpf_diags_release(&d);

	free(want_hash);
	free(home2);
	free(fk.home);
	node_free(&n);
	tpf_kvlist_release(&f.secrets);
}

/* tpf_provision_hash(...) is the hash tpf_provision_render gives, i.e. of
 * the whole script, for every worker, settings and value that shape it. */
static int hash_agrees(const struct tpf_fleet *f, const struct tpf_state_node *n,
		       const struct tpf_live_node *live, int worker)
{
	char *want = NULL;
	char *script = tpf_provision_render(f, n, live, worker, &want);
	char *direct = tpf_sha256_tagged(script, strlen(script));
	char *got = tpf_provision_hash(f, n, live, worker);
	int ok = want && got && !strcmp(got, want) && !strcmp(got, direct);
	if (!ok)
		fprintf(stderr, "# worker %d: hash %s, script's %s\n", worker, got, want);
	free(got);
	free(direct);
	free(want);
	free(script);
	return ok;
}

static void test_provision__hash_without_script(void)
{
	struct tpf_fleet f;
	memset(&f, 0, sizeof(f));
	f.name = "hw";
	f.provider = TPF_PROVIDER_GCP;
	struct tpf_state_node n;
	node_init(&n, 4);
	n.job.run = xstrdup("python train.py --x 'y'");
	struct tpf_endpoint eps[1] = { { .ip = "10.0.0.1", .port = 22 } };
	struct tpf_live_node live;
	memset(&live, 0, sizeof(live));
	live.endpoints = eps;
	live.nendpoints = 1;
	int bad = 0;
	for (int w = 0; w < 4; w++)
		bad += !hash_agrees(&f, &n, NULL, w) + !hash_agrees(&f, &n, &live, w);
	CHECK_INT(bad, 0);

	/* Everything else the head holds: retry, source, env, secrets,
	 * setup, slices, odd names. */
	n.generation = 5;
	n.workers[2].restarts = 3;
	n.job.commit = xstrdup(c1);
	n.job.repo = xstrdup("https://example.com/r.git");
	n.job.setup = xstrdup("pip install -r requirements.txt\necho done");
	tpf_kvlist_set(&n.job.env, "B_VAR", "it's \"quoted\" $(not run)");
	tpf_kvlist_set(&n.job.env, "A_VAR", "\xc3\xbc\n\t");
	tpf_kvlist_set(&f.secrets, "TOKEN", "s3cret");
	free(n.name);
	n.name = xstrdup("odd\nname'-0");
	n.recipe.slices = 2;
	f.source.transfer = TPF_TRANSFER_BUNDLE;
	for (int w = 0; w < 4; w++)
		bad += !hash_agrees(&f, &n, &live, w);
	CHECK_INT(bad, 0);
	/* And the hashes still tell the workers and the settings apart. */
	char *h0 = tpf_provision_hash(&f, &n, &live, 0), *h1 = tpf_provision_hash(&f, &n, &live, 1);
	CHECK(strcmp(h0, h1) != 0);
	tpf_kvlist_set(&f.secrets, "TOKEN", "other");
	char *h0b = tpf_provision_hash(&f, &n, &live, 0);
	CHECK(strcmp(h0, h0b) != 0);
	free(h0);
	free(h1);
	free(h0b);
	node_free(&n);
	tpf_kvlist_release(&f.secrets);
}

static void test_provision__render_choices(void)
{
	struct tpf_fleet f;
	memset(&f, 0, sizeof(f));
	f.name = "sw";
	f.provider = TPF_PROVIDER_GCP;
	struct tpf_state_node n;
	node_init(&n, 2);
	n.generation = 2;
	n.workers[1].restarts = 1;
	n.job.run = xstrdup("python train.py");
	char *h0 = NULL, *h1 = NULL;

	/* No commit: source none. TPUFORM_RETRY = generation + restarts. */
	char *s = tpf_provision_render(&f, &n, NULL, 1, &h0);
	CHECK(strstr(s, "TPUFORM_SOURCE='none'") && strstr(s, "export TPUFORM_RETRY='3'"));
	CHECK(strstr(s, "export TPUFORM_WORKER_ID='1'") && strstr(s, "export TPUFORM_NUM_WORKERS='2'"));
	CHECK(strstr(s, "TPUFORM_SESSION='tpuform-sw'") != NULL);
	CHECK(strstr(s, "export TPUFORM_COORDINATOR=''") != NULL);
	char *again = tpf_provision_render(&f, &n, NULL, 1, &h1);
	CHECK_STR(s, again);
	CHECK_STR(h0, h1);
	char *tagged = tpf_sha256_tagged(s, strlen(s));
	CHECK_STR(h0, tagged);
	free(tagged);
	free(again);
	free(s);
	s = tpf_provision_render(&f, &n, NULL, 0, NULL);
	CHECK(strstr(s, "export TPUFORM_RETRY='2'") != NULL);
	free(s);

	/* With a commit: clone or bundle per source.transfer. */
	n.job.commit = xstrdup(c1);
	n.job.repo = xstrdup("https://example.com/r.git");
	s = tpf_provision_render(&f, &n, NULL, 0, NULL);
	CHECK(strstr(s, "TPUFORM_SOURCE='clone'") != NULL);
	free(s);
	f.source.transfer = TPF_TRANSFER_BUNDLE;
	s = tpf_provision_render(&f, &n, NULL, 0, NULL);
	CHECK(strstr(s, "TPUFORM_SOURCE='bundle'") != NULL);
	free(s);

	/* Multi-host: worker 0's internal address is the coordinator. */
	struct tpf_endpoint eps[2] = {
		{ .ip = "10.0.0.1", .external_ip = "34.1.1.1", .port = 22 },
		{ .ip = "10.0.0.2", .external_ip = "34.1.1.2", .port = 22 },
	};
	struct tpf_live_node live;
	memset(&live, 0, sizeof(live));
	live.endpoints = eps;
	live.nendpoints = 2;
	s = tpf_provision_render(&f, &n, &live, 1, NULL);
	CHECK(strstr(s, "export TPUFORM_COORDINATOR='10.0.0.1'") != NULL);
	/* Cloud TPU API: the metadata server tells JAX its peers; no pair. */
	CHECK(strstr(s, "TPU_WORKER_ID") == NULL && strstr(s, "TPU_WORKER_HOSTNAMES") == NULL);
	free(s);

	/* Compute Engine: the pair GKE sets, for JAX's GkeTpuCluster. */
	n.recipe.compute.api = TPF_API_COMPUTE;
	s = tpf_provision_render(&f, &n, &live, 1, NULL);
	CHECKF(strstr(s, ": ${TPU_WORKER_ID:='1'}\nexport TPU_WORKER_ID\n") &&
		       strstr(s, ": ${TPU_WORKER_HOSTNAMES:='10.0.0.1,10.0.0.2'}\n"),
	       "%s", s);
	CHECK(hash_agrees(&f, &n, &live, 0) && hash_agrees(&f, &n, &live, 1));
	free(s);
	/* Two slices of two: ids and hostnames per slice. */
	struct tpf_endpoint eps4[4] = {
		{ .ip = "10.0.0.1" }, { .ip = "10.0.0.2" }, { .ip = "10.0.1.1" }, { .ip = "10.0.1.2" },
	};
	live.endpoints = eps4;
	live.nendpoints = 4;
	n.recipe.slices = 2;
	n.recipe.workers = 4;
	tpf_state_node_set_workers(&n, 4);
	s = tpf_provision_render(&f, &n, &live, 2, NULL);
	CHECKF(strstr(s, ": ${TPU_WORKER_ID:='0'}") &&
		       strstr(s, ": ${TPU_WORKER_HOSTNAMES:='10.0.1.1,10.0.1.2'}") &&
		       strstr(s, "export TPUFORM_SLICE_ID='1'"),
	       "%s", s);
	free(s);
	/* Endpoints not known yet: no list rather than a wrong one. */
	s = tpf_provision_render(&f, &n, NULL, 2, NULL);
	CHECK(strstr(s, "TPU_WORKER_HOSTNAMES") == NULL);
	free(s);
	live.endpoints = eps;
	live.nendpoints = 2;
	n.recipe.slices = 0;
	n.recipe.workers = 2;
	tpf_state_node_set_workers(&n, 2);
	n.recipe.compute.api = TPF_API_TPU;

	/* A changed secret changes the hash, without appearing. */
	tpf_kvlist_set(&f.secrets, "K", "secret-one");
	free(h1);
	h1 = NULL;
	s = tpf_provision_render(&f, &n, NULL, 0, &h1);
	char *hb = NULL;
	tpf_kvlist_set(&f.secrets, "K", "secret-two");
	char *s2 = tpf_provision_render(&f, &n, NULL, 0, &hb);
	CHECK(strcmp(h1, hb) != 0);
	CHECK(!strstr(s, "secret-one") && !strstr(s2, "secret-two"));
	free(s);
	free(s2);
	free(hb);
	free(h1);
	free(h0);

	char *name = tpf_session_name("abc");
	CHECK_STR(name, "tpuform-abc");
	free(name);
	tpf_kvlist_release(&f.secrets);
	node_free(&n);
}

/* Pids (space-separated) of processes whose environment has our SCREENDIR. */
static void procs_of_tmp(struct tpf_buf *out)
{
	char *needle = xasprintf("SCREENDIR=%s/", tmp);
	size_t nlen = strlen(needle);
	DIR *dir = opendir("/proc");
	struct dirent *e;
	while (dir && (e = readdir(dir))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char *path = xasprintf("/proc/%s/environ", e->d_name);
		struct tpf_buf env = TPF_BUF_INIT;
		struct tpf_diags d = TPF_DIAGS_INIT;
		if (tpf_read_file(path, &env, &d) == 0) {
			for (size_t i = 0; i + nlen <= env.len; i++) {
				if ((i == 0 || env.buf[i - 1] == '\0') && !memcmp(env.buf + i, needle, nlen)) {
					tpf_buf_addf(out, "%s ", e->d_name);
					break;
				}
			}
		}
		tpf_diags_release(&d);
		tpf_buf_release(&env);
		free(path);
	}
	if (dir)
		closedir(dir);
	free(needle);
}

/* Stop everything started here and check no process is left. */
static void cleanup(void)
{
	for (size_t i = 0; i < nhomes; i++) {
		struct tpf_buf out = TPF_BUF_INIT;
		run_in(homes[i], "if [ -f tpuform/bootstrap.sh ]; then sh tpuform/bootstrap.sh stop; fi; "
				 "for s in $(screen -ls 2>/dev/null | awk '$1 ~ /^[0-9]+\\./ {print $1}'); do "
				 "screen -S \"$s\" -X quit; done; screen -wipe >/dev/null 2>&1; true",
		       &out, 120);
		tpf_buf_release(&out);
	}
	/* Every process started here has SCREENDIR under tmp. */
	double deadline = tpf_now_mono() + 10;
	struct tpf_buf left = TPF_BUF_INIT;
	for (;;) {
		tpf_buf_reset(&left);
		procs_of_tmp(&left);
		if (!left.len || tpf_now_mono() > deadline)
			break;
		tpf_sleep(0.2);
	}
	CHECKF(left.len == 0, "processes left behind: %s", left.buf);
	for (const char *p = left.buf; *p;) {
		kill((pid_t)strtol(p, (char **)&p, 10), SIGKILL);
		while (*p == ' ')
			p++;
	}
	tpf_buf_release(&left);
	for (size_t i = 0; i < nhomes; i++)
		free(homes[i]);
}

int main(void)
{
	tmp = unit_tmpdir();
	if (run_in(tmp, "command -v screen && command -v git", NULL, 30) != 0) {
		printf("# skipped: screen and git are needed (make deps)\n");
		unit_check(0, __FILE__, __LINE__, "screen and git installed", NULL);
		return unit_done();
	}
	make_repo();
	RUN(test_provision__script_lifecycle);
	RUN(test_provision__quick_job);
	RUN(test_provision__slow_session);
	RUN(test_provision__preflight);
	RUN(test_provision__disruption);
	RUN(test_provision__saved_checkpoint);
	RUN(test_provision__wait_verb);
	RUN(test_provision__wait_beat);
	RUN(test_provision__wait_first_record);
	RUN(test_provision__stall_clock);
	RUN(test_provision__status_reads_log);
	RUN(test_provision__source_modes);
	RUN(test_provision__worker_via_transport);
	RUN(test_provision__render_choices);
	RUN(test_provision__hash_without_script);
	RUN(test_provision__write_command);
	unit_begin("cleanup");
	cleanup();

	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_remove_tree(tmp, &d);
	tpf_diags_release(&d);
	free(repo);
	free(tmp);
	return unit_done();
}
