/*
 * Environment knobs (util/env.h).
 */
#include "util/env.h"
#include "util/timeutil.h"

#include "util/number.h"

#include <stdlib.h>

int tpf_env_seconds(const char *name, double *out, struct tpf_diags *d)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return 0;
	double x = 0;
	if (tpf_parse_duration(v, &x) < 0) /* the one grammar: a bare number is seconds */
		return tpf_errorx(d, NULL, "unset it to use the default",
				  "environment variable '%s' is '%s': expected " TPF_DURATION_EXAMPLES,
				  name, v);
	*out = x;
	return 0;
}

int tpf_env_int(const char *name, long min, long max, long *out, struct tpf_diags *d)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return 0;
	long x = 0;
	if (tpf_parse_whole(v, min, max, &x) < 0) /* util/number.h */
		return tpf_errorx(d, NULL, "unset it to use the default",
				  "environment variable '%s' is '%s': expected a whole number from %ld to %ld",
				  name, v, min, max);
	*out = x;
	return 0;
}
