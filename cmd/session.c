/*
 * The command line's side of the engine session (engine/session.h): the
 * common flags and a command's needs as session options, the session's
 * progress lines, and the worker check of the worker-facing commands.
 */
#include "cmd/cmd.h"

struct tpf_session_opts tpf_cmd_session_opts(const struct tpf_common_opts *o, unsigned needs)
{
	struct tpf_session_opts so = TPF_SESSION_OPTS_INIT;
	so.file = o->file;
	so.no_lock = !o->lock;
	so.lock_timeout = o->lock_timeout;
	so.refresh = o->refresh;
	so.parallelism = o->parallelism;
	so.on_progress = tpf_ui_session_progress;
	so.no_state = !(needs & TPF_CMD_STATE);
	so.no_provider = !(needs & TPF_CMD_PROVIDER);
	return so;
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

int tpf_cmd_check_worker(const struct tpf_state_node *sn, int worker, struct tpf_diags *d)
{
	if (worker >= 0 && (size_t)worker < sn->nworkers)
		return 0;
	if (sn->nworkers == 0)
		return tpf_errorx(d, NULL, "'tpuform plan' shows what apply would do about it.",
				  "node '%s' has no worker %d: it has no workers in the state", sn->name,
				  worker);
	if (sn->nworkers == 1)
		return tpf_errorx(d, NULL, "Leave -worker out, or use -worker 0.",
				  "node '%s' has no worker %d: it has 1 worker (0)", sn->name, worker);
	return tpf_errorx(d, NULL, NULL, "node '%s' has no worker %d: it has %zu workers (0 to %zu)",
			  sn->name, worker, sn->nworkers, sn->nworkers - 1);
}
