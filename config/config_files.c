/*
 * The files a fleet file names, checked by `validate` (config/config.h
 * tpf_fleet_check_files): they exist and can be read, and a missing one
 * gets a "did you mean" from the names in its folder, as an unknown key
 * does (config_yaml.c cfg_suggest).
 */
#include "config/config.h"
#include "config/config_yaml.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* At most this many names of a folder are weighed for a suggestion. */
#define SUGGEST_NAMES_MAX 4096

/* The name in path's folder nearest path's own, or NULL; caller frees. */
static char *nearest_in_folder(const char *path)
{
	char *dcopy = xstrdup(path), *bcopy = xstrdup(path);
	const char *dir = dirname(dcopy), *base = basename(bcopy);
	char *found = NULL;
	DIR *dh = opendir(dir);
	if (dh) {
		char **names = xcalloc(SUGGEST_NAMES_MAX + 1, sizeof(char *));
		size_t n = 0;
		struct dirent *e;
		while (n < SUGGEST_NAMES_MAX && (e = readdir(dh)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				names[n++] = xstrdup(e->d_name);
		closedir(dh);
		const char *hint = cfg_suggest(base, (const char *const *)names);
		if (hint)
			found = !strcmp(dir, ".") ? xstrdup(hint) : xasprintf("%s/%s", dir, hint);
		for (size_t i = 0; i < n; i++)
			free(names[i]);
		free(names);
	}
	free(dcopy);
	free(bcopy);
	return found;
}

/* One file named by `setting`: 0, or TPF_ERROR with a diagnostic. */
static int check_file(const char *setting, const char *path, struct tpf_diags *d)
{
	if (!path || !access(path, R_OK))
		return 0;
	int err = errno;
	if (err != ENOENT)
		return tpf_errorx(d, NULL, "Make the file readable by this user (chmod 600 for a key).",
				  "%s: cannot read '%s': %s", setting, path, strerror(err));
	char *near = nearest_in_folder(path);
	char *hint = near ? xasprintf("Did you mean '%s'?", near)
			  : xasprintf("Check the path: it is resolved against the fleet file's "
				      "folder.");
	int rc = tpf_errorx(d, NULL, hint, "%s: the file '%s' does not exist", setting, path);
	free(hint);
	free(near);
	return rc;
}

int tpf_fleet_check_files(const struct tpf_fleet *f, struct tpf_diags *d)
{
	int rc = check_file("ssh.private_key", f->ssh.private_key, d);
	if (f->provider == TPF_PROVIDER_GCP &&
	    check_file("provider.gcp.credentials", f->gcp.credentials, d))
		rc = TPF_ERROR;
	return rc;
}
