/*
 * The fleet file: walk the libyaml tree into struct tpf_fleet.
 *
 * The walk never stops at the first error: every value is checked and
 * every error recorded with its position (config/config_yaml.c), so one
 * `tpuform validate` shows everything to fix. Values that failed are left
 * unset, and checks that depend on them (node name length, duplicates) are
 * skipped rather than reported twice.
 *
 * This file: the top-level keys and sections, defaults, the public API.
 * Values: config/config_value.c. Groups: config/config_group.c. Lookups
 * on a loaded fleet: config/config_lookup.c.
 */
#include "config/config.h"
#include "config/config_limits.h"
#include "config/config_notify.h"
#include "config/config_jump.h"
#include "model/accel.h"
#include "config/config_walk.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLEET_NAME_MAX 40

/* Keys only a group takes (config/config_walk.h): at top level they are
 * accepted by the key check and then refused with "belongs in a group". */
static const char *const group_only_keys[] = { CFG_GROUP_ONLY_KEYS, CFG_COMPUTE_KEYS, NULL };
/* What the top level accepts: its own keys, the shared ones, the node
 * fields, then the group-only ones. */
static const char *const top_and_group_only_keys[] = {
	CFG_TOP_ONLY_KEYS, CFG_SHARED_KEYS, CFG_NODE_KEYS, CFG_GROUP_ONLY_KEYS,
	CFG_COMPUTE_KEYS, NULL,
};
static const char *const provider_keys[] = { "local", "gcp", NULL };
static const char *const local_keys[] = { "root", "create_delay", NULL };
static const char *const gcp_keys[] = {
	"project", "credentials", "endpoint", "impersonate_service_account", "quota_project", "api",
	NULL,
};
static const char *const state_keys[] = { "path", "gcs", NULL };
static const char *const state_gcs_keys[] = { "bucket", "prefix", "endpoint", NULL };
static const char *const quota_keys[] = {
	"zone", "accelerator_type", "preemptible", "spot", "on_demand", NULL,
};
static const char *const source_keys[] = { "repo", "ref", "transfer", NULL };
static const char *const ssh_keys[] = { "user",	  "private_key", "port", "address",
					 "os_login", "proxy_jump", "proxy_jump_host_key", NULL };
static const char *const transfer_words[] = { "clone", "bundle", NULL };
static const char *const address_words[] = { "auto", "external", "internal", NULL };

/* ---- sections */

/* provider.gcp's impersonate_service_account (a service account email)
 * and quota_project (a project ID): google/gcp_auth.h uses them. */
static void read_gcp_identity(struct cfg *c, struct tpf_fleet *f, struct cfg_map *gm)
{
	yaml_node_t *x;
	const char *s;
	if ((x = cfg_map_get(gm, "impersonate_service_account"))) {
		s = cfg_text(x);
		if (s && strchr(s, '@') && cfg_all_of(s, "-._@"))
			f->gcp.impersonate_service_account = xstrdup(s);
		else
			cfg_type_error(c, x, "impersonate_service_account",
				       "a service account email such as "
				       "'deployer@my-project.iam.gserviceaccount.com'", NULL);
	}
	if ((x = cfg_map_get(gm, "quota_project"))) {
		s = cfg_text(x);
		if (s && cfg_all_of(s, "-.:"))
			f->gcp.quota_project = xstrdup(s);
		else
			cfg_type_error(c, x, "quota_project",
				       "a Google Cloud project ID such as 'my-billing-project'", NULL);
	}
}

/* The longest CREATING the local provider simulates (seconds). A real
 * create takes minutes; an hour is plenty for tests of slow creates, and a
 * bound keeps a typo ("1000h") from hanging an apply. */
#define LOCAL_CREATE_DELAY_MAX 3600.0

static void read_create_delay(struct cfg *c, struct tpf_fleet *f, yaml_node_t *x)
{
	double secs;
	if (cfg_want_duration(c, x, "create_delay", &secs) < 0)
		return;
	if (!(secs >= 0 && secs <= LOCAL_CREATE_DELAY_MAX)) { /* NaN too */
		cfg_error(c, x, "a local node's create takes from 0s to 1h; 1s is the default",
			  "'create_delay' must be from 0s to 1h, got '%s'", cfg_text(x));
		return;
	}
	f->local.create_delay = secs;
}

static void read_provider(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v)
{
	struct cfg_map pm, lm, gm;
	yaml_node_t *x;

	if (!v || cfg_map_open(&pm, c, v, "'provider'", "a mapping with 'local' or 'gcp'",
			       provider_keys, "in provider", "provider") < 0)
		return;
	yaml_node_t *local = cfg_map_get(&pm, "local"), *gcp = cfg_map_get(&pm, "gcp");
	if (local && gcp)
		cfg_error(c, v, "keep one provider per fleet file",
			  "'provider' must have exactly one of 'local' or 'gcp', got both");
	else if (!local && !gcp && !pm.unknown)
		cfg_error(c, v, "for a first run on this machine: provider: { local: {} }",
			  "'provider' must have one of 'local' or 'gcp'");
	if (local) {
		f->provider = TPF_PROVIDER_LOCAL;
		if (cfg_map_open(&lm, c, local, "'local'", "a mapping such as { root: .tpuform/local }",
				 local_keys, "in provider.local", "provider.local") == 0) {
			if ((x = cfg_map_get(&lm, "root")))
				f->local.root = cfg_want_path(c, f, x, "root");
			if ((x = cfg_map_get(&lm, "create_delay")))
				read_create_delay(c, f, x);
		}
	}
	if (gcp) {
		f->provider = TPF_PROVIDER_GCP;
		if (cfg_map_open(&gm, c, gcp, "'gcp'", "a mapping such as { project: my-project }",
				 gcp_keys, "in provider.gcp", "provider.gcp") < 0)
			return;
		if ((x = cfg_map_require(&gm, "project",
					 "the Google Cloud project that holds the TPU quota"))) {
			const char *s = cfg_text(x);
			/* Also "example.com:proj", the domain-scoped form. */
			if (s && cfg_all_of(s, "-.:"))
				f->gcp.project = xstrdup(s);
			else
				cfg_type_error(c, x, "project", "a Google Cloud project ID such as 'my-project'",
					   NULL);
		}
		if ((x = cfg_map_get(&gm, "credentials")))
			f->gcp.credentials = cfg_want_path(c, f, x, "credentials");
		if ((x = cfg_map_get(&gm, "endpoint"))) {
			const char *s = cfg_text(x);
			if (s && (!strncmp(s, "https://", 8) || !strncmp(s, "http://", 7)) &&
			    strlen(s) > 8) {
				size_t len = strlen(s);
				while (len && s[len - 1] == '/') /* paths are appended with '/' */
					len--;
				f->gcp.endpoint = xstrndup(s, len);
			} else {
				cfg_type_error(c, x, "endpoint", "a URL such as 'https://tpu.googleapis.com'",
					   NULL);
			}
		}
		read_gcp_identity(c, f, &gm);
		cfg_read_gcp_api(c, f, &gm);
	}
}

/* state: { gcs: { bucket, prefix, endpoint } }: the Cloud Storage backend
 * (state/backend.h); its endpoint is checked when the backend opens. */
static void read_state_gcs(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v, int have_path)
{
	struct cfg_map m;
	yaml_node_t *x;
	if (have_path) {
		cfg_error(c, v, "Keep the state in a file (path) or in a bucket (gcs), not both.",
			  "'state' takes either 'path' or 'gcs'");
		return;
	}
	if (cfg_map_open(&m, c, v, "'gcs'", "a mapping such as { bucket: my-bucket, prefix: fleets }",
			 state_gcs_keys, "in state.gcs", "gcs") < 0 || !m.node)
		return;
	const char *s;
	if ((x = cfg_map_require(&m, "bucket", "the Cloud Storage bucket that holds the state")) &&
	    (s = cfg_want_text(c, x, "bucket", "a bucket name such as 'my-team-tpuform'", 0))) {
		if (cfg_all_of(s, "-_.") && strlen(s) >= 3 && strlen(s) <= 222)
			f->state_gcs.bucket = xstrdup(s);
		else
			cfg_type_error(c, x, "bucket", "a bucket name (3 to 222 of a-z 0-9 - _ .)",
				       NULL);
	}
	if ((x = cfg_map_get(&m, "prefix")) && (s = cfg_want_text(c, x, "prefix", "text", 1)))
		f->state_gcs.prefix = xstrdup(s);
	if ((x = cfg_map_get(&m, "endpoint")) &&
	    (s = cfg_want_text(c, x, "endpoint", "a URL such as 'https://storage.googleapis.com'", 0)))
		f->state_gcs.endpoint = xstrdup(s);
}

static void read_state(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v)
{
	struct cfg_map m;
	yaml_node_t *x;
	if (!v || cfg_map_open(&m, c, v, "'state'", "a mapping such as { path: tpuform.state.json }",
			       state_keys, "in state", "state") < 0)
		return;
	if ((x = cfg_map_get(&m, "path")))
		f->state_path = cfg_want_path(c, f, x, "path");
	if ((x = cfg_map_get(&m, "gcs")))
		read_state_gcs(c, f, x, cfg_map_get(&m, "path") != NULL);
}

static void read_quota_rule(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v)
{
	struct cfg_map m;
	yaml_node_t *x;
	struct tpf_quota_rule r = { NULL, NULL, -1, -1, -1, 0, 0 };
	static const char *const caps[] = { "preemptible", "spot", "on_demand" };
	int *slots[] = { &r.preemptible, &r.spot, &r.on_demand };
	int ncaps = 0, ok = 1;

	if (cfg_map_open(&m, c, v, "each quota rule",
			 "a mapping such as { zone: us-central1-f, accelerator_type: v2-8, "
			 "preemptible: 100 }", quota_keys, "in quota rule", "quota rule") < 0)
		return;
	if (!m.node) {
		cfg_type_error(c, v, "quota", "a list of rules, each a mapping", NULL);
		return;
	}
	r.line = (int)v->start_mark.line + 1;
	r.column = (int)v->start_mark.column + 1;
	if ((x = cfg_map_require(&m, "zone", NULL))) {
		const char *s = cfg_text(x);
		if (s && cfg_is_name(s))
			r.zone = xstrdup(s);
		else
			cfg_type_error(c, x, "zone", "a zone name such as 'us-central1-f'", NULL);
	}
	if ((x = cfg_map_require(&m, "accelerator_type", NULL))) {
		const char *why = NULL, *s = cfg_text(x);
		/* "*": the rule caps every accelerator type of its zone (plan/quota.h). */
		if (s && (!strcmp(s, "*") || tpf_accel_lookup(s, NULL, &why) == 0))
			r.accelerator_type = xstrdup(s);
		else
			cfg_type_error(c, x, "accelerator_type", why ? why : "an accelerator type", NULL);
	}
	for (int i = 0; i < 3; i++) {
		if ((x = cfg_map_get(&m, caps[i]))) {
			ncaps++;
			if (cfg_want_uint(c, x, caps[i], "a whole number >= 0", 0, INT_MAX, slots[i]) < 0)
				ok = 0;
		}
	}
	if (!ncaps && !m.unknown)
		cfg_error(c, v, NULL, "quota rule declares no cap; expected at least one of "
				      "'preemptible', 'spot' or 'on_demand'");
	for (size_t i = 0; ok && r.zone && r.accelerator_type && i < f->nquota; i++) {
		const struct tpf_quota_rule *o = &f->quota[i];
		if (o->zone && o->accelerator_type && !strcmp(o->zone, r.zone) &&
		    !strcmp(o->accelerator_type, r.accelerator_type)) {
			cfg_error(c, v, "merge the two rules into one",
				  "quota rule for zone '%s' and accelerator type '%s' is already declared "
				  "at line %d", r.zone, r.accelerator_type, o->line);
			break;
		}
	}
	f->quota = xrealloc(f->quota, (f->nquota + 1) * sizeof(*f->quota));
	f->quota[f->nquota++] = r;
}

static void read_quota(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v)
{
	if (!v || cfg_is_null(v))
		return;
	if (v->type != YAML_SEQUENCE_NODE) {
		cfg_type_error(c, v, "quota",
			   "a list of rules such as { zone: us-central1-f, accelerator_type: v2-8, "
			   "preemptible: 100 }", NULL);
		return;
	}
	for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++)
		read_quota_rule(c, f, cfg_node(c, *it));
}

static void read_source(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v)
{
	struct cfg_map m;
	yaml_node_t *x;
	int e;
	if (!v || cfg_map_open(&m, c, v, "'source'",
			       "a mapping such as { repo: https://github.com/org/model.git, ref: main }",
			       source_keys, "in source", "source") < 0)
		return;
	if ((x = cfg_map_require(&m, "repo", "a git URL, or the path of a local repository"))) {
		const char *s = cfg_want_text(c, x, "repo", "a git URL or a path", 0);
		if (s)
			f->source.repo = cfg_looks_like_url(s) ? xstrdup(s) : tpf_path_join(f->dir, s);
	}
	if ((x = cfg_map_get(&m, "ref"))) {
		const char *s = cfg_want_text(c, x, "ref", "a branch, tag or commit", 0);
		if (s)
			xstrset(&f->source.ref, s);
	}
	if ((x = cfg_map_get(&m, "transfer")) &&
	    cfg_want_enum(c, x, "transfer", transfer_words, "clone or bundle", &e) == 0)
		f->source.transfer = (enum tpf_transfer)e;
}

static void read_ssh(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v)
{
	struct cfg_map m;
	yaml_node_t *x;
	int e;
	if (!v || cfg_map_open(&m, c, v, "'ssh'", "a mapping such as { user: tpuform, port: 22 }",
			       ssh_keys, "in ssh", "ssh") < 0)
		return;
	if ((x = cfg_map_get(&m, "user"))) {
		const char *s = cfg_want_text(c, x, "user", "a user name", 0);
		if (s)
			xstrset(&f->ssh.user, s);
	}
	if ((x = cfg_map_get(&m, "private_key")))
		f->ssh.private_key = cfg_want_path(c, f, x, "private_key");
	if ((x = cfg_map_get(&m, "port")))
		cfg_want_uint(c, x, "port", "a port number from 1 to 65535", 1, 65535, &f->ssh.port);
	if ((x = cfg_map_get(&m, "address")) &&
	    cfg_want_enum(c, x, "address", address_words, "one of auto, external or internal", &e) == 0)
		f->ssh.address = (enum tpf_ssh_address)e;
	if ((x = cfg_map_get(&m, "os_login")))
		cfg_want_bool(c, x, "os_login", &f->ssh.os_login);
	cfg_read_jump(c, f, cfg_map_get(&m, "proxy_jump"), cfg_map_get(&m, "proxy_jump_host_key"));
}

static void read_fleet(struct cfg *c, struct tpf_fleet *f, yaml_node_t *root)
{
	struct cfg_map m, sm;
	yaml_node_t *x, *groups;
	int fleet_run = 0;

	if (!root) {
		yaml_mark_t start = { 0, 0, 0 };
		cfg_error_mark(c, &start, NULL, "the fleet file is empty; expected a mapping with "
						"'fleet', 'provider' and 'groups'");
		return;
	}
	if (cfg_map_open(&m, c, root, "the fleet file",
			 "a mapping with keys such as 'fleet', 'provider' and 'groups'",
			 top_and_group_only_keys, "at top level", "the fleet file") < 0)
		return;
	for (const char *const *k = group_only_keys; *k; k++)
		if ((x = cfg_map_get(&m, *k)))
			cfg_error(c, x, "move it into an entry of 'groups:' (each group has a name, "
					"accelerator_type, runtime_version, zones and count)",
				  "'%s' belongs in a group, not at top level", *k);
	if ((x = cfg_map_require(&m, "fleet", "name the fleet, e.g. fleet: my-fleet"))) {
		const char *s = cfg_want_name(c, x, "fleet", FLEET_NAME_MAX);
		if (s)
			f->name = xstrdup(s);
	}
	read_provider(c, f, cfg_map_require(&m, "provider",
					    "e.g. provider: { local: {} } to try tpuform on this machine"));
	read_state(c, f, cfg_map_get(&m, "state"));
	read_quota(c, f, cfg_map_get(&m, "quota"));
	read_source(c, f, cfg_map_get(&m, "source"));
	read_ssh(c, f, cfg_map_get(&m, "ssh"));
	cfg_read_env(c, cfg_map_get(&m, "env"), "in env", &f->env);
	if ((x = cfg_map_get(&m, "setup"))) {
		const char *s = cfg_want_text(c, x, "setup", "a shell command", 1);
		if (s && *s)
			f->setup = xstrdup(s);
	}
	if ((x = cfg_map_get(&m, "run"))) {
		const char *s = cfg_want_text(c, x, "run", "a shell command", 0);
		if (s)
			f->run = xstrdup(s);
		fleet_run = 1; /* even if invalid: do not also call it missing */
	}
	cfg_read_notify(c, f, cfg_map_get(&m, "notify"));
	cfg_read_monitoring(c, f, cfg_map_get(&m, "monitoring"));
	/* Before the groups: they take on_budget from the fleet. */
	cfg_read_budget(c, cfg_map_get(&m, "budget"), "the fleet", &f->budget);
	cfg_read_on_budget(c, cfg_map_get(&m, "on_budget"), &f->on_budget);
	cfg_read_prices(c, f, cfg_map_get(&m, "prices"));
	cfg_read_job_policy(c, &m, &f->policy);
	cfg_check_job_policy(c, &m, &f->policy);
	cfg_read_node_fields(c, &m, &f->node);
	cfg_read_storage(c, &m, &f->storage);
	groups = cfg_map_require(&m, "groups",
				 "e.g. groups: [{ name: main, accelerator_type: v2-8, runtime_version: "
				 "tpu-ubuntu2204-base, zones: [us-central1-f], count: 1 }]");
	if (groups)
		cfg_read_groups(c, f, groups, fleet_run);
	/* After the groups: a secret must not shadow any env, fleet or group. */
	if ((x = cfg_map_get(&m, "secrets")) &&
	    cfg_map_open(&sm, c, x, "'secrets'",
			 "a mapping of variable names to values such as \"${WANDB_API_KEY}\"", NULL,
			 "in secrets", "secrets") == 0)
		cfg_each_pair(c, &sm, cfg_secret_pair, f);
}

static void set_defaults(struct tpf_fleet *f)
{
	const char *user = getenv("USER");
	if (f->state_gcs.bucket && f->name && !f->state_path) {
		/* For messages (state/backend_gcs.c names the objects alike). */
		const char *p = f->state_gcs.prefix ? f->state_gcs.prefix : "";
		size_t n = strlen(p);
		while (n && p[n - 1] == '/')
			n--;
		f->state_path = xasprintf("gs://%s/%.*s%s%s.tfstate", f->state_gcs.bucket, (int)n, p,
					  n ? "/" : "", f->name);
	}
	if (!f->state_path)
		f->state_path = tpf_path_join(f->dir, "tpuform.state.json");
	if (f->provider == TPF_PROVIDER_LOCAL && !f->local.root)
		f->local.root = tpf_path_join(f->dir, ".tpuform/local");
	if (!f->source.ref)
		f->source.ref = xstrdup("HEAD");
	if (!f->ssh.user)
		f->ssh.user = xstrdup(user && *user ? user : "root");
}

int tpf_fleet_parse(struct tpf_fleet *out, const char *path, const char *text, size_t len,
		    struct tpf_diags *d)
{
	struct cfg c;
	int ok;

	memset(out, 0, sizeof(*out));
	out->path = xstrdup(path);
	out->dir = tpf_dirname(path);
	out->local.create_delay = 1;
	out->ssh.port = 22;
	cfg_job_policy_defaults(&out->policy);

	cfg_init(&c, path, text, len);
	yaml_node_t *root = cfg_load(&c, &ok);
	if (ok)
		read_fleet(&c, out, root);
	size_t nerr = cfg_flush(&c, d);
	cfg_release(&c);
	if (nerr) {
		tpf_fleet_release(out);
		return TPF_ERROR;
	}
	set_defaults(out);
	if (tpf_fleet_check_worker_limits(out, d)) {
		tpf_fleet_release(out);
		return TPF_ERROR;
	}
	return 0;
}

int tpf_fleet_load(struct tpf_fleet *out, const char *path, struct tpf_diags *d)
{
	struct tpf_buf text = TPF_BUF_INIT;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = tpf_read_file_max(path, TPF_FLEET_FILE_MAX, "fleet file", &text, d);
	if (rc == TPF_ENOTFOUND)
		rc = tpf_errorx(d, NULL, "create it (examples/local.yaml is a start) or give its path",
				"fleet file '%s' does not exist", path);
	if (rc < 0)
		goto done;
	rc = tpf_fleet_parse(out, path, text.buf, text.len, d);
done:
	/* The file may hold literal secrets. */
	if (text.alloc)
		explicit_bzero(text.buf, text.alloc);
	tpf_buf_release(&text);
	return rc;
}

static void release_group(struct tpf_group *g)
{
	tpf_job_policy_release(&g->policy);
	tpf_storage_release(&g->storage);
	free(g->name);
	free(g->accelerator_type);
	free(g->runtime_version);
	for (size_t i = 0; i < g->nzones; i++)
		free(g->zones[i]);
	free(g->zones);
	tpf_kvlist_release(&g->labels);
	free(g->setup);
	free(g->run);
	tpf_kvlist_release(&g->env);
	free(g->valid_until);
	tpf_node_fields_release(&g->node);
	tpf_compute_release(&g->compute);
}

void tpf_fleet_release(struct tpf_fleet *f)
{
	free(f->path);
	free(f->dir);
	free(f->name);
	free(f->local.root);
	free(f->gcp.project);
	free(f->gcp.credentials);
	free(f->gcp.endpoint);
	free(f->gcp.impersonate_service_account);
	free(f->gcp.quota_project);
	free(f->state_path);
	free(f->state_gcs.bucket);
	free(f->state_gcs.prefix);
	free(f->state_gcs.endpoint);
	for (size_t i = 0; i < f->nquota; i++) {
		free(f->quota[i].zone);
		free(f->quota[i].accelerator_type);
	}
	free(f->quota);
	free(f->source.repo);
	free(f->source.ref);
	free(f->ssh.user);
	free(f->ssh.private_key);
	tpf_jump_release(&f->ssh.jump);
	free(f->ssh.jump_host_key);
	tpf_kvlist_release(&f->env);
	tpf_fleet_forget_secrets(f);
	for (size_t i = 0; i < f->nsecret_refs; i++) {
		free(f->secret_refs[i].name);
		/* A literal written in the file is as secret as a resolved one. */
		explicit_bzero(f->secret_refs[i].text, strlen(f->secret_refs[i].text));
		free(f->secret_refs[i].text);
	}
	free(f->secret_refs);
	free(f->setup);
	free(f->run);
	free(f->notify.webhook);
	free(f->monitoring.project);
	tpf_job_policy_release(&f->policy);
	tpf_storage_release(&f->storage);
	tpf_node_fields_release(&f->node);
	for (size_t i = 0; i < f->ngroups; i++)
		release_group(&f->groups[i]);
	free(f->groups);
	tpf_fleet_prices_release(f);
	memset(f, 0, sizeof(*f));
}
