/*
 * Elastic slices (issue 30; plan/elastic.c, plan/worker_script.c,
 * templates/render.c): the running-slice list, and what each worker's
 * script says while the job runs on some of its slices: the running slices
 * renumbered 0 .. k-1, the coordinator the first running slice's first
 * worker, and $TPUFORM_ELASTIC; without `elastic` nothing changes.
 */
#include "config/config.h"
#include "plan/elastic.h"
#include "plan/worker_script.h"
#include "state/state.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLEET_HEAD                                                                     \
	"fleet: el\nprovider: { gcp: { project: p } }\nrun: train\ngroups:\n"          \
	"  - { name: a, machine_type: tpu7x-standard-4t, topology: 2x2x2, zones: [z1], " \
	"count: 1, slices: 3"

static int parse(struct tpf_fleet *f, const char *tail)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *text = xasprintf("%s%s }\n", FLEET_HEAD, tail);
	int rc = tpf_fleet_parse(f, "fleet.yaml", text, strlen(text), &d);
	free(text);
	tpf_diags_release(&d);
	return rc;
}

static void test_elastic__running(void)
{
	static const struct {
		const char *list;
		int n, count;
		const char *on;
	} cases[] = {
		{ NULL, 3, 3, "111" },	  { "0,2", 3, 2, "101" }, { "1", 3, 1, "010" },
		{ "0,1,2", 3, 3, "111" }, { "", 3, -1, "111" },	   { "3", 3, -1, "111" },
		{ "2,0", 3, -1, "111" },  { "1,1", 3, -1, "111" }, { "0,", 3, -1, "111" },
		{ "0;1", 3, -1, "111" },  { "-1", 3, -1, "111" },  { "10", 12, 1, "000000000010" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned char on[16];
		char got[17] = "";
		int count = tpf_elastic_running(cases[i].list, cases[i].n, on);
		for (int k = 0; k < cases[i].n; k++)
			got[k] = on[k] ? '1' : '0';
		got[cases[i].n] = 0;
		CHECKF(count == cases[i].count && !strcmp(got, cases[i].on),
		       "'%s' of %d: %d %s, want %d %s", cases[i].list ? cases[i].list : "(null)",
		       cases[i].n, count, got, cases[i].count, cases[i].on);
	}
	unsigned char on[3] = { 1, 0, 1 };
	char *l = tpf_elastic_list(on, 3);
	CHECK_STR(l, "0,2");
	free(l);
}

/* Worker w's script of a 3-slice node of 2-VM slices running on `running`
 * (NULL: every slice); the live unit has 6 endpoints 10.0.0.1 .. 10.0.0.6. */
static char *script_of(const struct tpf_fleet *f, const char *running, int w)
{
	struct tpf_state_node n = { 0 };
	struct tpf_live_node live = { 0 };
	n.name = xstrdup("el-a-0");
	n.group = xstrdup("a");
	n.recipe.slices = 3;
	n.recipe.workers = 6;
	n.recipe.compute.api = TPF_API_COMPUTE;
	n.job.run = xstrdup("train");
	n.elastic_slices = xstrdup(running);
	live.endpoints = xcalloc(6, sizeof(*live.endpoints));
	live.nendpoints = 6;
	for (int i = 0; i < 6; i++)
		live.endpoints[i].ip = xasprintf("10.0.0.%d", i + 1);
	char *s = tpf_provision_render(f, &n, &live, w, NULL);
	tpf_live_node_release(&live);
	tpf_state_node_release(&n);
	return s;
}

/* The value the script gives NAME: "export NAME='V'" or ": ${NAME:='V'}". */
static void value_of(const char *s, const char *name, char *out, size_t len)
{
	char *k1 = xasprintf("export %s='", name), *k2 = xasprintf(": ${%s:='", name);
	const char *p = strstr(s, k1);
	size_t skip = strlen(k1);
	if (!p) {
		p = strstr(s, k2);
		skip = strlen(k2);
	}
	*out = 0;
	if (p) {
		p += skip;
		size_t n = strcspn(p, "'");
		snprintf(out, len, "%.*s", (int)n, p);
	}
	free(k1);
	free(k2);
}

static void expect(const struct tpf_fleet *f, const char *running, int w, const char *want)
{
	static const char *const names[] = { "TPUFORM_SLICE_ID", "TPUFORM_NUM_SLICES",
					     "MEGASCALE_SLICE_ID", "MEGASCALE_NUM_SLICES",
					     "MEGASCALE_COORDINATOR_ADDRESS", "TPUFORM_COORDINATOR",
					     "TPU_WORKER_ID", "TPUFORM_ELASTIC" };
	char *s = script_of(f, running, w);
	char got[512] = "", v[128];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		value_of(s, names[i], v, sizeof(v));
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? " " : "", v);
	}
	CHECKF(!strcmp(got, want), "running %s, worker %d: '%s', want '%s'",
	       running ? running : "all", w, got, want);
	free(s);
}

static void test_elastic__scripts(void)
{
	struct tpf_fleet f;
	if (parse(&f, ", elastic: { min_slices: 2 }")) {
		CHECK(!"the fleet parses");
		return;
	}
	/* every slice: the plain numbering, and TPUFORM_ELASTIC 3/3 */
	expect(&f, NULL, 0, "0 3 0 3 10.0.0.1 10.0.0.1 0 3/3");
	expect(&f, NULL, 5, "2 3 2 3 10.0.0.1 10.0.0.1 1 3/3");
	/* slice 1 lost: slices 0 and 2 run as slices 0 and 1 of 2 */
	expect(&f, "0,2", 0, "0 2 0 2 10.0.0.1 10.0.0.1 0 2/3");
	expect(&f, "0,2", 1, "0 2 0 2 10.0.0.1 10.0.0.1 1 2/3");
	expect(&f, "0,2", 4, "1 2 1 2 10.0.0.1 10.0.0.1 0 2/3");
	expect(&f, "0,2", 5, "1 2 1 2 10.0.0.1 10.0.0.1 1 2/3");
	/* slice 0 lost: slice 1's first worker coordinates */
	expect(&f, "1,2", 2, "0 2 0 2 10.0.0.3 10.0.0.3 0 2/3");
	expect(&f, "1,2", 5, "1 2 1 2 10.0.0.3 10.0.0.3 1 2/3");
	tpf_fleet_release(&f);
	/* without elastic: no TPUFORM_ELASTIC, and the same script as before */
	if (parse(&f, "")) {
		CHECK(!"the fleet parses");
		return;
	}
	expect(&f, NULL, 4, "2 3 2 3 10.0.0.1 10.0.0.1 0 ");
	char *s = script_of(&f, NULL, 3);
	CHECK(!strstr(s, "ELASTIC"));
	free(s);
	tpf_fleet_release(&f);
}

int main(void)
{
	RUN(test_elastic__running);
	RUN(test_elastic__scripts);
	return unit_done();
}
