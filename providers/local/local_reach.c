/*
 * Can a local worker be reached now? Only while its node is READY and its
 * home is there, as SSH to a VM works only while the VM runs. Both the
 * transport (connect, put, exec: local_transport.c) and its chore ops
 * (local_chores.c) ask, so the answer lives here, below both.
 */
#include "model/node_state.h"
#include "providers/local/local_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int tpf_local_locate(const char *root, const char *node_name, int worker, const char *address,
		     char **home_out, struct tpf_diags *d)
{
	struct tpf_local_node node = { 0 };
	char *home = NULL;
	int err;

	*home_out = NULL;
	if (!tpf_local_name_valid(node_name))
		return tpf_errorx(d, address, NULL, "cannot reach worker '%s': node name '%s' is not valid",
				  address, node_name ? node_name : "");
	err = tpf_local_node_load(root, node_name, 1, &node, d);
	if (err == TPF_ENOTFOUND) {
		tpf_errorx(d, address, NULL, "cannot reach worker '%s': node '%s' does not exist",
			   address, node_name);
		err = TPF_EUNREACHABLE;
		goto done;
	}
	if (err < 0)
		goto done;
	if (!tpf_worker_in_range(worker, node.recipe.workers > 0 ? (size_t)node.recipe.workers : 0)) {
		err = tpf_errorx(d, address, NULL,
				 "cannot reach worker '%s': node '%s' has %d worker%s (0 to %d)",
				 address, node_name, node.recipe.workers,
				 node.recipe.workers == 1 ? "" : "s", node.recipe.workers - 1);
		goto done;
	}
	if (tpf_node_state_of(node.state) != TPF_NODE_STATE_READY) {
		tpf_errorx(d, address, "a worker can be reached only while its node is READY",
			   "cannot reach worker '%s': node '%s' is %s", address, node_name, node.state);
		err = TPF_EUNREACHABLE;
		goto done;
	}
	home = tpf_local_home_path(root, node_name, worker);
	struct stat st;
	if (stat(home, &st) < 0 || !S_ISDIR(st.st_mode)) {
		tpf_errorx(d, address, NULL, "cannot reach worker '%s': its home '%s' is missing",
			   address, home);
		err = TPF_EUNREACHABLE;
		goto done;
	}
	*home_out = home;
	home = NULL;
done:
	free(home);
	tpf_local_node_release(&node);
	return err;
}

int tpf_local_still_reachable(struct tpf_conn *c, struct tpf_diags *d)
{
	char *home = NULL;
	int err = tpf_local_locate(c->root, c->node, c->worker, c->address, &home, d);
	free(home);
	return err;
}
