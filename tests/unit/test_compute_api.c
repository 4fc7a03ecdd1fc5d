/*
 * The Compute Engine resources of the gcp provider (providers/gcp/compute*.c)
 * against a scripted libmicrohttpd server (as tests/unit/test_gapi.c does):
 * the instances.insert body (machine type, boot image, scheduling per
 * provisioning model, labels with the lineage, guest attributes, requestId),
 * the wait through .../wait, stockout and quota as the zone fallback reads
 * them, listing with labels matched on the client and every page followed,
 * Compute status mapped to Node states, delete of a gone instance,
 * setMetadata retried on 412 with the new fingerprint, and host keys from
 * guest attributes. Also one Cloud TPU API path that deletes by name: a
 * node left under a deleted queued resource's name is deleted only when
 * it carries this state's lineage (providers/gcp/gcp_qr.h).
 */
#include "tests/unit/unit.h"
#include "providers/gcp/compute/compute_engine.h"
#include "providers/gcp/tpu/gcp_api.h"
#include "providers/gcp/tpu/gcp_qr.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEPS 16

struct step {
	unsigned status;
	const char *body; /* "%s" is replaced by the server's URL */
};

struct seen {
	char method[8];
	char path[160];
	char request_id[64];
	char page_token[32];
	char query_path[32];
	char body[8192];
};

struct conn_state {
	char buf[8192];
	size_t len;
};

static struct server {
	struct MHD_Daemon *daemon;
	char url[64];
	pthread_mutex_t mu;
	struct step steps[MAX_STEPS];
	int nsteps, next;
	struct seen seen[MAX_STEPS];
	int n;
} srv;

static void copy_arg(struct MHD_Connection *conn, const char *key, char *out, size_t size)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);
	snprintf(out, size, "%s", v ? v : "");
}

/* body with every "%s" replaced by the server's URL (caller frees). */
static char *with_url(const char *body)
{
	size_t n = 1;
	for (const char *p = body; *p; p++)
		n += p[0] == '%' && p[1] == 's' ? strlen(srv.url) : 1;
	char *out = xcalloc(n, 1), *o = out;
	for (const char *p = body; *p; p++) {
		if (p[0] == '%' && p[1] == 's') {
			o = stpcpy(o, srv.url);
			p++;
		} else {
			*o++ = *p;
		}
	}
	return out;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *size, void **con_cls)
{
	(void)cls, (void)version;
	struct conn_state *cs = *con_cls;
	if (!cs) {
		*con_cls = xcalloc(1, sizeof(*cs));
		return MHD_YES;
	}
	if (*size) {
		size_t room = sizeof(cs->buf) - 1 - cs->len;
		size_t k = *size < room ? *size : room;
		memcpy(cs->buf + cs->len, data, k);
		cs->len += k;
		*size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&srv.mu);
	struct step st = srv.next < srv.nsteps ? srv.steps[srv.next++] : (struct step){ 500, "{}" };
	if (srv.n < MAX_STEPS) {
		struct seen *s = &srv.seen[srv.n++];
		snprintf(s->method, sizeof(s->method), "%s", method);
		snprintf(s->path, sizeof(s->path), "%s", url);
		copy_arg(conn, "requestId", s->request_id, sizeof(s->request_id));
		copy_arg(conn, "pageToken", s->page_token, sizeof(s->page_token));
		copy_arg(conn, "queryPath", s->query_path, sizeof(s->query_path));
		snprintf(s->body, sizeof(s->body), "%.*s", (int)cs->len, cs->buf);
	}
	pthread_mutex_unlock(&srv.mu);
	char *b = with_url(st.body ? st.body : "");
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(b), b, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Connection", "close");
	enum MHD_Result ret = MHD_queue_response(conn, st.status, r);
	MHD_destroy_response(r);
	return ret;
}

static void on_done(void *cls, struct MHD_Connection *conn, void **con_cls,
		    enum MHD_RequestTerminationCode code)
{
	(void)cls, (void)conn, (void)code;
	free(*con_cls);
	*con_cls = NULL;
}

static void server_start(void)
{
	memset(&srv, 0, sizeof(srv));
	pthread_mutex_init(&srv.mu, NULL);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	srv.daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request,
				      NULL, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED,
				      on_done, NULL, MHD_OPTION_END);
	const union MHD_DaemonInfo *info =
		srv.daemon ? MHD_get_daemon_info(srv.daemon, MHD_DAEMON_INFO_BIND_PORT) : NULL;
	snprintf(srv.url, sizeof(srv.url), "http://127.0.0.1:%u", info ? (unsigned)info->port : 0);
	CHECK(srv.daemon != NULL);
}

static void script(const struct step *steps, int n)
{
	pthread_mutex_lock(&srv.mu);
	memcpy(srv.steps, steps, (size_t)n * sizeof(*steps));
	srv.nsteps = n;
	srv.next = 0;
	srv.n = 0;
	pthread_mutex_unlock(&srv.mu);
}

static struct tpf_gcp_client *client;
static struct tpf_compute_client *cc;

#define OP_RUNNING                                                                        \
	"{\"kind\":\"compute#operation\",\"name\":\"op-1\",\"status\":\"RUNNING\","       \
	"\"selfLink\":\"%s/compute/v1/projects/p/zones/us-central1-c/operations/op-1\"}"
#define OP_DONE "{\"kind\":\"compute#operation\",\"name\":\"op-1\",\"status\":\"DONE\"}"
#define INSTANCE                                                                          \
	"{\"name\":\"f-g-0\",\"id\":\"123\",\"status\":\"RUNNING\","                     \
	"\"zone\":\"%s/compute/v1/projects/p/zones/us-central1-c\","                     \
	"\"machineType\":\"zones/us-central1-c/machineTypes/tpu7x-standard-4t\","       \
	"\"scheduling\":{\"provisioningModel\":\"SPOT\",\"preemptible\":true,"          \
	"\"instanceTerminationAction\":\"DELETE\",\"maxRunDuration\":{\"seconds\":\"3600\"}}," \
	"\"labels\":{\"tpuform-fleet\":\"f\",\"tpuform-lineage\":\"0123456789abcdef\"},"  \
	"\"metadata\":{\"fingerprint\":\"fp1\",\"items\":[{\"key\":\"enable-guest-attributes\"," \
	"\"value\":\"TRUE\"},{\"key\":\"role\",\"value\":\"x\"}]},"                       \
	"\"networkInterfaces\":[{\"network\":\"global/networks/default\","              \
	"\"networkIP\":\"10.0.0.2\",\"accessConfigs\":[{\"natIP\":\"203.0.113.9\"}]}]}"

static void recipe_spot(struct tpf_recipe *r)
{
	memset(r, 0, sizeof(*r));
	r->zone = xstrdup("us-central1-c");
	r->spot = 1;
	r->workers = 1;
	r->compute.api = TPF_API_COMPUTE;
	r->compute.machine_type = xstrdup("tpu7x-standard-4t");
	r->compute.image = xstrdup("projects/ubuntu-os-accelerator-images/global/images/family/"
				   "ubuntu-accel-2404-amd64-tpu-tpu7x");
	r->compute.termination_action = xstrdup("DELETE");
	r->compute.max_run_duration = 3600;
	r->compute.disk_size_gb = 200;
	r->compute.disk_type = xstrdup("hyperdisk-balanced");
	r->node.topology = xstrdup("2x2x1");
	tpf_kvlist_set(&r->labels, "tpuform-fleet", "f");
	tpf_kvlist_set(&r->labels, "tpuform-lineage", "0123456789abcdef");
}

static void test_compute__create_spot(void)
{
	struct step steps[] = { { 200, OP_RUNNING }, { 200, OP_DONE }, { 200, INSTANCE } };
	script(steps, 3);
	struct tpf_recipe r;
	recipe_spot(&r);
	struct tpf_live_node out = { 0 };
	struct tpf_diags d = TPF_DIAGS_INIT;
	json_t *md = json_pack("{s:s}", "ssh-keys", "me:ssh-ed25519 AAAA me");
	int rc = tpf_compute_create(cc, "f-g-0", &r, md, &out, &d);
	CHECKF(rc == 0, "created: %s", d.n ? d.items[0].summary : "");
	CHECK_INT(srv.n, 3);
	CHECK_STR(srv.seen[0].method, "POST");
	CHECK_STR(srv.seen[0].path, "/compute/v1/projects/p/zones/us-central1-c/instances");
	CHECK(strlen(srv.seen[0].request_id) == 36);
	CHECK_STR(srv.seen[1].path, "/compute/v1/projects/p/zones/us-central1-c/operations/op-1/wait");
	CHECK_STR(srv.seen[2].path, "/compute/v1/projects/p/zones/us-central1-c/instances/f-g-0");
	json_t *b = json_loads(srv.seen[0].body, 0, NULL);
	CHECK_STR(json_string_value(json_object_get(b, "name")), "f-g-0");
	CHECK_STR(json_string_value(json_object_get(b, "machineType")),
		  "zones/us-central1-c/machineTypes/tpu7x-standard-4t");
	json_t *s = json_object_get(b, "scheduling");
	CHECK_STR(json_string_value(json_object_get(s, "provisioningModel")), "SPOT");
	CHECK(json_is_true(json_object_get(s, "preemptible")));
	CHECK(json_is_false(json_object_get(s, "automaticRestart")));
	CHECK_STR(json_string_value(json_object_get(s, "onHostMaintenance")), "TERMINATE");
	CHECK_STR(json_string_value(json_object_get(s, "instanceTerminationAction")), "DELETE");
	CHECK_STR(json_string_value(json_object_get(json_object_get(s, "maxRunDuration"), "seconds")),
		  "3600");
	json_t *init = json_object_get(json_array_get(json_object_get(b, "disks"), 0),
				       "initializeParams");
	CHECK_STR(json_string_value(json_object_get(init, "sourceImage")), r.compute.image);
	CHECK_STR(json_string_value(json_object_get(init, "diskSizeGb")), "200");
	CHECK_STR(json_string_value(json_object_get(init, "diskType")),
		  "zones/us-central1-c/diskTypes/hyperdisk-balanced");
	CHECK_STR(json_string_value(json_object_get(json_object_get(b, "labels"), "tpuform-lineage")),
		  "0123456789abcdef");
	json_t *sa = json_array_get(json_object_get(b, "serviceAccounts"), 0);
	CHECK_STR(json_string_value(json_array_get(json_object_get(sa, "scopes"), 0)),
		  "https://www.googleapis.com/auth/cloud-platform");
	json_t *items = json_object_get(json_object_get(b, "metadata"), "items");
	int guest = 0, keys = 0;
	size_t i;
	json_t *it;
	json_array_foreach(items, i, it) {
		const char *k = json_string_value(json_object_get(it, "key"));
		const char *v = json_string_value(json_object_get(it, "value"));
		guest |= !strcmp(k, "enable-guest-attributes") && !strcmp(v, "TRUE");
		keys |= !strcmp(k, "ssh-keys") && strstr(v, "me:ssh-ed25519");
	}
	CHECK(guest && keys);
	/* the network: default, with gcloud's external access config */
	json_t *ni = json_array_get(json_object_get(b, "networkInterfaces"), 0);
	CHECK_STR(json_string_value(json_object_get(ni, "network")), "global/networks/default");
	CHECK(json_array_size(json_object_get(ni, "accessConfigs")) == 1);
	json_decref(b);
	CHECK_STR(out.state, "READY");
	CHECK_STR(out.recipe.zone, "us-central1-c");
	CHECK_INT(out.recipe.compute.api, TPF_API_COMPUTE);
	CHECK_STR(out.recipe.compute.machine_type, "tpu7x-standard-4t");
	CHECK_INT(out.recipe.spot, 1);
	CHECK_STR(out.recipe.compute.termination_action, "DELETE");
	CHECK_INT(out.recipe.compute.max_run_duration, 3600);
	CHECK_STR(out.recipe.node.topology, "2x2x1");
	CHECK(tpf_kvlist_get(&out.recipe.node.metadata, "enable-guest-attributes") == NULL);
	CHECK_INT(out.nendpoints, 1);
	CHECK_STR(out.nendpoints ? out.endpoints[0].ip : NULL, "10.0.0.2");
	CHECK_STR(out.nendpoints ? out.endpoints[0].external_ip : NULL, "203.0.113.9");
	json_decref(md);
	tpf_live_node_release(&out);
	tpf_recipe_release(&r);
	tpf_diags_release(&d);
}

static void test_compute__flex_and_reservation_bodies(void)
{
	struct tpf_recipe r;
	recipe_spot(&r);
	r.spot = 0;
	r.compute.flex_start = 1;
	r.compute.max_run_duration = 86400;
	r.node.enable_external_ips = TPF_TRI_FALSE;
	r.node.subnetwork = xstrdup("tpu-subnet");
	json_t *b = tpf_compute_instance_body("n", &r, NULL, 1);
	json_t *s = json_object_get(b, "scheduling");
	CHECK_STR(json_string_value(json_object_get(s, "provisioningModel")), "FLEX_START");
	CHECK_STR(json_string_value(json_object_get(s, "instanceTerminationAction")), "DELETE");
	CHECK(json_object_get(s, "preemptible") == NULL);
	CHECK_STR(json_string_value(json_object_get(json_object_get(b, "reservationAffinity"),
						    "consumeReservationType")),
		  "NO_RESERVATION");
	json_t *ni = json_array_get(json_object_get(b, "networkInterfaces"), 0);
	CHECK(json_object_get(ni, "accessConfigs") == NULL); /* --no-address */
	CHECK_STR(json_string_value(json_object_get(ni, "subnetwork")),
		  "regions/us-central1/subnetworks/tpu-subnet");
	json_decref(b);
	r.compute.flex_start = 0;
	r.compute.max_run_duration = 0;
	r.node.reservation = xstrdup("res-1");
	b = tpf_compute_instance_body("n", &r, NULL, 0);
	s = json_object_get(b, "scheduling");
	CHECK_STR(json_string_value(json_object_get(s, "provisioningModel")), "STANDARD");
	CHECK(json_is_true(json_object_get(s, "automaticRestart")));
	CHECK(json_object_get(s, "maxRunDuration") == NULL);
	json_t *ra = json_object_get(b, "reservationAffinity");
	CHECK_STR(json_string_value(json_object_get(ra, "consumeReservationType")),
		  "SPECIFIC_RESERVATION");
	CHECK_STR(json_string_value(json_object_get(ra, "key")),
		  "compute.googleapis.com/reservation-name");
	CHECK_STR(json_string_value(json_array_get(json_object_get(ra, "values"), 0)), "res-1");
	json_decref(b);
	tpf_recipe_release(&r);
}

static void test_compute__create_failures(void)
{
	struct tpf_recipe r;
	recipe_spot(&r);
	struct tpf_live_node out = { 0 };
	struct tpf_diags d = TPF_DIAGS_INIT;
	/* Stockout: HTTP 200 on the insert, the error in the DONE operation. */
	struct step stockout[] = {
		{ 200, OP_RUNNING },
		{ 200, "{\"name\":\"op-1\",\"status\":\"DONE\",\"httpErrorStatusCode\":503,"
		       "\"error\":{\"errors\":[{\"code\":\"ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS\","
		       "\"message\":\"A tpu7x-standard-4t VM instance is currently unavailable in the "
		       "us-central1-c zone.\"}]}}" },
	};
	script(stockout, 2);
	int rc = tpf_compute_create(cc, "f-g-0", &r, NULL, &out, &d);
	CHECK_INT(rc, TPF_ECAPACITY);
	CHECK(d.n > 0 && strstr(d.items[d.n - 1].summary, "currently unavailable"));
	CHECK_INT(srv.n, 2); /* no GET after a failed operation */
	/* Quota: HTTP 403 quotaExceeded on the insert itself. */
	struct step quota[] = {
		{ 403, "{\"error\":{\"code\":403,\"message\":\"Quota 'TPUS_PER_TPU_FAMILY' exceeded.  "
		       "Limit: 0.0 in region us-central1.\",\"errors\":[{\"reason\":\"quotaExceeded\","
		       "\"domain\":\"usageLimits\",\"message\":\"Quota exceeded\"}]}}" },
	};
	script(quota, 1);
	rc = tpf_compute_create(cc, "f-g-0", &r, NULL, &out, &d);
	CHECK_INT(rc, TPF_EQUOTA);
	CHECK(d.n > 0 && strstr(d.items[d.n - 1].summary, "TPUS_PER_TPU_FAMILY"));
	CHECK(d.n > 0 && strstr(d.items[d.n - 1].summary, "403"));
	CHECK_INT(srv.n, 1); /* a 403 is not retried */
	/* Quota inside the operation. */
	struct step opquota[] = {
		{ 200, OP_RUNNING },
		{ 200, "{\"name\":\"op-1\",\"status\":\"DONE\",\"httpErrorStatusCode\":403,"
		       "\"error\":{\"errors\":[{\"code\":\"QUOTA_EXCEEDED\",\"message\":\"Quota "
		       "'PREEMPTIBLE_TPU' exceeded.\"}]}}" },
	};
	script(opquota, 2);
	CHECK_INT(tpf_compute_create(cc, "f-g-0", &r, NULL, &out, &d), TPF_EQUOTA);
	tpf_live_node_release(&out);
	tpf_recipe_release(&r);
	tpf_diags_release(&d);
}

/* A spot VM that stopped is PREEMPTED only when a compute.instances.preempted
 * operation names it (docs/compute-engine.md "Preemption"), found in ONE
 * aggregated/operations walk; a slice's member gone by preemption too. */
static void test_compute__preemptions_told_apart(void)
{
	struct step ops[] = {
		{ 200, "{\"items\":{\"zones/us-central1-c\":{\"operations\":["
		       "{\"operationType\":\"compute.instances.preempted\",\"targetId\":\"77\","
		       "\"targetLink\":\"https://x/compute/v1/projects/p/zones/us-central1-c/instances/f-g-0\","
		       "\"insertTime\":\"2026-01-01T00:00:00.000-00:00\"},"
		       "{\"operationType\":\"compute.instances.preempted\",\"targetId\":\"78\","
		       "\"targetLink\":\"https://x/compute/v1/projects/p/zones/us-central1-c/instances/f-s-0-002\","
		       "\"insertTime\":\"2026-01-02T00:00:00.000-00:00\"},"
		       "{\"operationType\":\"compute.instances.insert\",\"targetId\":\"79\","
		       "\"insertTime\":\"2026-01-02T00:00:00.000-00:00\"}]},"
		       "\"regions/us-central1\":{\"warning\":{\"code\":\"NO_RESULTS_ON_PAGE\"}}}}" },
	};
	script(ops, 1);
	struct tpf_diags d = TPF_DIAGS_INIT;
	json_t *pre = NULL;
	CHECK_INT(tpf_compute_list_preempted(cc, &pre, &d), 0);
	CHECK_INT(srv.n, 1);
	CHECK_STR(srv.seen[0].path, "/compute/v1/projects/p/aggregated/operations");
	CHECK(json_object_get(pre, "id:77") != NULL);
	CHECK(json_object_get(pre, "id:79") == NULL); /* not a preemption */
	CHECK(json_object_get(pre, "name:us-central1-c/f-g-0") != NULL);
	struct tpf_live_node n = { 0 };
	n.id = xstrdup("77");
	n.state = xstrdup("TERMINATED");
	tpf_compute_mark_preempted(&n, NULL);
	CHECK_STR(n.state, "TERMINATED"); /* nothing says so: not a preemption */
	tpf_compute_mark_preempted(&n, pre);
	CHECK_STR(n.state, "PREEMPTED");
	xstrset(&n.id, "80");
	xstrset(&n.state, "TERMINATED");
	tpf_compute_mark_preempted(&n, pre);
	CHECK_STR(n.state, "TERMINATED"); /* another instance's preemption */
	xstrset(&n.state, "READY");
	xstrset(&n.id, "77");
	tpf_compute_mark_preempted(&n, pre);
	CHECK_STR(n.state, "READY"); /* a running VM is not lost */
	tpf_live_node_release(&n);
	/* slice f-s-0 lost member -002 to a preemption after the MIG was made */
	CHECK(tpf_compute_member_preempted(pre, "us-central1-c", "f-s-0", "2026-01-01T12:00:00Z"));
	CHECK(!tpf_compute_member_preempted(pre, "us-central1-c", "f-s-0", "2026-01-03T00:00:00Z"));
	CHECK(!tpf_compute_member_preempted(pre, "us-central1-c", "f-s", NULL)); /* not -digits */
	CHECK(!tpf_compute_member_preempted(pre, "us-east1-b", "f-s-0", NULL));
	json_decref(pre);
	tpf_diags_release(&d);
}

/* Multislice: each slice's MIG says its unit in its description; the
 * slices merge into one node, workers slice by slice; a lost slice is
 * named, and the node takes its loss. */
static void test_compute__multislice_merge(void)
{
	struct tpf_recipe r = { 0 };
	r.slices = 2;
	r.workers = 4;
	r.compute.api = TPF_API_COMPUTE;
	r.compute.machine_type = xstrdup("tpu7x-standard-4t");
	r.node.topology = xstrdup("2x2x2");
	r.zone = xstrdup("us-central1-c");
	tpf_kvlist_set(&r.labels, "tpuform-fleet", "f");
	json_t *mig = tpf_compute_mig_body("f-g-0-1", &r, "p");
	CHECK_INT(json_integer_value(json_object_get(mig, "targetSize")), 2); /* one slice's VMs */
	char *unit = NULL;
	int k = -1, n = 0;
	CHECK(tpf_compute_mig_unit(mig, &unit, &k, &n));
	CHECK_STR(unit, "f-g-0");
	CHECK_INT(k, 1);
	CHECK_INT(n, 2);
	free(unit);
	json_decref(mig);
	r.slices = 0; /* a plain slice's MIG names no unit */
	mig = tpf_compute_mig_body("f-g-0", &r, "p");
	CHECK(!tpf_compute_mig_unit(mig, &unit, &k, &n));
	json_decref(mig);
	tpf_recipe_release(&r);

	struct tpf_live_node sl[2];
	memset(sl, 0, sizeof(sl));
	const char *ips[] = { "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4" };
	for (int s = 0; s < 2; s++) {
		sl[s].name = xasprintf("f-g-0-%d", s);
		sl[s].id = xasprintf("%d", 100 + s);
		sl[s].state = xstrdup("READY");
		sl[s].recipe.workers = 2;
		sl[s].recipe.compute.api = TPF_API_COMPUTE;
		sl[s].endpoints = xcalloc(2, sizeof(*sl[s].endpoints));
		sl[s].nendpoints = 2;
		for (int w = 0; w < 2; w++)
			sl[s].endpoints[w].ip = xstrdup(ips[2 * s + w]);
	}
	struct tpf_live_node out = { 0 };
	CHECK_INT(tpf_compute_unit_merge("f-g-0", sl, 2, &out), 0);
	CHECK_STR(out.name, "f-g-0");
	CHECK_STR(out.id, "100");
	CHECK_STR(out.state, "READY");
	CHECK(out.lost_slices == NULL);
	CHECK_INT(out.recipe.slices, 2);
	CHECK_INT(out.recipe.workers, 4);
	CHECK_STR(out.nendpoints == 4 ? out.endpoints[2].ip : NULL, "10.0.0.3"); /* slice 1 worker 0 */
	xstrset(&sl[1].state, "PREEMPTED");
	CHECK_INT(tpf_compute_unit_merge("f-g-0", sl, 2, &out), 0);
	CHECK_STR(out.state, "PREEMPTED");
	CHECK_STR(out.lost_slices, "1");
	tpf_live_node_release(&sl[0]); /* slice 0 gone, slice 1 lost */
	CHECK_INT(tpf_compute_unit_merge("f-g-0", sl, 2, &out), 0);
	CHECK_STR(out.lost_slices, "0,1");
	CHECK_STR(out.id, "101");
	tpf_live_node_release(&sl[1]);
	CHECK_INT(tpf_compute_unit_merge("f-g-0", sl, 2, &out), -1);
	tpf_live_node_release(&out);
}

static void test_compute__list_and_states(void)
{
	struct step pages[] = {
		{ 200, "{\"items\":[{\"name\":\"other-a-0\",\"status\":\"RUNNING\","
		       "\"labels\":{\"tpuform-fleet\":\"other\"}},"
		       "{\"name\":\"f-g-0\",\"id\":\"77\",\"status\":\"TERMINATED\","
		       "\"zone\":\"zones/us-central1-c\","
		       "\"machineType\":\"zones/us-central1-c/machineTypes/ct6e-standard-4t\","
		       "\"scheduling\":{\"provisioningModel\":\"SPOT\",\"preemptible\":true},"
		       "\"labels\":{\"tpuform-fleet\":\"f\"}}],\"nextPageToken\":\"t2\"}" },
		{ 200, "{\"items\":[{\"name\":\"f-g-1\",\"status\":\"PENDING\","
		       "\"machineType\":\"zones/us-central1-c/machineTypes/ct6e-standard-4t\","
		       "\"labels\":{\"tpuform-fleet\":\"f\"}},{\"name\":\"nolabel\"}]}" },
	};
	script(pages, 2);
	struct tpf_live_set set = { 0 };
	struct tpf_diags d = TPF_DIAGS_INIT;
	/* a preemption operation names f-g-0 (id 77) */
	json_t *pre = json_pack("{s:s}", "id:77", "2026-01-01T00:00:00Z");
	CHECK_INT(tpf_compute_list(cc, "us-central1-c", "f", pre, &set, NULL, &d), 0);
	json_decref(pre);
	CHECK_INT(srv.n, 2);
	CHECK_STR(srv.seen[0].path, "/compute/v1/projects/p/zones/us-central1-c/instances");
	CHECK_STR(srv.seen[1].page_token, "t2");
	CHECK_INT(set.n, 2);
	struct tpf_live_node *a = tpf_live_set_find(&set, "f-g-0");
	struct tpf_live_node *b = tpf_live_set_find(&set, "f-g-1");
	CHECK_STR(a ? a->state : NULL, "PREEMPTED");
	CHECK_STR(b ? b->state : NULL, "CREATING");
	CHECK_STR(b ? b->recipe.node.topology : NULL, "2x2");
	CHECK(tpf_live_set_find(&set, "other-a-0") == NULL);
	tpf_live_set_release(&set);
	/* a zone the project cannot use: recorded, not a failure */
	struct step gone[] = { { 404, "{\"error\":{\"code\":404,\"message\":\"The resource "
				      "'projects/p/zones/xx-1-a' was not found\"}}" } };
	script(gone, 1);
	memset(&set, 0, sizeof(set));
	CHECK_INT(tpf_compute_list(cc, "xx-1-a", "f", NULL, &set, NULL, &d), 0);
	CHECK(tpf_live_set_zone_unlisted(&set, "xx-1-a"));
	tpf_live_set_release(&set);
	tpf_diags_release(&d);
	static const struct {
		const char *status;
		int spot;
		const char *state;
	} map[] = {
		{ "PROVISIONING", 0, "CREATING" }, { "STAGING", 1, "CREATING" },
		{ "RUNNING", 1, "READY" },         { "STOPPING", 1, "PREEMPTED" },
		{ "STOPPING", 0, "STOPPING" },     { "TERMINATED", 0, "TERMINATED" },
		{ "STOPPED", 1, "PREEMPTED" },     { "SUSPENDED", 0, "STOPPED" },
		{ "REPAIRING", 0, "REPAIRING" },   { "DEPROVISIONING", 1, "DELETING" },
		{ "WHATEVER", 0, "WHATEVER" },     { NULL, 0, "STATE_UNSPECIFIED" },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		CHECK_STR(tpf_compute_state(map[i].status, map[i].spot), map[i].state);
}

static int add_key(json_t *items, void *ctx)
{
	json_object_set_new(items, "ssh-keys", json_string((const char *)ctx));
	return 1;
}

static void test_compute__metadata_fingerprint_and_delete(void)
{
	struct step steps[] = {
		{ 200, "{\"name\":\"f-g-0\",\"metadata\":{\"fingerprint\":\"fp1\",\"items\":"
		       "[{\"key\":\"role\",\"value\":\"x\"}]}}" },
		{ 412, "{\"error\":{\"code\":412,\"message\":\"Supplied fingerprint does not match "
		       "current metadata fingerprint.\",\"errors\":[{\"reason\":\"conditionNotMet\"}]}}" },
		{ 200, "{\"name\":\"f-g-0\",\"metadata\":{\"fingerprint\":\"fp2\",\"items\":"
		       "[{\"key\":\"role\",\"value\":\"y\"}]}}" },
		{ 200, OP_DONE },
	};
	script(steps, 4);
	struct tpf_diags d = TPF_DIAGS_INIT;
	int rc = tpf_compute_edit_metadata(cc, "us-central1-c", "f-g-0", add_key,
					   "me:ssh-ed25519 AAAA me", &d);
	CHECKF(rc == 0, "written: %s", d.n ? d.items[0].summary : "");
	CHECK_INT(srv.n, 4);
	CHECK_STR(srv.seen[1].path,
		  "/compute/v1/projects/p/zones/us-central1-c/instances/f-g-0/setMetadata");
	json_t *b = json_loads(srv.seen[3].body, 0, NULL);
	CHECK_STR(json_string_value(json_object_get(b, "fingerprint")), "fp2");
	/* the second write keeps what the other writer set */
	CHECK(strstr(srv.seen[3].body, "\"y\"") && strstr(srv.seen[3].body, "ssh-keys"));
	json_decref(b);
	CHECK_INT(d.n, 0); /* a 412 that a re-read fixes is no error */
	/* delete: an instance already gone is success */
	struct step del[] = { { 404, "{\"error\":{\"code\":404,\"message\":\"not found\"}}" } };
	script(del, 1);
	CHECK_INT(tpf_compute_delete(cc, "us-central1-c", "f-g-0", NULL, &d), 0);
	CHECK_STR(srv.seen[0].method, "DELETE");
	/* host keys */
	struct step hk[] = {
		{ 200, "{\"kind\":\"compute#guestAttributes\",\"queryPath\":\"hostkeys/\","
		       "\"queryValue\":{\"items\":[{\"namespace\":\"hostkeys\",\"key\":\"ssh-ed25519\","
		       "\"value\":\"AAAAC3Nz\"}]}}" },
	};
	script(hk, 1);
	json_t *keys = NULL;
	CHECK_INT(tpf_compute_host_keys(cc, "us-central1-c", "f-g-0", &keys, &d), 0);
	CHECK_STR(srv.seen[0].query_path, "hostkeys/");
	CHECK_STR(json_string_value(json_array_get(keys, 0)), "ssh-ed25519 AAAAC3Nz");
	json_decref(keys);
	struct step none[] = { { 404, "{\"error\":{\"code\":404,\"message\":\"The resource "
				      "'hostkeys/' of type 'Guest Attribute' was not found.\"}}" } };
	script(none, 1);
	CHECK_INT(tpf_compute_host_keys(cc, "us-central1-c", "f-g-0", &keys, &d), 0);
	CHECK_INT(json_array_size(keys), 0);
	json_decref(keys);
	tpf_diags_release(&d);
}

static void test_compute__slice_create_and_delete(void)
{
	struct tpf_recipe r;
	recipe_spot(&r);
	r.workers = 2;
	xstrset(&r.node.topology, "2x2x2");
	tpf_kvlist_set(&r.labels, "tpuform-group", "g");
	struct step steps[] = {
		{ 200, OP_RUNNING }, { 200, OP_DONE }, /* template */
		{ 200, OP_RUNNING }, { 200, OP_DONE }, /* workload policy */
		{ 200, OP_RUNNING }, { 200, OP_DONE }, /* MIG */
	};
	script(steps, 6);
	struct tpf_diags d = TPF_DIAGS_INIT;
	unsigned ours = 0;
	int rc = tpf_compute_create_slice(cc, "f-g-0", &r, NULL, &ours, &d);
	CHECKF(rc == 0, "created: %s", d.n ? d.items[0].summary : "");
	CHECK_INT(srv.n, 6);
	CHECK_STR(srv.seen[0].path, "/compute/v1/projects/p/global/instanceTemplates");
	CHECK_STR(srv.seen[2].path, "/compute/v1/projects/p/regions/us-central1/resourcePolicies");
	CHECK_STR(srv.seen[4].path,
		  "/compute/v1/projects/p/zones/us-central1-c/instanceGroupManagers");
	CHECK(srv.seen[0].request_id[0] && srv.seen[2].request_id[0] && srv.seen[4].request_id[0]);
	json_t *t = json_loads(srv.seen[0].body, 0, NULL), *props = json_object_get(t, "properties");
	CHECK_STR(json_string_value(json_object_get(t, "name")), "f-g-0-t");
	CHECK_STR(json_string_value(json_object_get(props, "machineType")), "tpu7x-standard-4t");
	CHECK(json_object_get(props, "name") == NULL);
	CHECK_STR(json_string_value(json_object_get(json_object_get(props, "labels"), "tpuform-slice")),
		  "f-g-0");
	json_decref(t);
	json_t *wp = json_loads(srv.seen[2].body, 0, NULL);
	CHECK_STR(json_string_value(json_object_get(wp, "name")), "f-g-0-wp");
	CHECK_STR(json_string_value(json_object_get(json_object_get(wp, "workloadPolicy"), "type")),
		  "HIGH_THROUGHPUT");
	CHECK_STR(json_string_value(json_object_get(json_object_get(wp, "workloadPolicy"),
						    "acceleratorTopology")),
		  "2x2x2");
	CHECK_INT(ours, TPF_SLICE_ALL);
	/* a resource policy has no labels: its description records the lineage */
	json_t *wdesc = json_loads(json_string_value(json_object_get(wp, "description")), 0, NULL);
	CHECK_STR(json_string_value(json_object_get(wdesc, "tpuform-lineage")), "0123456789abcdef");
	json_decref(wdesc);
	json_decref(wp);
	json_t *m = json_loads(srv.seen[4].body, 0, NULL);
	CHECK_STR(json_string_value(json_object_get(m, "name")), "f-g-0");
	CHECK_INT(json_integer_value(json_object_get(m, "targetSize")), 2);
	CHECK_STR(json_string_value(json_object_get(m, "baseInstanceName")), "f-g-0-###");
	CHECK_STR(json_string_value(json_object_get(m, "instanceTemplate")),
		  "projects/p/global/instanceTemplates/f-g-0-t");
	CHECK_STR(json_string_value(json_object_get(json_object_get(m, "resourcePolicies"),
						    "workloadPolicy")),
		  "projects/p/regions/us-central1/resourcePolicies/f-g-0-wp");
	CHECK_STR(json_string_value(json_object_get(json_object_get(m, "targetSizePolicy"), "mode")),
		  "BULK");
	CHECK_STR(json_string_value(json_object_get(json_object_get(m, "instanceLifecyclePolicy"),
						    "defaultActionOnFailure")),
		  "DO_NOTHING");
	CHECK_STR(json_string_value(json_object_get(json_object_get(m, "updatePolicy"), "type")),
		  "OPPORTUNISTIC");
	/* the description names the fleet and lineage: MIGs have no labels */
	json_t *desc = json_loads(json_string_value(json_object_get(m, "description")), 0, NULL);
	CHECK_STR(json_string_value(json_object_get(desc, "tpuform-lineage")), "0123456789abcdef");
	CHECK_STR(json_string_value(json_object_get(desc, "topology")), "2x2x2");
	json_decref(desc);
	/* Ready: stable, both members RUNNING, the topology ACTIVE; workers in name order. */
	struct tpf_live_node mem[2] = { { 0 } }, out = { 0 };
	const char *names[2] = { "f-g-0-002", "f-g-0-001" }, *ips[2] = { "10.0.0.3", "10.0.0.2" };
	for (int i = 0; i < 2; i++) {
		mem[i].name = xstrdup(names[i]);
		mem[i].state = xstrdup("READY");
		mem[i].recipe.spot = 1;
		mem[i].recipe.compute.api = TPF_API_COMPUTE;
		mem[i].recipe.compute.machine_type = xstrdup("tpu7x-standard-4t");
		mem[i].endpoints = xcalloc(1, sizeof(*mem[i].endpoints));
		mem[i].nendpoints = 1;
		mem[i].endpoints[0].ip = xstrdup(ips[i]);
	}
	json_object_set_new(m, "status", json_pack("{s:b, s:[{s:s, s:s}]}", "isStable", 1,
						   "appliedAcceleratorTopologies",
						   "acceleratorTopology", "2x2x2", "state", "ACTIVE"));
	CHECK_INT(tpf_compute_slice_parse(m, "us-central1-c", mem, 2, &out), 0);
	CHECK_STR(out.state, "READY");
	CHECK_INT(out.recipe.workers, 2);
	CHECK_STR(out.recipe.node.topology, "2x2x2");
	CHECK_STR(tpf_kvlist_get(&out.recipe.labels, "tpuform-lineage"), "0123456789abcdef");
	CHECK(tpf_kvlist_get(&out.recipe.labels, "tpuform-slice") == NULL);
	CHECK_STR(out.nendpoints == 2 ? out.endpoints[0].ip : NULL, "10.0.0.2"); /* -001 first */
	CHECK(out.maintenance == NULL); /* no member has a window */
	/* a member's maintenance window is the slice's; the one starting first wins */
	mem[0].maintenance = xstrdup("SCHEDULED maintenance PENDING, window later");
	mem[0].maintenance_start = xstrdup("2026-12-02T10:00:00Z");
	mem[1].maintenance = xstrdup("SCHEDULED maintenance PENDING, window sooner");
	mem[1].maintenance_start = xstrdup("2026-12-01T10:00:00Z");
	CHECK_INT(tpf_compute_slice_parse(m, "us-central1-c", mem, 2, &out), 0);
	CHECK_STR(out.maintenance, "f-g-0-002: SCHEDULED maintenance PENDING, window sooner");
	CHECK_STR(out.maintenance_start, "2026-12-01T10:00:00Z");
	xstrset(&mem[0].maintenance, NULL);
	xstrset(&mem[0].maintenance_start, NULL);
	xstrset(&mem[1].maintenance, NULL);
	xstrset(&mem[1].maintenance_start, NULL);
	/* a member preempted: the slice is lost */
	xstrset(&mem[1].state, "PREEMPTED");
	CHECK_INT(tpf_compute_slice_parse(m, "us-central1-c", mem, 2, &out), 0);
	CHECK_STR(out.state, "PREEMPTED");
	/* a member lost otherwise (no preemption operation): terminated */
	xstrset(&mem[1].state, "TERMINATED");
	CHECK_INT(tpf_compute_slice_parse(m, "us-central1-c", mem, 2, &out), 0);
	CHECK_STR(out.state, "TERMINATED");
	/* one member missing once the MIG is stable (DO_NOTHING): lost too;
	 * the provider calls it preempted when an operation says so
	 * (tpf_compute_member_preempted) */
	xstrset(&mem[1].state, "READY");
	CHECK_INT(tpf_compute_slice_parse(m, "us-central1-c", mem, 1, &out), 0);
	CHECK_STR(out.state, "TERMINATED");
	/* BULK waiting for capacity: no member yet */
	json_object_set_new(m, "status", json_pack("{s:b, s:{s:b}}", "isStable", 0,
						   "bulkInstanceOperation", "inProgress", 1));
	CHECK_INT(tpf_compute_slice_parse(m, "us-central1-c", NULL, 0, &out), 0);
	CHECK_STR(out.state, "CREATING");
	/* with no member, what the description recorded: no change planned */
	CHECK_STR(out.recipe.compute.machine_type, "tpu7x-standard-4t");
	CHECK_INT(out.capacity_wait, 0); /* not flex-start: just creating */
	/* a flex-start slice with no member waits for capacity */
	json_t *fdesc = json_loads(json_string_value(json_object_get(m, "description")), 0, NULL);
	json_object_set_new(fdesc, "flex_start", json_true());
	json_object_set_new(fdesc, "max_run_duration", json_integer(86400));
	char *ds = json_dumps(fdesc, JSON_COMPACT);
	json_object_set_new(m, "description", json_string(ds));
	free(ds);
	CHECK_INT(tpf_compute_slice_parse(m, "us-central1-c", NULL, 0, &out), 0);
	CHECK_INT(out.capacity_wait, 1);
	CHECK_INT(out.recipe.compute.flex_start, 1);
	CHECK_INT(out.recipe.compute.max_run_duration, 86400);
	json_decref(fdesc);
	/* a MIG that is not tpuform's */
	json_object_set_new(m, "description", json_string("made by hand"));
	CHECK_INT(tpf_compute_slice_parse(m, "us-central1-c", NULL, 0, &out), -1);
	for (int i = 0; i < 2; i++)
		tpf_live_node_release(&mem[i]);
	tpf_live_node_release(&out);
	json_decref(m);
	/* delete: MIG, template, policy; parts already gone are skipped */
	struct step del[] = {
		{ 200, OP_RUNNING }, { 200, OP_DONE },
		{ 404, "{\"error\":{\"code\":404,\"message\":\"not found\"}}" },
		{ 200, OP_RUNNING }, { 200, OP_DONE },
	};
	script(del, 5);
	CHECK_INT(tpf_compute_delete_slice(cc, "us-central1-c", "f-g-0", TPF_SLICE_ALL, NULL, &d), 0);
	CHECK_INT(srv.n, 5);
	CHECK_STR(srv.seen[0].path,
		  "/compute/v1/projects/p/zones/us-central1-c/instanceGroupManagers/f-g-0");
	CHECK_STR(srv.seen[2].path, "/compute/v1/projects/p/global/instanceTemplates/f-g-0-t");
	CHECK_STR(srv.seen[3].path,
		  "/compute/v1/projects/p/regions/us-central1/resourcePolicies/f-g-0-wp");
	CHECK_INT(d.n, 0);
	tpf_recipe_release(&r);
	tpf_diags_release(&d);
}

#define NOT_FOUND "{\"error\":{\"code\":404,\"message\":\"not found\"}}"
#define CONFLICT                                                                          \
	"{\"error\":{\"code\":409,\"message\":\"The resource 'projects/p/global/"          \
	"instanceTemplates/f-g-0-t' already exists\",\"errors\":[{\"reason\":\"alreadyExists\"}]}}"
#define OTHER_INSTANCE                                                                    \
	"{\"name\":\"f-g-0\",\"id\":\"999\",\"status\":\"RUNNING\","                     \
	"\"labels\":{\"tpuform-fleet\":\"f\",\"tpuform-lineage\":\"fedcba9876543210\"}}"
#define TEMPLATE_OF(lin)                                                                  \
	"{\"name\":\"f-g-0-t\",\"id\":\"7\",\"properties\":{\"labels\":"                 \
	"{\"tpuform-fleet\":\"f\",\"tpuform-lineage\":\"" lin "\"}}}"
#define MIG_OF(lin)                                                                       \
	"{\"name\":\"f-g-0\",\"id\":\"55\",\"description\":\"{\\\"tpuform-fleet\\\":\\\"f\\\"," \
	"\\\"tpuform-lineage\\\":\\\"" lin "\\\"}\",\"resourcePolicies\":{\"workloadPolicy\":"  \
	"\"projects/p/regions/us-central1/resourcePolicies/f-g-0-wp\"}}"

static int count_method(const char *method)
{
	int n = 0;
	for (int i = 0; i < srv.n; i++)
		n += !strcmp(srv.seen[i].method, method);
	return n;
}

/* Ownership at delete time (providers/provider.h tpf_delete_check): each
 * resource is read just before its delete, and only this state's goes. */
static void test_compute__delete_checks_ownership(void)
{
	struct tpf_delete_guard mine = { "0123456789abcdef", "123", NULL, NULL, NULL };
	struct tpf_diags d = TPF_DIAGS_INIT;
	/* an instance another state made under the name: read, not deleted */
	struct step other[] = { { 200, OTHER_INSTANCE } };
	script(other, 1);
	CHECK_INT(tpf_compute_delete(cc, "us-central1-c", "f-g-0", &mine, &d), TPF_EFOREIGN);
	CHECK_INT(srv.n, 1);
	CHECK_STR(srv.seen[0].method, "GET");
	CHECK(d.n == 1 && strstr(d.items[0].summary, "refusing to delete instance 'f-g-0' in zone "
					     "'us-central1-c': it belongs to another state: it "
					     "carries tpuform-lineage=fedcba9876543210, and this "
					     "state's is 0123456789abcdef"));
	tpf_diags_release(&d);
	/* ours: read, then deleted */
	struct step own[] = { { 200, INSTANCE }, { 200, OP_RUNNING }, { 200, OP_DONE } };
	script(own, 3);
	CHECK_INT(tpf_compute_delete(cc, "us-central1-c", "f-g-0", &mine, &d), 0);
	CHECK_INT(srv.n, 3);
	CHECK_STR(srv.seen[1].method, "DELETE");
	/* gone already: one read, no delete */
	struct step gone[] = { { 404, NOT_FOUND } };
	script(gone, 1);
	CHECK_INT(tpf_compute_delete(cc, "us-central1-c", "f-g-0", &mine, &d), 0);
	CHECK_INT(count_method("DELETE"), 0);
	CHECK_INT(d.n, 0);
	/* a slice whose MIG is another state's: nothing of it is deleted */
	struct step omig[] = { { 200, MIG_OF("fedcba9876543210") } };
	script(omig, 1);
	CHECK_INT(tpf_compute_delete_slice(cc, "us-central1-c", "f-g-0", TPF_SLICE_ALL, &mine, &d),
		  TPF_EFOREIGN);
	CHECK_INT(srv.n, 1);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "refusing to delete slice 'f-g-0'"));
	tpf_diags_release(&d);
	/* our MIG goes; a template another state made under our name is left
	 * (a warning); a policy without a lineage, which our MIG named (made
	 * before policies carried one), goes */
	struct step mix[] = {
		{ 200, MIG_OF("0123456789abcdef") }, { 200, OP_RUNNING }, { 200, OP_DONE },
		{ 200, TEMPLATE_OF("fedcba9876543210") },
		{ 200, "{\"name\":\"f-g-0-wp\",\"id\":\"8\"}" }, { 200, OP_RUNNING }, { 200, OP_DONE },
	};
	script(mix, 7);
	CHECK_INT(tpf_compute_delete_slice(cc, "us-central1-c", "f-g-0", TPF_SLICE_ALL, &mine, &d), 0);
	CHECK_INT(srv.n, 7);
	CHECK_STR(srv.seen[1].method, "DELETE");
	CHECK_STR(srv.seen[1].path,
		  "/compute/v1/projects/p/zones/us-central1-c/instanceGroupManagers/f-g-0");
	CHECK_STR(srv.seen[3].method, "GET");
	CHECK_STR(srv.seen[5].method, "DELETE");
	CHECK_STR(srv.seen[5].path,
		  "/compute/v1/projects/p/regions/us-central1/resourcePolicies/f-g-0-wp");
	CHECK_INT(count_method("DELETE"), 2);
	CHECK(d.n == 1 && d.items[0].severity == TPF_SEV_WARNING &&
	      strstr(d.items[0].summary, "instance template 'f-g-0-t'") &&
	      strstr(d.items[0].summary, "it is left as it is"));
	CHECK_INT(tpf_diags_errors(&d), 0);
	tpf_diags_release(&d);
}

/* A slice create whose part names are taken (409): another state's part is
 * refused and nothing is reported ours; our own (a crashed apply's) is
 * reused. */
static void test_compute__slice_create_existing_parts(void)
{
	struct tpf_recipe r;
	recipe_spot(&r);
	r.workers = 2;
	xstrset(&r.node.topology, "2x2x2");
	struct tpf_diags d = TPF_DIAGS_INIT;
	unsigned ours = 99;
	struct step foreign[] = { { 409, CONFLICT }, { 200, TEMPLATE_OF("fedcba9876543210") } };
	script(foreign, 2);
	CHECK_INT(tpf_compute_create_slice(cc, "f-g-0", &r, NULL, &ours, &d), TPF_EFOREIGN);
	CHECK_INT(ours, 0);
	CHECK_INT(srv.n, 2);
	CHECK_STR(srv.seen[1].path, "/compute/v1/projects/p/global/instanceTemplates/f-g-0-t");
	CHECK(d.n == 1 && strstr(d.items[0].summary, "its instance template 'f-g-0-t' already "
					     "exists and is not this state's: it carries "
					     "tpuform-lineage=fedcba9876543210"));
	CHECK(d.n == 1 && d.items[0].detail && strstr(d.items[0].detail, "neither reuses nor deletes"));
	tpf_diags_release(&d);
	struct step own[] = {
		{ 409, CONFLICT }, { 200, TEMPLATE_OF("0123456789abcdef") },
		{ 200, OP_RUNNING }, { 200, OP_DONE }, /* workload policy */
		{ 200, OP_RUNNING }, { 200, OP_DONE }, /* MIG */
	};
	script(own, 6);
	int rc = tpf_compute_create_slice(cc, "f-g-0", &r, NULL, &ours, &d);
	CHECKF(rc == 0, "reused: %s", d.n ? d.items[0].summary : "");
	CHECK_INT(ours, TPF_SLICE_ALL);
	CHECK_INT(srv.n, 6);
	CHECK_INT(d.n, 0);
	tpf_diags_release(&d);
	tpf_recipe_release(&r);
}

#define TPU_OP_DONE "{\"name\":\"projects/p/locations/z1/operations/op-q\",\"done\":true}"
#define TPU_NODE_OF(lineage)                                                              \
	"{\"name\":\"projects/p/locations/z1/nodes/f-g-0\",\"state\":\"READY\","          \
	"\"acceleratorType\":\"v4-8\",\"labels\":{\"tpuform-fleet\":\"f\","                \
	"\"tpuform-lineage\":\"" lineage "\"}}"

/* The queued resource goes (force=true), and a node is still found under
 * its name: another state's is left, this state's is deleted. */
static void test_compute__queued_delete_checks_leftover_node(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct step other[] = { { 200, TPU_OP_DONE }, { 404, NOT_FOUND },
				{ 200, TPU_NODE_OF("fedcba9876543210") } };
	script(other, 3);
	CHECK_INT(tpf_gcp_delete_qr(client, "z1", "f-g-0", "f-g-0", "0123456789abcdef", &d),
		  TPF_EFOREIGN);
	CHECK_INT(srv.n, 3);
	CHECK_INT(count_method("DELETE"), 1); /* the queued resource's only */
	CHECK_STR(srv.seen[0].path, "/v2/projects/p/locations/z1/queuedResources/f-g-0");
	CHECK(d.n == 1 && strstr(d.items[0].summary, "refusing to delete node 'f-g-0'"));
	tpf_diags_release(&d);
	struct step own[] = { { 200, TPU_OP_DONE }, { 404, NOT_FOUND },
			      { 200, TPU_NODE_OF("0123456789abcdef") }, { 200, TPU_OP_DONE },
			      { 404, NOT_FOUND } };
	script(own, 5);
	CHECK_INT(tpf_gcp_delete_qr(client, "z1", "f-g-0", "f-g-0", "0123456789abcdef", &d), 0);
	CHECK_INT(count_method("DELETE"), 2);
	CHECK_STR(srv.seen[3].path, "/v2/projects/p/locations/z1/nodes/f-g-0");
	CHECK_INT(d.n, 0);
	tpf_diags_release(&d);
}

int main(void)
{
	server_start();
	setenv("TPUFORM_ACCESS_TOKEN", "test-static-token", 1);
	setenv("TPUFORM_COMPUTE_ENDPOINT", srv.url, 1);
	setenv("TPUFORM_GCP_TRIES", "2", 1);
	setenv("TPUFORM_GCP_RETRY_BASE", "0.01", 1);
	setenv("TPUFORM_GCP_RETRY_CAP", "0.01", 1);
	struct tpf_gcp_client_config cfg = { .project = "p", .endpoint = srv.url,
					     .external_ips = 1, .ssh_port = 22 };
	struct tpf_diags d = TPF_DIAGS_INIT;
	int ok = tpf_gcp_client_open(&client, &cfg, &d) == 0 &&
		 tpf_compute_client_open(&cc, client, &d) == 0;
	CHECKF(ok, "client: %s", d.n ? d.items[0].summary : "");
	tpf_diags_release(&d);
	if (ok) {
		RUN(test_compute__create_spot);
		RUN(test_compute__flex_and_reservation_bodies);
		RUN(test_compute__create_failures);
		RUN(test_compute__preemptions_told_apart);
	RUN(test_compute__multislice_merge);
	RUN(test_compute__list_and_states);
		RUN(test_compute__metadata_fingerprint_and_delete);
		RUN(test_compute__slice_create_and_delete);
		RUN(test_compute__delete_checks_ownership);
		RUN(test_compute__queued_delete_checks_leftover_node);
		RUN(test_compute__slice_create_existing_parts);
	}
	tpf_compute_client_free(cc);
	tpf_gcp_client_free(client);
	MHD_stop_daemon(srv.daemon);
	return unit_done();
}
