/*
 * tpuform show: nodes, workers, commits, session status and the last log
 * line of each worker, from the state plus a live refresh. Human text, or
 * with -json one JSON document.
 */
#include "cmd/cmd.h"
#include "engine/provision.h"
#include "engine/refresh.h"
#include "engine/saved_plan.h"
#include "plan/plan_json.h"
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
static json_t *show_worker(const struct tpf_session *s, const struct tpf_state_node *sn, size_t w,
			   int json)
{
	const struct tpf_state_worker *sw = &sn->workers[w];
	const struct tpf_job_fact *sf = tpf_job_facts_find(&s->facts, sn->name, (int)w);
	const char *reach = !sf ? "?" : sf->job_state ? "yes" : "no";
	const char *session = sf && sf->job_state ? sf->job_state : or_dash(sw->status);
	int code = sf && sf->job_state ? sf->exit_code : sw->exit_code;
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
	json_object_set_new(wj, "reachable", sf ? json_boolean(sf->job_state != NULL) : json_null());
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
static const char *node_outcome(const struct tpf_session *s, const struct tpf_state_node *sn,
				char *mark, size_t len)
{
	const char *outcome = tpf_node_outcome(&s->fleet, sn, &s->facts, tpf_now_wall());
	if (outcome && !strcmp(outcome, "completed"))
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

/* One node of the state with its workers. */
static json_t *show_node(const struct tpf_session *s, const struct tpf_state_node *sn, int json)
{
	const struct tpf_live_node *ln = tpf_live_set_find(&s->live, sn->name);
	char mark[128];
	const char *outcome = node_outcome(s, sn, mark, sizeof(mark));
	const char *live_state = ln ? ln->state
			       : !strcmp(sn->status, TPF_NODE_COMPLETED) ? "COMPLETED"
			       : s->o.refresh ? "MISSING" : "UNKNOWN";
	/* "queued=WAITING_FOR_RESOURCES" or "queued=ACTIVE" beside the node's state */
	char queued[64] = "";
	if (ln && ln->queued_state)
		snprintf(queued, sizeof(queued), "  queued=%s", ln->queued_state);
	char commit[13] = "-";
	if (sn->job.commit)
		snprintf(commit, sizeof(commit), "%.12s", sn->job.commit);
	if (!json) {
		printf("%s%s%s  %s  %s  %s  %s  generation=%d  commit=%s  id=%s%s%s\n", bold(),
		       sn->name, reset(), live_state, or_dash(sn->recipe.accelerator_type),
		       or_dash(sn->recipe.zone), tpf_recipe_scheduling(&sn->recipe), sn->generation,
		       commit, or_dash(sn->id), queued, mark);
		show_condition(ln);
		if (sn->bad_host)
			printf("    %s: %s\n",
			       !strcmp(sn->status, TPF_NODE_BAD_HOST) ? "bad host (replaced next)"
								     : "last bad host",
			       sn->bad_host);
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
	return nj;
}

/* Nodes that carry the fleet's labels but are not in state. */
static void show_unmanaged(struct tpf_session *s, json_t *jnodes, int json)
{
	for (size_t i = 0; i < s->live.n; i++) {
		const struct tpf_live_node *ln = &s->live.nodes[i];
		if (tpf_state_find(&s->state, ln->name))
			continue;
		if (!json)
			printf("%s  %s  (not in state: labelled for this fleet; 'tpuform plan' shows "
			       "what will happen to it)\n\n",
			       ln->name, or_dash(ln->state));
		json_array_append_new(jnodes, json_pack("{s:s,s:s*,s:b}", "name", ln->name, "state",
							ln->state, "in_state", 0));
	}
}

/* Declared nodes that wait for quota: not created, so in no state and
 * not live. Printed (or added to jnodes); returns how many. */
static size_t show_waiting_for_quota(struct tpf_session *s, int json, json_t *jnodes)
{
	struct tpf_diags quiet = TPF_DIAGS_INIT; /* the plan warns; show only lists */
	tpf_desired_compute(&s->desired, &s->fleet, NULL, &s->state, &quiet);
	tpf_diags_release(&quiet);
	size_t waiting = 0;
	for (size_t i = 0; i < s->desired.n; i++) {
		const struct tpf_desired_node *dn = &s->desired.nodes[i];
		if (!dn->deferred || tpf_live_set_find(&s->live, dn->name) ||
		    tpf_state_find(&s->state, dn->name))
			continue;
		waiting++;
		if (!json)
			printf("%s  NOT CREATED  [%s]\n\n", dn->name, dn->waiting);
		json_array_append_new(jnodes, json_pack("{s:s,s:b,s:s,s:s}", "name", dn->name,
							"in_state", 0, "not_as_declared", "quota",
							"reason", dn->waiting));
	}
	return waiting;
}

/* The last round of a `tpuform watch`, if one ran (engine/watch.c). */
static json_t *load_watch(const struct tpf_session *s, int json)
{
	char *wpath = xasprintf("%s.watch.json", s->fleet.state_path);
	json_t *watch = json_load_file(wpath, 0, NULL);
	free(wpath);
	if (watch && !json)
		printf("Watch: %s (round %lld at %s)\n",
		       json_string_value(json_object_get(watch, "summary")),
		       (long long)json_integer_value(json_object_get(watch, "round")),
		       json_string_value(json_object_get(watch, "time")));
	return watch;
}

static void print_document(const struct tpf_session *s, json_t *jnodes, json_t *watch)
{
	json_t *root = json_pack("{s:s,s:I,s:s,s:O}", "fleet", s->fleet.name, "serial",
				 (json_int_t)s->state.serial, "lineage", s->state.lineage, "nodes",
				 jnodes);
	if (watch)
		json_object_set(root, "watch", watch);
	char *text = json_dumps(root, JSON_INDENT(2));
	printf("%s\n", text);
	free(text);
	json_decref(root);
}

/* show PLANFILE: a saved plan, as it was planned (Terraform's `show
 * PLANFILE`); with -json, as Terraform's plan JSON (plan/plan_json.h). */
static int show_plan(struct tpf_cmd_ctx *ctx, const char *path)
{
	struct tpf_plan p;
	int code = TPF_EXIT_ERROR;
	if (tpf_saved_plan_read(&p, path, ctx->d)) {
		size_t n = strlen(path);
		struct tpf_diag *last = ctx->d->n ? &ctx->d->items[ctx->d->n - 1] : NULL;
		if (last && !last->detail && ((n > 5 && !strcmp(path + n - 5, ".yaml")) ||
					      (n > 4 && !strcmp(path + n - 4, ".yml"))))
			last->detail = xasprintf("'tpuform show' takes a saved plan (from 'tpuform plan "
						 "-out=FILE'). To name the fleet file, use -f FILE: "
						 "tpuform show -f %s",
						 path);
		goto done;
	}
	if (ctx->o.json) {
		json_t *doc = tpf_plan_show_json(&p);
		char *text = json_dumps(doc, JSON_INDENT(2));
		printf("%s\n", text);
		free(text);
		json_decref(doc);
	} else {
		struct tpf_buf b = TPF_BUF_INIT;
		tpf_plan_render_human(&p, tpf_ui.color, &b);
		printf("%s", b.buf);
		tpf_buf_release(&b);
		for (size_t i = 0; i < p.ntargets; i++)
			printf("%s%s", i ? ", " : "\nPlanned with -target: ", p.targets[i]);
		printf("%s", p.ntargets ? "\n" : "");
	}
	code = TPF_EXIT_OK;
done:
	tpf_plan_release(&p);
	return code;
}

static int run_show(struct tpf_cmd_ctx *ctx)
{
	struct tpf_session *s = &ctx->s;
	int json = ctx->o.json;
	if (ctx->nargs)
		return show_plan(ctx, ctx->args[0]);
	/* Opened here, not by the dispatcher: showing a saved plan needs no
	 * provider (nor its credentials). */
	if (tpf_provider_open(&s->prov, &s->fleet, &s->d))
		return TPF_EXIT_ERROR;
	if (ctx->o.refresh &&
	    (tpf_refresh(s->prov, &s->fleet, &s->state, &s->live, &s->d) ||
	     tpf_probe_jobs(s->prov, &s->state, &s->live, ctx->o.parallelism, 0, &s->facts,
					&s->d)))
		return TPF_EXIT_ERROR;
	/* show needs no secrets, but hides those it can resolve from the job's
	 * last log line (a job may print one) */
	struct tpf_diags unset = TPF_DIAGS_INIT;
	if (!s->fleet.secrets_resolved && tpf_fleet_resolve_secrets(&s->fleet, &unset) == 0)
		tpf_job_facts_redact(&s->facts, &s->fleet.secrets);
	tpf_diags_release(&unset);
	json_t *watch = load_watch(s, json);
	if (!json)
		printf("Fleet %s%s%s: %zu node%s in state (serial %ld, lineage %s)\n\n", bold(),
		       s->fleet.name, reset(), s->state.nnodes, s->state.nnodes == 1 ? "" : "s",
		       s->state.serial, s->state.lineage);
	json_t *jnodes = json_array();
	for (size_t i = 0; i < s->state.nnodes; i++)
		json_array_append_new(jnodes, show_node(s, &s->state.nodes[i], json));
	show_unmanaged(s, jnodes, json);
	size_t waiting = show_waiting_for_quota(s, json, jnodes);
	if (json)
		print_document(s, jnodes, watch);
	else if (!s->state.nnodes && !waiting)
		printf("No nodes. Run 'tpuform apply' to create them.\n");
	json_decref(jnodes);
	json_decref(watch);
	return TPF_EXIT_OK;
}

const struct tpf_cmd tpf_cmd_show = {
	.name = "show",
	.summary = "Show nodes, workers, commits and job status",
	.description = "  List the fleet's nodes and, per worker, whether it is reachable, its\n"
		       "  session, its job's exit status, restarts and last log line. With\n"
		       "  PLANFILE (from 'tpuform plan -out=FILE'), show that saved plan instead;\n"
		       "  with -json as Terraform's 'show -json' prints a plan (format_version,\n"
		       "  resource_changes with their actions).\n",
	.flags = NULL,
	.max_args = 1,
	.args_name = "[PLANFILE]",
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_JSON | TPF_CMD_REFRESH |
		 TPF_CMD_PARALLELISM,
	.signals = TPF_SIG_STOP,
	.run = run_show,
};
