/*
 * The Cloud TPU client end to end against the emulator (tests/fakegcp,
 * tests/fakegcp/README.md): node lifecycle, refresh, pagination, quota,
 * capacity, preemption, labels, injected faults, a create whose answer is
 * lost, the three OAuth2 flows, token refresh, and no secret in any
 * diagnostic.
 *
 * Each test starts its own emulator (fork/exec with --port-file) so that
 * limits and logs do not leak between tests. Without a built emulator the
 * whole file is skipped (TAP "# SKIP").
 */
#include "providers/gcp/gcp.h"
#include "providers/gcp/tpu/gcp_api.h"
#include "google/gcp_auth.h"
#include "google/gcp_http.h"
#include "providers/provider.h"
#include "tests/unit/unit.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROJECT "test-project"

static char *fakegcp_bin, *discovery, *tmpdir;

/* Every diagnostic any test produced, and every secret any test saw: the
 * last test checks that none of the second appear in the first. */
static struct tpf_diags all_diags = TPF_DIAGS_INIT;
static char *secrets[64];
static size_t nsecrets;

static void remember_secret(const char *s)
{
	if (s && *s && nsecrets < sizeof(secrets) / sizeof(secrets[0]))
		secrets[nsecrets++] = xstrdup(s);
}

static void keep_diags(struct tpf_diags *d)
{
	tpf_diags_move(&all_diags, d);
}

/* "summary | detail" of every diagnostic, for messages. */
static char *diag_text(const struct tpf_diags *d)
{
	struct tpf_buf b = TPF_BUF_INIT;
	for (size_t i = 0; i < d->n; i++)
		tpf_buf_addf(&b, "%s%s%s%s", i ? " || " : "", d->items[i].summary,
			     d->items[i].detail ? " | " : "",
			     d->items[i].detail ? d->items[i].detail : "");
	return tpf_buf_detach(&b, NULL);
}

static int diags_have(const struct tpf_diags *d, const char *needle)
{
	char *t = diag_text(d);
	int r = strstr(t, needle) != NULL;
	free(t);
	return r;
}

/* ---- the emulator ---- */

struct emu {
	pid_t pid;
	int port;
	char base[64];
	char *dir;
};

static int exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

static void find_fakegcp(void)
{
	const char *env = getenv("FAKEGCP");
	if (env && *env && exists(env)) {
		fakegcp_bin = xstrdup(env);
	} else {
		char exe[4096];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n > 0) {
			exe[n] = '\0';
			char *p = xasprintf("%s/../fakegcp/fakegcp", dirname(exe));
			if (exists(p))
				fakegcp_bin = p;
			else
				free(p);
		}
		if (!fakegcp_bin && exists("tests/fakegcp/fakegcp"))
			fakegcp_bin = xstrdup("tests/fakegcp/fakegcp");
	}
	if (fakegcp_bin) {
		char *copy = xstrdup(fakegcp_bin);
		char *p = xasprintf("%s/tpu.v2.discovery.json", dirname(copy));
		free(copy);
		if (exists(p))
			discovery = p;
		else
			free(p);
	}
}

/* Start the emulator with extra arguments (NULL-terminated). */
static int emu_start(struct emu *e, const char *const *extra)
{
	static int seq;
	memset(e, 0, sizeof(*e));
	e->dir = xasprintf("%s/emu%d", tmpdir, ++seq);
	mkdir(e->dir, 0700);
	char *port_file = xasprintf("%s/port", e->dir);
	char *log = xasprintf("%s/stderr", e->dir);
	const char *argv[64];
	size_t n = 0;
	argv[n++] = fakegcp_bin;
	argv[n++] = "--port-file";
	argv[n++] = port_file;
	argv[n++] = "--project";
	argv[n++] = PROJECT;
	if (discovery) {
		argv[n++] = "--discovery";
		argv[n++] = discovery;
	}
	for (size_t i = 0; extra && extra[i] && n < 62; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	fflush(stdout);
	e->pid = fork();
	if (e->pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(fakegcp_bin, (char *const *)argv);
		_exit(127);
	}
	int rc = -1;
	for (int i = 0; i < 500 && e->pid > 0; i++) {
		FILE *f = fopen(port_file, "r");
		if (f) {
			if (fscanf(f, "%d", &e->port) == 1 && e->port > 0)
				rc = 0;
			fclose(f);
		}
		if (rc == 0)
			break;
		if (waitpid(e->pid, NULL, WNOHANG) == e->pid) {
			e->pid = 0;
			break;
		}
		tpf_sleep(0.01);
	}
	snprintf(e->base, sizeof(e->base), "http://127.0.0.1:%d", e->port);
	if (rc < 0)
		printf("# fakegcp did not start; see %s\n", log);
	free(port_file);
	free(log);
	return rc;
}

static size_t sink(char *p, size_t s, size_t n, void *u)
{
	tpf_buf_add(u, p, s * n);
	return s * n;
}

/* An admin (or any) request to the emulator; the parsed JSON answer or NULL. */
static json_t *emu_call(struct emu *e, const char *method, const char *path)
{
	struct tpf_buf b = TPF_BUF_INIT;
	CURL *c = curl_easy_init();
	char *url = xasprintf("%s%s", e->base, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (!strcmp(method, "POST"))
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	CURLcode r = curl_easy_perform(c);
	json_t *j = r == CURLE_OK ? json_loadb(b.buf, b.len, JSON_DECODE_ANY, NULL) : NULL;
	curl_easy_cleanup(c);
	free(url);
	tpf_buf_release(&b);
	return j;
}

static void emu_stop(struct emu *e)
{
	if (e->pid > 0) {
		json_decref(emu_call(e, "POST", "/__admin/shutdown"));
		int done = 0;
		for (int i = 0; i < 300 && !done; i++) {
			done = waitpid(e->pid, NULL, WNOHANG) == e->pid;
			if (!done)
				tpf_sleep(0.01);
		}
		if (!done) {
			kill(e->pid, SIGKILL);
			waitpid(e->pid, NULL, 0);
		}
	}
	free(e->dir);
	memset(e, 0, sizeof(*e));
}

/* Entries of the request log whose method is `method` and whose path
 * contains `path_part` (and query contains query_part, when given). */
static int count_requests(struct emu *e, const char *method, const char *path_part,
			  const char *query_part, long status)
{
	json_t *log = emu_call(e, "GET", "/__admin/requests");
	size_t i;
	json_t *it;
	int n = 0;
	json_array_foreach(log, i, it) {
		const char *m = json_string_value(json_object_get(it, "method"));
		const char *p = json_string_value(json_object_get(it, "path"));
		const char *q = json_string_value(json_object_get(it, "query"));
		long st = (long)json_integer_value(json_object_get(it, "status"));
		if (m && p && !strcmp(m, method) && strstr(p, path_part) &&
		    (!query_part || (q && strstr(q, query_part))) && (!status || st == status))
			n++;
	}
	json_decref(log);
	return n;
}

static int count_faults(struct emu *e)
{
	json_t *log = emu_call(e, "GET", "/__admin/requests");
	size_t i;
	json_t *it;
	int n = 0;
	json_array_foreach(log, i, it)
		n += json_is_string(json_object_get(it, "fault"));
	json_decref(log);
	return n;
}

/* How many nodes the emulator holds named `name` (any zone); -1 on error. */
static int emu_node_count(struct emu *e, const char *name)
{
	json_t *nodes = emu_call(e, "GET", "/__admin/nodes");
	if (!json_is_array(nodes)) {
		json_decref(nodes);
		return -1;
	}
	size_t i;
	json_t *it;
	int n = 0;
	json_array_foreach(nodes, i, it) {
		const char *full = json_string_value(json_object_get(it, "name"));
		const char *s = full ? strrchr(full, '/') : NULL;
		n += s && !strcmp(s + 1, name);
	}
	json_decref(nodes);
	return n;
}

/* ---- client helpers ---- */

static struct tpf_gcp_client *open_client(struct emu *e, const char *credentials,
					  struct tpf_diags *d)
{
	struct tpf_gcp_client_config cfg = {
		.project = PROJECT, .endpoint = e->base, .credentials = credentials, .ssh_port = 22,
	};
	struct tpf_gcp_client *c = NULL;
	if (tpf_gcp_client_open(&c, &cfg, d) < 0)
		return NULL;
	return c;
}

static void make_recipe(struct tpf_recipe *r, const char *fleet, const char *group, int index,
			const char *zone, const char *type, const char *sched)
{
	memset(r, 0, sizeof(*r));
	r->accelerator_type = xstrdup(type);
	r->runtime_version = xstrdup("tpu-ubuntu2204-base");
	r->zone = xstrdup(zone);
	r->preemptible = !strcmp(sched, "preemptible");
	r->spot = !strcmp(sched, "spot");
	r->workers = 1;
	if (fleet) {
		char idx[16];
		snprintf(idx, sizeof(idx), "%d", index);
		tpf_kvlist_set(&r->labels, "tpuform-fleet", fleet);
		tpf_kvlist_set(&r->labels, "tpuform-group", group);
		tpf_kvlist_set(&r->labels, "tpuform-index", idx);
	}
}

static char *node_name(const char *fleet, const char *group, int index)
{
	return xasprintf("%s-%s-%d", fleet ? fleet : "plain", group, index);
}

/* Create a node and forget it. */
static int create(struct tpf_gcp_client *c, const char *fleet, const char *group, int index,
		  const char *zone, const char *type, const char *sched, struct tpf_diags *d)
{
	struct tpf_recipe r;
	struct tpf_live_node n = { 0 };
	make_recipe(&r, fleet, group, index, zone, type, sched);
	char *name = node_name(fleet, group, index);
	int rc = tpf_gcp_create_node(c, name, &r, NULL, &n, d);
	tpf_live_node_release(&n);
	tpf_recipe_release(&r);
	free(name);
	return rc;
}

/* The public half the fleets' SSH key has (only the .pub is needed: the
 * provider puts it in the nodes' metadata; nothing logs in here). */
#define TEST_PUBKEY "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGnVhWh0HUkf2CYnw8WyWHNHhK4Ifl3VnTKTimH1YbpD"

static void fleet_init(struct tpf_fleet *f, const char *name, struct emu *e)
{
	memset(f, 0, sizeof(*f));
	f->name = xstrdup(name);
	f->provider = TPF_PROVIDER_GCP;
	f->gcp.project = xstrdup(PROJECT);
	f->gcp.endpoint = xstrdup(e->base);
	f->ssh.port = 22;
	f->ssh.user = xstrdup("tpu");
	f->ssh.private_key = xasprintf("%s/id_test", tmpdir);
	char *pub = xasprintf("%s.pub", f->ssh.private_key);
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_write_file_atomic(pub, TEST_PUBKEY " test\n", strlen(TEST_PUBKEY " test\n"), 0644, &d);
	tpf_diags_release(&d);
	free(pub);
}

static void fleet_done(struct tpf_fleet *f)
{
	free(f->name);
	free(f->gcp.project);
	free(f->gcp.endpoint);
	free(f->ssh.user);
	free(f->ssh.private_key);
	for (size_t i = 0; i < f->ngroups; i++) {
		free(f->groups[i].name);
		free(f->groups[i].accelerator_type);
		free(f->groups[i].runtime_version);
		for (size_t z = 0; z < f->groups[i].nzones; z++)
			free(f->groups[i].zones[z]);
		free(f->groups[i].zones);
	}
	free(f->groups);
	memset(f, 0, sizeof(*f));
}

/* Parallel creates through the provider interface. */
struct create_job {
	struct tpf_provider *p;
	char *name;
	struct tpf_recipe r;
	struct tpf_live_node out;
	struct tpf_diags d;
	int rc;
};

static void *create_worker(void *arg)
{
	struct create_job *j = arg;
	j->rc = j->p->ops->create(j->p, j->name, &j->r, &j->out, &j->d);
	return NULL;
}

static void set_fast_env(void)
{
	setenv("TPUFORM_GCP_POLL_MIN", "0.05", 1);
	setenv("TPUFORM_GCP_POLL_MAX", "0.2", 1);
	setenv("TPUFORM_GCP_RETRY_BASE", "0.05", 1);
	setenv("TPUFORM_GCP_RETRY_CAP", "0.4", 1);
	setenv("TPUFORM_GCP_OP_TIMEOUT", "60", 1);
	setenv("TPUFORM_GCP_REQUEST_TIMEOUT", "20", 1);
	setenv("TPUFORM_GCP_STALL_TIMEOUT", "10", 1);
	unsetenv("TPUFORM_GCP_TRIES");
	unsetenv("TPUFORM_GCP_TOKEN_MARGIN");
	unsetenv("TPUFORM_GCP_MAX_BODY");
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	unsetenv("CLOUDSDK_CONFIG");
	unsetenv("GCE_METADATA_HOST");
	unsetenv("GCE_METADATA_ROOT");
	unsetenv("TPUFORM_TPU_ENDPOINT");
	setenv("HOME", tmpdir, 1); /* no gcloud ADC file here */
	/* --auth none accepts any bearer; auth tests unset this */
	setenv("TPUFORM_ACCESS_TOKEN", "test-static-token", 1);
}

/* ---- tests ---- */

static void test_gcp_e2e__lifecycle(void)
{
	struct emu e;
	struct tpf_diags d = TPF_DIAGS_INIT;
	const char *args[] = { "--op-seconds", "0.3", NULL };
	if (emu_start(&e, args) < 0) {
		CHECK(!"emulator started");
		return;
	}
	struct tpf_fleet f;
	fleet_init(&f, "f1", &e);
	struct tpf_provider *p = NULL;
	CHECK_INT(tpf_gcp_provider_open(&p, &f, &d), 0);
	if (!p)
		goto done;
	CHECK_STR(p->ops->name, "gcp");
	/* the SSH transport: made once, shared */
	struct tpf_transport *t1 = p->ops->transport(p);
	CHECK(t1 != NULL && p->ops->transport(p) == t1);

	/* two nodes in two zones, created at the same time */
	struct create_job jobs[2];
	const char *zones[] = { "us-central2-b", "europe-west4-a" };
	memset(jobs, 0, sizeof(jobs));
	make_recipe(&jobs[0].r, "f1", "a", 0, zones[0], "v4-16", "spot");
	make_recipe(&jobs[1].r, "f1", "b", 0, zones[1], "v2-8", "preemptible");
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		jobs[i].p = p;
		jobs[i].name = node_name("f1", i ? "b" : "a", 0);
		tpf_diags_init(&jobs[i].d);
		pthread_create(&th[i], NULL, create_worker, &jobs[i]);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		CHECKF(jobs[i].rc == 0, "create %s: %d", jobs[i].name, jobs[i].rc);
		CHECK_STR(jobs[i].out.name, jobs[i].name);
		CHECK_STR(jobs[i].out.state, "READY");
		CHECK_STR(jobs[i].out.recipe.zone, zones[i]);
		CHECK(jobs[i].out.id != NULL);
	}
	CHECK_INT(jobs[0].out.recipe.workers, 2); /* v4-16: two VMs */
	CHECK_INT(jobs[0].out.nendpoints, 2);
	CHECK(jobs[0].out.nendpoints == 2 && jobs[0].out.endpoints[1].ip &&
	      !strncmp(jobs[0].out.endpoints[1].ip, "127.", 4));
	CHECK_INT(jobs[0].out.recipe.spot, 1);
	CHECK_INT(jobs[1].out.recipe.workers, 1);
	CHECK_INT(jobs[1].out.recipe.preemptible, 1);
	CHECK_STR(tpf_kvlist_get(&jobs[1].out.recipe.labels, "tpuform-group"), "b");
	/* the create body carried every label and the external-IP request */
	json_t *log = emu_call(&e, "GET", "/__admin/requests");
	size_t i;
	json_t *it;
	int bodies_ok = 0;
	json_array_foreach(log, i, it) {
		json_t *b = json_object_get(it, "body");
		const char *m = json_string_value(json_object_get(it, "method"));
		const char *keys = json_string_value(
			json_object_get(json_object_get(b, "metadata"), "ssh-keys"));
		if (m && !strcmp(m, "POST") && json_is_object(b))
			bodies_ok += json_object_size(json_object_get(b, "labels")) == 3 &&
				     json_is_true(json_object_get(json_object_get(b, "networkConfig"),
								  "enableExternalIps")) &&
				     keys && !strcmp(keys, "tpu:" TEST_PUBKEY " tpu");
	}
	json_decref(log);
	/* ... and the SSH key for ssh.user, as gcloud writes it */
	CHECK_INT(bodies_ok, 2);

	/* Without a key nothing is created: nobody could log in to it. */
	struct tpf_fleet nokey;
	fleet_init(&nokey, "f9", &e);
	xstrset(&nokey.ssh.private_key, "/nonexistent/id_none");
	struct tpf_provider *pn = NULL;
	CHECK_INT(tpf_gcp_provider_open(&pn, &nokey, &d), 0);
	struct tpf_recipe rn;
	struct tpf_live_node outn = { 0 };
	struct tpf_diags dn = TPF_DIAGS_INIT;
	make_recipe(&rn, "f9", "a", 0, zones[1], "v2-8", "spot");
	CHECK_INT(pn ? pn->ops->create(pn, "f9-a-0", &rn, &outn, &dn) : 0, TPF_ERROR);
	CHECK(diags_have(&dn, "SSH private key '/nonexistent/id_none' does not exist"));
	CHECK(diags_have(&dn, "node 'f9-a-0' was not created"));
	CHECK_INT(count_requests(&e, "POST", "/nodes", "nodeId=f9-a-0", 0), 0);
	tpf_diags_release(&dn);
	tpf_live_node_release(&outn);
	tpf_recipe_release(&rn);
	tpf_provider_free(pn);
	fleet_done(&nokey);
	for (int k = 0; k < 2; k++) {
		keep_diags(&jobs[k].d);
		free(jobs[k].name);
		tpf_recipe_release(&jobs[k].r);
		tpf_live_node_release(&jobs[k].out);
	}

	/* nodes of another fleet and without labels are never returned */
	struct tpf_gcp_client *c = open_client(&e, NULL, &d);
	CHECK(c != NULL);
	CHECK_INT(create(c, "f2", "a", 0, zones[0], "v2-8", "on-demand", &d), 0);
	CHECK_INT(create(c, "f1x", "a", 0, zones[0], "v2-8", "on-demand", &d), 0);
	CHECK_INT(create(c, NULL, "a", 0, zones[1], "v2-8", "on-demand", &d), 0);
	struct tpf_live_set live = { 0 };
	CHECK_INT(p->ops->refresh(p, zones, 2, &live, &d), 0);
	CHECK_INT(live.n, 2);
	CHECK(tpf_live_set_find(&live, "f1-a-0") && tpf_live_set_find(&live, "f1-b-0"));
	CHECK(!tpf_live_set_find(&live, "f2-a-0") && !tpf_live_set_find(&live, "plain-a-0"));
	tpf_live_set_release(&live);

	/* preemption shows up as PREEMPTED; the node stays listed */
	json_decref(emu_call(&e, "POST", "/__admin/nodes/us-central2-b/f1-a-0:preempt"));
	CHECK_INT(p->ops->refresh(p, zones, 2, &live, &d), 0);
	struct tpf_live_node *n = tpf_live_set_find(&live, "f1-a-0");
	CHECK(n && !strcmp(n->state, "PREEMPTED"));
	tpf_live_set_release(&live);

	/* labels: replaced in place with updateMask=labels */
	struct tpf_kvlist labels = TPF_KVLIST_INIT;
	tpf_kvlist_set(&labels, "tpuform-fleet", "f1");
	tpf_kvlist_set(&labels, "tpuform-group", "b");
	tpf_kvlist_set(&labels, "tpuform-index", "0");
	tpf_kvlist_set(&labels, "team", "nlp");
	CHECK_INT(p->ops->set_labels(p, zones[1], "f1-b-0", &labels, &d), 0);
	struct tpf_live_node got = { 0 };
	CHECK_INT(tpf_gcp_get_node(c, zones[1], "f1-b-0", &got, &d), 0);
	CHECK_STR(tpf_kvlist_get(&got.recipe.labels, "team"), "nlp");
	CHECK_INT(got.recipe.labels.n, 4);
	tpf_live_node_release(&got);
	CHECK_INT(count_requests(&e, "PATCH", "/nodes/f1-b-0", "updateMask=labels", 200), 1);
	tpf_kvlist_release(&labels);

	/* delete waits until the node is gone */
	CHECK_INT(p->ops->remove(p, zones[0], "f1-a-0", NULL, &d), 0);
	CHECK_INT(emu_node_count(&e, "f1-a-0"), 0);
	CHECK_INT(tpf_gcp_get_node(c, zones[0], "f1-a-0", &got, &d), TPF_ENOTFOUND);
	CHECK(count_requests(&e, "GET", "/operations/", NULL, 200) >= 1);
	/* deleting what is already gone is success */
	CHECK_INT(p->ops->remove(p, zones[0], "f1-a-0", NULL, &d), 0);
	/* and deleting it out of band is seen by the next refresh */
	json_decref(emu_call(&e, "POST", "/__admin/nodes/europe-west4-a/f1-b-0:delete"));
	CHECK_INT(p->ops->refresh(p, zones, 2, &live, &d), 0);
	CHECK_INT(live.n, 0);
	tpf_live_set_release(&live);

	/* validate -remote's check */
	CHECK_INT(tpf_gcp_check_offering(c, zones[0], "v4-16", "tpu-ubuntu2204-base", NULL, &d), 1);
	struct tpf_diags d2 = TPF_DIAGS_INIT;
	CHECK_INT(tpf_gcp_check_offering(c, zones[0], "v4-12", "tpu-nope", "g", &d2), 0);
	CHECK_INT(d2.n, 2);
	CHECK(diags_have(&d2, "accelerator type 'v4-12' is not offered in zone 'us-central2-b'"));
	CHECK(diags_have(&d2, "v4-16"));
	CHECK(diags_have(&d2, "runtime version 'tpu-nope' is not offered"));
	keep_diags(&d2);
	tpf_diags_release(&d2);

	CHECKF(d.n == 0, "no diagnostics: %s", d.n ? d.items[0].summary : "");
	tpf_gcp_client_free(c);
done:
	tpf_provider_free(p);
	fleet_done(&f);
	keep_diags(&d);
	tpf_diags_release(&d);
	emu_stop(&e);
}

static void test_gcp_e2e__validate_remote(void)
{
	struct emu e;
	struct tpf_diags d = TPF_DIAGS_INIT;
	if (emu_start(&e, NULL) < 0) {
		CHECK(!"emulator started");
		return;
	}
	struct tpf_fleet f;
	fleet_init(&f, "vf", &e);
	f.ngroups = 2;
	f.groups = xcalloc(2, sizeof(*f.groups));
	const char *types[] = { "v4-16", "v9-8" };
	for (size_t g = 0; g < 2; g++) {
		f.groups[g].name = xasprintf("g%zu", g);
		f.groups[g].accelerator_type = xstrdup(types[g]);
		f.groups[g].runtime_version = xstrdup("tpu-ubuntu2204-base");
		f.groups[g].nzones = 2;
		f.groups[g].zones = xcalloc(2, sizeof(char *));
		f.groups[g].zones[0] = xstrdup("z-a");
		f.groups[g].zones[1] = xstrdup("z-b");
	}
	CHECK_INT(tpf_gcp_validate_remote(&f, &d), TPF_ERROR);
	CHECK_INT(d.n, 2); /* v9-8 in each zone */
	CHECK(diags_have(&d, "group 'g1': accelerator type 'v9-8' is not offered in zone 'z-a'"));
	CHECK(!diags_have(&d, "g0"));
	/* each zone listed once, however many groups name it */
	CHECK_INT(count_requests(&e, "GET", "/acceleratorTypes", NULL, 200), 2);
	free(f.groups[1].accelerator_type);
	f.groups[1].accelerator_type = xstrdup("v5litepod-16");
	struct tpf_diags d2 = TPF_DIAGS_INIT;
	CHECK_INT(tpf_gcp_validate_remote(&f, &d2), 0);
	CHECK_INT(d2.n, 0);
	fleet_done(&f);
	keep_diags(&d);
	keep_diags(&d2);
	tpf_diags_release(&d);
	tpf_diags_release(&d2);
	emu_stop(&e);
}

static void test_gcp_e2e__pagination(void)
{
	struct emu e;
	struct tpf_diags d = TPF_DIAGS_INIT;
	const char *args[] = { "--page-size", "2", "--op-seconds", "0.05", NULL };
	if (emu_start(&e, args) < 0) {
		CHECK(!"emulator started");
		return;
	}
	struct tpf_gcp_client *c = open_client(&e, NULL, &d);
	for (int i = 0; i < 5; i++)
		CHECK_INT(create(c, "pg", "a", i, "z1", "v2-8", "on-demand", &d), 0);
	CHECK_INT(create(c, "other", "a", 0, "z1", "v2-8", "on-demand", &d), 0);
	CHECK_INT(create(c, NULL, "a", 0, "z1", "v2-8", "on-demand", &d), 0);
	json_decref(emu_call(&e, "POST", "/__admin/requests:clear"));
	struct tpf_live_set live = { 0 };
	CHECK_INT(tpf_gcp_list_nodes(c, "z1", "pg", &live, &d), 0);
	CHECK_INT(live.n, 5);
	for (int i = 0; i < 5; i++) {
		char *name = node_name("pg", "a", i);
		CHECKF(tpf_live_set_find(&live, name) != NULL, "%s listed", name);
		free(name);
	}
	/* 7 nodes, 2 a page: 4 pages, 3 of them asked for by token */
	CHECK_INT(count_requests(&e, "GET", "/locations/z1/nodes", NULL, 200), 4);
	CHECK_INT(count_requests(&e, "GET", "/locations/z1/nodes", "pageToken=", 200), 3);
	tpf_live_set_release(&live);
	tpf_gcp_client_free(c);
	CHECKF(d.n == 0, "no diagnostics: %s", d.n ? d.items[0].summary : "");
	keep_diags(&d);
	tpf_diags_release(&d);
	emu_stop(&e);
}

static void test_gcp_e2e__quota_and_capacity(void)
{
	struct emu e;
	struct tpf_diags d = TPF_DIAGS_INIT;
	const char *args[] = { "--quota", "z-q:v2-8:preemptible=1", "--capacity", "z-c=0",
			       "--op-seconds", "0.1", NULL };
	if (emu_start(&e, args) < 0) {
		CHECK(!"emulator started");
		return;
	}
	struct tpf_gcp_client *c = open_client(&e, NULL, &d);
	CHECK_INT(create(c, "q", "a", 0, "z-q", "v2-8", "preemptible", &d), 0);
	CHECK_INT(d.n, 0);
	double t0 = tpf_now_mono();
	CHECK_INT(create(c, "q", "a", 1, "z-q", "v2-8", "preemptible", &d), TPF_EQUOTA);
	double took = tpf_now_mono() - t0;
	CHECK_INT(d.n, 1);
	CHECK(diags_have(&d, "create node 'q-a-1' in zone 'z-q': HTTP 429 RESOURCE_EXHAUSTED: "));
	CHECK(diags_have(&d, "ForTPUAPI"));
	CHECK(diags_have(&d, "next zone"));
	CHECK(d.n && d.items[0].address && !strcmp(d.items[0].address, "q-a-1"));
	/* quota is not waited on: one POST, no retry */
	CHECK_INT(count_requests(&e, "POST", "/locations/z-q/nodes", "nodeId=q-a-1", 0), 1);
	printf("# quota error reported after %.3f s\n", took);
	/* on-demand has no quota rule here */
	CHECK_INT(create(c, "q", "a", 2, "z-q", "v2-8", "on-demand", &d), 0);
	keep_diags(&d);

	/* no capacity: the operation fails with code 8 and no node is left */
	CHECK_INT(create(c, "cap", "a", 0, "z-c", "v4-8", "spot", &d), TPF_ECAPACITY);
	CHECK(diags_have(&d, "create node 'cap-a-0' in zone 'z-c': operation failed with code 8 "
			     "(RESOURCE_EXHAUSTED): There is no more capacity in the zone"));
	CHECK(diags_have(&d, "next zone"));
	CHECK_INT(emu_node_count(&e, "cap-a-0"), 0);
	struct tpf_live_node n = { 0 };
	struct tpf_diags d2 = TPF_DIAGS_INIT;
	CHECK_INT(tpf_gcp_get_node(c, "z-c", "cap-a-0", &n, &d2), TPF_ENOTFOUND);
	CHECK_INT(d2.n, 0);
	/* capacity back: the same create works */
	json_decref(emu_call(&e, "POST", "/__admin/capacity?zone=z-c&value=5"));
	CHECK_INT(create(c, "cap", "a", 0, "z-c", "v4-8", "spot", &d2), 0);
	CHECK_INT(d2.n, 0);
	tpf_gcp_client_free(c);
	keep_diags(&d);
	keep_diags(&d2);
	tpf_diags_release(&d);
	tpf_diags_release(&d2);
	emu_stop(&e);
}

static void test_gcp_e2e__transient_faults(void)
{
	struct emu e;
	struct tpf_diags d = TPF_DIAGS_INIT;
	const char *args[] = { "--fault-rate", "0.2", "--fault-kinds", "429,500,502,503,504,drop",
			       "--seed", "42", "--op-seconds", "0.2", NULL };
	if (emu_start(&e, args) < 0) {
		CHECK(!"emulator started");
		return;
	}
	/* 0.2^8: a request failing 8 times in a row would be a 1-in-390625 fluke */
	setenv("TPUFORM_GCP_TRIES", "8", 1);
	struct tpf_fleet f;
	fleet_init(&f, "tf", &e);
	struct tpf_provider *p = NULL;
	CHECK_INT(tpf_gcp_provider_open(&p, &f, &d), 0);
	if (!p)
		goto done;
	enum { N = 6 };
	struct create_job jobs[N];
	pthread_t th[N];
	memset(jobs, 0, sizeof(jobs));
	const char *zones[] = { "z1", "z2" };
	for (int i = 0; i < N; i++) {
		jobs[i].p = p;
		jobs[i].name = node_name("tf", "a", i);
		make_recipe(&jobs[i].r, "tf", "a", i, zones[i % 2], i % 3 ? "v2-8" : "v4-16",
			    "preemptible");
		tpf_diags_init(&jobs[i].d);
		pthread_create(&th[i], NULL, create_worker, &jobs[i]);
	}
	int ok = 0;
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		ok += jobs[i].rc == 0;
		if (jobs[i].rc)
			printf("# %s: %s\n", jobs[i].name,
			       jobs[i].d.n ? jobs[i].d.items[0].summary : "?");
	}
	CHECK_INT(ok, N);
	struct tpf_live_set live = { 0 };
	CHECK_INT(p->ops->refresh(p, zones, 2, &live, &d), 0);
	CHECK_INT(live.n, N);
	tpf_live_set_release(&live);
	/* exactly one node per name: no duplicate from a retried create */
	for (int i = 0; i < N; i++)
		CHECKF(emu_node_count(&e, jobs[i].name) == 1, "%s exists once", jobs[i].name);
	CHECK_INT(p->ops->remove(p, "z1", "tf-a-0", NULL, &d), 0);
	CHECK_INT(emu_node_count(&e, "tf-a-0"), 0);
	int faults = count_faults(&e);
	CHECKF(faults > 0, "faults were injected: %d", faults);
	printf("# %d faults injected, all absorbed\n", faults);
	for (int i = 0; i < N; i++) {
		keep_diags(&jobs[i].d);
		free(jobs[i].name);
		tpf_recipe_release(&jobs[i].r);
		tpf_live_node_release(&jobs[i].out);
	}
	CHECKF(d.n == 0, "no diagnostics: %s", d.n ? d.items[0].summary : "");
done:
	unsetenv("TPUFORM_GCP_TRIES");
	tpf_provider_free(p);
	fleet_done(&f);
	keep_diags(&d);
	tpf_diags_release(&d);
	emu_stop(&e);
}

static void test_gcp_e2e__transient_gives_up(void)
{
	struct emu e;
	struct tpf_diags d = TPF_DIAGS_INIT;
	const char *args[] = { "--fault-rate", "1", "--fault-kinds", "503", NULL };
	if (emu_start(&e, args) < 0) {
		CHECK(!"emulator started");
		return;
	}
	setenv("TPUFORM_GCP_TRIES", "3", 1);
	struct tpf_gcp_client *c = open_client(&e, NULL, &d);
	struct tpf_live_set live = { 0 };
	CHECK_INT(tpf_gcp_list_nodes(c, "z1", "x", &live, &d), TPF_ETRANSIENT);
	CHECK(diags_have(&d, "list nodes in zone 'z1': HTTP 503 UNAVAILABLE: The service is "
			     "currently unavailable. (gave up after 3 tries)"));
	CHECK_INT(count_requests(&e, "GET", "/locations/z1/nodes", NULL, 503), 3);
	tpf_live_set_release(&live);
	tpf_gcp_client_free(c);
	unsetenv("TPUFORM_GCP_TRIES");
	keep_diags(&d);
	tpf_diags_release(&d);
	emu_stop(&e);
}

/*
 * A response body past the cap (TPF_GCP_MAX_BODY, here lowered with
 * TPUFORM_GCP_MAX_BODY) aborts the transfer: an error naming the request,
 * the method, the URL and the limit, not retried; answers that fit pass.
 * The same for a token answer.
 */
static void remember_token(struct tpf_gcp_client *c);

static void test_gcp_e2e__body_cap(void)
{
	struct emu e;
	struct tpf_diags d = TPF_DIAGS_INIT;
	const char *args[] = { "--auth", "token", "--op-seconds", "0.05", NULL };
	if (emu_start(&e, args) < 0) {
		CHECK(!"emulator started");
		return;
	}
	char host[64];
	snprintf(host, sizeof(host), "127.0.0.1:%d", e.port);
	unsetenv("TPUFORM_ACCESS_TOKEN");
	setenv("GCE_METADATA_HOST", host, 1);
	struct tpf_gcp_client *c = open_client(&e, NULL, &d);
	for (int i = 0; c && i < 3; i++)
		CHECK_INT(create(c, "cap", "a", i, "z1", "v2-8", "on-demand", &d), 0);
	tpf_gcp_client_free(c);
	CHECKF(d.n == 0, "no diagnostics: %s", d.n ? d.items[0].summary : "");

	/* 400 bytes: a token and an empty list fit, a list of 3 nodes does not. */
	setenv("TPUFORM_GCP_MAX_BODY", "400", 1);
	c = open_client(&e, NULL, &d);
	CHECK(c != NULL);
	struct tpf_live_set live = { 0 };
	if (c) {
		CHECK_INT(tpf_gcp_list_nodes(c, "z2", "cap", &live, &d), 0);
		CHECK_INT(live.n, 0);
		CHECKF(d.n == 0, "no diagnostics: %s", d.n ? d.items[0].summary : "");
		remember_token(c);
		json_decref(emu_call(&e, "POST", "/__admin/requests:clear"));
		CHECK_INT(tpf_gcp_list_nodes(c, "z1", "cap", &live, &d), TPF_ERROR);
		char *want = xasprintf("list nodes in zone 'z1': the answer to GET "
				       "%s/v2/projects/%s/locations/z1/nodes", e.base, PROJECT);
		CHECKF(diags_have(&d, want), "%s", d.n ? d.items[0].summary : "no diagnostic");
		free(want);
		CHECK(diags_have(&d, "is larger than the limit of 400 bytes"));
		CHECK(diags_have(&d, "TPUFORM_GCP_MAX_BODY"));
		CHECK(!diags_have(&d, "cannot reach"));
		CHECK_INT((int)d.n, 1);
		CHECK_INT(count_requests(&e, "GET", "/locations/z1/nodes", NULL, 0), 1);
		tpf_live_set_release(&live);
		tpf_gcp_client_free(c);
	}
	keep_diags(&d);

	/* A token answer past the cap is refused the same way. */
	setenv("TPUFORM_GCP_MAX_BODY", "20", 1);
	tpf_gcp_auth_cache_clear(); /* a new token must be fetched */
	c = open_client(&e, NULL, &d);
	CHECK(c != NULL);
	if (c) {
		CHECK_INT(tpf_gcp_list_nodes(c, "z2", "cap", &live, &d), TPF_ERROR);
		CHECK(diags_have(&d, "get an access token from the metadata server"));
		CHECK(diags_have(&d, "the answer to GET http://127.0.0.1:"));
		CHECK(diags_have(&d, "/computeMetadata/v1/instance/service-accounts/default/token "
				     "is larger than the limit of 20 bytes"));
		CHECK_INT((int)d.n, 1);
		tpf_live_set_release(&live);
		tpf_gcp_client_free(c);
	}
	keep_diags(&d);

	/* A value that is not a number of bytes stops the client opening. */
	setenv("TPUFORM_GCP_MAX_BODY", "64MiB", 1);
	CHECK(open_client(&e, NULL, &d) == NULL);
	CHECK(diags_have(&d, "'TPUFORM_GCP_MAX_BODY' is '64MiB'"));
	keep_diags(&d);
	tpf_diags_release(&d);
	emu_stop(&e);
	set_fast_env();
}

struct later_arg {
	struct emu *e;
	double delay;
	const char *path;
};

static void *post_later(void *arg)
{
	struct later_arg *a = arg;
	tpf_sleep(a->delay);
	json_decref(emu_call(a->e, "POST", a->path));
	return NULL;
}

/*
 * The answer to a create is lost (the client times out while the emulator
 * is slow) but the create goes through; the retry gets 409 and must adopt
 * the node instead of failing or creating a second one.
 */
static void test_gcp_e2e__create_answer_lost(void)
{
	struct emu e;
	struct tpf_diags d = TPF_DIAGS_INIT;
	const char *args[] = { "--op-seconds", "0.1", NULL };
	if (emu_start(&e, args) < 0) {
		CHECK(!"emulator started");
		return;
	}
	/* requests die after 1 s; the first retry comes 1.5..3 s later */
	setenv("TPUFORM_GCP_REQUEST_TIMEOUT", "1", 1);
	setenv("TPUFORM_GCP_STALL_TIMEOUT", "1", 1);
	setenv("TPUFORM_GCP_RETRY_BASE", "3", 1);
	setenv("TPUFORM_GCP_RETRY_CAP", "3", 1);
	struct tpf_gcp_client *c = open_client(&e, NULL, &d);
	set_fast_env();
	/* every request is slow (2 s) until the faults are switched off at 0.5 s */
	json_decref(emu_call(&e, "POST", "/__admin/faults?rate=1&kinds=slow"));
	struct later_arg la = { &e, 0.5, "/__admin/faults?rate=0" };
	pthread_t th;
	pthread_create(&th, NULL, post_later, &la);
	struct tpf_recipe r;
	struct tpf_live_node n = { 0 };
	make_recipe(&r, "lost", "a", 0, "z1", "v2-8", "spot");
	int rc = tpf_gcp_create_node(c, "lost-a-0", &r, NULL, &n, &d);
	pthread_join(th, NULL);
	CHECKF(rc == 0, "create after a lost answer: %d %s", rc, d.n ? d.items[0].summary : "");
	CHECK_STR(n.name, "lost-a-0");
	CHECK(n.state && strcmp(n.state, "CREATING"));
	CHECK_INT(emu_node_count(&e, "lost-a-0"), 1);
	CHECK(count_requests(&e, "POST", "/nodes", "nodeId=lost-a-0", 409) >= 1);
	tpf_live_node_release(&n);

	/* a 409 on the FIRST attempt is a node that is not ours: an error */
	rc = tpf_gcp_create_node(c, "lost-a-0", &r, NULL, &n, &d);
	CHECK_INT(rc, TPF_ERROR);
	CHECK(diags_have(&d, "create node 'lost-a-0' in zone 'z1': HTTP 409 ALREADY_EXISTS"));
	tpf_recipe_release(&r);
	tpf_live_node_release(&n);
	tpf_gcp_client_free(c);
	keep_diags(&d);
	tpf_diags_release(&d);
	emu_stop(&e);
}

static char *run_openssl(const char *args)
{
	char *cmd = xasprintf("openssl %s 2>/dev/null", args);
	int rc = system(cmd);
	free(cmd);
	return rc == 0 ? xstrdup("ok") : NULL;
}

static char *read_all(const char *path)
{
	struct tpf_buf b = TPF_BUF_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_read_file(path, &b, &d);
	tpf_diags_release(&d);
	return tpf_buf_detach(&b, NULL);
}

static char *write_json(const char *name, json_t *j)
{
	char *p = xasprintf("%s/%s", tmpdir, name);
	json_dump_file(j, p, 0);
	/* 0600, as gcloud writes credentials: a readable one is warned about
	 * (docs/security.md "Security"), and these tests expect no diagnostics. */
	chmod(p, 0600);
	json_decref(j);
	return p;
}

/* Generate an RSA key with openssl; write the public half to pub_out. */
static char *gen_key(const char *name, char **pub_out)
{
	char *priv = xasprintf("%s/%s.pem", tmpdir, name);
	char *pub = xasprintf("%s/%s.pub.pem", tmpdir, name);
	char *a1 = xasprintf("genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out %s", priv);
	char *a2 = xasprintf("pkey -in %s -pubout -out %s", priv, pub);
	char *ok1 = run_openssl(a1), *ok2 = ok1 ? run_openssl(a2) : NULL;
	char *pem = ok2 ? read_all(priv) : NULL;
	free(ok1);
	free(ok2);
	free(a1);
	free(a2);
	free(priv);
	*pub_out = pub;
	return pem;
}

/* Pieces of a PEM key body: what a leak would show. */
static void remember_pem(const char *pem)
{
	const char *nl = strchr(pem, '\n');
	size_t n = nl ? strlen(nl + 1) : 0;
	for (size_t off = 0; nl && off + 40 < n; off += n / 3) {
		char *chunk = xstrndup(nl + 1 + off, 40);
		if (!strchr(chunk, '\n'))
			remember_secret(chunk);
		free(chunk);
	}
}

struct get_job {
	struct tpf_gcp_client *c;
	int rc;
	struct tpf_diags d;
};

static void *list_worker(void *arg)
{
	struct get_job *j = arg;
	struct tpf_live_set live = { 0 };
	j->rc = tpf_gcp_list_nodes(j->c, "z1", "x", &live, &j->d);
	tpf_live_set_release(&live);
	return NULL;
}

/* N threads list at once on a client without a token yet. */
static int parallel_lists(struct tpf_gcp_client *c, int n)
{
	struct get_job jobs[16];
	pthread_t th[16];
	int ok = 0;
	for (int i = 0; i < n; i++) {
		jobs[i].c = c;
		tpf_diags_init(&jobs[i].d);
		pthread_create(&th[i], NULL, list_worker, &jobs[i]);
	}
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		ok += jobs[i].rc == 0;
		if (jobs[i].rc && jobs[i].d.n)
			printf("# list: %s\n", jobs[i].d.items[0].summary);
		keep_diags(&jobs[i].d);
		tpf_diags_release(&jobs[i].d);
	}
	return ok;
}

static void remember_token(struct tpf_gcp_client *c)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *t = NULL;
	if (tpf_gcp_auth_token(tpf_gcp_client_auth(c), &t, &d) == 0)
		remember_secret(t);
	tpf_gcp_auth_token_free(t);
	keep_diags(&d);
	tpf_diags_release(&d);
}

static void test_gcp_e2e__service_account(void)
{
	char *pub = NULL, *pub2 = NULL;
	char *pem = gen_key("sa", &pub);
	char *pem2 = gen_key("other", &pub2);
	CHECK(pem && pem2);
	if (!pem || !pem2)
		goto out;
	remember_pem(pem);
	remember_pem(pem2);
	char *pubarg = xstrdup(pub);
	const char *args[] = { "--auth", "token", "--sa-public-key", pubarg, NULL };
	struct emu e;
	struct tpf_diags d = TPF_DIAGS_INIT;
	if (emu_start(&e, args) < 0) {
		CHECK(!"emulator started");
		free(pubarg);
		goto out;
	}
	unsetenv("TPUFORM_ACCESS_TOKEN");
	char *token_uri = xasprintf("%s/token", e.base);
	char *key = write_json("sa-key.json",
			       json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", "service_account",
					 "project_id", PROJECT, "private_key_id", "kid-1",
					 "private_key", pem, "client_email",
					 "tpuform@test-project.iam.gserviceaccount.com", "token_uri",
					 token_uri));
	struct tpf_gcp_client *c = open_client(&e, key, &d);
	CHECK(c != NULL);
	if (c) {
		/* 8 threads need a token at once: one JWT exchange serves them all */
		CHECK_INT(parallel_lists(c, 8), 8);
		CHECK_INT(tpf_gcp_auth_fetches(tpf_gcp_client_auth(c)), 1);
		CHECK_INT(count_requests(&e, "POST", "/token", NULL, 200), 1);
		remember_token(c);
		tpf_gcp_client_free(c);
	}

	/* the key the emulator does not know: invalid_grant, quoted */
	char *bad = write_json("sa-bad.json",
			       json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "service_account",
					 "private_key_id", "kid-2", "private_key", pem2,
					 "client_email", "tpuform@test-project.iam.gserviceaccount.com",
					 "token_uri", token_uri));
	c = open_client(&e, bad, &d);
	struct tpf_live_set live = { 0 };
	struct tpf_diags d2 = TPF_DIAGS_INIT;
	CHECK_INT(c ? tpf_gcp_list_nodes(c, "z1", "x", &live, &d2) : 0, TPF_ERROR);
	CHECK(diags_have(&d2, "get an access token from '"));
	CHECK(diags_have(&d2, "HTTP 400 invalid_grant: "));
	CHECK(diags_have(&d2, "the key may be deleted or disabled"));
	tpf_live_set_release(&live);
	tpf_gcp_client_free(c);
	keep_diags(&d2);
	tpf_diags_release(&d2);

	CHECKF(d.n == 0, "no diagnostics: %s", d.n ? d.items[0].summary : "");
	keep_diags(&d);
	tpf_diags_release(&d);
	emu_stop(&e);
	free(bad);
	free(key);
	free(token_uri);
	free(pubarg);
out:
	set_fast_env();
	free(pem);
	free(pem2);
	free(pub);
	free(pub2);
}

static void test_gcp_e2e__authorized_user(void)
{
	const char *args[] = { "--auth", "token", "--authorized-user",
			       "cid-1.apps.googleusercontent.com:S3cr3tClientValue:1//RefreshTokenValue42",
			       NULL };
	struct emu e;
	struct tpf_diags d = TPF_DIAGS_INIT;
	if (emu_start(&e, args) < 0) {
		CHECK(!"emulator started");
		return;
	}
	remember_secret("S3cr3tClientValue");
	remember_secret("1//RefreshTokenValue42");
	remember_secret("WrongSecretValue99");
	unsetenv("TPUFORM_ACCESS_TOKEN");
	char *token_uri = xasprintf("%s/token", e.base);
	char *file = write_json("user.json",
				json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "authorized_user",
					  "client_id", "cid-1.apps.googleusercontent.com",
					  "client_secret", "S3cr3tClientValue", "refresh_token",
					  "1//RefreshTokenValue42", "token_uri", token_uri));
	/* found through the gcloud ADC location this time */
	char *gdir = xasprintf("%s/gcloud-adc", tmpdir);
	mkdir(gdir, 0700);
	char *adc = xasprintf("%s/application_default_credentials.json", gdir);
	rename(file, adc);
	setenv("CLOUDSDK_CONFIG", gdir, 1);
	struct tpf_gcp_client *c = open_client(&e, NULL, &d);
	CHECK(c != NULL);
	if (c) {
		CHECK(strstr(tpf_gcp_auth_source(tpf_gcp_client_auth(c)), "authorized user") != NULL);
		CHECK_INT(parallel_lists(c, 4), 4);
		CHECK_INT(tpf_gcp_auth_fetches(tpf_gcp_client_auth(c)), 1);
		remember_token(c);
		tpf_gcp_client_free(c);
	}
	unsetenv("CLOUDSDK_CONFIG");

	char *bad = write_json("user-bad.json",
			       json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "authorized_user",
					 "client_id", "cid-1.apps.googleusercontent.com",
					 "client_secret", "WrongSecretValue99", "refresh_token",
					 "1//RefreshTokenValue42", "token_uri", token_uri));
	setenv("GOOGLE_APPLICATION_CREDENTIALS", bad, 1);
	c = open_client(&e, NULL, &d);
	struct tpf_live_set live = { 0 };
	struct tpf_diags d2 = TPF_DIAGS_INIT;
	CHECK_INT(c ? tpf_gcp_list_nodes(c, "z1", "x", &live, &d2) : 0, TPF_ERROR);
	CHECK(diags_have(&d2, "for authorized user credentials '"));
	CHECKF(diags_have(&d2, "HTTP 401 invalid_client: "), "%s", d2.n ? d2.items[0].summary : "");
	CHECK(diags_have(&d2, "gcloud auth application-default login"));
	tpf_live_set_release(&live);
	tpf_gcp_client_free(c);
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	keep_diags(&d2);
	tpf_diags_release(&d2);
	CHECKF(d.n == 0, "no diagnostics: %s", d.n ? d.items[0].summary : "");
	keep_diags(&d);
	tpf_diags_release(&d);
	emu_stop(&e);
	free(bad);
	free(adc);
	free(gdir);
	free(file);
	free(token_uri);
	set_fast_env();
}

static void test_gcp_e2e__metadata_server(void)
{
	const char *args[] = { "--auth", "token", NULL };
	struct emu e;
	struct tpf_diags d = TPF_DIAGS_INIT;
	if (emu_start(&e, args) < 0) {
		CHECK(!"emulator started");
		return;
	}
	unsetenv("TPUFORM_ACCESS_TOKEN");
	char host[64];
	snprintf(host, sizeof(host), "127.0.0.1:%d", e.port);
	setenv("GCE_METADATA_HOST", host, 1);
	struct tpf_gcp_client *c = open_client(&e, NULL, &d);
	CHECK(c != NULL);
	if (c) {
		CHECK(strstr(tpf_gcp_auth_source(tpf_gcp_client_auth(c)), "metadata server") != NULL);
		CHECK_INT(parallel_lists(c, 4), 4);
		CHECK_INT(tpf_gcp_auth_fetches(tpf_gcp_client_auth(c)), 1);
		CHECK_INT(count_requests(&e, "GET", "/computeMetadata/v1/instance/service-accounts/default/token",
					 NULL, 200), 1);
		remember_token(c);
		tpf_gcp_client_free(c);
	}
	/* a ready token that the API does not accept: no refresh, a clear error */
	setenv("TPUFORM_ACCESS_TOKEN", "ya29.NotIssuedHere", 1);
	remember_secret("ya29.NotIssuedHere");
	c = open_client(&e, NULL, &d);
	struct tpf_live_set live = { 0 };
	struct tpf_diags d2 = TPF_DIAGS_INIT;
	CHECK_INT(c ? tpf_gcp_list_nodes(c, "z1", "x", &live, &d2) : 0, TPF_ERROR);
	CHECK(diags_have(&d2, "HTTP 401 UNAUTHENTICATED"));
	CHECK(diags_have(&d2, "TPUFORM_ACCESS_TOKEN"));
	CHECK_INT(count_requests(&e, "GET", "/locations/z1/nodes", NULL, 401), 1);
	tpf_live_set_release(&live);
	tpf_gcp_client_free(c);
	keep_diags(&d2);
	tpf_diags_release(&d2);
	CHECKF(d.n == 0, "no diagnostics: %s", d.n ? d.items[0].summary : "");
	keep_diags(&d);
	tpf_diags_release(&d);
	emu_stop(&e);
	set_fast_env();
}

static void test_gcp_e2e__token_refresh(void)
{
	const char *args[] = { "--auth", "token", "--token-ttl", "3", "--authorized-user",
			       "cid:csecret-xyz:rtoken-xyz", NULL };
	struct emu e;
	struct tpf_diags d = TPF_DIAGS_INIT;
	if (emu_start(&e, args) < 0) {
		CHECK(!"emulator started");
		return;
	}
	remember_secret("csecret-xyz");
	remember_secret("rtoken-xyz");
	unsetenv("TPUFORM_ACCESS_TOKEN");
	char *token_uri = xasprintf("%s/token", e.base);
	char *file = write_json("user-ttl.json",
				json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "authorized_user",
					  "client_id", "cid", "client_secret", "csecret-xyz",
					  "refresh_token", "rtoken-xyz", "token_uri", token_uri));
	/* refreshed 1 s before the 3 s expiry: never a 401 */
	setenv("TPUFORM_GCP_TOKEN_MARGIN", "1", 1);
	struct tpf_gcp_client *c = open_client(&e, file, &d);
	int ok = 0, calls = 0;
	double end = tpf_now_mono() + 4.5;
	while (c && tpf_now_mono() < end) {
		struct tpf_live_set live = { 0 };
		ok += tpf_gcp_list_nodes(c, "z1", "x", &live, &d) == 0;
		calls++;
		tpf_live_set_release(&live);
		tpf_sleep(0.25);
	}
	CHECK(calls > 10);
	CHECK_INT(ok, calls);
	long fetches = c ? tpf_gcp_auth_fetches(tpf_gcp_client_auth(c)) : 0;
	CHECKF(fetches >= 2, "tokens fetched in 4.5 s, refreshed every 2 s: %ld", fetches);
	CHECK_INT(count_requests(&e, "GET", "/nodes", NULL, 401), 0);
	remember_token(c);

	/* a token revoked behind our back: one 401, a new token, success */
	json_decref(emu_call(&e, "POST", "/__admin/tokens:revoke"));
	long before = c ? tpf_gcp_auth_fetches(tpf_gcp_client_auth(c)) : 0;
	struct tpf_live_set live = { 0 };
	CHECK_INT(c ? tpf_gcp_list_nodes(c, "z1", "x", &live, &d) : -1, 0);
	tpf_live_set_release(&live);
	CHECK_INT(count_requests(&e, "GET", "/nodes", NULL, 401), 1);
	CHECK_INT(c ? tpf_gcp_auth_fetches(tpf_gcp_client_auth(c)) : 0, before + 1);
	remember_token(c);
	tpf_gcp_client_free(c);
	unsetenv("TPUFORM_GCP_TOKEN_MARGIN");
	CHECKF(d.n == 0, "no diagnostics: %s", d.n ? d.items[0].summary : "");
	keep_diags(&d);
	tpf_diags_release(&d);
	emu_stop(&e);
	free(file);
	free(token_uri);
	set_fast_env();
}

struct bench_job {
	struct tpf_gcp_client *c;
	int n, ok;
};

static void *bench_worker(void *arg)
{
	struct bench_job *j = arg;
	struct tpf_diags d = TPF_DIAGS_INIT;
	for (int i = 0; i < j->n; i++) {
		struct tpf_live_node n = { 0 };
		j->ok += tpf_gcp_get_node(j->c, "z1", "b-a-0", &n, &d) == 0;
		tpf_live_node_release(&n);
	}
	tpf_diags_release(&d);
	return NULL;
}

/* Figures only (no timed assertion): parallel GETs share connections. */
static void test_gcp_e2e__parallel_figures(void)
{
	const char *args[] = { "--latency-ms", "20", "--op-seconds", "0.05", NULL };
	struct emu e;
	struct tpf_diags d = TPF_DIAGS_INIT;
	if (emu_start(&e, args) < 0) {
		CHECK(!"emulator started");
		return;
	}
	struct tpf_gcp_client *c = open_client(&e, NULL, &d);
	CHECK_INT(create(c, "b", "a", 0, "z1", "v2-8", "on-demand", &d), 0);
	enum { T = 8, PER = 25 };
	struct bench_job jobs[T];
	pthread_t th[T];
	long req0, conn0, req1, conn1;
	tpf_gcp_http_stats(tpf_gcp_client_http(c), &req0, &conn0);
	double t0 = tpf_now_mono();
	for (int i = 0; i < T; i++) {
		jobs[i] = (struct bench_job){ c, PER, 0 };
		pthread_create(&th[i], NULL, bench_worker, &jobs[i]);
	}
	int ok = 0;
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		ok += jobs[i].ok;
	}
	double dt = tpf_now_mono() - t0;
	tpf_gcp_http_stats(tpf_gcp_client_http(c), &req1, &conn1);
	CHECK_INT(ok, T * PER);
	/* connections are reused: far fewer than requests */
	CHECKF(conn1 - conn0 <= T, "%ld new connections for %ld requests", conn1 - conn0, req1 - req0);
	printf("# parallel GETs: %d threads x %d, 20 ms server latency: %.2f s "
	       "(%.0f req/s; serial would take %.2f s), %ld new connections for %ld requests\n",
	       T, PER, dt, (req1 - req0) / dt, T * PER * 0.02, conn1 - conn0, req1 - req0);
	tpf_gcp_client_free(c);
	keep_diags(&d);
	tpf_diags_release(&d);
	emu_stop(&e);
}

static void test_gcp_e2e__no_secret_in_diagnostics(void)
{
	CHECKF(nsecrets >= 8, "secrets collected: %zu", nsecrets);
	CHECKF(all_diags.n >= 8, "diagnostics collected: %zu", all_diags.n);
	size_t leaks = 0;
	for (size_t i = 0; i < all_diags.n; i++) {
		const struct tpf_diag *g = &all_diags.items[i];
		for (size_t s = 0; s < nsecrets; s++) {
			if (strstr(g->summary, secrets[s]) || (g->detail && strstr(g->detail, secrets[s])) ||
			    (g->address && strstr(g->address, secrets[s]))) {
				printf("# leak of secret %zu in: %s\n", s, g->summary);
				leaks++;
			}
		}
	}
	CHECK_INT(leaks, 0);
	if (getenv("TPUFORM_TEST_VERBOSE"))
		for (size_t i = 0; i < all_diags.n; i++)
			printf("# diagnostic: %s%s%s\n", all_diags.items[i].summary,
			       all_diags.items[i].detail ? "\n#   " : "",
			       all_diags.items[i].detail ? all_diags.items[i].detail : "");
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	signal(SIGPIPE, SIG_IGN);
	find_fakegcp();
	if (!fakegcp_bin) {
		printf("TAP version 13\n1..0 # SKIP tests/fakegcp/fakegcp is not built\n");
		return 0;
	}
	tmpdir = unit_tmpdir();
	set_fast_env();
	RUN(test_gcp_e2e__lifecycle);
	RUN(test_gcp_e2e__validate_remote);
	RUN(test_gcp_e2e__pagination);
	RUN(test_gcp_e2e__quota_and_capacity);
	RUN(test_gcp_e2e__transient_faults);
	RUN(test_gcp_e2e__transient_gives_up);
	RUN(test_gcp_e2e__body_cap);
	RUN(test_gcp_e2e__create_answer_lost);
	RUN(test_gcp_e2e__service_account);
	RUN(test_gcp_e2e__authorized_user);
	RUN(test_gcp_e2e__metadata_server);
	RUN(test_gcp_e2e__token_refresh);
	RUN(test_gcp_e2e__parallel_figures);
	RUN(test_gcp_e2e__no_secret_in_diagnostics);
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_remove_tree(tmpdir, &d);
	tpf_diags_release(&d);
	free(tmpdir);
	for (size_t i = 0; i < nsecrets; i++)
		free(secrets[i]);
	tpf_diags_release(&all_diags);
	free(fakegcp_bin);
	free(discovery);
	curl_global_cleanup();
	return unit_done();
}
