/*
 * The local transport's chore ops (providers/transport.h): files, a
 * streaming exec and port forwards for a worker that is a directory on
 * this machine. A relative path is relative to the worker's home, as
 * SFTP's is to the login directory.
 */
#include "providers/local/local_internal.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* The path on this machine (caller frees), or NULL with a diagnostic. */
static char *full_path(struct tpf_conn *c, const char *path, struct tpf_diags *d)
{
	if (tpf_remote_file_path_check(path, c->address, d) || tpf_local_still_reachable(c, d))
		return NULL;
	return path[0] == '/' ? xstrdup(path) : xasprintf("%s/%s", c->home, path);
}

static int io_error(struct tpf_conn *c, const char *doing, const char *path, int e,
		    struct tpf_diags *d)
{
	return tpf_errorx(d, c->address, NULL, "cannot %s '%s' on worker '%s': %s", doing, path,
			  c->address, strerror(e));
}

int tpf_local_file_stat(struct tpf_conn *c, const char *path, struct tpf_remote_stat *st,
			struct tpf_diags *d)
{
	char *full = full_path(c, path, d);
	if (!full)
		return TPF_ERROR;
	struct stat s;
	int err = 0;
	memset(st, 0, sizeof(*st));
	if (stat(full, &s) < 0)
		err = errno == ENOENT || errno == ENOTDIR ? TPF_ENOTFOUND
							  : io_error(c, "look at", path, errno, d);
	else {
		st->is_dir = S_ISDIR(s.st_mode);
		st->is_reg = S_ISREG(s.st_mode);
		st->mode = s.st_mode & 07777;
		st->size = (unsigned long long)s.st_size;
	}
	free(full);
	return err;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int tpf_local_file_list(struct tpf_conn *c, const char *path, char ***names, size_t *n,
			struct tpf_diags *d)
{
	*names = NULL;
	*n = 0;
	char *full = full_path(c, path, d);
	if (!full)
		return TPF_ERROR;
	DIR *dir = opendir(full);
	free(full);
	if (!dir)
		return io_error(c, "list", path, errno, d);
	size_t alloc = 0;
	struct dirent *e;
	while ((e = readdir(dir))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		XGROW(*names, *n + 1, alloc);
		(*names)[(*n)++] = xstrdup(e->d_name);
	}
	closedir(dir);
	if (*n)
		qsort(*names, *n, sizeof(**names), cmp_names);
	return 0;
}

int tpf_local_file_mkdir(struct tpf_conn *c, const char *path, mode_t mode, struct tpf_diags *d)
{
	char *full = full_path(c, path, d);
	if (!full)
		return TPF_ERROR;
	struct stat s;
	int err = 0;
	if (mkdir(full, mode) < 0 && !(errno == EEXIST && !stat(full, &s) && S_ISDIR(s.st_mode)))
		err = io_error(c, "create the directory", path, errno == EEXIST ? ENOTDIR : errno, d);
	free(full);
	return err;
}

/* Copy in to out; 0, or the errno of the side that failed (*reading says
 * which). */
static int copy_fd(int in, int out, tpf_progress_fn progress, void *arg, int *reading)
{
	char buf[65536];
	unsigned long long total = 0;
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		*reading = 1;
		if (n < 0)
			return errno;
		if (n == 0)
			return 0;
		*reading = 0;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return errno;
			off += w;
		}
		total += (unsigned long long)n;
		if (progress)
			progress(arg, total);
	}
}

int tpf_local_file_send(struct tpf_conn *c, int fd, const char *path, mode_t mode,
			tpf_progress_fn progress, void *arg, struct tpf_diags *d)
{
	char *full = full_path(c, path, d);
	if (!full)
		return TPF_ERROR;
	char *tmp = xasprintf("%s.tpuform-tmp-%ld", full, (long)getpid());
	int err = 0, reading = 0;
	int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode & 07777);
	if (out < 0) {
		err = io_error(c, "create", path, errno, d);
		goto done;
	}
	int e = copy_fd(fd, out, progress, arg, &reading);
	if (!e && (fchmod(out, mode & 07777) < 0 || fsync(out) < 0))
		e = errno;
	if (close(out) < 0 && !e)
		e = errno;
	if (!e && rename(tmp, full) < 0)
		e = errno;
	if (e) {
		unlink(tmp);
		err = reading ? tpf_errorx(d, c->address, NULL, "cannot read the file to copy to '%s': %s",
					   path, strerror(e))
			      : io_error(c, "write", path, e, d);
	}
done:
	free(tmp);
	free(full);
	return err;
}

int tpf_local_file_recv(struct tpf_conn *c, const char *path, int fd, tpf_progress_fn progress,
			void *arg, struct tpf_diags *d)
{
	char *full = full_path(c, path, d);
	if (!full)
		return TPF_ERROR;
	int err = 0, reading = 0;
	int in = open(full, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		err = io_error(c, "read", path, errno, d);
	else {
		int e = copy_fd(in, fd, progress, arg, &reading);
		if (e)
			err = reading ? io_error(c, "read", path, e, d)
				      : tpf_errorx(d, c->address, NULL,
						   "cannot write the copy of '%s' of worker '%s': %s",
						   path, c->address, strerror(e));
		close(in);
	}
	free(full);
	return err;
}

int tpf_local_exec_stream(struct tpf_conn *c, const char *command, const struct tpf_exec_io *io,
			  int *status, struct tpf_diags *d)
{
	int err = tpf_local_still_reachable(c, d);
	if (err < 0)
		return err;
	return tpf_local_run_stream(c->home, c->env, command, io, status, c->address, d);
}

int tpf_local_ssh_info(struct tpf_conn *c, struct tpf_ssh_info *info, struct tpf_diags *d)
{
	memset(info, 0, sizeof(*info));
	return tpf_errorx(d, c->address, "use 'tpuform ssh NODE' for a shell on a local worker",
			  "worker '%s' is a directory of the local provider, not an SSH host",
			  c->address);
}

/* ---- port forwards: the worker is this machine --------------------------- */

#define MAX_PAIRS 64

struct pair {
	int a, b; /* accepted client, connection to the target */
};

static int connect_to(const char *host, int port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *r;
	char ps[16];
	snprintf(ps, sizeof(ps), "%d", port);
	if (getaddrinfo(host, ps, &hints, &res))
		return -1;
	int fd = -1;
	for (r = res; r && fd < 0; r = r->ai_next) {
		fd = socket(r->ai_family, r->ai_socktype | SOCK_CLOEXEC, r->ai_protocol);
		if (fd >= 0 && connect(fd, r->ai_addr, r->ai_addrlen) < 0) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	return fd;
}

/* Move what is readable from `from` to `to`; 0 when from ended or failed. */
static int relay(int from, int to)
{
	char buf[16384];
	ssize_t n = recv(from, buf, sizeof(buf), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 1;
	if (n <= 0)
		return 0;
	for (ssize_t off = 0; off < n;) {
		ssize_t w = send(to, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
		if (w <= 0)
			return 0;
		off += w;
	}
	return 1;
}

int tpf_local_forward(struct tpf_conn *c, const struct tpf_forward *fw, size_t n,
		      const volatile int *stop, struct tpf_diags *d)
{
	struct pair pairs[MAX_PAIRS];
	size_t np = 0;
	struct pollfd p[2 * MAX_PAIRS + 16];
	if (n > 16)
		return tpf_errorx(d, c->address, NULL, "at most 16 forwards at once (got %zu)", n);
	while (!*stop) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			p[k++] = (struct pollfd){ .fd = np < MAX_PAIRS ? fw[i].listen_fd : -1,
						  .events = POLLIN };
		for (size_t i = 0; i < np; i++) {
			p[k++] = (struct pollfd){ .fd = pairs[i].a, .events = POLLIN };
			p[k++] = (struct pollfd){ .fd = pairs[i].b, .events = POLLIN };
		}
		if (poll(p, k, 100) <= 0)
			continue;
		size_t polled = np; /* pairs accepted below have no slot yet */
		for (size_t i = 0; i < n; i++) {
			if (!(p[i].revents & POLLIN))
				continue;
			int a = accept4(fw[i].listen_fd, NULL, NULL, SOCK_CLOEXEC);
			int b = a >= 0 ? connect_to(fw[i].host, fw[i].port) : -1;
			if (a >= 0 && b < 0) {
				tpf_warn(d, c->address, "forward to %s port %d: connection refused",
					 fw[i].host, fw[i].port);
				close(a);
			} else if (a >= 0)
				pairs[np++] = (struct pair){ a, b };
		}
		for (size_t i = 0; i < polled; i++) {
			size_t j = n + 2 * i;
			int ok = 1;
			if (p[j].revents & (POLLIN | POLLHUP | POLLERR))
				ok = relay(pairs[i].a, pairs[i].b);
			if (ok && (p[j + 1].revents & (POLLIN | POLLHUP | POLLERR)))
				ok = relay(pairs[i].b, pairs[i].a);
			if (!ok) {
				close(pairs[i].a);
				close(pairs[i].b);
				pairs[i].a = -1;
			}
		}
		size_t kept = 0;
		for (size_t i = 0; i < np; i++)
			if (pairs[i].a >= 0)
				pairs[kept++] = pairs[i];
		np = kept;
	}
	for (size_t i = 0; i < np; i++) {
		close(pairs[i].a);
		close(pairs[i].b);
	}
	return 0;
}
