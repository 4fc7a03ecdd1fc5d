/*
 * The object store seam (state/objstore.h): dispatch, and the local row
 * (files written atomically, generations emulated from inode and
 * modification time, conditional writes under flock(2) on the directory).
 */
#include "state/objstore_priv.h"
#include "util/fs.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- dispatch --------------------------------------------------------------- */

void tpf_objstore_free(struct tpf_objstore *s)
{
	if (!s)
		return;
	s->ops->free(s);
	free(s->prefix);
	free(s);
}

char *tpf_objstore_where(const struct tpf_objstore *s, const char *name)
{
	return s->ops->where(s, name);
}

int tpf_objstore_shared(const struct tpf_objstore *s)
{
	return s->ops->shared;
}

int tpf_objstore_get(struct tpf_objstore *s, const char *name, size_t max, const char *what,
		     struct tpf_buf *out, long long *generation, struct tpf_diags *d)
{
	long long gen = 0;
	int rc = s->ops->get(s, name, max, what, out, &gen, d);
	if (generation)
		*generation = rc ? 0 : gen;
	return rc;
}

int tpf_objstore_stat(struct tpf_objstore *s, const char *name, long long *generation,
		      struct tpf_diags *d)
{
	*generation = 0;
	return s->ops->stat(s, name, generation, d);
}

int tpf_objstore_put(struct tpf_objstore *s, const char *name, const char *data, size_t len,
		     const char *content_type, long long if_generation, long long *generation,
		     struct tpf_diags *d)
{
	long long gen = 0;
	int rc = s->ops->put(s, name, data, len, content_type, if_generation, &gen, d);
	if (generation && !rc)
		*generation = gen;
	return rc;
}

int tpf_objstore_delete(struct tpf_objstore *s, const char *name, long long if_generation,
			struct tpf_diags *d)
{
	return s->ops->del(s, name, if_generation, d);
}

int tpf_objstore_list(struct tpf_objstore *s, const char *name_prefix, char ***names, size_t *n,
		      struct tpf_diags *d)
{
	*names = NULL;
	*n = 0;
	return s->ops->list(s, name_prefix, names, NULL, n, d);
}

int tpf_objstore_list_gen(struct tpf_objstore *s, const char *name_prefix, char ***names,
			  long long **generations, size_t *n, struct tpf_diags *d)
{
	*names = NULL;
	*generations = NULL;
	*n = 0;
	int rc = s->ops->list(s, name_prefix, names, generations, n, d);
	if (!rc && !*generations)
		*generations = xcalloc(1, sizeof(long long));
	return rc;
}

void tpf_objstore_names_free(char **names)
{
	for (size_t i = 0; names && names[i]; i++)
		free(names[i]);
	free(names);
}

/* ---- the local row ------------------------------------------------------------ */

static char *local_path(const struct tpf_objstore *s, const char *name)
{
	return xasprintf("%s%s", s->prefix, name);
}

/* A file's emulated generation: a new inode or modification time is a new
 * generation; never 0 (0 is "no object"). */
static long long file_generation(const struct stat *st)
{
	unsigned long long g = (unsigned long long)st->st_ino * 1000003ULL;
	g ^= (unsigned long long)st->st_mtim.tv_sec * 1000000000ULL +
	     (unsigned long long)st->st_mtim.tv_nsec;
	g &= 0x7fffffffffffffffULL;
	return g ? (long long)g : 1;
}

static int local_stat_path(const char *path, long long *generation, struct tpf_diags *d)
{
	struct stat st;
	if (stat(path, &st) == 0) {
		*generation = file_generation(&st);
		return 0;
	}
	*generation = 0;
	if (errno == ENOENT || errno == ENOTDIR)
		return TPF_ENOTFOUND;
	return tpf_error(d, "cannot read '%s': %s", path, strerror(errno));
}

static int local_stat(struct tpf_objstore *s, const char *name, long long *generation,
		      struct tpf_diags *d)
{
	char *path = local_path(s, name);
	int rc = local_stat_path(path, generation, d);
	free(path);
	return rc;
}

static int local_get(struct tpf_objstore *s, const char *name, size_t max, const char *what,
		     struct tpf_buf *out, long long *generation, struct tpf_diags *d)
{
	char *path = local_path(s, name);
	struct tpf_buf b = TPF_BUF_INIT;
	struct tpf_diags ignore = TPF_DIAGS_INIT;
	/* The generation before and after the read: a write in between
	 * (a new inode) reads again, as the Cloud Storage row does. */
	int rc = TPF_ERROR;
	for (int tries = 0; tries < 5; tries++) {
		long long before = 0, after = 0;
		tpf_buf_reset(&b);
		if (local_stat_path(path, &before, &ignore) == TPF_ENOTFOUND) {
			rc = TPF_ENOTFOUND;
			break;
		}
		rc = tpf_read_file_max(path, max, what, &b, d);
		if (rc || (local_stat_path(path, &after, &ignore) == 0 && after == before)) {
			*generation = before;
			break;
		}
	}
	if (!rc)
		tpf_buf_add(out, b.buf ? b.buf : "", b.len);
	tpf_diags_release(&ignore);
	tpf_buf_release(&b);
	free(path);
	return rc;
}

/* flock(2) on path's directory (made 0700 when missing); -1 with a diagnostic. */
static int lock_dir(const char *path, struct tpf_diags *d)
{
	char *dir = tpf_dirname(path);
	int fd = -1;
	if (tpf_mkdir_p(dir, 0700, d) == 0) {
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || flock(fd, LOCK_EX)) {
			tpf_error(d, "cannot lock directory '%s': %s", dir, strerror(errno));
			if (fd >= 0)
				close(fd);
			fd = -1;
		}
	}
	free(dir);
	return fd;
}

static int local_put(struct tpf_objstore *s, const char *name, const char *data, size_t len,
		     const char *content_type, long long if_generation, long long *generation,
		     struct tpf_diags *d)
{
	(void)content_type;
	char *path = local_path(s, name);
	int rc = TPF_ERROR, dfd = lock_dir(path, d);
	long long cur = 0;
	if (dfd < 0)
		goto done;
	rc = 0;
	if (if_generation >= 0) {
		rc = local_stat_path(path, &cur, d);
		if (rc == TPF_ENOTFOUND)
			rc = 0;
		if (!rc && cur != if_generation)
			rc = TPF_ESTALE;
	}
	if (!rc)
		rc = tpf_write_file_atomic(path, data, len, 0600, d);
	if (!rc && local_stat_path(path, generation, d))
		rc = TPF_ERROR;
	flock(dfd, LOCK_UN);
	close(dfd);
done:
	free(path);
	return rc;
}

static int local_del(struct tpf_objstore *s, const char *name, long long if_generation,
		     struct tpf_diags *d)
{
	char *path = local_path(s, name);
	int dfd = -1;
	long long cur = 0;
	int rc = local_stat_path(path, &cur, d);
	if (!rc && if_generation >= 1) {
		dfd = lock_dir(path, d);
		rc = dfd < 0 ? TPF_ERROR : local_stat_path(path, &cur, d);
		if (!rc && cur != if_generation)
			rc = TPF_ESTALE;
	}
	if (!rc && unlink(path))
		rc = errno == ENOENT ? TPF_ENOTFOUND
				     : tpf_error(d, "cannot delete '%s': %s", path, strerror(errno));
	if (dfd >= 0)
		close(dfd);
	free(path);
	return rc;
}

static int local_list(struct tpf_objstore *s, const char *name_prefix, char ***names,
		      long long **gens, size_t *n, struct tpf_diags *d)
{
	char *dir = xasprintf("%s%s", s->prefix, name_prefix);
	DIR *dh = opendir(*dir ? dir : ".");
	if (!dh) {
		int rc = errno == ENOENT ? 0 : tpf_error(d, "cannot list '%s': %s", dir, strerror(errno));
		free(dir);
		if (!rc)
			*names = xcalloc(1, sizeof(**names));
		return rc;
	}
	size_t alloc = 0, galloc = 0;
	struct dirent *e;
	while ((e = readdir(dh))) {
		struct stat st;
		char *path = xasprintf("%s%s", dir, e->d_name);
		int file = e->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode);
		free(path);
		if (!file)
			continue;
		XGROW(*names, *n + 2, alloc);
		if (gens) {
			XGROW(*gens, *n + 1, galloc);
			(*gens)[*n] = file_generation(&st);
		}
		(*names)[(*n)++] = xstrdup(e->d_name);
		(*names)[*n] = NULL;
	}
	closedir(dh);
	free(dir);
	if (!*names)
		*names = xcalloc(1, sizeof(**names));
	return 0;
}

static char *local_where(const struct tpf_objstore *s, const char *name)
{
	return local_path(s, name);
}

static void local_free(struct tpf_objstore *s)
{
	(void)s;
}

static const struct tpf_objstore_ops local_ops = {
	.shared = 0,
	.where = local_where,
	.get = local_get,
	.stat = local_stat,
	.put = local_put,
	.del = local_del,
	.list = local_list,
	.free = local_free,
};

struct tpf_objstore *tpf_objstore_open_local(const char *prefix)
{
	struct tpf_objstore *s = xcalloc(1, sizeof(*s));
	s->ops = &local_ops;
	s->prefix = xstrdup(prefix ? prefix : "");
	return s;
}
