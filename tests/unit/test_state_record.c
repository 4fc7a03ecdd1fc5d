/*
 * The transitions of a node's record (state/state.h, state_record.c): the
 * generation rule of pending, what a failed create leaves, adoption with
 * the queued rule, a re-created node's workers, gang restarts, deep copies.
 */
#include "state/state.h"
#include "state/state_priv.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static void recipe(struct tpf_recipe *r, int workers, int queued)
{
	memset(r, 0, sizeof(*r));
	r->zone = xstrdup("z1");
	r->accelerator_type = xstrdup("v4-16");
	r->workers = workers;
	r->queued = queued;
}

static void test_state_record__pending_generation(void)
{
	struct tpf_state st;
	tpf_state_init(&st);
	struct tpf_recipe r;
	recipe(&r, 2, 0);
	struct tpf_job job = { 0 };
	struct tpf_state_node *sn = tpf_state_record_pending(&st, "f-a-0", "a", 0, &r, &job);
	CHECK_INT(sn->status, TPF_NODE_PENDING);
	CHECK_INT(sn->generation, 0);
	CHECK_INT(sn->nworkers, 2);
	/* Still pending (a create that never answered): same generation. */
	sn = tpf_state_record_pending(&st, "f-a-0", "a", 0, &r, &job);
	CHECK_INT(sn->generation, 0);
	tpf_state_record_created(&st, "f-a-0", "id-1", "2026-01-01T00:00:00Z");
	sn = tpf_state_find(&st, "f-a-0");
	CHECK_INT(sn->status, TPF_NODE_CREATED);
	CHECK_STR(sn->id, "id-1");
	/* Its delete goes out (a replace): recorded, and kept until the
	 * node is recorded again. */
	tpf_state_record_delete_sent(&st, "f-a-0", "2026-01-01T01:00:00Z");
	CHECK_STR(sn->delete_sent_at, "2026-01-01T01:00:00Z");
	tpf_state_record_delete_sent(&st, "nope", "2026-01-01T01:00:00Z"); /* no such node */
	/* Re-created after 3 restarts: the generation goes past them. */
	sn->workers[1].restarts = 3;
	sn = tpf_state_record_pending(&st, "f-a-0", "a", 0, &r, &job);
	CHECK_INT(sn->generation, 4);
	CHECK(sn->id == NULL);
	CHECK(sn->delete_sent_at == NULL); /* the new create is what the record says now */
	CHECK_INT(sn->workers[1].restarts, 0);
	tpf_recipe_release(&r);
	tpf_state_release(&st);
}

static void test_state_record__not_created(void)
{
	struct tpf_state st;
	tpf_state_init(&st);
	struct tpf_recipe r;
	recipe(&r, 1, 0);
	struct tpf_job job = { 0 };
	tpf_state_record_pending(&st, "n0", "a", 0, &r, &job);
	tpf_state_record_not_created(&st, "n0", 1, 0);
	CHECK_INT(tpf_state_find(&st, "n0")->status, TPF_NODE_TAINTED);
	tpf_state_record_not_created(&st, "n0", 0, 0);
	CHECK(tpf_state_find(&st, "n0") == NULL);
	/* Deferred with history: stays pending, generation kept. */
	struct tpf_state_node *sn = tpf_state_record_pending(&st, "n1", "a", 1, &r, &job);
	sn->generation = 2;
	tpf_state_record_not_created(&st, "n1", 0, 1);
	CHECK_INT(tpf_state_find(&st, "n1")->status, TPF_NODE_PENDING);
	CHECK_INT(tpf_state_find(&st, "n1")->generation, 2);
	/* Deferred without history: forgotten. */
	tpf_state_record_pending(&st, "n2", "a", 2, &r, &job);
	tpf_state_record_not_created(&st, "n2", 0, 1);
	CHECK(tpf_state_find(&st, "n2") == NULL);
	tpf_recipe_release(&r);
	tpf_state_release(&st);
}

/* Every zone refused a node with history (issue 26 item 8): it stays
 * pending with why and when it is tried again; the note survives a JSON
 * round trip and a clone; the next create clears it. */
static void test_state_record__refused(void)
{
	struct tpf_state st;
	tpf_state_init(&st);
	struct tpf_recipe r;
	recipe(&r, 1, 0);
	struct tpf_job job = { 0 };
	tpf_state_record_pending(&st, "n0", "a", 0, &r, &job);
	tpf_state_record_created(&st, "n0", "id-1", "2026-01-01T00:00:00Z");
	tpf_state_record_pending(&st, "n0", "a", 0, &r, &job); /* the replacement */
	tpf_state_record_not_created(&st, "n0", 0, 1);
	tpf_state_record_refused(&st, "n0", "zone z1 is out of capacity", "2026-01-01T00:01:00Z");
	struct tpf_state_node *sn = tpf_state_find(&st, "n0");
	CHECK_INT(sn->status, TPF_NODE_PENDING);
	CHECK_INT(sn->generation, 1);
	CHECK_STR(sn->refused, "zone z1 is out of capacity");
	CHECK_STR(sn->retry_after, "2026-01-01T00:01:00Z");
	struct tpf_state_node *c = tpf_state_node_clone(sn);
	CHECK_STR(c->refused, "zone z1 is out of capacity");
	CHECK_STR(c->retry_after, "2026-01-01T00:01:00Z");
	tpf_state_node_free(c);

	json_t *j = tpf_state_to_json(&st);
	struct tpf_state back;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_state_from_json(&back, j, "mem", &d), 0);
	CHECK_STR(tpf_state_find(&back, "n0")->refused, "zone z1 is out of capacity");
	CHECK_STR(tpf_state_find(&back, "n0")->retry_after, "2026-01-01T00:01:00Z");
	tpf_state_release(&back);
	tpf_diags_release(&d);
	json_decref(j);

	/* tried again: the note stays until a zone takes it (a watch round
	 * that finds the zone backed off changes nothing), then goes */
	sn = tpf_state_record_pending(&st, "n0", "a", 0, &r, &job);
	CHECK_STR(sn->refused, "zone z1 is out of capacity");
	tpf_state_record_not_created(&st, "n0", 0, 1);
	CHECK_STR(tpf_state_find(&st, "n0")->refused, "zone z1 is out of capacity");
	tpf_state_record_created(&st, "n0", "id-2", "2026-01-01T00:02:00Z");
	sn = tpf_state_find(&st, "n0");
	CHECK(sn->refused == NULL && sn->retry_after == NULL);
	/* a failed create that may have left a node is no refusal */
	tpf_state_record_pending(&st, "n0", "a", 0, &r, &job);
	tpf_state_record_refused(&st, "n0", "zone z1 is out of capacity", NULL);
	tpf_state_record_not_created(&st, "n0", 1, 0);
	CHECK_INT(tpf_state_find(&st, "n0")->status, TPF_NODE_TAINTED);
	CHECK(tpf_state_find(&st, "n0")->refused == NULL);
	/* a node not in the state gets none */
	tpf_state_record_refused(&st, "nobody", "zone z1 is out of capacity", NULL);
	CHECK(tpf_state_find(&st, "nobody") == NULL);
	j = tpf_state_to_json(&st);
	CHECK(!json_object_get(json_array_get(json_object_get(j, "nodes"), 0), "refused"));
	json_decref(j);
	tpf_recipe_release(&r);
	tpf_state_release(&st);
}

static void test_state_record__adoption_and_new_id(void)
{
	struct tpf_state st;
	tpf_state_init(&st);
	struct tpf_recipe declared;
	recipe(&declared, 2, 1);
	struct tpf_live_node ln;
	memset(&ln, 0, sizeof(ln));
	ln.name = xstrdup("f-a-0");
	ln.id = xstrdup("100");
	ln.create_time = xstrdup("2026-01-01T00:00:00Z");
	recipe(&ln.recipe, 2, 0);
	struct tpf_job job = { 0 };
	job.run = xstrdup("train");
	/* The provider cannot tell it was queued: the declared value. */
	struct tpf_state_node *sn =
		tpf_state_record_running(&st, "f-a-0", "a", 0, &ln, &declared, &job);
	CHECK_INT(sn->recipe.queued, 1);
	CHECK_STR(sn->id, "100");
	CHECK_STR(sn->job.run, "train");
	xstrset(&sn->workers[0].host_key, "SHA256:pinned");
	/* Same id again: the pin stays. */
	sn = tpf_state_record_running(&st, "f-a-0", "a", 0, &ln, &declared, &job);
	CHECK_STR(sn->workers[0].host_key, "SHA256:pinned");
	/* A new id: new VMs, the pin goes. */
	xstrset(&ln.id, "200");
	sn = tpf_state_record_running(&st, "f-a-0", "a", 0, &ln, &declared, &job);
	CHECK_STR(sn->id, "200");
	CHECK(sn->workers[0].host_key == NULL);
	CHECK_INT(sn->nworkers, 2);
	/* A provider that says it is queued wins over the declaration. */
	ln.recipe.queued = 0;
	ln.queued_state = xstrdup("ACTIVE");
	struct tpf_recipe rec = { 0 };
	tpf_state_adopt_queued(&rec, &ln, &declared);
	CHECK_INT(rec.queued, 0);
	tpf_live_node_release(&ln);
	tpf_job_release(&job);
	tpf_recipe_release(&declared);
	tpf_state_release(&st);
}

/* A bad host (issue 21): marked from the worker's preflight count, its zone,
 * id and failure kept, in the JSON, through a clone, and across the
 * replacement (pending again); a node not created is not marked. */
static void test_state_record__bad_host(void)
{
	struct tpf_state st;
	tpf_state_init(&st);
	struct tpf_recipe r;
	recipe(&r, 2, 0);
	struct tpf_job job = { 0 };
	tpf_state_record_pending(&st, "f-a-0", "a", 0, &r, &job);
	tpf_state_record_bad_host(&st, "f-a-0", 1, "the TPU is in use");
	CHECK_INT(tpf_state_find(&st, "f-a-0")->status, TPF_NODE_PENDING); /* not created: no */
	tpf_state_record_created(&st, "f-a-0", "id-1", "2026-01-01T00:00:00Z");
	struct tpf_state_worker w = { .index = 1, .exit_code = -1, .preflight_failures = 2 };
	w.preflight_error = xstrdup("the TPU is in use: pid 42 (python3 t.py) holds /dev/accel0");
	CHECK(tpf_state_record_worker(&st, "f-a-0", &w));
	free(w.preflight_error);
	tpf_state_record_bad_host(&st, "f-a-0", 1, tpf_state_find(&st, "f-a-0")->workers[1].preflight_error);
	struct tpf_state_node *sn = tpf_state_find(&st, "f-a-0");
	CHECK_INT(sn->status, TPF_NODE_BAD_HOST);
	CHECK_STR(sn->bad_host, "zone z1, id id-1: worker 1 failed preflight 2 times: the TPU is in "
				"use: pid 42 (python3 t.py) holds /dev/accel0");
	json_t *j = tpf_state_node_to_json(sn);
	CHECK_STR(json_string_value(json_object_get(j, "bad_host")), sn->bad_host);
	json_t *wj = json_array_get(json_object_get(j, "workers"), 1);
	CHECK_INT((int)json_integer_value(json_object_get(wj, "preflight_failures")), 2);
	json_decref(j);
	struct tpf_state_node *c = tpf_state_node_clone(sn);
	CHECK_STR(c->bad_host, sn->bad_host);
	CHECK_INT(c->workers[1].preflight_failures, 2);
	tpf_state_node_free(c);
	/* Replaced: a new generation, the bad host remembered, counts reset. */
	sn = tpf_state_record_pending(&st, "f-a-0", "a", 0, &r, &job);
	CHECK_INT(sn->status, TPF_NODE_PENDING);
	CHECK(sn->bad_host && strstr(sn->bad_host, "id id-1"));
	CHECK_INT(sn->workers[1].preflight_failures, 0);
	tpf_recipe_release(&r);
	tpf_state_release(&st);
}

static void test_state_record__gang_restart_and_clone(void)
{
	struct tpf_state st;
	tpf_state_init(&st);
	struct tpf_recipe r;
	recipe(&r, 3, 0);
	struct tpf_job job = { 0 };
	struct tpf_state_node *sn = tpf_state_record_pending(&st, "g", "a", 0, &r, &job);
	sn->workers[0].restarts = 1;
	sn->workers[2].restarts = 4;
	int all[] = { 0, 1, 2 };
	tpf_state_count_restart(&st, "g", all, 3, 1, "2026-01-01T00:00:00Z");
	for (int w = 0; w < 3; w++)
		CHECK_INT(sn->workers[w].restarts, 5);
	int one[] = { 1, 7 }; /* 7: no such worker, ignored */
	tpf_state_count_restart(&st, "g", one, 2, 0, "2026-01-02T00:00:00Z");
	CHECK_INT(sn->workers[1].restarts, 6);
	CHECK_STR(sn->workers[1].restarted_at, "2026-01-02T00:00:00Z");
	struct tpf_state_node *copy = tpf_state_node_clone(sn);
	CHECK_INT(copy->workers[1].restarts, 6);
	xstrset(&copy->workers[1].script_hash, "sha256:x");
	CHECK_INT(tpf_state_record_worker(&st, "g", &copy->workers[1]), 1);
	CHECK_STR(tpf_state_find(&st, "g")->workers[1].script_hash, "sha256:x");
	CHECK_INT(tpf_state_record_worker(&st, "gone", &copy->workers[1]), 0);
	tpf_state_node_free(copy);
	tpf_recipe_release(&r);
	tpf_state_release(&st);
}

/* A job's checkpoint (issue 21) belongs to the node's name: recorded when
 * it differs (checkpoint_at then), cut at 256 bytes on a UTF-8 boundary,
 * kept through JSON, a clone and the node's replacement (pending again,
 * a new id); a state file with a longer one is refused. */
static void test_state_record__checkpoint(void)
{
	struct tpf_state st;
	tpf_state_init(&st);
	xstrset(&st.fleet, "f");
	struct tpf_recipe r;
	recipe(&r, 2, 0);
	struct tpf_job job = { 0 };
	tpf_state_record_pending(&st, "f-a-0", "a", 0, &r, &job);
	tpf_state_record_created(&st, "f-a-0", "id-1", "2026-01-01T00:00:00Z");
	CHECK_INT(tpf_state_record_checkpoint(&st, "f-a-0", NULL, "t0"), 0);
	CHECK_INT(tpf_state_record_checkpoint(&st, "f-a-0", "", "t0"), 0);
	CHECK_INT(tpf_state_record_checkpoint(&st, "gone", "1", "t0"), 0);
	CHECK_INT(tpf_state_record_checkpoint(&st, "f-a-0", "1200", "2026-01-01T01:00:00Z"), 1);
	/* The same value again: no change, the first sighting's time kept. */
	CHECK_INT(tpf_state_record_checkpoint(&st, "f-a-0", "1200", "2026-01-01T02:00:00Z"), 0);
	struct tpf_state_node *sn = tpf_state_find(&st, "f-a-0");
	CHECK_STR(sn->last_checkpoint, "1200");
	CHECK_STR(sn->checkpoint_at, "2026-01-01T01:00:00Z");
	CHECK(!tpf_state_checkpoint_differs(sn, "1200"));
	CHECK(tpf_state_checkpoint_differs(sn, "1300"));
	/* Cut at 256 bytes, never inside a character: 255 'x' and a 2-byte
	 * e-acute would end at 257, so the cut is at 255. */
	char big[300];
	memset(big, 'x', 255);
	strcpy(big + 255, "\xc3\xa9tail");
	CHECK_INT(tpf_state_record_checkpoint(&st, "f-a-0", big, "t1"), 1);
	CHECK_INT((int)strlen(sn->last_checkpoint), 255);
	CHECK(!tpf_state_checkpoint_differs(sn, big));
	CHECK_INT(tpf_state_record_checkpoint(&st, "f-a-0", "1200", "2026-01-01T03:00:00Z"), 1);
	/* JSON and back. */
	json_t *j = tpf_state_to_json(&st);
	struct tpf_state back;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_state_from_json(&back, j, "mem", &d), 0);
	CHECK_STR(tpf_state_find(&back, "f-a-0")->last_checkpoint, "1200");
	CHECK_STR(tpf_state_find(&back, "f-a-0")->checkpoint_at, "2026-01-01T03:00:00Z");
	tpf_state_release(&back);
	/* A hand-edited one past the limit is refused, naming the field. */
	json_t *nodes = json_object_get(j, "nodes");
	json_t *nj = json_is_array(nodes) ? json_array_get(nodes, 0) : json_object_get(nodes, "f-a-0");
	CHECK(nj != NULL);
	char huge[400];
	memset(huge, '7', 300);
	huge[300] = 0;
	json_object_set_new(nj, "last_checkpoint", json_string(huge));
	CHECK(tpf_state_from_json(&back, j, "mem", &d) != 0);
	CHECKF(d.n && strstr(d.items[d.n - 1].summary, "last_checkpoint") &&
		       strstr(d.items[d.n - 1].summary, "at most 256 bytes"),
	       "%s", d.n ? d.items[d.n - 1].summary : "(none)");
	tpf_state_release(&back);
	tpf_diags_release(&d);
	json_decref(j);
	/* A clone has it; a replacement (pending, then a new id) keeps it. */
	struct tpf_state_node *c = tpf_state_node_clone(sn);
	CHECK_STR(c->last_checkpoint, "1200");
	CHECK_STR(c->checkpoint_at, "2026-01-01T03:00:00Z");
	tpf_state_node_free(c);
	tpf_state_record_pending(&st, "f-a-0", "a", 0, &r, &job);
	tpf_state_record_created(&st, "f-a-0", "id-2", "2026-01-02T00:00:00Z");
	sn = tpf_state_find(&st, "f-a-0");
	CHECK_STR(sn->last_checkpoint, "1200");
	tpf_state_record_refreshed(&st, "f-a-0", "id-3", "z1", NULL);
	CHECK_STR(tpf_state_find(&st, "f-a-0")->last_checkpoint, "1200");
	tpf_recipe_release(&r);
	tpf_state_release(&st);
}

int main(void)
{
	RUN(test_state_record__pending_generation);
	RUN(test_state_record__not_created);
	RUN(test_state_record__refused);
	RUN(test_state_record__adoption_and_new_id);
	RUN(test_state_record__gang_restart_and_clone);
	RUN(test_state_record__bad_host);
	RUN(test_state_record__checkpoint);
	return unit_done();
}
