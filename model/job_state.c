/*
 * The one name table of job states (model/job_state.h).
 */
#include "model/job_state.h"
#include "util/buf.h"

#include <stddef.h>
#include <string.h>

/* name: the bootstrap's word; recorded: the state file's, NULL: none */
static const struct {
	const char *name, *recorded;
} table[TPF_JOB_NSTATES] = {
	[TPF_JOB_STATE_UNKNOWN] = { "unknown", NULL },
	[TPF_JOB_STATE_NONE] = { "none", NULL },
	[TPF_JOB_STATE_ALIVE] = { "alive", "running" },
	[TPF_JOB_STATE_EXITED] = { "exited", "exited" },
	[TPF_JOB_STATE_DEAD] = { "dead", "dead" },
	[TPF_JOB_STATE_UNREACHABLE] = { "unreachable", "unreachable" },
	[TPF_JOB_STATE_FAILED] = { "failed", "failed" },
};

const char *tpf_job_state_name(enum tpf_job_state s)
{
	return (unsigned)s < TPF_JOB_NSTATES ? table[s].name : table[TPF_JOB_STATE_UNKNOWN].name;
}

enum tpf_job_state tpf_job_state_from_name(const char *word)
{
	for (int s = 0; word && s < TPF_JOB_NSTATES; s++)
		if (!strcmp(table[s].name, word))
			return (enum tpf_job_state)s;
	return TPF_JOB_STATE_UNKNOWN;
}

const char *tpf_job_state_recorded(enum tpf_job_state s)
{
	return (unsigned)s < TPF_JOB_NSTATES ? table[s].recorded : NULL;
}

int tpf_job_state_from_recorded(const char *word, enum tpf_job_state *out)
{
	if (word && !strcmp(word, table[TPF_JOB_STATE_UNKNOWN].name)) {
		*out = TPF_JOB_STATE_UNKNOWN;
		return 0;
	}
	for (int s = 0; word && s < TPF_JOB_NSTATES; s++) {
		if (table[s].recorded && !strcmp(table[s].recorded, word)) {
			*out = (enum tpf_job_state)s;
			return 0;
		}
	}
	return -1;
}

void tpf_job_state_recorded_words(struct tpf_buf *b)
{
	int n = 0, last = 0;
	for (int s = 0; s < TPF_JOB_NSTATES; s++)
		if (table[s].recorded)
			last = s;
	for (int s = 0; s < TPF_JOB_NSTATES; s++) {
		if (!table[s].recorded)
			continue;
		if (n++)
			tpf_buf_adds(b, s == last ? " or " : ", ");
		tpf_buf_adds(b, table[s].recorded);
	}
}
