/*
 * Queued resources without the network: the create body, QueuedResource
 * JSON -> tpuform, merging queued resources into a zone's live nodes, the
 * duration conversion, and the recipe's queued fields in JSON (state and
 * saved plans). Shapes follow docs/cloud-tpu-api.md section 5.
 */
#include "model/node_state.h"
#include "model/recipe.h"
#include "providers/gcp/tpu/gcp_node.h"
#include "providers/gcp/tpu/gcp_qr.h"
#include "providers/provider.h"
#include "state/state.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static void test_gcp_queued__duration(void)
{
	static const char *const cases[][2] = {
		{ "6h", "21600s" },  { "90m", "5400s" },  { "1h30m", "5400s" }, { "45", "45s" },
		{ "1.5s", "1.5s" },  { "250ms", "0.25s" }, { "0s", "0s" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = tpf_gcp_duration(cases[i][0]);
		CHECK_STR(got, cases[i][1]);
		free(got);
	}
	CHECK(tpf_gcp_duration("six hours") == NULL);
	CHECK(tpf_gcp_duration("") == NULL);
	CHECK(tpf_gcp_duration(NULL) == NULL);
}

static void recipe_fill(struct tpf_recipe *r)
{
	r->accelerator_type = xstrdup("v4-8");
	r->runtime_version = xstrdup("tpu-ubuntu2204-base");
	r->zone = xstrdup("us-central2-b");
	r->workers = 1;
	r->queued = 1;
	tpf_kvlist_set(&r->labels, TPF_LABEL_FLEET, "f");
	tpf_kvlist_set(&r->labels, TPF_LABEL_GROUP, "g");
	tpf_kvlist_set(&r->labels, TPF_LABEL_INDEX, "0");
}

static void test_gcp_queued__create_body(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_recipe r = { 0 };
	recipe_fill(&r);
	r.spot = 1;
	r.valid_until = xstrdup("6h");
	/* the reference's illustrative request, plus tpuform's labels */
	json_t *b = tpf_gcp_qr_body("p", "f-g-0", &r, 0, NULL, &d);
	char *s = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
	CHECK_STR(s, "{\"queueingPolicy\":{\"validUntilDuration\":\"21600s\"},\"spot\":{},"
		     "\"tpu\":{\"nodeSpec\":[{\"node\":{\"acceleratorType\":\"v4-8\",\"labels\":"
		     "{\"tpuform-fleet\":\"f\",\"tpuform-group\":\"g\",\"tpuform-index\":\"0\"},"
		     "\"runtimeVersion\":\"tpu-ubuntu2204-base\"},\"nodeId\":\"f-g-0\","
		     "\"parent\":\"projects/p/locations/us-central2-b\"}]}}");
	free(s);
	json_decref(b);

	/* preemptible: no tier, the node spec says it; no valid_until: no policy */
	r.spot = 0;
	r.preemptible = 1;
	xstrset(&r.valid_until, NULL);
	json_t *md = json_pack("{s:s}", "ssh-keys", "u:ssh-ed25519 AAAA u");
	b = tpf_gcp_qr_body("p", "f-g-0", &r, 1, md, &d);
	json_decref(md);
	json_t *node = json_object_get(json_array_get(json_object_get(json_object_get(b, "tpu"),
								      "nodeSpec"), 0), "node");
	CHECK(json_is_true(json_object_get(json_object_get(node, "schedulingConfig"), "preemptible")));
	CHECK(json_is_true(json_object_get(json_object_get(node, "networkConfig"), "enableExternalIps")));
	/* the node in the spec carries the metadata (the SSH key) */
	CHECK_STR(json_string_value(json_object_get(json_object_get(node, "metadata"), "ssh-keys")),
		  "u:ssh-ed25519 AAAA u");
	CHECK(!json_object_get(b, "spot"));
	CHECK(!json_object_get(b, "guaranteed"));
	CHECK(!json_object_get(b, "queueingPolicy"));
	json_decref(b);
	CHECK_INT(d.n, 0);

	/* a valid_until that is not a duration: refused, naming it */
	xstrset(&r.valid_until, "soon");
	CHECK(tpf_gcp_qr_body("p", "f-g-0", &r, 0, NULL, &d) == NULL);
	CHECK_INT(tpf_diags_errors(&d), 1);
	CHECK(d.n && strstr(d.items[0].summary, "valid_until 'soon'"));
	tpf_diags_release(&d);
	tpf_recipe_release(&r);
}

/* The reference's shape: state is an object. */
static const char waiting[] =
	"{\"name\":\"projects/p/locations/us-central2-b/queuedResources/f-g-0\","
	"\"tpu\":{\"nodeSpec\":[{\"parent\":\"projects/123/locations/us-central2-b\",\"nodeId\":\"f-g-0\","
	"\"node\":{\"acceleratorType\":\"v4-8\",\"runtimeVersion\":\"tpu-ubuntu2204-base\","
	"\"labels\":{\"tpuform-fleet\":\"f\",\"tpuform-group\":\"g\",\"tpuform-index\":\"0\"}}}]},"
	"\"spot\":{},\"queueingPolicy\":{\"validUntilDuration\":\"21600s\"},"
	"\"state\":{\"state\":\"WAITING_FOR_RESOURCES\"}}";

static const char failed[] =
	"{\"name\":\"projects/p/locations/z1/queuedResources/f-g-1\","
	"\"tpu\":{\"nodeSpec\":[{\"parent\":\"projects/p/locations/z1\",\"nodeId\":\"f-g-1\","
	"\"node\":{\"acceleratorType\":\"v4-16\",\"runtimeVersion\":\"rt\",\"schedulingConfig\":{\"preemptible\":true},"
	"\"labels\":{\"tpuform-fleet\":\"f\"}}}]},"
	"\"state\":{\"state\":\"FAILED\",\"stateInitiator\":\"SERVICE\","
	"\"failedData\":{\"error\":{\"code\":8,\"message\":\"no capacity\"}}}}";

static void test_gcp_queued__parse(void)
{
	json_t *j = json_loads(waiting, 0, NULL);
	struct tpf_gcp_qr q = { 0 };
	CHECK_INT(tpf_gcp_qr_parse(j, "hint", &q), 0);
	CHECK_STR(q.id, "f-g-0");
	CHECK_STR(q.node_id, "f-g-0");
	CHECK_STR(q.state, "WAITING_FOR_RESOURCES");
	CHECK_INT(q.error_code, 0);
	CHECK(q.error == NULL);
	CHECK_STR(q.recipe.accelerator_type, "v4-8");
	CHECK_STR(q.recipe.runtime_version, "tpu-ubuntu2204-base");
	CHECK_STR(q.recipe.zone, "us-central2-b");
	CHECK_INT(q.recipe.spot, 1); /* the spot tier */
	CHECK_INT(q.recipe.queued, 1);
	CHECK_INT(q.recipe.workers, 1);
	CHECK_STR(tpf_kvlist_get(&q.recipe.labels, TPF_LABEL_INDEX), "0");
	CHECK(tpf_gcp_qr_in_fleet(j, "f"));
	CHECK(!tpf_gcp_qr_in_fleet(j, "g"));
	json_decref(j);

	j = json_loads(failed, 0, NULL);
	CHECK_INT(tpf_gcp_qr_parse(j, "z1", &q), 0); /* releases the first */
	CHECK_STR(q.state, "FAILED");
	CHECK_INT(q.error_code, 8);
	CHECK_STR(q.error, "no capacity");
	CHECK_STR(tpf_recipe_scheduling(&q.recipe), "preemptible");
	CHECK_INT(q.recipe.workers, 2); /* v4-16 from the accelerator table */
	CHECK(tpf_queued_state_dead(q.state));
	CHECK(!tpf_queued_state_dead("WAITING_FOR_RESOURCES"));
	CHECK(!tpf_queued_state_dead("ACTIVE"));
	json_decref(j);

	/* a state that is a string (not the API's shape) or absent */
	j = json_loads("{\"name\":\"projects/p/locations/z/queuedResources/x\",\"tpu\":{\"nodeSpec\":"
		       "[{\"nodeId\":\"x\",\"node\":{}}]},\"state\":\"ACTIVE\"}", 0, NULL);
	CHECK_INT(tpf_gcp_qr_parse(j, "z", &q), 0);
	CHECK_STR(q.state, "STATE_UNSPECIFIED");
	CHECK_STR(q.recipe.zone, "z");
	json_decref(j);

	/* multislice (no nodeId): the unit is named by the prefix, here the
	 * queued resource's id (tests/unit/test_multislice.c has the rest) */
	j = json_loads("{\"name\":\"projects/p/locations/z/queuedResources/x\",\"tpu\":{\"nodeSpec\":"
		       "[{\"multisliceParams\":{\"nodeCount\":2},\"node\":{}}]}}", 0, NULL);
	CHECK_INT(tpf_gcp_qr_parse(j, "z", &q), 0);
	CHECK_STR(q.node_id, "x");
	CHECK_INT(q.recipe.slices, 2);
	json_decref(j);
	/* neither a nodeId nor multisliceParams, or no name: not tpuform's */
	j = json_loads("{\"name\":\"projects/p/locations/z/queuedResources/x\",\"tpu\":{\"nodeSpec\":"
		       "[{\"node\":{}}]}}", 0, NULL);
	CHECK_INT(tpf_gcp_qr_parse(j, "z", &q), -1);
	json_decref(j);
	j = json_loads("{\"tpu\":{\"nodeSpec\":[{\"nodeId\":\"x\"}]}}", 0, NULL);
	CHECK_INT(tpf_gcp_qr_parse(j, "z", &q), -1);
	json_decref(j);
	tpf_gcp_qr_release(&q);
}

static void add_node(struct tpf_live_set *s, const char *name, const char *state)
{
	struct tpf_live_node *n = tpf_live_set_add(s);
	n->name = xstrdup(name);
	n->id = xstrdup("123");
	n->state = xstrdup(state);
	n->recipe.zone = xstrdup("z1");
}

static void set_qr(struct tpf_gcp_qr *q, const char *node, const char *state)
{
	q->id = xstrdup(node);
	q->node_id = xstrdup(node);
	q->state = xstrdup(state);
	q->recipe.zone = xstrdup("z1");
	q->recipe.accelerator_type = xstrdup("v2-8");
	q->recipe.queued = 1;
	q->recipe.workers = 1;
}

static void test_gcp_queued__merge(void)
{
	struct tpf_live_set s = { 0 };
	add_node(&s, "a", "READY");      /* ACTIVE queued resource: the node speaks */
	add_node(&s, "c", "PREEMPTED");  /* its queued resource already FAILED */
	add_node(&s, "plain", "READY");  /* no queued resource */
	struct tpf_gcp_qr q[3];
	memset(q, 0, sizeof(q));
	set_qr(&q[0], "a", "ACTIVE");
	set_qr(&q[1], "b", "WAITING_FOR_RESOURCES");
	set_qr(&q[2], "c", "FAILED");
	tpf_gcp_qr_merge(&s, q, 3);
	CHECK_INT(s.n, 4);
	const struct tpf_live_node *a = tpf_live_set_find(&s, "a"), *b = tpf_live_set_find(&s, "b"),
				   *c = tpf_live_set_find(&s, "c"), *p = tpf_live_set_find(&s, "plain");
	CHECK(a && b && c && p);
	if (a && b && c && p) {
		CHECK_STR(a->state, "READY");
		CHECK_STR(a->queued_state, "ACTIVE");
		CHECK_INT(a->recipe.queued, 1);
		CHECK_STR(b->state, "WAITING_FOR_RESOURCES"); /* no node: the queued resource's */
		CHECK_STR(b->queued_state, "WAITING_FOR_RESOURCES");
		CHECK(b->id == NULL);
		CHECK_INT(b->nendpoints, 0);
		CHECK_STR(b->recipe.accelerator_type, "v2-8");
		CHECK_STR(c->state, "FAILED"); /* a dead queued resource wins */
		CHECK_STR(c->id, "123");
		CHECK(p->queued_state == NULL);
		CHECK_INT(p->recipe.queued, 0);

		/* copies carry the queued state (apply copies live nodes) */
		struct tpf_live_node cp = { 0 };
		tpf_live_node_copy(&cp, b);
		CHECK_STR(cp.queued_state, "WAITING_FOR_RESOURCES");
		tpf_live_node_copy(&cp, &cp); /* onto itself */
		CHECK_STR(cp.queued_state, "WAITING_FOR_RESOURCES");
		tpf_live_node_release(&cp);
	}
	for (int i = 0; i < 3; i++)
		tpf_gcp_qr_release(&q[i]);
	tpf_live_set_release(&s);
}

static void test_gcp_queued__node_names_its_queued_resource(void)
{
	json_t *j = json_loads("{\"name\":\"projects/p/locations/z1/nodes/a\",\"state\":\"READY\","
			       "\"queuedResource\":\"projects/p/locations/z1/queuedResources/a\"}",
			       0, NULL);
	struct tpf_live_node n = { 0 };
	CHECK_INT(tpf_gcp_node_parse(j, "z1", 22, &n), 0);
	CHECK_INT(n.recipe.queued, 1);
	json_decref(j);
	j = json_loads("{\"name\":\"projects/p/locations/z1/nodes/a\",\"state\":\"READY\"}", 0, NULL);
	CHECK_INT(tpf_gcp_node_parse(j, "z1", 22, &n), 0);
	CHECK_INT(n.recipe.queued, 0);
	json_decref(j);
	tpf_live_node_release(&n);
}

static void test_gcp_queued__recipe_json(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_recipe r = { 0 }, back = { 0 }, copy = { 0 };
	recipe_fill(&r);
	r.valid_until = xstrdup("6h");
	json_t *j = tpf_recipe_to_json(&r);
	CHECK(json_is_true(json_object_get(j, "queued")));
	CHECK_STR(json_string_value(json_object_get(j, "valid_until")), "6h");
	CHECK_INT(tpf_recipe_from_json(&back, j, "plan.json", &d), 0);
	CHECK_INT(back.queued, 1);
	CHECK_STR(back.valid_until, "6h");
	json_decref(j);
	tpf_recipe_copy(&copy, &r);
	CHECK_INT(copy.queued, 1);
	CHECK_STR(copy.valid_until, "6h");

	/* not queued: neither key, so older files and new ones read alike */
	r.queued = 0;
	xstrset(&r.valid_until, NULL);
	j = tpf_recipe_to_json(&r);
	CHECK(!json_object_get(j, "queued"));
	CHECK(!json_object_get(j, "valid_until"));
	json_decref(j);

	j = json_pack("{s:s}", "queued", "yes");
	CHECK_INT(tpf_recipe_from_json(&back, j, "plan.json", &d), TPF_ERROR);
	CHECK(d.n && strstr(d.items[d.n - 1].summary, "'queued' must be true or false"));
	json_decref(j);
	tpf_diags_release(&d);
	tpf_recipe_release(&r);
	tpf_recipe_release(&back);
	tpf_recipe_release(&copy);
}

static void test_gcp_queued__state_json(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_state st, back;
	tpf_state_init(&st);
	st.fleet = xstrdup("f");
	struct tpf_state_node *n = tpf_state_add(&st, "f-g-0");
	xstrset(&n->group, "g");
	recipe_fill(&n->recipe);
	n->recipe.valid_until = xstrdup("6h");
	tpf_state_add(&st, "f-g-1"); /* not queued */
	json_t *j = tpf_state_to_json(&st);
	char *text = json_dumps(j, JSON_SORT_KEYS);
	CHECK(strstr(text, "\"queued\": true") || strstr(text, "\"queued\":true"));
	CHECK_INT(tpf_state_from_json(&back, j, "state.json", &d), 0);
	struct tpf_state_node *b0 = tpf_state_find(&back, "f-g-0"), *b1 = tpf_state_find(&back, "f-g-1");
	CHECK(b0 && b1);
	if (b0 && b1) {
		CHECK_INT(b0->recipe.queued, 1);
		CHECK_STR(b0->recipe.valid_until, "6h");
		CHECK_INT(b1->recipe.queued, 0);
		CHECK(b1->recipe.valid_until == NULL);
	}
	/* only the queued node's recipe names the new keys */
	json_t *nodes = json_object_get(j, "nodes");
	CHECK(!json_object_get(json_object_get(json_array_get(nodes, 1), "recipe"), "queued"));
	free(text);
	json_decref(j);
	tpf_state_release(&back);
	tpf_state_release(&st);
	tpf_diags_release(&d);
}

int main(void)
{
	RUN(test_gcp_queued__duration);
	RUN(test_gcp_queued__create_body);
	RUN(test_gcp_queued__parse);
	RUN(test_gcp_queued__merge);
	RUN(test_gcp_queued__node_names_its_queued_resource);
	RUN(test_gcp_queued__recipe_json);
	RUN(test_gcp_queued__state_json);
	return unit_done();
}
