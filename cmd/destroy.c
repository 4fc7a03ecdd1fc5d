/*
 * tpuform destroy: delete every node the fleet owns (in state, or carrying
 * its labels), nothing else.
 */
#include "cmd/cmd.h"

#include <stdlib.h>
#include <string.h>

int cmd_destroy(int argc, char **argv)
{
	struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
	int auto_approve = 0, show_help = 0;
	struct tpf_flag flags[] = {
		TPF_COMMON_FLAGS(o),
		{ "auto-approve", NULL, TPF_FLAG_BOOL, &auto_approve, "skip the approval prompt" },
		{ "parallelism", NULL, TPF_FLAG_INT, &o.parallelism, "concurrent operations (default 10)" },
		{ "lock", NULL, TPF_FLAG_BOOL, &o.lock, "lock the state (default true)" },
		{ "lock-timeout", NULL, TPF_FLAG_DURATION, &o.lock_timeout, "wait this long for the state lock" },
		{ "help", "h", TPF_FLAG_BOOL, &show_help, "show this help" },
		{ 0 },
	};
	char **pos;
	int npos;
	if (tpf_parse_flags("destroy", argc, argv, flags, &pos, &npos))
		return TPF_EXIT_ERROR;
	free(pos);
	if (show_help) {
		printf("Usage: tpuform destroy [options]\n\n"
		       "  Delete every node this fleet owns: the nodes in its state and any node\n"
		       "  carrying its tpuform-fleet label. Nothing else is touched.\n\nOptions:\n");
		tpf_print_flags(stdout, flags);
		return TPF_EXIT_OK;
	}
	tpf_ui_init(o.no_color, o.json);
	tpf_install_signal_handlers();
	if (o.json)
		tpf_ui_json_version();

	struct tpf_session s;
	struct tpf_plan p;
	memset(&p, 0, sizeof(p));
	int code = TPF_EXIT_ERROR;
	struct tpf_session_opts so = tpf_cmd_session_opts(&o);
	so.no_source = 1; /* a vanished source repository must not block a destroy */
	if (tpf_session_open(&s, &so, "OperationTypeApply") || tpf_session_refresh(&s, 0) ||
	    tpf_session_plan(&s, 1, &p))
		goto done;
	if (!o.json)
		tpf_ui_say("\n");
	tpf_ui_plan(&p);
	if (!tpf_plan_has_changes(&p)) {
		tpf_ui_say("\nDestroy complete! Resources: 0 destroyed.\n");
		code = TPF_EXIT_OK;
		goto done;
	}
	code = tpf_run_apply(&s, &p, auto_approve, 1);
done:
	tpf_ui_diags(&s.d);
	if (tpf_diags_errors(&s.d))
		code = TPF_EXIT_ERROR;
	tpf_plan_release(&p);
	tpf_session_close(&s);
	return code;
}
