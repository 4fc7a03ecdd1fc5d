/*
 * The reason codes of plan actions (struct tpf_action's reason_code, for
 * machines): one enum and one table (plan/reason_code.c), in the style of
 * engine/events.c. The names are an interface: `plan -json` ("reason"),
 * saved plans ("reason_code"), `watch -json` and the run ledger carry them
 * (docs/commands.md, docs/watch.md). A code is parsed once, where it is set
 * (tpf_action_set_reason_code) or read from a saved plan; code decides by
 * the enum, never by the text.
 */
#ifndef TPF_REASON_CODE_H
#define TPF_REASON_CODE_H

enum tpf_reason_code {
	TPF_REASON_NONE = 0,     /* no code */
	TPF_REASON_OTHER,        /* a code not in the table (a saved plan of another version) */
	TPF_REASON_ADOPT,        /* found by its lineage label, missing from state */
	TPF_REASON_API,          /* the group moved between APIs */
	TPF_REASON_BAD_HOST,     /* preflight failed again and again */
	TPF_REASON_BUDGET,       /* on_budget: delete */
	TPF_REASON_BUSY,         /* on its way to READY */
	TPF_REASON_CHANGED,      /* refresh-only: its id or zone moved */
	TPF_REASON_COMPLETED,    /* its job completed (on_success: delete) */
	TPF_REASON_COUNT,        /* its group's count went down */
	TPF_REASON_DELETED,      /* deleted (by tpuform, or refresh-only: gone) */
	TPF_REASON_DELETING,     /* a delete is under way */
	TPF_REASON_DESTROY,      /* destroy was requested */
	TPF_REASON_FLEX_WAIT,    /* waited past flex_start.wait */
	TPF_REASON_FOUND,        /* refresh-only: live, labelled, not in state */
	TPF_REASON_GONE,         /* gone: remove from state */
	TPF_REASON_GROW,         /* elastic: every slice is back, the job grows to them */
	TPF_REASON_INTERRUPTED,  /* an earlier create did not complete */
	TPF_REASON_JOB,          /* the bootstrap script changed */
	TPF_REASON_LABELS,       /* labels changed */
	TPF_REASON_LABELS_AND_JOB,
	TPF_REASON_LEFTOVER,     /* a Compute Engine slice's leftover parts */
	TPF_REASON_MISSING,      /* deleted outside tpuform */
	TPF_REASON_NOT_IN_CONFIG, /* its group is not in the fleet file */
	TPF_REASON_ORPHAN,       /* carries this state's lineage, not in state */
	TPF_REASON_PATCH,        /* node fields change in place */
	TPF_REASON_PREEMPTED,    /* Node.state PREEMPTED, or a preempted spot VM */
	TPF_REASON_PROVISION,    /* workers not provisioned with the current script */
	TPF_REASON_QUEUED_FAILED,
	TPF_REASON_QUEUED_NODE_GONE,
	TPF_REASON_QUEUED_SUSPENDED,
	TPF_REASON_RECIPE,       /* a field that forces replacement changed */
	TPF_REASON_REFUSED,      /* every zone refused its last create */
	TPF_REASON_REPLACE_BY_REQUEST, /* -replace */
	TPF_REASON_SESSION,      /* a restart of dead or finished sessions */
	TPF_REASON_STALLED,      /* a restart of stalled jobs */
	TPF_REASON_STOPPED,      /* Node.state STOPPED */
	TPF_REASON_STOPPING,     /* Node.state STOPPING */
	TPF_REASON_TAINTED,      /* its create failed half-way */
	TPF_REASON_TERMINATED,   /* Node.state TERMINATED */
	TPF_REASON_UNHEALTHY,    /* unhealthy past watch's timeout (engine/watch/watch_unhealthy.c) */
	TPF_REASON_NCODES
};

struct tpf_reason_info {
	const char *name;      /* the code as written ("preempted"); NULL for NONE and OTHER */
	/* Terraform's action_reason in `plan -json` (internal/plans/
	 * changes.go ResourceInstanceChangeActionReason), or NULL. */
	const char *terraform;
	/* A replace for this reason replaces a node that was lost (dead, its
	 * queued resource gave up, unhealthy): watch's `preempted` and
	 * `replaced` events (engine/watch/watch_hooks.c). */
	unsigned lost : 1;
	/* A delete or replace for this reason is planned while the node's jobs
	 * run: they are told first (docs/recovery.md "Disruptions"). */
	unsigned planned : 1;
};

/* The row of code c (static; a row of NULLs and zeros when out of range). */
const struct tpf_reason_info *tpf_reason_info(enum tpf_reason_code c);

/* The code named `name`: TPF_REASON_NONE for NULL, TPF_REASON_OTHER for a
 * name not in the table. */
enum tpf_reason_code tpf_reason_code_from_name(const char *name);

struct tpf_action; /* plan/plan.h */

/* Set a's reason code: a->reason_code becomes a copy of name (NULL: none),
 * a->reason_kind its parsed value. The one way code is set. */
void tpf_action_set_reason_code(struct tpf_action *a, const char *name);

/* The same by value: a->reason_code becomes c's name (NULL for
 * TPF_REASON_NONE and TPF_REASON_OTHER). */
void tpf_action_set_reason_kind(struct tpf_action *a, enum tpf_reason_code c);

#endif
