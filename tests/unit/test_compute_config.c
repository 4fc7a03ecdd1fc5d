/*
 * Compute Engine groups (issue 18): the machine-type table and its
 * topology rule (model/machine_type.c), the fleet file's keys and their
 * errors with FILE:LINE:COL (config/config_compute.c), and the recipe's
 * JSON round trip (model/compute.c).
 */
#include "tests/unit/unit.h"
#include "config/config.h"
#include "model/compute.h"
#include "model/recipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEAD "fleet: f\nprovider: { gcp: { project: p } }\nrun: train\n"

static int parse(struct tpf_fleet *f, const char *text, struct tpf_diags *d)
{
	return tpf_fleet_parse(f, "fleet.yaml", text, strlen(text), d);
}

/* The first diagnostic's summary contains want (and the file position). */
static void expect_error(const char *text, const char *pos, const char *want)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	int rc = parse(&f, text, &d);
	CHECKF(rc != 0, "refused: %s", want);
	int found = 0;
	for (size_t i = 0; i < d.n && !found; i++)
		found = strstr(d.items[i].summary, want) && strstr(d.items[i].summary, pos);
	CHECKF(found, "an error at %s saying '%s'; got '%s'", pos, want,
	       d.n ? d.items[0].summary : "(none)");
	if (!rc)
		tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

static void test_compute__machine_types(void)
{
	static const struct {
		const char *type, *topo;
		int vms;
	} ok[] = {
		{ "ct6e-standard-4t", NULL, 1 },       { "ct6e-standard-4t", "2x2", 1 },
		{ "ct6e-standard-4t", "4x4", 4 },      { "ct6e-standard-4t", "16x16", 64 },
		{ "ct6e-standard-1t", "1x1", 1 },      { "ct6e-standard-8t", "2x4", 1 },
		{ "ct5p-hightpu-4t", "2x2x1", 1 },     { "ct5p-hightpu-4t", "2x2x2", 2 },
		{ "ct5p-hightpu-4t", "4x4x4", 16 },    { "ct5p-hightpu-4t", "8x8x8", 128 },
		{ "tpu7x-standard-4t", "2x2x2", 2 },   { "tpu7x-standard-4t", "2x4x4", 8 },
		{ "tpu7x-standard-4t", "8x16x16", 512 }, { "tpu7x-standard-1t", "1x1x1", 1 },
	};
	static const struct {
		const char *type, *topo;
	} bad[] = {
		{ "ct6e-standard-4t", "2x4" },   /* two 4t VMs: GKE only */
		{ "ct6e-standard-4t", "2x2x2" }, { "ct6e-standard-1t", "2x2" },
		{ "ct6e-standard-8t", "4x4" },   { "ct5p-hightpu-4t", "4x4" },
		{ "ct5p-hightpu-4t", "4x2x2" },  /* not A <= B <= C */
		{ "ct5p-hightpu-4t", "4x4x6" },  /* not a multiple of 4 */
		{ "ct5p-hightpu-4t", "16x16x36" }, /* 144 cubes > 140 */
		{ "tpu7x-standard-4t", "16x16x40" }, /* 160 cubes > 144 */
		{ "tpu7x-standard-4t", "02x2x2" }, { "tpu7x-standard-4t", "2x2x" },
		{ "tpu7x-standard-4t", "x" },      { "tpu7x-standard-4t", "2x2x2x2" },
		{ "tpu7x-standard-1t", "2x2x1" },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		const char *why = "unset";
		int vms = -1;
		const struct tpf_machine_type *mt = tpf_machine_type_lookup(ok[i].type, NULL);
		CHECKF(mt != NULL, "%s is known", ok[i].type);
		if (!mt)
			continue;
		CHECKF(tpf_machine_topology(mt, ok[i].topo, &vms, &why) == 0 && !why,
		       "%s %s accepted", ok[i].type, ok[i].topo ? ok[i].topo : "(own)");
		CHECKF(vms == ok[i].vms, "%s %s: %d VMs, want %d", ok[i].type,
		       ok[i].topo ? ok[i].topo : "", vms, ok[i].vms);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *why = NULL;
		int vms = -1;
		const struct tpf_machine_type *mt = tpf_machine_type_lookup(bad[i].type, NULL);
		CHECKF(mt && tpf_machine_topology(mt, bad[i].topo, &vms, &why) < 0 && why,
		       "%s %s refused with a reason", bad[i].type, bad[i].topo);
	}
	const char *why = NULL;
	CHECK(tpf_machine_type_lookup("ct5lp-hightpu-4t", &why) == NULL);
	CHECK(why && strstr(why, "tpu7x-standard-4t"));
	CHECK_STR(tpf_machine_type_lookup("tpu7x-standard-4t", NULL)->image_family,
		  "ubuntu-accel-2404-amd64-tpu-tpu7x");
	CHECK_STR(tpf_machine_type_lookup("ct5p-hightpu-4t", NULL)->image_family,
		  "ubuntu-accel-2204-amd64-tpu-v5e-v5p-v6e");
}

static void test_compute__group_keys(void)
{
	const char *text = HEAD
		"groups:\n"
		"  - { name: a, machine_type: tpu7x-standard-4t, topology: 2x2x2, zones: [z],"
		" count: 1, slices: 2 }\n"
		"  - name: b\n"
		"    machine_type: ct6e-standard-4t\n"
		"    zones: [z1, z2]\n"
		"    count: 3\n"
		"    spot: true\n"
		"    termination_action: stop\n"
		"    max_run_duration: 2h\n"
		"    image: my-family\n"
		"    boot_disk: { size_gb: 500, type: pd-balanced }\n"
		"  - name: c\n"
		"    machine_type: ct5p-hightpu-4t\n"
		"    topology: 4x4x4\n"
		"    zones: [z]\n"
		"    count: 1\n"
		"    flex_start: { max_run_duration: 24h, wait: 6h }\n"
		"    image: projects/x/global/images/img-1\n"
		"  - { name: d, machine_type: ct6e-standard-1t, reservation: r1, zones: [z], count: 1 }\n"
		"  - { name: e, accelerator_type: v6e-4, runtime_version: r, zones: [z], count: 1 }\n";
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	int rc = parse(&f, text, &d);
	CHECKF(rc == 0, "parses: %s", d.n ? d.items[0].summary : "");
	if (rc)
		return;
	const struct tpf_group *a = &f.groups[0], *b = &f.groups[1], *c = &f.groups[2];
	CHECK_INT(a->compute.api, TPF_API_COMPUTE); /* machine_type: compute by default */
	CHECK_STR(a->compute.machine_type, "tpu7x-standard-4t");
	CHECK_STR(a->node.topology, "2x2x2");
	CHECK_INT(a->workers, 2);      /* VMs of one slice */
	CHECK_INT(a->slices, 2);       /* two MIGs, one restart unit */
	CHECK_INT(a->queued, 0);       /* no queued resource on Compute Engine */
	CHECK_INT(b->slices, 0);
	CHECK(a->accelerator_type == NULL && a->runtime_version == NULL);
	CHECK_STR(a->compute.image, "projects/ubuntu-os-accelerator-images/global/images/family/"
				    "ubuntu-accel-2404-amd64-tpu-tpu7x");
	CHECK_INT(a->compute.disk_size_gb, 200);
	CHECK_STR(a->compute.disk_type, "hyperdisk-balanced");
	CHECK(a->compute.termination_action == NULL && !a->spot);
	CHECK_STR(b->node.topology, "2x2"); /* the machine type's own */
	CHECK_INT(b->workers, 1);
	CHECK_INT(b->spot, 1);
	CHECK_STR(b->compute.termination_action, "STOP");
	CHECK_INT(b->compute.max_run_duration, 7200);
	CHECK_STR(b->compute.image,
		  "projects/ubuntu-os-accelerator-images/global/images/family/my-family");
	CHECK_INT(b->compute.disk_size_gb, 500);
	CHECK_STR(b->compute.disk_type, "pd-balanced");
	CHECK_INT(b->nzones, 2);
	CHECK_INT(c->compute.flex_start, 1);
	CHECK_INT(c->compute.max_run_duration, 86400);
	CHECK_INT(c->compute.flex_wait, 21600);
	CHECK_INT(c->workers, 16);
	CHECK_STR(c->compute.image, "projects/x/global/images/img-1");
	CHECK_STR(f.groups[3].node.reservation, "r1");
	CHECK_INT(f.groups[4].compute.api, TPF_API_TPU);
	CHECK_STR(f.groups[4].accelerator_type, "v6e-4");
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

static void test_compute__api_choice(void)
{
	/* Fleet-wide compute, one group back on the Cloud TPU API. */
	const char *text = "fleet: f\nprovider: { gcp: { project: p, api: compute } }\nrun: t\n"
			   "groups:\n"
			   "  - { name: a, machine_type: ct6e-standard-4t, zones: [z], count: 1 }\n"
			   "  - { name: b, api: tpu, accelerator_type: v6e-4, runtime_version: r,"
			   " zones: [z], count: 1 }\n";
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	int rc = parse(&f, text, &d);
	CHECKF(rc == 0, "parses: %s", d.n ? d.items[0].summary : "");
	if (rc == 0) {
		CHECK_INT(f.gcp.api, TPF_API_COMPUTE);
		CHECK_INT(f.groups[0].compute.api, TPF_API_COMPUTE);
		CHECK_INT(f.groups[1].compute.api, TPF_API_TPU);
		tpf_fleet_release(&f);
	}
	tpf_diags_release(&d);
	/* The fleet says compute: a group with accelerator_type is told how. */
	expect_error("fleet: f\nprovider: { gcp: { project: p, api: compute } }\nrun: t\n"
		     "groups:\n"
		     "  - { name: a, accelerator_type: v6e-4, runtime_version: r, zones: [z],"
		     " count: 1 }\n",
		     "fleet.yaml:5:", "'accelerator_type' in group 'a' is a Cloud TPU API key");
	expect_error("fleet: f\nprovider: { gcp: { project: p, api: computer } }\nrun: t\n"
		     "groups: [{ name: a, machine_type: ct6e-standard-4t, zones: [z], count: 1 }]\n",
		     "fleet.yaml:2:", "'api'");
}

static void test_compute__errors(void)
{
	static const struct {
		const char *group, *pos, *want;
	} cases[] = {
		{ "{ name: a, api: tpu, machine_type: tpu7x-standard-4t, accelerator_type: v6e-4,"
		  " runtime_version: r, zones: [z], count: 1 }",
		  "fleet.yaml:5:", "machine type 'tpu7x-standard-4t' needs api: compute" },
		{ "{ name: a, machine_type: ct6e-standard-16t, zones: [z], count: 1 }",
		  "fleet.yaml:5:", "'machine_type' must be a TPU machine type" },
		{ "{ name: a, machine_type: ct6e-standard-4t, topology: 2x4, zones: [z], count: 1 }",
		  "fleet.yaml:5:", "'topology' for ct6e-standard-4t must be" },
		{ "{ name: a, machine_type: ct6e-standard-4t, termination_action: STOP, zones: [z],"
		  " count: 1 }",
		  "fleet.yaml:5:", "applies to spot VMs only" },
		{ "{ name: a, machine_type: ct6e-standard-4t, spot: true, termination_action: KEEP,"
		  " zones: [z], count: 1 }",
		  "fleet.yaml:5:", "termination_action" },
		{ "{ name: a, machine_type: ct6e-standard-4t, flex_start: { wait: 1h }, zones: [z],"
		  " count: 1 }",
		  "fleet.yaml:5:", "max_run_duration" },
		{ "{ name: a, machine_type: ct6e-standard-4t, flex_start: { max_run_duration: 200h },"
		  " zones: [z], count: 1 }",
		  "fleet.yaml:5:", "'max_run_duration' must be from 600s to 604800s" },
		{ "{ name: a, machine_type: ct6e-standard-4t, spot: true, flex_start:"
		  " { max_run_duration: 1h }, zones: [z], count: 1 }",
		  "fleet.yaml:5:", "sets both 'spot' and 'flex_start'" },
		{ "{ name: a, machine_type: ct6e-standard-4t, preemptible: true, zones: [z], count: 1 }",
		  "fleet.yaml:5:", "'preemptible' in group 'a' is a Cloud TPU API key" },
		{ "{ name: a, machine_type: ct6e-standard-4t, queued: true, zones: [z], count: 1 }",
		  "fleet.yaml:5:", "'queued' in group 'a' is a Cloud TPU API key" },
		{ "{ name: a, machine_type: ct6e-standard-4t, slices: 2, flex_start:"
		  " { max_run_duration: 1h }, zones: [z], count: 1 }",
		  "fleet.yaml:5:", "multislice is not offered with flex_start yet" },
		{ "{ name: a, machine_type: ct6e-standard-4t, slices: 0, zones: [z], count: 1 }",
		  "fleet.yaml:5:", "slices" },
		{ "{ name: a, machine_type: ct6e-standard-4t, image: 'Bad Image', zones: [z],"
		  " count: 1 }",
		  "fleet.yaml:5:", "'image' must be an image family" },
		{ "{ name: a, machine_type: ct6e-standard-4t, boot_disk: { size_gb: 5 }, zones: [z],"
		  " count: 1 }",
		  "fleet.yaml:5:", "size_gb" },
		{ "{ name: a, accelerator_type: v6e-4, runtime_version: r, image: x, zones: [z],"
		  " count: 1 }",
		  "fleet.yaml:5:", "'image' in group 'a' applies to Compute Engine groups only" },
		{ "{ name: a, machine_type: ct6e-standard-4t, zones: [z] }",
		  "fleet.yaml:5:", "count" },
		{ "{ name: a-group-name-that-is-long-enough-to-pass-the-limit-x, machine_type: "
		  "tpu7x-standard-4t, topology: 2x2x2, zones: [z], count: 1 }",
		  "fleet.yaml:5:", "more than the 52 a Compute Engine slice allows" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = NULL;
		if (asprintf(&text, HEAD "groups:\n  - %s\n", cases[i].group) < 0)
			return;
		expect_error(text, cases[i].pos, cases[i].want);
		free(text);
	}
	/* The local provider simulates the Cloud TPU API only. */
	expect_error("fleet: f\nprovider: { local: {} }\nrun: t\n"
		     "groups: [{ name: a, machine_type: ct6e-standard-4t, zones: [z], count: 1 }]\n",
		     "fleet.yaml:4:", "local provider simulates Cloud TPU API nodes only");
}

static void test_compute__recipe_json(void)
{
	struct tpf_recipe r = { 0 }, back = { 0 };
	struct tpf_diags d = TPF_DIAGS_INIT;
	r.zone = strdup("us-central1-c");
	r.workers = 2;
	r.spot = 1;
	r.compute.api = TPF_API_COMPUTE;
	r.compute.machine_type = strdup("tpu7x-standard-4t");
	r.compute.image = strdup("projects/ubuntu-os-accelerator-images/global/images/family/x");
	r.compute.termination_action = strdup("STOP");
	r.compute.max_run_duration = 3600;
	r.compute.disk_size_gb = 300;
	r.compute.disk_type = strdup("hyperdisk-balanced");
	json_t *j = tpf_recipe_to_json(&r);
	CHECK_STR(json_string_value(json_object_get(j, "api")), "compute");
	CHECK(json_object_get(j, "accelerator_type") == NULL);
	CHECK_INT(tpf_recipe_from_json(&back, j, "node x", &d), 0);
	CHECK_INT(back.compute.api, TPF_API_COMPUTE);
	CHECK_STR(back.compute.machine_type, "tpu7x-standard-4t");
	CHECK_STR(back.compute.image, r.compute.image);
	CHECK_STR(back.compute.termination_action, "STOP");
	CHECK_INT(back.compute.max_run_duration, 3600);
	CHECK_INT(back.compute.disk_size_gb, 300);
	CHECK_STR(back.compute.disk_type, "hyperdisk-balanced");
	CHECK_STR(tpf_recipe_scheduling(&back), "spot");
	struct tpf_recipe copy = { 0 };
	tpf_recipe_copy(&copy, &back);
	CHECK_STR(copy.compute.machine_type, "tpu7x-standard-4t");
	tpf_recipe_release(&copy);
	json_decref(j);
	/* A Cloud TPU API recipe writes no compute key: old states stay as they were. */
	struct tpf_recipe t = { 0 };
	t.accelerator_type = strdup("v4-8");
	j = tpf_recipe_to_json(&t);
	CHECK(json_object_get(j, "api") == NULL && json_object_get(j, "machine_type") == NULL);
	json_decref(j);
	/* Bad input is an error naming the field, never a crash. */
	j = json_pack("{s:s, s:i}", "api", "compute", "max_run_duration", -5);
	struct tpf_recipe bad = { 0 };
	CHECK(tpf_recipe_from_json(&bad, j, "node y", &d) != 0);
	CHECK(d.n > 0 && strstr(d.items[d.n - 1].summary, "max_run_duration"));
	json_decref(j);
	j = json_pack("{s:s}", "api", "gke");
	CHECK(tpf_recipe_from_json(&bad, j, "node y", &d) != 0);
	json_decref(j);
	tpf_recipe_release(&bad);
	tpf_recipe_release(&t);
	tpf_recipe_release(&r);
	tpf_recipe_release(&back);
	tpf_diags_release(&d);
	/* flex-start is its own scheduling word */
	struct tpf_recipe fl = { 0 };
	fl.compute.api = TPF_API_COMPUTE;
	fl.compute.flex_start = 1;
	CHECK_STR(tpf_recipe_scheduling(&fl), "flex-start");
}

int main(void)
{
	RUN(test_compute__machine_types);
	RUN(test_compute__group_keys);
	RUN(test_compute__api_choice);
	RUN(test_compute__errors);
	RUN(test_compute__recipe_json);
	return unit_done();
}
