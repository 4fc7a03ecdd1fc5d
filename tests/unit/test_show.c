/*
 * engine/show/show.h: the cells of `tpuform show`'s one line per node, decided
 * from plain structs (a state, live nodes, job facts), and the state's
 * per-node preemption count (state/state_record.c) that the PREEMPTED
 * column reads.
 */
#include "engine/show/show.h"
#include "tests/unit/unit.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static struct tpf_state_node *add_node(struct tpf_pipeline *s, const char *name, enum tpf_node_status status,
				       int nworkers)
{
	struct tpf_state_node *sn = tpf_state_add(&s->state, name);
	sn->status = status;
	xstrset(&sn->group, "a");
	xstrset(&sn->id, "id-1");
	xstrset(&sn->recipe.accelerator_type, "v4-16");
	xstrset(&sn->recipe.zone, "z1");
	sn->recipe.spot = 1;
	sn->recipe.workers = nworkers;
	tpf_state_node_set_workers(sn, (size_t)nworkers);
	for (int w = 0; w < nworkers; w++) {
		sn->workers[w].job_state = TPF_JOB_STATE_ALIVE; /* the state's last word */
		xstrset(&sn->workers[w].script_hash, "sha256:1");
	}
	return sn;
}

static void add_live(struct tpf_pipeline *s, const char *name, const char *state)
{
	struct tpf_live_node *ln = tpf_live_set_add(&s->live);
	ln->name = xstrdup(name);
	ln->state = xstrdup(state);
	ln->id = xstrdup("id-1");
}

static void add_fact(struct tpf_pipeline *s, const char *node, int w, const char *job_state,
		     int code, const char *last_log)
{
	XGROW(s->facts.items, s->facts.n + 1, s->facts.alloc);
	struct tpf_job_fact *f = &s->facts.items[s->facts.n++];
	memset(f, 0, sizeof(*f));
	f->node = xstrdup(node);
	f->worker = w;
	f->state = job_state ? tpf_job_state_from_name(job_state) : TPF_JOB_STATE_UNREACHABLE;
	f->exit_code = code;
	f->last_log = last_log ? xstrdup(last_log) : NULL;
	f->stalled_for = -1;
}

static void open_session(struct tpf_pipeline *s, int refresh)
{
	tpf_pipeline_init(s);
	tpf_state_init(&s->state);
	s->have_state = 1;
	s->o.refresh = refresh;
}

static void test_show__age(void)
{
	char b[32];
	tpf_show_fmt_age(-1, b, sizeof(b));
	CHECK_STR(b, "-");
	tpf_show_fmt_age(45, b, sizeof(b));
	CHECK_STR(b, "45s");
	tpf_show_fmt_age(12 * 60 + 59, b, sizeof(b));
	CHECK_STR(b, "12m");
	tpf_show_fmt_age(3 * 3600 + 12 * 60, b, sizeof(b));
	CHECK_STR(b, "3h12m");
	tpf_show_fmt_age(4 * 86400 + 2 * 3600 + 59, b, sizeof(b));
	CHECK_STR(b, "4d2h");
}

/* A preempted node's workers are never "running", whatever the state
 * recorded last; a missing one neither. */
static void test_show__dead_nodes_are_not_running(void)
{
	struct tpf_pipeline s;
	open_session(&s, 1);
	add_node(&s, "f-a-0", TPF_NODE_CREATED, 2);
	add_live(&s, "f-a-0", "PREEMPTED");
	add_node(&s, "f-a-1", TPF_NODE_CREATED, 1);
	add_node(&s, "f-a-2", TPF_NODE_CREATED, 1);
	add_live(&s, "f-a-2", "TERMINATED");
	struct tpf_show_row r;
	tpf_show_row(&s, tpf_state_find(&s.state, "f-a-0"), tpf_now_wall(), &r);
	CHECK_STR(r.state, "PREEMPTED");
	CHECK_STR(r.dead, "node preempted");
	CHECK_STR(r.job, "unknown: node preempted");
	CHECK_INT(r.up, 0);
	CHECK_INT(r.total, 2);
	tpf_show_row(&s, tpf_state_find(&s.state, "f-a-1"), tpf_now_wall(), &r);
	CHECK_STR(r.state, "MISSING");
	CHECK_STR(r.job, "unknown: node missing");
	tpf_show_row(&s, tpf_state_find(&s.state, "f-a-2"), tpf_now_wall(), &r);
	CHECK_STR(r.job, "unknown: node terminated");
	tpf_pipeline_close(&s);

	/* Without a refresh nothing is known to be missing: the state's
	 * word, marked as not asked now. */
	open_session(&s, 0);
	add_node(&s, "f-a-1", TPF_NODE_CREATED, 1);
	tpf_show_row(&s, tpf_state_find(&s.state, "f-a-1"), tpf_now_wall(), &r);
	CHECK_STR(r.state, "UNKNOWN");
	CHECK(r.dead == NULL);
	CHECK_STR(r.job, "running?");
	tpf_pipeline_close(&s);
}

static void test_show__ready_node_cells(void)
{
	struct tpf_pipeline s;
	open_session(&s, 1);
	struct tpf_state_node *sn = add_node(&s, "f-a-0", TPF_NODE_CREATED, 3);
	xstrset(&sn->created_at, "2026-01-01T00:00:00Z");
	sn->preemptions = 4;
	sn->workers[1].restarts = 2;
	add_live(&s, "f-a-0", "READY");
	add_fact(&s, "f-a-0", 0, "alive", -1, "step 10");
	add_fact(&s, "f-a-0", 1, "alive", -1, NULL);
	add_fact(&s, "f-a-0", 2, NULL, -1, NULL); /* unreachable */
	struct tpf_show_row r;
	double now = tpf_parse_rfc3339("2026-01-01T03:12:00Z");
	tpf_show_row(&s, sn, now, &r);
	CHECK_STR(r.type, "v4-16");
	CHECK_STR(r.zone, "z1");
	CHECK_STR(r.class, "spot");
	CHECK_INT((long)r.age, 3 * 3600 + 12 * 60);
	CHECK_INT(r.up, 2);
	CHECK_INT(r.total, 3);
	CHECK_INT(r.restarts, 2);
	CHECK_INT(r.preemptions, 4);
	CHECK_STR(r.job, "running 2/3");
	CHECK_STR(r.last_log, "step 10");
	CHECK(r.dead == NULL);
	tpf_pipeline_close(&s);

	/* A failed job: its exit status, the first non-zero one. */
	open_session(&s, 1);
	sn = add_node(&s, "f-b-0", TPF_NODE_CREATED, 2);
	xstrset(&sn->recipe.accelerator_type, NULL);
	xstrset(&sn->recipe.compute.machine_type, "tpu7x-standard-4t");
	add_live(&s, "f-b-0", "READY");
	add_fact(&s, "f-b-0", 0, "exited", 0, "done");
	add_fact(&s, "f-b-0", 1, "exited", 3, "boom");
	tpf_show_row(&s, sn, tpf_now_wall(), &r);
	CHECK_STR(r.type, "tpu7x-standard-4t");
	CHECK_STR(r.job, "exited 3");
	CHECK(r.age < 0); /* no created_at */
	tpf_pipeline_close(&s);
}

static void test_show__suggest_node(void)
{
	struct tpf_pipeline s;
	open_session(&s, 1);
	add_node(&s, "f-a-3", TPF_NODE_CREATED, 1);
	add_node(&s, "f-a-12", TPF_NODE_CREATED, 1);
	CHECK_STR(tpf_show_suggest_node(&s, "f-a-3x"), "f-a-3");
	CHECK(tpf_show_suggest_node(&s, "something-else-entirely") == NULL);
	tpf_pipeline_close(&s);
}

/* The count belongs to the node's name: it survives the replacement (a
 * new pending record, a new id) and the state file. */
static void test_show__preemptions_survive_replacement(void)
{
	struct tpf_state st;
	tpf_state_init(&st);
	struct tpf_recipe r;
	struct tpf_job job;
	memset(&r, 0, sizeof(r));
	memset(&job, 0, sizeof(job));
	r.workers = 1;
	tpf_state_record_pending(&st, "f-a-0", "a", 0, &r, &job);
	tpf_state_record_created(&st, "f-a-0", "id-1", "2026-01-01T00:00:00Z");
	tpf_state_record_preempted(&st, "f-a-0");
	tpf_state_record_pending(&st, "f-a-0", "a", 0, &r, &job);
	tpf_state_record_created(&st, "f-a-0", "id-2", "2026-01-01T01:00:00Z");
	tpf_state_record_preempted(&st, "f-a-0");
	tpf_state_record_pending(&st, "f-a-0", "a", 0, &r, &job);
	tpf_state_record_preempted(&st, "no-such-node"); /* nothing */
	CHECK_INT(tpf_state_find(&st, "f-a-0")->preemptions, 2);
	struct tpf_state_node *copy = tpf_state_node_clone(tpf_state_find(&st, "f-a-0"));
	CHECK_INT(copy->preemptions, 2);
	tpf_state_node_free(copy);
	json_t *j = tpf_state_to_json(&st);
	CHECK_INT((int)json_integer_value(json_object_get(
			  json_array_get(json_object_get(j, "nodes"), 0), "preemptions")),
		  2);
	struct tpf_state back;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_state_from_json(&back, j, "test", &d), 0);
	CHECK_INT(tpf_state_find(&back, "f-a-0")->preemptions, 2);
	tpf_state_release(&back);
	/* Never preempted: the key is left out, as before. */
	tpf_state_find(&st, "f-a-0")->preemptions = 0;
	json_decref(j);
	j = tpf_state_to_json(&st);
	CHECK(json_object_get(json_array_get(json_object_get(j, "nodes"), 0), "preemptions") ==
	      NULL);
	json_decref(j);
	tpf_diags_release(&d);
	tpf_recipe_release(&r);
	tpf_state_release(&st);
}

/* A node of the state with no VM and no id (its create refused, or
 * never answered): NOT CREATED, no age, and why (the state's note), with
 * the retry time when watch's backoff set one. issue 26 item 8. */
static void test_show__not_created_says_why(void)
{
	struct tpf_pipeline s;
	open_session(&s, 1);
	struct tpf_state_node *sn = add_node(&s, "f-a-0", TPF_NODE_PENDING, 2);
	xstrset(&sn->id, NULL);
	xstrset(&sn->created_at, "2026-01-01T00:00:00Z"); /* the VM it replaced */
	xstrset(&sn->refused, "zone z1 is out of capacity");
	struct tpf_show_row r;
	tpf_show_row(&s, sn, tpf_now_wall(), &r);
	CHECK_STR(r.state, "NOT CREATED");
	CHECK(r.age < 0);
	CHECK_STR(r.why, "not created: zone z1 is out of capacity; the next 'tpuform apply' or "
			 "'watch' round tries again");
	CHECK_STR(r.job, "unknown: node not created");
	xstrset(&sn->retry_after, "2026-01-01T14:40:12Z");
	tpf_show_row(&s, sn, tpf_now_wall(), &r);
	CHECK_STR(r.why, "not created: zone z1 is out of capacity, retry after 14:40:12 UTC");
	/* no note: plainly not created; a declared node not in the state too */
	xstrset(&sn->refused, NULL);
	tpf_show_row(&s, sn, tpf_now_wall(), &r);
	CHECK_STR(r.why, "not created");
	char why[64];
	tpf_show_not_created(NULL, why, sizeof(why));
	CHECK_STR(why, "not created");
	/* a node that had an id and is gone is missing, not "not created" */
	struct tpf_state_node *gone = add_node(&s, "f-a-1", TPF_NODE_CREATED, 1);
	tpf_show_row(&s, gone, tpf_now_wall(), &r);
	CHECK_STR(r.state, "MISSING");
	CHECK_STR(r.why, "");
	tpf_pipeline_close(&s);
}

int main(void)
{
	RUN(test_show__age);
	RUN(test_show__dead_nodes_are_not_running);
	RUN(test_show__ready_node_cells);
	RUN(test_show__suggest_node);
	RUN(test_show__preemptions_survive_replacement);
	RUN(test_show__not_created_says_why);
	return unit_done();
}
