/*
 * The one table of event kinds (engine/events.c): every kind has a unique
 * name and maps to the `watch -json` code and webhook event users rely on
 * (docs/watch.md "watch" and "Notifications"; tests/e2e/t510 and t530 read
 * them), and to the metric and apply line it stands for. The expected
 * words are written out here on purpose: changing a user-visible word in
 * the table must fail this test.
 */
#include "engine/events.h"
#include "plan/plan.h"
#include "tests/unit/unit.h"

#include <string.h>

struct want {
	enum tpf_event_kind kind;
	const char *name;
	const char *code;    /* watch -json "event"; NULL: no watch line */
	const char *webhook; /* NULL: none */
};

static const struct want wants[] = {
	{ TPF_EVENT_CREATING, "creating", "creating", NULL },
	{ TPF_EVENT_READY, "ready", "ready", NULL },
	{ TPF_EVENT_CREATED, "created", NULL, NULL },
	{ TPF_EVENT_DELETING, "deleting", "deleting", NULL },
	{ TPF_EVENT_DELETED, "deleted", "deleted", NULL },
	{ TPF_EVENT_UPDATING, "updating", NULL, NULL },
	{ TPF_EVENT_UPDATED, "updated", NULL, NULL },
	{ TPF_EVENT_RESTARTING, "restarting", "restarting", NULL },
	{ TPF_EVENT_RESTARTED, "restarted", NULL, NULL },
	{ TPF_EVENT_WAITING, "waiting", NULL, NULL },
	{ TPF_EVENT_PROGRESS, "progress", NULL, NULL },
	{ TPF_EVENT_FAILED, "failed", "error", NULL },
	{ TPF_EVENT_INTERRUPTED, "interrupted", "note", NULL },
	{ TPF_EVENT_JOB_STARTED, "job_started", "session_started", NULL },
	{ TPF_EVENT_JOB_RUNNING, "job_running", "ok", NULL },
	{ TPF_EVENT_UNREACHABLE, "unreachable", "unreachable", NULL },
	{ TPF_EVENT_PROVISION_FAILED, "provision_failed", "failed", NULL },
	{ TPF_EVENT_QUEUED, "queued", "queued", NULL },
	{ TPF_EVENT_NOT_READY, "not_ready", "note", NULL },
	{ TPF_EVENT_CAPACITY_WAITING, "capacity_waiting", NULL, NULL },
	{ TPF_EVENT_DEFERRED, "deferred", "deferred", "quota_deferred" },
	{ TPF_EVENT_ZONE_BACKED_OFF, "zone_backed_off", "note", NULL },
	{ TPF_EVENT_ZONE_REFUSED, "zone_refused", "note", NULL },
	{ TPF_EVENT_ZONE_FALLBACK, "zone_fallback", "note", NULL },
	{ TPF_EVENT_PREFLIGHT_FAILED, "preflight_failed", "preflight_failed", "preflight_failed" },
	{ TPF_EVENT_BAD_HOST, "bad_host", "bad_host", "bad_host" },
	{ TPF_EVENT_UNHEALTHY, "unhealthy", "unhealthy", NULL },
	{ TPF_EVENT_WARNING, "warning", "warning", NULL },
	{ TPF_EVENT_LOCKED, "locked", "locked", NULL },
	{ TPF_EVENT_REPLAN, "replan", "replan", NULL },
	{ TPF_EVENT_LEASE_ACQUIRED, "lease_acquired", "leader", NULL },
	{ TPF_EVENT_LOCK_REMOVED, "lock_removed", "leader", NULL },
	{ TPF_EVENT_STANDBY, "standby", "standby", NULL },
	{ TPF_EVENT_LEASE_LOST, "lease_lost", "lease_lost", NULL },
	{ TPF_EVENT_ROUND_FAILED, "round_failed", "error", NULL },
	{ TPF_EVENT_STOPPED, "stopped", "stopped", NULL },
	{ TPF_EVENT_METRICS, "metrics", "metrics", NULL },
	{ TPF_EVENT_SSH_CONFIG, "ssh_config", "ssh_config", NULL },
	{ TPF_EVENT_NOTIFY_PROBLEM, "notify_problem", "notify", NULL },
	{ TPF_EVENT_DONE, "done", "done", NULL },
	{ TPF_EVENT_RESTARTS_USED_UP, "restarts_used_up", "restarts_exhausted", NULL },
	{ TPF_EVENT_NOT_RESTARTED, "not_restarted", "not_restarted", NULL },
	{ TPF_EVENT_RESTART_WAITING, "restart_waiting", "restart_waiting", NULL },
	{ TPF_EVENT_PREEMPTED, "preempted", NULL, "preempted" },
	{ TPF_EVENT_REPLACED, "replaced", NULL, "replaced" },
	{ TPF_EVENT_JOB_SUCCEEDED, "job_succeeded", NULL, "job_succeeded" },
	{ TPF_EVENT_JOB_FAILED, "job_failed", NULL, "job_failed" },
	{ TPF_EVENT_RESTARTS_EXHAUSTED, "restarts_exhausted", NULL, "restarts_exhausted" },
	{ TPF_EVENT_STALLED, "stalled", NULL, "stalled" },
	{ TPF_EVENT_QUOTA_WAITING, "quota_waiting", NULL, "quota_deferred" },
	{ TPF_EVENT_COMPLETED, "completed", NULL, "completed" },
	{ TPF_EVENT_JOB_STEP, "job_step", NULL, NULL },
	{ TPF_EVENT_CHECKPOINT, "checkpoint", NULL, NULL },
	{ TPF_EVENT_PLANNED, "planned", NULL, NULL },
	{ TPF_EVENT_MAINTENANCE, "maintenance", "maintenance", "maintenance" },
	{ TPF_EVENT_BUDGET_REACHED, "budget_reached", NULL, "budget_reached" },
	{ TPF_EVENT_SHRUNK, "shrunk", "shrunk", "shrunk" },
	{ TPF_EVENT_GROWN, "grown", "grown", "grown" },
};

_Static_assert(sizeof(wants) / sizeof(wants[0]) == TPF_EVENT_NKINDS,
	       "every event kind needs its expected words in this test");

static int streq_null(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Each kind's row: the words users see, a name of its own, a line text. */
static void test_events__every_kind_maps_to_its_words(void)
{
	for (int k = 0; k < TPF_EVENT_NKINDS; k++) {
		const struct want *w = &wants[k];
		const struct tpf_event_info *in = tpf_event_info(k);
		CHECKF(w->kind == (enum tpf_event_kind)k, "wants[%d] is in enum order", k);
		CHECKF(in->name && in->name[0] && !strcmp(in->name, w->name), "kind %d is named %s: %s",
		       k, w->name, in->name);
		CHECKF(tpf_event_kind_from_name(w->name) == k, "%s: found by name", w->name);
		CHECKF(streq_null(in->code, w->code), "%s: -json code %s, not %s", w->name,
		       w->code ? w->code : "(none)", in->code ? in->code : "(none)");
		CHECKF(!in->code || in->code[0], "%s: a code is never empty", w->name);
		const char *hook = in->notify >= 0 ? tpf_notify_event_name(in->notify) : NULL;
		CHECKF(streq_null(hook, w->webhook), "%s: webhook %s, not %s", w->name,
		       w->webhook ? w->webhook : "(none)", hook ? hook : "(none)");
		CHECKF(in->text && in->text[0], "%s: a line text for events without a message",
		       w->name);
		int same = 0;
		for (int j = 0; j < k; j++)
			same += !strcmp(tpf_event_info(j)->name, in->name);
		CHECKF(same == 0, "%s: names are unique", in->name);
	}
}

/* Every webhook event the fleet file may list comes from some kind. */
static void test_events__every_webhook_has_a_kind(void)
{
	for (int e = 0; e < TPF_NOTIFY_NEVENTS; e++) {
		int found = 0;
		for (int k = 0; k < TPF_EVENT_NKINDS; k++)
			found |= tpf_event_info(k)->notify == e;
		CHECKF(found, "webhook %s is posted for some kind", tpf_notify_event_name(e));
	}
}

/* What apply prints and the metrics count, by kind. */
static void test_events__hooks_and_metrics(void)
{
	static const char *const results[] = { "ok", "changed", "unreachable", "failed" };
	for (int k = 0; k < TPF_EVENT_NKINDS; k++) {
		const struct tpf_event_info *in = tpf_event_info(k);
		if (in->hook == TPF_HOOK_START || in->hook == TPF_HOOK_COMPLETE)
			CHECKF(in->word && in->word[0], "%s: Terraform's action word", in->name);
		if (in->hook == TPF_HOOK_PROVISION) {
			int known = 0;
			for (size_t i = 0; i < 4; i++)
				known |= in->word && !strcmp(in->word, results[i]);
			CHECKF(known, "%s: an Ansible result word", in->name);
		}
	}
	CHECK_STR(tpf_event_info(TPF_EVENT_JOB_STARTED)->word, "changed");
	CHECK_STR(tpf_event_info(TPF_EVENT_JOB_RUNNING)->word, "ok");
	CHECK_STR(tpf_event_info(TPF_EVENT_CREATING)->word, "create");
	CHECK_STR(tpf_event_info(TPF_EVENT_DELETED)->word, "delete");
	CHECK_INT(tpf_event_info(TPF_EVENT_FAILED)->hook, TPF_HOOK_ERRORED);
	CHECK_INT(tpf_event_info(TPF_EVENT_PROGRESS)->hook, TPF_HOOK_PROGRESS);
	CHECK_INT(tpf_event_info(TPF_EVENT_DEFERRED)->hook, TPF_HOOK_LOG);
	int counted = 0;
	for (int k = 0; k < TPF_EVENT_NKINDS; k++)
		counted += tpf_event_info(k)->metric != TPF_METRIC_NONE;
	CHECK_INT(counted, 4);
	CHECK_INT(tpf_event_info(TPF_EVENT_PREEMPTED)->metric, TPF_METRIC_PREEMPTIONS);
	CHECK_INT(tpf_event_info(TPF_EVENT_REPLACED)->metric, TPF_METRIC_REPLACEMENTS);
	CHECK_INT(tpf_event_info(TPF_EVENT_RESTARTED)->metric, TPF_METRIC_RESTARTS);
	CHECK_INT(tpf_event_info(TPF_EVENT_ROUND_FAILED)->metric, TPF_METRIC_ROUND_FAILURES);
}

/* The plan's restart entries keep the plan's own codes in -json. */
static void test_events__restart_entries_use_plan_codes(void)
{
	CHECK_STR(tpf_event_info(TPF_EVENT_RESTARTS_USED_UP)->code,
		  tpf_unconverged_code(TPF_UNCONV_RESTARTS_EXHAUSTED));
	CHECK_STR(tpf_event_info(TPF_EVENT_NOT_RESTARTED)->code,
		  tpf_unconverged_code(TPF_UNCONV_NOT_RESTARTED));
	CHECK_STR(tpf_event_info(TPF_EVENT_RESTART_WAITING)->code,
		  tpf_unconverged_code(TPF_UNCONV_RESTART_WAITING));
}

/* Out of range: an empty row, and unknown names are -1; INIT leaves the
 * optional fields unset (-1), not 0, which is a real worker index. */
static void test_events__edges(void)
{
	CHECK_STR(tpf_event_info(TPF_EVENT_NKINDS)->name, "");
	CHECK(tpf_event_info(TPF_EVENT_NKINDS)->code == NULL);
	CHECK_INT(tpf_event_info((enum tpf_event_kind)-1)->notify, -1);
	CHECK_INT(tpf_event_kind_from_name("no_such_kind"), -1);
	CHECK_INT(tpf_event_kind_from_name(NULL), -1);
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_READY);
	CHECK_INT(ev.kind, TPF_EVENT_READY);
	CHECK_INT(ev.action, TPF_EVENT_READY);
	CHECK_INT(ev.worker, -1);
	CHECK_INT(ev.exit_code, -1);
	CHECK_INT(ev.generation, -1);
	CHECK(ev.node == NULL && ev.message == NULL);
}

int main(void)
{
	RUN(test_events__every_kind_maps_to_its_words);
	RUN(test_events__every_webhook_has_a_kind);
	RUN(test_events__hooks_and_metrics);
	RUN(test_events__restart_entries_use_plan_codes);
	RUN(test_events__edges);
	return unit_done();
}
