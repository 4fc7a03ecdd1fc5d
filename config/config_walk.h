/*
 * Private to config/config*.c: reading typed values out of the fleet file's
 * YAML tree. Every reader records its own positioned error (through
 * config/config_yaml.h) and reports failure, so callers just skip the value
 * and go on to the next one.
 *
 * Messages follow one pattern: "'<key>' must be <expectation>, got <what
 * was found>", with scalars quoted and lists/mappings named as such.
 */
#ifndef TPF_CONFIG_WALK_H
#define TPF_CONFIG_WALK_H

#include <stddef.h>

#include "config/config.h"
#include "config/config_yaml.h"
#include "util/kv.h"

/* [a-z][a-z0-9-]*: fleet, group and zone names. */
int cfg_is_name(const char *s);
/* [A-Za-z_][A-Za-z0-9_]*: env and secret names. */
int cfg_is_env_name(const char *s);
/* Non-empty, and every byte a lowercase letter, a digit or in extra. */
int cfg_all_of(const char *s, const char *extra);
/* A URL or scp-style user@host:path, which git reads as remote, as opposed
 * to a local path that resolves against the fleet file's directory. */
int cfg_looks_like_url(const char *s);

/* Record "'name' must be expect, got <v described>". */
void cfg_type_error(struct cfg *c, const yaml_node_t *v, const char *name, const char *expect,
		    const char *detail);

/* Text of a non-empty scalar (borrowed from the document), or NULL after
 * an error. With allow_empty, "" and a YAML null (read as "") pass too. */
const char *cfg_want_text(struct cfg *c, yaml_node_t *v, const char *name, const char *expect,
			  int allow_empty);
/* Decimal digits only, min..max ("at most max" has its own message).
 * Returns 0 and sets *out, or -1. */
int cfg_want_uint(struct cfg *c, yaml_node_t *v, const char *name, const char *expect, long min,
		  long max, int *out);
/* Exactly "true" or "false" (no YAML 1.1 yes/no/on/off). 0 or -1. */
int cfg_want_bool(struct cfg *c, yaml_node_t *v, const char *name, int *out);
/* One of words (NULL-terminated); *out is its index. 0 or -1, the error
 * with "did you mean" when a word is close. */
int cfg_want_enum(struct cfg *c, yaml_node_t *v, const char *name, const char *const *words,
		  const char *expect, int *out);
/* tpf_parse_duration's syntax; *out (optional) in seconds. 0 or -1. */
int cfg_want_duration(struct cfg *c, yaml_node_t *v, const char *name, double *out);
/* A path resolved against f->dir ("~/" is $HOME). Caller frees; NULL after
 * an error. */
char *cfg_want_path(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v, const char *name);
/* A name (cfg_is_name) of at most max bytes (SIZE_MAX: no limit of its
 * own). Borrowed text, or NULL after an error. */
const char *cfg_want_name(struct cfg *c, yaml_node_t *v, const char *name, size_t max);

/* Free-form maps: fn gets each (key, value) whose key is a scalar, first
 * occurrence only (the rest were reported as duplicates). */
typedef void (*cfg_pair_fn)(struct cfg *c, yaml_node_t *k, yaml_node_t *v, void *arg);
void cfg_each_pair(struct cfg *c, const struct cfg_map *m, cfg_pair_fn fn, void *arg);

/* env entries into the struct tpf_kvlist *arg: names checked (env rules,
 * TPUFORM_* reserved), values any scalar kept as text, null as "". */
void cfg_env_pair(struct cfg *c, yaml_node_t *k, yaml_node_t *v, void *arg);
/* The whole env mapping v (may be NULL: absent) into out. */
void cfg_read_env(struct cfg *c, yaml_node_t *v, const char *where, struct tpf_kvlist *out);

struct cfg_label_ctx {
	struct tpf_kvlist *out;
	const char *group; /* for messages: "'sweep'" or "#2" */
};
/* GCP label rules; keys "tpuform-*" are reserved. arg: cfg_label_ctx. */
void cfg_label_pair(struct cfg *c, yaml_node_t *k, yaml_node_t *v, void *arg);

/* A secret into ((struct tpf_fleet *)arg)->secrets with ${VAR} resolved by
 * getenv(). Checks names against the fleet's and every group's env, so the
 * groups must be read first. Never puts the value in a message. */
void cfg_secret_pair(struct cfg *c, yaml_node_t *k, yaml_node_t *v, void *arg);

/* The groups list v into f->groups; fleet_run says the fleet has a run key
 * (so a group without one is not reported). f's name, setup, run and env
 * must be read already: groups get the effective values. */
void cfg_read_groups(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v, int fleet_run);

/* The job policy keys (restart, max_restarts, restart_scope,
 * restart_backoff, stall_timeout, on_success, the exit codes, preflight,
 * on_disruption) of mapping m into *p, over what *p holds (the fleet's
 * values for a group). config/config_job.c. */
void cfg_read_job_policy(struct cfg *c, const struct cfg_map *m, struct tpf_job_policy *p);
/* Checks across keys of the policy p that mapping m (the top level or a
 * group) made: on_success: delete with restart: always could never apply
 * (a job that exits 0 is restarted). Reported at m's `restart` key, else
 * at its `on_success` key; a pair m took whole from the fleet is the
 * fleet's error, reported there once. */
void cfg_check_job_policy(struct cfg *c, const struct cfg_map *m, const struct tpf_job_policy *p);
/* The defaults of struct tpf_job_policy. */
void cfg_job_policy_defaults(struct tpf_job_policy *p);

/* The storage keys (mounts, checkpoint_dir, install_gcsfuse) of mapping m
 * over *st (the fleet's values for a group: a `mounts` list given replaces
 * the fleet's). config/config_mounts.c. */
void cfg_read_storage(struct cfg *c, const struct cfg_map *m, struct tpf_storage *st);
/* ---- budgets and prices (config/config_budget.c) ---- */

/* `budget: { chip_hours: N | usd: N, per: day | week | month }` (v may be
 * NULL: absent) into *b; owner names it in messages ("group 'a'"). */
void cfg_read_budget(struct cfg *c, yaml_node_t *v, const char *owner, struct tpf_budget *b);
/* `on_budget: stop | delete` (v may be NULL) into *out. */
void cfg_read_on_budget(struct cfg *c, yaml_node_t *v, enum tpf_on_budget *out);
/* `prices: [{accelerator, class, region, usd_per_chip_hour}]` into f. */
void cfg_read_prices(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v);
/* Free f->prices (tpf_fleet_release). */
void tpf_fleet_prices_release(struct tpf_fleet *f);

/* ---- node fields (config/config_node.c) ---- */

/* The node-field keys, fleet-wide and per group (topology is per group
 * only): for the known-keys lists of config.c and config_group.c. */
#define CFG_NODE_KEYS                                                                   \
	"network", "subnetwork", "enable_external_ips", "can_ip_forward", "tags",          \
		"service_account", "metadata", "data_disks", "shielded_instance", "reserved", \
		"reservation"

/*
 * The one key list of each level of the fleet file (docs/fleet-file.md "The fleet
 * file"), as comma-separated string literals for a NULL-terminated array:
 *   CFG_GROUP_ONLY_KEYS   only a group takes (at top level they are refused
 *                         with "belongs in a group", which says more than
 *                         "unknown key");
 *   CFG_SHARED_KEYS       both levels take, a group's over the fleet's;
 *   CFG_TOP_ONLY_KEYS     only the top level takes;
 *   CFG_NODE_KEYS         the node fields, at both levels (above).
 */
#define CFG_GROUP_ONLY_KEYS                                                             \
	"name", "accelerator_type", "runtime_version", "zones", "count", "preemptible",  \
		"spot", "labels", "queued", "valid_until", "slices", "topology", "elastic"
#define CFG_SHARED_KEYS                                                                 \
	"setup", "run", "env", "restart", "max_restarts", "restart_scope", "restart_backoff", \
		"stall_timeout", "on_success", "restart_on_exit_codes", "never_restart_on",    \
		"tpu_busy", "preflight", "preflight_timeout", "preflight_failures",            \
		"require_tpu_devices", "on_disruption", "mounts", "checkpoint_dir",            \
		"install_gcsfuse", "budget", "on_budget"
#define CFG_TOP_ONLY_KEYS                                                               \
	"fleet", "provider", "state", "quota", "source", "ssh", "secrets", "groups",        \
		"notify", "prices", "monitoring"

/* The node-field keys of mapping m over *nf (the fleet's values for a
 * group: a key given replaces the fleet's value, metadata merges key by
 * key). Errors are recorded at each value. */
void cfg_read_node_fields(struct cfg *c, const struct cfg_map *m, struct tpf_node_fields *nf);
/* Checks of a group's effective node fields against its scheduling:
 * `reservation` needs `queued: true`; reserved capacity excludes spot and
 * preemptible. label names the group in messages. */
void cfg_check_group_node(struct cfg *c, const struct cfg_map *m, struct tpf_group *g,
			  const char *label);
/* `topology` with accelerator_type as a version (type_at: its node): sets
 * g->accelerator_type to the equivalent "<family>-<size>", g->workers and
 * g->node.topology from Google's tables (model/accel.h). Returns 1 when
 * the group has a topology key (then the caller does not read
 * accelerator_type as a type string), else 0. */
int cfg_read_topology(struct cfg *c, const struct cfg_map *m, struct tpf_group *g,
		      yaml_node_t *type_at);

/* elastic: { min_slices, grow } of group g (config/config_elastic.c), read
 * after g->slices on either API; refused without slices >= 2, min_slices
 * must be 1 .. slices. Errors at the value, naming the group by label. */
void cfg_read_elastic(struct cfg *c, const struct cfg_map *m, struct tpf_group *g,
		      const char *label);

/* ---- Compute Engine (config/config_compute.c) ---- */

/* The group keys of Compute Engine groups, for config_group.c's list. */
#define CFG_COMPUTE_KEYS                                                              \
	"api", "machine_type", "image", "termination_action", "flex_start",             \
		"max_run_duration", "boot_disk"

/* provider.gcp.api ("compute" or "tpu") into f->gcp.api. */
void cfg_read_gcp_api(struct cfg *c, struct tpf_fleet *f, const struct cfg_map *gm);
/* The API of group g (its `api`, else the fleet's, else compute when it
 * gives machine_type): sets g->compute.api. */
void cfg_group_api(struct cfg *c, const struct cfg_map *m, const struct tpf_fleet *f,
		   struct tpf_group *g);
/*
 * A compute group's own keys into g: machine_type (required), topology,
 * image, spot, termination_action, flex_start, max_run_duration,
 * boot_disk, and the checks against keys of the Cloud TPU API
 * (accelerator_type, runtime_version, preemptible, queued, valid_until,
 * slices, reserved). Sets g->workers (VMs per slice).
 */
void cfg_read_compute(struct cfg *c, struct cfg_map *m, struct tpf_group *g,
		      const char *label);
/* A Cloud TPU API group must not give the compute-only keys. */
void cfg_reject_compute_keys(struct cfg *c, const struct cfg_map *m, const struct tpf_group *g,
			     const char *label);

#endif
