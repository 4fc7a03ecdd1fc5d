/*
 * What `tpuform show` says of a fleet at a glance (docs/commands.md
 * "show"): one row per node of the state, computed from the session's
 * state, live nodes and job facts; cmd/cmd_show.c only prints them.
 */
#ifndef TPF_ENGINE_SHOW_H
#define TPF_ENGINE_SHOW_H

#include "engine/pipeline/pipeline.h"

#include <jansson.h>

/* One node's row. Pointers are borrowed from the session (valid until it
 * closes); `job` is the row's own. */
struct tpf_show_row {
	const struct tpf_state_node *sn;
	/* The provider's Node.state; "COMPLETED" (on_success: delete did its
	 * work), "MISSING" (refreshed and not found) or "UNKNOWN" (no
	 * refresh). */
	const char *state;
	const char *type;      /* accelerator type, or the Compute Engine machine type; "-" */
	const char *zone;      /* "-" when not chosen yet */
	const char *class;     /* tpf_recipe_scheduling: "on-demand" "spot" "flex-start" ... */
	double age;            /* seconds since created_at; < 0: not known */
	int up, total;         /* workers whose job answered a probe / workers in state */
	int restarts;          /* the most restarts any worker has on this generation */
	int preemptions;       /* the node's count (state.h, kept across replacements) */
	/* Why nothing is known of the workers: "node preempted", "node
	 * terminated", "node stopped", "node being deleted", "node missing",
	 * "node not created"; NULL when the VMs may run. A dead node's
	 * workers are never said to run. */
	const char *dead;
	/* The job, in a word or two: "running", "running 3/4", "exited 1",
	 * "completed", "succeeded", "failed", "unreachable", "not started",
	 * "unknown: node preempted", or the state's last word ("running?"
	 * with a ?: not probed now); "-": never provisioned. */
	char job[64];
	const char *last_log;  /* the first worker's last log line that answered; NULL: none */
	/* Elastic slices (docs/recovery.md): a job running on `running` of
	 * its `declared` slices (state elastic_slices), job then ends with
	 * " on 2/3 slices" and the node's lost slices do not make its workers
	 * unknown; 0 and 0 otherwise. */
	int running, declared;
	/* A node with no VM now (refreshed, never created or its create
	 * refused): why, for the LAST LOG LINE column: "not created: zone Z
	 * is out of capacity, retry after 14:40:12 UTC" (the state's note,
	 * state.h refused/retry_after), else "not created"; "" otherwise. */
	char why[256];
};

/*
 * What show reads before it prints (the session's fleet and state loaded,
 * no provider yet: showing a saved plan needs none, nor its credentials):
 * open the provider; with `refresh`, list the live nodes and ask every
 * provisioned worker for its session, up to `parallelism` at once
 * (engine/pipeline/refresh.h tpf_refresh, tpf_probe_jobs); then hide from the
 * jobs' last log lines the secrets that resolve here (a job may print
 * one; an unresolvable secret is no error: show needs none). TPF_ERROR
 * with diagnostics in s->d when the provider cannot be opened or the
 * refresh fails (TPF_EFOREIGN: another state's node under the fleet's
 * name).
 */
int tpf_show_refresh(struct tpf_pipeline *s, int refresh, int parallelism);

/*
 * The row of sn as of wall-clock time `now` (seconds since the epoch).
 * Refreshed sessions (s->o.refresh) tell MISSING from UNKNOWN. Cannot
 * fail.
 */
void tpf_show_row(const struct tpf_pipeline *s, const struct tpf_state_node *sn, double now,
		  struct tpf_show_row *r);

/*
 * Why node sn has no VM, for people, into out: "not created: WHY, retry
 * after HH:MM:SS UTC" (watch's backoff) or "not created: WHY; the next
 * 'tpuform apply' or 'watch' round tries again" from the state's note
 * (sn->refused, sn->retry_after; sn may be NULL: a declared node the state
 * does not hold), else "not created".
 */
void tpf_show_not_created(const struct tpf_state_node *sn, char *out, size_t outlen);

/* Why a node's workers cannot be known (see struct tpf_show_row.dead),
 * from its live state (NULL: not live) and record; NULL: they may run. */
const char *tpf_show_dead_reason(const struct tpf_pipeline *s, const struct tpf_state_node *sn);

/* An age for people, two units at most: "45s", "12m", "3h12m", "4d2h";
 * "-" when seconds < 0. */
void tpf_show_fmt_age(double seconds, char *out, size_t outlen);

/* The node of the state (or a desired node) whose name is closest to
 * `name` (edit distance <= 2, or one a prefix of the other), for "did you
 * mean"; NULL: none. Borrowed. */
const char *tpf_show_suggest_node(const struct tpf_pipeline *s, const char *name);

/*
 * The last `tpuform watch` round (engine/watch/watch.h: <state>.watch.json,
 * written by the leader each round), or NULL when no watch ever ran here.
 * New reference. *age gets the seconds since that round at `now` (< 0:
 * the file has no readable time).
 */
json_t *tpf_show_watch_load(const struct tpf_pipeline *s, double now, double *age);

#endif
