/*
 * The run ledger's writer (engine/ledger/ledger_writer.h).
 */
#include "engine/ledger/ledger_writer.h"
#include "model/json_field.h"
#include "engine/state_store.h"
#include "model/chips.h"
#include "plan/plan.h"
#include "util/buf.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The longest message kept in a line (a line has TPF_LEDGER_LINE_MAX). */
#define MESSAGE_MAX 1024

/* What the writer knows of a node. */
struct node_facts {
	char *name, *group, *zone, *type, *api, *class, *generation_name;
	int chips, vms;
	long generation, retry;
};

struct tpf_run_ledger {
	struct tpf_ledger *store;
	const char *command;
	char writer[64];
	pthread_mutex_t mu;
	struct node_facts *nodes; /* sorted by name */
	size_t n, alloc;
	long seq, written, lost;
	char *first_error;
};

void tpf_ledger_time(double wall, char *out, size_t outlen)
{
	tpf_rfc3339_fmt(wall, 3, 0, out, outlen);
}

void tpf_fleet_ledger_where(const struct tpf_fleet *f, struct tpf_ledger_where *w,
			    struct tpf_backend_gcs_config *gcs)
{
	memset(w, 0, sizeof(*w));
	if (tpf_fleet_gcs_config(f, gcs))
		w->gcs = gcs;
	else
		w->state_path = f->state_path;
}

/* ---- the node cache (callers hold r->mu) ------------------------------------- */

static struct node_facts *find(struct tpf_run_ledger *r, const char *name, int add)
{
	size_t lo = 0, hi = r->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(r->nodes[mid].name, name);
		if (!c)
			return &r->nodes[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!add)
		return NULL;
	if (r->n == r->alloc) {
		r->alloc = r->alloc ? 2 * r->alloc : 16;
		r->nodes = xrealloc(r->nodes, r->alloc * sizeof(*r->nodes));
	}
	memmove(&r->nodes[lo + 1], &r->nodes[lo], (r->n - lo) * sizeof(*r->nodes));
	r->n++;
	struct node_facts *nf = &r->nodes[lo];
	memset(nf, 0, sizeof(*nf));
	nf->name = xstrdup(name);
	nf->generation = nf->retry = -1;
	return nf;
}

static void learn_recipe(struct node_facts *nf, const struct tpf_recipe *rec)
{
	if (rec->zone)
		xstrset(&nf->zone, rec->zone);
	if (tpf_recipe_type(rec))
		xstrset(&nf->type, tpf_recipe_type(rec));
	xstrset(&nf->api, tpf_api_name(rec->compute.api));
	xstrset(&nf->class, tpf_recipe_scheduling(rec));
	const char *gen = tpf_recipe_generation(rec);
	if (gen)
		xstrset(&nf->generation_name, gen);
	int chips = tpf_recipe_chips(rec);
	if (chips > 0)
		nf->chips = chips;
	if (rec->workers > 0)
		nf->vms = rec->workers;
}

static void learn_state(struct tpf_run_ledger *r, const struct tpf_state *st, int only_new)
{
	for (size_t i = 0; st && i < st->nnodes; i++) {
		const struct tpf_state_node *sn = &st->nodes[i];
		if (only_new && find(r, sn->name, 0))
			continue;
		struct node_facts *nf = find(r, sn->name, 1);
		if (sn->group)
			xstrset(&nf->group, sn->group);
		learn_recipe(nf, &sn->recipe);
		nf->generation = sn->generation;
	}
}

void tpf_run_ledger_learn(struct tpf_run_ledger *r, const struct tpf_state *st)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	learn_state(r, st, 1);
	pthread_mutex_unlock(&r->mu);
}

/* What the event says of its node overrides what was known; the rest
 * comes from what was known. */
static struct node_facts *learn_event(struct tpf_run_ledger *r, const struct tpf_event *ev)
{
	if (!ev->node)
		return NULL;
	struct node_facts *nf = find(r, ev->node, 1);
	if (ev->group)
		xstrset(&nf->group, ev->group);
	if (ev->recipe)
		learn_recipe(nf, ev->recipe);
	if (ev->zone && ev->kind != TPF_EVENT_ZONE_REFUSED && ev->kind != TPF_EVENT_ZONE_BACKED_OFF)
		xstrset(&nf->zone, ev->zone);
	if (ev->generation >= 0)
		nf->generation = ev->generation;
	if (ev->retry >= 0)
		nf->retry = ev->retry;
	else if (ev->generation >= 0 && (ev->kind == TPF_EVENT_CREATING || ev->kind == TPF_EVENT_READY))
		nf->retry = ev->generation; /* a new generation starts with no restarts */
	return nf;
}

/* ---- lines ----------------------------------------------------------------- */

static void set_int(json_t *o, const char *k, long v)
{
	if (v >= 0)
		json_object_set_new(o, k, json_integer(v));
}

static void add_node_facts(json_t *o, const struct node_facts *nf)
{
	tpf_json_set_str(o, "group", nf->group);
	tpf_json_set_str(o, "zone", nf->zone);
	tpf_json_set_str(o, "api", nf->api);
	tpf_json_set_str(o, "type", nf->type);
	tpf_json_set_str(o, "chip", nf->generation_name);
	if (nf->chips > 0)
		json_object_set_new(o, "chips", json_integer(nf->chips));
	if (nf->vms > 0)
		json_object_set_new(o, "vms", json_integer(nf->vms));
	tpf_json_set_str(o, "class", nf->class);
	set_int(o, "generation", nf->generation);
	set_int(o, "retry", nf->retry);
}

/* Call with r->mu held. */
static json_t *line_locked(struct tpf_run_ledger *r, const struct tpf_event *ev, double at)
{
	char ts[40];
	tpf_ledger_time(at, ts, sizeof(ts));
	json_t *o = json_object();
	json_object_set_new(o, "v", json_integer(TPF_LEDGER_FORMAT));
	json_object_set_new(o, "ts", json_string(ts));
	tpf_json_set_str(o, "event", tpf_event_info(ev->kind)->name);
	if (ev->action != ev->kind)
		tpf_json_set_str(o, "action", tpf_event_info(ev->action)->name);
	tpf_json_set_str(o, "cmd", r->command);
	json_object_set_new(o, "writer", json_string(r->writer));
	json_object_set_new(o, "seq", json_integer(++r->seq));
	tpf_json_set_str(o, "node", ev->node);
	struct node_facts *nf = learn_event(r, ev);
	if (nf)
		add_node_facts(o, nf);
	else
		tpf_json_set_str(o, "group", ev->group);
	tpf_json_set_str(o, "id", ev->id);
	set_int(o, "worker", ev->worker);
	set_int(o, "workers", ev->workers);
	if (ev->exit_code != -1)
		json_object_set_new(o, "exit_code", json_integer(ev->exit_code));
	if (ev->elapsed > 0)
		json_object_set_new(o, "elapsed", json_real((double)(long)(ev->elapsed * 1000) / 1000));
	tpf_json_set_str(o, "reason", ev->reason);
	set_int(o, "step", ev->step);
	tpf_json_set_str(o, "checkpoint", ev->checkpoint);
	tpf_json_set_str(o, "deadline", ev->deadline);
	if (ev->slices) { /* a slice-scoped loss: which slices, and their chips */
		tpf_json_set_str(o, "slices", ev->slices);
		set_int(o, "lost_chips", ev->lost_chips);
	}
	if (ev->message) {
		size_t n = strnlen(ev->message, MESSAGE_MAX);
		json_object_set_new(o, "message", json_stringn_nocheck(ev->message, n));
	}
	return o;
}

json_t *tpf_run_ledger_line(struct tpf_run_ledger *r, const struct tpf_event *ev, double at)
{
	pthread_mutex_lock(&r->mu);
	json_t *o = line_locked(r, ev, at);
	pthread_mutex_unlock(&r->mu);
	return o;
}

static int written_kind(enum tpf_event_kind k)
{
	switch (k) {
	case TPF_EVENT_PROGRESS:
	case TPF_EVENT_WARNING:
	case TPF_EVENT_LOCKED:
	case TPF_EVENT_REPLAN:
	case TPF_EVENT_METRICS:
	case TPF_EVENT_SSH_CONFIG:
	case TPF_EVENT_NOTIFY_PROBLEM:
	case TPF_EVENT_NKINDS:
		return 0;
	default:
		return 1;
	}
}

void tpf_run_ledger_event(struct tpf_run_ledger *r, const struct tpf_event *ev)
{
	if (!r || !written_kind(ev->kind))
		return;
	/* One lock from the time stamp to the append: lines are in time order
	 * within a writer, and seq follows them. */
	pthread_mutex_lock(&r->mu);
	json_t *o = line_locked(r, ev, tpf_now_wall());
	char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(9));
	json_decref(o);
	struct tpf_diags d = TPF_DIAGS_INIT;
	if (!s || tpf_ledger_append(r->store, s, strlen(s), &d)) {
		r->lost++;
		if (!r->first_error)
			r->first_error = xstrdup(d.n ? d.items[0].summary : "the line could not be made");
	} else {
		r->written++;
	}
	pthread_mutex_unlock(&r->mu);
	tpf_diags_release(&d);
	free(s);
}

struct tpf_run_ledger *tpf_run_ledger_open(const struct tpf_fleet *f, const struct tpf_state *st,
					   const char *command, struct tpf_diags *d)
{
	const char *off = getenv("TPUFORM_LEDGER");
	if (off && !strcmp(off, "off"))
		return NULL;
	struct tpf_ledger_where w;
	struct tpf_backend_gcs_config gcs;
	tpf_fleet_ledger_where(f, &w, &gcs);
	/* A fleet with no state location (a unit test's hand-built fleet) has
	 * nowhere beside its state for a ledger: none is written, rather than
	 * a file named after a null path in the working directory. */
	if (!w.gcs && !w.state_path)
		return NULL;
	/* A short-lived command appends to its host's object of the day
	 * (state/ledger_store.h), not to an object of its own. */
	w.daily = strcmp(command, "watch") != 0;
	struct tpf_diags od = TPF_DIAGS_INIT;
	struct tpf_ledger *store = NULL;
	if (tpf_ledger_open(&store, &w, &od)) {
		for (size_t i = 0; i < od.n; i++)
			tpf_warn(d, NULL, "the run ledger is not written: %s", od.items[i].summary);
		tpf_diags_release(&od);
		return NULL;
	}
	tpf_diags_release(&od);
	struct tpf_run_ledger *r = xcalloc(1, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	r->store = store;
	r->command = command;
	char host[40] = "";
	gethostname(host, sizeof(host) - 1);
	snprintf(r->writer, sizeof(r->writer), "%s:%ld", host, (long)getpid());
	learn_state(r, st, 0);
	return r;
}

void tpf_run_ledger_counts(const struct tpf_run_ledger *r, long *written, long *lost)
{
	*written = r ? r->written : 0;
	*lost = r ? r->lost : 0;
}

void tpf_run_ledger_close(struct tpf_run_ledger *r, struct tpf_diags *d)
{
	if (!r)
		return;
	if (r->lost && d)
		tpf_warn(d, NULL,
			 "%ld event%s could not be written to the run ledger '%s' (the actions "
			 "were done; only their record is missing): %s",
			 r->lost, r->lost == 1 ? "" : "s", tpf_ledger_where(r->store), r->first_error);
	tpf_ledger_close(r->store);
	for (size_t i = 0; i < r->n; i++) {
		struct node_facts *nf = &r->nodes[i];
		free(nf->name);
		free(nf->group);
		free(nf->zone);
		free(nf->type);
		free(nf->api);
		free(nf->class);
		free(nf->generation_name);
	}
	free(r->nodes);
	free(r->first_error);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

void tpf_run_ledger_plan(const struct tpf_fleet *f, const struct tpf_state *st,
			 const struct tpf_plan *p, struct tpf_diags *d)
{
	struct tpf_run_ledger *r = tpf_run_ledger_open(f, st, "plan", d);
	if (!r)
		return;
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_plan_summary(p, &b);
	struct tpf_event ev = TPF_EVENT_INIT(TPF_EVENT_PLANNED);
	ev.message = b.buf;
	tpf_run_ledger_event(r, &ev);
	tpf_buf_release(&b);
	tpf_run_ledger_close(r, d);
}
