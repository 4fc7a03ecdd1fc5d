/*
 * tpuform state list|show|rm|pull|push — Terraform's state subcommands.
 * They read (or, for rm and push, write) the state through its backend
 * (a file or Cloud Storage, state/backend.h) and never ask the provider. `rm` forgets nodes without
 * destroying them (they keep their labels, so the next plan offers to adopt
 * them while they are still declared).
 */
#include "cmd/cmd.h"
#include "engine/pipeline/state_commands.h"
#include "engine/state_store.h"

#include <stdlib.h>
#include <string.h>

static void print_json(json_t *j)
{
	char *text = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
	printf("%s\n", text);
	free(text);
}

static int run_list(struct tpf_cmd_ctx *ctx)
{
	for (size_t i = 0; i < ctx->s.state.nnodes; i++)
		printf("%s\n", ctx->s.state.nodes[i].name);
	return TPF_EXIT_OK;
}

static int run_pull(struct tpf_cmd_ctx *ctx)
{
	json_t *j = tpf_state_to_json(&ctx->s.state);
	print_json(j);
	json_decref(j);
	return TPF_EXIT_OK;
}

static int run_show(struct tpf_cmd_ctx *ctx)
{
	const char *name = ctx->args[0];
	json_t *j = tpf_state_to_json(&ctx->s.state);
	json_t *nodes = json_object_get(j, "nodes");
	int found = 0;
	size_t i;
	json_t *n;
	json_array_foreach(nodes, i, n) {
		if (!found && !strcmp(json_string_value(json_object_get(n, "name")), name)) {
			print_json(n);
			found = 1;
		}
	}
	json_decref(j);
	if (found)
		return TPF_EXIT_OK;
	tpf_errorx(ctx->d, NULL, "'tpuform state list' shows the nodes in state.",
		   "node '%s' is not in the state", name);
	return TPF_EXIT_ERROR;
}

static int run_rm(struct tpf_cmd_ctx *ctx)
{
	struct tpf_pipeline *s = &ctx->s;
	int removed = 0;
	for (int i = 0; i < ctx->nargs && !tpf_interrupted; i++) {
		if (tpf_state_remove(&s->state, ctx->args[i])) {
			printf("Removed %s\n", ctx->args[i]);
			removed++;
		} else {
			tpf_error(&s->d, "node '%s' is not in the state", ctx->args[i]);
		}
	}
	if (removed && !tpf_state_save(&s->state, &s->d))
		printf("Successfully removed %d resource instance(s).\n", removed);
	return tpf_diags_errors(&s->d) || tpf_interrupted ? TPF_EXIT_ERROR : TPF_EXIT_OK;
}

static struct {
	int force;
} push_o;

static const struct tpf_flag push_flags[] = {
	TPF_BOOL("force", &push_o.force, "write even if the lineage differs or the serial is older"),
	TPF_FLAGS_END,
};

static int run_push(struct tpf_cmd_ctx *ctx)
{
	long serial = 0;
	if (tpf_pipeline_state_push(&ctx->s, ctx->args[0], push_o.force, &serial))
		return TPF_EXIT_ERROR;
	tpf_ui_say("Pushed '%s' to %s (serial %ld, lineage %s).\n", ctx->args[0],
		   ctx->s.fleet.state_path, serial, ctx->s.state.lineage);
	return TPF_EXIT_OK;
}

#define STATE_READ (TPF_CMD_FLEET | TPF_CMD_STATE)

static const struct tpf_cmd state_list = {
	.name = "list",
	.summary = "List the nodes in the state",
	.description = "  Print the name of every node in the state, one a line.\n",
	.needs = STATE_READ,
	.signals = TPF_SIG_STOP,
	.run = run_list,
};

static const struct tpf_cmd state_show = {
	.name = "show",
	.summary = "Show one node's recipe, job and workers (JSON)",
	.description = "  Print NODE's entry in the state as JSON: its recipe, job, generation\n"
		       "  and workers.\n",
	.min_args = 1,
	.max_args = 1,
	.args_name = "NODE",
	.args = TPF_ARGS_NODE,
	.needs = STATE_READ,
	.signals = TPF_SIG_STOP,
	.run = run_show,
};

static const struct tpf_cmd state_rm = {
	.name = "rm",
	.summary = "Forget nodes without destroying them (a backup is kept)",
	.description = "  Remove each NODE from the state without touching the node itself. It\n"
		       "  keeps the fleet's labels, so the next plan offers to adopt it while it\n"
		       "  is still declared, or to delete it as an orphan.\n",
	.min_args = 1,
	.max_args = -1,
	.args_name = "NODE...",
	.args = TPF_ARGS_NODE,
	.needs = STATE_READ | TPF_CMD_LOCK,
	.lock_op = "OperationTypeInvalid", /* what Terraform's state rm records */
	.signals = TPF_SIG_GRACEFUL,
	.run = run_rm,
};

static const struct tpf_cmd state_pull = {
	.name = "pull",
	.summary = "Print the state file",
	.description = "  Print the whole state as JSON, with sorted keys.\n",
	.needs = STATE_READ,
	.signals = TPF_SIG_STOP,
	.run = run_pull,
};

static const struct tpf_cmd state_push = {
	.name = "push",
	.summary = "Write a state file (or another backend's state) as this fleet's state",
	.description =
		"  Replace the fleet's state with SOURCE: a state file (such as errored.tfstate,\n"
		"  left by a write that failed), or gs://BUCKET[/PREFIX], the Cloud Storage\n"
		"  location of PREFIX/FLEET.tfstate. As Terraform's, it refuses a state of\n"
		"  another lineage or with an older serial, unless -force.\n"
		"  This is also how state moves: change the fleet file's 'state:' to the new\n"
		"  place, then push the old one (a file, or gs://BUCKET/PREFIX). SOURCE is\n"
		"  left as it was.\n",
	.flags = push_flags,
	.min_args = 1,
	.max_args = 1,
	.args_name = "SOURCE",
	.args = TPF_ARGS_FILE,
	.needs = STATE_READ | TPF_CMD_LOCK,
	.lock_op = "OperationTypeInvalid",
	.signals = TPF_SIG_GRACEFUL,
	.run = run_push,
};

static const struct tpf_cmd *const state_subs[] = {
	&state_list, &state_show, &state_rm, &state_pull, &state_push, NULL,
};

const struct tpf_cmd tpf_cmd_state = {
	.name = "state",
	.summary = "Inspect or edit the state (list, show, rm, pull, push)",
	.description = "  Read the fleet's state, or forget nodes, as Terraform's state commands do.\n",
	.subs = state_subs,
};
