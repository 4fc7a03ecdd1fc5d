/*
 * The executor (engine/apply/apply.c) on the local provider, through the engine
 * session: what an interrupt does to an apply (the first Ctrl-C: start
 * nothing new, stop waiting, save the state), and the session's worker
 * targets (engine/pipeline/pipeline.c) that exec, logs and ssh use.
 */
#include "engine/pipeline/pipeline.h"
#include "model/node_state.h"
#include "tests/unit/unit.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dir; /* a fresh directory per test (fresh_dir) */

static void fresh_dir(void)
{
	free(dir);
	dir = unit_tmpdir();
}

/* A local fleet `name` of `count` v2-8 nodes in zone z1 whose CREATING
 * lasts `delay`. Caller frees the path. */
static char *write_fleet(const char *name, int count, const char *delay)
{
	char *path = xasprintf("%s/fleet.yaml", dir);
	FILE *f = fopen(path, "w");
	fprintf(f, "fleet: %s\n"
		   "provider:\n  local: { root: nodes, create_delay: %s }\n"
		   "run: exec sleep 300\n"
		   "groups:\n"
		   "  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: %d }\n",
		name, delay, count);
	fclose(f);
	return path;
}

static int open_planned(struct tpf_pipeline *s, const char *fleet, struct tpf_plan *p)
{
	struct tpf_pipeline_opts o = TPF_PIPELINE_OPTS_INIT;
	o.file = fleet;
	memset(p, 0, sizeof(*p));
	int rc = tpf_pipeline_open(s, &o, "OperationTypeApply");
	if (!rc)
		rc = tpf_pipeline_refresh(s, 0);
	if (!rc)
		rc = tpf_pipeline_plan(s, 0, p);
	return rc;
}

/* A thread that sets a flag after `delay` seconds, as a signal would. */
struct later {
	volatile int *flag;
	double delay;
	double set_at; /* tpf_now_mono() when set */
};

static void *set_later(void *arg)
{
	struct later *l = arg;
	tpf_sleep(l->delay);
	l->set_at = tpf_now_mono();
	*l->flag = 1;
	return NULL;
}

/* The status of node `name` in the state on disk ("" when absent); static. */
static const char *status_on_disk(const char *name)
{
	static char status[32];
	struct tpf_state st;
	struct tpf_diags d = TPF_DIAGS_INIT;
	char *path = xasprintf("%s/tpuform.state.json", dir);
	status[0] = '\0';
	if (tpf_state_load(&st, path, &d) == 0) {
		struct tpf_state_node *sn = tpf_state_find(&st, name);
		snprintf(status, sizeof(status), "%s", sn && sn->status ? tpf_node_status_name(sn->status) : "");
		tpf_state_release(&st);
	}
	tpf_diags_release(&d);
	free(path);
	return status;
}

/* Delete every node the provider lists for the fleet (nothing keeps
 * running after the test). */
static void delete_all(const char *fleet)
{
	struct tpf_pipeline s;
	struct tpf_plan p;
	if (open_planned(&s, fleet, &p) == 0)
		for (size_t i = 0; i < s.live.n; i++)
			s.prov->ops->remove(s.prov, s.live.nodes[i].recipe.zone, s.live.nodes[i].name,
					    NULL, &s.d);
	CHECK_INT(tpf_diags_errors(&s.d), 0);
	tpf_plan_release(&p);
	tpf_pipeline_close(&s);
}

/* A create waiting an hour for READY stops within a second of the
 * interrupt; the node stays pending, and the next plan waits for it. */
static void test_apply__interrupt_stops_a_create(void)
{
	fresh_dir();
	char *fleet = write_fleet("ia", 1, "1h");
	struct tpf_pipeline s;
	struct tpf_plan p;
	CHECK_INT(open_planned(&s, fleet, &p), 0);
	CHECK_INT(p.n, 1);
	volatile int flag = 0;
	struct tpf_apply_opts o = { .parallelism = 1, .heartbeat = 3600, .interrupted = &flag };
	struct tpf_apply_result res;
	struct later l = { &flag, 0.3, 0 };
	pthread_t th;
	pthread_create(&th, NULL, set_later, &l);
	CHECK_INT(tpf_pipeline_apply(&s, &p, &o, &res), TPF_EINTERRUPTED);
	double returned = tpf_now_mono();
	pthread_join(th, NULL);
	CHECKF(returned - l.set_at < 1.0, "returned %.2fs after the interrupt", returned - l.set_at);
	CHECK_INT(res.interrupted, 1);
	CHECK_INT(res.not_started, 0);
	CHECK_INT(res.failed_actions, 0);
	CHECK_INT(res.added, 0);
	CHECK_INT(tpf_diags_errors(&s.d), 0);
	tpf_apply_result_release(&res);
	tpf_plan_release(&p);
	tpf_pipeline_close(&s);

	/* Recorded before the create was sent, and kept: never leaked. */
	CHECK_STR(status_on_disk("ia-a-0"), "pending");
	/* The node is still CREATING: the next plan waits for it and
	 * provisions it, it does not create a second one. */
	CHECK_INT(open_planned(&s, fleet, &p), 0);
	CHECK_INT(p.n, 1);
	CHECK_INT(p.add, 0);
	CHECK(p.n == 1 && p.actions[0].kind == TPF_ACT_WAIT);
	tpf_plan_release(&p);
	tpf_pipeline_close(&s);
	delete_all(fleet);
	free(fleet);
}

/* With parallelism 1, the interrupt stops the create in flight and the
 * others never start: counted, and absent from the state. */
static void test_apply__interrupt_counts(void)
{
	fresh_dir();
	char *fleet = write_fleet("ic", 3, "1h");
	struct tpf_pipeline s;
	struct tpf_plan p;
	CHECK_INT(open_planned(&s, fleet, &p), 0);
	CHECK_INT(p.n, 3);
	volatile int flag = 0;
	struct tpf_apply_opts o = { .parallelism = 1, .heartbeat = 3600, .interrupted = &flag };
	struct tpf_apply_result res;
	struct later l = { &flag, 0.3, 0 };
	pthread_t th;
	pthread_create(&th, NULL, set_later, &l);
	CHECK_INT(tpf_pipeline_apply(&s, &p, &o, &res), TPF_EINTERRUPTED);
	pthread_join(th, NULL);
	CHECK_INT(res.interrupted, 1);
	CHECK_INT(res.not_started, 2);
	CHECK_INT(res.failed_actions + res.added + res.changed + res.destroyed, 0);
	tpf_apply_result_release(&res);
	tpf_plan_release(&p);
	tpf_pipeline_close(&s);
	CHECK_STR(status_on_disk("ic-a-0"), "pending");
	CHECK_STR(status_on_disk("ic-a-1"), "");
	CHECK_STR(status_on_disk("ic-a-2"), "");
	delete_all(fleet);

	/* Interrupted before it began: nothing starts, nothing is created. */
	fresh_dir();
	free(fleet);
	fleet = write_fleet("ib", 2, "1s");
	CHECK_INT(open_planned(&s, fleet, &p), 0);
	flag = 1;
	CHECK_INT(tpf_pipeline_apply(&s, &p, &o, &res), TPF_EINTERRUPTED);
	CHECK_INT(res.interrupted, 0);
	CHECK_INT(res.not_started, 2);
	CHECK_INT(s.live.n, 0);
	tpf_apply_result_release(&res);
	tpf_plan_release(&p);
	tpf_pipeline_close(&s);
	CHECK_INT(open_planned(&s, fleet, &p), 0);
	CHECK_INT(s.live.n, 0);
	CHECK_INT(p.add, 2);
	tpf_plan_release(&p);
	tpf_pipeline_close(&s);
	free(fleet);
}

/* A state in which node tw-a-0 has 1 worker and tw-a-1 has 4. */
static void write_state(void)
{
	struct tpf_state st;
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_state_init(&st);
	st.fleet = xstrdup("tw");
	for (int i = 0; i < 2; i++) {
		char *name = xasprintf("tw-a-%d", i);
		struct tpf_state_node *sn = tpf_state_add(&st, name);
		sn->group = xstrdup("a");
		sn->index = i;
		sn->id = xasprintf("n-%d", i);
		sn->status = TPF_NODE_CREATED;
		sn->recipe.zone = xstrdup("z1");
		sn->recipe.accelerator_type = xstrdup(i ? "v4-32" : "v2-8");
		tpf_state_node_set_workers(sn, i ? 4 : 1);
		free(name);
	}
	char *path = xasprintf("%s/tpuform.state.json", dir);
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	free(path);
	tpf_state_release(&st);
	tpf_diags_release(&d);
}

static int diags_contain(const struct tpf_diags *d, const char *needle)
{
	for (size_t i = 0; i < d->n; i++)
		if (strstr(d->items[i].summary, needle))
			return 1;
	return 0;
}

/* `exec -worker 5` on a 1-worker node says why it cannot be done. */
static void test_apply__session_worker_target(void)
{
	fresh_dir();
	char *fleet = write_fleet("tw", 2, "1s");
	write_state();
	struct tpf_pipeline s;
	struct tpf_pipeline_opts o = TPF_PIPELINE_OPTS_INIT;
	o.file = fleet;
	o.refresh = 0; /* believe the state: both nodes count as READY */
	CHECK_INT(tpf_pipeline_open(&s, &o, NULL), 0);
	CHECK_INT(tpf_pipeline_refresh(&s, 0), 0);
	struct tpf_state_node *sn;
	const struct tpf_live_node *ln;
	struct tpf_transport *t;

	CHECK_INT(tpf_pipeline_target_worker(&s, "tw-a-0", 5, &sn, &ln, &t), TPF_ERROR);
	CHECK(diags_contain(&s.d, "node 'tw-a-0' has no worker 5: it has 1 worker (0)"));
	CHECK_INT(tpf_pipeline_target_worker(&s, "tw-a-1", 4, &sn, &ln, &t), TPF_ERROR);
	CHECK(diags_contain(&s.d, "node 'tw-a-1' has no worker 4: it has 4 workers (0 to 3)"));
	CHECK_INT(tpf_pipeline_target_worker(&s, "tw-a-1", -2, &sn, &ln, &t), TPF_ERROR);
	CHECK_INT(s.d.n, 3);
	tpf_diags_release(&s.d);
	tpf_diags_init(&s.d);

	CHECK_INT(tpf_pipeline_target_worker(&s, "tw-a-0", 0, &sn, &ln, &t), 0);
	CHECK(sn && ln && t);
	CHECK_INT(tpf_pipeline_target_worker(&s, "tw-a-1", 3, &sn, &ln, &t), 0);
	CHECK_INT(tpf_pipeline_target_worker(&s, "tw-a-1", -1, &sn, &ln, &t), 0);
	CHECK_INT(tpf_pipeline_target(&s, "tw-a-0", &sn, &ln, &t), 0);
	/* Not in state: said as before, whatever the worker. */
	CHECK_INT(tpf_pipeline_target_worker(&s, "tw-a-9", 0, &sn, &ln, &t), TPF_ERROR);
	CHECK(diags_contain(&s.d, "node 'tw-a-9' is not in the state of fleet 'tw'"));
	tpf_pipeline_close(&s);
	free(fleet);
}

/*
 * Ownership at delete time (docs/design.md section 4): between the
 * refresh that planned a destroy and the delete, the node is deleted and
 * made again under its name by another state. The executor passes the
 * state's lineage and the node's id down to remove, which reads the node
 * again and refuses: the other state's node survives, with its id.
 */
static void test_apply__delete_refuses_another_states_node(void)
{
	fresh_dir();
	char *fleet = write_fleet("own", 1, "0");
	struct tpf_pipeline s;
	struct tpf_plan p;
	struct tpf_apply_opts o = { .parallelism = 1, .heartbeat = 3600 };
	struct tpf_apply_result res;
	CHECK_INT(open_planned(&s, fleet, &p), 0);
	CHECK_INT(tpf_pipeline_apply(&s, &p, &o, &res), 0);
	tpf_apply_result_release(&res);
	tpf_plan_release(&p);
	tpf_pipeline_close(&s);

	struct tpf_pipeline_opts so = TPF_PIPELINE_OPTS_INIT;
	so.file = fleet;
	memset(&p, 0, sizeof(p));
	int rc = tpf_pipeline_open(&s, &so, "OperationTypeApply");
	if (!rc)
		rc = tpf_pipeline_refresh(&s, 0);
	if (!rc)
		rc = tpf_pipeline_plan(&s, 1, &p); /* destroy */
	CHECK_INT(rc, 0);
	CHECK_INT(p.destroyed, 1);
	/* Behind its back: deleted, and made again by another state. */
	struct tpf_live_node *was = s.live.n ? &s.live.nodes[0] : NULL;
	struct tpf_live_node now = { 0 };
	CHECK(was != NULL);
	if (!was)
		goto done;
	struct tpf_recipe r = { 0 };
	tpf_recipe_copy(&r, &was->recipe);
	tpf_kvlist_set(&r.labels, "tpuform-lineage", "fedcba9876543210");
	CHECK_INT(s.prov->ops->remove(s.prov, "z1", "own-a-0", NULL, &s.d), 0);
	CHECK_INT(s.prov->ops->create(s.prov, "own-a-0", &r, &now, &s.d), 0);
	tpf_recipe_release(&r);
	CHECK_INT(tpf_diags_errors(&s.d), 0);

	rc = tpf_pipeline_apply(&s, &p, &o, &res);
	CHECK(rc < 0);
	CHECK_INT(res.failed_actions, 1);
	CHECK(diags_contain(&s.d, "refusing to delete node 'own-a-0' in zone 'z1': it belongs to "
				  "another state: it carries tpuform-lineage=fedcba9876543210"));
	tpf_apply_result_release(&res);
	struct tpf_live_node after = { 0 };
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(s.prov->ops->get(s.prov, "z1", "own-a-0", &after, &d), 0);
	CHECK(after.id && now.id && !strcmp(after.id, now.id));
	CHECK_STR(tpf_kvlist_get(&after.recipe.labels, "tpuform-lineage"), "fedcba9876543210");
	tpf_live_node_release(&after);
	/* The test's own cleanup, unchecked. */
	CHECK_INT(s.prov->ops->remove(s.prov, "z1", "own-a-0", NULL, &d), 0);
	tpf_diags_release(&d);
done:
	tpf_live_node_release(&now);
	tpf_plan_release(&p);
	tpf_pipeline_close(&s);
	free(fleet);
}

/*
 * A reader without the lock (watch's next round, its session check) that
 * loaded the state before the first apply wrote it holds a made-up
 * lineage; by its refresh the apply's node exists. That node is this
 * state's: the refresh reads the state again and goes on, rather than
 * calling it another state's (watch stopped for good on it, t485 once).
 */
static void test_apply__fresh_reader_sees_the_first_write(void)
{
	fresh_dir();
	char *fleet = write_fleet("fr", 1, "0");
	struct tpf_pipeline reader, s;
	struct tpf_pipeline_opts ro = TPF_PIPELINE_OPTS_INIT;
	ro.file = fleet;
	CHECK_INT(tpf_pipeline_open(&reader, &ro, NULL), 0); /* no state file yet */
	CHECK_INT(reader.state.serial, 0);
	struct tpf_plan p;
	struct tpf_apply_opts o = { .parallelism = 1, .heartbeat = 3600 };
	struct tpf_apply_result res;
	CHECK_INT(open_planned(&s, fleet, &p), 0);
	CHECK_INT(tpf_pipeline_apply(&s, &p, &o, &res), 0);
	char *written = xstrdup(s.state.lineage);
	tpf_apply_result_release(&res);
	tpf_plan_release(&p);
	tpf_pipeline_close(&s);

	CHECK(strcmp(reader.state.lineage, written) != 0);
	CHECK_INT(tpf_pipeline_refresh(&reader, 0), 0);
	CHECK_STR(reader.state.lineage, written);
	CHECK(reader.state.serial > 0);
	CHECK_INT(reader.live.n, 1);
	CHECK_INT((int)tpf_diags_errors(&reader.d), 0);
	tpf_pipeline_close(&reader);

	/* A node truly another state's is still refused: a reader whose
	 * state was never written, and still is not, stops. */
	fresh_dir();
	char *f2 = write_fleet("fr", 1, "0");
	struct tpf_recipe r = { 0 };
	r.zone = xstrdup("z1");
	r.accelerator_type = xstrdup("v2-8");
	r.runtime_version = xstrdup("rt");
	r.workers = 1;
	tpf_kvlist_set(&r.labels, "tpuform-fleet", "fr");
	tpf_kvlist_set(&r.labels, "tpuform-lineage", "fedcba9876543210");
	struct tpf_live_node made = { 0 };
	ro.file = f2;
	CHECK_INT(tpf_pipeline_open(&reader, &ro, NULL), 0);
	CHECK_INT(reader.prov->ops->create(reader.prov, "fr-a-0", &r, &made, &reader.d), 0);
	CHECK_INT(tpf_pipeline_refresh(&reader, 0), TPF_EFOREIGN);
	CHECK_INT(reader.state.serial, 0);
	tpf_live_node_release(&made);
	tpf_recipe_release(&r);
	tpf_pipeline_close(&reader);
	free(written);
	free(f2);
	free(fleet);
}

int main(void)
{
	RUN(test_apply__interrupt_stops_a_create);
	RUN(test_apply__interrupt_counts);
	RUN(test_apply__session_worker_target);
	RUN(test_apply__delete_refuses_another_states_node);
	RUN(test_apply__fresh_reader_sees_the_first_write);
	free(dir);
	return unit_done();
}
