/*
 * A worker's home: the directories its environment names, and where its
 * screen sockets live.
 */
#include "providers/local/local_internal.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * screen binds its socket at "$SCREENDIR/<pid>.<session>", and a Unix
 * socket path holds at most 107 bytes (sun_path, unix(7)); past that,
 * `screen -dmS` exits 0 yet no session exists. tpuform's sessions are
 * "tpuform-<fleet>" (fleet: at most 40 characters) and pids have up to 7
 * digits, so "/<pid>.<session>" takes up to 57 bytes: SCREENDIR may be
 * 50 bytes long.
 */
#define SCREENDIR_MAX 50

char *tpf_local_screendir(const char *home)
{
	char *in_home = xasprintf("%s/.screen", home);
	if (strlen(in_home) <= SCREENDIR_MAX)
		return in_home;
	free(in_home);
	/* Too deep for sockets: a short name, derived from the home so that
	 * every process computes the same one. */
	char hex[65];
	tpf_sha256_hex(home, strlen(home), hex);
	return xasprintf(TPF_LOCAL_LINK_PREFIX "%.16s", hex);
}

/* screen's findrcfile(): char buf[256], filled with "%s/.screenrc". */
#define SCREENRC_HOME_MAX (256 - sizeof("/.screenrc") - 1)

int tpf_local_home_needs_screenrc(const char *home)
{
	return strlen(home) > SCREENRC_HOME_MAX;
}

/*
 * 1 if `link` is a symbolic link of ours to `target`. /tmp is shared: a
 * link someone else made could send our sockets anywhere.
 */
static int our_link(const char *link, const char *target)
{
	struct stat st;
	char buf[4096];
	if (lstat(link, &st) < 0 || !S_ISLNK(st.st_mode) || st.st_uid != geteuid())
		return 0;
	ssize_t n = readlink(link, buf, sizeof(buf) - 1);
	if (n < 0)
		return 0;
	buf[n] = '\0';
	return !strcmp(buf, target);
}

/* The short SCREENDIR is a symbolic link to <home>/.screen: the sockets
 * stay in the home (and go with it), only their path is short. */
static int prepare_link(const char *link, const char *target, struct tpf_diags *d)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		if (our_link(link, target))
			return 0;
		struct stat st;
		if (lstat(link, &st) == 0) {
			if (!S_ISLNK(st.st_mode) || st.st_uid != geteuid())
				return tpf_errorx(d, NULL, "remove it and try again",
						  "'%s' exists and is not a symbolic link of this user", link);
			unlink(link); /* ours but stale: point it at this home */
		}
		if (symlink(target, link) == 0)
			return 0;
		if (errno != EEXIST)
			return tpf_error(d, "cannot create symbolic link '%s': %s", link, strerror(errno));
		/* Another thread made it meanwhile: check it again. */
	}
	return our_link(link, target) ? 0
				      : tpf_error(d, "cannot create symbolic link '%s'", link);
}

int tpf_local_prepare_home(const char *root, const char *home, struct tpf_diags *d)
{
	char *screendir = tpf_local_screendir(home);
	char *in_home = xasprintf("%s/.screen", home);
	char *tmp = xasprintf("%s/tmp", home);
	char *bucket = xasprintf("%s/bucket", root);
	int err = 0;

	if (strlen(home) > TPF_LOCAL_HOME_MAX)
		/* Said now: screen would only exit, and the job's session
		 * "did not appear". */
		err = tpf_errorx(d, NULL, "set provider.local.root in the fleet file to a shorter path",
				 "worker home '%s' is %zu bytes long, too long for screen and the "
				 "job's files: at most %d bytes",
				 home, strlen(home), TPF_LOCAL_HOME_MAX);
	else if (tpf_local_mkdir_private(home, d) < 0 || tpf_local_mkdir_private(tmp, d) < 0 ||
		 tpf_local_mkdir_private(in_home, d) < 0 || tpf_mkdir_p(bucket, 0700, d) < 0)
		err = TPF_ERROR;
	else if (strcmp(screendir, in_home))
		err = prepare_link(screendir, in_home, d);
	free(screendir);
	free(in_home);
	free(tmp);
	free(bucket);
	return err;
}

int tpf_local_forget_home(const char *home, struct tpf_diags *d)
{
	char *screendir = tpf_local_screendir(home);
	char *in_home = xasprintf("%s/.screen", home);
	int err = 0;
	if (strcmp(screendir, in_home) && our_link(screendir, in_home) && unlink(screendir) < 0 &&
	    errno != ENOENT)
		err = tpf_error(d, "cannot remove '%s': %s", screendir, strerror(errno));
	free(screendir);
	free(in_home);
	return err;
}

char *tpf_local_home_node(const char *root, const char *home)
{
	size_t rlen = strlen(root);
	if (strncmp(home, root, rlen) || strncmp(home + rlen, "/nodes/", 7))
		return NULL;
	const char *name = home + rlen + 7;
	const char *slash = strchr(name, '/');
	if (!slash || strncmp(slash, "/workers/", 9))
		return NULL;
	const char *index = slash + 9;
	if (!*index || strspn(index, "0123456789") != strlen(index))
		return NULL;
	char *node = xstrndup(name, (size_t)(slash - name));
	if (!tpf_local_name_valid(node)) {
		free(node);
		return NULL;
	}
	return node;
}

void tpf_local_homes_add(struct tpf_local_homes *h, const char *home)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(h->items[i], home))
			return;
	XGROW(h->items, h->n + 1, h->alloc);
	h->items[h->n++] = xstrdup(home);
}

void tpf_local_homes_release(struct tpf_local_homes *h)
{
	for (size_t i = 0; i < h->n; i++)
		free(h->items[i]);
	free(h->items);
	memset(h, 0, sizeof(*h));
}

void tpf_local_linked_homes(const char *root, struct tpf_local_homes *out)
{
	const char *base = strrchr(TPF_LOCAL_LINK_PREFIX, '/') + 1; /* "tpuform-screen-" */
	DIR *dir = opendir("/tmp");
	if (!dir)
		return;
	struct dirent *e;
	while ((e = readdir(dir))) {
		if (strncmp(e->d_name, base, strlen(base)))
			continue;
		char *link = xasprintf("/tmp/%s", e->d_name);
		struct stat st;
		char target[4096];
		ssize_t n = -1;
		if (lstat(link, &st) == 0 && S_ISLNK(st.st_mode) && st.st_uid == geteuid())
			n = readlink(link, target, sizeof(target) - 1);
		free(link);
		if (n < 9)
			continue;
		target[n] = '\0';
		if (strcmp(target + n - 8, "/.screen"))
			continue;
		target[n - 8] = '\0';
		char *node = tpf_local_home_node(root, target);
		if (node)
			tpf_local_homes_add(out, target);
		free(node);
	}
	closedir(dir);
}
