/*
 * Cloud TPU client: Node JSON -> live node, fleet label filter, create and
 * patch bodies. Node bodies follow docs/cloud-tpu-api.md section 4.
 */
#include "providers/gcp/compute/compute_engine.h"
#include "providers/gcp/tpu/gcp_node.h"
#include "tests/unit/unit.h"

#include <stdlib.h>
#include <string.h>

/* docs/cloud-tpu-api.md section 4: the preempted v4-16 node, verbatim */
static const char preempted[] =
	"{\"name\":\"projects/my-proj/locations/us-central2-b/nodes/tpu-a\",\"id\":\"4356789012345678901\",\"acceleratorType\":\"v4-16\","
	" \"acceleratorConfig\":{\"type\":\"V4\",\"topology\":\"2x2x2\"},\"runtimeVersion\":\"tpu-ubuntu2204-base\",\"state\":\"PREEMPTED\","
	" \"networkEndpoints\":[{\"ipAddress\":\"10.130.0.2\",\"port\":8470,\"accessConfig\":{\"externalIp\":\"34.1.2.3\"}},"
	"                     {\"ipAddress\":\"10.130.0.3\",\"port\":8470,\"accessConfig\":{\"externalIp\":\"34.1.2.4\"}}],"
	" \"networkConfig\":{\"network\":\"projects/my-proj/global/networks/default\",\"subnetwork\":\"projects/my-proj/regions/us-central2/subnetworks/default\",\"enableExternalIps\":true},"
	" \"serviceAccount\":{\"email\":\"123-compute@developer.gserviceaccount.com\",\"scope\":[\"https://www.googleapis.com/auth/cloud-platform\"]},"
	" \"schedulingConfig\":{\"spot\":true},\"labels\":{\"tpuform\":\"fleet1\"},\"metadata\":{\"startup-script\":\"#!/bin/bash\\necho ready\"},"
	" \"tags\":[\"tpuform\"],\"shieldedInstanceConfig\":{},\"apiVersion\":\"V2\",\"createTime\":\"2025-05-01T10:00:00.123456Z\"}";

static void test_gcp_node__parse_preempted(void)
{
	json_t *j = json_loads(preempted, 0, NULL);
	CHECK(j != NULL);
	struct tpf_live_node n = { 0 };
	CHECK_INT(tpf_gcp_node_parse(j, "ignored-zone", 2222, &n), 0);
	CHECK_STR(n.name, "tpu-a");
	CHECK_STR(n.id, "4356789012345678901");
	CHECK_STR(n.state, "PREEMPTED");
	CHECK(n.health == NULL);
	CHECK_STR(n.create_time, "2025-05-01T10:00:00.123456Z");
	CHECK_STR(n.recipe.accelerator_type, "v4-16");
	CHECK_STR(n.recipe.runtime_version, "tpu-ubuntu2204-base");
	CHECK_STR(n.recipe.zone, "us-central2-b"); /* from the name, not the hint */
	CHECK_INT(n.recipe.spot, 1);
	CHECK_INT(n.recipe.preemptible, 0);
	CHECK_STR(tpf_recipe_scheduling(&n.recipe), "spot");
	CHECK_INT(n.recipe.labels.n, 1);
	CHECK_STR(tpf_kvlist_get(&n.recipe.labels, "tpuform"), "fleet1");
	CHECK_INT(n.recipe.workers, 2);
	CHECK_INT(n.nendpoints, 2);
	if (n.nendpoints == 2) {
		CHECK_STR(n.endpoints[0].ip, "10.130.0.2");
		CHECK_STR(n.endpoints[0].external_ip, "34.1.2.3");
		CHECK_STR(n.endpoints[1].ip, "10.130.0.3");
		CHECK_STR(n.endpoints[1].external_ip, "34.1.2.4");
		/* 8470 is the TPU runtime's port, never SSH: the fleet's port is used */
		CHECK_INT(n.endpoints[0].port, 2222);
	}
	/* parsing into a used node releases it first (LeakSanitizer checks) */
	CHECK_INT(tpf_gcp_node_parse(j, "z", 22, &n), 0);
	CHECK_STR(n.name, "tpu-a");
	tpf_live_node_release(&n);
	json_decref(j);
}

static void test_gcp_node__parse_creating(void)
{
	/* a v4-16 still CREATING: no endpoints yet, workers from the table */
	const char *body = "{\"name\":\"projects/p/locations/europe-west4-a/nodes/llm-sweep-a-0\","
			   "\"acceleratorType\":\"v4-16\",\"runtimeVersion\":\"tpu-ubuntu2204-base\","
			   "\"state\":\"CREATING\",\"schedulingConfig\":{\"preemptible\":true},"
			   "\"labels\":{\"tpuform-fleet\":\"llm-sweep\",\"tpuform-group\":\"a\",\"tpuform-index\":\"0\",\"team\":\"nlp\"}}";
	json_t *j = json_loads(body, 0, NULL);
	struct tpf_live_node n = { 0 };
	CHECK_INT(tpf_gcp_node_parse(j, "x", 22, &n), 0);
	CHECK_STR(n.state, "CREATING");
	CHECK(n.id == NULL);
	CHECK_INT(n.nendpoints, 0);
	CHECK_INT(n.recipe.workers, 2);
	CHECK_INT(n.recipe.preemptible, 1);
	CHECK_STR(tpf_recipe_scheduling(&n.recipe), "preemptible");
	CHECK_INT(n.recipe.labels.n, 4);
	CHECK_STR(tpf_kvlist_get(&n.recipe.labels, "team"), "nlp");
	CHECK_STR(tpf_kvlist_get(&n.recipe.labels, "tpuform-index"), "0");
	CHECK(tpf_gcp_node_in_fleet(j, "llm-sweep"));
	CHECK(!tpf_gcp_node_in_fleet(j, "llm"));
	CHECK(!tpf_gcp_node_in_fleet(j, "llm-sweep-2"));
	tpf_live_node_release(&n);
	json_decref(j);

	/* the emulator's shape: worker ssh port in the endpoint, on-demand */
	body = "{\"name\":\"projects/test-project/locations/z1/nodes/n\",\"acceleratorType\":\"v5litepod-16\","
	       "\"state\":\"READY\",\"health\":\"HEALTHY\",\"networkEndpoints\":[{\"ipAddress\":\"127.0.10.1\",\"port\":2201},"
	       "{\"ipAddress\":\"127.0.10.2\",\"port\":2201},{\"ipAddress\":\"127.0.10.3\",\"port\":2201},{\"ipAddress\":\"127.0.10.4\",\"port\":2201}]}";
	j = json_loads(body, 0, NULL);
	CHECK_INT(tpf_gcp_node_parse(j, "x", 22, &n), 0);
	CHECK_STR(n.health, "HEALTHY");
	CHECK_INT(n.recipe.workers, 4);
	CHECK_INT(n.endpoints[3].port, 2201);
	CHECK(n.endpoints[3].external_ip == NULL);
	CHECK_STR(tpf_recipe_scheduling(&n.recipe), "on-demand");
	CHECK(!tpf_gcp_node_in_fleet(j, "llm-sweep")); /* no labels at all */
	tpf_live_node_release(&n);
	json_decref(j);

	/* not a node */
	j = json_loads("{\"state\":\"READY\"}", 0, NULL);
	CHECK_INT(tpf_gcp_node_parse(j, "x", 22, &n), -1);
	tpf_live_node_release(&n);
	json_decref(j);
}

static void test_gcp_node__names(void)
{
	CHECK_STR(tpf_gcp_last_segment("projects/p/locations/z/nodes/abc"), "abc");
	CHECK_STR(tpf_gcp_last_segment("abc"), "abc");
	CHECK(tpf_gcp_last_segment(NULL) == NULL);
	char *z = tpf_gcp_name_zone("projects/123456/locations/us-central1-f/nodes/x");
	CHECK_STR(z, "us-central1-f");
	free(z);
	z = tpf_gcp_name_zone("projects/p/locations/z9");
	CHECK_STR(z, "z9");
	free(z);
	CHECK(tpf_gcp_name_zone("nodes/x") == NULL);
}

static void test_gcp_node__create_body(void)
{
	struct tpf_recipe r = { 0 };
	r.accelerator_type = "v2-8";
	r.runtime_version = "tpu-vm-base";
	r.zone = "us-central1-f";
	r.preemptible = 1;
	tpf_kvlist_set(&r.labels, "tpuform-fleet", "f");
	tpf_kvlist_set(&r.labels, "tpuform-group", "g");
	tpf_kvlist_set(&r.labels, "tpuform-index", "3");
	tpf_kvlist_set(&r.labels, "team", "nlp");
	json_t *b = tpf_gcp_node_body(&r, 1, NULL);
	char *s = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
	CHECK_STR(s, "{\"acceleratorType\":\"v2-8\",\"labels\":{\"team\":\"nlp\",\"tpuform-fleet\":\"f\","
		     "\"tpuform-group\":\"g\",\"tpuform-index\":\"3\"},\"networkConfig\":{\"enableExternalIps\":true},"
		     "\"runtimeVersion\":\"tpu-vm-base\",\"schedulingConfig\":{\"preemptible\":true}}");
	free(s);
	json_decref(b);

	r.preemptible = 0;
	r.spot = 1;
	b = tpf_gcp_node_body(&r, 0, NULL);
	CHECK(json_is_true(json_object_get(json_object_get(b, "schedulingConfig"), "spot")));
	CHECK(!json_object_get(json_object_get(b, "schedulingConfig"), "preemptible"));
	CHECK(!json_object_get(b, "networkConfig"));
	json_decref(b);

	r.spot = 0; /* on-demand: no schedulingConfig at all */
	b = tpf_gcp_node_body(&r, 0, NULL);
	CHECK(!json_object_get(b, "schedulingConfig"));
	CHECK(!json_object_get(b, "metadata"));
	CHECK_INT(json_object_size(json_object_get(b, "labels")), 4);
	json_decref(b);

	/* metadata: a copy of what it is given */
	json_t *md = json_pack("{s:s}", "ssh-keys", "root:ssh-ed25519 AAAA root");
	b = tpf_gcp_node_body(&r, 0, md);
	json_object_set_new(md, "later", json_string("x"));
	CHECK_STR(json_string_value(json_object_get(json_object_get(b, "metadata"), "ssh-keys")),
		  "root:ssh-ed25519 AAAA root");
	CHECK(!json_object_get(json_object_get(b, "metadata"), "later"));
	json_decref(b);
	json_decref(md);

	b = tpf_gcp_labels_body(&r.labels);
	s = json_dumps(b, JSON_COMPACT);
	CHECK_STR(s, "{\"labels\":{\"tpuform-fleet\":\"f\",\"tpuform-group\":\"g\",\"tpuform-index\":\"3\",\"team\":\"nlp\"}}");
	free(s);
	json_decref(b);
	tpf_kvlist_release(&r.labels);
}

/* The maintenance window's start (issue 21, docs/recovery.md): from the
 * Cloud TPU node's upcomingMaintenance and from a Compute Engine
 * instance's resourceStatus.upcomingMaintenance (the same message); none
 * without a window, and a copy keeps it. */
static void test_gcp_node__maintenance_start(void)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s}}", "name",
			      "projects/p/locations/z1/nodes/tpu-a", "state", "READY",
			      "acceleratorType", "v4-16", "upcomingMaintenance", "type", "SCHEDULED",
			      "maintenanceStatus", "PENDING", "windowStartTime",
			      "2030-01-01T00:00:00Z", "windowEndTime", "2030-01-01T04:00:00Z");
	struct tpf_live_node n = { 0 };
	CHECK_INT(tpf_gcp_node_parse(j, "z1", 22, &n), 0);
	CHECK_STR(n.maintenance_start, "2030-01-01T00:00:00Z");
	CHECK_STR(n.maintenance,
		  "SCHEDULED maintenance PENDING, window 2030-01-01T00:00:00Z to 2030-01-01T04:00:00Z");
	struct tpf_live_node c = { 0 };
	tpf_live_node_copy(&c, &n);
	CHECK_STR(c.maintenance_start, "2030-01-01T00:00:00Z");
	tpf_live_node_release(&c);
	json_object_del(j, "upcomingMaintenance");
	CHECK_INT(tpf_gcp_node_parse(j, "z1", 22, &n), 0);
	CHECK(n.maintenance_start == NULL && n.maintenance == NULL);
	json_decref(j);
	json_t *inst = json_pack("{s:s, s:s, s:s, s:{s:{s:s, s:s}}}", "name", "vm-a", "status",
				 "RUNNING", "machineType",
				 "projects/p/zones/z1/machineTypes/ct5lp-hightpu-4t", "resourceStatus",
				 "upcomingMaintenance", "type", "SCHEDULED", "windowStartTime",
				 "2030-02-01T00:00:00Z");
	CHECK_INT(tpf_compute_instance_parse(inst, "z1", 22, &n), 0);
	CHECK_STR(n.maintenance_start, "2030-02-01T00:00:00Z");
	tpf_live_node_release(&n);
	json_decref(inst);
}

int main(void)
{
	RUN(test_gcp_node__parse_preempted);
	RUN(test_gcp_node__parse_creating);
	RUN(test_gcp_node__names);
	RUN(test_gcp_node__create_body);
	RUN(test_gcp_node__maintenance_start);
	return unit_done();
}
