/*
 * Processes of local workers: the clean environment a worker's commands
 * get, running a command with a timeout, and killing everything a worker
 * runs (what a preemption or a delete does to a VM).
 */
#include "providers/local/local_internal.h"
#include "util/shquote.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long output is still read after the shell exited (seconds). */
#define DRAIN_GRACE 0.5
/* Longest wait for a screen command while stopping a worker (seconds). */
#define SCREEN_TIMEOUT 10.0

static const char *env_or(const char *name, const char *fallback)
{
	const char *v = getenv(name);
	return v && *v ? v : fallback;
}

char **tpf_local_env(const char *root, const char *home, const char *shell)
{
	const char *user = env_or("USER", env_or("LOGNAME", "tpuform"));
	char **env = xcalloc(20, sizeof(*env));
	size_t n = 0;
	env[n++] = xasprintf("PATH=%s", env_or("PATH", "/usr/local/bin:/usr/bin:/bin"));
	env[n++] = xasprintf("HOME=%s", home);
	env[n++] = xasprintf("USER=%s", user);
	env[n++] = xasprintf("LOGNAME=%s", user);
	env[n++] = xasprintf("SHELL=%s", shell ? shell : "/bin/sh");
	env[n++] = xstrdup("LANG=C.UTF-8");
	env[n++] = xstrdup("TERM=xterm");
	char *screendir = tpf_local_screendir(home);
	env[n++] = xasprintf("SCREENDIR=%s", screendir);
	free(screendir);
	env[n++] = xasprintf("TMPDIR=%s/tmp", home);
	env[n++] = xasprintf("TPUFORM_LIBTPU_LOCKFILE=%s/tmp/libtpu_lockfile", home);
	/* Fake TPU device files: a test creates ~/dev/accelN in a worker's
	 * home and holds it open to play a stray process (the preflight). */
	env[n++] = xasprintf("TPUFORM_TPU_DEVICES=%s/dev/accel*", home);
	/* A fake metadata server: files instance/preempted and
	 * instance/maintenance-event under ~/metadata, which a test writes
	 * to play a spot preemption or a maintenance notice. */
	env[n++] = xasprintf("TPUFORM_METADATA_DIR=%s/metadata", home);
	env[n++] = xasprintf("TPUFORM_BUCKET=%s/bucket", root);
	/* Cloud Storage stand-ins (docs/storage.md): gs://B/P is the
	 * directory <root>/gcs/B/P, shared by every node as a bucket is, and
	 * a mount's path /data is <home>/mnt/data (the job finds it under
	 * $TPUFORM_MOUNT_ROOT), since a worker here cannot create /data. */
	env[n++] = xasprintf("TPUFORM_LOCAL_GCS=%s/gcs", root);
	env[n++] = xasprintf("TPUFORM_LOCAL_MOUNT_ROOT=%s/mnt", home);
	if (tpf_local_home_needs_screenrc(home))
		env[n++] = xasprintf("SCREENRC=%s/.screenrc", home);
	env[n] = NULL;
	return env;
}

void tpf_local_env_free(char **env)
{
	if (!env)
		return;
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

/*
 * The child side of fork: only async-signal-safe calls, since other
 * threads may have held locks (malloc's) at the time of the fork.
 */
static void __attribute__((noreturn))
child_exec(const char *home, char *const argv[], char *const envp[], int in_fd, int out_fd,
	   const char *chdir_msg, size_t chdir_msg_len)
{
	setpgid(0, 0);
	/* Jobs must not inherit tpuform's blocked or ignored signals
	 * (SIGPIPE ignored would change how pipelines in the job end). */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++)
		sigaction(s, &dfl, NULL);

	int null_fd = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY);
	if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0)
		_exit(127);
	/* Other threads' pipes and sockets must not leak into jobs: a
	 * screen daemon holding them would keep those pipes from EOF. */
	close_range(3, ~0U, 0);
	if (chdir(home) < 0) {
		ssize_t w = write(2, chdir_msg, chdir_msg_len);
		(void)w;
		_exit(127);
	}
	execve(argv[0], argv, envp);
	_exit(127);
}

static int exit_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 255;
}

/* Kill the command's process group and reap it; the timeout error. */
static int timed_out(pid_t pid, double timeout, const char *address, struct tpf_diags *d)
{
	kill(-pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	char secs[32];
	if (timeout < 10)
		snprintf(secs, sizeof(secs), "%gs", timeout);
	else
		tpf_fmt_duration(timeout, secs, sizeof(secs));
	return tpf_errorx(d, address,
			  "the command's process group was killed; raise the timeout if it needs longer",
			  "command on worker '%s' timed out after %s", address, secs);
}

/* A close-on-exec pipe and a child: 0 (pid 0 in the child), or TPF_ERROR
 * with a diagnostic (fds and *pid as far as they got: the caller's
 * cleanup closes and reaps). */
static int pipe_and_fork(int fds[2], pid_t *pid, const char *address, struct tpf_diags *d)
{
	if (pipe2(fds, O_CLOEXEC) < 0)
		return tpf_errorx(d, address, NULL, "cannot create a pipe: %s", strerror(errno));
	*pid = fork();
	if (*pid < 0)
		return tpf_errorx(d, address, NULL, "cannot fork: %s", strerror(errno));
	return 0;
}

int tpf_local_run(const char *home, char *const envp[], const char *command,
		  struct tpf_buf *out, int *status, double timeout, const char *address,
		  struct tpf_diags *d)
{
	char *const argv[] = { "/bin/sh", "-c", (char *)command, NULL };
	char *chdir_msg = xasprintf("tpuform: cannot enter worker home '%s'\n", home);
	/* Output is gathered here, capped (providers/transport.h), then
	 * handed to out, whole or as far as it got on an error. */
	struct tpf_buf got = TPF_BUF_INIT_MAX(TPF_TRANSPORT_OUTPUT_MAX);
	int fds[2] = { -1, -1 };
	int err = 0, wstatus = 0, exited = 0, eof = 0;
	pid_t pid = -1;
	int ignored;

	if (!status)
		status = &ignored;
	*status = -1;
	if ((err = pipe_and_fork(fds, &pid, address, d)))
		goto done;
	if (pid == 0)
		child_exec(home, argv, envp, -1, fds[1], chdir_msg, strlen(chdir_msg));
	/* Also in the parent, so that a kill(-pid) right away cannot miss. */
	setpgid(pid, pid);
	close(fds[1]);
	fds[1] = -1;

	double start = tpf_now_mono();
	double exit_time = 0;
	for (;;) {
		double now = tpf_now_mono();
		if (timeout > 0 && now - start >= timeout && !exited) {
			err = timed_out(pid, timeout, address, d);
			pid = -1;
			goto done;
		}
		if (exited && (eof || now - exit_time >= DRAIN_GRACE))
			break;
		int wait_ms = 50;
		if (eof) {
			/* Nothing more to read: wait for the exit only. */
			struct timespec ts = { 0, 20 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		} else {
			struct pollfd p = { .fd = fds[0], .events = POLLIN };
			int r = poll(&p, 1, wait_ms);
			if (r < 0 && errno != EINTR) {
				err = tpf_errorx(d, address, NULL, "cannot poll command output: %s",
						 strerror(errno));
				goto done;
			}
			if (r > 0) {
				char chunk[8192];
				ssize_t n = read(fds[0], chunk, sizeof(chunk));
				if (n > 0 && out && tpf_buf_add(&got, chunk, (size_t)n) < 0) {
					/* done: kills the process group */
					err = tpf_transport_output_too_large(address, tpf_buf_max(&got), d);
					goto done;
				} else if (n == 0) {
					eof = 1;
				} else if (n < 0 && errno != EINTR && errno != EAGAIN) {
					eof = 1;
				}
			}
		}
		if (!exited) {
			pid_t w = waitpid(pid, &wstatus, WNOHANG);
			if (w == pid) {
				exited = 1;
				exit_time = tpf_now_mono();
				pid = -1;
			} else if (w < 0 && errno != EINTR) {
				err = tpf_errorx(d, address, NULL, "cannot wait for command: %s",
						 strerror(errno));
				goto done;
			}
		}
	}
	*status = exit_status(wstatus);
done:
	if (pid > 0) {
		/* An error while the command ran: do not leave it behind. */
		kill(-pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	free(chdir_msg);
	if (out && !tpf_buf_overflowed(&got) && tpf_buf_take(out, &got) < 0 && !err)
		err = tpf_transport_output_too_large(address, tpf_buf_max(out), d);
	tpf_buf_release(&got);
	return err;
}

/* Signal the command's group when *cancel rose past *sent. */
static void forward_cancel(pid_t pid, const volatile int *cancel, int *sent)
{
	int want = cancel ? *cancel : 0;
	if (pid <= 0 || want <= *sent)
		return;
	kill(-pid, want >= 2 ? SIGKILL : SIGINT);
	*sent = want;
}

int tpf_local_run_stream(const char *home, char *const envp[], const char *command,
			 const struct tpf_exec_io *io, int *status, const char *address,
			 struct tpf_diags *d)
{
	char *const argv[] = { "/bin/sh", "-c", (char *)command, NULL };
	char *chdir_msg = xasprintf("tpuform: cannot enter worker home '%s'\n", home);
	int fds[2] = { -1, -1 };
	int err = 0, wstatus = 0, eof = 0, sent = 0;
	pid_t pid = -1;

	*status = -1;
	if ((err = pipe_and_fork(fds, &pid, address, d)))
		goto done;
	if (pid == 0) {
		/* A session of its own, as setsid(1) gives it on a VM. */
		setsid();
		child_exec(home, argv, envp, io->in_fd, fds[1], chdir_msg, strlen(chdir_msg));
	}
	setpgid(pid, pid);
	close(fds[1]);
	fds[1] = -1;
	/* The output ends when every process of the command closed it; a
	 * daemon it left behind may keep it open, so the exit ends it too
	 * (after a short grace for what is still in the pipe). */
	double exit_time = 0;
	while (!(exit_time && (eof || tpf_now_mono() - exit_time >= DRAIN_GRACE))) {
		forward_cancel(exit_time ? -1 : pid, io->cancel, &sent);
		struct pollfd p = { .fd = eof ? -1 : fds[0], .events = POLLIN };
		int r = poll(&p, 1, 50);
		if (r > 0) {
			char chunk[8192];
			ssize_t n = read(fds[0], chunk, sizeof(chunk));
			if (n > 0 && io->out)
				io->out(io->arg, chunk, (size_t)n);
			else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
				eof = 1;
		}
		if (!exit_time && waitpid(pid, &wstatus, WNOHANG) == pid)
			exit_time = tpf_now_mono();
	}
	*status = exit_status(wstatus);
done:
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	free(chdir_msg);
	return err;
}

/* The process's initial environment ("K=V\0" entries) into env; 0, or -1
 * when it cannot be read (gone, another user's). */
static int read_environ(pid_t pid, struct tpf_buf *env)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char chunk[8192];
	ssize_t n;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		tpf_buf_add(env, chunk, (size_t)n);
	close(fd);
	tpf_buf_addch(env, '\0'); /* the last entry ends even when cut short */
	return 0;
}

/* The value of `key` ("HOME=") in an environment read by read_environ. */
static const char *environ_get(const struct tpf_buf *env, const char *key)
{
	size_t klen = strlen(key);
	for (size_t off = 0; off < env->len;) {
		const char *entry = env->buf + off;
		if (!strncmp(entry, key, klen))
			return entry + klen;
		off += strnlen(entry, env->len - off) + 1;
	}
	return NULL;
}

/* 1 if the process's initial environment holds one of the entries. */
static int proc_env_has(pid_t pid, const char *a, const char *b)
{
	struct tpf_buf env = TPF_BUF_INIT;
	int found = 0;
	if (read_environ(pid, &env) == 0) {
		for (size_t off = 0; off < env.len && !found;) {
			const char *entry = env.buf + off;
			found = !strcmp(entry, a) || !strcmp(entry, b);
			off += strnlen(entry, env.len - off) + 1;
		}
	}
	tpf_buf_release(&env);
	return found;
}

/* The worker home a SCREENDIR value stands for: <home>/.screen itself, or
 * a short link to it. Caller frees; NULL when it is neither. */
static char *home_of_screendir(const char *screendir)
{
	char target[4096];
	const char *path = screendir;
	if (!strncmp(screendir, TPF_LOCAL_LINK_PREFIX, strlen(TPF_LOCAL_LINK_PREFIX))) {
		ssize_t n = readlink(screendir, target, sizeof(target) - 1);
		if (n < 0)
			return NULL;
		target[n] = '\0';
		path = target;
	}
	size_t len = strlen(path);
	if (len < 9 || strcmp(path + len - 8, "/.screen"))
		return NULL;
	return xstrndup(path, len - 8);
}

void tpf_local_running_homes(const char *root, struct tpf_local_homes *out)
{
	DIR *dir = opendir("/proc");
	if (!dir)
		return;
	pid_t self = getpid();
	struct tpf_buf env = TPF_BUF_INIT;
	struct dirent *e;
	while ((e = readdir(dir))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
		tpf_buf_reset(&env);
		if (pid <= 1 || pid == self || read_environ(pid, &env) < 0)
			continue;
		const char *home = environ_get(&env, "HOME=");
		const char *screendir = environ_get(&env, "SCREENDIR=");
		char *node = home ? tpf_local_home_node(root, home) : NULL;
		if (node)
			tpf_local_homes_add(out, home);
		free(node);
		char *sd_home = screendir ? home_of_screendir(screendir) : NULL;
		node = sd_home ? tpf_local_home_node(root, sd_home) : NULL;
		if (node)
			tpf_local_homes_add(out, sd_home);
		free(node);
		free(sd_home);
	}
	closedir(dir);
	tpf_buf_release(&env);
}

/*
 * One pass over /proc: stop then kill every process of the worker.
 * Returns how many were found. SIGSTOP first, so that a process cannot
 * fork a child this pass misses after its siblings were killed.
 */
static size_t kill_marked(const char *home_entry, const char *screen_entry)
{
	DIR *dir = opendir("/proc");
	if (!dir)
		return 0;
	pid_t self = getpid();
	pid_t *pids = NULL;
	size_t n = 0, alloc = 0;
	struct dirent *e;
	while ((e = readdir(dir))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
		if (pid <= 1 || pid == self)
			continue;
		if (!proc_env_has(pid, home_entry, screen_entry))
			continue;
		XGROW(pids, n + 1, alloc);
		pids[n++] = pid;
		kill(pid, SIGSTOP);
	}
	closedir(dir);
	for (size_t i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	free(pids);
	return n;
}

/* Kill the process groups the bootstrap recorded, if they are still ours. */
static void kill_recorded_groups(const char *home, const char *home_entry,
				 const char *screen_entry)
{
	char *rundir = xasprintf("%s/tpuform/run", home);
	DIR *dir = opendir(rundir);
	if (!dir)
		goto done;
	struct dirent *e;
	while ((e = readdir(dir))) {
		size_t len = strlen(e->d_name);
		if (len < 5 || strcmp(e->d_name + len - 4, ".pid"))
			continue;
		char *path = xasprintf("%s/%s", rundir, e->d_name);
		char text[64] = "";
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		free(path);
		if (fd < 0)
			continue;
		ssize_t got = read(fd, text, sizeof(text) - 1);
		close(fd);
		if (got <= 0)
			continue;
		text[got] = '\0';
		long pgid = strtol(text, NULL, 10);
		/* A stale file may name a recycled pid: only a process that
		 * still carries this worker's environment is killed. */
		if (pgid <= 1 || !proc_env_has((pid_t)pgid, home_entry, screen_entry))
			continue;
		if (kill(-(pid_t)pgid, SIGKILL) < 0)
			kill((pid_t)pgid, SIGKILL);
	}
	closedir(dir);
done:
	free(rundir);
}

/* Session ids ("pid.name") in `screen -ls` output. */
static char **screen_sessions(const char *text, size_t *n_out)
{
	char **ids = NULL;
	size_t n = 0, alloc = 0;
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len > 1 && line[0] == '\t' && isdigit((unsigned char)line[1])) {
			size_t k = 1;
			while (k < len && line[k] != '\t' && line[k] != ' ')
				k++;
			if (memchr(line + 1, '.', k - 1)) {
				XGROW(ids, n + 1, alloc);
				ids[n++] = xstrndup(line + 1, k - 1);
			}
		}
		line = end ? end + 1 : NULL;
	}
	*n_out = n;
	return ids;
}

int tpf_local_kill_strays(const char *home, const char *address, size_t *killed,
			  struct tpf_diags *d)
{
	char *home_entry = xasprintf("HOME=%s", home);
	char *screendir = tpf_local_screendir(home);
	char *screen_entry = xasprintf("SCREENDIR=%s", screendir);
	double start = tpf_now_mono();
	size_t found = 0, n;
	int err = 0;
	while ((n = kill_marked(home_entry, screen_entry)) > 0) {
		found = found > n ? found : n;
		if (tpf_now_mono() - start > 10) {
			err = tpf_errorx(d, address, "see which processes are left with: ps -eo pid,stat,args",
					 "processes of worker '%s' survived SIGKILL for 10s", address);
			break;
		}
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (killed)
		*killed = found;
	free(home_entry);
	free(screen_entry);
	free(screendir);
	return err;
}

int tpf_local_kill_worker(const char *root, const char *home, const char *address,
			  struct tpf_diags *d)
{
	char *home_entry = xasprintf("HOME=%s", home);
	char *screendir = tpf_local_screendir(home);
	char *screen_entry = xasprintf("SCREENDIR=%s", screendir);
	char **env = tpf_local_env(root, home, NULL);
	struct tpf_buf out = TPF_BUF_INIT;
	struct tpf_diags quiet = TPF_DIAGS_INIT;
	char **ids = NULL;
	size_t nids = 0;
	int status, err = 0;

	if (access(home, F_OK) < 0) {
		/* Removed behind our back: what it ran may still run. */
		err = tpf_local_kill_strays(home, address, NULL, d);
		goto done;
	}
	kill_recorded_groups(home, home_entry, screen_entry);

	/* Quit sessions through screen itself, so it removes its sockets. A
	 * failure here is not fatal: the sweep below kills what is left. */
	if (tpf_local_run(home, env, "screen -ls", &out, &status, SCREEN_TIMEOUT, address,
			  &quiet) == 0)
		ids = screen_sessions(out.buf, &nids);
	for (size_t i = 0; i < nids; i++) {
		char *q = tpf_shquote(ids[i]);
		char *cmd = xasprintf("screen -S %s -X quit", q);
		tpf_local_run(home, env, cmd, NULL, &status, SCREEN_TIMEOUT, address, &quiet);
		free(cmd);
		free(q);
	}

	err = tpf_local_kill_strays(home, address, NULL, d);
	if (err)
		goto done;
	/* Sessions killed above leave dead sockets behind. */
	tpf_local_run(home, env, "screen -wipe", NULL, &status, SCREEN_TIMEOUT, address, &quiet);
done:
	for (size_t i = 0; i < nids; i++)
		free(ids[i]);
	free(ids);
	tpf_diags_release(&quiet);
	tpf_buf_release(&out);
	tpf_local_env_free(env);
	free(home_entry);
	free(screen_entry);
	free(screendir);
	return err;
}
