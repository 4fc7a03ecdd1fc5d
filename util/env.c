/*
 * Environment knobs (util/env.h).
 */
#include "util/env.h"
#include "util/timeutil.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

int tpf_env_seconds(const char *name, double *out, struct tpf_diags *d)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return 0;
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	int plain = !errno && end != v && !*end && isfinite(x) && x >= 0;
	if (!plain && tpf_parse_duration(v, &x) == 0 && isfinite(x) && x >= 0)
		plain = 1;
	if (!plain)
		return tpf_errorx(d, NULL, "unset it to use the default",
				  "environment variable '%s' is '%s': expected a non-negative number of "
				  "seconds, or a duration such as 500ms, 10s or 2m",
				  name, v);
	*out = x;
	return 0;
}

int tpf_env_int(const char *name, long min, long max, long *out, struct tpf_diags *d)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return 0;
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno || end == v || *end || x < min || x > max)
		return tpf_errorx(d, NULL, "unset it to use the default",
				  "environment variable '%s' is '%s': expected a whole number from %ld to %ld",
				  name, v, min, max);
	*out = x;
	return 0;
}
