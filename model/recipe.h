/*
 * What a node is (its recipe) and what its workers run (its job).
 *
 * The recipe is everything the provider needs to (re)create a node; state
 * keeps a full copy per node so that a vanished node can be recreated even
 * after the fleet file changed. A change to a field marked "forces
 * replacement" below replaces the node, as Terraform's google_tpu_v2_vm
 * does (docs/cloud-tpu-api.md section 8): accelerator type, runtime version, zone,
 * scheduling. Labels update in place (nodes.patch updateMask=labels).
 *
 * The job is what the bootstrap script runs. A change re-provisions workers
 * without touching the node.
 */
#ifndef TPF_RECIPE_H
#define TPF_RECIPE_H

#include "model/compute.h"
#include "model/node_fields.h"
#include "util/kv.h"

struct tpf_recipe {
	char *accelerator_type; /* "v4-16"; forces replacement */
	char *runtime_version;  /* "tpu-ubuntu2204-base"; forces replacement */
	char *zone;             /* "us-central2-b"; forces replacement */
	int preemptible;        /* schedulingConfig.preemptible; forces replacement */
	int spot;               /* schedulingConfig.spot; forces replacement */
	int workers;            /* VMs in the slice, from the accelerator table */
	/* Every label the node carries, including tpuform-fleet,
	 * tpuform-group and tpuform-index. In place. */
	struct tpf_kvlist labels;
	/* Requested through a Cloud TPU queued resource (group `queued: true`,
	 * docs/cloud-tpu-api.md section 5) instead of nodes.create; forces
	 * replacement. The provider names the queued resource after the node. */
	int queued;
	/* The group's valid_until as written ("6h"): how long the queued
	 * resource may wait for capacity (queueingPolicy.validUntilDuration).
	 * NULL: no limit. Only read at create time: a change does not replace
	 * a node. */
	char *valid_until;
	/* Multislice (group `slices: N`, docs/design.md section 9): the node
	 * is N slices of accelerator_type requested through ONE queued
	 * resource (multisliceParams), restarted and replaced as one unit;
	 * `workers` then counts the workers of every slice (N x per slice).
	 * 0 or 1: a single slice. Forces replacement. */
	int slices;
	/* Network, service account, metadata, disks, shielded VM, reservation,
	 * topology (model/node_fields.h says which patch and which replace). */
	struct tpf_node_fields node;
	/* The API the node lives on and, on Compute Engine, its machine
	 * type, image, provisioning and boot disk (model/compute.h; issue
	 * 18). Zeroed: a Cloud TPU API node. For a compute node
	 * accelerator_type and runtime_version are NULL, node.topology is the
	 * slice topology and `workers` the VMs of the slice. */
	struct tpf_compute compute;
};

struct tpf_job {
	char *commit;   /* pinned source commit (40 hex), NULL without a source */
	char *repo;     /* source repo as declared, NULL without a source */
	char *setup;    /* setup command, may be NULL */
	char *run;      /* run command */
	struct tpf_kvlist env; /* non-secret environment */
	/* sha256 over sorted secret names and values: lets the plan see that
	 * a secret changed without storing it. NULL when there are none. */
	char *secrets_hash;
};

/* Labels every node tpuform creates carries (docs/design.md section 4). */
#define TPF_LABEL_FLEET "tpuform-fleet"
#define TPF_LABEL_GROUP "tpuform-group"
#define TPF_LABEL_INDEX "tpuform-index"
/*
 * Ownership (docs/design.md section 4, docs/state.md "What a fleet owns"): the
 * first 16 hex digits of the lineage of the state that created the node.
 * A fleet name is not unique in a project; a state's lineage is (a UUID v4
 * set once, state/state.h). Label values allow [a-z0-9_-], at most 63
 * characters (Cloud TPU Node.labels and Compute Engine labels share this
 * rule: https://cloud.google.com/compute/docs/labeling-resources).
 */
#define TPF_LABEL_LINEAGE "tpuform-lineage"
#define TPF_LINEAGE_LABEL_LEN 16

/*
 * The tpuform-lineage label value of `lineage`: its first
 * TPF_LINEAGE_LABEL_LEN hex digits, dashes skipped, lower case, written to
 * out (NUL-terminated). Returns out, or NULL (out = "") when lineage is
 * NULL or has fewer hex digits: a state without a lineage owns nothing.
 */
char *tpf_lineage_label(const char *lineage, char out[TPF_LINEAGE_LABEL_LEN + 1]);

void tpf_recipe_copy(struct tpf_recipe *dst, const struct tpf_recipe *src);
void tpf_recipe_release(struct tpf_recipe *r);
/* "preemptible", "spot", "flex-start" (Compute Engine FLEX_START) or
 * "on-demand". Borrowed static string. */
const char *tpf_recipe_scheduling(const struct tpf_recipe *r);
/* Slices of the node: r->slices when > 1, else 1. */
int tpf_recipe_slices(const struct tpf_recipe *r);
/* Workers of one slice: r->workers / tpf_recipe_slices(r), at least 1. */
int tpf_recipe_slice_workers(const struct tpf_recipe *r);

void tpf_job_copy(struct tpf_job *dst, const struct tpf_job *src);
void tpf_job_release(struct tpf_job *j);


#include <jansson.h>
#include "util/diag.h"

/*
 * JSON forms (new references; NULL fields omitted), shared by state files
 * and saved plans:
 *   recipe: {accelerator_type, runtime_version, zone, preemptible, spot,
 *            workers, labels{}, queued, valid_until, slices, and the
 *            node fields and compute fields (model/compute.h) when set}
 *           (queued only when true and slices only when > 1, so states of
 *           fleets without them read and write exactly as before)
 *   job:    {commit, repo, setup, run, env{}, secrets_hash}
 * from_json: 0, or TPF_ERROR with a diagnostic naming `what` and the field.
 */
json_t *tpf_recipe_to_json(const struct tpf_recipe *r);
int tpf_recipe_from_json(struct tpf_recipe *r, json_t *j, const char *what, struct tpf_diags *d);
json_t *tpf_job_to_json(const struct tpf_job *job);
int tpf_job_from_json(struct tpf_job *job, json_t *j, const char *what, struct tpf_diags *d);
json_t *tpf_kvlist_to_json(const struct tpf_kvlist *l);
int tpf_kvlist_from_json(struct tpf_kvlist *l, json_t *j, const char *what, struct tpf_diags *d);

#endif
