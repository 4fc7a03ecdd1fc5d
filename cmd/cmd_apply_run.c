/*
 * Carrying out a plan for apply and destroy: the approval prompt, the
 * engine's apply, the recap and an honest closing line. Terraform prints
 * "Apply complete!" only after a clean run; after a failure it shows the
 * errors and exits 1, and an interrupted run exits 1 too
 * (docs/terraform-behaviour.md sections 2 and 7). So does tpuform, and it
 * says what was and was not done:
 *   Apply failed: 1 added, 0 changed, 0 destroyed; 1 action failed, 2 not started.
 */
#include "cmd/cmd.h"
#include "engine/chores/chores.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Terraform's approval prompt (for a refresh-only plan, its question
 * about the state). 0: approved; else an error is in s->d. */
static int approve(struct tpf_pipeline *s, int destroy, int refresh_only)
{
	if (tpf_ui.json)
		return tpf_error(&s->d, "Plan file or auto-approve required");
	if (!isatty(STDIN_FILENO))
		return tpf_errorx(&s->d, NULL,
				  "Add -auto-approve to apply without a prompt (for pipelines), or "
				  "run tpuform from a terminal.",
				  "%s needs approval, but standard input is not a terminal",
				  destroy ? "destroy" : "apply");
	int yes = refresh_only
		? tpf_ui_confirm("Would you like to update the tpuform state to reflect these "
				 "detected changes?",
				 "tpuform will write these changes to the state without modifying any "
				 "real infrastructure.",
				 "approve")
		: destroy
		? tpf_ui_confirm("Do you really want to destroy all resources?",
				 "tpuform will destroy all your managed infrastructure, as shown above.\n"
				 "  There is no undo.",
				 "confirm")
		: tpf_ui_confirm("Do you want to perform these actions?",
				 "tpuform will perform the actions described above.", "approve");
	if (!yes)
		return tpf_error(&s->d, destroy ? "Destroy cancelled." : "Apply cancelled.");
	return 0;
}

/* "Apply complete! Resources: ..." or "Apply failed: ...; 1 action failed." */
static char *closing_line(const struct tpf_apply_result *r, int destroy, int ok, int interrupted)
{
	struct tpf_buf b = TPF_BUF_INIT;
	const char *verb = destroy ? "Destroy" : "Apply";
	if (ok)
		tpf_buf_addf(&b, "%s complete! Resources: ", verb);
	else
		tpf_buf_addf(&b, "%s %s: ", verb, interrupted ? "interrupted" : "failed");
	if (destroy)
		tpf_buf_addf(&b, "%zu destroyed", r->destroyed);
	else if (r->waiting) /* created, not added: waiting for capacity */
		tpf_buf_addf(&b, "%zu added, %zu waiting for capacity, %zu changed, %zu destroyed",
			     r->added, r->waiting, r->changed, r->destroyed);
	else
		tpf_buf_addf(&b, "%zu added, %zu changed, %zu destroyed", r->added, r->changed,
			     r->destroyed);
	if (r->failed_actions)
		tpf_buf_addf(&b, "; %zu action%s %s", r->failed_actions,
			     r->failed_actions == 1 ? "" : "s",
			     interrupted ? "failed or stopped" : "failed");
	if (r->not_started)
		tpf_buf_addf(&b, "%s %zu not started", r->failed_actions ? "," : ";", r->not_started);
	tpf_buf_adds(&b, ".");
	if (interrupted)
		tpf_buf_adds(&b, " The state records everything that was done; 'tpuform plan' "
				 "shows what is left.");
	return tpf_buf_detach(&b, NULL);
}

static void say_closing(const struct tpf_apply_result *r, int destroy, int ok, int interrupted)
{
	char *msg = closing_line(r, destroy, ok, interrupted);
	if (tpf_ui.json) {
		json_t *changes = json_pack("{s:I,s:I,s:I,s:I,s:s}", "add", (json_int_t)r->added,
					    "waiting_for_capacity", (json_int_t)r->waiting, "change",
					    (json_int_t)r->changed, "remove", (json_int_t)r->destroyed,
					    "operation", destroy ? "destroy" : "apply");
		json_t *outcome = json_pack("{s:b,s:I,s:I,s:b}", "complete", ok, "failed",
					    (json_int_t)r->failed_actions, "not_started",
					    (json_int_t)r->not_started, "interrupted", interrupted);
		tpf_ui_json(ok ? "info" : "error", "change_summary", msg,
			    json_pack("{s:o,s:o}", "changes", changes, "outcome", outcome));
	} else if (ok) {
		tpf_ui_say("\n%s%s%s\n", tpf_ui.color ? "\033[1;32m" : "", msg,
			   tpf_ui.color ? "\033[0m" : "");
	} else {
		tpf_ui_say("\n%s%s%s\n", tpf_ui.color ? "\033[1;31m" : "", msg,
			   tpf_ui.color ? "\033[0m" : "");
	}
	free(msg);
}

int tpf_run_apply(struct tpf_cmd_ctx *ctx, struct tpf_plan *p, int auto_approve, int destroy)
{
	struct tpf_pipeline *s = &ctx->s;
	struct tpf_apply_opts opts = {
		.on_event = tpf_ui_event,
		.interrupted = &tpf_interrupted,
	};
	if (tpf_pipeline_apply_env(s, &opts))
		return TPF_EXIT_ERROR;
	if (!auto_approve && approve(s, destroy, p->refresh_only))
		return TPF_EXIT_ERROR;
	struct tpf_apply_result res;
	if (p->refresh_only)
		tpf_pipeline_apply_refresh_only(s, p, &res); /* the state alone */
	else
		tpf_pipeline_apply(s, p, &opts, &res);
	tpf_ui_recap(&res.recap);
	if (p->ntargets)
		tpf_cmd_warn_incomplete(ctx);
	int interrupted = tpf_interrupted != 0;
	int ok = !res.failed_actions && !res.not_started && !tpf_diags_errors(&s->d) &&
		 !interrupted;
	/* ssh-config -install: its entries follow replaced nodes. */
	if (res.added || res.waiting || res.changed || res.destroyed)
		tpf_ssh_config_refresh_installed(s);
	/* The error boxes first, then what was and was not done. */
	tpf_cmd_print_diags(ctx);
	say_closing(&res, destroy, ok, interrupted);
	tpf_apply_result_release(&res);
	return ok ? TPF_EXIT_OK : TPF_EXIT_ERROR;
}
