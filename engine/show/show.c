/*
 * `tpuform show` at a glance (engine/show/show.h): one row per node, so a
 * fleet of 20 fits a screen, and the facts behind each cell decided here,
 * not in the printer. Issue 19 item 7.
 */
#include "engine/show/show.h"
#include "config/config_yaml.h"
#include "engine/workers/provision.h"
#include "engine/pipeline/refresh.h"
#include "model/node_state.h"
#include "plan/elastic.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

const char *tpf_show_dead_reason(const struct tpf_pipeline *s, const struct tpf_state_node *sn)
{
	const struct tpf_live_node *ln = tpf_live_set_find(&s->live, sn->name);
	if (sn->status == TPF_NODE_COMPLETED)
		return NULL; /* deleted on purpose: its workers' exits are known */
	if (!ln) {
		if (!s->o.refresh)
			return NULL; /* not asked: the state's word stands */
		return sn->id ? "node missing" : "node not created";
	}
	switch (tpf_node_class(ln->state)) {
	case TPF_NODE_DEAD:
		if (tpf_node_state_of(ln->state) == TPF_NODE_STATE_PREEMPTED)
			return "node preempted";
		if (tpf_node_state_of(ln->state) == TPF_NODE_STATE_TERMINATED)
			return "node terminated";
		return "node stopped";
	case TPF_NODE_GOING:
		return "node being deleted";
	default:
		return NULL;
	}
}

void tpf_show_fmt_age(double seconds, char *out, size_t outlen)
{
	long s = (long)seconds;
	if (seconds < 0)
		snprintf(out, outlen, "-");
	else if (s < 60)
		snprintf(out, outlen, "%lds", s);
	else if (s < 3600)
		snprintf(out, outlen, "%ldm", s / 60);
	else if (s < 86400)
		snprintf(out, outlen, "%ldh%ldm", s / 3600, (s / 60) % 60);
	else
		snprintf(out, outlen, "%ldd%ldh", s / 86400, (s / 3600) % 24);
}

/* What the probes say of the node's jobs (no dead node here). */
static void job_from_facts(const struct tpf_pipeline *s, const struct tpf_state_node *sn,
			   struct tpf_show_row *r)
{
	int alive = 0, exited = 0, dead = 0, none = 0, unreach = 0, code = 0, probed = 0;
	for (size_t w = 0; w < sn->nworkers; w++) {
		const struct tpf_job_fact *f = tpf_job_facts_find(&s->facts, sn->name, (int)w);
		if (!f)
			continue;
		probed++;
		enum tpf_job_state js = f->state;
		if (js == TPF_JOB_STATE_UNREACHABLE) {
			unreach++;
			continue;
		}
		r->up++;
		alive += js == TPF_JOB_STATE_ALIVE;
		none += js == TPF_JOB_STATE_NONE;
		dead += js == TPF_JOB_STATE_DEAD;
		if (js == TPF_JOB_STATE_EXITED) {
			exited++;
			if (f->exit_code != 0 && code == 0)
				code = f->exit_code; /* the first failure says most */
		}
		if (!r->last_log && f->last_log && *f->last_log)
			r->last_log = f->last_log;
	}
	int n = (int)sn->nworkers;
	if (!probed) {
		/* Not probed now (-refresh=false, or never provisioned): the
		 * state's last word, marked as such. */
		const char *st = n ? tpf_job_state_recorded(sn->workers[0].job_state) : NULL;
		snprintf(r->job, sizeof(r->job), "%s%s", st ? st : "-", st ? "?" : "");
	} else if (alive == n)
		snprintf(r->job, sizeof(r->job), "running");
	else if (alive)
		snprintf(r->job, sizeof(r->job), "running %d/%d", alive, n);
	else if (exited)
		snprintf(r->job, sizeof(r->job), "exited %d", code);
	else if (dead)
		snprintf(r->job, sizeof(r->job), "%s", tpf_job_state_name(TPF_JOB_STATE_DEAD));
	else if (none)
		snprintf(r->job, sizeof(r->job), "not started");
	else
		snprintf(r->job, sizeof(r->job), "%s", tpf_job_state_name(TPF_JOB_STATE_UNREACHABLE));
}

void tpf_show_not_created(const struct tpf_state_node *sn, char *out, size_t outlen)
{
	const char *at = sn ? sn->retry_after : NULL;
	if (!sn || !sn->refused)
		snprintf(out, outlen, "not created");
	else if (at && strlen(at) >= 19) /* RFC 3339: "2026-11-28T14:40:12Z" */
		snprintf(out, outlen, "not created: %s, retry after %.8s UTC", sn->refused, at + 11);
	else
		snprintf(out, outlen, "not created: %s; the next 'tpuform apply' or 'watch' round "
			 "tries again", sn->refused);
}

void tpf_show_row(const struct tpf_pipeline *s, const struct tpf_state_node *sn, double now,
		  struct tpf_show_row *r)
{
	memset(r, 0, sizeof(*r));
	const struct tpf_live_node *ln = tpf_live_set_find(&s->live, sn->name);
	r->sn = sn;
	/* Refreshed, not live, and no create ever answered with an id (or
	 * its last one was refused): it does not exist, and the state says
	 * why when it knows. */
	int never = !ln && s->o.refresh && !sn->id && sn->status != TPF_NODE_COMPLETED;
	if (never)
		tpf_show_not_created(sn, r->why, sizeof(r->why));
	r->state = ln && ln->state ? ln->state
		 : sn->status == TPF_NODE_COMPLETED ? "COMPLETED"
		 : never ? "NOT CREATED"
		 : s->o.refresh ? "MISSING" : "UNKNOWN";
	const char *type = sn->recipe.accelerator_type;
	if (!type || !*type)
		type = sn->recipe.compute.machine_type;
	r->type = type && *type ? type : "-";
	r->zone = sn->recipe.zone && *sn->recipe.zone ? sn->recipe.zone : "-";
	r->class = tpf_recipe_scheduling(&sn->recipe);
	double created = tpf_parse_rfc3339(sn->created_at);
	r->age = created < 0 || never || sn->status == TPF_NODE_COMPLETED ? -1
		 : now > created ? now - created
				 : 0; /* a clock a little behind the provider's */
	r->total = (int)sn->nworkers;
	for (size_t w = 0; w < sn->nworkers; w++)
		if (sn->workers[w].restarts > r->restarts)
			r->restarts = sn->workers[w].restarts;
	r->preemptions = sn->preemptions;
	r->dead = tpf_show_dead_reason(s, sn);
	if (sn->elastic_slices && tpf_recipe_slices(&sn->recipe) > 1) {
		unsigned char *on = xcalloc((size_t)tpf_recipe_slices(&sn->recipe), 1);
		r->declared = tpf_recipe_slices(&sn->recipe);
		r->running = tpf_elastic_running(sn->elastic_slices, r->declared, on);
		free(on);
		if (r->running > 0)
			r->dead = NULL; /* the job runs on the slices left */
		else
			r->running = r->declared = 0;
	}
	const char *outcome = tpf_node_outcome(&s->fleet, sn, &s->facts, now);
	if (r->dead)
		snprintf(r->job, sizeof(r->job), "unknown: %s", r->dead);
	else if (outcome)
		snprintf(r->job, sizeof(r->job), "%s", outcome);
	else
		job_from_facts(s, sn, r);
	if (!r->dead && outcome) {
		/* Still count the workers up and take a last line. */
		struct tpf_show_row tmp = *r;
		job_from_facts(s, sn, &tmp);
		r->up = tmp.up;
		r->last_log = tmp.last_log;
	}
	size_t len = strlen(r->job);
	if (r->running)
		snprintf(r->job + len, sizeof(r->job) - len, " on %d/%d slices", r->running,
			 r->declared);
}

const char *tpf_show_suggest_node(const struct tpf_pipeline *s, const char *name)
{
	size_t n = s->state.nnodes + s->live.n;
	const char **known = xcalloc(n + 1, sizeof(*known));
	size_t k = 0;
	for (size_t i = 0; i < s->state.nnodes; i++)
		known[k++] = s->state.nodes[i].name;
	for (size_t i = 0; i < s->live.n; i++)
		if (s->live.nodes[i].name)
			known[k++] = s->live.nodes[i].name;
	const char *best = cfg_suggest(name, known);
	free(known);
	return best;
}

json_t *tpf_show_watch_load(const struct tpf_pipeline *s, double now, double *age)
{
	char *wpath = xasprintf("%s.watch.json", s->fleet.state_path);
	json_t *watch = json_load_file(wpath, 0, NULL);
	free(wpath);
	*age = -1;
	if (!json_is_object(watch)) {
		json_decref(watch);
		return NULL;
	}
	double t = tpf_parse_rfc3339(json_string_value(json_object_get(watch, "time")));
	if (t >= 0)
		*age = now > t ? now - t : 0;
	return watch;
}

int tpf_show_refresh(struct tpf_pipeline *s, int refresh, int parallelism)
{
	if (tpf_provider_open(&s->prov, &s->fleet, &s->d))
		return TPF_ERROR;
	int rc = 0;
	if (refresh && ((rc = tpf_refresh(s->prov, &s->fleet, &s->state, &s->live, &s->d)) ||
			(rc = tpf_probe_jobs(s->prov, &s->state, &s->live, parallelism, 0, NULL,
					     NULL, &s->facts, &s->d))))
		return rc;
	struct tpf_diags unset = TPF_DIAGS_INIT;
	if (!s->fleet.secrets_resolved && tpf_fleet_resolve_secrets(&s->fleet, &unset) == 0)
		tpf_job_facts_redact(&s->facts, &s->fleet.secrets);
	tpf_diags_release(&unset);
	return 0;
}
