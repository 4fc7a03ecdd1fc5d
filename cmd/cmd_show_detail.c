/*
 * tpuform show NODE (and show -detail): a node's header line, its
 * condition and one row per worker, and the node's JSON object, which
 * `show -json` prints for every node (cmd/cmd_show.c).
 */
#include "cmd/cmd.h"
#include "cmd/cmd_show.h"
#include "engine/workers/provision.h"
#include "engine/show/show.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

static const char *bold(void)
{
	return tpf_ui.color ? "\033[1m" : "";
}

static const char *reset(void)
{
	return tpf_ui.color ? "\033[0m" : "";
}

/* One worker: a table row (human) and its JSON object. */
static json_t *show_worker(const struct tpf_pipeline *s, const struct tpf_state_node *sn, size_t w,
			   int json)
{
	const struct tpf_state_worker *sw = &sn->workers[w];
	const struct tpf_job_fact *sf = tpf_job_facts_find(&s->facts, sn->name, (int)w);
	int reached = sf && sf->state != TPF_JOB_STATE_UNREACHABLE;
	const char *reach = !sf ? "?" : reached ? "yes" : "no";
	const char *session = reached ? tpf_job_state_name(sf->state)
				      : or_dash(tpf_job_state_recorded(sw->job_state));
	int code = reached ? sf->exit_code : sw->exit_code;
	/* A dead or missing node's workers do not run, whatever the state
	 * last recorded: say what is known. */
	const char *dead = tpf_show_dead_reason(s, sn);
	char unknown[64];
	if (dead) {
		snprintf(unknown, sizeof(unknown), "unknown: %s", dead);
		session = unknown;
		reach = "-";
		code = -1;
	}
	char exitbuf[16] = "-";
	if (code >= 0)
		snprintf(exitbuf, sizeof(exitbuf), "%d", code);
	const char *last = sf ? sf->last_log : NULL;
	/* Not as declared, stalled, waiting: the plan's own rules (plan/plan.h). */
	char *note = NULL;
	int unconv = tpf_worker_note(&s->fleet, sn, (int)w, &s->facts, tpf_now_wall(), &note);
	if (!json)
		printf("    w%-5zu %-9s %-8s %-5s %-8d %s%s%s%s\n", w, reach, session, exitbuf,
		       sw->restarts, or_dash(last), note ? "  [" : "", note ? note : "",
		       note ? "]" : "");
	if (!json && sf && (sf->checkpoint || sf->disruption))
		printf("           %s%s%s%s%s\n", sf->checkpoint ? "last checkpoint: " : "",
		       sf->checkpoint ? sf->checkpoint : "", sf->checkpoint && sf->disruption ? "; " : "",
		       sf->disruption ? "told of a disruption: " : "",
		       sf->disruption ? sf->disruption : "");
	if (!json && sw->preflight_error)
		printf("           preflight failed (%d in a row): %s\n", sw->preflight_failures,
		       sw->preflight_error);
	json_t *wj = json_pack("{s:i,s:s,s:i,s:s*,s:s*}", "index", (int)w, "session", session,
			       "restarts", sw->restarts, "address", sw->address, "script_hash",
			       sw->script_hash);
	json_object_set_new(wj, "reachable",
			    sf && !dead ? json_boolean(reached) : json_null());
	json_object_set_new(wj, "exit_code", code >= 0 ? json_integer(code) : json_null());
	json_object_set_new(wj, "last_log", last ? json_string(last) : json_null());
	if (unconv >= 0)
		json_object_set_new(wj, "not_as_declared", json_string(tpf_unconverged_code(unconv)));
	if (note)
		json_object_set_new(wj, "note", json_string(note));
	if (sf && sf->checkpoint)
		json_object_set_new(wj, "checkpoint", json_string(sf->checkpoint));
	if (sf && sf->disruption)
		json_object_set_new(wj, "disruption", json_string(sf->disruption));
	if (sw->preflight_error) {
		json_object_set_new(wj, "preflight_failures", json_integer(sw->preflight_failures));
		json_object_set_new(wj, "preflight_error", json_string(sw->preflight_error));
	}
	free(note);
	return wj;
}

/* The plan's word on a node (plan/plan.h tpf_node_outcome): "completed"
 * (mark "  [completed: exit 0 at TIME]"), "succeeded", "failed" (mark
 * "  [failed]"), or NULL (mark ""). */
static const char *node_outcome(const struct tpf_pipeline *s, const struct tpf_state_node *sn,
				char *mark, size_t len)
{
	const char *outcome = tpf_node_outcome(&s->fleet, sn, &s->facts, tpf_now_wall());
	if (sn->status == TPF_NODE_COMPLETED) /* the outcome "completed" */
		snprintf(mark, len, "  [completed: exit %d at %s]", sn->exit_code,
			 or_dash(sn->completed_at));
	else
		snprintf(mark, len, "%s%s%s", outcome ? "  [" : "", outcome ? outcome : "",
			 outcome ? "]" : "");
	return outcome;
}

/* What the provider says of the node's condition (Node.healthDescription,
 * symptoms, upcomingMaintenance; model/live.h), one line each. */
static void show_condition(const struct tpf_live_node *ln)
{
	if (ln && ln->health_description)
		printf("    health: %s\n", ln->health_description);
	if (ln && ln->symptoms)
		printf("    symptoms: %s\n", ln->symptoms);
	if (ln && ln->maintenance)
		printf("    upcoming maintenance: %s\n", ln->maintenance);
}

/* The row's facts (engine/show/show.h) as fields of the node's object. */
static void row_json(json_t *nj, const struct tpf_show_row *r)
{
	json_object_set_new(nj, "type", json_string(r->type));
	json_object_set_new(nj, "class", json_string(r->class));
	json_object_set_new(nj, "created_at",
			    r->sn->created_at ? json_string(r->sn->created_at) : json_null());
	json_object_set_new(nj, "age_seconds", r->age >= 0 ? json_integer((json_int_t)r->age)
							 : json_null());
	json_object_set_new(nj, "workers_up", json_integer(r->up));
	json_object_set_new(nj, "workers_total", json_integer(r->total));
	json_object_set_new(nj, "restarts", json_integer(r->restarts));
	json_object_set_new(nj, "preemptions", json_integer(r->preemptions));
	json_object_set_new(nj, "job", json_string(r->job));
	json_object_set_new(nj, "workers_unknown", r->dead ? json_string(r->dead) : json_null());
	json_object_set_new(nj, "last_log", r->last_log ? json_string(r->last_log) : json_null());
	if (*r->why)
		json_object_set_new(nj, "not_created", json_string(r->why));
	if (r->sn->retry_after)
		json_object_set_new(nj, "retry_after", json_string(r->sn->retry_after));
	if (r->running) { /* elastic: "2/3" slices */
		char *v = xasprintf("%d/%d", r->running, r->declared);
		json_object_set_new(nj, "running_slices", json_string(v));
		free(v);
	}
}

json_t *tpf_show_node(const struct tpf_pipeline *s, const struct tpf_state_node *sn, int print)
{
	int json = !print;
	const struct tpf_live_node *ln = tpf_live_set_find(&s->live, sn->name);
	struct tpf_show_row row;
	tpf_show_row(s, sn, tpf_now_wall(), &row);
	char age[32];
	tpf_show_fmt_age(row.age, age, sizeof(age));
	char mark[128];
	const char *outcome = node_outcome(s, sn, mark, sizeof(mark));
	const char *live_state = row.state;
	/* "queued=WAITING_FOR_RESOURCES" or "queued=ACTIVE" beside the node's state */
	char queued[64] = "";
	if (ln && ln->queued_state)
		snprintf(queued, sizeof(queued), "  queued=%s", ln->queued_state);
	char commit[13] = "-";
	if (sn->job.commit)
		snprintf(commit, sizeof(commit), "%.12s", sn->job.commit);
	if (!json) {
		printf("%s%s%s  %s  %s  %s  %s  generation=%d  commit=%s  id=%s  age=%s  "
		       "preemptions=%d%s%s\n",
		       bold(), sn->name, reset(), live_state, row.type, or_dash(sn->recipe.zone),
		       row.class, sn->generation, commit, or_dash(sn->id), age, row.preemptions,
		       queued, mark);
		show_condition(ln);
		if (row.running)
			printf("    job: %s (elastic; the other slices are being recreated)\n",
			       row.job);
		if (*row.why)
			printf("    %s\n", row.why);
		if (sn->bad_host)
			printf("    %s: %s\n",
			       sn->status == TPF_NODE_BAD_HOST ? "bad host (replaced next)"
								     : "last bad host",
			       sn->bad_host);
		if (sn->last_checkpoint) {
			/* Recorded by watch and apply; it outlives the VM (issue 21). */
			double at = sn->checkpoint_at ? tpf_parse_rfc3339(sn->checkpoint_at) : -1;
			char ck_age[32] = "?";
			if (at > 0)
				tpf_show_fmt_age(tpf_now_wall() - at, ck_age, sizeof(ck_age));
			printf("    last checkpoint: %s (seen %s ago)\n", sn->last_checkpoint, ck_age);
		}
		printf("    %-6s %-9s %-8s %-5s %-8s %s\n", "WORKER", "REACHABLE", "SESSION", "EXIT",
		       "RESTARTS", "LAST LOG LINE");
	}
	json_t *jw = json_array();
	for (size_t w = 0; w < sn->nworkers; w++)
		json_array_append_new(jw, show_worker(s, sn, w, json));
	if (!json)
		printf("\n");
	json_t *nj = json_pack("{s:s,s:s,s:s*,s:s*,s:s*,s:s,s:i,s:s*,s:s*,s:o}", "name", sn->name,
			       "group", or_dash(sn->group), "id", sn->id, "state", live_state,
			       "accelerator_type", sn->recipe.accelerator_type, "scheduling",
			       tpf_recipe_scheduling(&sn->recipe), "generation", sn->generation,
			       "zone", sn->recipe.zone, "commit", sn->job.commit, "workers", jw);
	if (ln && ln->queued_state)
		json_object_set_new(nj, "queued_state", json_string(ln->queued_state));
	if (sn->bad_host)
		json_object_set_new(nj, "bad_host", json_string(sn->bad_host));
	if (sn->last_checkpoint)
		json_object_set_new(nj, "last_checkpoint", json_string(sn->last_checkpoint));
	if (sn->checkpoint_at)
		json_object_set_new(nj, "checkpoint_at", json_string(sn->checkpoint_at));
	if (ln && ln->health_description)
		json_object_set_new(nj, "health_description", json_string(ln->health_description));
	if (ln && ln->symptoms)
		json_object_set_new(nj, "symptoms", json_string(ln->symptoms));
	if (ln && ln->maintenance)
		json_object_set_new(nj, "upcoming_maintenance", json_string(ln->maintenance));
	json_object_set_new(nj, "outcome", outcome ? json_string(outcome) : json_null());
	row_json(nj, &row);
	return nj;
}

