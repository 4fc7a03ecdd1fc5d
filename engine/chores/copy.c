/*
 * `tpuform cp`: scp to and from every worker at once (engine/chores/chores.h),
 * over the transport's file ops (SFTP on VMs). The job is not touched: no
 * state change, no restart; uploads replace files atomically, so a job that
 * has one open keeps reading the old one.
 */
#include "engine/chores/chores.h"
#include "util/fs.h"
#include "util/outfile.h"
#include "util/pool.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *tpf_chore_remote_path(const char *path)
{
	if (path[0] == '/')
		return xstrdup(path);
	if (!strcmp(path, "~"))
		return xstrdup(".");
	if (!strncmp(path, "~/", 2))
		return xstrdup(path[2] ? path + 2 : ".");
	return xasprintf("%s/%s", TPF_CHORE_CHECKOUT, path);
}

struct copy_task {
	const struct tpf_chore_target *t;
	const struct tpf_copy_opts *o;
	size_t i;
	struct tpf_conn *c;
	unsigned long long done_bytes; /* of the files finished */
	struct tpf_copy_result *r;
};

struct copy_run {
	struct copy_task *tasks;
};

/* The last part of path, without trailing slashes; caller frees. */
static char *base_name(const char *path)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	const char *s = path + n;
	while (s > path && s[-1] != '/')
		s--;
	char *b = xstrndup(s, (size_t)(path + n - s));
	if (!*b || !strcmp(b, ".") || !strcmp(b, "~") || !strcmp(b, "/")) {
		free(b);
		b = xstrdup("home");
	}
	return b;
}

static void on_progress(void *arg, unsigned long long bytes)
{
	struct copy_task *k = arg;
	if (k->o->progress)
		k->o->progress(k->o->arg, k->i, k->done_bytes + bytes);
}

static void file_done(struct copy_task *k, unsigned long long size)
{
	k->done_bytes += size;
	k->r->bytes = k->done_bytes;
	k->r->files++;
}

static int note(struct copy_task *k, int err)
{
	if (err && !k->r->rc)
		k->r->rc = err;
	return err;
}

/* ---- up ---------------------------------------------------------------- */

static int up_file(struct copy_task *k, const char *local, const char *remote, mode_t mode)
{
	int fd = open(local, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return note(k, tpf_errorx(&k->r->d, NULL, NULL, "cannot read '%s': %s", local,
					  strerror(errno)));
	struct stat st;
	unsigned long long size = !fstat(fd, &st) ? (unsigned long long)st.st_size : 0;
	int err = k->t->t->ops->file_send(k->c, fd, remote, mode & 07777, on_progress, k,
					  &k->r->d);
	close(fd);
	if (!err)
		file_done(k, size);
	return note(k, err);
}

static int up_any(struct copy_task *k, const char *local, const char *remote);

static int up_dir(struct copy_task *k, const char *local, const char *remote, mode_t mode)
{
	int err = note(k, k->t->t->ops->file_mkdir(k->c, remote, mode | 0700, &k->r->d));
	if (err)
		return err;
	DIR *dir = opendir(local);
	if (!dir)
		return note(k, tpf_errorx(&k->r->d, NULL, NULL, "cannot list '%s': %s", local,
					  strerror(errno)));
	struct dirent *e;
	while ((e = readdir(dir)) && err != TPF_EUNREACHABLE) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *l = tpf_path_join(local, e->d_name);
		char *r = xasprintf("%s/%s", remote, e->d_name);
		int e2 = up_any(k, l, r);
		err = err ? err : e2;
		free(l);
		free(r);
	}
	closedir(dir);
	return err;
}

/* local (file or directory, links followed as scp -r does) to remote. */
static int up_any(struct copy_task *k, const char *local, const char *remote)
{
	struct stat st;
	if (stat(local, &st) < 0)
		return note(k, tpf_errorx(&k->r->d, NULL, NULL, "cannot copy '%s': %s", local,
					  strerror(errno)));
	if (S_ISDIR(st.st_mode)) {
		if (!k->o->recursive)
			return note(k, tpf_errorx(&k->r->d, NULL, "add -r to copy directories",
						  "'%s' is a directory", local));
		return up_dir(k, local, remote, st.st_mode & 07777);
	}
	if (!S_ISREG(st.st_mode))
		return note(k, tpf_errorx(&k->r->d, NULL, NULL,
					  "cannot copy '%s': not a regular file or directory", local));
	return up_file(k, local, remote, st.st_mode);
}

/* Does each source go in under its own name (dest a directory)? */
static int into_dir(struct copy_task *k, const char *dest, int *into)
{
	struct tpf_remote_stat st;
	int err = k->t->t->ops->file_stat(k->c, dest, &st, &k->r->d);
	size_t n = strlen(k->o->dest);
	int want_dir = k->o->nsrc > 1 || (n && k->o->dest[n - 1] == '/');
	if (err == TPF_ENOTFOUND) {
		*into = 0;
		if (!want_dir)
			return 0;
		*into = 1;
		return note(k, k->t->t->ops->file_mkdir(k->c, dest, 0755, &k->r->d));
	}
	if (err)
		return note(k, err);
	*into = st.is_dir;
	if (want_dir && !st.is_dir)
		return note(k, tpf_errorx(&k->r->d, NULL, NULL, "'%s' is not a directory",
					  k->o->dest));
	return 0;
}

static void copy_up(struct copy_task *k)
{
	char *dest = tpf_chore_remote_path(k->o->dest);
	int into = 0;
	if (!into_dir(k, dest, &into)) {
		for (size_t i = 0; i < k->o->nsrc && k->r->rc != TPF_EUNREACHABLE; i++) {
			char *b = base_name(k->o->src[i]);
			char *to = into ? xasprintf("%s/%s", dest, b) : xstrdup(dest);
			up_any(k, k->o->src[i], to);
			free(to);
			free(b);
		}
	}
	free(dest);
}

/* ---- down -------------------------------------------------------------- */

static int down_any(struct copy_task *k, const char *remote, const char *local);

/* Under the rule for output paths (util/outfile.h): a file there is
 * replaced atomically, a device or FIFO written in place. */
static int down_file(struct copy_task *k, const char *remote, const char *local,
		     const struct tpf_remote_stat *st)
{
	struct tpf_outfile out;
	int err = tpf_outfile_open(&out, local, st->mode & 0777, &k->r->d);
	if (err)
		return note(k, err);
	err = k->t->t->ops->file_recv(k->c, remote, out.fd, on_progress, k, &k->r->d);
	if (err)
		tpf_outfile_abort(&out);
	else
		err = tpf_outfile_commit(&out, &k->r->d);
	if (!err)
		file_done(k, st->size);
	return note(k, err);
}

static int down_dir(struct copy_task *k, const char *remote, const char *local, mode_t mode)
{
	if (mkdir(local, mode | 0700) < 0 && errno != EEXIST)
		return note(k, tpf_errorx(&k->r->d, NULL, NULL, "cannot create '%s': %s", local,
					  strerror(errno)));
	char **names = NULL;
	size_t n = 0;
	int err = note(k, k->t->t->ops->file_list(k->c, remote, &names, &n, &k->r->d));
	for (size_t i = 0; i < n; i++) {
		if (err != TPF_EUNREACHABLE) {
			char *r = xasprintf("%s/%s", remote, names[i]);
			char *l = tpf_path_join(local, names[i]);
			int e2 = down_any(k, r, l);
			err = err ? err : e2;
			free(r);
			free(l);
		}
		free(names[i]);
	}
	free(names);
	return err;
}

static int down_any(struct copy_task *k, const char *remote, const char *local)
{
	struct tpf_remote_stat st;
	int err = k->t->t->ops->file_stat(k->c, remote, &st, &k->r->d);
	if (err == TPF_ENOTFOUND)
		return note(k, tpf_errorx(&k->r->d, NULL, NULL, "'%s' does not exist on the worker",
					  remote));
	if (err)
		return note(k, err);
	if (st.is_dir) {
		if (!k->o->recursive)
			return note(k, tpf_errorx(&k->r->d, NULL, "add -r to copy directories",
						  "'%s' is a directory", remote));
		return down_dir(k, remote, local, st.mode);
	}
	if (!st.is_reg)
		return note(k, tpf_errorx(&k->r->d, NULL, NULL,
					  "cannot copy '%s': not a regular file or directory", remote));
	return down_file(k, remote, local, &st);
}

static void copy_down(struct copy_task *k)
{
	char *where = xasprintf("%s/%s/w%d", k->o->dest, k->t->sn->name, k->t->worker);
	if (note(k, tpf_mkdir_p(where, 0755, &k->r->d))) {
		free(where);
		return;
	}
	for (size_t i = 0; i < k->o->nsrc && k->r->rc != TPF_EUNREACHABLE; i++) {
		char *remote = tpf_chore_remote_path(k->o->src[i]);
		char *b = base_name(k->o->src[i]);
		char *local = tpf_path_join(where, b);
		down_any(k, remote, local);
		free(local);
		free(b);
		free(remote);
	}
	free(where);
}

static void copy_one(size_t i, void *arg)
{
	struct copy_run *run = arg;
	struct copy_task *k = &run->tasks[i];
	const struct tpf_transport_ops *ops = k->t->t->ops;
	if (!ops->file_send || !ops->file_recv) {
		note(k, tpf_errorx(&k->r->d, k->t->sn->name, NULL,
				   "this provider's transport cannot copy files"));
		return;
	}
	if (note(k, tpf_chore_connect(k->t, &k->c, &k->r->d)))
		return;
	if (k->o->download)
		copy_down(k);
	else
		copy_up(k);
	ops->close(k->c);
}

int tpf_chore_copy(const struct tpf_chore_target *t, size_t n, const struct tpf_copy_opts *o,
		   struct tpf_copy_result *res)
{
	struct copy_run run = { .tasks = xcalloc(n ? n : 1, sizeof(*run.tasks)) };
	for (size_t i = 0; i < n; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		tpf_diags_init(&res[i].d);
		run.tasks[i] = (struct copy_task){ .t = &t[i], .o = o, .i = i, .r = &res[i] };
	}
	/* DEST/NODE/wN is made under DEST, and DEST itself (one level), but
	 * never a missing parent of DEST: once, not per worker. */
	if (n && o->download && tpf_outdir_check(o->dest, &res[0].d))
		for (size_t i = 0; i < n; i++)
			res[i].rc = TPF_ERROR;
	else
		tpf_pool_run(n, (int)n, copy_one, &run, NULL);
	int err = 0;
	for (size_t i = 0; i < n; i++)
		if (res[i].rc)
			err = TPF_ERROR;
	free(run.tasks);
	return err;
}
