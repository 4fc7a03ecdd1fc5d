/*
 * Node.state classes (model/node_state.h).
 */
#include "model/node_state.h"

#include <stddef.h>
#include <string.h>

static const struct {
	const char *state;
	enum tpf_node_class cls;
} CLASSES[] = {
	{ "READY", TPF_NODE_READY },
	{ "CREATING", TPF_NODE_BUSY },
	{ "STARTING", TPF_NODE_BUSY },
	{ "RESTARTING", TPF_NODE_BUSY },
	{ "REPAIRING", TPF_NODE_BUSY },
	{ "REIMAGING", TPF_NODE_BUSY },
	{ "UNHIDING", TPF_NODE_BUSY },
	{ "PREEMPTED", TPF_NODE_DEAD },
	{ "TERMINATED", TPF_NODE_DEAD },
	{ "STOPPED", TPF_NODE_DEAD },
	{ "STOPPING", TPF_NODE_DEAD },
	{ "DELETING", TPF_NODE_GOING },
	{ "HIDING", TPF_NODE_GOING },
	{ "HIDDEN", TPF_NODE_GOING },
};

enum tpf_node_class tpf_node_class(const char *state)
{
	if (!state)
		return TPF_NODE_UNKNOWN;
	for (size_t i = 0; i < sizeof(CLASSES) / sizeof(CLASSES[0]); i++)
		if (!strcmp(CLASSES[i].state, state))
			return CLASSES[i].cls;
	return TPF_NODE_UNKNOWN;
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

int tpf_queued_state_dead(const char *state)
{
	return state && (!strcmp(state, "FAILED") || !strcmp(state, "SUSPENDED"));
}
