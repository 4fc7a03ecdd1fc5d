/*
 * TPU VMs on Compute Engine (issue 18; docs/compute-engine.md): which API a
 * node lives on, the TPU machine types and their topologies, and the
 * Compute Engine part of a node's recipe.
 *
 * The machine-type table (tpf_machine_type_lookup) and the topology rule
 * (tpf_machine_topology) are the one place the fleet file, the plan and the
 * provider learn chips per VM, the allowed topologies and the VMs of a
 * slice. Sources (docs/compute-engine.md section "Machine types"):
 *   https://docs.cloud.google.com/compute/docs/tpus/tpu-machines (TPU7x,
 *     v6e, v5p are the versions Compute Engine supports);
 *   https://docs.cloud.google.com/tpu/docs/v6e (v6e topologies and VMs);
 *   xpk src/xpk/core/system_characteristics.py (generate_tpu_topologies,
 *     max_cubes 140 for v5p and 144 for TPU7x; compute_vms_per_slice);
 *   GKE cluster-autoscaler machinetypes (chips per machine type and the
 *     single-host topology).
 * VMs in a slice = chips in the topology / chips per VM.
 */
#ifndef TPF_COMPUTE_H
#define TPF_COMPUTE_H

#include <jansson.h>
#include "util/diag.h"

/* The API a node lives on (group key `api`). */
enum tpf_api { TPF_API_TPU = 0, TPF_API_COMPUTE = 1 };

/* "tpu" or "compute" (static). */
const char *tpf_api_name(enum tpf_api api);

struct tpf_machine_type {
	const char *name;       /* "ct6e-standard-4t" */
	const char *generation; /* "tpu7x", "v6e", "v5p" */
	int chips;              /* TPU chips per VM */
	const char *own;        /* the machine type's single-host topology ("2x2") */
	/* Default boot image family in project ubuntu-os-accelerator-images
	 * (docs/compute-engine.md section "Boot images"). */
	const char *image_family;
};

/* The image project of every default boot image. */
#define TPF_COMPUTE_IMAGE_PROJECT "ubuntu-os-accelerator-images"
/* Defaults of the boot disk (docs/compute-engine.md "Boot disk"). */
#define TPF_COMPUTE_DISK_GB_DEFAULT 200
#define TPF_COMPUTE_DISK_TYPE_DEFAULT "hyperdisk-balanced"
/* maxRunDuration bounds for FLEX_START: 10 minutes to 7 days. */
#define TPF_COMPUTE_FLEX_RUN_MIN 600L
#define TPF_COMPUTE_FLEX_RUN_MAX (7L * 86400L)

/*
 * The row of machine type `name`, or NULL with *why (optional; static text
 * after "must be") listing the known types. Borrowed static row.
 */
const struct tpf_machine_type *tpf_machine_type_lookup(const char *name, const char **why);

/*
 * Check `topology` for machine type mt and count its VMs: 0 and *vms set,
 * or -1 with *why (static, after "must be") naming what the generation
 * allows. NULL topology: the machine type's own (1 VM).
 */
int tpf_machine_topology(const struct tpf_machine_type *mt, const char *topology, int *vms,
			 const char **why);

/*
 * The Compute Engine part of a recipe (model/recipe.h). Every field but
 * flex_wait forces replacement (plan/diff_node.c). A zeroed struct is a
 * Cloud TPU API node with nothing set. Strings are owned.
 */
struct tpf_compute {
	enum tpf_api api;
	char *machine_type;      /* "tpu7x-standard-4t" (bare name, as templates take it) */
	/* The boot image as sent: "projects/P/global/images/family/F" or
	 * "projects/P/global/images/NAME". */
	char *image;
	int flex_start;          /* FLEX_START provisioning (with NO_RESERVATION) */
	/* Scheduling.instanceTerminationAction for SPOT: "DELETE" or "STOP";
	 * NULL otherwise (FLEX_START always sends DELETE). */
	char *termination_action;
	long max_run_duration;   /* Scheduling.maxRunDuration, seconds; 0: none */
	long flex_wait;          /* flex_start.wait, seconds (how long to wait for capacity);
				  * 0: no limit. Read at create time only. */
	int disk_size_gb;        /* boot disk initializeParams.diskSizeGb; 0: unknown (live) */
	char *disk_type;         /* boot disk type name ("hyperdisk-balanced") */
};

void tpf_compute_copy(struct tpf_compute *dst, const struct tpf_compute *src);
void tpf_compute_release(struct tpf_compute *c);

/*
 * JSON form in state files and saved plans: nothing for a Cloud TPU API
 * node (so their states stay byte-identical); else "api": "compute" and
 * each set field under its key (machine_type, image, flex_start,
 * termination_action, max_run_duration, flex_wait, boot_disk {size_gb,
 * type}) added to object o. from_json reads them back (absent: unset); 0,
 * or TPF_ERROR with a diagnostic naming `what` and the key.
 */
void tpf_compute_to_json(const struct tpf_compute *c, json_t *o);
int tpf_compute_from_json(struct tpf_compute *c, json_t *o, const char *what,
			  struct tpf_diags *d);

#endif
