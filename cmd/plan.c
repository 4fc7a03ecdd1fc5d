/*
 * tpuform plan: refresh, diff, print; nothing is changed.
 */
#include "cmd/cmd.h"
#include "engine/saved_plan.h"

#include <stdlib.h>
#include <string.h>

static void help(const struct tpf_flag *flags)
{
	printf("Usage: tpuform plan [options]\n\n"
	       "  Refresh the fleet's nodes from the provider, compare them with the fleet\n"
	       "  file and the state, and show what apply would change. Changes nothing.\n\n"
	       "Options:\n");
	tpf_print_flags(stdout, flags);
	printf("\nExit codes: 0 success, 1 error; with -detailed-exitcode 0 no changes,\n"
	       "1 error, 2 success with changes, 3 no changes but the fleet is not as\n"
	       "declared (restarts used up, waiting for quota or a queued resource).\n");
}

int cmd_plan(int argc, char **argv)
{
	struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
	int detailed = 0, destroy = 0, show_help = 0;
	const char *out = NULL;
	struct tpf_flag flags[] = {
		TPF_COMMON_FLAGS(o),
		{ "detailed-exitcode", NULL, TPF_FLAG_BOOL, &detailed, "exit 2 with changes, 3 with none but not as declared" },
		{ "out", NULL, TPF_FLAG_STRING, &out, "save the plan to a file for 'tpuform apply FILE'" },
		{ "destroy", NULL, TPF_FLAG_BOOL, &destroy, "plan to destroy everything the fleet owns" },
		{ "refresh", NULL, TPF_FLAG_BOOL, &o.refresh, "refresh from the provider (default true)" },
		{ "parallelism", NULL, TPF_FLAG_INT, &o.parallelism, "concurrent worker probes (default 10)" },
		{ "help", "h", TPF_FLAG_BOOL, &show_help, "show this help" },
		{ 0 },
	};
	char **pos;
	int npos;
	if (tpf_parse_flags("plan", argc, argv, flags, &pos, &npos))
		return TPF_EXIT_ERROR;
	free(pos);
	if (show_help) {
		help(flags);
		return TPF_EXIT_OK;
	}
	tpf_ui_init(o.no_color, o.json);
	if (o.json)
		tpf_ui_json_version();

	struct tpf_session s;
	int code = TPF_EXIT_ERROR;
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	if (tpf_cmd_session_open(&s, &o, NULL) || tpf_session_refresh(&s, 1) ||
	    tpf_session_plan(&s, destroy, &p))
		goto done;
	if (!o.json)
		tpf_ui_say("\n");
	tpf_ui_plan(&p);
	if (out) {
		if (tpf_saved_plan_write(&p, out, &s.d))
			goto done;
		tpf_ui_say("\nSaved the plan to: %s\n\nTo perform exactly these actions, run the "
			   "following command to apply:\n    tpuform apply \"%s\"\n",
			   out, out);
	} else if (tpf_plan_has_changes(&p) && !getenv("TPUFORM_IN_AUTOMATION")) {
		tpf_ui_say("\n─────────────────────────────────────────────────────────────────────────────\n\n"
			   "Note: You didn't use the -out option to save this plan, so tpuform can't\n"
			   "guarantee to take exactly these actions if you run \"tpuform apply\" now.\n");
	}
	code = !detailed || tpf_plan_converged(&p) ? TPF_EXIT_OK
	       : tpf_plan_has_changes(&p)         ? TPF_EXIT_CHANGES
						  : TPF_EXIT_NOT_DECLARED;
done:
	tpf_ui_diags(&s.d);
	if (tpf_diags_errors(&s.d))
		code = TPF_EXIT_ERROR;
	tpf_plan_release(&p);
	tpf_session_close(&s);
	return code;
}
