/*
 * State lock. fcntl locks belong to a process, so every second holder here
 * is a forked child, driven over pipes.
 */
#include "state/lock.h"
#include "tests/unit/unit.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TPF_VERSION
#define TPF_VERSION "dev"
#endif

static char *tmp;

static char *slurp(const char *path)
{
	struct tpf_buf b = TPF_BUF_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	int err = tpf_read_file(path, &b, &d);
	tpf_diags_release(&d);
	if (err) {
		tpf_buf_release(&b);
		return NULL;
	}
	return tpf_buf_detach(&b, NULL);
}

static json_t *load_info(const char *path)
{
	char *s = slurp(path);
	json_t *j = s ? json_loads(s, 0, NULL) : NULL;
	free(s);
	return j;
}

static const char *jstr(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* ---- a lock holder in another process --------------------------------- */

struct holder {
	pid_t pid;
	int cmd;     /* parent writes commands here */
	char id[37]; /* the holder's lock ID */
};

/*
 * Child: take the lock, report its ID, then wait for a command:
 * 'r' release now, 'd' release after 1 s. EOF also releases.
 */
static int start_holder(struct holder *h, const char *state, const char *op)
{
	int up[2], down[2];
	if (pipe(up) < 0 || pipe(down) < 0)
		abort();
	h->pid = fork();
	if (h->pid == 0) {
		struct tpf_lock l = TPF_LOCK_INIT;
		struct tpf_diags d = TPF_DIAGS_INIT;
		char c = 'r';
		close(up[0]);
		close(down[1]);
		if (tpf_lock_acquire(&l, state, op, 0, &d) != 0)
			_exit(2);
		if (write(up[1], l.id, sizeof(l.id)) != (ssize_t)sizeof(l.id))
			_exit(3);
		if (read(down[0], &c, 1) == 1 && c == 'd')
			tpf_sleep(1.0);
		tpf_lock_release(&l);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	h->cmd = down[1];
	ssize_t n = read(up[0], h->id, sizeof(h->id));
	close(up[0]);
	return n == (ssize_t)sizeof(h->id) ? 0 : -1;
}

/* Send a command and, for 'r', wait for the child to be gone. */
static void tell_holder(struct holder *h, char c)
{
	if (write(h->cmd, &c, 1) != 1)
		perror("write");
}

static int finish_holder(struct holder *h)
{
	int status = 0;
	close(h->cmd);
	waitpid(h->pid, &status, 0);
	return status;
}

static char *state_in(const char *name)
{
	return xasprintf("%s/%s", tmp, name);
}

static char *info_of(const char *name)
{
	return xasprintf("%s/.%s.lock.info", tmp, name);
}

/* ---- tests ------------------------------------------------------------ */

static void test_lock__acquire_writes_info_release_removes_it(void)
{
	char *state = state_in("basic.json");
	char *info = info_of("basic.json");
	char *lockf = xasprintf("%s.lock", state);
	struct tpf_lock l = TPF_LOCK_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct stat sb;

	double before = tpf_now_wall();
	CHECK_INT(tpf_lock_acquire(&l, state, "OperationTypeApply", 0, &d), 0);
	CHECK_INT(d.n, 0);
	CHECK(l.fd >= 0);
	CHECK_STR(l.lock_path, lockf);
	CHECK_STR(l.info_path, info);
	CHECK_INT(strlen(l.id), 36);
	CHECK(stat(lockf, &sb) == 0 && (sb.st_mode & 07777) == 0600);
	CHECK(stat(info, &sb) == 0 && (sb.st_mode & 07777) == 0600);

	json_t *j = load_info(info);
	CHECK(json_is_object(j));
	CHECK_STR(jstr(j, "ID"), l.id);
	CHECK_STR(jstr(j, "Operation"), "OperationTypeApply");
	CHECK_STR(jstr(j, "Info"), "");
	CHECK_STR(jstr(j, "Version"), TPF_VERSION);
	CHECK_STR(jstr(j, "Path"), state);
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	struct passwd *pw = getpwuid(geteuid());
	char *want_who = xasprintf("%s@%s", pw ? pw->pw_name : "", host);
	CHECK_STR(jstr(j, "Who"), want_who);
	free(want_who);
	/* Created: RFC 3339 UTC, and now */
	const char *created = jstr(j, "Created");
	struct tm tm = { 0 };
	const char *rest = created ? strptime(created, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	CHECKF(rest && (*rest == 'Z' || *rest == '.') && created[strlen(created) - 1] == 'Z',
	       "Created: %s", created ? created : "(none)");
	if (rest) {
		double t = (double)timegm(&tm);
		CHECKF(t >= before - 1 && t <= tpf_now_wall() + 1, "Created %s is not now", created);
	}
	json_decref(j);

	tpf_lock_release(&l);
	CHECK(access(info, F_OK) < 0);
	CHECK_INT(l.fd, -1);
	CHECK(l.lock_path == NULL && l.info_path == NULL);
	tpf_lock_release(&l); /* twice is fine */

	struct tpf_lock never = TPF_LOCK_INIT;
	tpf_lock_release(&never);
	CHECK_INT(never.fd, -1);

	/* released means free: a second process takes it at once */
	struct holder h;
	CHECK_INT(start_holder(&h, state, "OperationTypePlan"), 0);
	tell_holder(&h, 'r');
	CHECK_INT(finish_holder(&h), 0);

	tpf_diags_release(&d);
	free(lockf);
	free(info);
	free(state);
}

static void test_lock__conflict_fails_at_once_with_holder_info(void)
{
	char *state = state_in("busy.json");
	char *info = info_of("busy.json");
	struct tpf_lock l = TPF_LOCK_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct holder h;

	CHECK_INT(start_holder(&h, state, "OperationTypeApply"), 0);
	char *held_info = slurp(info);
	json_t *hj = held_info ? json_loads(held_info, 0, NULL) : NULL;

	double t0 = tpf_now_mono();
	CHECK_INT(tpf_lock_acquire(&l, state, "OperationTypePlan", 0, &d), TPF_ELOCKED);
	/* no backoff sleep with timeout 0 (the first one would be 1 s) */
	CHECKF(tpf_now_mono() - t0 < 0.9, "took %.2fs", tpf_now_mono() - t0);
	CHECK_INT(l.fd, -1);
	CHECK(l.lock_path == NULL);
	CHECK_INT(d.n, 1);
	if (d.n) {
		const char *det = d.items[0].detail ? d.items[0].detail : "";
		CHECK_STR(d.items[0].summary, "Error acquiring the state lock");
		char *line = xasprintf("Error message: state '%s' is locked by another tpuform "
				       "process\nLock Info:\n  ID:        %s\n  Path:      %s\n"
				       "  Operation: OperationTypeApply\n  Who:       %s\n"
				       "  Version:   %s\n  Created:   ",
				       state, h.id, state, jstr(hj, "Who"), TPF_VERSION);
		CHECKF(!strncmp(det, line, strlen(line)), "detail:\n%s", det);
		free(line);
		/* Go's time.Time String form of the holder's Created */
		const char *c = jstr(hj, "Created");
		char *date = xasprintf("  Created:   %.10s %.8s", c ? c : "", c ? c + 11 : "");
		CHECK(strstr(det, date) != NULL);
		free(date);
		CHECK(strstr(det, " +0000 UTC\n  Info:\n\ntpuform acquires a state lock") != NULL);
		const char *tail = "Use -lock-timeout=30s to wait for the lock.";
		CHECK(strlen(det) > strlen(tail) &&
		      !strcmp(det + strlen(det) - strlen(tail), tail));
	}
	/* the loser must not touch the holder's info file */
	char *still = slurp(info);
	CHECK_STR(still, held_info);
	free(still);

	tell_holder(&h, 'r');
	CHECK_INT(finish_holder(&h), 0);
	CHECK(access(info, F_OK) < 0);
	json_decref(hj);
	free(held_info);
	tpf_diags_release(&d);
	free(info);
	free(state);
}

static void test_lock__waits_for_a_holder_that_lets_go(void)
{
	char *state = state_in("wait.json");
	char *info = info_of("wait.json");
	struct tpf_lock l = TPF_LOCK_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct holder h;

	CHECK_INT(start_holder(&h, state, "OperationTypeApply"), 0);
	tell_holder(&h, 'd'); /* lets go after 1 s */
	double t0 = tpf_now_mono();
	CHECK_INT(tpf_lock_acquire(&l, state, "OperationTypeApply", 3, &d), 0);
	double waited = tpf_now_mono() - t0;
	CHECK_INT(d.n, 0);
	CHECKF(waited >= 0.5, "acquired after %.2fs although the holder kept it 1 s", waited);
	json_t *j = load_info(info);
	CHECK_STR(jstr(j, "ID"), l.id);
	CHECK(strcmp(l.id, h.id) != 0);
	json_decref(j);
	CHECK_INT(finish_holder(&h), 0);
	/* the old holder's release must not have removed our info file */
	CHECK(access(info, F_OK) == 0);
	tpf_lock_release(&l);
	CHECK(access(info, F_OK) < 0);
	tpf_diags_release(&d);
	free(info);
	free(state);
}

static void test_lock__gives_up_at_the_deadline_not_after(void)
{
	char *state = state_in("deadline.json");
	struct tpf_lock l = TPF_LOCK_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct holder h;

	CHECK_INT(start_holder(&h, state, "OperationTypeApply"), 0);
	double t0 = tpf_now_mono();
	CHECK_INT(tpf_lock_acquire(&l, state, "OperationTypeApply", 1.5, &d), TPF_ELOCKED);
	double waited = tpf_now_mono() - t0;
	/* tries at 0 s and 1 s; the next backoff (2 s) is cut to the deadline */
	CHECKF(waited >= 1.4, "gave up after %.2fs, before the timeout", waited);
	CHECKF(waited < 2.9, "gave up after %.2fs: slept past the deadline", waited);
	CHECK(d.n == 1 && d.items[0].detail && strstr(d.items[0].detail, h.id));
	tell_holder(&h, 'r');
	CHECK_INT(finish_holder(&h), 0);
	tpf_diags_release(&d);
	free(state);
}

static void test_lock__killed_holder_frees_the_lock(void)
{
	char *state = state_in("killed.json");
	char *info = info_of("killed.json");
	struct tpf_lock l = TPF_LOCK_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct holder h;

	CHECK_INT(start_holder(&h, state, "OperationTypeApply"), 0);
	kill(h.pid, SIGKILL);
	int status = finish_holder(&h);
	CHECK(WIFSIGNALED(status));
	/* its info file is left behind: the kernel only drops the lock */
	json_t *stale = load_info(info);
	CHECK_STR(jstr(stale, "ID"), h.id);
	json_decref(stale);

	CHECK_INT(tpf_lock_acquire(&l, state, "OperationTypeApply", 0, &d), 0);
	CHECK_INT(d.n, 0);
	json_t *j = load_info(info);
	CHECK_STR(jstr(j, "ID"), l.id); /* the stale info was replaced */
	json_decref(j);
	tpf_lock_release(&l);
	CHECK(access(info, F_OK) < 0);
	tpf_diags_release(&d);
	free(info);
	free(state);
}

static void test_lock__missing_holder_info_is_reported(void)
{
	char *state = state_in("noinfo.json");
	char *info = info_of("noinfo.json");
	struct tpf_lock l = TPF_LOCK_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct holder h;

	CHECK_INT(start_holder(&h, state, "OperationTypeApply"), 0);
	CHECK_INT(unlink(info), 0);
	CHECK_INT(tpf_lock_acquire(&l, state, "OperationTypeApply", 0, &d), TPF_ELOCKED);
	if (d.n) {
		char *want = xasprintf("Lock Info:\n  not available: the lock info file '%s' is "
				       "missing or unreadable\n", info);
		CHECK(d.items[0].detail && strstr(d.items[0].detail, want));
		free(want);
	}
	CHECK(access(info, F_OK) < 0);
	tell_holder(&h, 'r');
	CHECK_INT(finish_holder(&h), 0);
	tpf_diags_release(&d);
	free(info);
	free(state);
}

static void test_lock__unopenable_lock_file_is_an_error(void)
{
	char *state = state_in("no/such/dir/s.json");
	struct tpf_lock l = TPF_LOCK_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_lock_acquire(&l, state, "OperationTypeApply", 0, &d), TPF_ERROR);
	CHECK_INT(l.fd, -1);
	if (d.n) {
		char *want = xasprintf("cannot open lock file '%s.lock': No such file or directory",
				       state);
		CHECK_STR(d.items[0].summary, want);
		free(want);
	}
	tpf_lock_release(&l);
	tpf_diags_release(&d);
	free(state);
}

static void test_lock__relative_state_path(void)
{
	char cwd[4096];
	struct tpf_lock l = TPF_LOCK_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	if (!getcwd(cwd, sizeof(cwd)) || chdir(tmp) < 0)
		abort();
	CHECK_INT(tpf_lock_acquire(&l, "rel.json", "OperationTypeApply", 0, &d), 0);
	CHECK_STR(l.info_path, ".rel.json.lock.info");
	CHECK(access(".rel.json.lock.info", F_OK) == 0);
	tpf_lock_release(&l);
	CHECK(access(".rel.json.lock.info", F_OK) < 0);
	if (chdir(cwd) < 0)
		abort();
	tpf_diags_release(&d);
}

int main(void)
{
	tmp = unit_tmpdir();
	RUN(test_lock__acquire_writes_info_release_removes_it);
	RUN(test_lock__conflict_fails_at_once_with_holder_info);
	RUN(test_lock__waits_for_a_holder_that_lets_go);
	RUN(test_lock__gives_up_at_the_deadline_not_after);
	RUN(test_lock__killed_holder_frees_the_lock);
	RUN(test_lock__missing_holder_info_is_reported);
	RUN(test_lock__unopenable_lock_file_is_an_error);
	RUN(test_lock__relative_state_path);

	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_remove_tree(tmp, &d);
	tpf_diags_release(&d);
	free(tmp);
	return unit_done();
}
