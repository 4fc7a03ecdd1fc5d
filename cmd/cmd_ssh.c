/*
 * tpuform ssh NODE: an interactive shell on one of the node's workers
 * (ssh for gcp nodes; a shell in the worker's home for local ones).
 */
#include "cmd/cmd.h"
#include "engine/refresh.h"

static struct {
	int worker;
} ssh_o;

static const struct tpf_flag ssh_flags[] = {
	TPF_INT("worker", 0, 4095, &ssh_o.worker, "the worker to log in to"),
	TPF_FLAGS_END,
};

static int run_ssh(struct tpf_cmd_ctx *ctx)
{
	struct tpf_session *s = &ctx->s;
	struct tpf_state_node *sn;
	const struct tpf_live_node *ln;
	struct tpf_transport *t;
	if (tpf_refresh(s->prov, &s->fleet, &s->state, &s->live, &s->d) ||
	    tpf_session_target_worker(s, ctx->args[0], ssh_o.worker, &sn, &ln, &t))
		return TPF_EXIT_ERROR;
	int w = ssh_o.worker;
	struct tpf_worker_ref ref = {
		.node = sn->name, .node_id = sn->id, .worker = w,
		.nworkers = (int)sn->nworkers,
		.endpoint = (size_t)w < ln->nendpoints ? &ln->endpoints[w] : NULL,
		.host_key = sn->workers[w].host_key,
	};
	t->ops->interactive(t, &ref, &s->d); /* returns only on failure */
	return TPF_EXIT_ERROR;
}

const struct tpf_cmd tpf_cmd_ssh = {
	.name = "ssh",
	.summary = "Open a shell on a worker",
	.description = "  Open an interactive shell on worker 0 of NODE (or -worker N). The job\n"
		       "  runs in a screen session there: 'screen -ls' lists it.\n",
	.flags = ssh_flags,
	.min_args = 1,
	.max_args = 1,
	.args_name = "NODE",
	.needs = TPF_CMD_FLEET | TPF_CMD_STATE | TPF_CMD_PROVIDER,
	.signals = TPF_SIG_STOP,
	.run = run_ssh,
};
