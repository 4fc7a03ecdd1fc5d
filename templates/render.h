/*
 * The per-worker bootstrap script, rendered from templates/bootstrap.sh
 * (embedded into the binary at build time by templates/embed.sh).
 *
 * Every value is shell-quoted (util/shquote.h). Secrets never appear in the
 * script: they go to a separate 0600 env file that the job sources.
 */
#ifndef TPF_RENDER_H
#define TPF_RENDER_H

#include "util/kv.h"

/* Where things live on a worker, relative to its home directory. */
#define TPF_REMOTE_DIR "tpuform"                       /* all tpuform files */
#define TPF_REMOTE_SCRIPT "tpuform/bootstrap.sh"
#define TPF_REMOTE_SECRETS "tpuform/secrets.env"     /* mode 0600 */
#define TPF_REMOTE_SRC "tpuform/src"                 /* source checkout */
#define TPF_REMOTE_BUNDLE "tpuform/source.bundle"    /* transfer: bundle */

/* A Cloud Storage mount as the script takes it (config/config.h struct
 * tpf_mount, turned into this by plan/worker_script.c; docs/storage.md). */
struct tpf_bootstrap_mount {
	const char *path;   /* absolute directory on the worker */
	const char *bucket; /* bucket name */
	const char *prefix; /* object prefix, NULL: the whole bucket */
	int copy;           /* 1: copy at start (rsync); 0: mount with gcsfuse */
	int read_only;
};

struct tpf_bootstrap_params {
	const char *fleet;
	const char *node;
	int worker;       /* TPUFORM_WORKER_ID */
	int nworkers;     /* TPUFORM_NUM_WORKERS */
	int retry;        /* TPUFORM_RETRY: the node's generation */
	const char *commit;      /* TPUFORM_COMMIT, may be NULL (no source) */
	const char *repo;        /* for source_mode "clone", may be NULL */
	const char *source_mode; /* "present" (tpuform put it there), "clone", "bundle", "none" */
	const char *setup;       /* may be NULL */
	const char *run;
	const struct tpf_kvlist *env; /* exported to setup and run */
	const char *session;     /* screen session name */
	const char *coordinator; /* worker 0's address for multi-host, may be NULL */
	/* Multislice (nslices > 1): TPUFORM_SLICE_ID and TPUFORM_NUM_SLICES,
	 * and the MEGASCALE_* variables JAX multislice reads, each set only
	 * if the worker's environment has not set it (see render.c). With
	 * nslices <= 1 none of these is written, so single-slice scripts are
	 * byte for byte what they were. */
	int slice;
	int nslices;
	/* TPUFORM_ELASTIC (issue 30; docs/recovery.md "Elastic slices"): the
	 * slices the job runs on and the slices declared, "2/3", exported
	 * after the slice variables; NULL (groups without `elastic`): not
	 * written, so their scripts stay byte for byte what they were. */
	const char *elastic;
	/* "sha256:..." of the secrets env file uploaded next to the script,
	 * may be NULL. Rendered (not exported) so that a changed secret
	 * changes the script's hash and `start` restarts the job. */
	const char *secrets_hash;
	/*
	 * The peers of a multi-host slice on Compute Engine, where the
	 * platform sets nothing (GKE sets this pair for its TPU pods, and
	 * JAX's GkeTpuCluster reads it: jax/_src/clusters/cloud_tpu_cluster.py,
	 * is_env_present needs TPU_WORKER_HOSTNAMES, the process id is
	 * TPU_WORKER_ID, the coordinator the first hostname). NULL: not
	 * written (Cloud TPU API nodes, whose metadata server answers
	 * worker-network-endpoints, and single-host slices), so their scripts
	 * stay byte for byte what they were. Otherwise TPU_WORKER_ID is
	 * slice_worker (0 to VMs-1 within this worker's slice) and
	 * TPU_WORKER_HOSTNAMES this list (the slice's worker addresses,
	 * comma-separated, in worker order: the same on every worker), each
	 * set only where the worker's environment has none.
	 */
	const char *slice_hostnames;
	int slice_worker;
	/* The preflight (config.h struct tpf_job_policy): TPUFORM_TPU_BUSY
	 * ("refuse", "wait", "kill"; NULL: refuse), TPUFORM_PREFLIGHT (the
	 * user's command, may be NULL), TPUFORM_PREFLIGHT_TIMEOUT (whole
	 * seconds, <= 0: 300) and TPUFORM_REQUIRE_DEVICES (0 or 1). */
	const char *tpu_busy;
	const char *preflight;
	int preflight_timeout;
	int require_devices;
	/* on_disruption: TPUFORM_DISRUPTION_SIGNAL ("SIGTERM"; NULL: SIGTERM)
	 * and TPUFORM_DISRUPTION_GRACE (whole seconds; <= 0: 15). */
	const char *disruption_signal;
	int disruption_grace;
	/* Cloud Storage (docs/storage.md): with nmounts > 0, TPUFORM_MOUNTS=N
	 * and TPUFORM_MOUNT_<i>_{PATH,BUCKET,PREFIX,MODE,RO} for i = 1..N, and
	 * TPUFORM_GCSFUSE_INSTALL (0 or 1, from install_gcsfuse); with
	 * checkpoint_url, TPUFORM_CHECKPOINT_URL, which the script exports to
	 * the job as TPUFORM_CHECKPOINT_DIR (a directory on the local
	 * provider). None of these is written when unset, so scripts without
	 * them stay byte for byte what they were. */
	const struct tpf_bootstrap_mount *mounts;
	size_t nmounts;
	int no_gcsfuse_install;
	const char *checkpoint_url;
};

/*
 * The rendered script; caller frees. Same params -> same bytes: env is
 * written sorted by name, whatever order the list has. NULL strings are
 * rendered as empty values. Env entries whose name is not valid or is
 * reserved (tpf_env_name_reserved) are left out: the config rejects them
 * first, this is defence in depth against overriding the script's own
 * settings. The first lines are a comment naming node and worker, with
 * control characters in names replaced by '?'.
 */
char *tpf_bootstrap_render(const struct tpf_bootstrap_params *p);

/*
 * The part of that script that depends on p: everything before the fixed
 * body, tpf_template_bootstrap_sh, so that tpf_bootstrap_render(p) is
 * exactly this followed by that body. Lets a caller that only needs the
 * script's hash hash the two parts without building the whole script
 * (plan/worker_script.h: tpf_provision_hash). Caller frees.
 */
char *tpf_bootstrap_render_head(const struct tpf_bootstrap_params *p);

/* The secrets env file ("export NAME='value'" lines, sorted by name);
 * caller frees. An empty list gives a file with only a comment. Invalid
 * or reserved names are left out, as in tpf_bootstrap_render. */
char *tpf_secrets_render(const struct tpf_kvlist *secrets);

/* 1 if name is a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*). */
int tpf_env_name_valid(const char *name);

/* 1 if name belongs to the script (prefix "TPUFORM_"): env and secrets
 * may not set it. */
int tpf_env_name_reserved(const char *name);

/* Embedded templates (generated templates/embedded.c). */
extern const char tpf_template_bootstrap_sh[];

#endif
