/*
 * tpuform local preempt|terminate NODE: what a preemption does to a real
 * TPU, on the embedded local provider, so the replace path can be seen.
 */
#include "cmd/cmd.h"
#include "providers/local/local.h"

#include <stdlib.h>
#include <string.h>

int cmd_local(int argc, char **argv)
{
	struct tpf_common_opts o = TPF_COMMON_OPTS_INIT;
	struct tpf_flag flags[] = { TPF_COMMON_FLAGS(o), { 0 } };
	const char *sub = argc > 0 ? argv[0] : NULL;
	if (!sub || (strcmp(sub, "preempt") && strcmp(sub, "terminate"))) {
		printf("Usage: tpuform local preempt|terminate [-f FILE] NODE...\n\n"
		       "  Preempt (or terminate) a node of the local provider: its state becomes\n"
		       "  PREEMPTED (TERMINATED) and its workers' jobs are killed, as on Cloud TPU.\n");
		return sub && (!strcmp(sub, "-help") || !strcmp(sub, "--help")) ? TPF_EXIT_OK
										 : TPF_EXIT_ERROR;
	}
	char **pos;
	int npos;
	if (tpf_parse_flags("local", argc - 1, argv + 1, flags, &pos, &npos))
		return TPF_EXIT_ERROR;
	tpf_ui_init(o.no_color, 0);
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_fleet f;
	memset(&f, 0, sizeof(f));
	int code = TPF_EXIT_ERROR;
	if (tpf_fleet_load(&f, o.file, &d))
		goto done;
	if (f.provider != TPF_PROVIDER_LOCAL) {
		tpf_error(&d, "fleet '%s' does not use the local provider", f.name);
		goto released;
	}
	if (npos < 1) {
		tpf_error(&d, "name the node to %s", sub);
		goto released;
	}
	code = TPF_EXIT_OK;
	for (int i = 0; i < npos; i++) {
		if (tpf_local_preempt(&f, pos[i], !strcmp(sub, "preempt") ? "PREEMPTED" : "TERMINATED",
				      &d))
			code = TPF_EXIT_ERROR;
		else
			printf("%s: %s\n", pos[i], !strcmp(sub, "preempt") ? "PREEMPTED" : "TERMINATED");
	}
released:
	tpf_fleet_release(&f);
done:
	free(pos);
	tpf_ui_diags(&d);
	tpf_diags_release(&d);
	return code;
}
