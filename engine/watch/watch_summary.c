/*
 * The watch loop's round summary (engine/watch/watch_internal.h).
 */
#include "engine/watch/watch_internal.h"
#include "model/node_state.h"
#include "state/objstore.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum tpf_node_condition tpf_watch_node_condition(const struct tpf_desired_node *dn,
					       const struct tpf_live_node *ln)
{
	if (!ln)
		return dn->completed ? TPF_COND_COMPLETED
		       : dn->deferred ? TPF_COND_WAITING
				      : TPF_COND_MISSING;
	/* A queued resource's state stands for a node not there yet. */
	if (ln->queued_state && ln->state && !strcmp(ln->state, ln->queued_state))
		return tpf_queued_state_dead(ln->state) ? TPF_COND_DEAD : TPF_COND_QUEUED;
	switch (tpf_node_class(ln->state)) {
	case TPF_NODE_READY:
		return TPF_COND_ALIVE;
	case TPF_NODE_DEAD:
		return TPF_COND_DEAD;
	default:
		return TPF_COND_CREATING;
	}
}

void tpf_watch_summarise(const struct tpf_pipeline *s, struct tpf_watch_summary *sum, int round,
			 size_t pending, double wall)
{
	memset(sum, 0, sizeof(*sum));
	for (size_t i = 0; i < s->desired.n; i++) {
		const struct tpf_desired_node *dn = &s->desired.nodes[i];
		enum tpf_node_condition c =
			tpf_watch_node_condition(dn, tpf_live_set_find(&s->live, dn->name));
		sum->desired++;
		sum->alive += c == TPF_COND_ALIVE;
		sum->creating += c == TPF_COND_CREATING;
		sum->waiting += c == TPF_COND_WAITING;
		sum->dead += c == TPF_COND_DEAD;
		sum->missing += c == TPF_COND_MISSING;
		sum->queued += c == TPF_COND_QUEUED;
		sum->completed += c == TPF_COND_COMPLETED;
	}
	sum->round = round;
	sum->pending = pending;
	sum->fleet = s->fleet.name;
	snprintf(sum->line, sizeof(sum->line),
		 "alive %d/%d, creating %d, waiting for quota %d, dead %d, missing %d, queued %d",
		 sum->alive, sum->desired, sum->creating, sum->waiting, sum->dead, sum->missing,
		 sum->queued);
	if (sum->completed) {
		size_t len = strlen(sum->line);
		snprintf(sum->line + len, sizeof(sum->line) - len, ", completed %d", sum->completed);
	}
	tpf_rfc3339(wall, sum->time, sizeof(sum->time));
}

void tpf_watch_save_summary(const struct tpf_pipeline *s, const struct tpf_watch_summary *sum)
{
	json_t *j = json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:I}", "time",
			      sum->time, "summary", sum->line, "alive", sum->alive, "desired",
			      sum->desired, "creating", sum->creating, "waiting", sum->waiting, "dead",
			      sum->dead, "missing", sum->missing, "queued", sum->queued, "completed",
			      sum->completed, "round", sum->round, "pending_changes",
			      (json_int_t)sum->pending);
	/* Who wrote it, for `show`'s "Watch: leader HOST:PID" line: the host
	 * and process to look at when the round's age says it stopped. */
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	char *leader = xasprintf("%s:%ld", *host ? host : "localhost", (long)getpid());
	json_object_set_new(j, "leader", json_string(leader));
	free(leader);
	char *text = json_dumps(j, JSON_INDENT(2));
	/* Beside the state file, on this host, whatever backend the state has:
	 * `show` reads it where this watch runs. */
	struct tpf_objstore *store = tpf_objstore_open_local(s->fleet.state_path);
	struct tpf_diags d = TPF_DIAGS_INIT;
	if (text)
		tpf_objstore_put(store, ".watch.json", text, strlen(text), "application/json",
				 TPF_OBJ_ANY, NULL, &d);
	tpf_diags_release(&d);
	tpf_objstore_free(store);
	free(text);
	json_decref(j);
}
