/*
 * The node fields of the fleet file (config/config_node.c): fleet-wide
 * defaults under group values, topology's worker count from Google's
 * tables, and errors with FILE:LINE:COL.
 */
#include "tests/unit/unit.h"
#include "config/config.h"
#include "model/recipe.h"

#include <stdio.h>
#include <string.h>

#define HEAD "fleet: f\nprovider: { local: {} }\nrun: train\n"

static int parse(struct tpf_fleet *f, const char *text, struct tpf_diags *d)
{
	return tpf_fleet_parse(f, "fleet.yaml", text, strlen(text), d);
}

static void test_node__defaults_and_overrides(void)
{
	const char *text = HEAD
		"network: net-a\n"
		"tags: [a, b]\n"
		"metadata: { startup-script: 'echo hi', role: base }\n"
		"service_account: { email: sa@p.iam.gserviceaccount.com }\n"
		"groups:\n"
		"  - { name: g, accelerator_type: v2-8, runtime_version: r, zones: [z], count: 1 }\n"
		"  - name: h\n"
		"    accelerator_type: v2-8\n"
		"    runtime_version: r\n"
		"    zones: [z]\n"
		"    count: 1\n"
		"    network: net-b\n"
		"    tags: [c]\n"
		"    metadata: { role: special }\n"
		"    enable_external_ips: false\n"
		"    data_disks: [{ source_disk: projects/p/zones/z/disks/d, mode: read-only }]\n"
		"    shielded_instance: { secure_boot: true }\n"
		"    reserved: true\n";
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	int rc = parse(&f, text, &d);
	CHECKF(rc == 0, "parses: %s", d.n ? d.items[0].summary : "");
	if (rc)
		return;
	const struct tpf_node_fields *g = &f.groups[0].node, *h = &f.groups[1].node;
	CHECK_STR(g->network, "net-a");
	CHECK_INT(g->ntags, 2);
	CHECK_STR(tpf_kvlist_get(&g->metadata, "role"), "base");
	CHECK_STR(g->sa_email, "sa@p.iam.gserviceaccount.com");
	CHECK_INT(g->enable_external_ips, TPF_TRI_UNSET);
	CHECK_INT(g->reserved, 0);
	CHECK_STR(h->network, "net-b");
	CHECK_INT(h->ntags, 1);
	CHECK_STR(h->ntags ? h->tags[0] : NULL, "c");
	/* metadata merges key by key: the fleet's startup-script stays */
	CHECK_STR(tpf_kvlist_get(&h->metadata, "role"), "special");
	CHECK_STR(tpf_kvlist_get(&h->metadata, "startup-script"), "echo hi");
	CHECK_STR(h->sa_email, "sa@p.iam.gserviceaccount.com");
	CHECK_INT(h->enable_external_ips, TPF_TRI_FALSE);
	CHECK_INT(h->ndisks, 1);
	CHECK_STR(h->ndisks ? h->disks[0].mode : NULL, "READ_ONLY");
	CHECK_INT(h->secure_boot, TPF_TRI_TRUE);
	CHECK_INT(h->reserved, 1);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

static void test_node__topology_workers(void)
{
	static const struct {
		const char *type, *topo, *as;
		int workers;
	} ok[] = {
		{ "v4", "2x2x1", "v4-8", 1 },      { "v4", "2x2x2", "v4-16", 2 },
		{ "v4", "2x2x4", "v4-32", 4 },     { "v4", "4x4x4", "v4-128", 16 },
		{ "v5litepod", "2x4", "v5litepod-8", 1 }, { "v5litepod", "4x4", "v5litepod-16", 4 },
		{ "v6e", "16x16", "v6e-256", 64 }, { "v2", "4x4", "v2-32", 4 },
		{ "v5p", "2x2x2", "v5p-16", 2 },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char text[512];
		snprintf(text, sizeof(text),
			 HEAD "groups:\n  - { name: g, accelerator_type: %s, topology: %s, "
			      "runtime_version: r, zones: [z], count: 1 }\n",
			 ok[i].type, ok[i].topo);
		struct tpf_fleet f;
		struct tpf_diags d = TPF_DIAGS_INIT;
		int rc = parse(&f, text, &d);
		CHECKF(rc == 0, "case %zu: %s", i, d.n ? d.items[0].summary : "");
		if (rc == 0) {
			CHECK_STR(f.groups[0].accelerator_type, ok[i].as);
			CHECK_INT(f.groups[0].workers, ok[i].workers);
			CHECK_STR(f.groups[0].node.topology, ok[i].topo);
		}
		tpf_fleet_release(&f);
		tpf_diags_release(&d);
	}
}

static void test_node__refused(void)
{
	static const struct {
		const char *yaml;
		const char *first; /* exact summary */
	} bad[] = {
		{ "tags: [Bad_Tag]\n",
		  "fleet.yaml:4:8: each entry of 'tags' must be a network tag (lowercase letters, "
		  "digits and '-'), got 'Bad_Tag'" },
		{ "service_account: { email: nobody }\n",
		  "fleet.yaml:4:27: 'email' must be a service account email, got 'nobody'" },
		{ "service_account: { scopes: [cloud-platform] }\n",
		  "fleet.yaml:4:29: each entry of 'scopes' must be an OAuth scope URL such as "
		  "'https://www.googleapis.com/auth/cloud-platform', got 'cloud-platform'" },
		{ "service_acount: {}\n",
		  "fleet.yaml:4:1: unknown key 'service_acount' at top level; did you mean "
		  "'service_account'?" },
		{ "data_disks: [{ source_disk: my-disk }]\n",
		  "fleet.yaml:4:29: 'source_disk' must be projects/P/zones/Z/disks/NAME, got "
		  "'my-disk'" },
		{ "data_disks: [{ source_disk: projects/p/zones/z/disks/d, mode: rw }]\n",
		  "fleet.yaml:4:63: 'mode' must be read-write or read-only, got 'rw'" },
		{ "metadata: { 'bad key': x }\n",
		  "fleet.yaml:4:13: metadata key 'bad key' is not a valid key" },
		{ "shielded_instance: { secure_boot: yes }\n",
		  "fleet.yaml:4:35: 'secure_boot' must be true or false, got 'yes'" },
		{ "reservation: r1\n",
		  "fleet.yaml:6:5: 'reservation' in group 'g' applies to queued resources only" },
		{ "topology: 2x2x2\n", "fleet.yaml:4:11: 'topology' belongs in a group, not at top level" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[1024];
		snprintf(text, sizeof(text),
			 HEAD "%sgroups:\n  - { name: g, accelerator_type: v2-8, runtime_version: r, "
			      "zones: [z], count: 1 }\n",
			 bad[i].yaml);
		struct tpf_fleet f;
		struct tpf_diags d = TPF_DIAGS_INIT;
		CHECKF(parse(&f, text, &d) == TPF_ERROR, "case %zu fails", i);
		CHECK_STR(d.n ? d.items[0].summary : NULL, bad[i].first);
		tpf_fleet_release(&f);
		tpf_diags_release(&d);
	}
}

static void test_node__refused_in_group(void)
{
	static const struct {
		const char *keys;
		const char *first;
	} bad[] = {
		{ "accelerator_type: v4, topology: 2x3x1",
		  "fleet.yaml:5:48: 'topology' must be a v4 topology AxBxC with A <= B <= C, such as "
		  "2x2x1 (v4-8) or 2x2x2 (v4-16), got '2x3x1'" },
		{ "accelerator_type: v4-16, topology: 2x2x2",
		  "fleet.yaml:5:34: 'accelerator_type' must be one of v2, v3, v4, v5p, v5litepod or "
		  "v6e when 'topology' is set, got 'v4-16'" },
		{ "accelerator_type: v2-8, spot: true, reserved: true",
		  "fleet.yaml:5:46: group 'g' asks for reserved capacity and for spot nodes" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[1024];
		snprintf(text, sizeof(text),
			 HEAD "groups:\n  - { name: g, %s, runtime_version: r, zones: [z], count: 1 }\n",
			 bad[i].keys);
		struct tpf_fleet f;
		struct tpf_diags d = TPF_DIAGS_INIT;
		CHECKF(parse(&f, text, &d) == TPF_ERROR, "case %zu fails", i);
		CHECK_STR(d.n ? d.items[0].summary : NULL, bad[i].first);
		tpf_fleet_release(&f);
		tpf_diags_release(&d);
	}
}

/* A recipe with no node field writes exactly what it wrote before. */
static void test_node__json_omits_unset(void)
{
	struct tpf_recipe r = { 0 };
	json_t *j = tpf_recipe_to_json(&r);
	CHECK(!json_object_get(j, "network") && !json_object_get(j, "reserved") &&
	      !json_object_get(j, "metadata") && !json_object_get(j, "enable_external_ips"));
	CHECK_INT(json_object_size(j), 4); /* preemptible, spot, workers, labels */
	json_decref(j);
	r.node.ntags = 1;
	char *tag = "x";
	r.node.tags = &tag;
	r.node.secure_boot = TPF_TRI_FALSE;
	j = tpf_recipe_to_json(&r);
	struct tpf_recipe back = { 0 };
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_recipe_from_json(&back, j, "test", &d) == 0);
	CHECK_INT(back.node.ntags, 1);
	CHECK_INT(back.node.secure_boot, TPF_TRI_FALSE);
	CHECK_INT(back.node.can_ip_forward, TPF_TRI_UNSET);
	tpf_recipe_release(&back);
	json_decref(j);
	tpf_diags_release(&d);
}

int main(void)
{
	RUN(test_node__defaults_and_overrides);
	RUN(test_node__topology_workers);
	RUN(test_node__refused);
	RUN(test_node__refused_in_group);
	RUN(test_node__json_omits_unset);
	return unit_done();
}
