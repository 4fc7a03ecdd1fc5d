/*
 * The one table of event kinds (engine/events.h): what each kind is
 * called, shown as, posted as and counted as. The user-visible words are
 * the interface: `watch -json` codes (docs/watch.md "watch"), webhook events
 * (docs/watch.md "Notifications"), metric families (engine/telemetry/metrics.h).
 */
#include "engine/events.h"
#include "config/config.h"

#include <string.h>

#define N -1 /* no webhook */

/* name, code, text, notify, metric, hook, word */
static const struct tpf_event_info table[TPF_EVENT_NKINDS] = {
	[TPF_EVENT_CREATING] = { "creating", "creating", "creating", N, TPF_METRIC_NONE,
				 TPF_HOOK_START, "create" },
	[TPF_EVENT_READY] = { "ready", "ready", "READY", N, TPF_METRIC_NONE, TPF_HOOK_COMPLETE,
			      "create" },
	[TPF_EVENT_CREATED] = { "created", NULL, "created", N, TPF_METRIC_NONE, TPF_HOOK_COMPLETE,
				"create" },
	[TPF_EVENT_DELETING] = { "deleting", "deleting", "deleting", N, TPF_METRIC_NONE,
				 TPF_HOOK_START, "delete" },
	[TPF_EVENT_DELETED] = { "deleted", "deleted", "deleted", N, TPF_METRIC_NONE,
				TPF_HOOK_COMPLETE, "delete" },
	[TPF_EVENT_UPDATING] = { "updating", NULL, "updating", N, TPF_METRIC_NONE, TPF_HOOK_START,
				 "update" },
	[TPF_EVENT_UPDATED] = { "updated", NULL, "updated", N, TPF_METRIC_NONE, TPF_HOOK_COMPLETE,
				"update" },
	[TPF_EVENT_RESTARTING] = { "restarting", "restarting", "restarting sessions", N,
				   TPF_METRIC_NONE, TPF_HOOK_START, "restart" },
	[TPF_EVENT_RESTARTED] = { "restarted", NULL, "restarted", N, TPF_METRIC_RESTARTS,
				  TPF_HOOK_COMPLETE, "restart" },
	[TPF_EVENT_WAITING] = { "waiting", NULL, "waiting for READY", N, TPF_METRIC_NONE,
				TPF_HOOK_START, "wait" },
	[TPF_EVENT_PROGRESS] = { "progress", NULL, "still working", N, TPF_METRIC_NONE,
				 TPF_HOOK_PROGRESS, NULL },
	[TPF_EVENT_FAILED] = { "failed", "error", "failed (details below)", N, TPF_METRIC_NONE,
			       TPF_HOOK_ERRORED, NULL },
	[TPF_EVENT_INTERRUPTED] = { "interrupted", "note", "interrupted", N, TPF_METRIC_NONE,
				    TPF_HOOK_LOG, NULL },
	[TPF_EVENT_JOB_STARTED] = { "job_started", "session_started", "session started", N,
				    TPF_METRIC_NONE, TPF_HOOK_PROVISION, "changed" },
	[TPF_EVENT_JOB_RUNNING] = { "job_running", "ok", "session already running", N,
				    TPF_METRIC_NONE, TPF_HOOK_PROVISION, "ok" },
	[TPF_EVENT_UNREACHABLE] = { "unreachable", "unreachable", "unreachable", N,
				    TPF_METRIC_NONE, TPF_HOOK_PROVISION, "unreachable" },
	[TPF_EVENT_PROVISION_FAILED] = { "provision_failed", "failed", "failed", N,
					 TPF_METRIC_NONE, TPF_HOOK_PROVISION, "failed" },
	[TPF_EVENT_QUEUED] = { "queued", "queued", "queued", N, TPF_METRIC_NONE, TPF_HOOK_LOG,
			       NULL },
	[TPF_EVENT_NOT_READY] = { "not_ready", "note", "not READY yet", N, TPF_METRIC_NONE,
				  TPF_HOOK_LOG, NULL },
	[TPF_EVENT_CAPACITY_WAITING] = { "capacity_waiting", NULL, "waiting for capacity", N,
					 TPF_METRIC_NONE, TPF_HOOK_COMPLETE, "create" },
	[TPF_EVENT_DEFERRED] = { "deferred", "deferred", "deferred", TPF_NOTIFY_QUOTA_DEFERRED,
				 TPF_METRIC_NONE, TPF_HOOK_LOG, NULL },
	[TPF_EVENT_ZONE_BACKED_OFF] = { "zone_backed_off", "note", "zone backed off", N,
					TPF_METRIC_NONE, TPF_HOOK_LOG, NULL },
	[TPF_EVENT_ZONE_REFUSED] = { "zone_refused", "note", "zone refused", N, TPF_METRIC_NONE,
				     TPF_HOOK_LOG, NULL },
	[TPF_EVENT_ZONE_FALLBACK] = { "zone_fallback", "note", "trying another zone", N,
				      TPF_METRIC_NONE, TPF_HOOK_LOG, NULL },
	[TPF_EVENT_PREFLIGHT_FAILED] = { "preflight_failed", "preflight_failed", "preflight failed",
					 TPF_NOTIFY_PREFLIGHT_FAILED, TPF_METRIC_NONE,
					 TPF_HOOK_PROVISION, "failed" },
	[TPF_EVENT_BAD_HOST] = { "bad_host", "bad_host", "bad host: replacing it",
				 TPF_NOTIFY_BAD_HOST, TPF_METRIC_NONE, TPF_HOOK_LOG, NULL },
	[TPF_EVENT_UNHEALTHY] = { "unhealthy", "unhealthy", "unhealthy", N, TPF_METRIC_NONE,
				  TPF_HOOK_NONE, NULL },
	[TPF_EVENT_WARNING] = { "warning", "warning", "warning", N, TPF_METRIC_NONE, TPF_HOOK_NONE,
				NULL },
	[TPF_EVENT_LOCKED] = { "locked", "locked", "the state is locked", N, TPF_METRIC_NONE,
			       TPF_HOOK_NONE, NULL },
	[TPF_EVENT_REPLAN] = { "replan", "replan", "planning again", N, TPF_METRIC_NONE,
			       TPF_HOOK_NONE, NULL },
	[TPF_EVENT_LEASE_ACQUIRED] = { "lease_acquired", "leader", "leading", N, TPF_METRIC_NONE,
				       TPF_HOOK_NONE, NULL },
	[TPF_EVENT_LOCK_REMOVED] = { "lock_removed", "leader", "removed the previous leader's lock",
				     N, TPF_METRIC_NONE, TPF_HOOK_NONE, NULL },
	[TPF_EVENT_STANDBY] = { "standby", "standby", "standing by", N, TPF_METRIC_NONE,
				TPF_HOOK_NONE, NULL },
	[TPF_EVENT_LEASE_LOST] = { "lease_lost", "lease_lost", "lost the leader lease", N,
				   TPF_METRIC_NONE, TPF_HOOK_NONE, NULL },
	[TPF_EVENT_ROUND_FAILED] = { "round_failed", "error", "round failed", N,
				     TPF_METRIC_ROUND_FAILURES, TPF_HOOK_NONE, NULL },
	[TPF_EVENT_STOPPED] = { "stopped", "stopped", "stopped", N, TPF_METRIC_NONE, TPF_HOOK_NONE,
				NULL },
	[TPF_EVENT_METRICS] = { "metrics", "metrics", "serving metrics", N, TPF_METRIC_NONE,
				TPF_HOOK_NONE, NULL },
	[TPF_EVENT_SSH_CONFIG] = { "ssh_config", "ssh_config", "ssh config rewritten", N,
				   TPF_METRIC_NONE, TPF_HOOK_NONE, NULL },
	[TPF_EVENT_NOTIFY_PROBLEM] = { "notify_problem", "notify", "webhook delivery problem", N,
				       TPF_METRIC_NONE, TPF_HOOK_NONE, NULL },
	[TPF_EVENT_DONE] = { "done", "done", "done", N, TPF_METRIC_NONE, TPF_HOOK_NONE, NULL },
	[TPF_EVENT_RESTARTS_USED_UP] = { "restarts_used_up", "restarts_exhausted",
					 "restarts used up", N, TPF_METRIC_NONE, TPF_HOOK_NONE,
					 NULL },
	[TPF_EVENT_NOT_RESTARTED] = { "not_restarted", "not_restarted", "not restarted", N,
				      TPF_METRIC_NONE, TPF_HOOK_NONE, NULL },
	[TPF_EVENT_RESTART_WAITING] = { "restart_waiting", "restart_waiting",
					"waiting to restart", N, TPF_METRIC_NONE, TPF_HOOK_NONE,
					NULL },
	[TPF_EVENT_PREEMPTED] = { "preempted", NULL, "lost: replacing it", TPF_NOTIFY_PREEMPTED,
				  TPF_METRIC_PREEMPTIONS, TPF_HOOK_NONE, NULL },
	[TPF_EVENT_REPLACED] = { "replaced", NULL, "replaced", TPF_NOTIFY_REPLACED,
				 TPF_METRIC_REPLACEMENTS, TPF_HOOK_NONE, NULL },
	[TPF_EVENT_JOB_SUCCEEDED] = { "job_succeeded", NULL, "the job finished",
				      TPF_NOTIFY_JOB_SUCCEEDED, TPF_METRIC_NONE, TPF_HOOK_NONE,
				      NULL },
	[TPF_EVENT_JOB_FAILED] = { "job_failed", NULL, "the job failed", TPF_NOTIFY_JOB_FAILED,
				   TPF_METRIC_NONE, TPF_HOOK_NONE, NULL },
	[TPF_EVENT_RESTARTS_EXHAUSTED] = { "restarts_exhausted", NULL, "max_restarts is used up",
					   TPF_NOTIFY_RESTARTS_EXHAUSTED, TPF_METRIC_NONE,
					   TPF_HOOK_NONE, NULL },
	[TPF_EVENT_STALLED] = { "stalled", NULL, "stalled", TPF_NOTIFY_STALLED, TPF_METRIC_NONE,
				TPF_HOOK_NONE, NULL },
	[TPF_EVENT_QUOTA_WAITING] = { "quota_waiting", NULL, "nodes wait for quota",
				      TPF_NOTIFY_QUOTA_DEFERRED, TPF_METRIC_NONE, TPF_HOOK_NONE,
				      NULL },
	[TPF_EVENT_COMPLETED] = { "completed", NULL, "completed", TPF_NOTIFY_COMPLETED,
				  TPF_METRIC_NONE, TPF_HOOK_NONE, NULL },
	[TPF_EVENT_JOB_STEP] = { "job_step", NULL, "progress", N, TPF_METRIC_NONE, TPF_HOOK_NONE,
				 NULL },
	[TPF_EVENT_CHECKPOINT] = { "checkpoint", NULL, "checkpoint saved", N, TPF_METRIC_NONE,
				   TPF_HOOK_NONE, NULL },
	[TPF_EVENT_PLANNED] = { "planned", NULL, "planned", N, TPF_METRIC_NONE, TPF_HOOK_NONE,
				NULL },
	[TPF_EVENT_MAINTENANCE] = { "maintenance", "maintenance",
				    "upcoming maintenance: its jobs were told",
				    TPF_NOTIFY_MAINTENANCE, TPF_METRIC_NONE, TPF_HOOK_NONE, NULL },
	[TPF_EVENT_BUDGET_REACHED] = { "budget_reached", NULL, "budget reached",
				       TPF_NOTIFY_BUDGET_REACHED, TPF_METRIC_NONE, TPF_HOOK_NONE,
				       NULL },
	[TPF_EVENT_SHRUNK] = { "shrunk", "shrunk", "shrunk", TPF_NOTIFY_SHRUNK, TPF_METRIC_NONE,
			       TPF_HOOK_NONE, NULL },
	[TPF_EVENT_GROWN] = { "grown", "grown", "grown", TPF_NOTIFY_GROWN, TPF_METRIC_NONE,
			      TPF_HOOK_NONE, NULL },
};

const struct tpf_event_info *tpf_event_info(enum tpf_event_kind k)
{
	static const struct tpf_event_info none = { "", NULL, "", N, TPF_METRIC_NONE,
						    TPF_HOOK_NONE, NULL };
	return (unsigned)k < TPF_EVENT_NKINDS && table[k].name ? &table[k] : &none;
}

int tpf_event_kind_from_name(const char *name)
{
	for (int k = 0; name && k < TPF_EVENT_NKINDS; k++)
		if (table[k].name && !strcmp(table[k].name, name))
			return k;
	return -1;
}
