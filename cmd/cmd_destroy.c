/*
 * tpuform destroy: delete every node the fleet owns (in state, or carrying
 * its labels), nothing else.
 */
#include "cmd/cmd.h"

#include <string.h>

static struct {
	int auto_approve;
	struct tpf_flag_list targets;
} destroy_o;

static const struct tpf_flag destroy_flags[] = {
	TPF_BOOL("auto-approve", &destroy_o.auto_approve, "skip the approval prompt"),
	TPF_LIST("target", "NODE", &destroy_o.targets, "destroy only NODE (a node or a group)"),
	TPF_FLAGS_END,
};

static int run_destroy(struct tpf_cmd_ctx *ctx)
{
	struct tpf_pipeline *s = &ctx->s;
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	int code = TPF_EXIT_ERROR;
	s->o.no_source = 1; /* a vanished source repository must not block a destroy */
	struct tpf_plan_mode m = tpf_cmd_plan_mode(1, 0, &destroy_o.targets, NULL);
	if (tpf_pipeline_refresh(s, 0) || tpf_pipeline_plan_mode(s, &m, &p))
		goto done;
	if (!ctx->o.json)
		tpf_ui_say("\n");
	tpf_ui_plan(&p);
	if (p.ntargets) {
		tpf_cmd_warn_targeting(ctx);
		tpf_cmd_print_diags(ctx);
	}
	if (!tpf_plan_has_changes(&p)) {
		tpf_ui_say("\nDestroy complete! Resources: 0 destroyed.\n");
		code = TPF_EXIT_OK;
		goto done;
	}
	code = tpf_run_apply(ctx, &p, destroy_o.auto_approve, 1);
done:
	tpf_plan_release(&p);
	return code;
}

const struct tpf_cmd tpf_cmd_destroy = {
	.name = "destroy",
	.summary = "Delete every node the fleet owns",
	.description = "  Delete every node this fleet owns: the nodes in its state and any node\n"
		       "  carrying its tpuform-fleet label. Nothing else is touched. With\n"
		       "  -target, only the nodes named (a group name names all its nodes).\n",
	.footer = "The first interrupt (Ctrl-C) starts nothing new; a second one exits at once.\n"
		  "A destroy that fails or is interrupted exits 1.\n",
	.flags = destroy_flags,
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_LOCK | TPF_CMD_PROVIDER |
		 TPF_CMD_JSON_LINES | TPF_CMD_PARALLELISM,
	.lock_op = "OperationTypeApply",
	.signals = TPF_SIG_GRACEFUL,
	.run = run_destroy,
};
