/*
 * The watch loop (engine/watch/watch.h): one session per round, heals in the
 * background (engine/watch/watch_heal.c), a summary per round.
 */
#include "engine/chores/chores.h"
#include "engine/watch/watch_internal.h"
#include "engine/ledger/budget_spend.h"
#include "engine/workers/provision.h"
#include "util/strindex.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void emit_actions(const struct tpf_watch_opts *o, const struct tpf_plan *p, int pending)
{
	struct tpf_watch_event ev = { .kind = TPF_WATCH_ACTIONS, .plan = p, .pending = pending };
	tpf_watch_emit(o, &ev);
}

/* How a round ended (round_run). */
enum round_outcome {
	ROUND_DONE,    /* planned and acted (or nothing to do) */
	ROUND_FAILED,  /* an error of ours or the cloud's: retried after a backoff */
	ROUND_STANDBY, /* another watch leads: no round at all */
	ROUND_FATAL,   /* the first round could not load the fleet file: nothing to watch */
};

/* Whether this watch leads, for one round (leadership). */
enum leadership {
	LEAD_UNKNOWN,   /* the lease could not be opened or asked (diagnostics were an event) */
	LEAD_STANDBY,   /* another watch leads */
	LEAD_YES,       /* leads (or no lease: local state) */
	LEAD_TOOK_OVER, /* has just taken over: heal first, ask the sessions next round */
};

static int stopped(const struct tpf_watch_opts *o)
{
	return o->interrupted && *o->interrupted;
}

struct loop {
	const struct tpf_watch_opts *o;
	struct tpf_healer *healer;
	struct tpf_prober *prober; /* session probes, in the background */
	struct tpf_attacher *attacher; /* job waits: a job's end seen at once; NULL: off */
	unsigned long news_seen;       /* tpf_attacher_news when the last round began */
	/* The last round left a job's end to a heal in flight (its node was
	 * busy): the loop plans again as soon as a heal ends, not an interval
	 * later. heals_seen: tpf_healer_ended when that round began. */
	int held;
	unsigned long heals_seen;
	struct tpf_watch_hooks *hooks; /* notifications and metrics */
	struct tpf_budget_cache budgets; /* spend between ledger reads (engine/ledger/budget_spend.h) */
	struct tpf_unhealthy_set sick;
	struct tpf_maint *maint; /* maintenance windows told to the jobs */
	/* "node/worker/kind" of the restart entries of the last probed round:
	 * each is reported once, when it appears. */
	char **reported;
	size_t nreported;
	int done; /* exit_when_done: 1 all completed, 2 some failed */
	double next_probe; /* monotonic seconds of the next session check */
	double began;      /* monotonic seconds when watch started */
	int probed_once;   /* a session check has been started */
	/* The pinned commit is re-resolved when a session check is due, not
	 * every round: resolving a URL ref is a network round trip. */
	char pinned[41];
	/* Cloud Storage state: the leader lease (engine/watch/watch_lease.c), opened
	 * from the fleet file of the first round that loaded it. */
	struct tpf_watch_lease *lease;
	int lease_known;
};

/* Is there news a round should plan from now: a job's end a wait
 * learnt, or a heal that ended while the last round left a job's end to
 * it? */
static int news(struct loop *w)
{
	return tpf_attacher_news(w->attacher) != w->news_seen ||
	       (w->held && tpf_healer_ended(w->healer) != w->heals_seen);
}

/* Sleep up to `seconds`, waking early for a signal or news; a leader
 * renews its lease whenever it is due meanwhile (every TTL/3). */
static void nap(struct loop *w, double seconds)
{
	double end = tpf_now_mono() + seconds;
	while (!stopped(w->o) && tpf_now_mono() < end && !news(w)) {
		if (w->lease && tpf_watch_lease_leading(w->lease) &&
		    tpf_now_mono() >= tpf_watch_lease_due(w->lease, w->o->interval))
			tpf_watch_lease_lead(w->lease);
		tpf_sleep(0.1);
	}
}

/* Does this watch lead this round? */
static enum leadership leadership(struct loop *w, const struct tpf_pipeline *s)
{
	if (!w->lease_known) {
		struct tpf_diags d = TPF_DIAGS_INIT;
		int rc = tpf_watch_lease_open(&w->lease, w->o, &s->fleet, &d);
		tpf_watch_diags(w->o, &d);
		tpf_diags_release(&d);
		if (rc)
			return LEAD_UNKNOWN;
		w->lease_known = 1;
		tpf_healer_set_lease(w->healer, w->lease);
	}
	if (!w->lease)
		return LEAD_YES;
	int was = tpf_watch_lease_leading(w->lease);
	switch (tpf_watch_lease_lead(w->lease)) {
	case TPF_LEAD_LEADING:
		return was ? LEAD_YES : LEAD_TOOK_OVER;
	case TPF_LEAD_STANDBY:
		return LEAD_STANDBY;
	case TPF_LEAD_UNKNOWN:
		break;
	}
	return LEAD_UNKNOWN;
}

static void reported_release(struct loop *w)
{
	for (size_t i = 0; i < w->nreported; i++)
		free(w->reported[i]);
	free(w->reported);
	w->reported = NULL;
	w->nreported = 0;
}

/* The event of a restart entry of the plan; TPF_EVENT_NKINDS: not one. */
static enum tpf_event_kind restart_entry_event(const struct tpf_unconverged *u)
{
	switch (u->kind) {
	case TPF_UNCONV_RESTARTS_EXHAUSTED:
		return TPF_EVENT_RESTARTS_USED_UP;
	case TPF_UNCONV_NOT_RESTARTED:
		return TPF_EVENT_NOT_RESTARTED;
	case TPF_UNCONV_RESTART_WAITING:
		return TPF_EVENT_RESTART_WAITING;
	default:
		return TPF_EVENT_NKINDS;
	}
}

/* A NOTE for each restart entry of p (restarts used up, not restarted,
 * waiting for the backoff) that the last probed round did not have. Only
 * probed rounds know them: the others keep the last set. */
static void report_entries(struct loop *w, const struct tpf_plan *p, int probed)
{
	if (!probed)
		return;
	char **now = xcalloc(p->nunconverged + 1, sizeof(char *));
	size_t n = 0;
	for (size_t i = 0; i < p->nunconverged; i++) {
		const struct tpf_unconverged *u = &p->unconverged[i];
		enum tpf_event_kind kind = restart_entry_event(u);
		if (kind == TPF_EVENT_NKINDS)
			continue;
		char *key = xasprintf("%s/%d/%d", u->node, u->worker, (int)u->kind);
		int seen = 0;
		for (size_t k = 0; k < w->nreported && !seen; k++)
			seen = !strcmp(w->reported[k], key);
		if (!seen) {
			char *msg = u->worker >= 0 ? xasprintf("w%d: %s", u->worker, u->reason)
						   : xstrdup(u->reason);
			struct tpf_event ev = TPF_EVENT_INIT(kind);
			ev.node = u->node;
			ev.worker = u->worker;
			ev.exit_code = u->exit_code;
			ev.reason = tpf_unconverged_code(u->kind);
			ev.message = msg;
			tpf_watch_event(w->o, &ev);
			free(msg);
		}
		now[n++] = key;
	}
	reported_release(w);
	w->reported = now;
	w->nreported = n;
}

/* exit_when_done: is the fleet done (plan/plan.h tpf_plan_done) with no
 * heal in flight? Then say so and remember how it ended. */
static void check_done(struct loop *w, const struct tpf_pipeline *s, const struct tpf_plan *p)
{
	size_t completed = 0, failed = 0;
	if (!w->o->exit_when_done || !tpf_plan_done(p, &s->desired, &completed, &failed) ||
	    tpf_healer_running(w->healer))
		return;
	char msg[160];
	snprintf(msg, sizeof(msg), "done: %zu node%s completed, %zu failed", completed,
		 completed == 1 ? "" : "s", failed);
	tpf_watch_note(w->o, TPF_EVENT_DONE, NULL, msg);
	w->done = failed ? 2 : 1;
}

/* The healing actions of p (all of them with -apply-all; the rest go to
 * *rest) that no heal in flight answers and no heal since `since`
 * overtook, announced: p keeps them for tpf_healer_heal. */
static void healing_actions(struct loop *w, struct tpf_plan *p, struct tpf_plan *rest,
			    double since)
{
	if (!w->o->apply_all)
		tpf_plan_split_healing(p, rest);
	tpf_healer_drop_busy(w->healer, p, since);
	emit_actions(w->o, p, 0);
}

/* Report and act on what a refreshed session s found (p: its plan).
 * now: when the round's refresh began (monotonic seconds); actions on
 * nodes healed after that are dropped. The job facts p was planned from
 * are older or newer than that, and each was dropped when a heal of its
 * node made it stale (take_probe, take_waits). */
static void act(struct loop *w, struct tpf_pipeline *s, struct tpf_plan *p, int round, double now,
		int probed)
{
	const struct tpf_watch_opts *o = w->o;
	struct tpf_plan rest;
	memset(&rest, 0, sizeof(rest));
	tpf_watch_check_unhealthy(&w->sick, s, p, o->unhealthy_timeout, now, o);
	report_entries(w, p, probed);
	check_done(w, s, p);
	/* Warnings (deferred: quota) are worth a line each round. */
	for (size_t i = 0; i < s->d.n; i++)
		tpf_watch_note(o, TPF_EVENT_WARNING, s->d.items[i].address, s->d.items[i].summary);
	tpf_diags_release(&s->d);

	healing_actions(w, p, &rest, now);
	if (rest.n && round == 1)
		emit_actions(o, &rest, 1);
	if (p->n)
		tpf_healer_heal(w->healer, s, p);
	if (probed)
		tpf_healer_record_checkpoints(w->healer, s);
	tpf_maint_check(w->maint, s, o);
	struct tpf_watch_summary sum;
	tpf_watch_summarise(s, &sum, round, rest.n, tpf_now_wall());
	struct tpf_watch_event ev = { .kind = TPF_WATCH_SUMMARY, .summary = &sum };
	tpf_watch_emit(o, &ev);
	tpf_watch_save_summary(s, &sum);
	tpf_watch_diags(o, &s->d);
	tpf_plan_release(&rest);
}

/*
 * The first half of a round that asks the workers: plan from the nodes
 * alone (as a round that does not probe) and start the heals their states
 * call for, a preempted or missing node, before any worker is asked. A
 * probe may wait for many workers, some of them down, and detection must
 * not wait behind it (issue 13). Its warnings are dropped: the full plan
 * after the probe says them once. Returns tpf_pipeline_plan's code; on an
 * error the diagnostics stay in s->d.
 */
static int heal_nodes_first(struct loop *w, struct tpf_pipeline *s, double started)
{
	struct tpf_diags kept = s->d;
	struct tpf_plan p, rest;
	memset(&p, 0, sizeof(p));
	memset(&rest, 0, sizeof(rest));
	tpf_diags_init(&s->d);
	int rc = tpf_pipeline_plan(s, 0, &p);
	if (!rc) {
		tpf_watch_hooks_ready(w->hooks, s, started);
		healing_actions(w, &p, &rest, started);
		if (p.n)
			tpf_healer_heal(w->healer, s, &p);
		tpf_diags_release(&s->d);
	}
	tpf_diags_move(&kept, &s->d);
	tpf_diags_release(&s->d);
	s->d = kept;
	tpf_plan_release(&rest);
	tpf_plan_release(&p);
	return rc;
}

/*
 * The sessions part of a round (s refreshed without probing). When a
 * session check is due (`due`: every -session-check, and only a leader that
 * did not just take over), start the background probe. Take the answers of
 * the last finished probe into s->facts; when there were none, heal the
 * nodes first and wait for the probe just started, only until the round
 * would end anyway (-rounds N, for tests and scripts, waits for it: each
 * such round is whole). Returns 1 with facts (*since: when that probe began), 0 without,
 * -1 when the plan for the first half failed (diagnostics in s->d).
 */
static int take_probe(struct loop *w, struct tpf_pipeline *s, double started, int due,
		      int leading, double *since)
{
	const struct tpf_watch_opts *o = w->o;
	if (!leading) {
		/* Answers from before this watch stood by are too old. */
		struct tpf_job_facts old;
		memset(&old, 0, sizeof(old));
		double at;
		if (tpf_prober_take(w->prober, 0, &old, &at))
			tpf_job_facts_release(&old);
		return 0;
	}
	/* Answers that came in since the last round first: starting a probe
	 * drops answers nobody took. */
	int got = tpf_prober_take(w->prober, 0, &s->facts, since);
	int launched = due && tpf_prober_start(w->prober, s->have_commit ? s->commit : NULL);
	if (launched) {
		w->next_probe = started + o->session_check;
		w->probed_once = 1;
	}
	/* With job waits attached the round does not wait for the probe: a
	 * probe of 256 workers takes seconds, and a round blocked in it could
	 * not act on a wait's news (a job's end acted on 12 s late in
	 * tests/bench/job_wait_bench.sh). Its answers are taken next round;
	 * this round plans from the waits (take_waits). A bounded run
	 * (-rounds) still waits, so each of its rounds has the probe's facts. */
	int block = !w->attacher || o->max_rounds;
	if (launched && !got && block) {
		if (heal_nodes_first(w, s, started))
			return -1;
		got = tpf_prober_take(w->prober, o->max_rounds ? -1 : started + o->interval,
				      &s->facts, since);
	}
	/* What a heal stopped or replaced since the probe began is news the
	 * facts do not have: those nodes count as not probed. */
	if (got)
		tpf_healer_drop_stale_facts(w->healer, &s->facts, *since);
	return got;
}

/* Add what the job waits know to s->facts: for every worker in a round
 * without probe answers (a job that ended is acted on at once, issue 21),
 * and in a probed round for the workers the session check skipped because
 * their waits cover them (tpf_attacher_covers) and those whose wait
 * answered after the probe began (probed_at, monotonic seconds; 0: no
 * probe answers). The newer answer wins: a probe's "alive" from the first
 * round must not hide the wait's "exited" of seconds later (issue 26: a
 * job failing in watch's first window was restarted one 10 s window
 * late). Each fact is dropped when a heal of its node made it stale
 * (tpf_healer_drop_stale_waits); one ending a job on a node a heal is
 * busy with sets w->held. Returns how many were added. */
static size_t take_waits(struct loop *w, struct tpf_pipeline *s, double probed_at)
{
	struct tpf_wait_time *at = NULL;
	struct tpf_job_facts all;
	memset(&all, 0, sizeof(all));
	size_t n = tpf_attacher_take(w->attacher, &all, &at), added = 0;
	/* The round's facts by "worker/node" (the first of a key, as a scan
	 * would find it), appended ones too: a scan per wait was quadratic in
	 * workers (issue 28). keys owns the index's keys. */
	struct tpf_strindex ix = TPF_STRINDEX_INIT;
	char **keys = xcalloc(s->facts.n + n + 1, sizeof(*keys));
	size_t nkeys = 0;
	for (size_t k = 0; k < s->facts.n; k++) {
		keys[nkeys] = tpf_job_fact_key(s->facts.items[k].node, s->facts.items[k].worker);
		tpf_strindex_put(&ix, keys[nkeys++], k);
	}
	for (size_t i = 0; i < n; i++) {
		/* A list of one, in place: dropped, its strings are freed. */
		struct tpf_job_facts one = { &all.items[i], 1, 1, NULL };
		char *key = tpf_job_fact_key(all.items[i].node, all.items[i].worker);
		size_t k = 0;
		struct tpf_job_fact *probe = NULL;
		if (tpf_strindex_get(&ix, key, &k) && k < s->facts.n)
			probe = s->facts.items + k;
		if (probe && at[i].at < probed_at) {
			tpf_job_fact_release(&all.items[i]);
			free(key);
			continue; /* the probe asked it later: its answer stands */
		}
		if (tpf_healer_drop_stale_waits(w->healer, &one, &at[i]))
			w->held = 1;
		if (!one.n) {
			free(key);
			continue;
		}
		if (probe) {
			tpf_job_fact_release(probe);
			*probe = all.items[i];
			free(key);
		} else {
			keys[nkeys] = key;
			tpf_strindex_put(&ix, keys[nkeys++], s->facts.n);
			XGROW(s->facts.items, s->facts.n + 1, s->facts.alloc);
			s->facts.items[s->facts.n++] = all.items[i];
		}
		added++;
	}
	for (size_t k = 0; k < nkeys; k++)
		free(keys[k]);
	free(keys);
	tpf_strindex_release(&ix);
	free(all.items);
	free(at);
	/* A job's last log line may hold a secret: hidden as the refresh
	 * hides the probe's (engine/pipeline/pipeline.c). */
	if (added && s->fleet.secrets_resolved)
		tpf_job_facts_redact(&s->facts, &s->fleet.secrets);
	return added;
}

/*
 * After heals that created or replaced nodes, rewrite the ssh config that
 * `ssh-config -install` made, from this round's session, whose state and
 * live nodes were read after those heals ended (issue 19 item 4). After
 * act(), so the round's own heals are started first; the workers are asked
 * for their host keys here, in parallel, once per change. A failure is a
 * warning. opened: monotonic seconds when s was opened.
 */
static void keep_ssh_config(struct loop *w, struct tpf_pipeline *s, double opened)
{
	if (!tpf_healer_take_nodes_changed(w->healer, opened))
		return;
	struct tpf_diags d = TPF_DIAGS_INIT;
	if (tpf_ssh_config_rewrite_installed(s, &d) == 1)
		tpf_watch_note(w->o, TPF_EVENT_SSH_CONFIG, NULL,
			       "ssh config rewritten: ~/.ssh/tpuform/ entries follow the new nodes");
	tpf_watch_diags(w->o, &d);
	tpf_diags_release(&d);
}

/*
 * Hold the first session check while the job waits make their first
 * attempts, for at most one -session-check period: each wait's first
 * answer is the worker's record (what the check would ask), and at 1,024
 * workers a check of every worker beside their handshakes doubled the
 * work of an attach (issue 28: 1,164 processes a second on the emulated
 * workers, 42 % of watch's CPU in the probe's connections). A bounded run
 * (-rounds) does not hold it: each of its rounds waits for the check.
 */
static int first_check_held(struct loop *w, double now)
{
	const struct tpf_watch_opts *o = w->o;
	if (w->probed_once || !w->attacher || o->max_rounds ||
	    now - w->began >= o->session_check)
		return 0;
	return !tpf_attacher_settled(w->attacher);
}

/* One round: ROUND_FATAL when the first round could not load the fleet
 * file or another state owns a node of this fleet's name. */
static enum round_outcome round_run(struct loop *w, int round, double started)
{
	const struct tpf_watch_opts *o = w->o;
	int due = started >= w->next_probe && !first_check_held(w, started);
	struct tpf_pipeline_opts so = TPF_PIPELINE_OPTS_INIT;
	so.file = o->file;
	so.parallelism = o->parallelism;
	so.pinned = !due && w->pinned[0] ? w->pinned : NULL;
	so.budget_cache = &w->budgets;
	struct tpf_pipeline s;
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	enum round_outcome rc = ROUND_DONE;
	enum leadership lead = LEAD_YES;
	int probed = 0, refreshed = 0;
	double probed_at = 0; /* when the probe whose answers this round took began */
	if (tpf_pipeline_open(&s, &so, NULL) ||
	    (lead = leadership(w, &s)) == LEAD_UNKNOWN || lead == LEAD_STANDBY ||
	    (refreshed = tpf_pipeline_refresh(&s, 0)) ||
	    /* A takeover heals first: the sessions are asked next round. */
	    (probed = take_probe(w, &s, started, due && lead == LEAD_YES, lead == LEAD_YES,
				 &probed_at)) < 0 ||
	    tpf_pipeline_plan(&s, 0, &p)) {
		tpf_watch_diags(o, &s.d);
		/* A fleet file that never loaded: nothing to watch. Another
		 * state's node under this fleet's name will not go away by
		 * retrying: stop rather than fight it (plan/ownership.h). */
		rc = lead == LEAD_STANDBY ? ROUND_STANDBY
		     : (round == 1 && !s.have_fleet) || refreshed == TPF_EFOREIGN ? ROUND_FATAL
										   : ROUND_FAILED;
	} else {
		tpf_attacher_sync(w->attacher, &s);
		if (lead == LEAD_YES && w->attacher && take_waits(w, &s, probed ? probed_at : 0)) {
			probed = 1;
			tpf_plan_release(&p);
			memset(&p, 0, sizeof(p));
			if (tpf_pipeline_plan(&s, 0, &p))
				probed = 0;
		}
		if (s.have_commit)
			snprintf(w->pinned, sizeof(w->pinned), "%s", s.commit);
		/* The hooks look up every worker's fact (read-only). */
		tpf_job_facts_index(&s.facts);
		tpf_watch_hooks_seen(w->hooks, &s, probed, started);
		tpf_job_facts_unindex(&s.facts);
		act(w, &s, &p, round, started, probed && s.o.refresh);
		if (lead == LEAD_YES)
			keep_ssh_config(w, &s, started);
	}
	tpf_plan_release(&p);
	tpf_pipeline_close(&s);
	return rc;
}

int tpf_watch_run(const struct tpf_watch_opts *opts)
{
	struct tpf_watch_opts o = *opts;
	if (o.interval <= 0)
		o.interval = 10;
	struct loop w;
	memset(&w, 0, sizeof(w));
	w.o = &o;
	w.began = tpf_now_mono();
	/* Installs its dispatcher in o, so heals' events pass through it too. */
	w.hooks = tpf_watch_hooks_new(&o);
	if (!w.hooks)
		return TPF_ERROR;
	w.healer = tpf_healer_new(&o);
	w.maint = tpf_maint_new();
	w.attacher = o.job_wait ? tpf_attacher_new(&o) : NULL;
	/* Freed before the attacher: its probe asks the attacher what to skip. */
	w.prober = tpf_prober_new(&o, w.attacher);
	double error_wait = o.interval;
	int rc = 0;
	long looked = 0; /* rounds begun, standby looks included: warnings count in them */
	for (int round = 1; !stopped(&o) && (!o.max_rounds || round <= o.max_rounds); round++) {
		double started = tpf_now_mono();
		tpf_watch_warnings_round(++looked);
		w.news_seen = tpf_attacher_news(w.attacher);
		w.heals_seen = tpf_healer_ended(w.healer);
		w.held = 0;
		enum round_outcome outcome = round_run(&w, round, started);
		if (outcome == ROUND_FATAL) {
			rc = TPF_ERROR;
			break;
		}
		if (outcome == ROUND_STANDBY) {
			/* Standing by is no round: look again when the lease would
			 * expire, or after half an interval. A standby counts the TTL
			 * from when it first SAW a generation, up to one look after
			 * the write, so looking twice an interval keeps a takeover
			 * within TTL + interval / 2, and its first heal within TTL +
			 * one interval. */
			round--;
			error_wait = o.interval;
			double until = tpf_watch_lease_due(w.lease, o.interval / 2) - tpf_now_mono();
			nap(&w, until > 0.2 ? until : 0.2);
			continue;
		}
		if (outcome == ROUND_FAILED) {
			char msg[128];
			snprintf(msg, sizeof(msg), "round failed: retrying in %.0f s", error_wait);
			tpf_watch_note(&o, TPF_EVENT_ROUND_FAILED, NULL, msg);
			nap(&w, error_wait);
			/* Our own errors back off instead of spinning. */
			error_wait = error_wait * 2 > 300 ? 300 : error_wait * 2;
			continue;
		}
		error_wait = o.interval;
		if (w.done || (o.max_rounds && round >= o.max_rounds))
			break;
		double spent = tpf_now_mono() - started;
		nap(&w, o.interval > spent ? o.interval - spent : 0);
	}
	if (stopped(&o))
		tpf_watch_note(&o, TPF_EVENT_STOPPED, NULL,
			       "interrupted: stopped after the step in flight; state saved, nothing "
			       "deleted");
	tpf_prober_free(w.prober); /* a probe in flight ends within its timeouts */
	tpf_attacher_free(w.attacher); /* each wait ends within its window */
	tpf_healer_finish(w.healer);
	tpf_watch_lease_free(w.lease); /* after the heals: a clean exit hands over at once */
	tpf_watch_hooks_free(w.hooks);
	tpf_budget_cache_release(&w.budgets);
	tpf_watch_warnings_forget();
	tpf_unhealthy_release(&w.sick);
	tpf_maint_free(w.maint);
	reported_release(&w);
	if (w.done && o.done)
		*o.done = w.done;
	return rc;
}
