/*
 * Tuning knobs from the environment (TPUFORM_GCP_*, TPUFORM_SSH_*,
 * TPUFORM_LOCAL_*, ...): one parser, so every knob accepts and refuses the
 * same values.
 */
#ifndef TPF_ENV_H
#define TPF_ENV_H

#include "util/diag.h"

/*
 * Seconds from environment variable `name`: a duration of the one grammar
 * (util/timeutil.h tpf_parse_duration), a bare number of seconds ("2",
 * "0.25", "1e-3") or as the fleet file writes them ("500ms", "10s", "2m",
 * "1h", "7d"). Unset or empty: *out is left as it is (the
 * caller's default) and 0 is returned. Anything else ("abc", "-1", "5x",
 * "inf") is TPF_ERROR with a diagnostic naming the variable and its value,
 * and *out is left unchanged.
 */
int tpf_env_seconds(const char *name, double *out, struct tpf_diags *d);

/*
 * A whole number (util/number.h: "100", "1e2") from environment variable
 * `name` within [min, max]. Unset or empty: *out unchanged, 0. Otherwise
 * as tpf_env_seconds.
 */
int tpf_env_int(const char *name, long min, long max, long *out, struct tpf_diags *d);

#endif
