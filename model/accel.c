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
#include <stdio.h>
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

/* The dimensions of "AxB" or "AxBxC" into dims; how many, or -1. */
static int parse_topology(const char *s, int dims[3])
{
	int n = 0;
	while (n < 3) {
		const char *x = strchr(s, 'x');
		char part[12];
		size_t len = x ? (size_t)(x - s) : strlen(s);
		if (len == 0 || len >= sizeof(part))
			return -1;
		memcpy(part, s, len);
		part[len] = '\0';
		if ((dims[n++] = parse_size(part)) <= 0)
			return -1;
		if (!x)
			return n;
		s = x + 1;
	}
	return -1;
}

static const struct {
	const char *family, *config_type;
	int ndims;
	int cores_per_chip; /* 2: the type's size counts TensorCores; 1: chips */
	const char *rule;
} topo_families[] = {
	{ "v2", "V2", 2, 2, "a v2 topology AxB with A <= B, such as 2x2 (v2-8) or 4x4 (v2-32)" },
	{ "v3", "V3", 2, 2, "a v3 topology AxB with A <= B, such as 2x2 (v3-8) or 4x4 (v3-32)" },
	{ "v4", "V4", 3, 2,
	  "a v4 topology AxBxC with A <= B <= C, such as 2x2x1 (v4-8) or 2x2x2 (v4-16)" },
	{ "v5p", "V5P", 3, 2,
	  "a v5p topology AxBxC with A <= B <= C, such as 2x2x1 (v5p-8) or 2x2x2 (v5p-16)" },
	{ "v5litepod", "V5LITE_POD", 2, 1,
	  "a v5litepod topology AxB, such as 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16 or 16x16" },
	{ "v6e", "V6E", 2, 1,
	  "a v6e topology AxB, such as 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16 or 16x16" },
};

static const char topo_family_rule[] =
	"one of v2, v3, v4, v5p, v5litepod or v6e when 'topology' is set";

int tpf_accel_topology(const char *family, const char *topology, struct tpf_accel *out,
		       const char **why)
{
	for (size_t i = 0; family && i < sizeof(topo_families) / sizeof(topo_families[0]); i++) {
		if (strcmp(family, topo_families[i].family))
			continue;
		int dims[3];
		int n = topology ? parse_topology(topology, dims) : -1;
		long chips = 1;
		int ordered = n == topo_families[i].ndims;
		/* v4 and v5p write the single-host slice as 2x2x1 (the tables'
		 * own spelling), the one exception to A <= B <= C. */
		int last = n == 3 && dims[2] == 1 ? 2 : n;
		for (int k = 0; ordered && k < n; k++) {
			chips *= dims[k];
			if (k && k < last && dims[k - 1] > dims[k])
				ordered = 0;
		}
		char type[40];
		snprintf(type, sizeof(type), "%s-%ld", family, chips * topo_families[i].cores_per_chip);
		if (!ordered || chips > 100000 || tpf_accel_lookup(type, out, NULL) < 0) {
			if (why)
				*why = topo_families[i].rule;
			return -1;
		}
		if (why)
			*why = NULL;
		return 0;
	}
	if (why)
		*why = topo_family_rule;
	return -1;
}

const char *tpf_accel_config_type(const char *family)
{
	for (size_t i = 0; family && i < sizeof(topo_families) / sizeof(topo_families[0]); i++)
		if (!strcmp(family, topo_families[i].family))
			return topo_families[i].config_type;
	return NULL;
}
