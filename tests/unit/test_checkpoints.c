/*
 * Checkpoints recorded from job facts (engine/checkpoints.h, issue 21):
 * which worker's report counts, what is news, the events of a change, and
 * the words a preemption event adds.
 */
#include "engine/checkpoints.h"
#include "tests/unit/unit.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static void add_fact(struct tpf_job_facts *f, const char *node, int worker, const char *ck)
{
	XGROW(f->items, f->n + 1, f->alloc);
	struct tpf_job_fact *sf = &f->items[f->n++];
	memset(sf, 0, sizeof(*sf));
	sf->node = xstrdup(node);
	sf->worker = worker;
	sf->state = TPF_JOB_STATE_ALIVE;
	sf->exit_code = -1;
	sf->checkpoint = ck ? xstrdup(ck) : NULL;
}

static void count_change(const struct tpf_state_node *sn, void *ctx)
{
	CHECK(sn->last_checkpoint != NULL);
	(*(int *)ctx)++;
}

static void test_checkpoints__record(void)
{
	struct tpf_state st;
	tpf_state_init(&st);
	tpf_state_add(&st, "f-a-0");
	tpf_state_add(&st, "f-a-1");
	struct tpf_job_facts f;
	memset(&f, 0, sizeof(f));
	/* The lowest worker with a report counts; one without none. */
	add_fact(&f, "f-a-0", 2, "300");
	add_fact(&f, "f-a-0", 0, NULL);
	add_fact(&f, "f-a-0", 1, "200");
	add_fact(&f, "f-a-1", 0, NULL);
	add_fact(&f, "f-gone", 0, "9");
	CHECK_STR(tpf_checkpoint_of(&f, "f-a-0"), "200");
	CHECK(tpf_checkpoint_of(&f, "f-a-1") == NULL);
	CHECK(tpf_checkpoint_of(NULL, "f-a-0") == NULL);
	CHECK_INT((int)tpf_checkpoints_news(&st, &f), 1);
	int changed = 0;
	CHECK_INT((int)tpf_checkpoints_record(&st, &f, "2026-01-01T00:00:00Z", count_change,
					      &changed), 1);
	CHECK_INT(changed, 1);
	CHECK_STR(tpf_state_find(&st, "f-a-0")->last_checkpoint, "200");
	CHECK(tpf_state_find(&st, "f-a-1")->last_checkpoint == NULL);
	/* Recorded: no more news, nothing changes again. */
	CHECK_INT((int)tpf_checkpoints_news(&st, &f), 0);
	CHECK_INT((int)tpf_checkpoints_record(&st, &f, "t", NULL, NULL), 0);
	/* Facts without a report (a replacement's new job) keep the record. */
	struct tpf_job_facts none;
	memset(&none, 0, sizeof(none));
	add_fact(&none, "f-a-0", 0, NULL);
	CHECK_INT((int)tpf_checkpoints_record(&st, &none, "t", NULL, NULL), 0);
	CHECK_STR(tpf_state_find(&st, "f-a-0")->last_checkpoint, "200");
	tpf_job_facts_release(&none);
	tpf_job_facts_release(&f);
	tpf_state_release(&st);
}

static void test_checkpoints__words(void)
{
	struct tpf_state_node sn;
	memset(&sn, 0, sizeof(sn));
	char *w = tpf_checkpoint_words(&sn, 0);
	CHECK_STR(w, "no checkpoint reported");
	free(w);
	sn.last_checkpoint = "1200";
	sn.checkpoint_at = "2026-01-01T00:00:00Z";
	double at = tpf_parse_rfc3339(sn.checkpoint_at);
	w = tpf_checkpoint_words(&sn, at + 4 * 60 + 30);
	CHECK_STR(w, "last checkpoint 1200, 4m ago");
	free(w);
	w = tpf_checkpoint_words(&sn, at + 42);
	CHECK_STR(w, "last checkpoint 1200, 42s ago");
	free(w);
	w = tpf_checkpoint_words(&sn, at + 3 * 3600);
	CHECK_STR(w, "last checkpoint 1200, 3.0h ago");
	free(w);
	sn.checkpoint_at = "garbage";
	w = tpf_checkpoint_words(&sn, at);
	CHECK_STR(w, "last checkpoint 1200");
	free(w);
}

int main(void)
{
	RUN(test_checkpoints__record);
	RUN(test_checkpoints__words);
	return unit_done();
}
