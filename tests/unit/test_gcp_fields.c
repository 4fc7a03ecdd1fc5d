/*
 * Partial responses: every field tpuform reads is among those it asks for.
 * A resource carrying every field tpuform reads (with values that are not
 * the defaults) and more is run through tpuform's own field list with the
 * emulator's fields filter (tests/fakegcp/fg_fields.c, as fakegcp answers
 * a request with fields=), then both the whole resource and what the mask
 * keeps are parsed by tpuform's parser: the two must be equal. A field read
 * but missing from a list makes them differ.
 */
#include "model/node_fields.h"
#include "providers/gcp/compute/compute_engine.h"
#include "providers/gcp/tpu/gcp_node.h"
#include "providers/gcp/tpu/gcp_qr.h"
#include "tests/fakegcp/fg_fields.h"
#include "tests/unit/unit.h"

#include <stdlib.h>
#include <string.h>

#define MAINT \
	"{\"type\":\"SCHEDULED\",\"canReschedule\":true,\"windowStartTime\":\"2026-01-02T03:04:05Z\"," \
	"\"windowEndTime\":\"2026-01-02T07:04:05Z\",\"latestWindowStartTime\":\"2026-01-03T00:00:00Z\"," \
	"\"maintenanceStatus\":\"PENDING\"}"

/* A Node with every property of the discovery document's schema set. */
#define NODE_BODY \
	"\"acceleratorConfig\":{\"type\":\"V5P\",\"topology\":\"2x2x2\"},\"acceleratorType\":\"v5p-16\"," \
	"\"apiVersion\":\"V2\",\"cidrBlock\":\"10.0.0.0/29\",\"createTime\":\"2026-01-01T00:00:00Z\"," \
	"\"dataDisks\":[{\"sourceDisk\":\"projects/p/zones/z/disks/d1\",\"mode\":\"READ_ONLY\"}]," \
	"\"description\":\"not read\",\"health\":\"UNHEALTHY_MAINTENANCE\"," \
	"\"healthDescription\":\"maintenance soon\",\"id\":\"1234\"," \
	"\"labels\":{\"tpuform-fleet\":\"f\",\"tpuform-lineage\":\"0123456789abcdef\",\"team\":\"x\"}," \
	"\"metadata\":{\"ssh-keys\":\"root:ssh-ed25519 AAAA\",\"tpuform-script\":\"abc\"}," \
	"\"multisliceNode\":true,\"networkConfig\":{\"network\":\"projects/p/global/networks/n\"," \
	"\"subnetwork\":\"projects/p/regions/r/subnetworks/s\",\"enableExternalIps\":true," \
	"\"canIpForward\":true,\"queueCount\":4},\"networkConfigs\":[{\"network\":\"x\"}]," \
	"\"networkEndpoints\":[{\"ipAddress\":\"10.0.0.2\",\"port\":2222,\"accessConfig\":" \
	"{\"externalIp\":\"34.1.1.1\"}},{\"ipAddress\":\"10.0.0.3\",\"port\":2223,\"accessConfig\":" \
	"{\"externalIp\":\"34.1.1.2\"}}],\"queuedResource\":\"projects/p/locations/z/queuedResources/q\"," \
	"\"runtimeVersion\":\"v2-alpha-tpuv5\",\"schedulingConfig\":{\"preemptible\":true,\"spot\":true," \
	"\"reserved\":true,\"terminationTimestamp\":\"2026-02-01T00:00:00Z\"},\"serviceAccount\":" \
	"{\"email\":\"sa@p.iam.gserviceaccount.com\",\"scope\":[\"https://www.googleapis.com/auth/cloud-platform\"]}," \
	"\"shieldedInstanceConfig\":{\"enableSecureBoot\":true},\"state\":\"READY\"," \
	"\"symptoms\":[{\"symptomType\":\"OUT_OF_MEMORY\",\"workerId\":\"1\",\"details\":\"oom\"," \
	"\"createTime\":\"2026-01-01T00:00:00Z\"}],\"tags\":[\"a\",\"b\"],\"upcomingMaintenance\":" MAINT

static const char node_full[] = "{\"name\":\"projects/p/locations/us-east5-a/nodes/n-0\"," NODE_BODY "}";

/* A v1 Instance with every field tpuform reads and many it does not. */
static const char instance_full[] =
	"{\"kind\":\"compute#instance\",\"id\":\"987\",\"creationTimestamp\":\"2026-01-01T00:00:00.000-08:00\","
	"\"name\":\"s-001\",\"description\":\"not read\",\"tags\":{\"items\":[\"t1\",\"t2\"],\"fingerprint\":\"x\"},"
	"\"machineType\":\"https://compute.googleapis.com/compute/v1/projects/p/zones/us-central1-a/machineTypes/tpu7x-standard-4t\","
	"\"status\":\"RUNNING\",\"statusMessage\":\"not read\",\"zone\":\"https://compute.googleapis.com/compute/v1/projects/p/zones/us-central1-a\","
	"\"canIpForward\":true,\"networkInterfaces\":[{\"kind\":\"compute#networkInterface\","
	"\"network\":\"https://compute.googleapis.com/compute/v1/projects/p/global/networks/n\","
	"\"subnetwork\":\"https://compute.googleapis.com/compute/v1/projects/p/regions/us-central1/subnetworks/s\","
	"\"networkIP\":\"10.1.0.5\",\"name\":\"nic0\",\"accessConfigs\":[{\"kind\":\"compute#accessConfig\","
	"\"type\":\"ONE_TO_ONE_NAT\",\"name\":\"External NAT\",\"natIP\":\"35.1.2.3\",\"networkTier\":\"PREMIUM\"}],"
	"\"fingerprint\":\"y\",\"stackType\":\"IPV4_ONLY\"}],"
	"\"disks\":[{\"kind\":\"compute#attachedDisk\",\"type\":\"PERSISTENT\",\"mode\":\"READ_WRITE\","
	"\"source\":\"d\",\"deviceName\":\"persistent-disk-0\",\"index\":0,\"boot\":true,\"autoDelete\":true,"
	"\"licenses\":[\"l\"],\"interface\":\"NVME\",\"guestOsFeatures\":[{\"type\":\"GVNIC\"}],\"diskSizeGb\":\"100\"}],"
	"\"metadata\":{\"kind\":\"compute#metadata\",\"fingerprint\":\"z\",\"items\":[{\"key\":\"ssh-keys\","
	"\"value\":\"root:ssh-ed25519 AAAA\"},{\"key\":\"tpuform-script\",\"value\":\"abc\"}]},"
	"\"serviceAccounts\":[{\"email\":\"sa@p.iam.gserviceaccount.com\",\"scopes\":[\"https://www.googleapis.com/auth/cloud-platform\"]}],"
	"\"selfLink\":\"https://compute.googleapis.com/compute/v1/projects/p/zones/us-central1-a/instances/s-001\","
	"\"scheduling\":{\"onHostMaintenance\":\"TERMINATE\",\"automaticRestart\":false,\"preemptible\":true,"
	"\"provisioningModel\":\"SPOT\",\"instanceTerminationAction\":\"DELETE\",\"maxRunDuration\":{\"seconds\":\"3600\"}},"
	"\"cpuPlatform\":\"AMD\",\"labels\":{\"tpuform-fleet\":\"f\",\"tpuform-slice\":\"s\"},"
	"\"labelFingerprint\":\"w\",\"startRestricted\":false,\"deletionProtection\":false,"
	"\"reservationAffinity\":{\"consumeReservationType\":\"SPECIFIC_RESERVATION\",\"key\":"
	"\"compute.googleapis.com/reservation-name\",\"values\":[\"r1\"]},"
	"\"shieldedInstanceConfig\":{\"enableSecureBoot\":true,\"enableVtpm\":true,\"enableIntegrityMonitoring\":true},"
	"\"fingerprint\":\"v\",\"lastStartTimestamp\":\"2026-01-01T00:00:00.000-08:00\","
	"\"resourceStatus\":{\"upcomingMaintenance\":" MAINT ",\"physicalHost\":\"h\"},"
	"\"satisfiesPzi\":true}";

/* The MIG of a slice with every field tpuform reads, and more. */
static const char mig_full[] =
	"{\"kind\":\"compute#instanceGroupManager\",\"id\":\"555\",\"creationTimestamp\":\"2026-01-01T00:00:00.000-08:00\","
	"\"name\":\"s\",\"zone\":\"z\",\"instanceTemplate\":\"t\",\"instanceGroup\":\"g\",\"baseInstanceName\":\"s\","
	"\"description\":\"{\\\"machine_type\\\":\\\"tpu7x-standard-4t\\\",\\\"topology\\\":\\\"2x2x4\\\","
	"\\\"tpuform-fleet\\\":\\\"f\\\",\\\"tpuform-lineage\\\":\\\"0123456789abcdef\\\",\\\"spot\\\":true}\","
	"\"fingerprint\":\"q\",\"currentActions\":{\"none\":1,\"creating\":0,\"deleting\":0,\"recreating\":0},"
	"\"status\":{\"isStable\":true,\"versionTarget\":{\"isReached\":true},\"bulkInstanceOperation\":"
	"{\"inProgress\":false,\"lastProgressCheck\":{\"timestamp\":\"t\"}},\"appliedAcceleratorTopologies\":"
	"[{\"acceleratorTopology\":\"2x2x4\",\"state\":\"ACTIVE\"}]},\"targetSize\":1,"
	"\"resourcePolicies\":{\"workloadPolicy\":\"projects/p/regions/r/resourcePolicies/s-wp\"},"
	"\"updatePolicy\":{\"type\":\"OPPORTUNISTIC\"},\"selfLink\":\"l\"}";

/* The fixture text as JSON (a new reference). */
static json_t *load(const char *text)
{
	json_t *j = json_loads(text, 0, NULL);
	CHECKF(j != NULL, "a fixture is not JSON");
	return j;
}

/* mask(whole) through the emulator's filter: a new reference. */
static json_t *masked(const char *fields, json_t *whole)
{
	char err[256];
	json_t *m = fg_fields_parse(fields, err, sizeof(err));
	CHECKF(m != NULL, "'%s': %s", fields, m ? "" : err);
	json_t *part = fg_fields_apply(m, whole);
	json_decref(m);
	return part;
}

/* Everything tpuform keeps of a live node, as JSON. */
static json_t *live_json(const struct tpf_live_node *n)
{
	json_t *o = json_pack("{s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, s:i}",
			      "name", n->name, "id", n->id, "state", n->state, "health", n->health,
			      "create_time", n->create_time, "queued_state", n->queued_state,
			      "health_description", n->health_description, "symptoms", n->symptoms,
			      "maintenance", n->maintenance, "maintenance_start", n->maintenance_start,
			      "capacity_wait", n->capacity_wait);
	json_t *r = tpf_recipe_to_json(&n->recipe), *eps = json_array();
	tpf_node_fields_to_json(&n->recipe.node, r);
	json_object_set_new(r, "workers", json_integer(n->recipe.workers));
	json_object_set_new(r, "queued", json_integer(n->recipe.queued));
	json_object_set_new(o, "recipe", r);
	for (size_t i = 0; i < n->nendpoints; i++)
		json_array_append_new(eps, json_pack("{s:s?, s:s?, s:i}", "ip", n->endpoints[i].ip,
						     "external_ip", n->endpoints[i].external_ip,
						     "port", n->endpoints[i].port));
	json_object_set_new(o, "endpoints", eps);
	return o;
}

static void check_same(json_t *whole_j, json_t *part_j, const char *what)
{
	char *a = json_dumps(whole_j, JSON_SORT_KEYS), *b = json_dumps(part_j, JSON_SORT_KEYS);
	CHECKF(json_equal(whole_j, part_j), "%s: whole %s\n  masked %s", what, a, b);
	free(a);
	free(b);
}

/* Parse whole and part with parse(); compare. */
static void node_round(json_t *whole, json_t *part,
		       int (*parse)(json_t *, struct tpf_live_node *), const char *what)
{
	struct tpf_live_node a = { 0 }, b = { 0 };
	CHECK_INT(parse(whole, &a), 0);
	CHECK_INT(parse(part, &b), 0);
	json_t *ja = live_json(&a), *jb = live_json(&b);
	check_same(ja, jb, what);
	json_decref(ja);
	json_decref(jb);
	tpf_live_node_release(&a);
	tpf_live_node_release(&b);
}

/* The same with part = what fields keeps of whole. */
static void mask_round(const char *fields, json_t *whole,
		       int (*parse)(json_t *, struct tpf_live_node *), const char *what)
{
	json_t *part = masked(fields, whole);
	node_round(whole, part, parse, what);
	json_decref(part);
}

static int parse_node(json_t *j, struct tpf_live_node *out)
{
	return tpf_gcp_node_parse(j, "z", 22, out);
}

static int parse_instance(json_t *j, struct tpf_live_node *out)
{
	return tpf_compute_instance_parse(j, "z", 22, out);
}

/* A slice: its MIG with one member, the instance above. */
static int parse_slice(json_t *j, struct tpf_live_node *out)
{
	json_t *inst = json_loads(instance_full, 0, NULL);
	struct tpf_live_node m = { 0 };
	tpf_compute_instance_parse(inst, "z", 22, &m);
	int rc = tpf_compute_slice_parse(j, "us-central1-a", &m, 1, out);
	tpf_live_node_release(&m);
	json_decref(inst);
	return rc;
}

static void test_gcp_fields__node(void)
{
	json_t *node = load(node_full);
	mask_round(TPF_GCP_NODE_FIELDS, node, parse_node, "nodes.get");
	/* as a nodes.list page's item */
	json_t *page = json_pack("{s:[O], s:s, s:[]}", "nodes", node, "nextPageToken", "t",
				 "unreachable");
	json_t *part = masked("nextPageToken,unreachable,nodes(" TPF_GCP_NODE_FIELDS ")", page);
	json_t *n = json_array_get(json_object_get(part, "nodes"), 0);
	node_round(node, n, parse_node, "nodes.list");
	CHECK_STR(json_string_value(json_object_get(part, "nextPageToken")), "t");
	/* what gcp_api.c node_seen tells the SSH access layer */
	CHECK(json_is_true(json_object_get(n, "multisliceNode")));
	CHECK(json_equal(json_object_get(n, "metadata"), json_object_get(node, "metadata")));
	CHECK_INT(json_array_size(json_object_get(n, "networkEndpoints")), 2);
	json_decref(part);
	json_decref(page);
	json_decref(node);
}

static void test_gcp_fields__queued_resource(void)
{
	static const char qr_full[] =
		"{\"name\":\"projects/p/locations/us-east5-a/queuedResources/q\",\"createTime\":\"t\","
		"\"spot\":{},\"reservationName\":\"projects/p/locations/us-east5-a/reservations/r1\","
		"\"queueingPolicy\":{\"validUntilDuration\":\"3600s\"},\"state\":{\"state\":\"FAILED\","
		"\"stateInitiator\":\"SERVICE\",\"failedData\":{\"error\":{\"code\":8,\"message\":\"no capacity\"}}},"
		"\"tpu\":{\"nodeSpec\":[{\"parent\":\"projects/p/locations/us-east5-a\",\"nodeId\":\"n-0\","
		"\"node\":{" NODE_BODY "}}]}}";
	json_t *qr = load(qr_full);
	json_t *part = masked(TPF_GCP_QR_FIELDS, qr);
	struct tpf_gcp_qr a = { 0 }, b = { 0 };
	CHECK_INT(tpf_gcp_qr_parse(qr, "z", &a), 0);
	CHECK_INT(tpf_gcp_qr_parse(part, "z", &b), 0);
	struct tpf_live_node la = { .name = a.node_id, .id = a.id, .state = a.state,
				    .health = a.error, .recipe = a.recipe };
	struct tpf_live_node lb = { .name = b.node_id, .id = b.id, .state = b.state,
				    .health = b.error, .recipe = b.recipe };
	json_t *ja = live_json(&la), *jb = live_json(&lb);
	json_object_set_new(ja, "code", json_integer(a.error_code));
	json_object_set_new(jb, "code", json_integer(b.error_code));
	check_same(ja, jb, "queuedResources.get");
	json_decref(ja);
	json_decref(jb);
	tpf_gcp_qr_release(&a);
	tpf_gcp_qr_release(&b);
	json_decref(part);
	json_decref(qr);
}

static void test_gcp_fields__instance(void)
{
	json_t *inst = load(instance_full);
	mask_round(TPF_COMPUTE_INSTANCE_FIELDS, inst, parse_instance, "instances.get");
	json_t *page = json_pack("{s:[O], s:s}", "items", inst, "nextPageToken", "t");
	json_t *part = masked("nextPageToken,items(" TPF_COMPUTE_INSTANCE_FIELDS ")", page);
	json_t *i0 = json_array_get(json_object_get(part, "items"), 0);
	node_round(inst, i0, parse_instance, "instances.list");
	/* what compute_api.c seen tells the SSH access layer */
	CHECK(json_equal(json_object_get(json_object_get(i0, "metadata"), "items"),
			 json_object_get(json_object_get(inst, "metadata"), "items")));
	CHECK_STR(json_string_value(json_object_get(i0, "id")), "987");
	json_decref(part);
	json_decref(page);
	json_decref(inst);
}

static void test_gcp_fields__mig(void)
{
	json_t *mig = load(mig_full);
	/* READY: stable, its topology ACTIVE, its one member RUNNING */
	mask_round(TPF_COMPUTE_MIG_FIELDS, mig, parse_slice, "instanceGroupManagers.get");
	/* DELETING: currentActions.deleting covers targetSize */
	json_t *del = json_deep_copy(mig);
	json_object_set_new(json_object_get(del, "currentActions"), "deleting", json_integer(1));
	mask_round(TPF_COMPUTE_MIG_FIELDS, del, parse_slice, "a MIG being deleted");
	json_decref(del);
	/* what the delete guard's names_policy reads (compute_slice_parts.c) */
	json_t *g = masked(TPF_COMPUTE_MIG_FIELDS, mig);
	CHECK(json_equal(json_object_get(g, "resourcePolicies"), json_object_get(mig, "resourcePolicies")));
	json_decref(g);
	/* the aggregated list's form selects the same */
	json_t *page = json_pack("{s:{s:{s:[O]}}}", "items", "zones/us-central1-a",
				 "instanceGroupManagers", mig);
	json_t *part = masked("nextPageToken,unreachables,items/*/instanceGroupManagers("
			      TPF_COMPUTE_MIG_FIELDS ")", page);
	json_t *m2 = json_array_get(json_object_get(json_object_get(json_object_get(part, "items"),
		"zones/us-central1-a"), "instanceGroupManagers"), 0);
	json_t *m1 = masked(TPF_COMPUTE_MIG_FIELDS, mig);
	CHECK(json_equal(m1, m2));
	json_decref(m1);
	json_decref(part);
	json_decref(page);
	json_decref(mig);
}

int main(void)
{
	RUN(test_gcp_fields__node);
	RUN(test_gcp_fields__queued_resource);
	RUN(test_gcp_fields__instance);
	RUN(test_gcp_fields__mig);
	return unit_done();
}
