/*
 * elastic: { min_slices, grow } of a multislice group (config/config_elastic.c;
 * issue 30): read on both APIs, its defaults, and every refusal with its
 * FILE:LINE:COL and a hint.
 */
#include "tests/unit/unit.h"
#include "config/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEAD "fleet: f\nprovider: { gcp: { project: p } }\nrun: train\ngroups:\n"
#define TPU "  - { name: a, accelerator_type: v4-8, runtime_version: r, zones: [z], count: 1"
#define GCE "  - { name: a, machine_type: ct6e-standard-4t, topology: 4x4, zones: [z], count: 1"

static int parse(struct tpf_fleet *f, const char *group_fmt, const char *extra,
		 struct tpf_diags *d)
{
	char text[2048], group[1024];
	snprintf(group, sizeof(group), "%s%s }\n", group_fmt, extra);
	snprintf(text, sizeof(text), HEAD "%s", group);
	return tpf_fleet_parse(f, "fleet.yaml", text, strlen(text), d);
}

/* Refused with an error at pos whose summary says want and whose hint
 * (detail) says hint. */
static void expect_error(const char *group_fmt, const char *extra, const char *pos,
			 const char *want, const char *hint)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	int rc = parse(&f, group_fmt, extra, &d);
	CHECKF(rc != 0, "refused: %s", extra);
	int found = 0;
	for (size_t i = 0; i < d.n && !found; i++)
		found = strstr(d.items[i].summary, want) && strstr(d.items[i].summary, pos) &&
			(!hint || (d.items[i].detail && strstr(d.items[i].detail, hint)));
	CHECKF(found, "%s: an error at %s saying '%s' (hint '%s'); got '%s' / '%s'", extra, pos,
	       want, hint ? hint : "", d.n ? d.items[0].summary : "(none)",
	       d.n && d.items[0].detail ? d.items[0].detail : "");
	if (!rc)
		tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

static void test_config_elastic__read(void)
{
	static const struct {
		const char *fmt, *extra;
		int k;
		enum tpf_elastic_grow grow;
	} ok[] = {
		{ GCE, ", slices: 3, elastic: { min_slices: 2 }", 2, TPF_GROW_CHECKPOINT },
		{ GCE, ", slices: 3, elastic: { min_slices: 1, grow: at_once }", 1, TPF_GROW_AT_ONCE },
		{ GCE, ", slices: 2, elastic: { min_slices: 2, grow: checkpoint }", 2,
		  TPF_GROW_CHECKPOINT },
		{ TPU, ", slices: 4, elastic: { min_slices: 3 }", 3, TPF_GROW_CHECKPOINT },
		{ GCE, ", slices: 3", 0, TPF_GROW_CHECKPOINT },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct tpf_fleet f;
		struct tpf_diags d = TPF_DIAGS_INIT;
		int rc = parse(&f, ok[i].fmt, ok[i].extra, &d);
		CHECKF(rc == 0, "%s parses: %s", ok[i].extra, d.n ? d.items[0].summary : "");
		tpf_diags_release(&d);
		if (rc)
			continue;
		CHECK_INT(f.groups[0].elastic.min_slices, ok[i].k);
		CHECK_INT((int)f.groups[0].elastic.grow, (int)ok[i].grow);
		const struct tpf_elastic *e = tpf_fleet_elastic(&f, "a");
		CHECKF(ok[i].k ? e == &f.groups[0].elastic : e == NULL, "%s: tpf_fleet_elastic",
		       ok[i].extra);
		CHECK(tpf_fleet_elastic(&f, "nope") == NULL);
		tpf_fleet_release(&f);
	}
}

static void test_config_elastic__refused(void)
{
	/* without slices, on either API */
	expect_error(GCE, ", elastic: { min_slices: 1 }", "fleet.yaml:5:",
		     "applies to multislice groups only", "slices: N");
	expect_error(TPU, ", elastic: { min_slices: 1 }", "fleet.yaml:5:",
		     "applies to multislice groups only", "slices: N");
	/* min_slices out of 1 .. slices */
	expect_error(GCE, ", slices: 3, elastic: { min_slices: 4 }", "fleet.yaml:5:",
		     "more than its 3 slices", "1 to slices");
	expect_error(GCE, ", slices: 3, elastic: { min_slices: 0 }", "fleet.yaml:5:",
		     "elastic.min_slices", NULL);
	expect_error(GCE, ", slices: 3, elastic: { grow: at_once }", "fleet.yaml:5:",
		     "min_slices", NULL);
	/* grow is an enum with a suggestion */
	expect_error(GCE, ", slices: 3, elastic: { min_slices: 2, grow: atonce }",
		     "fleet.yaml:5:", "elastic.grow", NULL);
	expect_error(GCE, ", slices: 3, elastic: { min_slices: 2, grwo: at_once }",
		     "fleet.yaml:5:", "grwo", NULL);
	expect_error(GCE, ", slices: 3, elastic: 2", "fleet.yaml:5:", "'elastic' must be", NULL);
}

/* At top level the key belongs in a group. */
static void test_config_elastic__top_level(void)
{
	const char *text = "fleet: f\nprovider: { gcp: { project: p } }\nrun: train\n"
			   "elastic: { min_slices: 1 }\ngroups:\n"
			   "  - { name: a, machine_type: ct6e-standard-4t, zones: [z], count: 1 }\n";
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	int rc = tpf_fleet_parse(&f, "fleet.yaml", text, strlen(text), &d);
	CHECK(rc != 0);
	CHECKF(d.n && strstr(d.items[0].summary, "fleet.yaml:4:") &&
		       strstr(d.items[0].summary, "elastic"),
	       "top-level elastic refused at 4: %s", d.n ? d.items[0].summary : "");
	if (!rc)
		tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

int main(void)
{
	RUN(test_config_elastic__read);
	RUN(test_config_elastic__refused);
	RUN(test_config_elastic__top_level);
	return unit_done();
}
