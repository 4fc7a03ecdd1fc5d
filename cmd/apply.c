/*
 * tpuform apply [PLANFILE]: plan (or load a saved plan), ask, carry out.
 */
#include "cmd/cmd.h"
#include "engine/refresh.h"
#include "util/fs.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help(const struct tpf_flag *flags)
{
	printf("Usage: tpuform apply [options] [PLANFILE]\n\n"
	       "  Create, replace and delete nodes so that the fleet matches its file, then\n"
	       "  provision every worker. Without PLANFILE a plan is made and shown first\n"
	       "  and applied only after you answer 'yes'.\n\nOptions:\n");
	tpf_print_flags(stdout, flags);
}

static double env_seconds(const char *name, double dflt)
{
	const char *v = getenv(name);
	return v && *v ? atof(v) : dflt;
}

int tpf_run_apply(struct tpf_session *s, struct tpf_plan *p, int auto_approve, int destroy)
{
	if (!auto_approve) {
		if (tpf_ui.json) {
			tpf_error(&s->d, "Plan file or auto-approve required");
			return TPF_EXIT_ERROR;
		}
		if (!isatty(STDIN_FILENO)) {
			tpf_errorx(&s->d, NULL,
				   "Add -auto-approve to apply without a prompt (for pipelines), or "
				   "run tpuform from a terminal.",
				   "%s needs approval, but standard input is not a terminal",
				   destroy ? "destroy" : "apply");
			return TPF_EXIT_ERROR;
		}
		int yes = destroy
			? tpf_ui_confirm("Do you really want to destroy all resources?",
					 "tpuform will destroy all your managed infrastructure, as shown above.\n"
					 "  There is no undo.")
			: tpf_ui_confirm("Do you want to perform these actions?",
					 "tpuform will perform the actions described above.");
		if (!yes) {
			tpf_error(&s->d, destroy ? "Destroy cancelled." : "Apply cancelled.");
			return TPF_EXIT_ERROR;
		}
	}
	struct tpf_apply_opts opts = {
		.parallelism = s->o->parallelism,
		.heartbeat = env_seconds("TPUFORM_HEARTBEAT", 10),
		.wait_timeout = env_seconds("TPUFORM_WAIT_TIMEOUT", 1200),
		.on_event = tpf_ui_event,
		.interrupted = &tpf_interrupted,
	};
	struct tpf_apply_result res;
	tpf_apply(p, &s->fleet, s->prov, &s->live, &s->state, s->fleet.state_path, &opts, &res,
		  &s->d);
	tpf_ui_recap(&res.recap);
	char msg[200];
	if (destroy)
		snprintf(msg, sizeof(msg), "Destroy complete! Resources: %zu destroyed.", res.destroyed);
	else
		snprintf(msg, sizeof(msg), "Apply complete! Resources: %zu added, %zu changed, %zu destroyed.",
			 res.added, res.changed, res.destroyed);
	int failed = res.failed_actions || tpf_diags_errors(&s->d);
	if (tpf_interrupted)
		tpf_warn(&s->d, NULL, "apply was interrupted: actions not started were skipped; the "
				      "state records everything that happened");
	if (tpf_ui.json) {
		tpf_ui_json(failed ? "error" : "info", "change_summary", msg,
			    json_pack("{s:{s:I,s:I,s:I,s:s}}", "changes", "add", (json_int_t)res.added,
				      "change", (json_int_t)res.changed, "remove",
				      (json_int_t)res.destroyed, "operation", destroy ? "destroy" : "apply"));
	} else if (!failed) {
		tpf_ui_say("\n%s%s%s\n", tpf_ui.color ? "\033[1;32m" : "", msg,
			   tpf_ui.color ? "\033[0m" : "");
	} else {
		tpf_ui_say("\n%s\n", msg);
	}
	tpf_apply_result_release(&res);
	return failed ? TPF_EXIT_ERROR : TPF_EXIT_OK;
}

/* Load a saved plan and check it still fits the state (docs/terraform-behaviour.md section 3). */
static int load_saved_plan(struct tpf_session *s, const char *path, struct tpf_plan *p)
{
	json_error_t err;
	json_t *j = json_load_file(path, 0, &err);
	if (!j)
		return tpf_error(&s->d, "cannot read saved plan '%s': %s", path, err.text);
	int rc = tpf_plan_from_json(p, j, path, &s->d);
	json_decref(j);
	if (rc)
		return rc;
	int fresh = !p->lineage || (!strcmp(p->lineage, s->state.lineage) && p->serial == 0 &&
				    s->state.serial == 0);
	if (!fresh && strcmp(p->lineage ? p->lineage : "", s->state.lineage))
		return tpf_errorx(&s->d, NULL,
				  "The given plan file was created from a different state lineage.",
				  "Saved plan does not match the given state");
	if (p->serial != s->state.serial)
		return tpf_errorx(&s->d, NULL,
				  "The given plan file can no longer be applied because the state was "
				  "changed by another operation after the plan was created.",
				  "Saved plan is stale");
	if (p->fleet_sha256 && s->fleet_sha256 && strcmp(p->fleet_sha256, s->fleet_sha256))
		return tpf_errorx(&s->d, NULL,
				  "Run 'tpuform plan -out=FILE' again to plan with the current fleet file.",
				  "Saved plan is stale: the fleet file changed after the plan was created");
	if (p->fleet && strcmp(p->fleet, s->fleet.name))
		return tpf_error(&s->d, "saved plan '%s' is for fleet '%s', not '%s'", path, p->fleet,
				 s->fleet.name);
	return 0;
}

int cmd_apply(int argc, char **argv)
{
	struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
	int auto_approve = 0, show_help = 0, input = 1;
	struct tpf_flag flags[] = {
		TPF_COMMON_FLAGS(o),
		{ "auto-approve", NULL, TPF_FLAG_BOOL, &auto_approve, "skip the approval prompt" },
		{ "parallelism", NULL, TPF_FLAG_INT, &o.parallelism, "concurrent operations (default 10)" },
		{ "lock", NULL, TPF_FLAG_BOOL, &o.lock, "lock the state (default true)" },
		{ "lock-timeout", NULL, TPF_FLAG_DURATION, &o.lock_timeout, "wait this long for the state lock" },
		{ "refresh", NULL, TPF_FLAG_BOOL, &o.refresh, "refresh from the provider (default true)" },
		{ "input", NULL, TPF_FLAG_BOOL, &input, "ask for input (false: fail instead of prompting)" },
		{ "help", "h", TPF_FLAG_BOOL, &show_help, "show this help" },
		{ 0 },
	};
	char **pos;
	int npos;
	if (tpf_parse_flags("apply", argc, argv, flags, &pos, &npos))
		return TPF_EXIT_ERROR;
	const char *planfile = npos > 0 ? pos[0] : NULL;
	int extra = npos > 1;
	free(pos);
	if (show_help) {
		help(flags);
		return TPF_EXIT_OK;
	}
	if (extra) {
		fprintf(stderr, "Error: apply takes at most one argument, a saved plan file\n");
		return TPF_EXIT_ERROR;
	}
	tpf_ui_init(o.no_color, o.json);
	tpf_install_signal_handlers();
	if (o.json)
		tpf_ui_json_version();

	struct tpf_session s;
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	int code = TPF_EXIT_ERROR;
	if (tpf_session_open(&s, &o, "OperationTypeApply"))
		goto done;
	if (planfile) {
		/* A saved plan is applied as planned, without a prompt; the
		 * refresh only finds worker addresses. */
		if (load_saved_plan(&s, planfile, &p) ||
		    tpf_refresh(s.prov, &s.fleet, &s.state, &s.live, &s.d))
			goto done;
		auto_approve = 1;
	} else {
		if (tpf_session_refresh(&s, 1) || tpf_session_plan(&s, 0, &p))
			goto done;
		if (!o.json)
			tpf_ui_say("\n");
		tpf_ui_plan(&p);
	}
	if (!tpf_plan_has_changes(&p)) {
		if (o.json)
			tpf_ui_json("info", "change_summary",
				    "Apply complete! Resources: 0 added, 0 changed, 0 destroyed.",
				    json_pack("{s:{s:i,s:i,s:i,s:s}}", "changes", "add", 0, "change", 0,
					      "remove", 0, "operation", "apply"));
		else
			tpf_ui_say("\nApply complete! Resources: 0 added, 0 changed, 0 destroyed.\n");
		code = TPF_EXIT_OK;
		goto done;
	}
	if (!input && !auto_approve) {
		tpf_error(&s.d, "apply needs approval but -input=false was given; add -auto-approve");
		goto done;
	}
	code = tpf_run_apply(&s, &p, auto_approve, 0);
done:
	tpf_ui_diags(&s.d);
	if (tpf_diags_errors(&s.d))
		code = TPF_EXIT_ERROR;
	tpf_plan_release(&p);
	tpf_session_close(&s);
	return code;
}
