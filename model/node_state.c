/*
 * Node.state classes (model/node_state.h).
 */
#include "model/node_state.h"

#include <stddef.h>
#include <string.h>

/* Node.state names and their class, by value. */
static const struct {
	const char *state;
	enum tpf_node_class cls;
} STATES[TPF_NODE_STATE_N] = {
	[TPF_NODE_STATE_OTHER] = { NULL, TPF_NODE_UNKNOWN },
	[TPF_NODE_STATE_READY] = { "READY", TPF_NODE_READY },
	[TPF_NODE_STATE_CREATING] = { "CREATING", TPF_NODE_BUSY },
	[TPF_NODE_STATE_STARTING] = { "STARTING", TPF_NODE_BUSY },
	[TPF_NODE_STATE_RESTARTING] = { "RESTARTING", TPF_NODE_BUSY },
	[TPF_NODE_STATE_REPAIRING] = { "REPAIRING", TPF_NODE_BUSY },
	[TPF_NODE_STATE_REIMAGING] = { "REIMAGING", TPF_NODE_BUSY },
	[TPF_NODE_STATE_UNHIDING] = { "UNHIDING", TPF_NODE_BUSY },
	[TPF_NODE_STATE_PREEMPTED] = { "PREEMPTED", TPF_NODE_DEAD },
	[TPF_NODE_STATE_TERMINATED] = { "TERMINATED", TPF_NODE_DEAD },
	[TPF_NODE_STATE_STOPPED] = { "STOPPED", TPF_NODE_DEAD },
	[TPF_NODE_STATE_STOPPING] = { "STOPPING", TPF_NODE_DEAD },
	[TPF_NODE_STATE_DELETING] = { "DELETING", TPF_NODE_GOING },
	[TPF_NODE_STATE_HIDING] = { "HIDING", TPF_NODE_GOING },
	[TPF_NODE_STATE_HIDDEN] = { "HIDDEN", TPF_NODE_GOING },
};

enum tpf_node_state tpf_node_state_of(const char *state)
{
	for (int i = 1; state && i < TPF_NODE_STATE_N; i++)
		if (!strcmp(STATES[i].state, state))
			return (enum tpf_node_state)i;
	return TPF_NODE_STATE_OTHER;
}

int tpf_node_state_reclaimed(const char *state)
{
	enum tpf_node_state s = tpf_node_state_of(state);
	return s == TPF_NODE_STATE_PREEMPTED || s == TPF_NODE_STATE_TERMINATED;
}

enum tpf_node_class tpf_node_class(const char *state)
{
	return STATES[tpf_node_state_of(state)].cls;
}

const char *tpf_node_class_name(enum tpf_node_class c)
{
	switch (c) {
	case TPF_NODE_READY: return "ready";
	case TPF_NODE_BUSY: return "busy";
	case TPF_NODE_DEAD: return "dead";
	case TPF_NODE_GOING: return "going";
	case TPF_NODE_UNKNOWN: break;
	}
	return "unknown";
}

const char *tpf_node_condition_name(enum tpf_node_condition c)
{
	static const char *const names[TPF_NCONDITIONS] = {
		[TPF_COND_ALIVE] = "alive",	[TPF_COND_CREATING] = "creating",
		[TPF_COND_WAITING] = "waiting", [TPF_COND_DEAD] = "dead",
		[TPF_COND_MISSING] = "missing", [TPF_COND_QUEUED] = "queued",
		[TPF_COND_COMPLETED] = "completed",
	};
	return (unsigned)c < TPF_NCONDITIONS ? names[c] : "";
}

static const char *const QUEUED[] = {
	[TPF_QUEUED_OTHER] = NULL,
	[TPF_QUEUED_ACTIVE] = "ACTIVE",
	[TPF_QUEUED_FAILED] = "FAILED",
	[TPF_QUEUED_SUSPENDED] = "SUSPENDED",
	[TPF_QUEUED_CREATING] = "CREATING",
	[TPF_QUEUED_PROVISIONING] = "PROVISIONING",
};

enum tpf_queued_state tpf_queued_state_of(const char *state)
{
	for (size_t i = 1; state && i < sizeof(QUEUED) / sizeof(QUEUED[0]); i++)
		if (!strcmp(QUEUED[i], state))
			return (enum tpf_queued_state)i;
	return TPF_QUEUED_OTHER;
}

int tpf_queued_state_dead(const char *state)
{
	enum tpf_queued_state q = tpf_queued_state_of(state);
	return q == TPF_QUEUED_FAILED || q == TPF_QUEUED_SUSPENDED;
}

int tpf_node_health_bad(const char *health)
{
	return health && strcmp(health, "HEALTHY") && strcmp(health, "HEALTH_UNSPECIFIED");
}
