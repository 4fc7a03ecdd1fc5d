/*
 * Talking to a worker (engine/workers/provision_internal.h): its endpoint, a
 * connection that pins its host key, and one command run on it.
 */
#include "engine/workers/provision_internal.h"
#include "util/xalloc.h"

#include <stdlib.h>

const struct tpf_endpoint *tpf_prov_worker_endpoint(const struct tpf_live_node *live, int worker)
{
	if (!live || !tpf_worker_in_range(worker, live->nendpoints))
		return NULL;
	return &live->endpoints[worker];
}

/* How the transport reaches worker `worker` of n (pointers into n and
 * live). */
static struct tpf_worker_ref worker_ref(const struct tpf_state_node *n,
					const struct tpf_live_node *live, int worker,
					int read_only, int once)
{
	const struct tpf_state_worker *sw = tpf_state_node_worker(n, worker);
	return (struct tpf_worker_ref){
		.node = n->name,
		.node_id = n->id,
		.worker = worker,
		.nworkers = tpf_node_worker_count(n),
		.endpoint = tpf_prov_worker_endpoint(live, worker),
		.host_key = sw ? sw->host_key : NULL,
		.read_only = read_only,
		.once = once,
	};
}

int tpf_prov_open_worker(struct tpf_transport *t, const struct tpf_state_node *n,
			 const struct tpf_live_node *live, int worker, int read_only, int once,
			 struct tpf_conn **c, char **host_key, struct tpf_diags *d)
{
	struct tpf_worker_ref ref = worker_ref(n, live, worker, read_only, once);
	*c = NULL;
	if (host_key)
		*host_key = NULL;
	return t->ops->connect(t, &ref, c, host_key, d);
}

/*
 * Run `command` on the worker; on success out holds its output. soft: an
 * unreachable worker gives TPF_EUNREACHABLE with the reason as a warning
 * only (a probe of a preempted node is not an error); otherwise the
 * connect diagnostics stay errors. read_only: see tpf_worker_ref.
 */
int tpf_prov_run(struct tpf_transport *t, const struct tpf_state_node *n,
		 const struct tpf_live_node *live, int worker, const char *command,
		 double timeout, struct tpf_buf *out, int *status, char **host_key,
		 int soft, int read_only, int once, int *reachable, struct tpf_diags *d)
{
	struct tpf_conn *c = NULL;
	char *addr = xasprintf("%s/w%d", n->name, worker);
	struct tpf_diags local = TPF_DIAGS_INIT;
	int err;

	*reachable = 0;
	err = tpf_prov_open_worker(t, n, live, worker, read_only, once, &c, host_key, &local);
	if (!err) {
		*reachable = 1;
		err = t->ops->exec(c, command, out, status, timeout, &local);
		if (err == TPF_EUNREACHABLE)
			*reachable = 0;
	}
	if (err == TPF_EUNREACHABLE && soft) {
		/* Expected while a node is preempted or booting: the caller
		 * reports it; the reason is kept as a warning. */
		for (size_t i = 0; i < local.n; i++)
			tpf_diags_add(d, TPF_SEV_WARNING,
				      local.items[i].address ? local.items[i].address : addr,
				      local.items[i].summary, local.items[i].detail);
	} else {
		tpf_diags_move(d, &local);
	}
	if (c)
		t->ops->close(c);
	tpf_diags_release(&local);
	free(addr);
	return err;
}

int tpf_provision_connect(struct tpf_transport *t, const struct tpf_state_node *n,
			  const struct tpf_live_node *live, int worker, struct tpf_conn **c,
			  struct tpf_diags *d)
{
	return tpf_prov_open_worker(t, n, live, worker, 1, 1, c, NULL, d);
}

int tpf_provision_can_dial(const struct tpf_transport *t)
{
	return t->ops->dial_start && t->ops->dial_step && t->ops->dial_finish &&
	       t->ops->dial_free;
}

int tpf_prov_dial_start(struct tpf_transport *t, const struct tpf_state_node *n,
			const struct tpf_live_node *live, int worker, int read_only, int once,
			struct tpf_dial **out, struct tpf_diags *d)
{
	struct tpf_worker_ref ref = worker_ref(n, live, worker, read_only, once);
	*out = NULL;
	return t->ops->dial_start(t, &ref, out, d);
}

int tpf_provision_dial_start(struct tpf_transport *t, const struct tpf_state_node *n,
			     const struct tpf_live_node *live, int worker, struct tpf_dial **out,
			     struct tpf_diags *d)
{
	return tpf_prov_dial_start(t, n, live, worker, 1, 1, out, d);
}
