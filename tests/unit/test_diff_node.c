/*
 * The node fields in the diff (plan/diff_node.c): a change nodes.patch
 * supports (tags, metadata, enable_external_ips) is an in-place update
 * with its TPF_PATCH_* bit; any other (network, service_account,
 * data_disks, shielded_instance, topology, reserved, reservation) forces
 * replacement and the change line says so; tpuform's own ssh-keys line
 * and the API's defaults are no drift.
 */
#include "plan/plan.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLEET                                                                                \
	"fleet: f\nprovider: { local: { root: /nonexistent } }\nrun: train\n"                   \
	"groups:\n  - name: a\n    accelerator_type: v4\n    topology: 2x2x1\n"             \
	"    runtime_version: rt\n    zones: [z1]\n    count: 1\n"                           \
	"    tags: [a]\n    metadata: { startup-script: go }\n    network: default\n"         \
	"    service_account: { email: sa@p.iam.gserviceaccount.com }\n"                     \
	"    enable_external_ips: true\n"                                                   \
	"    data_disks: [{ source_disk: projects/p/zones/z1/disks/d }]\n"                   \
	"    shielded_instance: { secure_boot: true }\n"

struct result {
	int kind;         /* -1: no action */
	unsigned patch;
	char lines[512]; /* "field!" (forces) or "field" per change, comma-joined */
};

/* mutate(live recipe) describes what the live node has that differs. */
static void plan_one(void (*mutate)(struct tpf_recipe *live, struct tpf_recipe *recorded),
		     struct result *res)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_fleet_parse(&f, "fleet.yaml", FLEET, strlen(FLEET), &d) == 0);
	struct tpf_state st;
	tpf_state_init(&st);
	struct tpf_desired_set ds = { 0 };
	CHECK(tpf_desired_compute(&ds, &f, NULL, &st, &d) == 0);
	const struct tpf_desired_node *dn = &ds.nodes[0];
	struct tpf_state_node *sn = tpf_state_add(&st, dn->name);
	sn->status = TPF_NODE_CREATED;
	xstrset(&sn->id, "1");
	tpf_recipe_copy(&sn->recipe, &dn->recipe);
	tpf_job_copy(&sn->job, &dn->job);
	tpf_state_node_set_workers(sn, (size_t)dn->recipe.workers);
	struct tpf_live_set live = { 0 };
	struct tpf_live_node *ln = tpf_live_set_add(&live);
	ln->name = xstrdup(dn->name);
	ln->id = xstrdup("1");
	ln->state = xstrdup("READY");
	tpf_recipe_copy(&ln->recipe, &dn->recipe);
	/* What the API adds on its own: full network path, tpuform's key. */
	xstrset(&ln->recipe.node.network, "projects/p/global/networks/default");
	tpf_kvlist_set(&ln->recipe.node.metadata, "ssh-keys", "root:ssh-ed25519 AAAA root");
	mutate(&ln->recipe, &sn->recipe);
	struct tpf_diff_input in = { .fleet = &f, .desired = &ds, .state = &st, .live = &live };
	struct tpf_plan p;
	CHECK_INT(tpf_diff(&p, &in, &d), 0);
	memset(res, 0, sizeof(*res));
	res->kind = -1;
	for (size_t i = 0; i < p.n; i++) {
		const struct tpf_action *a = &p.actions[i];
		if (a->kind != TPF_ACT_REPLACE && a->kind != TPF_ACT_UPDATE)
			continue;
		if (a->kind == TPF_ACT_UPDATE && !a->patch && !a->update_labels)
			continue; /* provisioning only: the workers have no script hash here */
		res->kind = (int)a->kind;
		res->patch = a->patch;
		for (size_t k = 0; k < a->nchanges; k++) {
			const struct tpf_change *c = &a->changes[k];
			if (!strcmp(c->field, "state") || !strcmp(c->field, "id"))
				continue;
			size_t n = strlen(res->lines);
			snprintf(res->lines + n, sizeof(res->lines) - n, "%s%s%s", n ? "," : "",
				 c->field, c->forces ? "!" : "");
		}
	}
	tpf_plan_release(&p);
	tpf_live_set_release(&live);
	tpf_desired_release(&ds);
	tpf_state_release(&st);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

static void same(struct tpf_recipe *l, struct tpf_recipe *s) { (void)l; (void)s; }
static void tags(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)s;
	xstrset(&l->node.tags[0], "old");
}
static void metadata(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)s;
	tpf_kvlist_set(&l->node.metadata, "startup-script", "old");
}
static void extra_metadata(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)s;
	tpf_kvlist_set(&l->node.metadata, "added-by-hand", "x");
}
static void external(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)s;
	l->node.enable_external_ips = TPF_TRI_FALSE;
}
static void tags_and_external(struct tpf_recipe *l, struct tpf_recipe *s)
{
	tags(l, s);
	external(l, s);
}
static void network(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)s;
	xstrset(&l->node.network, "projects/p/global/networks/other");
}
static void sa(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)s;
	xstrset(&l->node.sa_email, "other@p.iam.gserviceaccount.com");
}
static void disks(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)s;
	xstrset(&l->node.disks[0].mode, "READ_ONLY");
}
static void secure_boot(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)s;
	l->node.secure_boot = TPF_TRI_FALSE;
}
static void topology(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)s;
	xstrset(&l->node.topology, "2x2x2");
}
static void reserved_recorded(struct tpf_recipe *l, struct tpf_recipe *s)
{
	(void)l;
	s->node.reserved = 1; /* the state says it was asked for under a reservation */
}
static void tags_and_network(struct tpf_recipe *l, struct tpf_recipe *s)
{
	tags(l, s);
	network(l, s);
}

static void test_diff_node__patch_or_replace(void)
{
	static const struct {
		const char *title;
		void (*mutate)(struct tpf_recipe *, struct tpf_recipe *);
		int kind;
		unsigned patch;
		const char *lines;
	} cases[] = {
		{ "as declared (API defaults, tpuform's ssh-keys)", same, -1, 0, "" },
		{ "tags: patch", tags, TPF_ACT_UPDATE, TPF_PATCH_TAGS, "tags" },
		{ "metadata: patch", metadata, TPF_ACT_UPDATE, TPF_PATCH_METADATA, "metadata" },
		{ "a metadata key added outside: patch", extra_metadata, TPF_ACT_UPDATE,
		  TPF_PATCH_METADATA, "metadata" },
		{ "enable_external_ips: patch", external, TPF_ACT_UPDATE, TPF_PATCH_EXTERNAL_IPS,
		  "enable_external_ips" },
		{ "two patchable fields: one patch", tags_and_external, TPF_ACT_UPDATE,
		  TPF_PATCH_TAGS | TPF_PATCH_EXTERNAL_IPS, "enable_external_ips,tags" },
		{ "network: replace", network, TPF_ACT_REPLACE, 0, "network!" },
		{ "service_account: replace", sa, TPF_ACT_REPLACE, 0, "service_account!" },
		{ "data_disks: replace", disks, TPF_ACT_REPLACE, 0, "data_disks!" },
		{ "shielded_instance: replace", secure_boot, TPF_ACT_REPLACE, 0, "shielded_instance!" },
		{ "topology: replace", topology, TPF_ACT_REPLACE, 0, "topology!" },
		{ "reserved (from the state's record): replace", reserved_recorded, TPF_ACT_REPLACE,
		  0, "reserved!" },
		{ "tags and network: the replace wins", tags_and_network, TPF_ACT_REPLACE, 0,
		  "network!" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct result r;
		plan_one(cases[i].mutate, &r);
		CHECKF(r.kind == cases[i].kind, "%s: kind %d, want %d", cases[i].title, r.kind,
		       cases[i].kind);
		CHECKF(r.patch == cases[i].patch, "%s: patch %u, want %u", cases[i].title, r.patch,
		       cases[i].patch);
		CHECKF(!strcmp(r.lines, cases[i].lines), "%s: lines '%s', want '%s'", cases[i].title,
		       r.lines, cases[i].lines);
	}
}

static void test_diff_node__mask(void)
{
	char *m = tpf_patch_mask(TPF_PATCH_METADATA | TPF_PATCH_EXTERNAL_IPS | TPF_PATCH_LABELS);
	CHECK_STR(m, "labels,metadata,network_config.enable_external_ips");
	free(m);
	CHECK(tpf_patch_mask(0) == NULL);
}

int main(void)
{
	RUN(test_diff_node__patch_or_replace);
	RUN(test_diff_node__mask);
	return unit_done();
}
