/*
 * One classifier for Cloud TPU Node.state: what tpuform does with a node in
 * a given state. plan/diff.c, engine/apply/apply.c and the watch loop all ask here,
 * so they never disagree.
 *
 * Contract mirrored: the Node.state enum of the Cloud TPU v2 discovery
 * document (docs/cloud-tpu-api.md, "Node states"):
 *   READY                                          -> TPF_NODE_READY
 *   CREATING STARTING RESTARTING REPAIRING
 *   REIMAGING UNHIDING                             -> TPF_NODE_BUSY (wait)
 *   PREEMPTED TERMINATED STOPPED STOPPING          -> TPF_NODE_DEAD (replace)
 *   DELETING HIDING HIDDEN                         -> TPF_NODE_GOING
 *   STATE_UNSPECIFIED UNKNOWN, anything else, NULL -> TPF_NODE_UNKNOWN
 * STOPPING counts as dead: a stopping node will not run the job again
 * without a start, which tpuform never sends; it replaces instead.
 */
#ifndef TPF_NODE_STATE_H
#define TPF_NODE_STATE_H

enum tpf_node_class {
	TPF_NODE_UNKNOWN = 0, /* unknown or unrecognised: leave alone, report */
	TPF_NODE_READY,       /* running: provision, probe */
	TPF_NODE_BUSY,        /* transitional on its way to READY: wait */
	TPF_NODE_DEAD,        /* will not run the job again: replace */
	TPF_NODE_GOING,       /* being deleted or hidden: treat as absent soon */
};

/* Node.state as a value (one table: model/node_state.c), for the code that
 * must tell states of one class apart (`show` says "preempted", the plan
 * "being hidden"); TPF_NODE_STATE_OTHER for NULL and anything else. */
enum tpf_node_state {
	TPF_NODE_STATE_OTHER = 0,
	TPF_NODE_STATE_READY,
	TPF_NODE_STATE_CREATING,
	TPF_NODE_STATE_STARTING,
	TPF_NODE_STATE_RESTARTING,
	TPF_NODE_STATE_REPAIRING,
	TPF_NODE_STATE_REIMAGING,
	TPF_NODE_STATE_UNHIDING,
	TPF_NODE_STATE_PREEMPTED,
	TPF_NODE_STATE_TERMINATED,
	TPF_NODE_STATE_STOPPED,
	TPF_NODE_STATE_STOPPING,
	TPF_NODE_STATE_DELETING,
	TPF_NODE_STATE_HIDING,
	TPF_NODE_STATE_HIDDEN,
	TPF_NODE_STATE_N
};

/* The value of a Node.state string. */
enum tpf_node_state tpf_node_state_of(const char *state);

/* 1 when a Node.state (or a Compute Engine instance's state as the provider
 * reports it) is PREEMPTED or TERMINATED: Google took the capacity back. */
int tpf_node_state_reclaimed(const char *state);

/* The class of a Node.state string (NULL: TPF_NODE_UNKNOWN). */
enum tpf_node_class tpf_node_class(const char *state);

/* "ready" "busy" "dead" "going" "unknown" (static), for messages and tests. */
const char *tpf_node_class_name(enum tpf_node_class c);

/*
 * Queued resources (QueuedResource.state.state): 1 for the states in which
 * the queued resource will never give a node unless it is deleted and
 * queued again: FAILED and SUSPENDED. (ACTIVE with no node, which means the
 * node was deleted outside tpuform, is decided by the caller, who knows
 * whether a node exists.)
 */
int tpf_queued_state_dead(const char *state);

/*
 * What `watch` counts a desired node as (engine/watch/watch_internal.h
 * tpf_watch_node_condition: its round summary, and the nodes metric of
 * engine/telemetry/metrics.h, which counts the first six), in the order both list
 * them. One name table, model/node_state.c.
 */
enum tpf_node_condition {
	TPF_COND_ALIVE = 0, /* READY */
	TPF_COND_CREATING,  /* on its way up (or an unknown state) */
	TPF_COND_WAITING,   /* not created: waiting for quota */
	TPF_COND_DEAD,      /* will not run the job again: being replaced */
	TPF_COND_MISSING,   /* not there at all: being created */
	TPF_COND_QUEUED,    /* a queued resource waits for capacity */
	TPF_COND_COMPLETED, /* its job completed (on_success: delete) */
	TPF_NCONDITIONS
};

/* "alive" "creating" "waiting" "dead" "missing" "queued" "completed"
 * (static; "" out of range). */
const char *tpf_node_condition_name(enum tpf_node_condition c);

/* QueuedResource.state.state as a value, for the states the plan tells
 * apart (docs/cloud-tpu-api.md section 5); TPF_QUEUED_OTHER for the rest
 * (ACCEPTED, WAITING_FOR_RESOURCES, PROVISIONING, ...) and NULL. */
enum tpf_queued_state {
	TPF_QUEUED_OTHER = 0,
	TPF_QUEUED_ACTIVE,
	TPF_QUEUED_FAILED,
	TPF_QUEUED_SUSPENDED,
	TPF_QUEUED_CREATING,     /* accepted, on its way to ACTIVE */
	TPF_QUEUED_PROVISIONING, /* capacity found, nodes being made */
};
enum tpf_queued_state tpf_queued_state_of(const char *state);

/* Node.health (HEALTHY, DEGRADED, UNHEALTHY_TENSORFLOW, UNHEALTHY_MAINTENANCE,
 * ...): 1 when it is a verdict against the node, 0 for NULL, HEALTHY and
 * HEALTH_UNSPECIFIED (no verdict yet). */
int tpf_node_health_bad(const char *health);

#endif
