/*
 * The run ledger (state/ledger_store.h, engine/ledger/ledger_writer.h), its report
 * (engine/ledger/report.h) and the chips of a node (model/chips.h).
 */
#include "engine/ledger/ledger_writer.h"
#include "engine/ledger/report.h"
#include "model/chips.h"
#include "state/ledger_store.h"
#include "tests/unit/unit.h"
#include "util/str.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *tmp_state(void)
{
	char dir[] = "/tmp/tpf_ledger_XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	return xasprintf("%s/tpuform.state.json", dir);
}

static size_t read_all(const char *state, json_t **out, size_t *skipped)
{
	struct tpf_ledger_where w = { .state_path = state };
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_ledger_read(&w, out, skipped, NULL, &d) == 0);
	tpf_diags_release(&d);
	return json_array_size(*out);
}

static void test_ledger__store_appends_and_reads_lines(void)
{
	char *state = tmp_state();
	struct tpf_ledger_where w = { .state_path = state };
	struct tpf_ledger *l = NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_ledger_open(&l, &w, &d) == 0);
	json_t *recs = NULL;
	CHECK_INT(read_all(state, &recs, NULL), 0); /* none yet: empty, not an error */
	json_decref(recs);
	for (int i = 0; i < 3; i++) {
		char line[64];
		int n = snprintf(line, sizeof(line), "{\"v\":1,\"i\":%d}", i);
		CHECK(tpf_ledger_append(l, line, (size_t)n, &d) == 0);
	}
	CHECK(tpf_ledger_append(l, "{\n}", 3, &d) == TPF_ERROR); /* one line each */
	char *big = xmalloc(TPF_LEDGER_LINE_MAX + 2);
	memset(big, 'x', TPF_LEDGER_LINE_MAX + 1);
	CHECK(tpf_ledger_append(l, big, TPF_LEDGER_LINE_MAX + 1, &d) == TPF_ERROR);
	free(big);
	CHECK_INT(d.n, 2);
	/* A crash tore a line: skipped by readers, ended by the next append. */
	char *path = xasprintf("%s.ledger.jsonl", state);
	FILE *f = fopen(path, "a");
	fputs("{\"v\":1,\"i\":", f);
	fclose(f);
	CHECK(tpf_ledger_append(l, "{\"v\":1,\"i\":4}", 13, &d) == 0);
	size_t skipped = 0;
	CHECK_INT(read_all(state, &recs, &skipped), 4);
	CHECK_INT(skipped, 1);
	CHECK_INT(json_integer_value(json_object_get(json_array_get(recs, 3), "i")), 4);
	json_decref(recs);
	struct stat st;
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	tpf_ledger_close(l);
	tpf_diags_release(&d);
	free(path);
	free(state);
}

static void test_ledger__store_rotates_at_its_bound(void)
{
	char *state = tmp_state();
	setenv("TPUFORM_LEDGER_SEGMENT_BYTES", "4096", 1);
	struct tpf_ledger_where w = { .state_path = state };
	struct tpf_ledger *l = NULL;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK(tpf_ledger_open(&l, &w, &d) == 0);
	char line[200];
	int total = 4096 * (TPF_LEDGER_SEGMENTS + 2) / 100; /* more than every segment holds */
	for (int i = 0; i < total; i++) {
		int n = snprintf(line, sizeof(line), "{\"v\":1,\"i\":%d,\"pad\":\"%070d\"}", i, 0);
		CHECK(n < 101 && tpf_ledger_append(l, line, (size_t)n, &d) == 0);
	}
	unsetenv("TPUFORM_LEDGER_SEGMENT_BYTES");
	for (int i = 1; i < TPF_LEDGER_SEGMENTS; i++) {
		char *seg = xasprintf("%s.ledger.jsonl.%d", state, i);
		struct stat st;
		CHECKF(stat(seg, &st) == 0 && st.st_size <= 4096, "segment %d exists within its bound", i);
		free(seg);
	}
	char *gone = xasprintf("%s.ledger.jsonl.%d", state, TPF_LEDGER_SEGMENTS);
	CHECKF(access(gone, F_OK) != 0, "no segment past the %d kept", TPF_LEDGER_SEGMENTS);
	free(gone);
	json_t *recs = NULL;
	size_t n = read_all(state, &recs, NULL);
	CHECK(n > 0 && n < (size_t)total); /* the oldest were dropped */
	/* Oldest segment first, in order, ending with the last line written. */
	long prev = -1;
	int ordered = 1;
	for (size_t i = 0; i < n; i++) {
		long v = (long)json_integer_value(json_object_get(json_array_get(recs, i), "i"));
		ordered &= v == prev + 1 || prev < 0;
		prev = v;
	}
	CHECK(ordered);
	CHECK_INT(prev, total - 1);
	json_decref(recs);
	tpf_ledger_close(l);
	tpf_diags_release(&d);
	free(state);
}

static void test_ledger__time_is_utc_to_the_millisecond(void)
{
	char ts[40];
	tpf_ledger_time(1767225600.1234, ts, sizeof(ts)); /* 2026-01-01 */
	CHECK_STR(ts, "2026-01-01T00:00:00.123Z");
	CHECK(tpf_parse_rfc3339(ts) > 1767225600.122);
	tpf_ledger_time(1767225600.9999, ts, sizeof(ts));
	CHECK_STR(ts, "2026-01-01T00:00:00.999Z");
	/* the other forms of the one formatter: state (seconds, truncated),
	 * the lock's Created (microseconds), never rounded into the next second */
	tpf_rfc3339(1767225600.9999, ts, sizeof(ts));
	CHECK_STR(ts, "2026-01-01T00:00:00Z");
	tpf_rfc3339_fmt(1767225600.25, 6, 0, ts, sizeof(ts));
	CHECK_STR(ts, "2026-01-01T00:00:00.250000Z");
	tpf_rfc3339_fmt(1767225600.9999996, 6, 0, ts, sizeof(ts));
	CHECK_STR(ts, "2026-01-01T00:00:00.999999Z");
}

static void test_ledger__chips(void)
{
	struct tpf_recipe r;
	memset(&r, 0, sizeof(r));
	static const struct { const char *type; int chips; const char *gen; } cases[] = {
		{ "v4-16", 8, "v4" },        { "v5p-8", 4, "v5p" },  { "v2-8", 4, "v2" },
		{ "v5litepod-16", 16, "v5e" }, { "v6e-8", 8, "v6e" }, { "v9-8", 0, NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r.accelerator_type = (char *)cases[i].type;
		CHECKF(tpf_recipe_chips(&r) == cases[i].chips, "%s: %d chips", cases[i].type,
		       cases[i].chips);
		const char *g = tpf_recipe_generation(&r);
		CHECKF((!g && !cases[i].gen) || (g && cases[i].gen && !strcmp(g, cases[i].gen)),
		       "%s: generation", cases[i].type);
	}
	r.accelerator_type = (char *)"v4-8";
	r.slices = 2; /* multislice: every slice's chips */
	CHECK_INT(tpf_recipe_chips(&r), 8);
	memset(&r, 0, sizeof(r));
	r.compute.api = TPF_API_COMPUTE;
	r.compute.machine_type = (char *)"ct6e-standard-4t";
	r.workers = 4;
	CHECK_INT(tpf_recipe_chips(&r), 16);
	CHECK_STR(tpf_recipe_type(&r), "ct6e-standard-4t");
}

/* A writer's lines: what the event says, completed from what it said of
 * the node before. */
static void test_ledger__lines_carry_the_node(void)
{
	char *state = tmp_state();
	struct tpf_fleet f;
	memset(&f, 0, sizeof(f));
	f.name = (char *)"fl";
	f.state_path = state;
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_run_ledger *r = tpf_run_ledger_open(&f, NULL, "apply", &d);
	CHECK(r != NULL);
	struct tpf_recipe rec;
	memset(&rec, 0, sizeof(rec));
	rec.accelerator_type = (char *)"v5litepod-16";
	rec.zone = (char *)"us-west4-a";
	rec.spot = 1;
	rec.workers = 4;
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_CREATING);
	ev.node = "fl-g-0";
	ev.group = "g";
	ev.recipe = &rec;
	ev.generation = 3;
	json_t *a = tpf_run_ledger_line(r, &ev, 1767225600.5);
	struct tpf_event ready = TPF_EVENT_INIT(TPF_EVENT_READY);
	ready.action = TPF_EVENT_CREATING;
	ready.node = "fl-g-0";
	json_t *b = tpf_run_ledger_line(r, &ready, 1767225601);
	char *sa = json_dumps(a, JSON_COMPACT), *sb = json_dumps(b, JSON_COMPACT);
	const char *head = "{\"v\":1,\"ts\":\"2026-01-01T00:00:00.500Z\",\"event\":\"creating\","
			   "\"cmd\":\"apply\",\"writer\":";
	CHECKF(!strncmp(sa, head, strlen(head)), "the line starts with its version and time: %s", sa);
	CHECK(strstr(sb, "\"action\":\"creating\"") != NULL);
	CHECK_STR(json_string_value(json_object_get(b, "event")), "ready");
	CHECK_STR(json_string_value(json_object_get(b, "action")), "creating");
	CHECK_STR(json_string_value(json_object_get(b, "zone")), "us-west4-a");
	CHECK_STR(json_string_value(json_object_get(b, "class")), "spot");
	CHECK_STR(json_string_value(json_object_get(b, "chip")), "v5e");
	CHECK_STR(json_string_value(json_object_get(b, "api")), "tpu");
	CHECK_INT(json_integer_value(json_object_get(b, "chips")), 16);
	CHECK_INT(json_integer_value(json_object_get(b, "vms")), 4);
	CHECK_INT(json_integer_value(json_object_get(b, "generation")), 3);
	CHECK_INT(json_integer_value(json_object_get(b, "retry")), 3);
	CHECK(json_integer_value(json_object_get(b, "seq")) ==
	      json_integer_value(json_object_get(a, "seq")) + 1);
	free(sa);
	free(sb);
	json_decref(a);
	json_decref(b);
	/* Written: one line per event, heartbeats left out. */
	tpf_run_ledger_event(r, &ev);
	struct tpf_event beat = TPF_EVENT_INIT(TPF_EVENT_PROGRESS);
	beat.node = "fl-g-0";
	tpf_run_ledger_event(r, &beat);
	long written = 0, lost = 0;
	tpf_run_ledger_counts(r, &written, &lost);
	CHECK_INT(written, 1);
	CHECK_INT(lost, 0);
	tpf_run_ledger_close(r, &d);
	CHECK_INT(d.n, 0);
	json_t *recs = NULL;
	CHECK_INT(read_all(state, &recs, NULL), 1);
	json_decref(recs);
	tpf_diags_release(&d);
	free(state);
}

/* ---- the report ------------------------------------------------------------ */

static json_t *recs;
static double t0 = 1767225600; /* 2026-01-01T00:00:00Z */

/* One line at t0 + secs: "event node [key=value...]" with numbers. */
static void at(double secs, const char *event, const char *node, const char *more)
{
	char ts[40];
	tpf_ledger_time(t0 + secs, ts, sizeof(ts));
	json_t *o = json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:i,s:s,s:I}", "v", 1, "ts", ts,
			      "event", event, "node", node, "group", "g", "zone", "z1", "class",
			      "on-demand", "chip", "v4", "chips", 4, "vms", 2, "writer", "w", "seq",
			      (json_int_t)json_array_size(recs));
	if (more) {
		json_t *m = json_loads(more, 0, NULL);
		CHECKF(m != NULL, "test line extra %s", more);
		json_object_update(o, m);
		json_decref(m);
	}
	json_array_append_new(recs, o);
}

static void run_job(double start, const char *node)
{
	at(start, "job_started", node, "{\"worker\":0}");
	at(start, "job_started", node, "{\"worker\":1}");
}

#define NEAR(a, b) (((a) - (b)) < 1e-9 && ((b) - (a)) < 1e-9)

static double billed(const struct tpf_report *r)
{
	double s = 0;
	for (size_t i = 0; i < r->nrows; i++)
		for (int b = 0; b < TPF_RB_N; b++)
			s += r->rows[i].chip_hours[b];
	return s;
}

/* Create at 0, READY at 60, jobs from 120 to 3720, deleted at 3780:
 * 4 chips for 3780 s billed; 3600 s of goodput. */
static void test_ledger__report_phases(void)
{
	recs = json_array();
	at(0, "creating", "n0", NULL);
	at(60, "ready", "n0", "{\"action\":\"creating\"}");
	run_job(120, "n0");
	at(3720, "job_succeeded", "n0", "{\"worker\":0}");
	at(3720, "job_succeeded", "n0", "{\"worker\":1}");
	at(3720, "completed", "n0", NULL);
	at(3740, "deleting", "n0", NULL);
	at(3780, "deleted", "n0", "{\"action\":\"deleting\"}");
	struct tpf_report r;
	tpf_report_compute(recs, -1, t0 + 10000, NULL, &r);
	CHECK_INT(r.nrows, 1);
	CHECK(NEAR(billed(&r), 3780.0 * 4 / 3600));
	CHECK(NEAR(r.rows[0].chip_hours[TPF_RB_GOODPUT], 4.0));
	CHECK(NEAR(r.rows[0].chip_hours[TPF_RB_SETUP], 120.0 * 4 / 3600));
	CHECK(NEAR(r.rows[0].chip_hours[TPF_RB_IDLE], 60.0 * 4 / 3600));
	CHECK(r.rows[0].price && NEAR(r.rows[0].price->usd_per_chip_hour, 3.22));
	tpf_report_release(&r);
	/* A window from 1 h: only what is after it. */
	tpf_report_compute(recs, t0 + 3600, t0 + 10000, NULL, &r);
	CHECK(NEAR(billed(&r), 180.0 * 4 / 3600));
	CHECK(NEAR(r.rows[0].chip_hours[TPF_RB_GOODPUT], 120.0 * 4 / 3600));
	tpf_report_release(&r);
	/* Another group: nothing. A node still up is counted to `until`. */
	tpf_report_compute(recs, -1, t0 + 10000, "other", &r);
	CHECK_INT(r.nrows, 0);
	CHECK_INT(r.events, 0);
	tpf_report_release(&r);
	tpf_report_compute(recs, -1, t0 + 1120, NULL, &r);
	CHECK(NEAR(r.rows[0].chip_hours[TPF_RB_GOODPUT], 1000.0 * 4 / 3600));
	tpf_report_release(&r);
	json_decref(recs);
}

/* A preemption seen at 1600 (elapsed 100: lost at 1500), after a
 * checkpoint at 1000: the 500 s of work since the checkpoint are lost.
 * The replacement runs again at 1700; a failure at 2000 waits for its
 * restart until 2030. */
static void test_ledger__report_preemption_and_restart(void)
{
	recs = json_array();
	at(0, "creating", "n0", NULL);
	at(0, "ready", "n0", NULL);
	run_job(0, "n0");
	at(1000, "checkpoint", "n0", "{\"step\":100}");
	at(1600, "preempted", "n0", "{\"elapsed\":100}");
	at(1600, "deleting", "n0", NULL);
	at(1610, "deleted", "n0", NULL);
	at(1620, "creating", "n0", NULL);
	at(1640, "ready", "n0", NULL);
	run_job(1700, "n0");
	at(2000, "job_failed", "n0", "{\"worker\":1,\"exit_code\":3}");
	at(2001, "restarting", "n0", NULL);
	run_job(2030, "n0");
	at(2030, "restarted", "n0", NULL);
	at(2100, "deleting", "n0", NULL);
	at(2100, "deleted", "n0", NULL);
	struct tpf_report r;
	tpf_report_compute(recs, -1, t0 + 5000, NULL, &r);
	const double h = 4.0 / 3600; /* chip-hours per second */
	CHECK_INT(r.rows[0].preemptions, 1);
	CHECK_INT(r.rows[0].restarts, 1);
	CHECK(NEAR(billed(&r), (1500 + 480) * h)); /* billed from the create at 1620 */
	CHECK(NEAR(r.rows[0].chip_hours[TPF_RB_PREEMPTED], 500 * h));
	CHECK(NEAR(r.rows[0].chip_hours[TPF_RB_GOODPUT], (1000 + 300 + 70) * h));
	CHECK(NEAR(r.rows[0].chip_hours[TPF_RB_SETUP], 80 * h));
	CHECK(NEAR(r.rows[0].chip_hours[TPF_RB_RESTART], 30 * h));
	CHECK_INT(r.nrecoveries, 1);
	CHECK(NEAR(r.recoveries[0], 200));
	/* In ml-goodput-measurement's words: the recovery in seconds, the
	 * lost work as wasted progress, the restart's wait as OTHER. */
	json_t *j = tpf_report_to_json(&r);
	json_t *ml = json_object_get(json_object_get(j, "totals"), "ml_goodput");
	CHECK(NEAR(json_real_value(json_object_get(json_object_get(ml, "badput_seconds"),
						   "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION")), 200));
	json_t *mh = json_object_get(ml, "badput_chip_hours");
	CHECK(fabs(json_real_value(json_object_get(mh, "WASTED_PROGRESS_FROM_DISRUPTION")) - 500 * h) < 1e-5);
	/* The replacement's setup after the preemption is part of the recovery. */
	CHECK(fabs(json_real_value(json_object_get(mh, "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION")) -
		   80 * h) < 1e-5);
	CHECK(fabs(json_real_value(json_object_get(mh, "OTHER")) - 30 * h) < 1e-5);
	CHECK(json_is_null(json_object_get(mh, "TRAINING_PREP"))); /* inside the job: unseen */
	int mapped = 0;
	size_t i;
	json_t *row;
	json_array_foreach(json_object_get(ml, "mapping"), i, row)
		if (tpf_streq(json_string_value(json_object_get(row, "bucket")), "preempted"))
			mapped = tpf_streq(json_string_value(json_object_get(row, "category")),
					   "WASTED_PROGRESS_FROM_DISRUPTION");
	CHECK(mapped);
	json_decref(j);
	tpf_report_release(&r);
	json_decref(recs);
}

/* Time spent on zones that refused, and a queued resource's wait for
 * capacity, are not billed; a create that failed bills nothing. */
static void test_ledger__report_waits_are_not_billed(void)
{
	recs = json_array();
	at(0, "creating", "a", NULL);
	at(300, "zone_fallback", "a", "{\"action\":\"creating\"}");
	at(360, "ready", "a", NULL);
	at(460, "deleted", "a", NULL);
	at(0, "creating", "q", NULL);
	at(5, "queued", "q", NULL);
	at(5, "created", "q", NULL);
	at(7200, "ready", "q", "{\"action\":\"waiting\"}");
	at(7300, "deleted", "q", NULL);
	at(0, "creating", "f", NULL);
	at(900, "failed", "f", "{\"action\":\"creating\"}");
	struct tpf_report r;
	tpf_report_compute(recs, -1, t0 + 8000, NULL, &r);
	CHECK(NEAR(billed(&r), (160 + 100) * 4.0 / 3600));
	tpf_report_release(&r);
	json_decref(recs);
}

/* Google's categories (engine/ledger/report_goodput.c): the preemption of
 * test_ledger__report_preemption_and_restart, read as ml-goodput-measurement
 * reads it. */
static void test_ledger__report_google_categories(void)
{
	recs = json_array();
	at(0, "creating", "n0", NULL);
	at(30, "ready", "n0", NULL);
	run_job(50, "n0");
	at(1000, "checkpoint", "n0", "{\"step\":100}");
	at(1600, "preempted", "n0", "{\"elapsed\":100}"); /* lost at 1500 */
	at(1600, "deleting", "n0", NULL);
	at(1610, "deleted", "n0", NULL);
	at(1620, "creating", "n0", NULL);
	at(1640, "ready", "n0", NULL);
	run_job(1700, "n0");
	at(2000, "job_failed", "n0", "{\"worker\":1,\"exit_code\":3}");
	run_job(2030, "n0");
	at(2030, "restarted", "n0", NULL);
	at(2100, "job_succeeded", "n0", "{\"worker\":0}");
	at(2100, "job_succeeded", "n0", "{\"worker\":1}");
	at(2160, "deleted", "n0", NULL);
	struct tpf_report r;
	tpf_report_compute(recs, -1, t0 + 5000, NULL, &r);
	const double h = 4.0 / 3600;
	const struct tpf_report_row *row = &r.rows[0];
	enum tpf_ml_badput infra = TPF_MB_INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION;
	/* From the loss (1500) to running again (1700), the unbilled wait
	 * included; the failed job's 30 s are the job's, OTHER. */
	CHECK_INT(r.nrecoveries, 1);
	CHECKF(NEAR(row->ml_seconds[infra], r.recoveries[0]), "infra %f s", row->ml_seconds[infra]);
	CHECK(NEAR(row->ml_chip_hours[infra], 80 * h)); /* billed: 1620..1700 */
	CHECK(NEAR(row->ml_seconds[TPF_MB_WASTED_PROGRESS_FROM_DISRUPTION], 500));
	CHECK(NEAR(row->ml_chip_hours[TPF_MB_WASTED_PROGRESS_FROM_DISRUPTION], 500 * h));
	CHECK(NEAR(row->ml_seconds[TPF_MB_OTHER], 50 + 30 + 60)); /* first setup, restart, idle */
	/* Every badput chip-hour is in one category. */
	double bad = tpf_report_row_billed(row) - row->chip_hours[TPF_RB_GOODPUT], ml = 0;
	for (int m = 0; m < TPF_MB_N; m++)
		ml += row->ml_chip_hours[m];
	CHECK(NEAR(bad, ml));
	json_t *j = tpf_report_to_json(&r);
	json_t *g = json_object_get(json_object_get(j, "totals"), "ml_goodput");
	json_t *secs = json_object_get(g, "badput_seconds");
	double v = json_number_value(json_object_get(secs, "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION"));
	CHECKF(v > 199.99 && v < 200.01, "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION %f", v);
	CHECK(json_is_null(json_object_get(secs, "TPU_INITIALIZATION")));
	CHECK(json_is_null(json_object_get(json_object_get(g, "badput_chip_hours"), "PROGRAM_STARTUP")));
	json_t *map = json_object_get(g, "mapping");
	int setup_after = 0;
	for (size_t i = 0; i < json_array_size(map); i++) {
		json_t *e = json_array_get(map, i);
		setup_after |= !strcmp(json_string_value(json_object_get(e, "bucket")), "setup") &&
			       json_string_value(json_object_get(e, "when")) &&
			       !strcmp(json_string_value(json_object_get(e, "when")), "after a preemption") &&
			       !strcmp(json_string_value(json_object_get(e, "category")),
				       "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION");
	}
	CHECK(setup_after); /* the mapping is in the JSON for people */
	json_t *rj = json_array_get(json_object_get(j, "rows"), 0);
	CHECK(json_is_number(json_object_get(json_object_get(rj, "ml_badput_chip_hours"), "OTHER")));
	json_decref(j);
	tpf_report_release(&r);
	/* A window from 1600: only the part of the recovery after it. */
	tpf_report_compute(recs, t0 + 1600, t0 + 5000, NULL, &r);
	CHECK(NEAR(r.rows[0].ml_seconds[infra], 100));
	tpf_report_release(&r);
	json_decref(recs);
}

/* A slice lost from a multislice node (docs/ledger.md "A lost slice"): 2
 * slices of 2 VMs and 8 chips. Slice 1 is lost at 1000 (seen at 1010), the
 * create that makes it again is refused, a second writer writes the same
 * loss at 1500, the create at 1500 is READY at 1600 and every worker runs
 * again at 1650. Only slice 1's 8 chips stop from 1000 to 1600; the other
 * slice's time from the loss to running again is the recovery's. */
static void slice_line(double secs, const char *event, const char *more)
{
	char *all = xasprintf("{\"chips\":16,\"vms\":4%s%s}", more ? "," : "", more ? more : "");
	at(secs, event, "ms", all);
	free(all);
}

static void slice_jobs(double secs)
{
	for (int w = 0; w < 4; w++) {
		char k[20];
		snprintf(k, sizeof(k), "\"worker\":%d", w);
		slice_line(secs, "job_started", k);
	}
}

static void test_ledger__report_slice_loss(void)
{
	recs = json_array();
	slice_line(0, "creating", NULL);
	slice_line(0, "ready", "\"action\":\"creating\"");
	slice_jobs(0);
	slice_line(500, "checkpoint", "\"step\":100");
	const char *lost = "\"elapsed\":10,\"reason\":\"preempted\",\"slices\":\"1\",\"workers\":2,"
			   "\"lost_chips\":8";
	slice_line(1010, "preempted", lost);
	slice_line(1010, "creating", NULL);
	slice_line(1020, "failed", "\"action\":\"creating\"");
	slice_line(1505, "preempted", "\"elapsed\":5,\"reason\":\"terminated\",\"slices\":\"1\","
				      "\"workers\":2,\"lost_chips\":8");
	slice_line(1505, "creating", NULL);
	slice_line(1600, "ready", "\"action\":\"creating\"");
	slice_jobs(1650);
	slice_line(2000, "deleted", NULL);
	struct tpf_report r;
	tpf_report_compute(recs, -1, t0 + 5000, NULL, &r);
	const double h = 1.0 / 3600; /* chip-hours per chip-second */
	const struct tpf_report_row *row = &r.rows[0];
	CHECK_INT(row->preemptions, 1); /* written twice, one loss */
	CHECKF(NEAR(billed(&r), (16 * 2000 - 8 * 600) * h), "billed %f", billed(&r));
	CHECK(NEAR(row->chip_hours[TPF_RB_PREEMPTED], 16 * 500 * h)); /* since the checkpoint */
	CHECK(NEAR(row->chip_hours[TPF_RB_GOODPUT], 16 * (500 + 350) * h));
	CHECK(NEAR(row->chip_hours[TPF_RB_SETUP], (8 * 600 + 16 * 50) * h));
	CHECK_INT(r.nrecoveries, 1);
	CHECK(NEAR(r.recoveries[0], 650));
	enum tpf_ml_badput infra = TPF_MB_INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION;
	CHECK(NEAR(row->ml_seconds[infra], 650));
	CHECK(NEAR(row->ml_chip_hours[infra], (8 * 600 + 16 * 50) * h));
	double bad = tpf_report_row_billed(row) - row->chip_hours[TPF_RB_GOODPUT], ml = 0;
	for (int m = 0; m < TPF_MB_N; m++)
		ml += row->ml_chip_hours[m];
	CHECK(NEAR(bad, ml));
	tpf_report_release(&r);
	/* The same slice lost again after it was made again: a new loss. */
	slice_line(2000, "creating", NULL);
	slice_line(2000, "ready", "\"action\":\"creating\"");
	slice_line(2100, "preempted", lost);
	tpf_report_compute(recs, -1, t0 + 5000, NULL, &r);
	CHECK_INT(r.rows[0].preemptions, 2);
	tpf_report_release(&r);
	json_decref(recs);
}

static void test_ledger__report_json_and_bad_lines(void)
{
	recs = json_array();
	json_array_append_new(recs, json_pack("{s:s}", "event", "ready")); /* no version or time */
	at(0, "creating", "n0", "{\"class\":\"spot\",\"chip\":\"v6e\"}");
	at(0, "ready", "n0", "{\"class\":\"spot\",\"chip\":\"v6e\"}");
	at(3600, "deleted", "n0", "{\"class\":\"spot\",\"chip\":\"v6e\"}");
	struct tpf_report r;
	tpf_report_compute(recs, -1, t0 + 8000, NULL, &r);
	CHECK_INT(r.skipped, 1);
	json_t *j = tpf_report_to_json(&r);
	json_t *t = json_object_get(j, "totals");
	CHECK(NEAR(json_number_value(json_object_get(t, "billed_chip_hours")), 4.0));
	CHECK(json_is_null(json_object_get(t, "mean_hours_between_preemptions")));
	CHECK_INT(json_integer_value(json_object_get(t, "rows_without_price")), 1); /* no spot price */
	CHECK(json_is_null(json_object_get(json_array_get(json_object_get(j, "rows"), 0),
					   "cost_usd_estimate")));
	CHECK_STR(json_string_value(json_object_get(json_object_get(j, "prices"), "note")),
		  "an estimate from list prices, not a bill");
	json_decref(j);
	tpf_report_release(&r);
	json_decref(recs);
	double v[] = { 5, 1, 4, 2, 3 };
	CHECK(NEAR(tpf_report_percentile(v, 5, 50), 3));
	CHECK(NEAR(tpf_report_percentile(v, 5, 99), 5));
	CHECK(tpf_report_percentile(v, 0, 50) < 0);
}

int main(void)
{
	RUN(test_ledger__store_appends_and_reads_lines);
	RUN(test_ledger__store_rotates_at_its_bound);
	RUN(test_ledger__time_is_utc_to_the_millisecond);
	RUN(test_ledger__chips);
	RUN(test_ledger__lines_carry_the_node);
	RUN(test_ledger__report_phases);
	RUN(test_ledger__report_preemption_and_restart);
	RUN(test_ledger__report_waits_are_not_billed);
	RUN(test_ledger__report_google_categories);
	RUN(test_ledger__report_slice_loss);
	RUN(test_ledger__report_json_and_bad_lines);
	return unit_done();
}
