/*
 * Cloud Storage keys of the fleet file (config/config_mounts.c): mounts,
 * checkpoint_dir and install_gcsfuse, fleet-wide and per group; their
 * FILE:LINE:COL errors; gs:// URLs and Google's bucket naming rules; and
 * what reaches the worker's script (templates/render.c via
 * plan/worker_script.c): the settings, and a script hash that changes with
 * the mounts (so the plan re-provisions the workers).
 */
#include "tests/unit/unit.h"
#include "config/config.h"
#include "plan/worker_script.h"
#include "state/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEAD "fleet: f\nprovider: { local: {} }\nrun: train\n"
#define GROUPS                                                                           \
	"groups:\n  - { name: g, accelerator_type: v2-8, runtime_version: tpu-vm-base, " \
	"zones: [us-central1-f], count: 1%s }\n"

/* HEAD, then top (fleet-wide keys), then one group with `group` appended
 * to its flow mapping (", mounts: []"). */
static int parse(struct tpf_fleet *f, const char *top, const char *group, struct tpf_diags *d)
{
	char text[4096];
	char groups[1024];
	snprintf(groups, sizeof(groups), GROUPS, group);
	snprintf(text, sizeof(text), HEAD "%s%s", top, groups);
	return tpf_fleet_parse(f, "fleet.yaml", text, strlen(text), d);
}

static void test_config_mounts__fleet_wide_and_defaults(void)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	int rc = parse(&f,
		       "checkpoint_dir: gs://my-ckpt/runs/r1/\n"
		       "mounts:\n"
		       "  - { path: /data/, bucket: gs://my-data/sets/imagenet/ }\n"
		       "  - { path: /mnt/models, bucket: gs://my.models.bucket, mode: copy, "
		       "read_only: true }\n",
		       "", &d);
	CHECKF(rc == 0, "%s", d.n ? d.items[0].summary : "");
	if (rc)
		return;
	CHECK_STR(f.storage.checkpoint_dir, "gs://my-ckpt/runs/r1");
	CHECK_INT(f.storage.nmounts, 2);
	CHECK_INT(f.storage.no_gcsfuse_install, 0);
	const struct tpf_mount *m = &f.storage.mounts[0];
	CHECK_STR(m->path, "/data");
	CHECK_STR(m->bucket, "my-data");
	CHECK_STR(m->prefix, "sets/imagenet");
	CHECK_INT(m->mode, TPF_MOUNT_FUSE);
	CHECK_INT(m->read_only, 0);
	CHECK_INT(m->line, 6);
	m = &f.storage.mounts[1];
	CHECK_STR(m->bucket, "my.models.bucket");
	CHECK(m->prefix == NULL);
	CHECK_INT(m->mode, TPF_MOUNT_COPY);
	CHECK_INT(m->read_only, 1);
	/* The group inherits the fleet's. */
	const struct tpf_storage *gs = tpf_fleet_storage(&f, "g");
	CHECK(gs != &f.storage);
	CHECK_INT(gs->nmounts, 2);
	CHECK_STR(gs->mounts[1].path, "/mnt/models");
	CHECK_STR(gs->checkpoint_dir, "gs://my-ckpt/runs/r1");
	/* A node whose group is gone gets the fleet's. */
	CHECK(tpf_fleet_storage(&f, "gone") == &f.storage);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

static void test_config_mounts__group_replaces(void)
{
	static const char top[] = "checkpoint_dir: gs://ckpt-bucket\n"
				  "mounts: [{ path: /data, bucket: gs://data-bucket }]\n";
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	/* A group's list replaces the fleet's whole. */
	int rc = parse(&f, top,
		       ", mounts: [{ path: /scratch, bucket: gs://scratch-bucket/x }], "
		       "install_gcsfuse: false",
		       &d);
	CHECKF(rc == 0, "%s", d.n ? d.items[0].summary : "");
	if (rc == 0) {
		const struct tpf_storage *gs = tpf_fleet_storage(&f, "g");
		CHECK_INT(gs->nmounts, 1);
		CHECK_STR(gs->mounts[0].path, "/scratch");
		CHECK_STR(gs->checkpoint_dir, "gs://ckpt-bucket");
		CHECK_INT(gs->no_gcsfuse_install, 1);
		CHECK_INT(f.storage.nmounts, 1);
		CHECK_STR(f.storage.mounts[0].path, "/data");
		CHECK_INT(f.storage.no_gcsfuse_install, 0);
		tpf_fleet_release(&f);
	}
	tpf_diags_release(&d);
	/* mounts: [] drops them, checkpoint_dir: "" clears it. */
	rc = parse(&f, top, ", mounts: [], checkpoint_dir: ''", &d);
	CHECKF(rc == 0, "%s", d.n ? d.items[0].summary : "");
	if (rc == 0) {
		const struct tpf_storage *gs = tpf_fleet_storage(&f, "g");
		CHECK_INT(gs->nmounts, 0);
		CHECK(gs->checkpoint_dir == NULL);
		tpf_fleet_release(&f);
	}
	tpf_diags_release(&d);
}

static void test_config_mounts__refused(void)
{
	static const struct {
		const char *top;
		const char *first; /* exact summary of the first diagnostic */
	} bad[] = {
		{ "mounts: { path: /data }\n",
		  "fleet.yaml:4:9: 'mounts' must be a list of mounts, got a mapping" },
		{ "mounts: [{ bucket: gs://abc }]\n",
		  "fleet.yaml:4:10: mount #1 is missing required key 'path'" },
		{ "mounts: [{ path: /data }]\n",
		  "fleet.yaml:4:10: mount #1 is missing required key 'bucket'" },
		{ "mounts: [{ path: /data, bucket: gs://abc, mod: copy }]\n",
		  "fleet.yaml:4:43: unknown key 'mod' in mount #1; did you mean 'mode'?" },
		{ "mounts: [{ path: data, bucket: gs://abc }]\n",
		  "fleet.yaml:4:18: 'mounts.path' must be an absolute directory such as /data, got "
		  "'data'" },
		{ "mounts: [{ path: /, bucket: gs://abc }]\n",
		  "fleet.yaml:4:18: 'mounts.path' must be an absolute directory such as /data, got '/'" },
		{ "mounts: [{ path: /usr/local/data, bucket: gs://abc }]\n",
		  "fleet.yaml:4:18: 'mounts.path' must be an absolute directory such as /data, got "
		  "'/usr/local/data'" },
		{ "mounts: [{ path: /home, bucket: gs://abc }]\n",
		  "fleet.yaml:4:18: 'mounts.path' must be an absolute directory such as /data, got "
		  "'/home'" },
		{ "mounts: [{ path: /data/../etc, bucket: gs://abc }]\n",
		  "fleet.yaml:4:18: 'mounts.path' must be an absolute directory such as /data, got "
		  "'/data/../etc'" },
		{ "mounts: [{ path: '/my data', bucket: gs://abc }]\n",
		  "fleet.yaml:4:18: 'mounts.path' must be an absolute directory such as /data, got "
		  "'/my data'" },
		{ "mounts: [{ path: /data, bucket: my-bucket }]\n",
		  "fleet.yaml:4:33: 'mounts.bucket' must be gs://BUCKET[/PREFIX] with a valid bucket "
		  "name, got 'my-bucket' (rules: https://cloud.google.com/storage/docs/buckets#naming)" },
		{ "mounts: [{ path: /data, bucket: gs://My-Bucket }]\n",
		  "fleet.yaml:4:33: 'mounts.bucket' must be gs://BUCKET[/PREFIX] with a valid bucket "
		  "name, got 'gs://My-Bucket' (rules: "
		  "https://cloud.google.com/storage/docs/buckets#naming)" },
		{ "mounts: [{ path: /data, bucket: gs://abc, mode: fuse }]\n",
		  "fleet.yaml:4:49: 'mounts.mode' must be mount or copy, got 'fuse'" },
		{ "mounts: [{ path: /data, bucket: gs://abc, read_only: yes }]\n",
		  "fleet.yaml:4:54: 'mounts.read_only' must be true or false, got 'yes'" },
		{ "mounts:\n  - { path: /data, bucket: gs://abc }\n  - { path: /data/, bucket: "
		  "gs://def }\n",
		  "fleet.yaml:6:5: duplicate mount path '/data' (first at line 5)" },
		{ "mounts:\n  - { path: /data, bucket: gs://abc }\n  - { path: /data/sub, bucket: "
		  "gs://def }\n",
		  "fleet.yaml:6:5: mount path '/data/sub' overlaps '/data' (line 5)" },
		{ "checkpoint_dir: /ckpt\n",
		  "fleet.yaml:4:17: 'checkpoint_dir' must be gs://BUCKET[/PREFIX] with a valid bucket "
		  "name, got '/ckpt' (rules: https://cloud.google.com/storage/docs/buckets#naming)" },
		{ "install_gcsfuse: maybe\n",
		  "fleet.yaml:4:18: 'install_gcsfuse' must be true or false, got 'maybe'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tpf_fleet f;
		struct tpf_diags d = TPF_DIAGS_INIT;
		int rc = parse(&f, bad[i].top, "", &d);
		CHECKF(rc != 0, "case %zu accepted: %s", i, bad[i].top);
		CHECKF(d.n > 0 && !strcmp(d.items[0].summary, bad[i].first),
		       "case %zu:\n#   got:  %s\n#   want: %s", i, d.n ? d.items[0].summary : "(none)",
		       bad[i].first);
		tpf_diags_release(&d);
	}
}

static void test_config_mounts__count_limit(void)
{
	char top[4096] = "mounts:\n";
	for (int i = 0; i <= TPF_MOUNTS_MAX; i++) {
		char line[80];
		snprintf(line, sizeof(line), "  - { path: /data/d%d, bucket: gs://abc }\n", i);
		strcat(top, line);
	}
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(parse(&f, top, "", &d) != 0);
	CHECK_STR(d.n ? d.items[0].summary : "",
		  "fleet.yaml:5:3: 'mounts' lists 17 mounts, at most 16 are allowed");
	tpf_diags_release(&d);
	/* 16 is fine. */
	*strrchr(top, '-') = 0;
	*strrchr(top, '\n') = 0;
	strcat(top, "\n");
	CHECK(parse(&f, top, "", &d) == 0);
	CHECK_INT(f.storage.nmounts, TPF_MOUNTS_MAX);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

static void test_config_mounts__bucket_names(void)
{
	static const struct {
		const char *url, *bucket, *prefix; /* bucket NULL: refused */
	} cases[] = {
		{ "gs://abc", "abc", NULL },
		{ "gs://abc/", "abc", NULL },
		{ "gs://a_b-c.d/x//y", NULL, NULL }, /* an empty part */
		{ "gs://a_b-c.d/x/y/", "a_b-c.d", "x/y" },
		{ "gs://ab", NULL, NULL },
		{ "gs://-abc", NULL, NULL },
		{ "gs://abc-", NULL, NULL },
		{ "gs://abc..def", NULL, NULL },
		{ "gs://1.2.3.4", NULL, NULL },
		{ "gs://1.2.3.4a", "1.2.3.4a", NULL },
		{ "gs://googbucket", NULL, NULL },
		{ "gs://my-google-data", NULL, NULL },
		{ "gs://my-g00gle-data", NULL, NULL },
		{ "gs://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", /* 63 */
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", NULL },
		{ "gs://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", NULL, NULL },
		{ "gs://abc/./x", NULL, NULL },
		{ "gs://abc/x/..", NULL, NULL },
		{ "gs://abc/x\ty", NULL, NULL },
		{ "s3://abc", NULL, NULL },
		{ "gs://", NULL, NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *b = NULL, *p = NULL;
		const char *why = NULL;
		int rc = tpf_gs_url_parse(cases[i].url, &b, &p, &why);
		CHECKF((rc == 0) == (cases[i].bucket != NULL), "case %zu (%s): rc %d, %s", i,
		       cases[i].url, rc, why ? why : "");
		if (rc == 0 && cases[i].bucket) {
			CHECK_STR(b, cases[i].bucket);
			CHECK_STR(p, cases[i].prefix);
		}
		if (rc != 0)
			CHECK(why != NULL && b == NULL && p == NULL);
		free(b);
		free(p);
	}
	/* Dotted names: up to 222 characters, 63 per part. */
	char url[300] = "gs://";
	for (int i = 0; i < 3; i++)
		strcat(url, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.");
	strcat(url, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"); /* 3 x 64 + 30 = 222 */
	char *b = NULL, *p = NULL;
	const char *why = NULL;
	url[strlen(url) - 3] = 0;
	CHECKF(tpf_gs_url_parse(url, &b, &p, &why) == 0, "%s", why ? why : "");
	CHECK_INT(b ? strlen(b) : 0, 222);
	free(b);
	free(p);
	strcat(url, "b");
	CHECK(tpf_gs_url_parse(url, &b, &p, &why) != 0);
}

/* The script head a 1-worker node of group g would get under fleet text. */
static char *script_for(const char *top, const char *group, char **hash)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	*hash = NULL;
	if (parse(&f, top, group, &d)) {
		CHECKF(0, "%s", d.n ? d.items[0].summary : "");
		tpf_diags_release(&d);
		return NULL;
	}
	struct tpf_state_node n;
	memset(&n, 0, sizeof(n));
	n.name = "f-g-0";
	n.group = "g";
	n.recipe.workers = 1;
	n.job.run = "train";
	char *script = tpf_provision_render(&f, &n, NULL, 0, hash);
	char *h2 = tpf_provision_hash(&f, &n, NULL, 0);
	CHECK_STR(h2, *hash); /* the plan's hash is the script's */
	free(h2);
	tpf_fleet_release(&f);
	return script;
}

static void test_config_mounts__script(void)
{
	char *h0, *h1, *h2, *h3;
	char *none = script_for("", "", &h0);
	char *one = script_for("checkpoint_dir: gs://ckpt-bucket/r1\n"
			       "mounts: [{ path: /data, bucket: gs://data-bucket/sets, read_only: "
			       "true }, { path: /m, bucket: gs://data-bucket, mode: copy }]\n",
			       "", &h1);
	char *ro = script_for("checkpoint_dir: gs://ckpt-bucket/r1\n"
			      "mounts: [{ path: /data, bucket: gs://data-bucket/sets }, "
			      "{ path: /m, bucket: gs://data-bucket, mode: copy }]\n",
			      "", &h2);
	char *nofuse = script_for("", ", install_gcsfuse: false, mounts: [{ path: /data, bucket: "
				      "gs://data-bucket }]",
				  &h3);
	if (!none || !one || !ro || !nofuse)
		goto out;
	CHECK(strstr(none, "\nTPUFORM_MOUNTS=") == NULL);
	CHECK(strstr(none, "\nTPUFORM_CHECKPOINT_URL=") == NULL);
	CHECK(strstr(one, "\nTPUFORM_CHECKPOINT_URL='gs://ckpt-bucket/r1'\n"
			  "TPUFORM_MOUNTS='2'\nTPUFORM_GCSFUSE_INSTALL='1'\n"
			  "TPUFORM_MOUNT_1_PATH='/data'\nTPUFORM_MOUNT_1_BUCKET='data-bucket'\n"
			  "TPUFORM_MOUNT_1_PREFIX='sets'\nTPUFORM_MOUNT_1_MODE='mount'\n"
			  "TPUFORM_MOUNT_1_RO='1'\nTPUFORM_MOUNT_2_PATH='/m'\n"
			  "TPUFORM_MOUNT_2_BUCKET='data-bucket'\nTPUFORM_MOUNT_2_PREFIX=''\n"
			  "TPUFORM_MOUNT_2_MODE='copy'\nTPUFORM_MOUNT_2_RO='0'\n") != NULL);
	CHECK(strstr(nofuse, "\nTPUFORM_GCSFUSE_INSTALL='0'\n") != NULL);
	/* Every change of a mount changes the hash the plan compares. */
	CHECK(strcmp(h0, h1) != 0);
	CHECK(strcmp(h1, h2) != 0);
	CHECK(strcmp(h2, h3) != 0);
out:
	free(none);
	free(one);
	free(ro);
	free(nofuse);
	free(h0);
	free(h1);
	free(h2);
	free(h3);
}

int main(void)
{
	RUN(test_config_mounts__fleet_wide_and_defaults);
	RUN(test_config_mounts__group_replaces);
	RUN(test_config_mounts__refused);
	RUN(test_config_mounts__count_limit);
	RUN(test_config_mounts__bucket_names);
	RUN(test_config_mounts__script);
	return unit_done();
}
