/*
 * The pipeline (engine/pipeline/pipeline.c) on the local provider: what
 * open, refresh and plan give a command, without printing anything.
 */
#include "engine/pipeline/pipeline.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dir; /* a fresh directory per test (fresh_dir) */

static void fresh_dir(void)
{
	free(dir);
	dir = unit_tmpdir();
}

static char *write_fleet(const char *name)
{
	char *path = xasprintf("%s/fleet.yaml", dir);
	FILE *f = fopen(path, "w");
	fprintf(f, "fleet: %s\n"
		   "provider:\n  local: { root: nodes }\n"
		   "run: exec sleep 300\n"
		   "groups:\n"
		   "  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 2 }\n",
		name);
	fclose(f);
	return path;
}

/* A state of fleet `fleet` with node NAME-a-0 recorded under provider id "n-1". */
static void write_state(const char *fleet)
{
	struct tpf_state st;
	struct tpf_diags d = TPF_DIAGS_INIT;
	tpf_state_init(&st);
	st.fleet = xstrdup(fleet);
	char *name = xasprintf("%s-a-0", fleet);
	struct tpf_state_node *sn = tpf_state_add(&st, name);
	sn->group = xstrdup("a");
	sn->id = xstrdup("n-1");
	sn->recipe.zone = xstrdup("z1");
	sn->recipe.accelerator_type = xstrdup("v2-8");
	char *path = xasprintf("%s/tpuform.state.json", dir);
	CHECK_INT(tpf_state_save_file(&st, path, &d), 0);
	free(path);
	free(name);
	tpf_state_release(&st);
	tpf_diags_release(&d);
}

struct seen {
	int locking, refreshing;
	char node[64];
};

static void on_progress(const struct tpf_pipeline_progress *ev, void *ctx)
{
	struct seen *s = ctx;
	if (ev->kind == TPF_PIPELINE_LOCKING)
		s->locking++;
	if (ev->kind == TPF_PIPELINE_REFRESHING) {
		s->refreshing++;
		snprintf(s->node, sizeof(s->node), "%s [id=%s]", ev->node, ev->id);
	}
}

static void test_session__no_refresh_believes_the_state(void)
{
	fresh_dir();
	char *fleet = write_fleet("us");
	write_state("us");
	struct seen seen = { 0 };
	struct tpf_pipeline_opts o = TPF_PIPELINE_OPTS_INIT;
	o.file = fleet;
	o.refresh = 0;
	o.on_progress = on_progress;
	o.ctx = &seen;
	struct tpf_pipeline s;
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	CHECK_INT(tpf_pipeline_open(&s, &o, NULL), 0);
	CHECK_INT(tpf_pipeline_refresh(&s, 1), 0);
	/* Only the node with a provider id is refreshed, and taken as READY. */
	CHECK_INT(seen.refreshing, 1);
	CHECK_STR(seen.node, "us-a-0 [id=n-1]");
	CHECK_INT(s.live.n, 1);
	const struct tpf_live_node *ln = tpf_live_set_find(&s.live, "us-a-0");
	CHECK(ln && ln->state && !strcmp(ln->state, "READY"));
	CHECK(ln && ln->recipe.zone && !strcmp(ln->recipe.zone, "z1"));
	CHECK_INT(s.facts.n, 0); /* no probe without a refresh */
	CHECK_INT(s.desired.n, 2);

	CHECK_INT(tpf_pipeline_plan(&s, 0, &p), 0);
	/* The plan carries what a saved plan needs, set by the engine. */
	CHECK(p.fleet_sha256 && !strncmp(p.fleet_sha256, "sha256:", 7));
	CHECK_STR(p.fleet_sha256, s.fleet_sha256);
	CHECK(p.commit == NULL); /* the fleet has no source */
	CHECK_STR(p.lineage, s.state.lineage);
	CHECK_INT(p.serial, s.state.serial);
	int creates_a1 = 0;
	for (size_t i = 0; i < p.n; i++)
		creates_a1 |= p.actions[i].kind == TPF_ACT_CREATE && !strcmp(p.actions[i].node, "us-a-1");
	CHECK(creates_a1);
	tpf_plan_release(&p);
	tpf_pipeline_close(&s);
	free(fleet);
}

static void test_session__lock_progress_and_no_lock(void)
{
	fresh_dir();
	char *fleet = write_fleet("lk");
	struct seen seen = { 0 };
	struct tpf_pipeline_opts o = TPF_PIPELINE_OPTS_INIT;
	o.file = fleet;
	o.lock_timeout = 1;
	o.on_progress = on_progress;
	o.ctx = &seen;
	struct tpf_pipeline s;
	CHECK_INT(tpf_pipeline_open(&s, &o, "OperationTypeApply"), 0);
	CHECK_INT(seen.locking, 1);
	CHECK(s.lock.fd >= 0);
	tpf_pipeline_close(&s);

	o.no_lock = 1;
	CHECK_INT(tpf_pipeline_open(&s, &o, "OperationTypeApply"), 0);
	CHECK_INT(seen.locking, 1);
	CHECK(s.lock.fd < 0);
	tpf_pipeline_close(&s);

	/* Without a timeout there is nothing to wait for, so nothing to say. */
	o.no_lock = 0;
	o.lock_timeout = 0;
	CHECK_INT(tpf_pipeline_open(&s, &o, "OperationTypeApply"), 0);
	CHECK_INT(seen.locking, 1);
	CHECK(s.lock.fd >= 0);
	tpf_pipeline_close(&s);
	free(fleet);
}

static void test_session__open_refusals(void)
{
	fresh_dir();
	struct tpf_pipeline_opts o = TPF_PIPELINE_OPTS_INIT;
	char *missing = xasprintf("%s/none.yaml", dir);
	o.file = missing;
	struct tpf_pipeline s;
	CHECK(tpf_pipeline_open(&s, &o, NULL) != 0);
	CHECK(s.d.n == 1 && strstr(s.d.items[0].summary, "does not exist") &&
	      strstr(s.d.items[0].summary, missing));
	CHECK(!s.have_fleet);
	tpf_pipeline_close(&s);

	char *fleet = write_fleet("mine");
	write_state("theirs");
	o.file = fleet;
	CHECK(tpf_pipeline_open(&s, &o, NULL) != 0);
	CHECK(s.d.n == 1 && strstr(s.d.items[0].summary, "belongs to fleet 'theirs', not 'mine'"));
	tpf_pipeline_close(&s);
	free(fleet);
	free(missing);
}

static void test_session__apply_env(void)
{
	struct tpf_pipeline s;
	memset(&s, 0, sizeof(s));
	tpf_diags_init(&s.d);
	struct tpf_apply_opts opts;
	memset(&opts, 0, sizeof(opts));
	unsetenv("TPUFORM_HEARTBEAT");
	unsetenv("TPUFORM_WAIT_TIMEOUT");
	CHECK_INT(tpf_pipeline_apply_env(&s, &opts), 0);
	CHECK(opts.heartbeat == 10 && opts.wait_timeout == 1200);
	setenv("TPUFORM_HEARTBEAT", "0.5", 1);
	setenv("TPUFORM_WAIT_TIMEOUT", "2m", 1);
	CHECK_INT(tpf_pipeline_apply_env(&s, &opts), 0);
	CHECK(opts.heartbeat == 0.5 && opts.wait_timeout == 120);
	/* A typo is an error naming the variable, not a silent 0. */
	setenv("TPUFORM_WAIT_TIMEOUT", "20 min", 1);
	CHECK(tpf_pipeline_apply_env(&s, &opts) != 0);
	CHECK(s.d.n == 1 && strstr(s.d.items[0].summary, "TPUFORM_WAIT_TIMEOUT") &&
	      strstr(s.d.items[0].summary, "20 min"));
	CHECK(opts.wait_timeout == 120);
	unsetenv("TPUFORM_HEARTBEAT");
	unsetenv("TPUFORM_WAIT_TIMEOUT");
	tpf_diags_release(&s.d);
}

int main(void)
{
	RUN(test_session__no_refresh_believes_the_state);
	RUN(test_session__lock_progress_and_no_lock);
	RUN(test_session__open_refusals);
	RUN(test_session__apply_env);
	free(dir);
	return unit_done();
}
