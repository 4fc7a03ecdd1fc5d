/*
 * Rules shared by every transport (providers/transport.h).
 */
#include "providers/transport.h"

#include <string.h>

/* Why path breaks the rule, or NULL if it does not. */
static const char *path_problem(const char *path)
{
	if (!path || !*path)
		return "it is empty";
	if (path[0] == '/')
		return "it is absolute";
	if (strlen(path) > TPF_REMOTE_PATH_MAX)
		return "it is too long";
	for (const char *p = path; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return "it holds a control character";
	for (const char *s = path; s;) {
		const char *slash = strchr(s, '/');
		size_t n = slash ? (size_t)(slash - s) : strlen(s);
		if (n == 0)
			return "it has an empty part ('//' or a trailing '/')";
		if ((n == 1 && s[0] == '.') || (n == 2 && !strncmp(s, "..", 2)))
			return "it has a '.' or '..' part";
		s = slash ? slash + 1 : NULL;
	}
	return NULL;
}

/* The error for a remote path refused for `why`; `expected` says what a
 * good one is. The path is cut at 100 bytes. */
static int path_refused(const char *path, const char *address, const char *why,
			const char *expected, struct tpf_diags *d)
{
	return tpf_errorx(d, address, NULL,
			  "path '%.*s%s' on worker '%s' is not valid (%s): expected %s of at most "
			  "%d bytes",
			  100, path ? path : "", path && strlen(path) > 100 ? "..." : "",
			  address ? address : "", why, expected, TPF_REMOTE_PATH_MAX);
}

int tpf_remote_path_check(const char *path, const char *address, struct tpf_diags *d)
{
	const char *why = path_problem(path);
	return why ? path_refused(path, address, why,
				  "a path relative to the worker's home, without empty, '.' or "
				  "'..' parts,", d)
		   : 0;
}

int tpf_transport_output_too_large(const char *address, size_t limit, struct tpf_diags *d)
{
	char lim[32];
	return tpf_errorx(d, address,
			  "keep the command's output smaller (e.g. pipe it through tail -n 1000); "
			  "for a job log use 'tpuform logs -n LINES'",
			  "command on worker '%s' printed more than %s: it was stopped", address,
			  tpf_fmt_bytes(limit, lim));
}

int tpf_remote_file_path_check(const char *path, const char *address, struct tpf_diags *d)
{
	const char *why = NULL;
	if (!path || !*path)
		why = "it is empty";
	else if (strlen(path) > TPF_REMOTE_PATH_MAX)
		why = "it is too long";
	for (const char *p = path; !why && *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			why = "it holds a control character";
	return why ? path_refused(path, address, why, "a path without control characters", d) : 0;
}
