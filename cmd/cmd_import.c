/*
 * tpuform import NODE ZONE/NAME: adopt a TPU created outside tpuform, as
 * `terraform import ADDRESS ID` does, with Terraform's lines (observed
 * with terraform 1.11, docs/terraform-behaviour.md section 5). The work
 * is the engine's (engine/pipeline/targeted.h tpf_pipeline_import).
 */
#include "cmd/cmd.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* "tpuform-fleet=f, tpuform-group=a, ..." */
static char *labels_text(const struct tpf_kvlist *l)
{
	struct tpf_buf b = TPF_BUF_INIT;
	for (size_t i = 0; i < l->n; i++)
		tpf_buf_addf(&b, "%s%s=%s", i ? ", " : "", l->items[i].key,
			     l->items[i].value ? l->items[i].value : "");
	return tpf_buf_detach(&b, NULL);
}

static int run_import(struct tpf_cmd_ctx *ctx)
{
	const char *node = ctx->args[0], *id = ctx->args[1];
	struct tpf_live_node ln;
	memset(&ln, 0, sizeof(ln));
	tpf_ui_say("%s: Importing from ID \"%s\"...\n", node, id);
	int rc = tpf_pipeline_import(&ctx->s, node, id, &ln);
	if (rc == 0) {
		char *labels = labels_text(&ln.recipe.labels);
		tpf_ui_say("%s: Import prepared!\n  Prepared node for import\n"
			   "%s: Refreshing state... [id=%s]\n%s: Labelled: %s\n",
			   node, node, ln.id ? ln.id : "", node, labels);
		free(labels);
		tpf_cmd_print_diags(ctx); /* warnings, before the last words */
		tpf_ui_say("\nImport successful!\n\nThe resources that were imported are shown above. "
			   "These resources are now in your tpuform state and will henceforth be "
			   "managed by tpuform.\n\n");
	}
	tpf_live_node_release(&ln);
	return rc ? TPF_EXIT_ERROR : TPF_EXIT_OK;
}

const struct tpf_cmd tpf_cmd_import = {
	.name = "import",
	.summary = "Adopt a TPU created outside tpuform",
	.description = "  Bring an existing TPU under this fleet: read node NAME in ZONE (the one\n"
		       "  node without this fleet's labels tpuform reads), give it the labels of\n"
		       "  declared node NODE (tpuform-fleet, -group, -index and its group's\n"
		       "  labels; labels it had are replaced) and record it in the state. NODE\n"
		       "  must be declared, not in the state yet, and NAME must be NODE. The\n"
		       "  next plan provisions its workers.\n",
	.footer = "Example: tpuform import mf-train-0 us-central2-b/mf-train-0\n",
	.min_args = 2,
	.max_args = 2,
	.args_name = "NODE ZONE/NAME",
	.args = TPF_ARGS_NODE,
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_LOCK | TPF_CMD_PROVIDER,
	.lock_op = "OperationTypeInvalid", /* what Terraform's import records, as state rm */
	.signals = TPF_SIG_GRACEFUL,
	.run = run_import,
};
