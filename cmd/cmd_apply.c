/*
 * tpuform apply [PLANFILE]: plan (or load a saved plan), ask, carry out.
 */
#include "cmd/cmd.h"

#include <string.h>

static struct {
	int auto_approve, input, refresh_only;
	struct tpf_flag_list targets, replace;
} apply_o = { .input = 1 };

static const struct tpf_flag apply_flags[] = {
	TPF_BOOL("auto-approve", &apply_o.auto_approve, "skip the approval prompt"),
	TPF_BOOL("input", &apply_o.input, "ask for input (false: fail instead of prompting)"),
	TPF_LIST("target", "NODE", &apply_o.targets, "apply only to NODE (a node or a group)"),
	TPF_LIST("replace", "NODE", &apply_o.replace, "replace NODE though nothing forces it"),
	TPF_BOOL("refresh-only", &apply_o.refresh_only,
		 "only bring the state in line with the live nodes; change no node"),
	TPF_FLAGS_END,
};

/* Plan as the flags say, show it, and say when it was targeted. */
static int make_plan(struct tpf_cmd_ctx *ctx, struct tpf_plan *p)
{
	struct tpf_pipeline *s = &ctx->s;
	struct tpf_plan_mode m = tpf_cmd_plan_mode(0, apply_o.refresh_only, &apply_o.targets,
						   &apply_o.replace);
	if (tpf_plan_mode_check(&m, ctx->o.refresh, &s->d))
		return TPF_ERROR;
	s->o.no_source |= m.refresh_only;
	if (tpf_pipeline_refresh(s, !m.refresh_only) || tpf_pipeline_plan_mode(s, &m, p))
		return TPF_ERROR;
	if (!ctx->o.json)
		tpf_ui_say("\n");
	tpf_ui_plan(p);
	tpf_ui_budgets(s);
	if (p->ntargets) {
		/* Before the prompt, as Terraform. */
		tpf_cmd_warn_targeting(ctx);
		tpf_cmd_print_diags(ctx);
	}
	return 0;
}

/* Nothing to do: Terraform still closes with "Apply complete!". */
static void say_nothing_to_do(void)
{
	if (tpf_ui.json)
		tpf_ui_json("info", "change_summary",
			    "Apply complete! Resources: 0 added, 0 changed, 0 destroyed.",
			    json_pack("{s:{s:i,s:i,s:i,s:s}}", "changes", "add", 0, "change", 0,
				      "remove", 0, "operation", "apply"));
	else
		tpf_ui_say("\nApply complete! Resources: 0 added, 0 changed, 0 destroyed.\n");
}

static int run_apply(struct tpf_cmd_ctx *ctx)
{
	struct tpf_pipeline *s = &ctx->s;
	const char *planfile = ctx->nargs ? ctx->args[0] : NULL;
	int auto_approve = apply_o.auto_approve;
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	int code = TPF_EXIT_ERROR;
	if (planfile) {
		/* A saved plan is applied as planned, without a prompt. */
		struct tpf_plan_mode m = tpf_cmd_plan_mode(0, apply_o.refresh_only,
							   &apply_o.targets, &apply_o.replace);
		if (tpf_cmd_refuse_with_planfile(ctx, &m) || tpf_pipeline_load_plan(s, planfile, &p))
			goto done;
		auto_approve = 1;
	} else if (make_plan(ctx, &p)) {
		goto done;
	}
	if (!tpf_plan_has_changes(&p)) {
		tpf_pipeline_apply_nothing(s);
		say_nothing_to_do();
		code = TPF_EXIT_OK;
		goto done;
	}
	if (!apply_o.input && !auto_approve) {
		tpf_error(&s->d, "apply needs approval but -input=false was given; add -auto-approve");
		goto done;
	}
	code = tpf_run_apply(ctx, &p, auto_approve, 0);
done:
	tpf_plan_release(&p);
	return code;
}

const struct tpf_cmd tpf_cmd_apply = {
	.name = "apply",
	.summary = "Create, replace or delete nodes and provision workers",
	.description = "  Create, replace and delete nodes so that the fleet matches its file, then\n"
		       "  provision every worker. Without PLANFILE a plan is made and shown first\n"
		       "  and applied only after you answer 'yes'. With PLANFILE (from 'tpuform plan\n"
		       "  -out=FILE') exactly that plan is applied, without a prompt.\n"
		       "  -target, -replace and -refresh-only plan as 'tpuform plan' does with\n"
		       "  them; -refresh-only then writes the state alone.\n",
	.footer = "The first interrupt (Ctrl-C) starts nothing new and records what is in\n"
		  "flight; a second one exits at once. An apply that fails or is interrupted\n"
		  "exits 1 and says what was and was not done.\n",
	.flags = apply_flags,
	.max_args = 1,
	.args_name = "[PLANFILE]",
	.args = TPF_ARGS_PLANFILE,
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_LOCK | TPF_CMD_PROVIDER |
		 TPF_CMD_JSON_LINES | TPF_CMD_REFRESH | TPF_CMD_PARALLELISM,
	.lock_op = "OperationTypeApply",
	.signals = TPF_SIG_GRACEFUL,
	.run = run_apply,
};
