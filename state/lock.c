/*
 * The state lock: fcntl on "<state>.lock" plus Terraform's lock-info JSON
 * (internal/states/statemgr/filesystem.go, filesystem_lock_unix.go,
 * locker.go LockWithContext for the backoff).
 */
#include "state/lock.h"
#include "state/backend_priv.h"
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

json_t *tpf_lock_info_new(const char *id, const char *operation, const char *path)
{
	char created[64];
	char *w = who();
	/* Go's time.Time JSON form in UTC, at microsecond precision. */
	tpf_rfc3339_fmt(tpf_now_wall(), 6, 0, created, sizeof(created));
	/* Field order as Terraform's LockInfo struct, for people reading it. */
	json_t *o = json_object();
	json_object_set_new(o, "ID", json_string(id));
	json_object_set_new(o, "Operation", json_string(operation ? operation : ""));
	json_object_set_new(o, "Info", json_string(""));
	json_object_set_new(o, "Who", json_string(w));
	json_object_set_new(o, "Version", json_string(TPF_VERSION));
	json_object_set_new(o, "Created", json_string(created));
	json_object_set_new(o, "Path", json_string(path));
	free(w);
	return o;
}

static int write_info(const struct tpf_lock *l, const char *state_path, const char *operation,
		      struct tpf_diags *d)
{
	json_t *o = tpf_lock_info_new(l->id, operation, state_path);
	char *text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
	int err;
	if (!text)
		err = tpf_error(d, "cannot write lock info for '%s': a value is not valid UTF-8",
				state_path);
	else
		err = tpf_write_file_atomic(l->info_path, text, strlen(text), 0600, d);
	free(text);
	json_decref(o);
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

int tpf_lock_conflict(struct tpf_diags *d, const char *message, json_t *info, const char *why,
		      int remote)
{
	struct tpf_buf detail = TPF_BUF_INIT;
	tpf_buf_addf(&detail, "Error message: %s\n", message);
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
		tpf_buf_addf(&detail, "Lock Info:\n  not available: %s\n", why);
	}
	tpf_buf_adds(&detail,
		     "\n"
		     "tpuform acquires a state lock to protect the state from being written\n"
		     "by multiple users at the same time. Please resolve the issue above and try\n"
		     "again. Use -lock-timeout=30s to wait for the lock.");
	if (remote) /* a local lock dies with its holder: nothing to force */
		tpf_buf_adds(&detail, " If its holder is gone (a\n"
				      "killed runner), 'tpuform force-unlock LOCK_ID' removes it.");
	tpf_diags_add(d, TPF_SEV_ERROR, NULL, "Error acquiring the state lock", detail.buf);
	tpf_buf_release(&detail);
	return TPF_ELOCKED;
}

static json_t *read_info(const char *info_path)
{
	struct tpf_buf raw = TPF_BUF_INIT;
	struct tpf_diags ignore = TPF_DIAGS_INIT;
	json_t *info = NULL;
	if (tpf_read_file(info_path, &raw, &ignore) == 0)
		info = json_loadb(raw.buf, raw.len, 0, NULL);
	tpf_diags_release(&ignore);
	tpf_buf_release(&raw);
	return info;
}

static int locked_error(const struct tpf_lock *l, const char *state_path, struct tpf_diags *d)
{
	json_t *info = read_info(l->info_path);
	char *msg = xasprintf("state '%s' is locked by another tpuform process", state_path);
	/* The holder writes its info just after taking the lock and removes it
	 * just before letting go, so a missing file is a narrow window or a
	 * holder that is not tpuform. */
	char *why = xasprintf("the lock info file '%s' is missing or unreadable", l->info_path);
	int rc = tpf_lock_conflict(d, msg, info, why, 0);
	free(msg);
	free(why);
	json_decref(info);
	return rc;
}

double tpf_lock_next_wait(double *delay, double deadline)
{
	double left = deadline - tpf_now_mono();
	if (left <= 0)
		return -1;
	/* Never sleep past the deadline: one last try happens at it. */
	double wait = *delay < left ? *delay : left;
	*delay = *delay * 2 > BACKOFF_MAX ? BACKOFF_MAX : *delay * 2;
	return wait;
}

/* The lock's paths and id, once it is not held (fd closed). */
static void forget(struct tpf_lock *l)
{
	free(l->lock_path);
	free(l->info_path);
	l->lock_path = l->info_path = NULL;
	memset(l->id, 0, sizeof(l->id));
}

int tpf_lock_acquire(struct tpf_lock *l, const char *state_path, const char *operation,
		     double timeout, struct tpf_diags *d)
{
	double deadline = tpf_now_mono() + (timeout > 0 ? timeout : 0);
	double delay = BACKOFF_FIRST;
	int err = 0;

	l->fd = -1;
	l->backend = NULL;
	l->generation = 0;
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
		double wait = tpf_lock_next_wait(&delay, deadline);
		if (wait < 0) {
			err = locked_error(l, state_path, d);
			goto done;
		}
		tpf_sleep(wait);
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
		forget(l);
	}
	return err;
}

void tpf_lock_release(struct tpf_lock *l)
{
	if (l->backend && l->id[0])
		l->backend->ops->unlock(l->backend, l);
	l->backend = NULL;
	l->generation = 0;
	if (l->fd >= 0) {
		/* Info first: once the fd is closed another process may already
		 * hold the lock and have written its own info file. */
		if (l->info_path)
			unlink(l->info_path);
		close(l->fd);
		l->fd = -1;
	}
	forget(l);
}

int tpf_lock_force_unlock_file(const char *state_path, const char *id, struct tpf_diags *d)
{
	char *info_path = info_path_for(state_path), *lock_path = xasprintf("%s.lock", state_path);
	json_t *info = read_info(info_path);
	const char *held = json_string_value(json_object_get(info, "ID"));
	int rc = TPF_ERROR, fd = -1;
	if (!held) {
		tpf_errorx(d, NULL, "Nothing to do: no tpuform holds this state's lock.",
			   "Failed to unlock state: '%s' is not locked", state_path);
		goto done;
	}
	if (strcmp(held, id)) {
		tpf_errorx(d, NULL, "Check the ID in the \"Lock Info:\" block of the lock error.",
			   "Failed to unlock state: lock ID '%s' does not match the lock held: '%s'",
			   id, held);
		goto done;
	}
	fd = open(lock_path, O_RDWR | O_CLOEXEC);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	if (fd >= 0 && fcntl(fd, F_SETLK, &fl) < 0) {
		/* Terraform's words: the kernel holds this lock for a live process. */
		tpf_errorx(d, NULL,
			   "The local lock belongs to a running tpuform (Who in its Lock Info) and "
			   "dies with it: stop that process, or wait for it.",
			   "Local state cannot be unlocked by another process");
		goto done;
	}
	/* Nobody holds the fcntl lock: the info file was left by a holder that
	 * died, and the next command would overwrite it anyway. */
	unlink(info_path);
	rc = 0;
done:
	if (fd >= 0)
		close(fd); /* drops the fcntl lock just taken, if any */
	json_decref(info);
	free(info_path);
	free(lock_path);
	return rc;
}
