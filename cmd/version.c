/*
 * tpuform version (also `tpuform -version`).
 */
#include "cmd/cmd.h"

static int run_version(struct tpf_cmd_ctx *ctx)
{
	(void)ctx;
	printf("tpuform v%s\n", TPF_VERSION);
	return TPF_EXIT_OK;
}

const struct tpf_cmd tpf_cmd_version = {
	.name = "version",
	.summary = "Print the tpuform version",
	.description = "  Print the version of this tpuform.\n",
	.max_args = 0,
	.run = run_version,
};
