/*
 * The fleet file's notify key (config/config_notify.c): what it accepts,
 * and errors with FILE:LINE:COL and "did you mean" like the rest of config.
 */
#include "tests/unit/unit.h"
#include "config/config.h"

#include <stdio.h>
#include <string.h>

#define HEAD "fleet: f\nprovider: { local: {} }\nrun: train\n"
#define GROUP                                                                            \
	"groups:\n  - { name: g, accelerator_type: v2-8, runtime_version: tpu-vm-base, " \
	"zones: [us-central1-f], count: 1 }\n"

static int parse(struct tpf_fleet *f, const char *notify, struct tpf_diags *d)
{
	char text[1024];
	snprintf(text, sizeof(text), HEAD GROUP "%s", notify);
	return tpf_fleet_parse(f, "fleet.yaml", text, strlen(text), d);
}

static void test_notify__accepted(void)
{
	static const struct {
		const char *yaml;
		const char *webhook;
		unsigned events;
		int text_only;
	} ok[] = {
		{ "", NULL, 0, 0 },
		{ "notify: { webhook: 'https://hooks.slack.com/services/T0/B0/xyz' }\n",
		  "https://hooks.slack.com/services/T0/B0/xyz", (1u << TPF_NOTIFY_NEVENTS) - 1, 0 },
		{ "notify:\n  webhook: http://127.0.0.1:8080/hook\n  events: [preempted, replaced]\n",
		  "http://127.0.0.1:8080/hook",
		  (1u << TPF_NOTIFY_PREEMPTED) | (1u << TPF_NOTIFY_REPLACED), 0 },
		{ "notify: { webhook: 'http://localhost/h', events: [completed], payload: text }\n",
		  "http://localhost/h", 1u << TPF_NOTIFY_COMPLETED, 1 },
		{ "notify: { webhook: 'http://[::1]:9/h', events: [job_failed, job_failed] }\n",
		  "http://[::1]:9/h", 1u << TPF_NOTIFY_JOB_FAILED, 0 },
		{ "notify: { webhook: 'http://127.3.4.5/h', payload: full }\n", "http://127.3.4.5/h",
		  (1u << TPF_NOTIFY_NEVENTS) - 1, 0 },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct tpf_fleet f;
		struct tpf_diags d = TPF_DIAGS_INIT;
		int rc = parse(&f, ok[i].yaml, &d);
		CHECKF(rc == 0, "case %zu: %s", i, d.n ? d.items[0].summary : "");
		CHECK_STR(f.notify.webhook, ok[i].webhook);
		CHECK_INT(f.notify.events, ok[i].events);
		CHECK_INT(f.notify.text_only, ok[i].text_only);
		tpf_fleet_release(&f);
		tpf_diags_release(&d);
	}
}

static void test_notify__refused(void)
{
	static const struct {
		const char *yaml;
		const char *first; /* exact summary */
	} bad[] = {
		{ "notify: { webhook: https://x.example/h, events: [preemted] }\n",
		  "fleet.yaml:6:50: 'events' must be one of preempted, replaced, job_failed, "
		  "job_succeeded, stalled, restarts_exhausted, quota_deferred or completed, got "
		  "'preemted'; did you mean 'preempted'?" },
		{ "notify: { webhok: https://x.example/h }\n",
		  "fleet.yaml:6:11: unknown key 'webhok' in notify; did you mean 'webhook'?" },
		{ "notify: { events: [completed] }\n",
		  "fleet.yaml:6:9: notify is missing required key 'webhook'" },
		{ "notify: { webhook: 'http://hooks.example.com/services/SECRET-PATH' }\n",
		  "fleet.yaml:6:20: 'webhook' must be an https URL such as "
		  "'https://hooks.slack.com/services/...' (http only to this machine: localhost, "
		  "127.0.0.1 or [::1]), got an http URL to 'hooks.example.com'" },
		{ "notify: { webhook: 'ftp://127.0.0.1/x' }\n",
		  "fleet.yaml:6:20: 'webhook' must be an https URL such as "
		  "'https://hooks.slack.com/services/...' (http only to this machine: localhost, "
		  "127.0.0.1 or [::1]), got a URL with scheme 'ftp'" },
		{ "notify: { webhook: 'not a url' }\n",
		  "fleet.yaml:6:20: 'webhook' must be an https URL such as "
		  "'https://hooks.slack.com/services/...' (http only to this machine: localhost, "
		  "127.0.0.1 or [::1]), got a value that is not a URL" },
		{ "notify: { webhook: https://x.example/h, events: [] }\n",
		  "fleet.yaml:6:49: 'events' is empty: nothing would be posted" },
		{ "notify: { webhook: https://x.example/h, events: completed }\n",
		  "fleet.yaml:6:49: 'events' must be a list of events from: preempted, replaced, "
		  "job_failed, job_succeeded, stalled, restarts_exhausted, quota_deferred, completed, "
		  "preflight_failed, bad_host, maintenance, budget_reached, shrunk, grown, got "
		  "'completed'" },
		{ "notify: { webhook: https://x.example/h, payload: slack }\n",
		  "fleet.yaml:6:50: 'payload' must be full or text, got 'slack'" },
		{ "notify: https://x.example/h\n",
		  "fleet.yaml:6:9: 'notify' must be a mapping such as { webhook: "
		  "https://hooks.slack.com/services/..., events: [preempted, replaced] }, got "
		  "'https://x.example/h'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tpf_fleet f;
		struct tpf_diags d = TPF_DIAGS_INIT;
		CHECKF(parse(&f, bad[i].yaml, &d) == TPF_ERROR, "case %zu fails", i);
		CHECK_STR(d.n ? d.items[0].summary : NULL, bad[i].first);
		CHECK(f.notify.webhook == NULL);
		for (size_t k = 0; k < d.n; k++) {
			CHECKF(!strstr(d.items[k].summary, "SECRET-PATH"),
			       "the URL's path is never shown: %s", d.items[k].summary);
			CHECKF(!d.items[k].detail || !strstr(d.items[k].detail, "SECRET-PATH"),
			       "nor in the detail");
		}
		tpf_fleet_release(&f);
		tpf_diags_release(&d);
	}
}

/* monitoring: { project: P } (config/config_monitoring.c). */
static void test_notify__monitoring(void)
{
	struct tpf_fleet f;
	struct tpf_diags d = TPF_DIAGS_INIT;
	CHECK_INT(parse(&f, "monitoring: { project: my-proj-42 }\n", &d), 0);
	CHECK_STR(f.monitoring.project, "my-proj-42");
	tpf_fleet_release(&f);
	CHECK_INT(parse(&f, "", &d), 0);
	CHECK(f.monitoring.project == NULL); /* absent: no monitoring */
	tpf_fleet_release(&f);
	tpf_diags_release(&d);
	char long_id[200];
	memset(long_id, 'a', 101);
	long_id[101] = '\0';
	char too_long[300];
	snprintf(too_long, sizeof(too_long), "monitoring: { project: %s }\n", long_id);
	const struct {
		const char *yaml, *first;
	} bad[] = {
		{ "monitoring: { project: My_Proj }\n",
		  "fleet.yaml:6:24: 'project' must be a Google Cloud project ID such as 'my-project' "
		  "(lowercase letters, digits and '-'), got 'My_Proj'" },
		{ "monitoring: { projekt: p }\n",
		  "fleet.yaml:6:15: unknown key 'projekt' in monitoring; did you mean 'project'?" },
		{ "monitoring: {}\n", "fleet.yaml:6:13: monitoring is missing required key 'project'" },
		{ "monitoring: my-proj\n",
		  "fleet.yaml:6:13: 'monitoring' must be a mapping such as { project: my-project }, got "
		  "'my-proj'" },
		{ too_long, "fleet.yaml:6:24: 'project' must be a Google Cloud project ID such as "
			    "'my-project' (lowercase letters, digits and '-'), got 101 characters (at "
			    "most 100)" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tpf_diags e = TPF_DIAGS_INIT;
		CHECKF(parse(&f, bad[i].yaml, &e) == TPF_ERROR, "case %zu fails", i);
		CHECK_STR(e.n ? e.items[0].summary : NULL, bad[i].first);
		CHECK(f.monitoring.project == NULL);
		tpf_fleet_release(&f);
		tpf_diags_release(&e);
	}
}

static void test_notify__event_names(void)
{
	CHECK_STR(tpf_notify_event_name(TPF_NOTIFY_PREEMPTED), "preempted");
	CHECK_STR(tpf_notify_event_name(TPF_NOTIFY_RESTARTS_EXHAUSTED), "restarts_exhausted");
	CHECK_STR(tpf_notify_event_name(TPF_NOTIFY_COMPLETED), "completed");
	CHECK(tpf_notify_event_name(TPF_NOTIFY_NEVENTS) == NULL);
}

int main(void)
{
	RUN(test_notify__accepted);
	RUN(test_notify__refused);
	RUN(test_notify__event_names);
	RUN(test_notify__monitoring);
	return unit_done();
}
