/*
 * The state lock: fcntl on "<state>.lock" plus Terraform's lock-info JSON
 * (internal/states/statemgr/filesystem.go, filesystem_lock_unix.go,
 * locker.go LockWithContext for the backoff).
 */
#include "state/lock.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef TPF_VERSION
#define TPF_VERSION "dev" /* the Makefile defines the release version */
#endif

#define BACKOFF_FIRST 1.0 /* seconds, as LockWithContext */
#define BACKOFF_MAX 16.0

static char *info_path_for(const char *state_path)
{
	const char *slash = strrchr(state_path, '/');
	if (!slash)
		return xasprintf(".%s.lock.info", state_path);
	return xasprintf("%.*s/.%s.lock.info", (int)(slash - state_path), state_path, slash + 1);
}

/* Terraform's Who: "user@host" (user.Current, os.Hostname). */
static char *who(void)
{
	char host[256] = "";
	struct passwd pw, *res = NULL;
	char pwbuf[4096];
	const char *user = NULL;
	if (getpwuid_r(geteuid(), &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res)
		user = res->pw_name;
	if (!user)
		user = getenv("USER");
	if (gethostname(host, sizeof(host) - 1) < 0)
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	return xasprintf("%s@%s", user ? user : "", host);
}

/* Go's time.Time JSON form in UTC, at microsecond precision. */
static void created_now(char *out, size_t outlen)
{
	struct timespec ts;
	struct tm tm;
	char base[32];
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, outlen, "%s.%06ldZ", base, ts.tv_nsec / 1000);
}

static int write_info(const struct tpf_lock *l, const char *state_path, const char *operation,
		      struct tpf_diags *d)
{
	char created[64];
	char *w = who();
	created_now(created, sizeof(created));
	/* Field order as Terraform's LockInfo struct, for people reading it. */
	json_t *o = json_object();
	json_object_set_new(o, "ID", json_string(l->id));
	json_object_set_new(o, "Operation", json_string(operation ? operation : ""));
	json_object_set_new(o, "Info", json_string(""));
	json_object_set_new(o, "Who", json_string(w));
	json_object_set_new(o, "Version", json_string(TPF_VERSION));
	json_object_set_new(o, "Created", json_string(created));
	json_object_set_new(o, "Path", json_string(state_path));
	char *text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
	int err;
	if (!text)
		err = tpf_error(d, "cannot write lock info for '%s': a value is not valid UTF-8",
				state_path);
	else
		err = tpf_write_file_atomic(l->info_path, text, strlen(text), 0600, d);
	free(text);
	json_decref(o);
	free(w);
	return err;
}

static const char *info_field(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* "2026-11-21T13:45:00.123456Z" -> "2026-11-21 13:45:00.123456 +0000 UTC"
 * (Go's time.Time String, which Terraform's Lock Info prints). */
static void go_time(const char *rfc, struct tpf_buf *out)
{
	size_t n = strlen(rfc);
	if (n < 20 || rfc[10] != 'T' || rfc[n - 1] != 'Z') {
		tpf_buf_adds(out, rfc);
		return;
	}
	size_t end = n - 1;
	/* Go drops trailing zeros of the fraction, and the dot if none remain. */
	if (memchr(rfc + 19, '.', end - 19)) {
		while (end > 19 && rfc[end - 1] == '0')
			end--;
		if (rfc[end - 1] == '.')
			end--;
	}
	tpf_buf_add(out, rfc, 10);
	tpf_buf_addch(out, ' ');
	tpf_buf_add(out, rfc + 11, end - 11);
	tpf_buf_adds(out, " +0000 UTC");
}

static int locked_error(const struct tpf_lock *l, const char *state_path, struct tpf_diags *d)
{
	struct tpf_buf detail = TPF_BUF_INIT, raw = TPF_BUF_INIT;
	struct tpf_diags ignore = TPF_DIAGS_INIT;
	json_t *info = NULL;

	tpf_buf_addf(&detail, "Error message: state '%s' is locked by another tpuform process\n",
		     state_path);
	if (tpf_read_file(l->info_path, &raw, &ignore) == 0)
		info = json_loadb(raw.buf, raw.len, 0, NULL);
	if (json_is_object(info)) {
		const char *inf = info_field(info, "Info");
		tpf_buf_addf(&detail,
			     "Lock Info:\n"
			     "  ID:        %s\n"
			     "  Path:      %s\n"
			     "  Operation: %s\n"
			     "  Who:       %s\n"
			     "  Version:   %s\n"
			     "  Created:   ",
			     info_field(info, "ID"), info_field(info, "Path"),
			     info_field(info, "Operation"), info_field(info, "Who"),
			     info_field(info, "Version"));
		go_time(info_field(info, "Created"), &detail);
		tpf_buf_addf(&detail, "\n  Info:%s%s\n", *inf ? "      " : "", inf);
	} else {
		/* The holder writes its info just after taking the lock and
		 * removes it just before letting go, so this is a narrow window
		 * or a holder that is not tpuform. */
		tpf_buf_addf(&detail,
			     "Lock Info:\n"
			     "  not available: the lock info file '%s' is missing or unreadable\n",
			     l->info_path);
	}
	tpf_buf_adds(&detail,
		     "\n"
		     "tpuform acquires a state lock to protect the state from being written\n"
		     "by multiple users at the same time. Please resolve the issue above and try\n"
		     "again. Use -lock-timeout=30s to wait for the lock.");
	tpf_diags_add(d, TPF_SEV_ERROR, NULL, "Error acquiring the state lock", detail.buf);
	json_decref(info);
	tpf_diags_release(&ignore);
	tpf_buf_release(&raw);
	tpf_buf_release(&detail);
	return TPF_ELOCKED;
}

int tpf_lock_acquire(struct tpf_lock *l, const char *state_path, const char *operation,
		     double timeout, struct tpf_diags *d)
{
	double deadline = tpf_now_mono() + (timeout > 0 ? timeout : 0);
	double delay = BACKOFF_FIRST;
	int err = 0;

	l->fd = -1;
	l->lock_path = xasprintf("%s.lock", state_path);
	l->info_path = info_path_for(state_path);
	l->id[0] = '\0';

	l->fd = open(l->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (l->fd < 0) {
		err = tpf_errorx(d, NULL, "Check that the state's directory exists and is writable.",
				 "cannot open lock file '%s': %s", l->lock_path, strerror(errno));
		goto done;
	}
	for (;;) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
		if (fcntl(l->fd, F_SETLK, &fl) == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EACCES && errno != EAGAIN) {
			err = tpf_error(d, "cannot lock '%s': %s", l->lock_path, strerror(errno));
			goto done;
		}
		double left = deadline - tpf_now_mono();
		if (left <= 0) {
			err = locked_error(l, state_path, d);
			goto done;
		}
		/* Never sleep past the deadline: one last try happens at it. */
		tpf_sleep(delay < left ? delay : left);
		delay = delay * 2 > BACKOFF_MAX ? BACKOFF_MAX : delay * 2;
	}
	tpf_uuid4(l->id);
	err = write_info(l, state_path, operation, d);
done:
	if (err) {
		/* Not held: closing drops our lock if we had taken it, and the
		 * info file (if any) belongs to the holder, so it stays. */
		if (l->fd >= 0)
			close(l->fd);
		l->fd = -1;
		free(l->lock_path);
		free(l->info_path);
		l->lock_path = l->info_path = NULL;
		memset(l->id, 0, sizeof(l->id));
	}
	return err;
}

void tpf_lock_release(struct tpf_lock *l)
{
	if (l->fd >= 0) {
		/* Info first: once the fd is closed another process may already
		 * hold the lock and have written its own info file. */
		if (l->info_path)
			unlink(l->info_path);
		close(l->fd);
		l->fd = -1;
	}
	free(l->lock_path);
	free(l->info_path);
	l->lock_path = l->info_path = NULL;
	memset(l->id, 0, sizeof(l->id));
}
