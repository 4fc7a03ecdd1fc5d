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
	/* Too deep for sockets: a short directory named after the home, so
	 * that every process computes the same one. */
	char hex[65];
	tpf_sha256_hex(home, strlen(home), hex);
	return xasprintf("/tmp/tpuform-screen-%.16s", hex);
}

/* A directory outside the home must be ours alone: screen refuses others,
 * and another user's directory there would be a way in. */
static int prepare_outside(const char *dir, struct tpf_diags *d)
{
	struct stat st;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return tpf_error(d, "cannot create directory '%s': %s", dir, strerror(errno));
	if (lstat(dir, &st) < 0)
		return tpf_error(d, "cannot stat '%s': %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return tpf_errorx(d, NULL, "remove it and try again",
				  "'%s' is not a directory owned by this user", dir);
	if (chmod(dir, 0700) < 0)
		return tpf_error(d, "cannot chmod '%s': %s", dir, strerror(errno));
	return 0;
}

int tpf_local_prepare_home(const char *root, const char *home, struct tpf_diags *d)
{
	char *screendir = tpf_local_screendir(home);
	char *in_home = xasprintf("%s/.screen", home);
	char *tmp = xasprintf("%s/tmp", home);
	char *bucket = xasprintf("%s/bucket", root);
	int err = 0;

	if (tpf_local_mkdir_private(home, d) < 0 || tpf_local_mkdir_private(tmp, d) < 0 ||
	    tpf_mkdir_p(bucket, 0700, d) < 0) {
		err = TPF_ERROR;
		goto done;
	}
	if (!strcmp(screendir, in_home)) {
		err = tpf_local_mkdir_private(screendir, d);
		goto done;
	}
	err = prepare_outside(screendir, d);
	/* <home>/.screen points there, so people find the sockets. */
	if (!err && symlink(screendir, in_home) < 0 && errno != EEXIST)
		err = tpf_error(d, "cannot create symbolic link '%s': %s", in_home, strerror(errno));
done:
	free(screendir);
	free(in_home);
	free(tmp);
	free(bucket);
	return err;
}

int tpf_local_forget_home(const char *home, struct tpf_diags *d)
{
	char *screendir = tpf_local_screendir(home);
	int err = 0;
	if (strncmp(screendir, home, strlen(home)))
		err = tpf_remove_tree(screendir, d);
	free(screendir);
	return err;
}
