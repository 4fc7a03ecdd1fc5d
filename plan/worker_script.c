/*
 * The bootstrap script a worker gets: rendered from the state node, the
 * fleet and the live node, with no I/O, so that plan/diff.c can compare the
 * hash of the script a worker would get now with the one it runs.
 */
#include "plan/worker_script.h"
#include "plan/elastic.h"
#include "plan/script_hash_memo.h"
#include "templates/render.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

char *tpf_session_name(const char *fleet)
{
	return xasprintf("tpuform-%s", fleet ? fleet : "");
}

const char *tpf_worker_source_mode(const struct tpf_fleet *f, const struct tpf_state_node *n)
{
	if (!n->job.commit || !*n->job.commit)
		return "none";
	if (f->provider == TPF_PROVIDER_LOCAL)
		return "present";
	return f->source.transfer == TPF_TRANSFER_BUNDLE ? "bundle" : "clone";
}

int tpf_node_worker_count(const struct tpf_state_node *n)
{
	return n->recipe.workers > 0 ? n->recipe.workers : 1;
}

/* TPUFORM_RETRY: the node's generation plus the restarts tpuform made of
 * this worker in that generation (docs/design.md section 5: +1 at each re-creation or
 * restart; engine/apply/apply.c bumps workers[w].restarts on a restart). A restart
 * unit of several workers is restarted as one: apply gives every member the
 * unit's count (the most any had) + 1, so this is then generation + the
 * unit's restarts, the same on every worker of the unit. */
static int worker_retry(const struct tpf_state_node *n, int worker)
{
	const struct tpf_state_worker *sw = tpf_state_node_worker(n, worker);
	return n->generation + (sw ? sw->restarts : 0);
}

/* An endpoint's address as workers reach each other: internal first. */
static const char *peer_address(const struct tpf_endpoint *e)
{
	return e->ip ? e->ip : e->external_ip ? e->external_ip : "";
}

/*
 * TPU_WORKER_HOSTNAMES of worker `worker`'s slice (templates/render.h):
 * only for a multi-host slice on Compute Engine, whose live endpoints are
 * known. Workers are numbered slice by slice, in the provider's stable
 * order (docs/compute-engine.md), so the list is the same on every worker
 * of the slice. Caller frees; NULL: none.
 */
static char *slice_hostnames(const struct tpf_state_node *n, const struct tpf_live_node *live,
			     int worker)
{
	int per = tpf_recipe_slice_workers(&n->recipe);
	if (n->recipe.compute.api != TPF_API_COMPUTE || per < 2 || !live)
		return NULL;
	size_t first = (size_t)(worker / per) * (size_t)per;
	if (first + (size_t)per > live->nendpoints)
		return NULL;
	struct tpf_buf b = TPF_BUF_INIT;
	for (size_t i = first; i < first + (size_t)per; i++)
		tpf_buf_addf(&b, "%s%s", i > first ? "," : "", peer_address(&live->endpoints[i]));
	return tpf_buf_detach(&b, NULL);
}

/* What the script of worker `worker` is rendered from. The strings it
 * points to are n's, f's, live's and the three given here, which the caller
 * frees after rendering. */
static struct tpf_bootstrap_params worker_params(const struct tpf_fleet *f,
						 const struct tpf_state_node *n,
						 const struct tpf_live_node *live, int worker,
						 const char *session, const char *secrets_hash)
{
	int nworkers = tpf_node_worker_count(n);
	const char *coordinator = NULL;
	const struct tpf_job_policy *pol = tpf_fleet_job_policy(f, n->group);
	/* Multislice (docs/design.md section 9): workers are numbered slice
	 * by slice, so a worker's slice is its index divided by the workers
	 * of one slice; while an elastic job runs on some of its slices, the
	 * running ones are numbered 0 .. k-1 and the first of them
	 * coordinates (plan/elastic.h). */
	struct tpf_elastic_view ev;
	tpf_elastic_view(n, worker, &ev);

	if (live && (size_t)ev.first < live->nendpoints && nworkers > 1)
		coordinator = live->endpoints[ev.first].ip ? live->endpoints[ev.first].ip
							   : live->endpoints[ev.first].external_ip;
	struct tpf_bootstrap_params p = {
		.fleet = f->name,
		.node = n->name,
		.worker = worker,
		.nworkers = nworkers,
		.retry = worker_retry(n, worker),
		.commit = n->job.commit,
		.repo = n->job.repo,
		.source_mode = tpf_worker_source_mode(f, n),
		.setup = n->job.setup,
		.run = n->job.run,
		.env = &n->job.env,
		.session = session,
		.coordinator = coordinator,
		.slice = ev.slice,
		.nslices = ev.nslices,
		.secrets_hash = secrets_hash,
		.slice_worker = worker % tpf_recipe_slice_workers(&n->recipe),
		.tpu_busy = tpf_tpu_busy_word(pol->tpu_busy),
		.preflight = pol->preflight,
		.preflight_timeout = (int)pol->preflight_timeout,
		.require_devices = pol->require_tpu_devices,
		.disruption_signal = tpf_disruption_signal_name(pol->disruption_signal),
		.disruption_grace = (int)(pol->disruption_grace + 0.5),
	};
	const struct tpf_storage *st = tpf_fleet_storage(f, n->group);
	p.nmounts = st->nmounts;
	p.no_gcsfuse_install = st->no_gcsfuse_install;
	p.checkpoint_url = st->checkpoint_dir;
	return p;
}

/* The mounts of the node's group (or the fleet's) as the script takes
 * them; caller frees the array (its strings are f's). NULL when none. */
static struct tpf_bootstrap_mount *script_mounts(const struct tpf_storage *st)
{
	if (!st->nmounts)
		return NULL;
	struct tpf_bootstrap_mount *ms = xcalloc(st->nmounts, sizeof(*ms));
	for (size_t i = 0; i < st->nmounts; i++) {
		ms[i].path = st->mounts[i].path;
		ms[i].bucket = st->mounts[i].bucket;
		ms[i].prefix = st->mounts[i].prefix;
		ms[i].copy = st->mounts[i].mode == TPF_MOUNT_COPY;
		ms[i].read_only = st->mounts[i].read_only;
	}
	return ms;
}

/* The hash of the secrets file (tpf_secrets_render) the script records. */
static char *script_secrets_hash(const struct tpf_fleet *f)
{
	char *secrets = tpf_secrets_render(&f->secrets);
	char *h = tpf_sha256_tagged(secrets, strlen(secrets));
	free(secrets);
	return h;
}

/* A worker's bootstrap parameters and the strings they borrow. */
struct script_inputs {
	struct tpf_bootstrap_params p;
	char *session, *secrets_hash, *hosts, *elastic;
	struct tpf_bootstrap_mount *mounts;
};

static void inputs_make(struct script_inputs *in, const struct tpf_fleet *f,
			const struct tpf_state_node *n, const struct tpf_live_node *live,
			int worker)
{
	in->session = tpf_session_name(f->name);
	in->secrets_hash = script_secrets_hash(f);
	in->p = worker_params(f, n, live, worker, in->session, in->secrets_hash);
	in->hosts = slice_hostnames(n, live, worker);
	in->mounts = script_mounts(tpf_fleet_storage(f, n->group));
	in->p.slice_hostnames = in->hosts;
	in->p.mounts = in->mounts;
	/* $TPUFORM_ELASTIC: "RUNNING/DECLARED" slices, for elastic groups only */
	in->elastic = NULL;
	if (tpf_fleet_elastic(f, n->group) && tpf_recipe_slices(&n->recipe) > 1)
		in->elastic = xasprintf("%d/%d", in->p.nslices, tpf_recipe_slices(&n->recipe));
	in->p.elastic = in->elastic;
}

static void inputs_release(struct script_inputs *in)
{
	free(in->mounts);
	free(in->hosts);
	free(in->elastic);
	free(in->session);
	free(in->secrets_hash);
}

char *tpf_provision_render(const struct tpf_fleet *f, const struct tpf_state_node *n,
			   const struct tpf_live_node *live, int worker, char **hash_out)
{
	struct script_inputs in;
	inputs_make(&in, f, n, live, worker);
	char *script = tpf_bootstrap_render(&in.p);
	if (hash_out)
		*hash_out = tpf_sha256_tagged(script, strlen(script));
	inputs_release(&in);
	return script;
}

char *tpf_provision_hash(const struct tpf_fleet *f, const struct tpf_state_node *n,
			 const struct tpf_live_node *live, int worker)
{
	struct script_inputs in;
	inputs_make(&in, f, n, live, worker);
	/* The script is the head and the fixed body (render.h): the head
	 * alone decides the hash, which is made once per head
	 * (plan/script_hash_memo.h), not at every plan. */
	char *head = tpf_bootstrap_render_head(&in.p);
	inputs_release(&in);
	char *hash = tpf_script_hash_memo(head, tpf_template_bootstrap_sh);
	free(head);
	return hash;
}
