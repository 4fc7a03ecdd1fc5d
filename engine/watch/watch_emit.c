/*
 * The leaf of the watch files (engine/watch/watch_internal.h): passing events to
 * the caller. It calls no other watch file, so every one of them may call
 * it without a call circle (docs/ARCHITECTURE.md section 3).
 */
#include "engine/watch/watch_internal.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void tpf_watch_emit(const struct tpf_watch_opts *o, const struct tpf_watch_event *ev)
{
	if (o->on_event)
		o->on_event(ev, o->ctx);
}

void tpf_watch_event(const struct tpf_watch_opts *o, const struct tpf_event *ev)
{
	struct tpf_watch_event we = { .kind = TPF_WATCH_EVENT, .event = ev };
	tpf_watch_emit(o, &we);
}

void tpf_watch_note(const struct tpf_watch_opts *o, enum tpf_event_kind kind, const char *node,
		    const char *message)
{
	struct tpf_event ev = TPF_EVENT_INIT(kind);
	ev.node = node;
	ev.message = message;
	tpf_watch_event(o, &ev);
}

/*
 * The warnings said so far, with the last round each was seen in: a watch
 * that runs for weeks says a standing warning once, and again only when
 * its text changes or it comes back after a round without it (docs/watch.md
 * "Keeping the fleet alive"). Process-wide: one watch runs per process.
 */
#define WARNINGS_MAX 1024 /* remembered at most; the oldest go first */
static struct said {
	char *key; /* address NUL-joined with summary, as "ADDR\x1fSUMMARY" */
	long round;
} said[WARNINGS_MAX];
static size_t nsaid;
static long round_now;
static pthread_mutex_t said_mu = PTHREAD_MUTEX_INITIALIZER;

void tpf_watch_warnings_round(long round)
{
	pthread_mutex_lock(&said_mu);
	round_now = round;
	pthread_mutex_unlock(&said_mu);
}

/* 1 when warning g is news (said_mu held): not seen this round or the
 * last. Its round is recorded either way. */
static int warning_is_news(const struct tpf_diag *g)
{
	char *key = xasprintf("%s\x1f%s", g->address ? g->address : "", g->summary);
	for (size_t i = 0; i < nsaid; i++) {
		if (strcmp(said[i].key, key))
			continue;
		int news = said[i].round < round_now - 1;
		said[i].round = round_now;
		free(key);
		return news;
	}
	if (nsaid == WARNINGS_MAX) {
		free(said[0].key);
		memmove(said, said + 1, (WARNINGS_MAX - 1) * sizeof(said[0]));
		nsaid--;
	}
	said[nsaid].key = key;
	said[nsaid++].round = round_now;
	return 1;
}

void tpf_watch_diags(const struct tpf_watch_opts *o, const struct tpf_diags *d)
{
	struct tpf_diags fresh = TPF_DIAGS_INIT;
	pthread_mutex_lock(&said_mu);
	for (size_t i = 0; i < d->n; i++) {
		const struct tpf_diag *g = &d->items[i];
		if (g->severity == TPF_SEV_ERROR || warning_is_news(g))
			tpf_diags_add(&fresh, g->severity, g->address, g->summary, g->detail);
	}
	pthread_mutex_unlock(&said_mu);
	struct tpf_watch_event ev = { .kind = TPF_WATCH_DIAGS, .diags = &fresh };
	if (fresh.n)
		tpf_watch_emit(o, &ev);
	tpf_diags_release(&fresh);
}

void tpf_watch_warnings_forget(void)
{
	pthread_mutex_lock(&said_mu);
	for (size_t i = 0; i < nsaid; i++)
		free(said[i].key);
	nsaid = 0;
	round_now = 0;
	pthread_mutex_unlock(&said_mu);
}
