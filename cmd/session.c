/*
 * The command line's side of the engine session (engine/session.h): the
 * common flags as session options, and the session's progress lines.
 */
#include "cmd/cmd.h"

struct tpf_session_opts tpf_cmd_session_opts(const struct tpf_common_opts *o)
{
	struct tpf_session_opts so = TPF_SESSION_OPTS_INIT;
	so.file = o->file;
	so.no_lock = !o->lock;
	so.lock_timeout = o->lock_timeout;
	so.refresh = o->refresh;
	so.parallelism = o->parallelism;
	so.on_progress = tpf_ui_session_progress;
	return so;
}

int tpf_cmd_session_open(struct tpf_session *s, const struct tpf_common_opts *o, const char *lock_op)
{
	struct tpf_session_opts so = tpf_cmd_session_opts(o);
	return tpf_session_open(s, &so, lock_op);
}

void tpf_ui_session_progress(const struct tpf_session_progress *ev, void *ctx)
{
	(void)ctx;
	if (tpf_ui.json)
		return;
	switch (ev->kind) {
	case TPF_SESSION_LOCKING:
		tpf_ui_say("Acquiring state lock. This may take a few moments...\n");
		break;
	case TPF_SESSION_REFRESHING:
		tpf_ui_say("%s: Refreshing state... [id=%s]\n", ev->node, ev->id);
		break;
	}
}
