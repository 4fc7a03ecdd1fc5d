/*
 * tpuform force-unlock [-force] LOCK_ID: remove a lock whose holder is
 * gone, as `terraform force-unlock` does: it asks first ("Do you really
 * want to force-unlock?", only 'yes' proceeds) unless -force, and says
 * "successfully unlocked" (terraform 1.11 observed,
 * docs/terraform-behaviour.md section 4). The work is the backend's
 * (engine/state_store.h tpf_pipeline_force_unlock).
 */
#include "cmd/cmd.h"
#include "engine/pipeline/state_commands.h"
#include "engine/state_store.h"

#include <unistd.h>

static struct {
	int force;
} fu_o;

static const struct tpf_flag fu_flags[] = {
	TPF_BOOL("force", &fu_o.force, "do not ask for confirmation"),
	TPF_FLAGS_END,
};

static int run_force_unlock(struct tpf_cmd_ctx *ctx)
{
	if (!fu_o.force) {
		if (!isatty(STDIN_FILENO)) {
			tpf_errorx(ctx->d, NULL, "Add -force to unlock without the question (for "
				   "pipelines), or run tpuform from a terminal.",
				   "force-unlock needs confirmation, but standard input is not a "
				   "terminal");
			return TPF_EXIT_ERROR;
		}
		if (!tpf_ui_confirm("Do you really want to force-unlock?",
				    "tpuform will remove the lock on the remote state.\n"
				    "  This will allow local tpuform commands to modify this state, even "
				    "though it\n  may still be in use.",
				    "confirm")) {
			tpf_error(ctx->d, "force-unlock cancelled.");
			return TPF_EXIT_ERROR;
		}
	}
	if (tpf_pipeline_force_unlock(&ctx->s, ctx->args[0]))
		return TPF_EXIT_ERROR;
	tpf_ui_say("tpuform state has been successfully unlocked!\n\n"
		   "The state has been unlocked, and tpuform commands should now be able to\n"
		   "obtain a new lock on the remote state.\n");
	return TPF_EXIT_OK;
}

const struct tpf_cmd tpf_cmd_force_unlock = {
	.name = "force-unlock",
	.summary = "Remove a state lock whose holder is gone",
	.description =
		"  Remove the state lock with the ID LOCK_ID (the \"ID:\" of the lock error's\n"
		"  Lock Info), left by a tpuform that was killed or lost its machine. Only\n"
		"  do this when no tpuform holds it: two writers at once would each refuse\n"
		"  the other's state (Cloud Storage) or overwrite it (a file).\n"
		"  A local lock dies with its process, so only a leftover lock-info file can\n"
		"  be removed there; a live holder is refused.\n",
	.flags = fu_flags,
	.min_args = 1,
	.max_args = 1,
	.args_name = "LOCK_ID",
	.needs = TPF_CMD_FLEET,
	.signals = TPF_SIG_STOP,
	.run = run_force_unlock,
};
