/*
 * Worker-side limits on what the fleet file hands to every worker's shell
 * (config/config_limits.c explains the sources: Linux execve(2)).
 */
#ifndef TPF_CONFIG_LIMITS_H
#define TPF_CONFIG_LIMITS_H

#include "config/config.h"
#include "util/diag.h"

/* One execve string (MAX_ARG_STRLEN, with its NUL), in bytes. */
#define TPF_WORKER_STRING_MAX ((size_t)131072)
/* env + secrets + the longer of setup and run, in bytes: half of Linux's
 * usual 2 MiB ARG_MAX, the other half left to the worker. */
#define TPF_WORKER_ENV_TOTAL_MAX ((size_t)1 << 20)

/*
 * Check every group's effective env, the secrets, setup and run against
 * the limits above. Returns 0, or TPF_ERROR with one diagnostic per value
 * over a limit (FILE:LINE:COL of the group, the name and size; never a
 * secret's value) and a hint. Stops at the first group that fails, so a
 * fleet of 40,000 identical groups gives one message, not 40,000.
 */
int tpf_fleet_check_worker_limits(const struct tpf_fleet *f, struct tpf_diags *d);

#endif
