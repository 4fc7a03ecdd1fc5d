/*
 * One create (engine/apply/apply_internal.h): recorded as pending and saved
 * before any request; the planned zone, then the group's other zones, each
 * only within the declared quota and outside its backoff; what a refusal,
 * a failure or an interrupt leaves in the state.
 */
#include "engine/apply/apply_internal.h"
#include "model/node_state.h"
#include "plan/quota.h"
#include "util/buf.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* ---- create ------------------------------------------------------------------ */

/* One create as it goes through the zones. */
struct create_try {
	struct tpf_recipe r;     /* the desired recipe; zone: the one being tried */
	struct tpf_live_node ln; /* the node, once created */
	struct tpf_diags zd;     /* the zones' refusals */
	int tried;               /* zones a create was sent to */
	int backed_off;          /* zones skipped: backed off */
	int only_zone_errors;    /* every refusal was quota, capacity or an unusable zone */
	/* What each zone said, for people and the state's note: "zone Z is
	 * out of capacity; zone Y is out of quota". */
	struct tpf_buf why;
	double retry_at;         /* monotonic: the first backoff to end among them; 0: none */
	int waiting;             /* created, waiting for capacity (flex-start, queued) */
	/* An elastic background create (plan.h TPF_ELASTIC_SHRINK, _RECREATE):
	 * the node's record is left as it is; nothing is provisioned. */
	int background;
	int unsaved;             /* the state could not be saved before a create */
};

static int is_background(const struct tpf_action *a)
{
	return a->elastic == TPF_ELASTIC_SHRINK || a->elastic == TPF_ELASTIC_RECREATE;
}

/* Why a zone took no node, after "zone Z ". */
static const char *refusal_words(int rc)
{
	return rc == TPF_EQUOTA ? "is out of quota"
	       : rc == TPF_EZONE ? "cannot be used by the project"
				 : "is out of capacity";
}

/* Note that zone said no (words: refusal_words, or another reason), and
 * that it is asked again at monotonic time `until` (0: not backed off). */
static void note_refusal(struct create_try *ct, const char *zone, const char *words, double until)
{
	tpf_buf_addf(&ct->why, "%szone %s %s", ct->why.len ? "; " : "", zone, words);
	if (until > 0 && (ct->retry_at <= 0 || until < ct->retry_at))
		ct->retry_at = until;
}

/* Record the node as pending. It is saved before any request is sent, by
 * the save of its zone's claim (claim_zone), which follows at once when a
 * zone has room: one save, not two, per node created (each save writes the
 * whole state, so saves per node make an apply of N nodes O(N^2)). When no
 * zone is claimed, the deferral's or failure's save records it, or the
 * apply's last. A node that existed before starts a new generation
 * (TPUFORM_RETRY). */
static void record_pending(struct exec *x, const struct tpf_desired_node *dn)
{
	pthread_mutex_lock(x->mu);
	tpf_state_record_pending(x->st, dn->name, dn->group, dn->index, &dn->recipe, &dn->job);
	x->workers_dirty = 1;
	pthread_mutex_unlock(x->mu);
}

/* 1 if zone refused this type of node recently (plan/backoff.h: the
 * accelerator type, or a Compute Engine node's machine type); a note says
 * how long it stays backed off. */
static int zone_backed_off(struct exec *x, const struct tpf_desired_node *dn, const char *zone,
			   struct create_try *ct)
{
	double until = 0;
	int why = 0;
	struct tpf_backoff_key key = tpf_backoff_key_of(&dn->recipe);
	if (!x->o->backoff ||
	    !tpf_backoff_blocked(x->o->backoff, zone, &key, tpf_now_mono(), &until, &why))
		return 0;
	note_refusal(ct, zone, refusal_words(why), until);
	char *msg = xasprintf("zone %s is backed off for %.0f s more", zone, until - tpf_now_mono());
	apply_emit_zone(x, TPF_EVENT_ZONE_BACKED_OFF, dn, zone, msg);
	free(msg);
	return 1;
}

/*
 * If one more node like dn fits in zone under the declared quota
 * (plan/quota.h: every node in state counts, except this one), move the
 * pending node there and save (the pending record too: record_pending),
 * before the create is sent. Returns 1 when it did; *rc gets the save's
 * result when one was attempted (a failed save is said here).
 */
static int claim_zone(struct exec *x, const struct tpf_desired_node *dn, const char *zone, int *rc)
{
	pthread_mutex_lock(x->mu);
	struct tpf_quota quota;
	tpf_quota_init(&quota, x->f->quota, x->f->nquota);
	tpf_quota_count_state(&quota, x->st, dn->name);
	int ok = tpf_quota_room(&quota, zone, &dn->recipe);
	tpf_quota_release(&quota);
	if (ok) {
		tpf_state_record_zone(x->st, dn->name, zone);
		*rc = apply_save_locked(x);
		ok = *rc == 0;
	}
	pthread_mutex_unlock(x->mu);
	if (*rc)
		tpf_errorx(x->d, dn->name, NULL,
			   "node '%s' was not created: the state could not be saved first", dn->name);
	return ok;
}

/* A zone said quota, no capacity or that the project cannot use it: back it
 * off (when watch keeps backoff). */
static void zone_refused(struct exec *x, const struct tpf_desired_node *dn, const char *zone, int rc,
			 struct create_try *ct)
{
	if (!x->o->backoff) {
		note_refusal(ct, zone, refusal_words(rc), 0);
		return;
	}
	struct tpf_backoff_key key = tpf_backoff_key_of(&dn->recipe);
	double now = tpf_now_mono();
	double wait = tpf_backoff_fail(x->o->backoff, zone, &key, now, rc);
	note_refusal(ct, zone, refusal_words(rc), now + wait);
	char *msg = xasprintf("zone %s refused (%s): backing off %.0f s", zone,
			      rc == TPF_EQUOTA ? "quota" : rc == TPF_EZONE ? "zone unusable" : "no capacity",
			      wait);
	apply_emit_zone(x, TPF_EVENT_ZONE_REFUSED, dn, zone, msg);
	free(msg);
}

/*
 * The planned zone first, then the group's other zones in order, each only
 * if not backed off and within quota, until a create succeeds or fails for
 * another reason than quota, capacity (a stockout, also one reported while
 * creating) or a zone the project cannot use (docs/providers.md, zone fallback). An
 * interrupt tries no further zone. Returns the last result (TPF_ERROR when no create was sent).
 */
static int create_in_zones(struct exec *x, const struct tpf_desired_node *dn, struct create_try *ct)
{
	int rc = TPF_ERROR;
	for (size_t zi = 0; zi <= dn->nzones; zi++) {
		const char *zone = zi == 0 ? dn->recipe.zone : dn->zones[zi - 1];
		if (zi > 0 && !strcmp(zone, dn->recipe.zone))
			continue;
		if (apply_interrupted(x))
			break;
		if (zone_backed_off(x, dn, zone, ct)) {
			ct->backed_off++;
			continue;
		}
		int saved = 0;
		if (!claim_zone(x, dn, zone, &saved)) {
			if (saved) { /* the state could not be saved: no create */
				ct->unsaved = 1;
				return saved;
			}
			note_refusal(ct, zone, "is at its declared quota", 0);
			continue;
		}
		if (ct->tried) {
			char *msg = xasprintf("trying zone %s", zone);
			apply_emit_zone(x, TPF_EVENT_ZONE_FALLBACK, dn, zone, msg);
			free(msg);
		}
		ct->tried++;
		xstrset(&ct->r.zone, zone);
		rc = x->prov->ops->create(x->prov, dn->name, &ct->r, &ct->ln, &ct->zd);
		if (rc == 0) {
			if (x->o->backoff) {
				struct tpf_backoff_key key = tpf_backoff_key_of(&dn->recipe);
				tpf_backoff_ok(x->o->backoff, zone, &key);
			}
			break;
		}
		if (rc != TPF_EQUOTA && rc != TPF_ECAPACITY && rc != TPF_EZONE) {
			ct->only_zone_errors = 0;
			break;
		}
		zone_refused(x, dn, zone, rc, ct);
	}
	return rc;
}

/* Keep the zones' refusals as warnings. */
static void refusals_as_warnings(struct exec *x, struct create_try *ct)
{
	for (size_t i = 0; i < ct->zd.n; i++)
		ct->zd.items[i].severity = TPF_SEV_WARNING;
	tpf_diags_move(x->d, &ct->zd);
}

/* When a refused node is tried again, wall-clock RFC 3339 in out: the
 * first backoff to end (watch); "" without one (apply: no retry of its
 * own). */
static void retry_when(const struct create_try *ct, char *out, size_t n)
{
	out[0] = '\0';
	if (ct->retry_at > 0)
		tpf_rfc3339(tpf_now_wall() + (ct->retry_at - tpf_now_mono()), out, n);
}

/* What the zones said ("zone Z is out of capacity; ..."). Borrowed. */
static const char *refusal_note(const struct create_try *ct)
{
	return ct->why.len ? ct->why.buf : "no zone of its group could take it";
}

/* What became of the node a replace deleted ("" for a create). */
static const char *replaced_words(const struct tpf_action *a)
{
	if (a->kind != TPF_ACT_REPLACE)
		return "";
	return a->keep_parts ? "The lost slices are gone until a create succeeds; the other "
			       "slices keep their VMs. "
			     : "The node it replaces was deleted first (a replacement destroys "
			       "before it creates): it is gone until a create succeeds. ";
}

/* Nothing exists: keep why in the state for show and the plan (call
 * with x->mu held; a node without history is not in the state). */
static void record_refusal(struct exec *x, const struct tpf_desired_node *dn,
			   const struct create_try *ct)
{
	char when[40];
	retry_when(ct, when, sizeof(when));
	tpf_state_record_refused(x->st, dn->name, refusal_note(ct), *when ? when : NULL);
}

/* watch: nobody could take it now; it waits for the zones' backoff. */
static int create_deferred(struct exec *x, const struct tpf_action *a,
			   const struct tpf_desired_node *dn, struct create_try *ct, double el)
{
	pthread_mutex_lock(x->mu);
	/* Nothing exists. A node with history stays pending so that its
	 * generation (the job's TPUFORM_RETRY) survives the wait; an elastic
	 * node's job runs on: it stays created. */
	if (!ct->background)
		tpf_state_record_not_created(x->st, dn->name, 0, 1);
	record_refusal(x, dn, ct);
	apply_save_locked(x);
	pthread_mutex_unlock(x->mu);
	refusals_as_warnings(x, ct);
	char when[40];
	retry_when(ct, when, sizeof(when));
	/* "2026-11-28T14:40:12Z" -> "14:40:12 UTC" */
	char *msg = xasprintf("deferred: no zone of its group can take it now (%s)%s; tried again "
			      "%s%.8s%s",
			      refusal_note(ct),
			      a->kind != TPF_ACT_REPLACE ? ""
			      : a->keep_parts	       ? "; the lost slices are gone"
						       : "; the node it replaces is gone",
			      *when ? "after " : "next round", *when ? when + 11 : "",
			      *when ? " UTC" : "");
	apply_emit(x, TPF_EVENT_DEFERRED, TPF_EVENT_CREATING, dn->name, NULL, el, msg);
	free(msg);
	return TPF_EDEFERRED;
}

/* apply: every zone refused and nothing of the node exists; one error
 * says so and what happens now, the zones' own words are warnings. */
static void say_not_created(struct exec *x, const struct tpf_action *a,
			    const struct tpf_desired_node *dn, struct create_try *ct)
{
	refusals_as_warnings(x, ct);
	char *detail = xasprintf("%s%s Nothing of the refused create is left. 'tpuform apply' "
				 "does not wait for capacity: run it again later, or run 'tpuform "
				 "watch', which tries again by itself (a refusing zone after a "
				 "backoff of its -interval, doubling up to 1 min).",
				 replaced_words(a),
				 dn->nzones > 1 ? "No other zone of its group could take it."
						: "Its group has no other zone.");
	tpf_errorx(x->d, dn->name, detail, "node '%s' was not created: %s", dn->name,
		   refusal_note(ct));
	free(detail);
}

/* The create failed: when nothing can exist, forget the node (a node with
 * history stays pending, with why); else taint it (a failed request may
 * have left a node: it is replaced next time). */
static int create_failed(struct exec *x, const struct tpf_action *a,
			 const struct tpf_desired_node *dn, struct create_try *ct, double el, int rc)
{
	/* Every zone said no before creating anything (or none was asked):
	 * nothing exists. Otherwise a request may have left a node. */
	int nothing = !ct->tried || ct->only_zone_errors;
	pthread_mutex_lock(x->mu);
	if (!nothing || !ct->background) /* elastic: the job runs on */
		tpf_state_record_not_created(x->st, dn->name, !nothing, nothing);
	if (nothing)
		record_refusal(x, dn, ct);
	apply_save_locked(x);
	pthread_mutex_unlock(x->mu);
	if (nothing && !apply_interrupted(x))
		say_not_created(x, a, dn, ct);
	else
		tpf_diags_move(x->d, &ct->zd);
	apply_emit(x, TPF_EVENT_FAILED, TPF_EVENT_CREATING, dn->name, NULL, el, NULL);
	return rc;
}

/*
 * An interrupt stopped the create, in the provider's wait (the request was
 * sent: the node may exist and go on to READY) or before a request was
 * sent. Either way the node stays "pending", as record_pending saved it:
 * the next plan waits for it, adopts it or creates it again. Never
 * forgotten, never tainted: nothing failed.
 */
static int create_interrupted(struct exec *x, const struct tpf_desired_node *dn,
			      struct create_try *ct, double el)
{
	refusals_as_warnings(x, ct);
	apply_emit(x, TPF_EVENT_INTERRUPTED, TPF_EVENT_CREATING, dn->name, NULL, el,
	     ct->tried ? "interrupted: stopped waiting for the create; the node stays pending in "
			 "the state, and the next plan waits for it or creates it again"
		       : "interrupted before the create was sent; the node stays pending in the "
			 "state, and the next plan creates it");
	return TPF_EINTERRUPTED;
}

/* The node exists: record it, then provision its workers if it is READY. */
static int create_done(struct exec *x, const struct tpf_desired_node *dn, struct create_try *ct,
		       double el)
{
	/* Earlier zones' refusals are kept as warnings: the node exists. */
	refusals_as_warnings(x, ct);
	const struct tpf_live_node *ln = &ct->ln;
	char when[32];
	tpf_rfc3339(tpf_now_wall(), when, sizeof(when));
	pthread_mutex_lock(x->mu);
	/* Saved with the workers' records (within
	 * APPLY_WORKER_SAVE_INTERVAL), not at once: the claim's save recorded
	 * the node as pending in its zone before the create was sent, and a
	 * pending node that exists is adopted by the next plan (t150, t320), so
	 * a crash meanwhile loses nothing. One save per node created instead of
	 * two more. */
	int rc = 0;
	if (ct->background) { /* the lost slices' workers are new VMs */
		tpf_state_record_slices_made(x->st, dn->name);
		rc = apply_save_locked(x);
	} else {
		tpf_state_record_created(x->st, dn->name, ln->id, when);
		apply_worker_changed_locked(x, 0);
	}
	pthread_mutex_unlock(x->mu);

	int failed = 0;
	if (ln->state && tpf_node_class(ln->state) != TPF_NODE_READY) {
		/*
		 * A queued resource accepted, not yet provisioned: it may wait
		 * for capacity for hours (or a node already gone on). Its workers
		 * are provisioned by a later apply or watch once the node is
		 * READY (the plan's "provision").
		 */
		int queued = ln->queued_state && !strcmp(ln->queued_state, ln->state);
		char *msg = queued ? xasprintf("queued: its queued resource is %s; its workers are "
					       "provisioned once the node is READY",
					       ln->state)
			    : ln->capacity_wait /* flex-start: waits as a queued resource would */
				   ? xasprintf("waiting for flex-start capacity in zone %s; its "
					       "workers are provisioned once it runs",
					       ln->recipe.zone ? ln->recipe.zone : "?")
				   : xasprintf("the node is %s, not READY: its workers are "
					       "provisioned once it is", ln->state);
		queued |= ln->capacity_wait;
		apply_emit(x, queued ? TPF_EVENT_QUEUED : TPF_EVENT_NOT_READY, TPF_EVENT_CREATING, dn->name,
		     ln->id, el, msg);
		/* Waiting for capacity is not "Creation complete" (issue 26). */
		struct tpf_event ev = TPF_EVENT_INIT(queued ? TPF_EVENT_CAPACITY_WAITING
							    : TPF_EVENT_CREATED);
		ev.action = TPF_EVENT_CREATING;
		ev.node = dn->name;
		ev.id = ln->id;
		ev.group = dn->group;
		ev.zone = ct->r.zone;
		ev.elapsed = el;
		ev.message = msg;
		ev.recipe = &dn->recipe;
		apply_emit_event(x, &ev);
		ct->waiting = queued;
		free(msg);
	} else {
		/* The zone it was created in: the last one tried. */
		struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_READY);
		ev.action = TPF_EVENT_CREATING;
		ev.node = dn->name;
		ev.group = dn->group;
		ev.zone = ct->r.zone;
		ev.id = ln->id;
		ev.elapsed = el;
		ev.recipe = &dn->recipe;
		apply_emit_event(x, &ev);
		int *ws = apply_all_workers(dn->recipe.workers);
		if (!ct->background) /* elastic: a later plan grows the job */
			failed = apply_provision_workers(x, dn->name, ln, ws,
							 (size_t)dn->recipe.workers, 0);
		free(ws);
	}
	return rc ? rc : failed ? TPF_ERROR : 0;
}

int apply_exec_create(struct exec *x, size_t ai)
{
	const struct tpf_desired_node *dn = x->p->actions[ai].desired;
	int bg = is_background(&x->p->actions[ai]);
	if (!bg)
		record_pending(x, dn);
	int rc;
	struct create_try ct = { .zd = TPF_DIAGS_INIT, .only_zone_errors = 1, .why = TPF_BUF_INIT,
				 .background = bg };
	tpf_recipe_copy(&ct.r, &dn->recipe);
	/* Labelled with the lineage of the state it is recorded in, not the
	 * plan's: a plan saved from a blank state was made with a lineage that
	 * only its apply writes (plan/ownership.h). */
	char lineage[TPF_LINEAGE_LABEL_LEN + 1];
	if (tpf_lineage_label(x->st->lineage, lineage)) {
		tpf_kvlist_set(&ct.r.labels, TPF_LABEL_LINEAGE, lineage);
		tpf_kvlist_sort(&ct.r.labels);
	}
	apply_fl_begin(x, ai, TPF_EVENT_CREATING, NULL);
	rc = create_in_zones(x, dn, &ct);
	double el = apply_fl_end(x, ai);

	/* watch: a node no zone can take now is deferred, not a failure. */
	int deferral = x->o->refusals_defer && ct.only_zone_errors && (ct.tried || ct.backed_off) &&
		       !apply_interrupted(x);
	/* Stopped by the interrupt rather than refused or failed: in the
	 * provider's wait, before any zone, or between zones that refused. */
	int stopped = rc == TPF_EINTERRUPTED ||
		      (rc && apply_interrupted(x) && (!ct.tried || ct.only_zone_errors));
	if (ct.unsaved)
		; /* said by claim_zone; nothing was sent */
	else if (stopped)
		rc = create_interrupted(x, dn, &ct, el);
	else if (rc && deferral)
		rc = create_deferred(x, &x->p->actions[ai], dn, &ct, el);
	else if (rc)
		rc = create_failed(x, &x->p->actions[ai], dn, &ct, el, rc);
	else
		rc = create_done(x, dn, &ct, el);
	x->fl[ai].waiting = ct.waiting; /* counted apart by engine/apply/apply.c */
	tpf_live_node_release(&ct.ln);
	tpf_recipe_release(&ct.r);
	tpf_diags_release(&ct.zd);
	tpf_buf_release(&ct.why);
	return rc;
}

