/*
 * Accelerator types: family and size -> number of worker VMs.
 *
 * Source: docs/cloud-tpu-api.md section 9 (Cloud TPU docs for v2..v6e).
 * v2, v3, v4, v5p: the suffix counts TensorCores, workers = max(1, N/8).
 * v5litepod (v5e), v6e: the suffix counts chips, workers = 1 up to 8 chips,
 * else N/4.
 */
#ifndef TPF_ACCEL_H
#define TPF_ACCEL_H

struct tpf_accel {
	const char *family; /* "v2" "v3" "v4" "v5p" "v5litepod" "v6e" (static) */
	int size;           /* the N in "<family>-N" */
	int workers;        /* VMs in the slice */
};

/*
 * Parse and check an accelerator type such as "v4-16". Returns 0 and fills
 * *out (if not NULL), or -1 if the family is unknown or the size is not one
 * the family offers.
 * On failure `why` (optional) receives a borrowed static string stating what
 * was expected, worded to follow "must be", e.g. for "v4-12"
 * "v4-N with N a power of two from 8 to 4096", and for "v9-8"
 * "<family>-<size> with family v2, v3, v4, v5p, v5litepod or v6e, such as
 * 'v4-16'". The caller quotes the type itself. On success *why is NULL.
 */
int tpf_accel_lookup(const char *type, struct tpf_accel *out, const char **why);

/*
 * A TPU type with a chip topology, as gcloud's `--type v4 --topology
 * 2x2x2` and the API's acceleratorConfig {type, topology} take it, instead
 * of an accelerator type string. `family` is one of v2, v3, v4, v5p,
 * v5litepod, v6e; `topology` is AxB (v2, v3, v5litepod, v6e) or AxBxC (v4,
 * v5p) with A <= B (<= C), and the chips (the product) must make a size
 * the family offers, by the tables of
 *   https://cloud.google.com/tpu/docs/types-topologies (v2, v3, v4: cores
 *     = 2 x chips; "AxBxC where A<=B<=C"),
 *   https://cloud.google.com/tpu/docs/v5p, https://cloud.google.com/tpu/docs/v5e
 *   and https://cloud.google.com/tpu/docs/v6e (topology and chips columns).
 * Fills *out (family, size as the equivalent "<family>-<size>" counts it,
 * workers) and returns 0; or -1 with *why (optional; static, after "must
 * be") saying what was expected.
 */
int tpf_accel_topology(const char *family, const char *topology, struct tpf_accel *out,
		       const char **why);

/* acceleratorConfig.type for a family ("v4" -> "V4", "v5litepod" ->
 * "V5LITE_POD"; discovery document, schema AcceleratorConfig); static, or
 * NULL for an unknown family. */
const char *tpf_accel_config_type(const char *family);

#endif
