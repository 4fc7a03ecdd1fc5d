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

#endif
