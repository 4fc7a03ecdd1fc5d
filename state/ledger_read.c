/*
 * Reading the run ledger (state/ledger_store.h tpf_ledger_read and the
 * cursor that reads only what was appended since its last read): the
 * local file and its rotated segments, or the objects of a shared store.
 */
#include "state/ledger_store.h"
#include "state/objstore.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What was read of one object of a shared store. */
struct seen_object {
	char *name;
	long long generation;
	size_t consumed; /* bytes parsed: whole lines */
};

struct tpf_ledger_cursor {
	/* local: the file, and where reading stopped in it */
	char *path;
	dev_t dev;
	ino_t ino; /* 0: nothing read yet */
	off_t off;
	/* shared store */
	struct tpf_objstore *store;
	struct seen_object *seen;
	size_t nseen, seen_alloc;
	int started; /* 1 once a first read succeeded */
	int oneshot; /* tpf_ledger_read: a torn last line is read (and skipped) too */
};

static void parse_lines(const char *data, size_t n, json_t *out, size_t *skipped)
{
	const char *p = data, *end = data + n;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		// cppcheck-suppress knownConditionTrueFalse ; an empty line ("\n\n") has len 0
		if (len) {
			json_t *o = len <= TPF_LEDGER_LINE_MAX ? json_loadb(p, len, JSON_REJECT_DUPLICATES,
									     NULL)
							     : NULL;
			if (json_is_object(o))
				json_array_append_new(out, o);
			else {
				json_decref(o);
				(*skipped)++;
			}
		}
		p += len + 1;
	}
}

/* The whole lines of data[0..n): up to and with its last newline. A line
 * still being written (no newline yet) is left for the next read. */
static size_t whole_lines(const char *data, size_t n)
{
	while (n && data[n - 1] != '\n')
		n--;
	return n;
}

static char *segment_name(const char *path, int i)
{
	return i ? xasprintf("%s.%d", path, i) : xstrdup(path);
}

/* Bytes [from, EOF) of fd into b; 0 or -1 (errno). */
static int read_from(int fd, off_t from, struct tpf_buf *b)
{
	char chunk[65536];
	for (;;) {
		ssize_t r = pread(fd, chunk, sizeof(chunk), from);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return 0;
		tpf_buf_add(b, chunk, (size_t)r);
		from += r;
	}
}

/* ---- local ------------------------------------------------------------------- */

/* The live file (opened as fd, stat st) from c->off: its whole lines. */
static int read_live(struct tpf_ledger_cursor *c, int fd, const struct stat *st, json_t *out,
		     size_t *skipped, struct tpf_diags *d)
{
	struct tpf_buf b = TPF_BUF_INIT;
	if (read_from(fd, c->off, &b)) {
		tpf_buf_release(&b);
		return tpf_error(d, "cannot read the run ledger '%s': %s", c->path, strerror(errno));
	}
	size_t n = c->oneshot ? b.len : whole_lines(b.buf ? b.buf : "", b.len);
	parse_lines(b.buf ? b.buf : "", n, out, skipped);
	c->dev = st->st_dev;
	c->ino = st->st_ino;
	c->off += (off_t)n;
	tpf_buf_release(&b);
	return 0;
}

/* Everything from the start: the rotated segments (oldest first, at most
 * TPF_LEDGER_READ_MAX bytes, newest kept), then the live file. */
static int local_from_start(struct tpf_ledger_cursor *c, json_t *out, size_t *skipped,
			    size_t *dropped, struct tpf_diags *d)
{
	c->ino = 0;
	c->off = 0;
	int fd = open(c->path, O_RDONLY | O_CLOEXEC);
	struct stat live;
	if (fd < 0 && errno != ENOENT)
		return tpf_error(d, "cannot read the run ledger '%s': %s", c->path, strerror(errno));
	if (fd >= 0 && fstat(fd, &live)) {
		close(fd);
		return tpf_error(d, "cannot read the run ledger '%s': %s", c->path, strerror(errno));
	}
	size_t budget = TPF_LEDGER_READ_MAX;
	if (fd >= 0)
		budget -= (size_t)live.st_size < budget ? (size_t)live.st_size : budget;
	struct tpf_buf segs[TPF_LEDGER_SEGMENTS];
	int rc = 0;
	for (int i = 1; i < TPF_LEDGER_SEGMENTS; i++) {
		tpf_buf_init(&segs[i]);
		char *name = segment_name(c->path, i);
		struct stat st;
		/* A segment rotated since the live file was opened is that file. */
		if (!rc && stat(name, &st) == 0 && !(fd >= 0 && st.st_ino == live.st_ino)) {
			if ((size_t)st.st_size > budget)
				*dropped += (size_t)st.st_size;
			else {
				int r = tpf_read_file_max(name, budget, "run ledger", &segs[i], d);
				if (r && r != TPF_ENOTFOUND)
					rc = TPF_ERROR;
				budget -= segs[i].len;
			}
		}
		free(name);
	}
	for (int i = TPF_LEDGER_SEGMENTS - 1; i >= 1; i--) {
		if (!rc)
			parse_lines(segs[i].buf ? segs[i].buf : "", segs[i].len, out, skipped);
		tpf_buf_release(&segs[i]);
	}
	if (!rc && fd >= 0)
		rc = read_live(c, fd, &live, out, skipped, d);
	if (fd >= 0)
		close(fd);
	return rc;
}

/*
 * What was appended since the last read. The file read last may have been
 * rotated to PATH.k since: its rest, the newer segments, then the live
 * file. 1 when the place is lost (the file is gone from the segments, or
 * shorter than what was read): the caller reads from the start.
 */
static int local_since(struct tpf_ledger_cursor *c, json_t *out, size_t *skipped,
		       struct tpf_diags *d)
{
	int k = 0;
	struct stat st;
	for (; k < TPF_LEDGER_SEGMENTS; k++) {
		char *name = segment_name(c->path, k);
		int found = stat(name, &st) == 0 && st.st_ino == c->ino && st.st_dev == c->dev;
		free(name);
		if (found)
			break;
	}
	if (k == TPF_LEDGER_SEGMENTS || st.st_size < c->off)
		return 1;
	for (int i = k; i >= 0; i--) {
		char *name = segment_name(c->path, i);
		int fd = open(name, O_RDONLY | O_CLOEXEC);
		free(name);
		if (fd < 0 && i == 0 && errno == ENOENT)
			return 0; /* rotated, nothing written since */
		if (fd < 0 || fstat(fd, &st)) {
			if (fd >= 0)
				close(fd);
			return 1;
		}
		if (i < k) { /* a newer segment, or the live file: from its start */
			c->off = 0;
		} else if (st.st_ino != c->ino) {
			close(fd);
			return 1;
		}
		int rc = read_live(c, fd, &st, out, skipped, d);
		close(fd);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- a shared store ----------------------------------------------------------- */

static struct seen_object *seen_find(struct tpf_ledger_cursor *c, const char *name)
{
	for (size_t i = 0; i < c->nseen; i++)
		if (!strcmp(c->seen[i].name, name))
			return &c->seen[i];
	return NULL;
}

static void seen_clear(struct tpf_ledger_cursor *c)
{
	for (size_t i = 0; i < c->nseen; i++)
		free(c->seen[i].name);
	c->nseen = 0;
}

/* One object: its bytes past what was read of it (all of a new one). 1:
 * shorter than what was read (rewritten, not appended to). */
static int read_object(struct tpf_ledger_cursor *c, const char *name, size_t *budget,
		       json_t *out, size_t *skipped, size_t *dropped, struct tpf_diags *d)
{
	struct seen_object *s = seen_find(c, name);
	struct tpf_buf data = TPF_BUF_INIT;
	long long gen = 0;
	if (!*budget) {
		(*dropped)++;
		return 0;
	}
	int r = tpf_objstore_get(c->store, name, *budget, "run ledger", &data, &gen, d);
	if (r == TPF_ENOTFOUND) { /* deleted by its writer since the list */
		tpf_buf_release(&data);
		return 0;
	}
	size_t from = s ? s->consumed : 0;
	if (r || data.len < from) {
		tpf_buf_release(&data);
		return r ? TPF_ERROR : 1;
	}
	size_t n = whole_lines(data.buf ? data.buf : "", data.len);
	if (n > from)
		parse_lines(data.buf + from, n - from, out, skipped);
	*budget -= data.len < *budget ? data.len : *budget;
	if (!s) {
		XGROW(c->seen, c->nseen + 1, c->seen_alloc);
		s = &c->seen[c->nseen++];
		s->name = xstrdup(name);
	}
	s->generation = gen;
	s->consumed = n > from ? n : from;
	tpf_buf_release(&data);
	return 0;
}

/* Every object whose generation is not the one read last (every object
 * the first time). Objects gone from the list are forgotten. */
static int shared_since(struct tpf_ledger_cursor *c, json_t *out, size_t *skipped,
			size_t *dropped, struct tpf_diags *d)
{
	char **names = NULL;
	long long *gens = NULL;
	size_t n = 0;
	int rc = tpf_objstore_list_gen(c->store, "", &names, &gens, &n, d);
	size_t budget = TPF_LEDGER_READ_MAX;
	for (size_t i = 0; !rc && i < n; i++) {
		const struct seen_object *s = seen_find(c, names[i]);
		if (s && s->generation == gens[i] && gens[i] > 0)
			continue;
		rc = read_object(c, names[i], &budget, out, skipped, dropped, d);
	}
	/* Forget what is no longer listed. */
	for (size_t i = 0; !rc && i < c->nseen;) {
		size_t j = 0;
		while (j < n && strcmp(names[j], c->seen[i].name))
			j++;
		if (j < n) {
			i++;
			continue;
		}
		free(c->seen[i].name);
		c->seen[i] = c->seen[--c->nseen];
	}
	tpf_objstore_names_free(names);
	free(gens);
	return rc;
}

/* ---- the cursor ----------------------------------------------------------------- */

int tpf_ledger_cursor_open(struct tpf_ledger_cursor **out, const struct tpf_ledger_where *w,
			   struct tpf_diags *d)
{
	*out = NULL;
	struct tpf_objstore *store = NULL;
	if (tpf_objstore_open_beside(&store, w->state_path, w->gcs, ".ledger/", d))
		return TPF_ERROR;
	struct tpf_ledger_cursor *c = xcalloc(1, sizeof(*c));
	if (tpf_objstore_shared(store)) {
		c->store = store;
	} else {
		tpf_objstore_free(store);
		c->path = xasprintf("%s.ledger.jsonl", w->state_path);
	}
	*out = c;
	return 0;
}

void tpf_ledger_cursor_free(struct tpf_ledger_cursor *c)
{
	if (!c)
		return;
	seen_clear(c);
	free(c->seen);
	tpf_objstore_free(c->store);
	free(c->path);
	free(c);
}

void tpf_ledger_cursor_rewind(struct tpf_ledger_cursor *c)
{
	c->started = 0;
}

static int read_from_start(struct tpf_ledger_cursor *c, json_t *out, size_t *skipped,
			   size_t *dropped, struct tpf_diags *d)
{
	if (c->store) {
		seen_clear(c);
		return shared_since(c, out, skipped, dropped, d);
	}
	return local_from_start(c, out, skipped, dropped, d);
}

int tpf_ledger_cursor_read(struct tpf_ledger_cursor *c, json_t **records, int *from_start,
			   size_t *skipped, size_t *dropped, struct tpf_diags *d)
{
	size_t sk = 0, dr = 0;
	json_t *out = json_array();
	int rc, fresh = !c->started;
	if (fresh) {
		rc = read_from_start(c, out, &sk, &dr, d);
	} else {
		rc = c->store ? shared_since(c, out, &sk, &dr, d)
		     : c->ino ? local_since(c, out, &sk, d)
			      : 1; /* there was no file: read whatever there is now */
		if (rc == 1) { /* lost its place: everything again */
			json_array_clear(out);
			sk = dr = 0;
			fresh = 1;
			rc = read_from_start(c, out, &sk, &dr, d);
		}
	}
	if (skipped)
		*skipped = sk;
	if (dropped)
		*dropped = dr;
	if (rc) {
		json_decref(out);
		*records = NULL;
		c->started = 0; /* the next read starts over */
		return TPF_ERROR;
	}
	c->started = 1;
	*from_start = fresh;
	*records = out;
	return 0;
}

int tpf_ledger_read(const struct tpf_ledger_where *w, json_t **records, size_t *skipped,
		    size_t *dropped, struct tpf_diags *d)
{
	struct tpf_ledger_cursor *c = NULL;
	int from_start = 0;
	*records = NULL;
	if (tpf_ledger_cursor_open(&c, w, d))
		return TPF_ERROR;
	c->oneshot = 1;
	int rc = tpf_ledger_cursor_read(c, records, &from_start, skipped, dropped, d);
	tpf_ledger_cursor_free(c);
	return rc;
}
