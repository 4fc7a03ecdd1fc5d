/*
 * Saved plan files (`tpuform plan -out=FILE`, `tpuform apply FILE`): the
 * JSON form of plan/planfile.c, on disk. The format and the staleness rules
 * are pure and live in plan/; this file only reads and writes.
 */
#ifndef TPF_ENGINE_SAVED_PLAN_H
#define TPF_ENGINE_SAVED_PLAN_H

#include "plan/plan.h"
#include "util/diag.h"

/*
 * Write plan p to `path` as indented JSON with sorted keys, under the rule
 * for output paths (util/outfile.h: atomically over a regular file, in
 * place on a device, never a directory created) and with mode 0600 (less
 * the umask): the plan names nodes and jobs, and Terraform keeps plan
 * files private too. Errors: TPF_ERROR with a diagnostic naming the path.
 */
int tpf_saved_plan_write(const struct tpf_plan *p, const char *path, struct tpf_diags *d);

/*
 * Read the saved plan at `path` into *p (caller releases it with
 * tpf_plan_release, also after an error). Errors: a file that cannot be read
 * or is not JSON ("cannot read saved plan 'PATH': why"), or is not a
 * tpuform plan (plan/plan.h tpf_plan_from_json). Staleness is not checked
 * here: see tpf_plan_check_stale.
 */
int tpf_saved_plan_read(struct tpf_plan *p, const char *path, struct tpf_diags *d);

#endif
