/*
 * A set of workers of a node, as `-worker` names it: N, A-B, A,B (and
 * combinations such as 0,2-3), or all. The grammar is gcloud's --worker of
 * `gcloud compute tpus tpu-vm ssh/scp` (ParseWorkerFlag in the Cloud SDK:
 * comma-separated numbers and ranges, empty items skipped, "all" in any
 * case), except that a one-worker range (2-2) is accepted where gcloud
 * calls it malformed. The node's own worker count is checked by the caller
 * (state/state.h tpf_state_node_check_worker with tpf_worker_set_max).
 *
 * The set is a bitmap: no memory to free, copied by assignment.
 */
#ifndef TPF_WORKER_SET_H
#define TPF_WORKER_SET_H

#include <stddef.h>
#include <stdint.h>

/* The largest worker number a set can name (a TPU7x slice of 256 hosts is
 * far below it). */
#define TPF_WORKER_ID_MAX 4095

struct tpf_worker_set {
	int given; /* 0: the flag was not given (the command's default applies) */
	int all;   /* "all": every worker the node has */
	uint64_t bits[(TPF_WORKER_ID_MAX + 1) / 64];
};

/*
 * Parse text into *out (given set). 0, or -1 with why (a sentence for
 * people, without the flag's name, e.g. "range '3-1' runs backwards: write
 * 1-3") written into why (up to len bytes); *out is then unchanged.
 */
int tpf_worker_set_parse(const char *text, struct tpf_worker_set *out, char *why, size_t len);

/* Does the set take worker w? An unset set (not given) or "all" takes every
 * worker. */
int tpf_worker_set_has(const struct tpf_worker_set *s, int w);

/* The largest worker named, or -1 for an unset set or "all" (nothing to
 * check against a node's worker count). */
int tpf_worker_set_max(const struct tpf_worker_set *s);

/* Is w one of the workers of a node that has nworkers: 0 <= w < nworkers?
 * The one range check of a worker index against a worker count (the
 * state's worker records, a live node's network endpoints); a negative w
 * (such as -1, "every worker") is out of range. */
int tpf_worker_in_range(int w, size_t nworkers);

/* How many of a node's nworkers workers the set takes. */
size_t tpf_worker_set_count(const struct tpf_worker_set *s, size_t nworkers);

#endif
