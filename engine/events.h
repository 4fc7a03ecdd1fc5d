/*
 * Typed events: every moment the engine reports (an apply's actions, the
 * watch loop's detections) is a struct tpf_event whose `kind` says what
 * happened, with structured fields beside it. Whatever shows or counts an
 * event derives it from the kind through ONE table (engine/events.c,
 * tpf_event_info): `apply`'s Terraform-style lines and JSON hooks
 * (cmd/ui.c), `watch`'s lines and its `-json` watch_event codes
 * (cmd/cmd_watch.c), the webhook event (engine/telemetry/notify.h, engine/watch/watch_hooks.c)
 * and the metric (engine/telemetry/metrics.h). The message is for people only: no
 * code ever parses it. Terraform's hooks pass a typed action the same way
 * (PreApply/PostApply with the action), docs/terraform-behaviour.md.
 *
 * Adding a kind: a value below and a row in engine/events.c (the row's
 * place is checked: tests/unit/test_events.c); its user-visible names are
 * part of the interface (docs/watch.md "watch", "Notifications", "Metrics").
 */
#ifndef TPF_ENGINE_EVENTS_H
#define TPF_ENGINE_EVENTS_H

#include "model/recipe.h"

enum tpf_event_kind {
	/* ---- the executor (engine/apply/apply.c): an action's life -------------- */
	TPF_EVENT_CREATING,   /* a create starts (the node is recorded pending) */
	TPF_EVENT_READY,      /* created and READY: its workers are provisioned next */
	TPF_EVENT_CREATED,    /* created, not READY yet (message says why: queued
			       * resource waiting, or still on its way) */
	TPF_EVENT_DELETING,   /* a delete starts */
	TPF_EVENT_DELETED,    /* the node is gone */
	TPF_EVENT_UPDATING,   /* an in-place update (labels, fields, workers) starts */
	TPF_EVENT_UPDATED,
	TPF_EVENT_RESTARTING, /* a restart of jobs starts (`workers`: how many) */
	TPF_EVENT_RESTARTED,  /* those jobs started again (`workers`: how many) */
	TPF_EVENT_WAITING,    /* waiting for a node on its way to become READY */
	TPF_EVENT_PROGRESS,   /* heartbeat of the action `action` (elapsed) */
	TPF_EVENT_FAILED,     /* the action `action` failed (diagnostics say why) */
	TPF_EVENT_INTERRUPTED, /* the action `action` stopped on an interrupt */
	TPF_EVENT_JOB_STARTED, /* a worker was provisioned: its job started */
	TPF_EVENT_JOB_RUNNING, /* a worker was provisioned: its job already ran */
	TPF_EVENT_UNREACHABLE, /* a worker could not be reached to provision */
	TPF_EVENT_PROVISION_FAILED, /* a worker's provisioning failed */
	TPF_EVENT_QUEUED,     /* the create left a queued resource waiting for capacity */
	TPF_EVENT_NOT_READY,  /* the create left a node that is not READY yet */
	/* the create ended with the node waiting for capacity (a flex-start VM
	 * or slice, a queued resource): the create's end, in place of CREATED,
	 * counted apart from "added" (engine/apply/apply.h `waiting`); the QUEUED
	 * line before it says where and why (issue 26) */
	TPF_EVENT_CAPACITY_WAITING,
	TPF_EVENT_DEFERRED,   /* no zone of the group can take the node now (watch) */
	TPF_EVENT_ZONE_BACKED_OFF, /* a zone is skipped: it refused recently */
	TPF_EVENT_ZONE_REFUSED,    /* a zone refused (quota, capacity, unusable) */
	TPF_EVENT_ZONE_FALLBACK,   /* the create tries the next zone (`zone`) */
	TPF_EVENT_PREFLIGHT_FAILED, /* a worker failed its preflight: the job was not
				     * started (message: the worker's words, e.g. the
				     * PID holding the TPU) */
	TPF_EVENT_BAD_HOST,   /* a worker failed preflight_failures preflights in a
			       * row: the node is marked bad_host and replaced */
	/* ---- the watch loop (engine/watch*.c): what a round saw ----------- */
	TPF_EVENT_UNHEALTHY,  /* a READY node is not HEALTHY */
	TPF_EVENT_WARNING,    /* a warning of the round (e.g. "deferred: quota") */
	TPF_EVENT_LOCKED,     /* another tpuform holds the state lock: no heal */
	TPF_EVENT_REPLAN,     /* the state changed since the refresh: no heal */
	TPF_EVENT_LEASE_ACQUIRED, /* this watch took the leader lease */
	TPF_EVENT_LOCK_REMOVED,   /* ... and removed the lock its dead predecessor held */
	TPF_EVENT_STANDBY,    /* another watch leads (once per holder) */
	TPF_EVENT_LEASE_LOST, /* the lease was taken over: healing stopped */
	TPF_EVENT_ROUND_FAILED, /* the round failed and is retried */
	TPF_EVENT_STOPPED,    /* interrupted: the loop ends */
	TPF_EVENT_METRICS,    /* where metrics are served */
	TPF_EVENT_SSH_CONFIG, /* the installed ssh config was rewritten (new nodes) */
	TPF_EVENT_NOTIFY_PROBLEM, /* a webhook delivery problem */
	TPF_EVENT_DONE,       /* exit_when_done: every node completed or failed */
	/* the plan's restart entries (plan/plan.h tpf_unconverged_code), once
	 * per entry that appears */
	TPF_EVENT_RESTARTS_USED_UP,
	TPF_EVENT_NOT_RESTARTED,
	TPF_EVENT_RESTART_WAITING,
	/* ---- what the watch hooks conclude (engine/watch/watch_hooks.c): one per
	 * moment, however many rounds show it; webhooks and metrics, no line
	 * of their own (the round's lines already said it) ------------------ */
	TPF_EVENT_PREEMPTED,  /* a lost node's replacement started (elapsed: detection latency) */
	TPF_EVENT_REPLACED,   /* that node's new create completed */
	TPF_EVENT_JOB_SUCCEEDED, /* a worker's job exited 0 (retry, exit_code, last_log) */
	TPF_EVENT_JOB_FAILED,    /* exited non-zero, or its session died (exit_code -1) */
	TPF_EVENT_RESTARTS_EXHAUSTED, /* ... and max_restarts is used up */
	TPF_EVENT_STALLED,    /* a restart the plan makes for a stalled job */
	TPF_EVENT_QUOTA_WAITING, /* more of a group's nodes wait for quota (`group`) */
	TPF_EVENT_COMPLETED,  /* every worker of a node exited 0 (generation) */
	/* ---- facts a job reports of itself (templates/bootstrap.sh status:
	 * a line TPUFORM_STEP=N or "checkpoint saved at step N" in its log,
	 * or the file $TPUFORM_HEARTBEAT.step); the run ledger records them
	 * (engine/ledger/ledger_writer.h), nothing shows them ---------------------------- */
	TPF_EVENT_JOB_STEP,   /* the job reached step `step` (worker) */
	TPF_EVENT_CHECKPOINT, /* the job saved a checkpoint at step `step` */
	TPF_EVENT_PLANNED,    /* `plan` made a plan (message: its summary line) */
	/* watch told a node's jobs of its upcoming maintenance window
	 * (deadline: the window's start; docs/recovery.md) */
	TPF_EVENT_MAINTENANCE,
	/* a watch hook's conclusion (engine/watch/watch_hooks.c): a budget's spend
	 * reached its amount in the current period (`group`, NULL: the
	 * fleet's; once per period and scope; docs/ledger.md "Budgets") */
	TPF_EVENT_BUDGET_REACHED,
	/* elastic slices (docs/recovery.md "Elastic slices"): a node's job
	 * restarted on the slices left (message: "the job runs on 2 of 3
	 * slices: 0,2"), and on every slice again once they are back */
	TPF_EVENT_SHRUNK,
	TPF_EVENT_GROWN,
	TPF_EVENT_NKINDS
};

/* Which line `apply` prints for an event (cmd/ui.c): Terraform's hooks
 * (PreApply, progress, PostApply, errored), Ansible's per-host result,
 * or a plain log line; NONE: not an executor event. */
enum tpf_event_hook {
	TPF_HOOK_NONE,
	TPF_HOOK_START,
	TPF_HOOK_PROGRESS,
	TPF_HOOK_COMPLETE,
	TPF_HOOK_ERRORED,
	TPF_HOOK_PROVISION,
	TPF_HOOK_LOG,
};

/* What an event counts in engine/telemetry/metrics.h (the families there). */
enum tpf_event_metric {
	TPF_METRIC_NONE,
	TPF_METRIC_PREEMPTIONS,    /* preemptions_total{reason}, detection_latency_seconds */
	TPF_METRIC_REPLACEMENTS,   /* replacements_total */
	TPF_METRIC_RESTARTS,       /* restarts_total (+ workers) */
	TPF_METRIC_ROUND_FAILURES, /* round_failures_total */
};

/* The one table's row for a kind. Every string is static. */
struct tpf_event_info {
	const char *name;     /* unique, stable name of the kind ("ready") */
	/* `watch -json` watch_event "event" code (docs/watch.md "watch"); some
	 * kinds share one. NULL: watch shows no line for it. */
	const char *code;
	/* watch's line when the event carries no message ("creating") */
	const char *text;
	int notify;           /* the webhook event (enum tpf_notify_event), or -1 */
	enum tpf_event_metric metric;
	enum tpf_event_hook hook;
	/* START/COMPLETE rows: Terraform's action ("create" "delete" "update"
	 * "restart" "wait"); PROVISION rows: Ansible's result ("ok" "changed"
	 * "unreachable" "failed"); else NULL. */
	const char *word;
};

/*
 * One event. Every pointer is borrowed for the duration of the callback.
 * Fields that do not apply are NULL or -1. Built with TPF_EVENT_INIT, so
 * fields added later (a ledger will add the accelerator type, chips and
 * scheduling class) start unset everywhere.
 */
struct tpf_event {
	enum tpf_event_kind kind;
	/* Executor events: the kind that started the action this event belongs
	 * to (TPF_EVENT_CREATING for READY, PROGRESS of a create, ...). Others:
	 * the kind itself. */
	enum tpf_event_kind action;
	const char *node;     /* NULL: the fleet */
	const char *group;
	const char *zone;
	const char *id;       /* the provider's id of the node */
	long generation;      /* the node's generation (state/state.h) */
	long retry;           /* the job's try, TPUFORM_RETRY: generation + restarts */
	int worker;           /* 0-based worker index */
	int workers;          /* RESTARTING/RESTARTED: how many workers */
	int exit_code;        /* a job's exit status */
	double elapsed;       /* seconds since the action started; PREEMPTED: detection latency */
	const char *reason;   /* the plan's reason code, for machines ("preempted") */
	const char *message;  /* for people; never parsed */
	const char *last_log; /* a job's last log line */
	/* What the node is, when the emitter knows it (creates, deletes,
	 * restarts): the run ledger takes the API, accelerator or machine
	 * type, chips, VMs and scheduling class from it (model/chips.h). */
	const struct tpf_recipe *recipe;
	long step;            /* JOB_STEP, CHECKPOINT: the job's step; else -1 */
	/* CHECKPOINT: the job's last TPUFORM_CHECKPOINT as the state now
	 * records it (engine/checkpoints.h); MAINTENANCE: the window's start
	 * (RFC 3339). NULL otherwise. */
	const char *checkpoint;
	const char *deadline;
	/* PREEMPTED of some slices of a multislice node (docs/ledger.md "A
	 * lost slice"): the lost slices, "1" or "0,2", with `workers` their
	 * VMs and lost_chips their chips; NULL (lost_chips unused): the whole
	 * node was lost. */
	const char *slices;
	int lost_chips;
};

#define TPF_EVENT_INIT(k)                                                                   \
	{ .kind = (k), .action = (k), .generation = -1, .retry = -1, .worker = -1,         \
	  .workers = -1, .exit_code = -1, .step = -1 }

/* Called from several threads; the callee serialises its own output. */
typedef void (*tpf_event_fn)(const struct tpf_event *ev, void *ctx);

/* The row of kind k (static; a row of empty strings when k is out of range,
 * so callers need no check). */
const struct tpf_event_info *tpf_event_info(enum tpf_event_kind k);

/* The kind named `name` (tpf_event_info(k)->name), or -1. */
int tpf_event_kind_from_name(const char *name);

#endif
