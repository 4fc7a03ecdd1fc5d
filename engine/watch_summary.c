/*
 * The watch loop's round summary (engine/watch_internal.h).
 */
#include "engine/watch_internal.h"
#include "model/node_state.h"
#include "state/objstore.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *tpf_watch_node_condition(const struct tpf_desired_node *dn,
				     const struct tpf_live_node *ln)
{
	if (!ln)
		return dn->completed ? "completed" : dn->deferred ? "waiting" : "missing";
	/* A queued resource's state stands for a node not there yet. */
	if (ln->queued_state && ln->state && !strcmp(ln->state, ln->queued_state))
		return tpf_queued_state_dead(ln->state) ? "dead" : "queued";
	switch (tpf_node_class(ln->state)) {
	case TPF_NODE_READY:
		return "alive";
	case TPF_NODE_DEAD:
		return "dead";
	default:
		return "creating";
	}
}

void tpf_watch_summarise(const struct tpf_session *s, struct tpf_watch_summary *sum, int round,
			 size_t pending, double wall)
{
	memset(sum, 0, sizeof(*sum));
	for (size_t i = 0; i < s->desired.n; i++) {
		const struct tpf_desired_node *dn = &s->desired.nodes[i];
		const char *c = tpf_watch_node_condition(dn, tpf_live_set_find(&s->live, dn->name));
		sum->desired++;
		sum->alive += !strcmp(c, "alive");
		sum->creating += !strcmp(c, "creating");
		sum->waiting += !strcmp(c, "waiting");
		sum->dead += !strcmp(c, "dead");
		sum->missing += !strcmp(c, "missing");
		sum->queued += !strcmp(c, "queued");
		sum->completed += !strcmp(c, "completed");
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

void tpf_watch_save_summary(const struct tpf_session *s, const struct tpf_watch_summary *sum)
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
