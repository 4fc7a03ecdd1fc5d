/*
 * tpuform version (also `tpuform -version`): what a bug report must say
 * about the binary that ran. The version, the git commit it was built from
 * (with "-dirty" when the tree had uncommitted changes) and the build date
 * are stamped in by the Makefile (TPF_COMMIT, TPF_BUILD_DATE, only into
 * this object; a release tarball carries them in its .tarball-version).
 * The library versions are asked of the libraries at run time, so they
 * are the ones actually loaded, not the headers compiled against.
 *
 * -json mirrors `terraform version -json` (terraform_version, platform)
 * with tpuform's own names: tpuform_version, platform, commit, dirty,
 * build_date and libraries {name: version}.
 */
#include "cmd/cmd.h"

#include <curl/curl.h>
#include <git2.h>
#include <jansson.h>
#include <libssh2.h>
#include <openssl/crypto.h>
#include <string.h>
#include <sys/utsname.h>
#include <yaml.h>

#ifndef TPF_COMMIT
#define TPF_COMMIT "unknown"
#endif
#ifndef TPF_BUILD_DATE
#define TPF_BUILD_DATE "unknown"
#endif

struct lib_version {
	const char *name;
	char version[64];
};

enum { NLIBS = 6 };

/* Each library's own answer: curl_version_info(3), libssh2_version(3),
 * git_libgit2_version(), yaml_get_version_string(), jansson_version_str()
 * (jansson 2.13+), OpenSSL_version(3) (OPENSSL_VERSION_STRING: "3.0.17"). */
static void library_versions(struct lib_version *v)
{
	const curl_version_info_data *ci = curl_version_info(CURLVERSION_NOW);
	int maj = 0, min = 0, rev = 0;
	git_libgit2_version(&maj, &min, &rev);
	v[0].name = "libcurl";
	snprintf(v[0].version, sizeof(v[0].version), "%s", ci && ci->version ? ci->version : "?");
	v[1].name = "libssh2";
	snprintf(v[1].version, sizeof(v[1].version), "%s", libssh2_version(0));
	v[2].name = "libgit2";
	snprintf(v[2].version, sizeof(v[2].version), "%d.%d.%d", maj, min, rev);
	v[3].name = "libyaml";
	snprintf(v[3].version, sizeof(v[3].version), "%s", yaml_get_version_string());
	v[4].name = "jansson";
	snprintf(v[4].version, sizeof(v[4].version), "%s", jansson_version_str());
	v[5].name = "OpenSSL";
	snprintf(v[5].version, sizeof(v[5].version), "%s", OpenSSL_version(OPENSSL_VERSION_STRING));
}

/* "linux_amd64", as Terraform names platforms (GOOS_GOARCH). */
static void platform(char *buf, size_t len)
{
	struct utsname u;
	const char *os = "unknown", *arch = "unknown";
	if (uname(&u) == 0) {
		os = !strcmp(u.sysname, "Linux") ? "linux" : u.sysname;
		arch = !strcmp(u.machine, "x86_64")    ? "amd64"
		       : !strcmp(u.machine, "aarch64") ? "arm64"
						       : u.machine;
	}
	snprintf(buf, len, "%s_%s", os, arch);
}

/* Built from a tree with uncommitted changes: the commit ends "-dirty". */
static int dirty(const char *commit)
{
	const char *p = strstr(commit, "-dirty");
	return p && !p[6];
}

static int print_json(const struct lib_version *v, const char *plat)
{
	json_t *libs = json_object();
	for (int i = 0; i < NLIBS; i++)
		json_object_set_new(libs, v[i].name, json_string(v[i].version));
	json_t *o = json_pack("{s:s, s:s, s:s, s:b, s:s, s:o}", "tpuform_version", TPF_VERSION,
			      "platform", plat, "commit", TPF_COMMIT, "dirty", dirty(TPF_COMMIT),
			      "build_date", TPF_BUILD_DATE, "libraries", libs);
	if (!o)
		return TPF_EXIT_ERROR;
	int rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	printf("\n");
	return rc ? TPF_EXIT_ERROR : TPF_EXIT_OK;
}

static int run_version(struct tpf_cmd_ctx *ctx)
{
	struct lib_version v[NLIBS];
	char plat[160]; /* two utsname fields */
	library_versions(v);
	platform(plat, sizeof(plat));
	if (ctx->o.json)
		return print_json(v, plat);
	printf("tpuform v%s\n", TPF_VERSION);
	printf("commit %s, built %s, on %s\n", TPF_COMMIT, TPF_BUILD_DATE, plat);
	for (int i = 0; i < NLIBS; i++)
		printf("  %-8s %s\n", v[i].name, v[i].version);
	return TPF_EXIT_OK;
}

const struct tpf_cmd tpf_cmd_version = {
	.name = "version",
	.summary = "Print the tpuform version",
	.description = "  Print the version of this tpuform, the git commit it was built from\n"
		       "  (\"-dirty\": with uncommitted changes), its build date, and the\n"
		       "  versions of the libraries it runs with. Give them in a bug report.\n",
	.needs = TPF_CMD_JSON,
	.max_args = 0,
	.run = run_version,
};
