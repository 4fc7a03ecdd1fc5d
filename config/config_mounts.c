/*
 * Cloud Storage for data and checkpoints: the `mounts`, `checkpoint_dir`
 * and `install_gcsfuse` keys, fleet-wide and per group (config/config.h
 * struct tpf_storage). What a worker does with them is docs/storage.md and
 * templates/bootstrap.sh (tpf_mounts).
 */
#include "config/config_walk.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const mount_keys[] = { "path", "bucket", "mode", "read_only", NULL };
static const char *const mode_words[] = { "mount", "copy", NULL };

/* Directories a mount must not cover or go under: the system's own (a
 * mount over them breaks the VM), and those a mount must not replace whole
 * but may go under (/home/USER/data is fine, /home is not). */
static const char *const system_trees[] = { "/bin",  "/boot", "/dev", "/etc",	 "/lib",
					    "/lib32", "/lib64", "/libx32", "/proc", "/run",
					    "/sbin", "/snap", "/sys",  "/usr",	 "/var",
					    NULL };
static const char *const system_dirs[] = { "/home", "/root", "/tmp", "/mnt",
					   "/opt",  "/srv",  "/media", NULL };

const char *tpf_mount_mode_word(enum tpf_mount_mode m)
{
	return m == TPF_MOUNT_COPY ? "copy" : "mount";
}

void tpf_storage_copy(struct tpf_storage *dst, const struct tpf_storage *src)
{
	*dst = *src;
	dst->checkpoint_dir = src->checkpoint_dir ? xstrdup(src->checkpoint_dir) : NULL;
	dst->mounts = src->nmounts ? xcalloc(src->nmounts, sizeof(*dst->mounts)) : NULL;
	for (size_t i = 0; i < src->nmounts; i++) {
		dst->mounts[i] = src->mounts[i];
		dst->mounts[i].path = xstrdup(src->mounts[i].path);
		dst->mounts[i].bucket = xstrdup(src->mounts[i].bucket);
		dst->mounts[i].prefix = src->mounts[i].prefix ? xstrdup(src->mounts[i].prefix) : NULL;
	}
}

static void release_mounts(struct tpf_storage *st)
{
	for (size_t i = 0; i < st->nmounts; i++) {
		free(st->mounts[i].path);
		free(st->mounts[i].bucket);
		free(st->mounts[i].prefix);
	}
	free(st->mounts);
	st->mounts = NULL;
	st->nmounts = 0;
}

void tpf_storage_release(struct tpf_storage *st)
{
	release_mounts(st);
	free(st->checkpoint_dir);
	memset(st, 0, sizeof(*st));
}

const struct tpf_storage *tpf_fleet_storage(const struct tpf_fleet *f, const char *group)
{
	const struct tpf_group *g = group ? tpf_fleet_group(f, group) : NULL;
	return g ? &g->storage : &f->storage;
}

/* Four dot-separated decimal numbers: Google refuses such bucket names. */
static int looks_like_ipv4(const char *s)
{
	int parts = 0, digits = 0;
	for (; *s; s++) {
		if (*s >= '0' && *s <= '9')
			digits++;
		else if (*s == '.' && digits)
			parts++, digits = 0;
		else
			return 0;
	}
	return digits && parts == 3;
}

/* Google's bucket naming rules (config.h tpf_gs_url_parse). NULL: valid;
 * else what is wrong. */
static const char *bucket_problem(const char *b, size_t n)
{
	if (n < 3 || n > 222)
		return "a bucket name has 3 to 63 characters (222 with dots)";
	size_t part = 0;
	int dots = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = b[i];
		if (ch == '.') {
			dots = 1;
			if (part == 0 || part > 63)
				return "each dot-separated part of a bucket name has 1 to 63 characters";
			part = 0;
			continue;
		}
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_'))
			return "a bucket name has only lowercase letters, digits, '-', '_' and '.'";
		part++;
	}
	if (part == 0 || part > 63)
		return "each dot-separated part of a bucket name has 1 to 63 characters";
	if (!dots && n > 63)
		return "a bucket name without dots has at most 63 characters";
	char first = b[0], last = b[n - 1];
	if (first == '-' || first == '_' || first == '.' || last == '-' || last == '_' ||
	    last == '.')
		return "a bucket name starts and ends with a letter or digit";
	char *copy = xstrndup(b, n);
	const char *why = NULL;
	if (looks_like_ipv4(copy))
		why = "a bucket name cannot be an IP address";
	else if (!strncmp(copy, "goog", 4))
		why = "a bucket name cannot start with 'goog'";
	else if (strstr(copy, "google") || strstr(copy, "g00gle"))
		why = "a bucket name cannot contain 'google'";
	free(copy);
	return why;
}

/* The prefix p (n bytes, trailing '/' already dropped): NULL or what is
 * wrong. */
static const char *prefix_problem(const char *p, size_t n)
{
	if (n > TPF_GCS_PREFIX_MAX)
		return "the object prefix is longer than 512 bytes";
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && (unsigned char)p[i] < 0x20)
			return "the object prefix has a control character";
		if (i < n && p[i] == 0x7f)
			return "the object prefix has a control character";
		if (i < n && p[i] != '/')
			continue;
		size_t len = i - start;
		if (len == 0 || (len == 1 && p[start] == '.') ||
		    (len == 2 && p[start] == '.' && p[start + 1] == '.'))
			return "the object prefix has an empty, '.' or '..' part";
		start = i + 1;
	}
	return NULL;
}

int tpf_gs_url_parse(const char *url, char **bucket, char **prefix, const char **why)
{
	*bucket = *prefix = NULL;
	if (strncmp(url, "gs://", 5)) {
		*why = "a Cloud Storage URL starts with gs://";
		return -1;
	}
	const char *b = url + 5, *slash = strchr(b, '/');
	size_t bn = slash ? (size_t)(slash - b) : strlen(b);
	if ((*why = bucket_problem(b, bn)))
		return -1;
	const char *p = slash ? slash + 1 : NULL;
	size_t pn = p ? strlen(p) : 0;
	while (pn && p[pn - 1] == '/')
		pn--;
	if (pn && (*why = prefix_problem(p, pn)))
		return -1;
	*bucket = xstrndup(b, bn);
	*prefix = pn ? xstrndup(p, pn) : NULL;
	return 0;
}

/* A mount's path: NULL (valid) or what is wrong. */
static const char *path_problem(const char *s)
{
	if (*s != '/')
		return "a mount path is absolute (starts with '/')";
	if (!strcmp(s, "/"))
		return "a mount cannot cover the whole file system";
	if (strlen(s) > TPF_MOUNT_PATH_MAX)
		return "a mount path has at most 256 bytes";
	for (const char *p = s; *p; p++) {
		unsigned char ch = (unsigned char)*p;
		/* Quoted everywhere, but /proc/mounts escapes spaces, and a
		 * path that needs quoting in a log line is an accident. */
		if (ch <= 0x20 || ch == 0x7f || strchr("\"'\\`$", ch))
			return "a mount path has no spaces, quotes, '\\', '$' or control characters";
	}
	if (strstr(s, "//") || strstr(s, "/./") || strstr(s, "/../"))
		return "a mount path has no empty, '.' or '..' parts";
	size_t n = strlen(s);
	if ((n >= 2 && !strcmp(s + n - 2, "/.")) || (n >= 3 && !strcmp(s + n - 3, "/..")))
		return "a mount path has no empty, '.' or '..' parts";
	for (const char *const *t = system_trees; *t; t++) {
		size_t tn = strlen(*t);
		if (!strncmp(s, *t, tn) && (s[tn] == 0 || s[tn] == '/'))
			return "a mount cannot go over or under a system directory (/etc, /usr, /var, "
			       "/dev, ...)";
	}
	for (const char *const *t = system_dirs; *t; t++)
		if (!strcmp(s, *t))
			return "a mount cannot replace a system directory; mount under it "
			       "(/mnt/data, /home/USER/data)";
	return NULL;
}

/* Is one of a and b the other or under it? */
static int nested(const char *a, const char *b)
{
	size_t an = strlen(a), bn = strlen(b), n = an < bn ? an : bn;
	return !strncmp(a, b, n) && (an == bn || (an < bn ? b[an] : a[bn]) == '/');
}

/* path: at x into m->path (normalised: trailing '/' dropped). 0 or -1. */
static int read_mount_path(struct cfg *c, yaml_node_t *x, struct tpf_mount *m)
{
	const char *s = cfg_want_text(c, x, "mounts.path", "an absolute directory such as /data", 0);
	if (!s)
		return -1;
	char *p = xstrdup(s);
	size_t n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = 0;
	const char *why = path_problem(p);
	if (why) {
		cfg_error(c, x, why, "'mounts.path' must be an absolute directory such as /data, got '%s'",
			  s);
		free(p);
		return -1;
	}
	m->path = p;
	return 0;
}

/* A "gs://BUCKET[/PREFIX]" at x for key `name`; 0 with *bucket, *prefix
 * set, or -1 after the error. */
static int read_gs_url(struct cfg *c, yaml_node_t *x, const char *name, char **bucket,
		       char **prefix)
{
	const char *s = cfg_want_text(c, x, name, "a Cloud Storage URL such as gs://my-bucket/data", 0);
	const char *why = NULL;
	if (!s)
		return -1;
	if (tpf_gs_url_parse(s, bucket, prefix, &why) == 0)
		return 0;
	cfg_error(c, x, why,
		  "'%s' must be gs://BUCKET[/PREFIX] with a valid bucket name, got '%s' "
		  "(rules: https://cloud.google.com/storage/docs/buckets#naming)",
		  name, s);
	return -1;
}

/* One entry of a mounts list into *m; 0, or -1 after its errors. */
static int read_mount(struct cfg *c, yaml_node_t *v, size_t idx, struct tpf_mount *m)
{
	struct cfg_map mm;
	yaml_node_t *x;
	int bad = 0, e;
	char where[48], owner[40];
	m->line = (int)v->start_mark.line + 1;
	m->column = (int)v->start_mark.column + 1;
	snprintf(where, sizeof(where), "in mount #%zu", idx + 1);
	snprintf(owner, sizeof(owner), "mount #%zu", idx + 1);
	if (cfg_map_open(&mm, c, v, "each mount",
			 "a mapping such as { path: /data, bucket: gs://my-bucket/data }", mount_keys,
			 where, owner) < 0)
		return -1;
	if ((x = cfg_map_require(&mm, "path", "the directory on the worker, e.g. path: /data")))
		bad |= read_mount_path(c, x, m);
	else
		bad = -1;
	if ((x = cfg_map_require(&mm, "bucket", "e.g. bucket: gs://my-bucket/datasets")))
		bad |= read_gs_url(c, x, "mounts.bucket", &m->bucket, &m->prefix);
	else
		bad = -1;
	if ((x = cfg_map_get(&mm, "mode"))) {
		if (cfg_want_enum(c, x, "mounts.mode", mode_words, "mount or copy", &e) == 0)
			m->mode = e == 1 ? TPF_MOUNT_COPY : TPF_MOUNT_FUSE;
		else
			bad = -1;
	}
	if ((x = cfg_map_get(&mm, "read_only")) && cfg_want_bool(c, x, "mounts.read_only", &m->read_only))
		bad = -1;
	return bad ? -1 : 0;
}

/* Refuse m when an earlier mount of the list has its path or nests with it. */
static int check_overlap(struct cfg *c, yaml_node_t *v, const struct tpf_mount *ms, size_t n,
			 const struct tpf_mount *m)
{
	for (size_t i = 0; i < n; i++) {
		/* Kept mounts have a path (read_mount succeeded); the analyzer
		 * cannot tell. */
		if (!ms[i].path)
			continue;
		if (!strcmp(ms[i].path, m->path)) {
			cfg_error(c, v, "give each directory one bucket",
				  "duplicate mount path '%s' (first at line %d)", m->path, ms[i].line);
			return -1;
		}
		if (nested(ms[i].path, m->path)) {
			cfg_error(c, v, "a mount inside another hides or is hidden by it; use "
				  "separate directories",
				  "mount path '%s' overlaps '%s' (line %d)", m->path, ms[i].path,
				  ms[i].line);
			return -1;
		}
	}
	return 0;
}

/* The mounts list v into st, replacing what st held. */
static void read_mounts(struct cfg *c, yaml_node_t *v, struct tpf_storage *st)
{
	if (cfg_is_null(v)) {
		release_mounts(st);
		return;
	}
	if (v->type != YAML_SEQUENCE_NODE) {
		cfg_type_error(c, v, "mounts", "a list of mounts",
			       "e.g. mounts: [{ path: /data, bucket: gs://my-bucket/data }]");
		return;
	}
	size_t n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	if (n > TPF_MOUNTS_MAX) {
		cfg_error(c, v, "each mount is set up before every start; merge prefixes into fewer "
			  "mounts",
			  "'mounts' lists %zu mounts, at most %d are allowed", n, TPF_MOUNTS_MAX);
		return;
	}
	struct tpf_mount *ms = n ? xcalloc(n, sizeof(*ms)) : NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *item = cfg_node(c, v->data.sequence.items.start[i]);
		struct tpf_mount *m = &ms[k];
		int ok = read_mount(c, item, i, m) == 0;
		/* A path read is checked even when the entry has other errors. */
		if (m->path && check_overlap(c, item, ms, k, m))
			ok = 0;
		if (ok) {
			k++;
			continue;
		}
		free(m->path);
		free(m->bucket);
		free(m->prefix);
		memset(m, 0, sizeof(*m));
	}
	release_mounts(st);
	st->mounts = ms;
	st->nmounts = k; /* any error fails the load: the rest is only for release */
}

void cfg_read_storage(struct cfg *c, const struct cfg_map *m, struct tpf_storage *st)
{
	yaml_node_t *x;
	if ((x = cfg_map_get(m, "mounts")))
		read_mounts(c, x, st);
	if ((x = cfg_map_get(m, "checkpoint_dir"))) {
		char *bucket = NULL, *prefix = NULL;
		if (cfg_is_null(x) || (x->type == YAML_SCALAR_NODE && !*cfg_text(x))) {
			free(st->checkpoint_dir); /* a group's "": none */
			st->checkpoint_dir = NULL;
		} else if (read_gs_url(c, x, "checkpoint_dir", &bucket, &prefix) == 0) {
			free(st->checkpoint_dir);
			st->checkpoint_dir = prefix ? xasprintf("gs://%s/%s", bucket, prefix)
						    : xasprintf("gs://%s", bucket);
		}
		free(bucket);
		free(prefix);
	}
	int install = !st->no_gcsfuse_install;
	if ((x = cfg_map_get(m, "install_gcsfuse")) &&
	    cfg_want_bool(c, x, "install_gcsfuse", &install) == 0)
		st->no_gcsfuse_install = !install;
}
