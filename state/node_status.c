/*
 * The one table of node statuses (state/state.h enum tpf_node_status): the
 * names the state file holds. The names are the file's format: a renamed
 * entry would make today's state files unreadable.
 */
#include "state/state.h"

#include <string.h>

static const char *const names[TPF_NODE_NSTATUS] = {
	[TPF_NODE_STATUS_NONE] = NULL,
	[TPF_NODE_PENDING] = "pending",
	[TPF_NODE_CREATED] = "created",
	[TPF_NODE_TAINTED] = "tainted",
	[TPF_NODE_BAD_HOST] = "bad_host",
	[TPF_NODE_COMPLETED] = "completed",
};

const char *tpf_node_status_name(enum tpf_node_status s)
{
	return (unsigned)s < TPF_NODE_NSTATUS ? names[s] : NULL;
}

int tpf_node_status_from_name(const char *name)
{
	if (!name)
		return TPF_NODE_STATUS_NONE;
	for (int s = 0; s < TPF_NODE_NSTATUS; s++)
		if (names[s] && !strcmp(names[s], name))
			return s;
	return -1;
}
