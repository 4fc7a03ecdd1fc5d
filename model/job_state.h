/*
 * A worker's job state: one enum and one name table (model/job_state.c),
 * parsed once where the text enters and written by name.
 *
 * Two spellings, one meaning:
 *   - the word the bootstrap prints for its session ("TPUFORM session=WORD"
 *     of the status and wait verbs, templates/bootstrap.sh; engine/workers/provision.h),
 *     also the word `show`, `watch -json` and the workers metric print:
 *     "none" "alive" "exited" "dead" (and "unreachable", "failed", "unknown"
 *     for what tpuform concludes itself);
 *   - the word the state file records in a worker's "status"
 *     (state/state.h): "running" (a session was started: alive), "exited",
 *     "dead", "unreachable", "failed" (provisioning failed); absent when
 *     not known.
 */
#ifndef TPF_JOB_STATE_H
#define TPF_JOB_STATE_H

enum tpf_job_state {
	TPF_JOB_STATE_UNKNOWN = 0, /* not known: never probed, absent from the state,
				    * or a word this tpuform does not know */
	TPF_JOB_STATE_NONE,        /* no session was ever started on the worker */
	TPF_JOB_STATE_ALIVE,       /* the job runs */
	TPF_JOB_STATE_EXITED,      /* the job exited (its exit code says how) */
	TPF_JOB_STATE_DEAD,        /* its session died without an exit status */
	TPF_JOB_STATE_UNREACHABLE, /* the worker could not be reached */
	TPF_JOB_STATE_FAILED,      /* provisioning the worker failed (state only) */
	TPF_JOB_NSTATES
};

/* The bootstrap's word for s ("alive", "exited", ...; "unknown" for
 * TPF_JOB_STATE_UNKNOWN or a value out of range). Static. */
const char *tpf_job_state_name(enum tpf_job_state s);

/* The bootstrap's word (the value of "TPUFORM session=") as a state;
 * NULL, "" or a word not in the table: TPF_JOB_STATE_UNKNOWN. */
enum tpf_job_state tpf_job_state_from_name(const char *word);

/* The state file's word for s ("running" for TPF_JOB_STATE_ALIVE), or
 * NULL when the state records nothing (TPF_JOB_STATE_UNKNOWN, NONE). Static. */
const char *tpf_job_state_recorded(enum tpf_job_state s);

/* The state file's word as a state: 0 and *out set, or -1 for a word the
 * state never records (NULL: -1). "unknown" (named by older docs) reads
 * as TPF_JOB_STATE_UNKNOWN. */
int tpf_job_state_from_recorded(const char *word, enum tpf_job_state *out);

/* Append the state file's words to b, for an error message: "running,
 * exited, dead, unreachable or failed". */
struct tpf_buf;
void tpf_job_state_recorded_words(struct tpf_buf *b);

#endif
