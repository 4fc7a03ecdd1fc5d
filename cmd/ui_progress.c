/*
 * The command line's side of the pipeline (engine/pipeline/pipeline.h): the
 * common flags and a command's needs as session options, the session's
 * progress lines, and the worker check of the worker-facing commands.
 */
#include "cmd/cmd.h"

struct tpf_pipeline_opts tpf_cmd_session_opts(const struct tpf_common_opts *o, unsigned needs)
{
	struct tpf_pipeline_opts so = TPF_PIPELINE_OPTS_INIT;
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

void tpf_ui_session_progress(const struct tpf_pipeline_progress *ev, void *ctx)
{
	(void)ctx;
	if (tpf_ui.json)
		return;
	switch (ev->kind) {
	case TPF_PIPELINE_LOCKING:
		tpf_ui_say("Acquiring state lock. This may take a few moments...\n");
		break;
	case TPF_PIPELINE_REFRESHING:
		tpf_ui_say("%s: Refreshing state... [id=%s]\n", ev->node, ev->id);
		break;
	}
}
