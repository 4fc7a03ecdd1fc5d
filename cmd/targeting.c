/*
 * What plan, apply and destroy share for the targeted operations
 * (plan/target.h): the plan mode from their flags, and Terraform's two
 * targeting warnings (docs/terraform-behaviour.md section 5), in its
 * words with "tpuform" (observed with terraform 1.11: the first after a
 * plan made with -target, the second after applying one).
 */
#include "cmd/cmd.h"

#include <stdlib.h>

struct tpf_plan_mode tpf_cmd_plan_mode(int destroy, int refresh_only,
				       const struct tpf_flag_list *targets,
				       const struct tpf_flag_list *replace)
{
	struct tpf_plan_mode m = {
		.destroy = destroy,
		.refresh_only = refresh_only,
		.targets = targets ? targets->items : NULL,
		.ntargets = targets ? targets->n : 0,
		.replace = replace ? replace->items : NULL,
		.nreplace = replace ? replace->n : 0,
	};
	return m;
}

#define NOT_ROUTINE                                                                            \
	"is not for routine use, and is provided only for exceptional situations such as "    \
	"recovering from errors or mistakes, or when tpuform specifically suggests to use it " \
	"as part of an error message."

void tpf_cmd_warn_targeting(struct tpf_cmd_ctx *ctx)
{
	tpf_diags_add(ctx->d, TPF_SEV_WARNING, NULL, "Resource targeting is in effect",
		      "You are creating a plan with the -target option, which means that the "
		      "result of this plan may not represent all of the changes requested by the "
		      "current configuration.\n\nThe -target option " NOT_ROUTINE);
}

void tpf_cmd_warn_incomplete(struct tpf_cmd_ctx *ctx)
{
	tpf_diags_add(ctx->d, TPF_SEV_WARNING, NULL, "Applied changes may be incomplete",
		      "The plan was created with the -target option in effect, so some changes "
		      "requested in the configuration may have been ignored. Run the following "
		      "command to verify that no other changes are pending:\n    tpuform plan\n\n"
		      "Note that the -target option " NOT_ROUTINE);
}

int tpf_cmd_refuse_with_planfile(struct tpf_cmd_ctx *ctx, const struct tpf_plan_mode *m)
{
	if (!m->ntargets && !m->nreplace && !m->refresh_only)
		return 0;
	return tpf_errorx(ctx->d, NULL,
			  "A saved plan is applied exactly as it was planned. Give these options "
			  "to the plan instead: tpuform plan -target=NODE -out=FILE.",
			  "-target, -replace and -refresh-only cannot be used with a saved plan");
}
