/*
 * What a state owns (plan/ownership.h): the lineage label decides, a node
 * of an earlier tpuform is this state's only when the state lists it, and
 * the filter keeps another state's nodes out of every plan. Also the
 * label's value (model/recipe.h tpf_lineage_label) and the desired nodes
 * carrying it (plan/desired.c).
 */
#include "plan/ownership.h"
#include "plan/plan.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define MINE "0f1e2d3c-4b5a-4697-8877-665544332211"
#define THEIRS "aaaabbbb-cccc-4ddd-8eee-ffff00001111"

static void test_lineage_label__first_sixteen_hex_digits(void)
{
	char out[TPF_LINEAGE_LABEL_LEN + 1];
	CHECK_STR(tpf_lineage_label(MINE, out), "0f1e2d3c4b5a4697");
	CHECK_STR(tpf_lineage_label("0F1E2D3C-4B5A-4697-8877-665544332211", out),
		  "0f1e2d3c4b5a4697");
	CHECK(tpf_lineage_label(NULL, out) == NULL);
	CHECK_STR(out, "");
	CHECK(tpf_lineage_label("0f1e2d3c-4b5a", out) == NULL); /* 12 digits only */
	CHECK(tpf_lineage_label("0f1e2d3c-zz5a-4697-8877-665544332211", out) == NULL);
}

static void live_node(struct tpf_live_set *live, const char *name, const char *lineage)
{
	struct tpf_live_node *ln = tpf_live_set_add(live);
	ln->name = xstrdup(name);
	ln->id = xstrdup("1");
	ln->state = xstrdup("READY");
	ln->recipe.zone = xstrdup("z1");
	tpf_kvlist_set(&ln->recipe.labels, TPF_LABEL_FLEET, "dup");
	char lin[TPF_LINEAGE_LABEL_LEN + 1];
	if (tpf_lineage_label(lineage, lin))
		tpf_kvlist_set(&ln->recipe.labels, TPF_LABEL_LINEAGE, lin);
}

static void test_owner__by_lineage_then_by_listing(void)
{
	struct tpf_state st;
	tpf_state_init(&st);
	xstrset(&st.lineage, MINE);
	tpf_state_add(&st, "dup-a-1");
	struct tpf_live_set live = { 0 };
	live_node(&live, "dup-a-0", MINE);    /* ours, not listed: a crash's leftover */
	live_node(&live, "dup-a-1", NULL);    /* an earlier tpuform's, listed */
	live_node(&live, "dup-a-2", THEIRS);  /* another state's */
	live_node(&live, "dup-a-3", NULL);    /* an earlier tpuform's, not listed */
	tpf_state_add(&st, "dup-a-2");        /* listing does not beat the label */
	CHECK_INT(tpf_owner_of(&live.nodes[0], &st), TPF_OWNER_THIS);
	CHECK_INT(tpf_owner_of(&live.nodes[1], &st), TPF_OWNER_LEGACY);
	CHECK_INT(tpf_owner_of(&live.nodes[2], &st), TPF_OWNER_OTHER);
	CHECK_INT(tpf_owner_of(&live.nodes[3], &st), TPF_OWNER_UNKNOWN);
	/* A state with no lineage owns no labelled node, not even one that
	 * carries a label equal to nothing. */
	free(st.lineage);
	st.lineage = NULL;
	CHECK_INT(tpf_owner_of(&live.nodes[0], &st), TPF_OWNER_OTHER);
	tpf_live_set_release(&live);
	tpf_state_release(&st);
}

static void test_ownership_filter__drops_and_names_foreign_nodes(void)
{
	struct tpf_state st;
	tpf_state_init(&st);
	xstrset(&st.lineage, MINE);
	tpf_state_add(&st, "dup-a-1");
	struct tpf_live_set live = { 0 };
	live_node(&live, "dup-a-0", THEIRS);
	live_node(&live, "dup-a-1", NULL);
	live_node(&live, "dup-a-2", MINE);
	live_node(&live, "dup-a-3", NULL);
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_ownership_filter(&live, &st, &d), TPF_EFOREIGN);
	CHECK_INT(live.n, 2);
	CHECK_STR(live.n > 0 ? live.nodes[0].name : NULL, "dup-a-1");
	CHECK_STR(live.n > 1 ? live.nodes[1].name : NULL, "dup-a-2");
	CHECK_INT(d.n, 2);
	if (d.n == 2) {
		CHECK_STR(d.items[0].address, "dup-a-0");
		CHECKF(strstr(d.items[0].summary, "belongs to another state") &&
			       strstr(d.items[0].summary, "tpuform-lineage=aaaabbbbcccc4ddd") &&
			       strstr(d.items[0].summary, MINE),
		       "%s", d.items[0].summary);
		CHECKF(d.items[0].detail && strstr(d.items[0].detail, "Rename 'fleet'"), "%s",
		       d.items[0].detail);
		CHECK_STR(d.items[1].address, "dup-a-3");
		CHECKF(strstr(d.items[1].summary, "no tpuform-lineage label"), "%s",
		       d.items[1].summary);
		CHECKF(d.items[1].detail && strstr(d.items[1].detail,
						    "tpuform import dup-a-3 z1/dup-a-3"),
		       "%s", d.items[1].detail);
	}
	tpf_diags_release(&d);
	/* Everything owned: nothing dropped, no diagnostic. */
	struct tpf_diags d2 = TPF_DIAGS_INIT;
	CHECK_INT(tpf_ownership_filter(&live, &st, &d2), 0);
	CHECK_INT(live.n, 2);
	CHECK_INT(d2.n, 0);
	tpf_diags_release(&d2);
	tpf_live_set_release(&live);
	tpf_state_release(&st);
}

static const char *const FLEET = "fleet: dup\n"
				 "provider:\n  local: { root: /nonexistent }\n"
				 "run: train\n"
				 "groups:\n"
				 "  - { name: a, accelerator_type: v2-8, runtime_version: rt, "
				 "zones: [z1], count: 1 }\n";

static void test_desired__carries_the_state_lineage(void)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_fleet_parse(&f, "fleet.yaml", FLEET, strlen(FLEET), &d), 0);
	struct tpf_state st;
	tpf_state_init(&st);
	xstrset(&st.lineage, MINE);
	struct tpf_desired_set ds = { 0 };
	CHECK_INT(tpf_desired_compute(&ds, &f, NULL, &st, &d), 0);
	CHECK_INT(ds.n, 1);
	if (ds.n)
		CHECK_STR(tpf_kvlist_get(&ds.nodes[0].recipe.labels, TPF_LABEL_LINEAGE),
			  "0f1e2d3c4b5a4697");
	tpf_desired_release(&ds);
	tpf_state_release(&st);
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
}

int main(void)
{
	RUN(test_lineage_label__first_sixteen_hex_digits);
	RUN(test_owner__by_lineage_then_by_listing);
	RUN(test_ownership_filter__drops_and_names_foreign_nodes);
	RUN(test_desired__carries_the_state_lineage);
	return unit_done();
}
