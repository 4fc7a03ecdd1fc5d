/*
 * Reading the run ledger without rereading it (state/ledger_store.h
 * tpf_ledger_cursor_*) and the short-lived writers' object of the day in a
 * shared store (where.daily), over the Cloud Storage stand-in.
 */
#include "engine/ledger/ledger_writer.h"
#include "engine/ledger/report_follow.h"
#include "state/ledger_store.h"
#include "tests/unit/gcs_fake.h"
#include "tests/unit/unit.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct gcs_fake fake;

static char *tmp_state(void)
{
	char dir[] = "/tmp/tpf_follow_XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	return xasprintf("%s/tpuform.state.json", dir);
}

static void append_n(struct tpf_ledger *l, int from, int n)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	for (int i = from; i < from + n; i++) {
		char line[200];
		int len = snprintf(line, sizeof(line), "{\"v\":1,\"i\":%d,\"pad\":\"%060d\"}", i, 0);
		CHECKF(tpf_ledger_append(l, line, (size_t)len, &d) == 0, "append %d", i);
	}
	tpf_diags_release(&d);
}

/* Read what is new: its "i" values must be from..from+n-1, in order. */
static void expect_new(struct tpf_ledger_cursor *c, int from, int n, int from_start)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	json_t *recs = NULL;
	int fresh = -1;
	CHECK_INT(tpf_ledger_cursor_read(c, &recs, &fresh, NULL, NULL, &d), 0);
	CHECKF(fresh == from_start, "from_start %d, wanted %d", fresh, from_start);
	CHECKF(json_array_size(recs) == (size_t)n, "%zu new lines, wanted %d",
	       json_array_size(recs), n);
	int ordered = 1;
	for (size_t i = 0; i < json_array_size(recs); i++)
		ordered &= json_integer_value(json_object_get(json_array_get(recs, i), "i")) ==
			   from + (json_int_t)i;
	CHECKF(ordered, "lines %d.. in order", from);
	json_decref(recs);
	tpf_diags_release(&d);
}

/* Only appended lines, across a rotation; a line being written waits. */
static void test_ledger_follow__local_reads_only_new_lines(void)
{
	char *state = tmp_state();
	setenv("TPUFORM_LEDGER_SEGMENT_BYTES", "4096", 1);
	struct tpf_ledger_where w = { .state_path = state };
	struct tpf_ledger *l = NULL;
	struct tpf_ledger_cursor *c = NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_ledger_cursor_open(&c, &w, &d), 0);
	expect_new(c, 0, 0, 1); /* no ledger yet */
	CHECK_INT(tpf_ledger_open(&l, &w, &d), 0);
	append_n(l, 0, 10);
	expect_new(c, 0, 10, 1);
	expect_new(c, 10, 0, 0);
	append_n(l, 10, 5);
	expect_new(c, 10, 5, 0);
	/* 100 lines of ~90 bytes: the file rotates twice and more. */
	append_n(l, 15, 100);
	expect_new(c, 15, 100, 0);
	/* Half a line (a writer mid-write) is left for the next read. */
	char *path = xasprintf("%s.ledger.jsonl", state);
	FILE *f = fopen(path, "a");
	fputs("{\"v\":1,\"i\":115,", f);
	fclose(f);
	expect_new(c, 115, 0, 0);
	f = fopen(path, "a");
	fputs("\"pad\":\"x\"}\n", f);
	fclose(f);
	expect_new(c, 115, 1, 0);
	/* Truncated under it: read again from the start. */
	CHECK(truncate(path, 0) == 0);
	append_n(l, 200, 1);
	struct tpf_diags rd = TPF_DIAGS_INIT;
	json_t *recs = NULL;
	int fresh = 0;
	CHECK_INT(tpf_ledger_cursor_read(c, &recs, &fresh, NULL, NULL, &rd), 0);
	CHECK_INT(fresh, 1);
	json_decref(recs);
	tpf_diags_release(&rd);
	unsetenv("TPUFORM_LEDGER_SEGMENT_BYTES");
	tpf_ledger_cursor_free(c);
	tpf_ledger_close(l);
	tpf_diags_release(&d);
	free(path);
	free(state);
}

/* A line of node n at t0 + secs, appended. */
static void put_line(struct tpf_ledger *l, double secs, const char *event, const char *node,
		     const char *more)
{
	static long seq;
	char ts[40];
	tpf_ledger_time(1767225600 + secs, ts, sizeof(ts));
	json_t *o = json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:i,s:s,s:I}", "v", 1, "ts", ts,
			      "event", event, "node", node, "group", "g", "zone", "z1", "class",
			      "on-demand", "chip", "v4", "chips", 4, "vms", 1, "writer", "w", "seq",
			      (json_int_t)++seq);
	if (more) {
		json_t *m = json_loads(more, 0, NULL);
		json_object_update(o, m);
		json_decref(m);
	}
	char *line = json_dumps(o, JSON_COMPACT);
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_ledger_append(l, line, strlen(line), &d), 0);
	tpf_diags_release(&d);
	free(line);
	json_decref(o);
}

/* The follower's report equals a report of the whole ledger. */
static void same_as_full(struct tpf_report_follow *f, const struct tpf_ledger_where *w,
			 double since, double until, int want_from_start)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	int from_start = -1;
	CHECK_INT(tpf_report_follow_update(f, NULL, &from_start, &d), 0);
	CHECKF(from_start == want_from_start, "from_start %d", from_start);
	json_t *all = NULL;
	CHECK_INT(tpf_ledger_read(w, &all, NULL, NULL, &d), 0);
	struct tpf_report a, b;
	tpf_report_follow_result(f, 0, until, NULL, &a);
	tpf_report_compute(all, since, until, NULL, &b);
	json_t *ja = tpf_report_to_json(&a), *jb = tpf_report_to_json(&b);
	char *sa = json_dumps(ja, JSON_SORT_KEYS), *sb = json_dumps(jb, JSON_SORT_KEYS);
	CHECKF(!strcmp(sa, sb), "follower %s\nfull     %s", sa, sb);
	free(sa);
	free(sb);
	json_decref(ja);
	json_decref(jb);
	tpf_report_release(&a);
	tpf_report_release(&b);
	json_decref(all);
	tpf_diags_release(&d);
}

/* Budgets' and metrics' replay: fed piece by piece, it says what a
 * replay of the whole ledger says; a line late for its node replays all. */
static void test_ledger_follow__report_follows_the_ledger(void)
{
	char *state = tmp_state();
	struct tpf_ledger_where w = { .state_path = state };
	struct tpf_ledger *l = NULL;
	struct tpf_report_follow *f = NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(tpf_ledger_open(&l, &w, &d), 0);
	struct tpf_report_view v = { 1767225600 + 100, NULL };
	CHECK_INT(tpf_report_follow_open(&f, &w, &v, 1, 1, &d), 0);
	put_line(l, 0, "creating", "a", NULL);
	put_line(l, 30, "ready", "a", NULL);
	put_line(l, 60, "job_started", "a", "{\"worker\":0}");
	same_as_full(f, &w, v.since, 1767225600 + 500, 1);
	put_line(l, 900, "checkpoint", "a", "{\"step\":9}");
	put_line(l, 1000, "preempted", "a", "{\"elapsed\":50}");
	put_line(l, 1000, "creating", "b", NULL);
	same_as_full(f, &w, v.since, 1767225600 + 1100, 0);
	put_line(l, 1100, "creating", "a", NULL);
	put_line(l, 1150, "ready", "a", NULL);
	put_line(l, 1200, "job_started", "a", "{\"worker\":0}");
	put_line(l, 1210, "ready", "b", NULL);
	same_as_full(f, &w, v.since, 1767225600 + 3000, 0);
	put_line(l, 1215, "job_started", "b", "{\"worker\":0}"); /* b's own lines stay in order */
	same_as_full(f, &w, v.since, 1767225600 + 3000, 0);
	put_line(l, 1190, "stalled", "a", NULL); /* late: a had a line at 1200 */
	same_as_full(f, &w, v.since, 1767225600 + 4000, 1);
	tpf_report_follow_free(f);
	tpf_ledger_close(l);
	tpf_diags_release(&d);
	free(state);
}

static size_t count_in_log(const char *what)
{
	size_t n = 0;
	pthread_mutex_lock(&fake.mu);
	for (const char *p = fake.log.buf ? fake.log.buf : ""; (p = strstr(p, what)); p++)
		n++;
	pthread_mutex_unlock(&fake.mu);
	return n;
}

static void gcs_where(struct tpf_backend_gcs_config *bc, struct tpf_ledger_where *w)
{
	memset(bc, 0, sizeof(*bc));
	bc->bucket = "bkt";
	bc->prefix = "team";
	bc->fleet = "f";
	bc->gcs.endpoint = fake.url;
	memset(w, 0, sizeof(*w));
	w->gcs = bc;
}

/* A shared store: objects whose generation did not change are not read
 * again; one that grew is read past what was read. */
static void test_ledger_follow__shared_reads_only_changed_objects(void)
{
	struct tpf_backend_gcs_config bc;
	struct tpf_ledger_where w;
	gcs_where(&bc, &w);
	bc.fleet = "shared";
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_ledger *a = NULL, *b = NULL;
	struct tpf_ledger_cursor *c = NULL;
	CHECK_INT(tpf_ledger_open(&a, &w, &d), 0);
	CHECK_INT(tpf_ledger_open(&b, &w, &d), 0);
	CHECK_INT(tpf_ledger_cursor_open(&c, &w, &d), 0);
	append_n(a, 0, 3);
	append_n(b, 3, 3);
	json_t *recs = NULL;
	int fresh = 0;
	CHECK_INT(tpf_ledger_cursor_read(c, &recs, &fresh, NULL, NULL, &d), 0);
	CHECK_INT(fresh, 1);
	CHECK_INT(json_array_size(recs), 6);
	json_decref(recs);
	/* An object read is two GETs: its metadata, then its media. */
	const char *get = "GET /storage/v1/b/bkt/o/team/shared.ledger/";
	size_t gets = count_in_log(get);
	CHECK_INT(gets, 4);
	expect_new(c, 0, 0, 0);
	CHECKF(count_in_log(get) == gets, "nothing changed: no object read");
	append_n(b, 6, 2);
	expect_new(c, 6, 2, 0);
	CHECKF(count_in_log(get) == gets + 2, "one object changed: it alone is read");
	tpf_ledger_cursor_free(c);
	tpf_ledger_close(a);
	tpf_ledger_close(b);
	tpf_diags_release(&d);
}

/* 50 short-lived writers of one host in a day (50 plans): one object,
 * every line in it; two at once both land (a 412 rereads). */
static void test_ledger_follow__daily_object_per_host(void)
{
	struct tpf_backend_gcs_config bc;
	struct tpf_ledger_where w;
	gcs_where(&bc, &w);
	bc.fleet = "daily";
	w.daily = 1;
	struct tpf_diags d = TPF_DIAGS_INIT;
	for (int i = 0; i < 50; i++) {
		struct tpf_ledger *l = NULL;
		CHECK_INT(tpf_ledger_open(&l, &w, &d), 0);
		append_n(l, i, 1);
		tpf_ledger_close(l);
	}
	struct tpf_ledger *x = NULL, *y = NULL;
	CHECK_INT(tpf_ledger_open(&x, &w, &d), 0);
	CHECK_INT(tpf_ledger_open(&y, &w, &d), 0);
	for (int i = 0; i < 5; i++) {
		append_n(x, 50 + 2 * i, 1);
		append_n(y, 51 + 2 * i, 1);
	}
	tpf_ledger_close(x);
	tpf_ledger_close(y);
	int objects = 0;
	pthread_mutex_lock(&fake.mu);
	for (int i = 0; i < fake.nobjs; i++)
		objects += !strncmp(fake.objs[i].name, "team/daily.ledger/", 18);
	pthread_mutex_unlock(&fake.mu);
	CHECKF(objects == 1, "%d ledger objects for one host's 52 writers in a day", objects);
	CHECK(count_in_log("412") > 0); /* x and y did race */
	json_t *recs = NULL;
	CHECK_INT(tpf_ledger_read(&w, &recs, NULL, NULL, &d), 0);
	CHECK_INT(json_array_size(recs), 60);
	int seen[60] = { 0 };
	for (size_t i = 0; i < json_array_size(recs); i++) {
		json_int_t v = json_integer_value(json_object_get(json_array_get(recs, i), "i"));
		if (v >= 0 && v < 60)
			seen[v]++;
	}
	int once = 1;
	for (int i = 0; i < 60; i++)
		once &= seen[i] == 1;
	CHECKF(once, "every line exactly once");
	json_decref(recs);
	tpf_diags_release(&d);
}

int main(void)
{
	setenv("TPUFORM_ACCESS_TOKEN", "test-token", 1);
	setenv("TPUFORM_GCP_RETRY_BASE", "0.01", 1);
	setenv("TPUFORM_GCP_TRIES", "3", 1);
	RUN(test_ledger_follow__local_reads_only_new_lines);
	RUN(test_ledger_follow__report_follows_the_ledger);
	if (gcs_fake_start(&fake)) {
		printf("# SKIP the Cloud Storage tests: cannot start the stand-in\n");
		return unit_done();
	}
	RUN(test_ledger_follow__shared_reads_only_changed_objects);
	RUN(test_ledger_follow__daily_object_per_host);
	gcs_fake_stop(&fake);
	return unit_done();
}
