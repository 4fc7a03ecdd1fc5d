/*
 * The fleet file: YAML (libyaml) -> struct tpf_fleet.
 *
 * Contract: docs/design.md section 4, "The fleet file", and docs/fleet-file.md.
 * Every error is a diagnostic whose summary is "FILE:LINE:COL: message"
 * (line and column 1-based, from libyaml's marks) and says what was
 * expected; unknown keys get "did you mean 'x'?" when a known key is within
 * edit distance 2 (or a prefix). All errors found are reported, not just the
 * first, where parsing can go on.
 */
#ifndef TPF_CONFIG_H
#define TPF_CONFIG_H

/*
 * Input limits of the fleet file (docs/fleet-file.md "Limits"). A file over the size
 * is refused before parsing; nesting deeper than the depth is refused at
 * the first too-deep collection, so hostile input costs milliseconds.
 */
#define TPF_FLEET_FILE_MAX ((size_t)16 << 20) /* bytes */
#define TPF_FLEET_MAX_DEPTH 64                /* nested sequences and mappings */

#include <stddef.h>
#include "model/compute.h"
#include "model/node_fields.h"
#include "util/diag.h"
#include "util/kv.h"

enum tpf_provider_kind { TPF_PROVIDER_NONE = 0, TPF_PROVIDER_LOCAL, TPF_PROVIDER_GCP };
enum tpf_transfer { TPF_TRANSFER_CLONE = 0, TPF_TRANSFER_BUNDLE };
enum tpf_restart { TPF_RESTART_ON_FAILURE = 0, TPF_RESTART_ALWAYS, TPF_RESTART_NEVER };
enum tpf_ssh_address { TPF_SSH_ADDRESS_AUTO = 0, TPF_SSH_ADDRESS_EXTERNAL, TPF_SSH_ADDRESS_INTERNAL };

/* A bastion: "[user@]host[:port]", OpenSSH's ProxyJump syntax (ssh(1) -J).
 * host may be an IPv6 literal in brackets ("[fd00::1]:2222"). */
struct tpf_jump {
	char *user; /* NULL: not given */
	char *host; /* without brackets */
	int port;   /* 0: not given */
};

/*
 * Parse s into *out (overwritten; release with tpf_jump_release). Returns 0,
 * or -1 with *why (static text: what is wrong) and *out empty. Refused: an
 * empty host or user, a host or user with spaces, control characters, '/',
 * or a leading '-' (it would read as an option to ssh(1)), a port that is
 * not 1..65535, a second '@', an unclosed '['.
 */
int tpf_jump_parse(const char *s, struct tpf_jump *out, const char **why);
void tpf_jump_release(struct tpf_jump *j);
/* restart_scope: which jobs restart together (docs/design.md section 5,
 * "Restart units"). AUTO: node for multi-host types, worker otherwise. */
enum tpf_restart_scope { TPF_SCOPE_AUTO = 0, TPF_SCOPE_NODE, TPF_SCOPE_WORKER };
enum tpf_on_success { TPF_ON_SUCCESS_KEEP = 0, TPF_ON_SUCCESS_DELETE };

/* What tpuform does with a running job: the keys that may be set fleet-wide
 * and per group (a group's value overrides the fleet's; config/config_job.c). */
enum tpf_tpu_busy { TPF_TPU_BUSY_REFUSE = 0, TPF_TPU_BUSY_WAIT, TPF_TPU_BUSY_KILL };
/* "refuse", "wait" or "kill": the bootstrap's TPUFORM_TPU_BUSY. */
const char *tpf_tpu_busy_word(enum tpf_tpu_busy b);

struct tpf_job_policy {
	/* restart: which ended jobs the plan restarts (default on-failure);
	 * max_restarts: how many times a restart unit is restarted before it
	 * is left failed (restarts_exhausted; default 3). Both fleet-wide and
	 * per group, as every key here. */
	enum tpf_restart restart;
	int max_restarts;
	enum tpf_restart_scope scope; /* restart_scope, default AUTO */
	/* restart_backoff, seconds (default 10): a unit's first restart is
	 * immediate, the next waits base, then 2 x base, ... up to
	 * TPF_RESTART_BACKOFF_CAP (or base, if larger), from its last restart.
	 * 0: no wait. */
	double restart_backoff;
	/* stall_timeout, seconds (default 0: off): a running job whose log
	 * has not grown and whose $TPUFORM_HEARTBEAT was not touched for this
	 * long is stalled, and restarted as a failed one is. */
	double stall_timeout;
	enum tpf_on_success on_success; /* on_success, default keep */
	/* restart_on_exit_codes / never_restart_on (config/config_job.c):
	 * which exit codes of a job that ended call for a restart. A bit per
	 * code 0..255 (bit c of byte c/8). exit_codes_set 0 (the default):
	 * every code but 0 restarts, as before the key existed, so existing
	 * fleets keep their behaviour (xpk's default is 42 and 127-255;
	 * tpuform leaves that choice to the fleet file). A code not chosen
	 * ends the run: the job counts as done, failed or succeeded as its
	 * code says, and is not restarted. A dead session or a stall is not
	 * an exit code and restarts whatever this says. */
	int exit_codes_set;
	unsigned char restart_codes[32];
	/* The preflight before every start and restart (templates/bootstrap.sh
	 * tpf_preflight_tpu, tpf_preflight_user; docs/recovery.md "Preflight"):
	 * tpu_busy: what a worker does when another process holds the libtpu
	 * lock file (/tmp/libtpu_lockfile) or a TPU device file (/dev/accel*,
	 * /dev/vfio/N): refuse (default: fail preflight naming its PID and
	 * command line), wait for it (up to preflight_timeout), or kill it. */
	enum tpf_tpu_busy tpu_busy;
	char *preflight;           /* preflight: a user command, or NULL; owned */
	double preflight_timeout;  /* seconds, default 300 */
	int preflight_failures;    /* failed preflights in a row that make a bad host, default 2 */
	int require_tpu_devices;   /* require_tpu_devices: a host with no device file fails */
	/* on_disruption: { signal, grace } (docs/recovery.md "Disruptions"): the signal a
	 * job gets when its VM is about to go (a preemption or maintenance
	 * notice on the metadata server, or a stop by tpuform) and how long
	 * tpuform waits, after sending it, before SIGKILL when it stops the
	 * job itself (a restart, a planned replacement or delete). */
	int disruption_signal;     /* a signal number, default SIGTERM */
	double disruption_grace;   /* seconds, default 15 */
};
#define TPF_PREFLIGHT_TIMEOUT_DEFAULT 300.0
#define TPF_PREFLIGHT_FAILURES_DEFAULT 2
#define TPF_DISRUPTION_GRACE_DEFAULT 15.0
/* "SIGTERM" for a signal on_disruption accepts; "SIGTERM" otherwise. */
const char *tpf_disruption_signal_name(int sig);
/* Free what p owns (preflight); *p is left with its defaults' pointers NULL. */
void tpf_job_policy_release(struct tpf_job_policy *p);
/* A deep copy of src into dst (dst's old contents are not freed). */
void tpf_job_policy_copy(struct tpf_job_policy *dst, const struct tpf_job_policy *src);
/* Does exit code `code` call for a restart under p (no set: any code but 0)?
 * Codes outside 0..255 (a signal's -1, unknown) restart. */
int tpf_policy_restarts_on(const struct tpf_job_policy *p, int code);
#define TPF_MAX_RESTARTS_DEFAULT 3
#define TPF_RESTART_BACKOFF_DEFAULT 10.0
#define TPF_RESTART_BACKOFF_CAP 600.0

/* A quota rule: caps per zone x accelerator type x scheduling.
 * A cap of -1 means "not declared" (no cap from this rule). */
struct tpf_quota_rule {
	char *zone;
	char *accelerator_type;
	int preemptible; /* cap on preemptible nodes */
	int spot;        /* cap on spot nodes */
	int on_demand;   /* cap on on-demand nodes */
	int line, column;
};

/* A budget (config/config_budget.c, docs/ledger.md "Budgets"): at most
 * `amount` chip-hours or US dollars per period, fleet-wide (top level)
 * or per group. Spend is what `report` computes from the run ledger. */
enum tpf_budget_unit { TPF_BUDGET_NONE = 0, TPF_BUDGET_CHIP_HOURS, TPF_BUDGET_USD };
/* UTC calendar day, ISO week (from Monday 00:00 UTC), calendar month. */
enum tpf_budget_per { TPF_BUDGET_DAY = 0, TPF_BUDGET_WEEK, TPF_BUDGET_MONTH };
/* What reaching it does: stop creating (the default), or also delete
 * the scope's nodes (on_budget: delete). */
enum tpf_on_budget { TPF_ON_BUDGET_STOP = 0, TPF_ON_BUDGET_DELETE };
struct tpf_budget {
	enum tpf_budget_unit unit; /* TPF_BUDGET_NONE: no budget */
	double amount;             /* > 0, at most TPF_BUDGET_*_MAX */
	enum tpf_budget_per per;
	int line, column;
};
#define TPF_BUDGET_CHIP_HOURS_MAX 1e7 /* ten million chip-hours a period */
#define TPF_BUDGET_USD_MAX 1e9        /* a billion dollars a period */

/* A price of the fleet file's `prices:` (config/config_budget.c): it
 * replaces the built-in list price (engine/ledger/prices.c) of a chip generation
 * and scheduling class, in one region or (region NULL) everywhere. */
struct tpf_price_override {
	char *chip;   /* a ledger chip key: v2 v3 v4 v5e v5p v6e tpu7x */
	char *class;  /* on-demand, preemptible, spot, flex-start */
	char *region; /* "us-central1", or NULL: every region */
	double usd_per_chip_hour; /* >= 0, at most TPF_PRICE_MAX */
	int line, column;
};
#define TPF_PRICE_MAX 1000.0 /* USD per chip-hour: beyond any list price */
#define TPF_PRICES_MAX 256   /* entries of prices: */

/* A secret as the fleet file writes it. Its value is taken from tpuform's
 * environment only by tpf_fleet_resolve_secrets, which plan, apply and
 * watch call (they render bootstrap scripts); show, logs, exec, state and
 * destroy never need the variables set. */
struct tpf_secret_ref {
	char *name;  /* env-name rules, never an env entry's name */
	char *text;  /* as written: "${WANDB_API_KEY}", "key-${A}-$$x" */
	int line, column;
};

/* Notifications (config/config_notify.c, docs/watch.md "Notifications"): the
 * events a watch posts to a webhook. The order is docs/watch.md's. */
enum tpf_notify_event {
	TPF_NOTIFY_PREEMPTED,
	TPF_NOTIFY_REPLACED,
	TPF_NOTIFY_JOB_FAILED,
	TPF_NOTIFY_JOB_SUCCEEDED,
	TPF_NOTIFY_STALLED,
	TPF_NOTIFY_RESTARTS_EXHAUSTED,
	TPF_NOTIFY_QUOTA_DEFERRED,
	TPF_NOTIFY_COMPLETED,
	TPF_NOTIFY_PREFLIGHT_FAILED,
	TPF_NOTIFY_BAD_HOST,
	TPF_NOTIFY_MAINTENANCE, /* watch told a node's jobs of upcoming maintenance */
	TPF_NOTIFY_BUDGET_REACHED, /* docs/ledger.md "Budgets" */
	TPF_NOTIFY_SHRUNK,  /* elastic: a job restarted on the slices left */
	TPF_NOTIFY_GROWN,   /* elastic: ... and on every slice again */
	TPF_NOTIFY_NEVENTS
};

/* monitoring: { project: P } (docs/watch.md "Cloud Monitoring"): where
 * `watch` writes the fleet's goodput as Cloud Monitoring time series. */
struct tpf_monitoring_config {
	char *project; /* a Google Cloud project ID; NULL: no monitoring */
};

struct tpf_notify_config {
	char *webhook;   /* https URL (http only to loopback); NULL: no notifications */
	unsigned events; /* bit 1u << enum tpf_notify_event; all when `events` is absent */
	int text_only;   /* payload: text -> only {"text": ...} (Google Chat refuses other fields) */
};

/* The event's name as the fleet file and the payload spell it
 * ("preempted", "job_failed", ...); static; NULL when out of range. */
const char *tpf_notify_event_name(enum tpf_notify_event e);

/*
 * Cloud Storage for data and checkpoints (config/config_mounts.c,
 * docs/storage.md): the `mounts`, `checkpoint_dir` and `install_gcsfuse`
 * keys, fleet-wide and per group. A group's `mounts` list replaces the
 * fleet's whole (write `mounts: []` to drop them); its checkpoint_dir and
 * install_gcsfuse override the fleet's.
 */
#define TPF_MOUNTS_MAX 16          /* mounts per list */
#define TPF_MOUNT_PATH_MAX 256     /* bytes of a mount's path */
#define TPF_GCS_PREFIX_MAX 512     /* bytes of the object prefix of a gs:// URL */
enum tpf_mount_mode { TPF_MOUNT_FUSE = 0, TPF_MOUNT_COPY };
struct tpf_mount {
	char *path;    /* absolute, no trailing '/', no '.' or '..' parts */
	char *bucket;  /* a valid bucket name */
	char *prefix;  /* object prefix without leading or trailing '/'; NULL: the whole bucket */
	enum tpf_mount_mode mode; /* mode: mount (gcsfuse, default) or copy (rsync at start) */
	int read_only; /* read_only: true */
	int line, column;
};
struct tpf_storage {
	struct tpf_mount *mounts;
	size_t nmounts;
	char *checkpoint_dir; /* "gs://BUCKET[/PREFIX]" as normalised, or NULL */
	int no_gcsfuse_install; /* install_gcsfuse: false (default: install where missing) */
};
/* "mount" or "copy" (static). */
const char *tpf_mount_mode_word(enum tpf_mount_mode m);
/* A deep copy of src into dst (dst's old contents are not freed). */
void tpf_storage_copy(struct tpf_storage *dst, const struct tpf_storage *src);
/* Free what st owns and zero it. */
void tpf_storage_release(struct tpf_storage *st);
/*
 * Split "gs://BUCKET[/PREFIX]" (Cloud Storage's URL form, as gcloud storage
 * writes it) into a bucket and a prefix (caller frees both; *prefix NULL
 * when there is none; trailing '/' dropped). The bucket must follow
 * Google's naming rules (https://cloud.google.com/storage/docs/buckets#naming:
 * 3-63 of a-z 0-9 - _ ., up to 222 with dots and 63 per dot-separated part,
 * starting and ending with a letter or digit, not an IPv4 address, not
 * starting with "goog", not containing "google" or "g00gle"); the prefix
 * at most TPF_GCS_PREFIX_MAX bytes, no control characters, no empty, "."
 * or ".." parts (the local provider maps it to a directory). Returns 0, or
 * -1 with *why (static text) and nothing allocated.
 */
int tpf_gs_url_parse(const char *url, char **bucket, char **prefix, const char **why);

/*
 * elastic: { min_slices: K, grow: checkpoint | at_once } of a multislice
 * group (docs/recovery.md "Elastic slices"; issue 30). min_slices 0: the
 * group is not elastic (every lost slice stops the whole job until it is
 * back, as without the key). With K >= 1, a unit with slices lost and at
 * least K of its slices READY keeps running on those; grow says how it
 * goes back to N slices: CHECKPOINT first sends the job the disruption
 * signal (on_disruption) and waits for its exit or the grace period,
 * AT_ONCE restarts it at once.
 */
enum tpf_elastic_grow { TPF_GROW_CHECKPOINT, TPF_GROW_AT_ONCE };
struct tpf_elastic {
	int min_slices;              /* 1 .. slices; 0: not elastic */
	enum tpf_elastic_grow grow;  /* default CHECKPOINT */
};

struct tpf_group {
	char *name;             /* [a-z][a-z0-9-]* */
	char *accelerator_type; /* validated against model/accel.h */
	char *runtime_version;
	char **zones;           /* ordered fallback list, at least one */
	size_t nzones;
	int count;              /* >= 0 */
	int preemptible;        /* preemptible: true */
	int spot;               /* spot: true (exclusive with preemptible) */
	int workers;            /* VMs per node, from the accelerator table */
	struct tpf_kvlist labels; /* user labels only (not the tpuform-* ones) */
	/* Per-group overrides; already merged with the fleet-wide values, so
	 * these are the effective ones: setup may be NULL, run is not. */
	char *setup;
	char *run;
	struct tpf_kvlist env;  /* fleet env, then group env on top */
	int queued;             /* queued: true -> queuedResources (issue 5) */
	char *valid_until;      /* queued resource validUntilDuration, e.g. "6h"; may be NULL */
	int slices;             /* slices: N (> 1: multislice, implies queued), else 0 */
	struct tpf_elastic elastic; /* elastic: {...} (config/config_elastic.c); zeroed: none */
	struct tpf_job_policy policy; /* effective: the fleet's, then the group's keys */
	struct tpf_node_fields node; /* effective node fields (config/config_node.c) */
	/* The API (`api`, else provider.gcp.api, else compute when the group
	 * gives machine_type and tpu otherwise) and, on Compute Engine, the
	 * machine type, image, provisioning and boot disk
	 * (config/config_compute.c). accelerator_type and runtime_version are
	 * NULL for a compute group, node.topology its slice topology and
	 * workers its VMs per slice. */
	struct tpf_compute compute;
	struct tpf_storage storage; /* effective: the fleet's, then the group's keys */
	/* The group's own budget (not the fleet's: that one is fleet-wide),
	 * and on_budget: the group's, else the fleet's. */
	struct tpf_budget budget;
	enum tpf_on_budget on_budget;
	int line, column;       /* where the group starts in the file */
};

struct tpf_fleet {
	char *path;  /* the fleet file as given */
	char *dir;   /* its directory: relative paths in the file resolve here */
	char *name;  /* fleet: [a-z][a-z0-9-]*, at most 40 chars */

	enum tpf_provider_kind provider;
	struct {
		char *root;          /* resolved path; default "<dir>/.tpuform/local" */
		double create_delay; /* seconds CREATING lasts; default 1 */
	} local;
	struct {
		char *project;       /* required */
		char *credentials;   /* resolved path or NULL (then ADC order) */
		char *endpoint;      /* NULL: https://tpu.googleapis.com */
		char *impersonate_service_account; /* email, or NULL (google/gcp_auth.h) */
		char *quota_project; /* x-goog-user-project, or NULL (google/gcp_auth.h) */
		enum tpf_api api;    /* provider.gcp.api: the groups' default API */
		int api_given;       /* 1 when provider.gcp.api is set */
	} gcp;

	char *state_path; /* resolved; default "<dir>/tpuform.state.json"; with
			   * state_gcs, "gs://BUCKET/PREFIX/FLEET.tfstate" (for messages) */
	struct {
		char *bucket;   /* state.gcs.bucket; NULL: the state is the file at state_path */
		char *prefix;   /* may be NULL */
		char *endpoint; /* NULL: $TPUFORM_STORAGE_ENDPOINT, else storage.googleapis.com */
	} state_gcs;        /* state/backend.h */

	struct tpf_quota_rule *quota;
	size_t nquota;

	struct {
		char *repo; /* URL or path (relative paths resolved against dir); NULL: no source */
		char *ref;  /* default "HEAD" */
		enum tpf_transfer transfer;
	} source;

	struct {
		char *user;        /* default: $USER */
		char *private_key; /* resolved path; NULL: ssh-agent */
		int port;          /* default 22 */
		enum tpf_ssh_address address;
		int os_login;      /* gcp: import the key with OS Login whatever the
				    * metadata says (providers/gcp/gcp_access.h) */
		/* ssh.proxy_jump "[user@]host[:port]": workers are reached
		 * through this bastion (providers/ssh/ssh_jump.c); NULL host:
		 * directly. user NULL: ssh.user; port 0: 22. host_key: the
		 * bastion's known key "TYPE BASE64", NULL: pinned on first use. */
		struct tpf_jump jump;
		char *jump_host_key;
	} ssh;

	struct tpf_kvlist env;     /* fleet-wide, non-secret */
	struct tpf_secret_ref *secret_refs; /* as written, in file order */
	size_t nsecret_refs;
	/* Values resolved from ${VAR} in tpuform's environment by
	 * tpf_fleet_resolve_secrets; empty before. Never printed, never stored. */
	struct tpf_kvlist secrets;
	int secrets_resolved;
	char *setup; /* may be NULL */
	char *run;   /* required unless every group sets run */
	/* fleet-wide job policy (restart, max_restarts, restart_scope, ...);
	 * each group's starts from it (struct tpf_group policy) */
	struct tpf_job_policy policy;
	struct tpf_notify_config notify;
	struct tpf_monitoring_config monitoring;
	struct tpf_node_fields node; /* fleet-wide node-field defaults (config/config_node.c) */
	struct tpf_storage storage;  /* fleet-wide mounts and checkpoint_dir (config/config_mounts.c) */

	struct tpf_group *groups;
	size_t ngroups;

	struct tpf_budget budget;      /* fleet-wide: every group's spend together */
	enum tpf_on_budget on_budget;  /* for the fleet's budget; the groups' default */
	struct tpf_price_override *prices; /* prices:, in file order */
	size_t nprices;
};

/*
 * Read and validate the fleet file at path. On success returns 0 and fills
 * *out (caller releases with tpf_fleet_release). On any error returns
 * TPF_ERROR (or tpf_read_file's code) with diagnostics appended, sorted by
 * position; *out is left released (zeroed), so releasing it again is safe.
 * Secrets are checked for their form (${NAME} references; "$NAME" without
 * braces is an error) but not resolved: see tpf_fleet_resolve_secrets.
 * Secret values never appear in a diagnostic.
 *
 * YAML details: one document; anchors, aliases and tags are refused; a
 * null (empty) value reads as an empty mapping or list where one is
 * expected, and is an error where text is expected, except `setup`, where
 * null or "" means "no setup" (a group can so cancel the fleet's setup).
 * Numbers and booleans are read from the text (true/false only, never
 * yes/no/on/off); env and label values are kept as text ("1" and 1 alike).
 */
int tpf_fleet_load(struct tpf_fleet *out, const char *path, struct tpf_diags *d);

/*
 * `validate`'s check of the files the fleet file names: ssh.private_key
 * and, on gcp, provider.gcp.credentials exist and can be read by this user.
 * A missing one is an error naming the setting and the path, with a "did
 * you mean" from the names in its folder (edit distance, as unknown keys
 * get); an unreadable one says why (errno). Reads the file system only.
 * 0, or TPF_ERROR with one diagnostic per file.
 */
int tpf_fleet_check_files(const struct tpf_fleet *f, struct tpf_diags *d);

/* The same from a buffer (need not be NUL-terminated); `path` is only used
 * in messages and to resolve relative paths (against its directory). */
int tpf_fleet_parse(struct tpf_fleet *out, const char *path, const char *text, size_t len,
		    struct tpf_diags *d);

/*
 * Resolve every secret's ${VAR} references with getenv() into f->secrets
 * (replacing what was there) and check the worker limits with them. An
 * unset or empty variable is an error naming FILE:LINE:COL of the secret
 * and the variable, with a hint; never the value. Returns 0 or TPF_ERROR
 * (then f->secrets is empty). Call it where bootstrap scripts are
 * rendered (plan, apply, watch); idempotent.
 */
int tpf_fleet_resolve_secrets(struct tpf_fleet *f, struct tpf_diags *d);

/* Wipe and drop resolved secret values (f->secrets); refs stay. */
void tpf_fleet_forget_secrets(struct tpf_fleet *f);

/* Free everything *f holds (secret values are wiped first) and zero it. */
void tpf_fleet_release(struct tpf_fleet *f);

/*
 * The restart unit of a group's nodes (docs/design.md section 5): its
 * restart_scope, with AUTO resolved: node when a node has several workers
 * (a multi-host job is one program: a worker alone cannot be restarted),
 * worker otherwise. g may be NULL (a node whose group is gone): worker.
 */
enum tpf_restart_scope tpf_group_restart_scope(const struct tpf_group *g);

/* The job policy of group `name` (borrowed), or the fleet-wide one when
 * no group has that name. */
const struct tpf_job_policy *tpf_fleet_job_policy(const struct tpf_fleet *f, const char *group);

/* The elastic settings of group `name` (borrowed), or NULL when no group
 * has that name or the group is not elastic (min_slices 0). */
const struct tpf_elastic *tpf_fleet_elastic(const struct tpf_fleet *f, const char *group);

/* The storage of group `name` (borrowed), or the fleet-wide one when no
 * group has that name. */
const struct tpf_storage *tpf_fleet_storage(const struct tpf_fleet *f, const char *group);

/* Borrowed pointer to the group named name, or NULL. */
const struct tpf_group *tpf_fleet_group(const struct tpf_fleet *f, const char *name);

/* Every zone any group names, de-duplicated, in first-seen order (quota
 * zones are not included). Caller frees the array (not the strings, which
 * f owns); NULL with *n = 0 when there are none. */
const char **tpf_fleet_zones(const struct tpf_fleet *f, size_t *n);

#endif
