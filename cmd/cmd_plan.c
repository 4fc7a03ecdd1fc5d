/*
 * tpuform plan: refresh, diff, print; nothing is changed.
 */
#include "cmd/cmd.h"
#include "engine/ledger/ledger_writer.h"
#include "engine/saved_plan.h"

#include <stdlib.h>
#include <string.h>

static struct {
	int detailed, destroy, refresh_only;
	const char *out;
	struct tpf_flag_list targets, replace;
} plan_o;

static const struct tpf_flag plan_flags[] = {
	TPF_BOOL("detailed-exitcode", &plan_o.detailed, "exit 2 with changes, 3 with none but not as declared"),
	TPF_STR("out", "FILE", &plan_o.out, "save the plan to FILE for 'tpuform apply FILE'"),
	TPF_BOOL("destroy", &plan_o.destroy, "plan to destroy everything the fleet owns"),
	TPF_LIST("target", "NODE", &plan_o.targets, "plan only for NODE (a node or a group)"),
	TPF_LIST("replace", "NODE", &plan_o.replace, "replace NODE though nothing forces it"),
	TPF_BOOL("refresh-only", &plan_o.refresh_only,
		 "only bring the state in line with the live nodes; change no node"),
	TPF_FLAGS_END,
};

static int run_plan(struct tpf_cmd_ctx *ctx)
{
	struct tpf_pipeline *s = &ctx->s;
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	int code = TPF_EXIT_ERROR;
	struct tpf_plan_mode m = tpf_cmd_plan_mode(plan_o.destroy, plan_o.refresh_only,
						   &plan_o.targets, &plan_o.replace);
	if (tpf_plan_mode_check(&m, ctx->o.refresh, &s->d))
		goto done;
	/* Recording what is live needs neither the source nor the secrets. */
	s->o.no_source |= m.refresh_only;
	if (tpf_pipeline_refresh(s, !m.refresh_only) || tpf_pipeline_plan_mode(s, &m, &p))
		goto done;
	tpf_run_ledger_plan(&s->fleet, &s->state, &p, &s->d);
	if (!ctx->o.json)
		tpf_ui_say("\n");
	tpf_ui_plan(&p);
	tpf_ui_budgets(s);
	if (p.ntargets) {
		/* Right after the plan, before what to run next, as Terraform. */
		tpf_cmd_warn_targeting(ctx);
		tpf_cmd_print_diags(ctx);
	}
	if (plan_o.out) {
		if (tpf_saved_plan_write(&p, plan_o.out, &s->d))
			goto done;
		tpf_ui_say("\nSaved the plan to: %s\n\nTo perform exactly these actions, run the "
			   "following command to apply:\n    tpuform apply \"%s\"\n",
			   plan_o.out, plan_o.out);
	} else if (tpf_plan_has_changes(&p) && !getenv("TPUFORM_IN_AUTOMATION")) {
		tpf_ui_say("\n─────────────────────────────────────────────────────────────────────────────\n\n"
			   "Note: You didn't use the -out option to save this plan, so tpuform can't\n"
			   "guarantee to take exactly these actions if you run \"tpuform apply\" now.\n");
	}
	code = !plan_o.detailed || tpf_plan_converged(&p) ? TPF_EXIT_OK
	       : tpf_plan_has_changes(&p)                ? TPF_EXIT_CHANGES
							 : TPF_EXIT_NOT_DECLARED;
done:
	tpf_plan_release(&p);
	return code;
}

const struct tpf_cmd tpf_cmd_plan = {
	.name = "plan",
	.summary = "Show what apply would change",
	.description = "  Refresh the fleet's nodes from the provider, compare them with the fleet\n"
		       "  file and the state, and show what apply would change. Changes nothing.\n"
		       "  -target plans only for the nodes named (a group name names all its\n"
		       "  nodes), -replace replaces nodes though nothing forces it, and\n"
		       "  -refresh-only plans only the state updates that bring the state in line\n"
		       "  with the live nodes, as Terraform's options of the same names.\n",
	.footer = "Exit codes: 0 success, 1 error; with -detailed-exitcode 0 no changes,\n"
		  "1 error, 2 success with changes, 3 no changes but the fleet is not as\n"
		  "declared (restarts used up, waiting for quota or a queued resource).\n",
	.flags = plan_flags,
	/* Terraform's plan holds the state lock too (-lock, -lock-timeout), so
	 * that a pipeline's plan waits for another pipeline's apply rather
	 * than planning against a state about to change
	 * (docs/terraform-behaviour.md section 4). */
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_LOCK | TPF_CMD_PROVIDER |
		 TPF_CMD_JSON_LINES | TPF_CMD_REFRESH | TPF_CMD_PARALLELISM,
	.lock_op = "OperationTypePlan",
	.signals = TPF_SIG_STOP,
	.run = run_plan,
};
