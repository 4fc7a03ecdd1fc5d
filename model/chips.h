/*
 * Chips of a node: what chip-hours (the unit Cloud TPU prices are quoted
 * in) count. Used by the run ledger (engine/ledger/ledger_writer.h) and its report.
 *
 * Source: https://cloud.google.com/tpu/docs/types-topologies (v2, v3, v4,
 * v5p: the accelerator type's suffix counts TensorCores, two per chip;
 * v5litepod (v5e), v6e: the suffix counts chips) and, for Compute Engine
 * nodes, the machine-type table of model/compute.h (chips per VM x VMs).
 */
#ifndef TPF_MODEL_CHIPS_H
#define TPF_MODEL_CHIPS_H

#include "model/recipe.h"

/*
 * TPU chips of the node r describes: every slice of a multislice node
 * counted. 0 when the accelerator or machine type is unknown (never an
 * error: the ledger records what it can). Pure.
 */
int tpf_recipe_chips(const struct tpf_recipe *r);

/*
 * The chip generation that prices key on: "v2", "v3", "v4", "v5p",
 * "v5e" (the API's v5litepod), "v6e", or a machine type's generation
 * ("tpu7x"); NULL when unknown. Static string.
 */
const char *tpf_recipe_generation(const struct tpf_recipe *r);

/* "ACCELERATOR_TYPE" of a Cloud TPU node or the machine type of a Compute
 * Engine node (borrowed from r; may be NULL). */
const char *tpf_recipe_type(const struct tpf_recipe *r);

#endif
