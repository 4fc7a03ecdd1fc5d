/*
 * The leaf of the watch files (engine/watch_internal.h): passing events to
 * the caller. It calls no other watch file, so every one of them may call
 * it without a call circle (docs/ARCHITECTURE.md section 3).
 */
#include "engine/watch_internal.h"

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

void tpf_watch_diags(const struct tpf_watch_opts *o, const struct tpf_diags *d)
{
	struct tpf_watch_event ev = { .kind = TPF_WATCH_DIAGS, .diags = d };
	if (d->n)
		tpf_watch_emit(o, &ev);
}
