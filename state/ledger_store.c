/*
 * The run ledger's store (state/ledger_store.h): JSON Lines in a local file with
 * rotation, or per-writer segment objects in a shared object store
 * (state/objstore.h; Cloud Storage), which has no append.
 */
#include "state/ledger_store.h"
#include "state/objstore.h"
#include "util/buf.h"
#include "util/env.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct tpf_ledger {
	pthread_mutex_t mu;
	char *where;
	/* local */
	char *path;
	size_t segment_max;
	/* a shared store (state/objstore.h): segments <writer>.<seq>.jsonl */
	struct tpf_objstore *store;
	char writer[40];
	long seq;
	long long generation; /* of the current segment; 0: not written yet; -1: unknown */
	int daily;
	char day[16];         /* daily: the day of the current object, YYYYMMDD */
	struct tpf_buf seg;
};

static size_t local_segment_max(struct tpf_diags *d)
{
	long v = 0;
	if (tpf_env_int("TPUFORM_LEDGER_SEGMENT_BYTES", 4096, (long)TPF_LEDGER_READ_MAX, &v, d) ||
	    v <= 0)
		return TPF_LEDGER_SEGMENT_MAX;
	return (size_t)v;
}

int tpf_ledger_open(struct tpf_ledger **out, const struct tpf_ledger_where *w, struct tpf_diags *d)
{
	*out = NULL;
	if (!w->gcs && !w->state_path)
		return tpf_error(d, "the run ledger has no location: neither a state file nor a bucket");
	struct tpf_ledger *l = xcalloc(1, sizeof(*l));
	pthread_mutex_init(&l->mu, NULL);
	tpf_buf_init(&l->seg);
	if (tpf_objstore_open_beside(&l->store, w->state_path, w->gcs, ".ledger/", d)) {
		tpf_ledger_close(l);
		return TPF_ERROR;
	}
	if (tpf_objstore_shared(l->store)) {
		l->where = tpf_objstore_where(l->store, "");
		l->daily = w->daily;
		l->seq = 1;
		if (l->daily) {
			char host[256] = "", hex[65];
			gethostname(host, sizeof(host) - 1);
			tpf_sha256_hex(host, strlen(host), hex);
			snprintf(l->writer, sizeof(l->writer), "%.12s", hex);
		} else {
			char uuid[37];
			tpf_uuid4(uuid);
			snprintf(l->writer, sizeof(l->writer), "%.8s%.4s", uuid, uuid + 9);
		}
	} else {
		/* This host's files: one file appended under flock(2). */
		tpf_objstore_free(l->store);
		l->store = NULL;
		l->path = xasprintf("%s.ledger.jsonl", w->state_path);
		l->where = xstrdup(l->path);
		l->segment_max = local_segment_max(d);
	}
	*out = l;
	return 0;
}

const char *tpf_ledger_where(const struct tpf_ledger *l)
{
	return l->where;
}

void tpf_ledger_close(struct tpf_ledger *l)
{
	if (!l)
		return;
	tpf_objstore_free(l->store);
	free(l->where);
	free(l->path);
	tpf_buf_release(&l->seg);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

/* ---- local ------------------------------------------------------------------ */

static char *segment_name(const char *path, int i)
{
	return i ? xasprintf("%s.%d", path, i) : xstrdup(path);
}

/* Called with the file locked: shift PATH.k to PATH.k+1 (the oldest is
 * removed), then PATH to PATH.1. Another process appending meanwhile waits
 * on the lock, then finds its descriptor's file renamed (checked below). */
static void rotate(const char *path)
{
	char *oldest = segment_name(path, TPF_LEDGER_SEGMENTS - 1);
	unlink(oldest);
	free(oldest);
	for (int i = TPF_LEDGER_SEGMENTS - 2; i >= 0; i--) {
		char *from = segment_name(path, i), *to = segment_name(path, i + 1);
		struct stat st;
		/* util/outfile.h's rule: a rename replaces a regular file or
		 * nothing (a directory or device put there is left alone). */
		if (lstat(to, &st) < 0 || S_ISREG(st.st_mode))
			rename(from, to);
		free(from);
		free(to);
	}
}

/* Open PATH for appending and lock it, making sure the descriptor is the
 * file now at PATH (not a segment another process just rotated away). */
static int open_locked(const char *path, struct tpf_diags *d)
{
	for (int tries = 0; tries < 8; tries++) {
		/* Read too: the last byte says whether a crash tore a line. */
		int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			break;
		struct stat a, b;
		if (flock(fd, LOCK_EX) == 0 && fstat(fd, &a) == 0 && stat(path, &b) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			return fd;
		close(fd);
	}
	tpf_error(d, "cannot append to the run ledger '%s': %s", path, strerror(errno));
	return -1;
}

/* 1 when the file's last byte is not a newline (a line torn by a crash). */
static int torn(int fd, off_t size)
{
	char c = '\n';
	return size > 0 && pread(fd, &c, 1, size - 1) == 1 && c != '\n';
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int local_append(struct tpf_ledger *l, const char *line, size_t len, struct tpf_diags *d)
{
	int fd = open_locked(l->path, d);
	if (fd < 0)
		return TPF_ERROR;
	struct stat st;
	if (fstat(fd, &st) == 0 && st.st_size > 0 && (size_t)st.st_size + len + 1 > l->segment_max) {
		rotate(l->path);
		close(fd); /* its lock goes with it; the new file is locked next */
		fd = open_locked(l->path, d);
		if (fd < 0)
			return TPF_ERROR;
		if (fstat(fd, &st))
			st.st_size = 0;
	}
	struct tpf_buf b = TPF_BUF_INIT;
	if (torn(fd, st.st_size))
		tpf_buf_addch(&b, '\n');
	tpf_buf_add(&b, line, len);
	tpf_buf_addch(&b, '\n');
	int rc = 0;
	if (write_all(fd, b.buf, b.len) || fsync(fd))
		rc = tpf_error(d, "cannot append to the run ledger '%s': %s", l->path, strerror(errno));
	tpf_buf_release(&b);
	close(fd);
	return rc;
}

/* ---- segments in a shared store (Cloud Storage) ------------------------------ */

static char *object_name(const struct tpf_ledger *l, long seq)
{
	if (l->daily)
		return xasprintf("%s.%s.%03ld.jsonl", l->writer, l->day, seq);
	return xasprintf("%s.%06ld.jsonl", l->writer, seq);
}

/* daily: today's object (UTC): a new day starts at its first object,
 * whose content and generation are read at the first append. */
static void daily_today(struct tpf_ledger *l)
{
	char day[16];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(day, sizeof(day), "%Y%m%d", &tm);
	if (strcmp(day, l->day)) {
		snprintf(l->day, sizeof(l->day), "%s", day);
		l->seq = 1;
		l->generation = -1;
	}
}

/* daily: the object as it is now (absent: empty, generation 0). */
static int daily_reload(struct tpf_ledger *l, struct tpf_diags *d)
{
	char *name = object_name(l, l->seq);
	tpf_buf_reset(&l->seg);
	long long gen = 0;
	int rc = tpf_objstore_get(l->store, name, TPF_LEDGER_GCS_SEGMENT_MAX + TPF_LEDGER_LINE_MAX + 1,
				  "run ledger", &l->seg, &gen, d);
	free(name);
	if (rc == TPF_ENOTFOUND)
		rc = 0;
	if (!rc)
		l->generation = gen;
	return rc;
}

static int segment_append(struct tpf_ledger *l, const char *line, size_t len, struct tpf_diags *d)
{
	if (l->seg.len && l->seg.len + len + 1 > TPF_LEDGER_GCS_SEGMENT_MAX && l->daily) {
		l->seq++; /* the day's next object; the full one is kept */
		l->generation = -1;
		return TPF_ESTALE;
	}
	if (l->seg.len && l->seg.len + len + 1 > TPF_LEDGER_GCS_SEGMENT_MAX) {
		l->seq++;
		l->generation = 0;
		tpf_buf_reset(&l->seg);
		if (l->seq > TPF_LEDGER_SEGMENTS) {
			/* The writer's own old segment: nobody else writes it. */
			char *old = object_name(l, l->seq - TPF_LEDGER_SEGMENTS);
			struct tpf_diags ignore = TPF_DIAGS_INIT;
			tpf_objstore_delete(l->store, old, TPF_OBJ_ANY, &ignore);
			tpf_diags_release(&ignore);
			free(old);
		}
	}
	size_t keep = l->seg.len;
	tpf_buf_add(&l->seg, line, len);
	tpf_buf_addch(&l->seg, '\n');
	char *name = object_name(l, l->seq);
	long long gen = 0;
	int rc = tpf_objstore_put(l->store, name, l->seg.buf, l->seg.len, "application/x-ndjson",
				  l->generation, &gen, d);
	if (rc == TPF_ESTALE && l->daily) { /* another process of this host wrote it */
		l->generation = -1;
		free(name);
		return TPF_ESTALE;
	}
	if (rc) {
		l->seg.len = keep; /* not written: the segment stays as it is */
		l->seg.buf[keep] = '\0';
		char *where = tpf_objstore_where(l->store, name);
		tpf_error(d, "cannot append to the run ledger '%s'", where);
		free(where);
	} else {
		l->generation = gen;
	}
	free(name);
	return rc ? TPF_ERROR : 0;
}

/* daily: read the object when its content is not known, append, write it
 * back on the generation read; a 412 or a full object tries again. */
static int daily_append(struct tpf_ledger *l, const char *line, size_t len, struct tpf_diags *d)
{
	daily_today(l);
	for (int tries = 0; tries < 16; tries++) {
		if (l->generation < 0 && daily_reload(l, d)) {
			l->generation = -1;
			char *where = tpf_objstore_where(l->store, "");
			tpf_error(d, "cannot append to the run ledger '%s'", where);
			free(where);
			return TPF_ERROR;
		}
		int rc = segment_append(l, line, len, d);
		if (rc != TPF_ESTALE)
			return rc;
	}
	char *where = tpf_objstore_where(l->store, "");
	tpf_error(d, "cannot append to the run ledger '%s': other processes of this host kept "
		     "changing the day's object (16 tries)", where);
	free(where);
	return TPF_ERROR;
}

int tpf_ledger_append(struct tpf_ledger *l, const char *line, size_t len, struct tpf_diags *d)
{
	if (len > TPF_LEDGER_LINE_MAX)
		return tpf_error(d, "run ledger line of %zu bytes is over the limit of %zu; not written",
				 len, TPF_LEDGER_LINE_MAX);
	if (memchr(line, '\n', len))
		return tpf_error(d, "run ledger line has a newline; not written");
	pthread_mutex_lock(&l->mu);
	int rc = l->store ? l->daily ? daily_append(l, line, len, d) : segment_append(l, line, len, d)
			  : local_append(l, line, len, d);
	pthread_mutex_unlock(&l->mu);
	return rc;
}
