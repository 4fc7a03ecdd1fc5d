/*
 * tpuform show: nodes, workers, commits, session status and the last log
 * line of each worker, from the state plus a live refresh.
 */
#include "cmd/cmd.h"
#include "engine/provision.h"
#include "engine/refresh.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
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

/* The plan's word on a node (plan/plan.h tpf_node_outcome): "completed"
 * (mark "  [completed: exit 0 at TIME]"), "succeeded", "failed" (mark
 * "  [failed]"), or NULL (mark ""). */
static const char *node_outcome(struct tpf_session *s, const struct tpf_state_node *sn,
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

int cmd_show(int argc, char **argv)
{
	struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
	int show_help = 0;
	struct tpf_flag flags[] = {
		TPF_COMMON_FLAGS(o),
		{ "refresh", NULL, TPF_FLAG_BOOL, &o.refresh, "ask the provider and workers (default true)" },
		{ "help", "h", TPF_FLAG_BOOL, &show_help, "show this help" },
		{ 0 },
	};
	char **pos;
	int npos;
	if (tpf_parse_flags("show", argc, argv, flags, &pos, &npos))
		return TPF_EXIT_ERROR;
	free(pos);
	if (show_help) {
		printf("Usage: tpuform show [options]\n\n"
		       "  List the fleet's nodes and, per worker, whether it is reachable, its\n"
		       "  session, its job's exit status, restarts and last log line.\n\nOptions:\n");
		tpf_print_flags(stdout, flags);
		return TPF_EXIT_OK;
	}
	tpf_ui_init(o.no_color, o.json);
	struct tpf_session s;
	int code = TPF_EXIT_ERROR;
	if (tpf_cmd_session_open(&s, &o, NULL))
		goto done;
	if (o.refresh && (tpf_refresh(s.prov, &s.fleet, &s.state, &s.live, &s.d) ||
			  tpf_probe_sessions(s.prov, &s.state, &s.live, o.parallelism, &s.facts, &s.d)))
		goto done;

	/* The last round of a `tpuform watch`, if one ran (cmd/watch.c). */
	char *wpath = xasprintf("%s.watch.json", s.fleet.state_path);
	json_t *watch = json_load_file(wpath, 0, NULL);
	free(wpath);
	if (watch && !o.json)
		printf("Watch: %s (round %lld at %s)\n",
		       json_string_value(json_object_get(watch, "summary")),
		       (long long)json_integer_value(json_object_get(watch, "round")),
		       json_string_value(json_object_get(watch, "time")));
	json_t *jnodes = json_array();
	if (!o.json)
		printf("Fleet %s%s%s: %zu node%s in state (serial %ld, lineage %s)\n\n",
		       tpf_ui.color ? "\033[1m" : "", s.fleet.name, tpf_ui.color ? "\033[0m" : "",
		       s.state.nnodes, s.state.nnodes == 1 ? "" : "s", s.state.serial, s.state.lineage);
	for (size_t i = 0; i < s.state.nnodes; i++) {
		const struct tpf_state_node *sn = &s.state.nodes[i];
		const struct tpf_live_node *ln = tpf_live_set_find(&s.live, sn->name);
		char mark[128];
		const char *outcome = node_outcome(&s, sn, mark, sizeof(mark));
		const char *live_state = ln ? ln->state : !strcmp(sn->status, TPF_NODE_COMPLETED) ? "COMPLETED"
							   : o.refresh ? "MISSING" : "UNKNOWN";
		/* "queued=WAITING_FOR_RESOURCES" or "queued=ACTIVE" beside the node's state */
		char queued[64] = "";
		if (ln && ln->queued_state)
			snprintf(queued, sizeof(queued), "  queued=%s", ln->queued_state);
		char commit[13] = "-";
		if (sn->job.commit)
			snprintf(commit, sizeof(commit), "%.12s", sn->job.commit);
		json_t *jw = json_array();
		if (!o.json) {
			printf("%s%s%s  %s  %s  %s  %s  generation=%d  commit=%s  id=%s%s%s\n",
			       tpf_ui.color ? "\033[1m" : "", sn->name, tpf_ui.color ? "\033[0m" : "",
			       live_state, or_dash(sn->recipe.accelerator_type), or_dash(sn->recipe.zone),
			       tpf_recipe_scheduling(&sn->recipe), sn->generation, commit, or_dash(sn->id),
			       queued, mark);
			printf("    %-6s %-9s %-8s %-5s %-8s %s\n", "WORKER", "REACHABLE", "SESSION", "EXIT",
			       "RESTARTS", "LAST LOG LINE");
		}
		for (size_t w = 0; w < sn->nworkers; w++) {
			const struct tpf_state_worker *sw = &sn->workers[w];
			const struct tpf_session_fact *sf = tpf_session_facts_find(&s.facts, sn->name, (int)w);
			const char *reach = !sf ? "?" : sf->session ? "yes" : "no";
			const char *session = sf && sf->session ? sf->session : or_dash(sw->status);
			char exitbuf[16] = "-";
			int code_w = sf && sf->session ? sf->exit_code : sw->exit_code;
			if (code_w >= 0)
				snprintf(exitbuf, sizeof(exitbuf), "%d", code_w);
			const char *last = sf ? sf->last_log : NULL;
			/* Not as declared, stalled, waiting: the plan's own rules (plan/plan.h). */
			char *note = NULL;
			int unconv = tpf_worker_note(&s.fleet, sn, (int)w, &s.facts, tpf_now_wall(), &note);
			if (!o.json) {
				printf("    w%-5zu %-9s %-8s %-5s %-8d %s%s%s%s\n", w, reach, session, exitbuf,
				       sw->restarts, or_dash(last), note ? "  [" : "", note ? note : "",
				       note ? "]" : "");
			}
			json_t *wj = json_pack("{s:i,s:s,s:i,s:s*,s:s*}", "index", (int)w, "session",
					       session, "restarts", sw->restarts, "address", sw->address,
					       "script_hash", sw->script_hash);
			json_object_set_new(wj, "reachable", sf ? json_boolean(sf->session != NULL)
							     : json_null());
			json_object_set_new(wj, "exit_code", code_w >= 0 ? json_integer(code_w)
									  : json_null());
			json_object_set_new(wj, "last_log", last ? json_string(last) : json_null());
			if (unconv >= 0)
				json_object_set_new(wj, "not_as_declared",
						    json_string(tpf_unconverged_code(unconv)));
			if (note)
				json_object_set_new(wj, "note", json_string(note));
			free(note);
			json_array_append_new(jw, wj);
		}
		if (!o.json)
			printf("\n");
		json_t *nj = json_pack("{s:s,s:s,s:s*,s:s*,s:s*,s:s,s:i,s:s*,s:s*,s:o}", "name", sn->name,
				       "group", or_dash(sn->group), "id", sn->id, "state", live_state,
				       "accelerator_type", sn->recipe.accelerator_type, "scheduling",
				       tpf_recipe_scheduling(&sn->recipe), "generation", sn->generation,
				       "zone", sn->recipe.zone, "commit", sn->job.commit, "workers", jw);
		if (ln && ln->queued_state)
			json_object_set_new(nj, "queued_state", json_string(ln->queued_state));
		json_object_set_new(nj, "outcome", outcome ? json_string(outcome) : json_null());
		json_array_append_new(jnodes, nj);
	}
	/* Nodes that carry the fleet's labels but are not in state. */
	for (size_t i = 0; i < s.live.n; i++) {
		const struct tpf_live_node *ln = &s.live.nodes[i];
		if (tpf_state_find(&s.state, ln->name))
			continue;
		if (!o.json)
			printf("%s  %s  (not in state: labelled for this fleet; 'tpuform plan' shows "
			       "what will happen to it)\n\n",
			       ln->name, or_dash(ln->state));
		json_array_append_new(jnodes, json_pack("{s:s,s:s*,s:b}", "name", ln->name, "state",
							ln->state, "in_state", 0));
	}
	size_t waiting = show_waiting_for_quota(&s, o.json, jnodes);
	if (o.json) {
		json_t *root = json_pack("{s:s,s:I,s:s,s:o}", "fleet", s.fleet.name, "serial",
					 (json_int_t)s.state.serial, "lineage", s.state.lineage, "nodes",
					 jnodes);
		if (watch)
			json_object_set(root, "watch", watch);
		char *text = json_dumps(root, JSON_INDENT(2));
		printf("%s\n", text);
		free(text);
		json_decref(root);
	} else {
		json_decref(jnodes);
		if (!s.state.nnodes && !waiting)
			printf("No nodes. Run 'tpuform apply' to create them.\n");
	}
	json_decref(watch);
	code = TPF_EXIT_OK;
done:
	tpf_ui_diags(&s.d);
	if (tpf_diags_errors(&s.d))
		code = TPF_EXIT_ERROR;
	tpf_session_close(&s);
	return code;
}
