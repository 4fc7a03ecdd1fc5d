/*
 * A worker's home: the directories its environment names, and where its
 * screen sockets live.
 */
#include "providers/local/local_internal.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/xalloc.h"

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
	return xasprintf("/tmp/tpuform-screen-%.16s", hex);
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

	if (tpf_local_mkdir_private(home, d) < 0 || tpf_local_mkdir_private(tmp, d) < 0 ||
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
