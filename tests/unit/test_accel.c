#include "tests/unit/unit.h"
#include "model/accel.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *type;
	const char *family;
	int size;
	int workers;
} valid[] = {
	/* Examples from docs/cloud-tpu-api.md section 9. */
	{ "v2-8", "v2", 8, 1 },
	{ "v2-32", "v2", 32, 4 },
	{ "v2-128", "v2", 128, 16 },
	{ "v2-512", "v2", 512, 64 },
	{ "v3-8", "v3", 8, 1 },
	{ "v3-32", "v3", 32, 4 },
	{ "v3-64", "v3", 64, 8 },
	{ "v3-2048", "v3", 2048, 256 },
	{ "v4-8", "v4", 8, 1 },
	{ "v4-16", "v4", 16, 2 },
	{ "v4-32", "v4", 32, 4 },
	{ "v4-64", "v4", 64, 8 },
	{ "v4-128", "v4", 128, 16 },
	{ "v4-4096", "v4", 4096, 512 },
	{ "v5p-8", "v5p", 8, 1 },
	{ "v5p-16", "v5p", 16, 2 },
	{ "v5p-32", "v5p", 32, 4 },
	{ "v5p-128", "v5p", 128, 16 },
	{ "v5p-8192", "v5p", 8192, 1024 },
	{ "v5p-12288", "v5p", 12288, 1536 },
	{ "v5litepod-1", "v5litepod", 1, 1 },
	{ "v5litepod-4", "v5litepod", 4, 1 },
	{ "v5litepod-8", "v5litepod", 8, 1 },
	{ "v5litepod-16", "v5litepod", 16, 4 },
	{ "v5litepod-32", "v5litepod", 32, 8 },
	{ "v5litepod-64", "v5litepod", 64, 16 },
	{ "v5litepod-128", "v5litepod", 128, 32 },
	{ "v5litepod-256", "v5litepod", 256, 64 },
	{ "v6e-1", "v6e", 1, 1 },
	{ "v6e-4", "v6e", 4, 1 },
	{ "v6e-8", "v6e", 8, 1 },
	{ "v6e-16", "v6e", 16, 4 },
	{ "v6e-32", "v6e", 32, 8 },
	{ "v6e-64", "v6e", 64, 16 },
	{ "v6e-128", "v6e", 128, 32 },
	{ "v6e-256", "v6e", 256, 64 },
};

static const char general[] =
	"<family>-<size> with family v2, v3, v4, v5p, v5litepod or v6e, such as 'v4-16'";

static const struct {
	const char *type;
	const char *why;
} invalid[] = {
	{ "", general },
	{ "v4", general },
	{ "v9-8", general },
	{ "V4-8", general },
	{ "tpu-v4-8", general },
	{ "v2-1024", "v2-N with N a power of two from 8 to 512" },
	{ "v2-4", "v2-N with N a power of two from 8 to 512" },
	{ "v3-4096", "v3-N with N a power of two from 8 to 2048" },
	{ "v4-12", "v4-N with N a power of two from 8 to 4096" },
	{ "v4-8192", "v4-N with N a power of two from 8 to 4096" },
	{ "v4-", "v4-N with N a power of two from 8 to 4096" },
	{ "v4-016", "v4-N with N a power of two from 8 to 4096" },
	{ "v4-+16", "v4-N with N a power of two from 8 to 4096" },
	{ "v4-16x", "v4-N with N a power of two from 8 to 4096" },
	{ "v4-99999999999999999999", "v4-N with N a power of two from 8 to 4096" },
	{ "v5p-16384", "v5p-N with N a power of two from 8 to 8192, or 12288" },
	{ "v5p-12287", "v5p-N with N a power of two from 8 to 8192, or 12288" },
	{ "v5litepod-2", "v5litepod-N with N one of 1, 4, 8, 16, 32, 64, 128 or 256" },
	{ "v5litepod-512", "v5litepod-N with N one of 1, 4, 8, 16, 32, 64, 128 or 256" },
	{ "v5litepod-0", "v5litepod-N with N one of 1, 4, 8, 16, 32, 64, 128 or 256" },
	{ "v6e-2", "v6e-N with N one of 1, 4, 8, 16, 32, 64, 128 or 256" },
	{ "v6e-12", "v6e-N with N one of 1, 4, 8, 16, 32, 64, 128 or 256" },
	{ "v5e-8", "v5litepod-N (the API name of v5e) with N one of 1, 4, 8, 16, 32, 64, 128 or 256" },
};

static void test_accel__valid_types(void)
{
	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		struct tpf_accel a = { NULL, -1, -1 };
		const char *why = "unset";
		int rc = tpf_accel_lookup(valid[i].type, &a, &why);
		CHECKF(rc == 0, "%s: rc %d", valid[i].type, rc);
		CHECK_STR(a.family, valid[i].family);
		CHECKF(a.size == valid[i].size, "%s: size %d, want %d", valid[i].type, a.size,
		       valid[i].size);
		CHECKF(a.workers == valid[i].workers, "%s: workers %d, want %d", valid[i].type,
		       a.workers, valid[i].workers);
		CHECKF(why == NULL, "%s: why should be NULL on success", valid[i].type);
	}
}

static void test_accel__invalid_types(void)
{
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		struct tpf_accel a = { "untouched", 7, 7 };
		const char *why = NULL;
		int rc = tpf_accel_lookup(invalid[i].type, &a, &why);
		CHECKF(rc == -1, "'%s': rc %d, want -1", invalid[i].type, rc);
		CHECK_STR(why, invalid[i].why);
		CHECKF(!strcmp(a.family, "untouched") && a.workers == 7,
		       "'%s': out must be left alone on failure", invalid[i].type);
	}
}

/* Every power of two in each family's range is accepted, nothing between. */
static void test_accel__sizes_exhaustive(void)
{
	static const struct {
		const char *family;
		int min, max;
	} fam[] = { { "v2", 8, 512 }, { "v3", 8, 2048 }, { "v4", 8, 4096 }, { "v5p", 8, 8192 } };
	for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++) {
		int accepted = 0, want = 0;
		for (int n = 1; n <= 20000; n++) {
			char t[32];
			snprintf(t, sizeof(t), "%s-%d", fam[i].family, n);
			struct tpf_accel a;
			int ok = tpf_accel_lookup(t, &a, NULL) == 0;
			int pow2 = (n & (n - 1)) == 0 && n >= fam[i].min && n <= fam[i].max;
			int expect = pow2 || (!strcmp(fam[i].family, "v5p") && n == 12288);
			if (ok != expect)
				CHECKF(0, "%s: accepted %d, expected %d", t, ok, expect);
			accepted += ok;
			want += expect;
			if (ok && a.workers != (n / 8 > 1 ? n / 8 : 1))
				CHECKF(0, "%s: workers %d", t, a.workers);
		}
		CHECKF(accepted == want, "%s: %d sizes accepted, want %d", fam[i].family, accepted,
		       want);
	}
}

static void test_accel__null_out(void)
{
	CHECK(tpf_accel_lookup("v4-32", NULL, NULL) == 0);
	CHECK(tpf_accel_lookup(NULL, NULL, NULL) == -1);
}

int main(void)
{
	RUN(test_accel__valid_types);
	RUN(test_accel__invalid_types);
	RUN(test_accel__sizes_exhaustive);
	RUN(test_accel__null_out);
	return unit_done();
}
