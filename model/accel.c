/*
 * Accelerator types -> worker VMs (docs/cloud-tpu-api.md section 9).
 *
 * Only the names Cloud TPU actually offers are accepted: a typo such as
 * "v4-12" fails at plan time with the family's size rule instead of as an
 * INVALID_ARGUMENT from nodes.create minutes into an apply.
 */
#include "model/accel.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

enum accel_unit { UNIT_CORES, UNIT_CHIPS };

struct accel_family {
	const char *name;
	enum accel_unit unit;
	int min, max;   /* UNIT_CORES: powers of two in [min, max] */
	int extra;      /* one more size outside the power-of-two run, or 0 */
	const char *rule; /* the expectation for people, after "must be" */
};

static const struct accel_family families[] = {
	{ "v2", UNIT_CORES, 8, 512, 0, "v2-N with N a power of two from 8 to 512" },
	{ "v3", UNIT_CORES, 8, 2048, 0, "v3-N with N a power of two from 8 to 2048" },
	{ "v4", UNIT_CORES, 8, 4096, 0, "v4-N with N a power of two from 8 to 4096" },
	{ "v5p", UNIT_CORES, 8, 8192, 12288,
	  "v5p-N with N a power of two from 8 to 8192, or 12288" },
	/* v5e and v6e sizes are chips: 1, 4 and 8 are single-host, the
	 * rest are 4-chip VMs (so 2 is not a size). */
	{ "v5litepod", UNIT_CHIPS, 1, 256, 0,
	  "v5litepod-N with N one of 1, 4, 8, 16, 32, 64, 128 or 256" },
	{ "v6e", UNIT_CHIPS, 1, 256, 0, "v6e-N with N one of 1, 4, 8, 16, 32, 64, 128 or 256" },
};

static const char general_rule[] =
	"<family>-<size> with family v2, v3, v4, v5p, v5litepod or v6e, such as 'v4-16'";
/* The marketing name is what people type; the API only knows v5litepod. */
static const char v5e_rule[] =
	"v5litepod-N (the API name of v5e) with N one of 1, 4, 8, 16, 32, 64, 128 or 256";

static int is_pow2(int n)
{
	return n > 0 && (n & (n - 1)) == 0;
}

static int size_ok(const struct accel_family *f, int n)
{
	if (f->extra && n == f->extra)
		return 1;
	if (f->unit == UNIT_CHIPS && n == 2)
		return 0;
	return is_pow2(n) && n >= f->min && n <= f->max;
}

static int workers_of(const struct accel_family *f, int n)
{
	if (f->unit == UNIT_CORES)
		return n / 8 > 1 ? n / 8 : 1;
	return n <= 8 ? 1 : n / 4;
}

/* Decimal digits only, no sign, no leading zero; -1 otherwise. */
static int parse_size(const char *s)
{
	long v = 0;
	if (!*s || (s[0] == '0' && s[1]))
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
		if (v > INT_MAX / 2)
			return -1;
	}
	return (int)v;
}

int tpf_accel_lookup(const char *type, struct tpf_accel *out, const char **why)
{
	const char *dash = type ? strrchr(type, '-') : NULL;
	const char *rule = general_rule;
	int n;

	if (!dash)
		goto bad;
	size_t flen = (size_t)(dash - type);
	if (flen == 3 && !strncmp(type, "v5e", 3)) {
		rule = v5e_rule;
		goto bad;
	}
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		const struct accel_family *f = &families[i];
		if (strlen(f->name) != flen || strncmp(type, f->name, flen))
			continue;
		rule = f->rule;
		n = parse_size(dash + 1);
		if (n < 0 || !size_ok(f, n))
			goto bad;
		if (out) {
			out->family = f->name;
			out->size = n;
			out->workers = workers_of(f, n);
		}
		if (why)
			*why = NULL;
		return 0;
	}
bad:
	if (why)
		*why = rule;
	return -1;
}
