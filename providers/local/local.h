/*
 * The embedded `local` provider: Cloud TPU nodes simulated on this machine,
 * so that a newcomer can run all of tpuform without a cloud account and the
 * layers above (plan, apply, watch) are exercised for real.
 *
 * Layout under the fleet's provider.local.root (made absolute at open):
 *   nodes/<name>/node.json      the node, in the shape of the API's Node
 *                               (tests/fakegcp/tpu.v2.discovery.json):
 *                               name, id (19 decimal digits), zone,
 *                               acceleratorType, runtimeVersion,
 *                               schedulingConfig {preemptible, spot}, labels,
 *                               state, health, createTime (RFC 3339), plus
 *                               readyAt (epoch seconds, a number) and workers
 *   nodes/<name>/workers/<i>/   worker i's HOME (0700); its screen sockets
 *                               live in <home>/.screen, its TMPDIR is
 *                               <home>/tmp. SCREENDIR is <home>/.screen, or
 *                               when that path is too long for a Unix
 *                               socket, /tmp/tpuform-screen-<hash>, a
 *                               symbolic link to it (echo $SCREENDIR on
 *                               the worker to see which). A home over
 *                               244 bytes also gets SCREENRC=<home>/.screenrc
 *                               (screen cannot build that path itself);
 *                               homes over 2048 bytes are refused at create
 *   bucket/                     shared by every node, standing in for a GCS
 *                               bucket: checkpoints survive re-creation
 *   gcs/<bucket>/<prefix>/      what a gs:// URL of `mounts` or
 *                               `checkpoint_dir` stands for here
 *                               (docs/storage.md); a mount's path P is
 *                               <worker home>/mnt/P, a symbolic link to it
 *                               (mode: mount) or a copy (mode: copy)
 *   locks/<name>.lock           flock(2) per node name, serialising
 *                               read-modify-write of node.json between
 *                               threads and processes
 *
 * A node directory removed behind tpuform's back takes node.json with it,
 * but not what its workers run: the next listing (refresh), or a create of
 * the same name, stops those processes and removes their /tmp link
 * (local_orphans.c). A corrupt node.json is reported by the listing, with
 * a hint, and the other nodes are listed all the same.
 *
 * Node states follow the API: CREATING until readyAt, then READY (health
 * HEALTHY); DELETING while removed; PREEMPTED / TERMINATED / STOPPED only
 * through tpf_local_preempt (`tpuform local preempt`). Workers of a node
 * that is not READY are unreachable, as on GCP.
 *
 * Failure injection (read from the environment at each create, for tests):
 *   TPUFORM_LOCAL_FAIL_CREATE=name1,name2  create fails (TPF_ERROR) after a
 *                                          short delay, leaving no node
 *   TPUFORM_LOCAL_NO_CAPACITY=zone1,zone2  create fails with TPF_ECAPACITY
 *                                          and the API's stockout message
 *   TPUFORM_LOCAL_NO_QUOTA=zone1,zone2     create fails with TPF_EQUOTA and
 *                                          an API-style 429 quota message
 */
#ifndef TPF_LOCAL_H
#define TPF_LOCAL_H

#include "config/config.h"
#include "providers/provider.h"
#include "util/diag.h"

/* Open the local provider for fleet f (borrowed; outlives it): the row
 * "local" of providers/registry/registry.c. *out: caller frees with
 * tpf_provider_free. 0, or TPF_ERROR with a diagnostic. */
int tpf_local_provider_open(struct tpf_provider **out, const struct tpf_fleet *f,
			    struct tpf_diags *d);

/*
 * Simulate what Cloud TPU does to a node when its VMs go away: set the
 * node's state to new_state ("PREEMPTED" when NULL; also "TERMINATED" or
 * "STOPPED"), drop its health, and kill every screen session and process
 * of each of its workers. The node stays listed until deleted, as a
 * preempted node on GCP does (it keeps holding quota there).
 * Returns 0, TPF_ENOTFOUND when the node does not exist, or TPF_ERROR
 * (unknown state, I/O, processes that survived SIGKILL), with diagnostics.
 */
int tpf_local_preempt(const struct tpf_fleet *f, const char *node, const char *new_state,
		      struct tpf_diags *d);

/*
 * The home directory of worker `worker` (0-based) of `node` in *out
 * (absolute path; caller frees). The node may be in any state.
 * Returns 0, TPF_ENOTFOUND (no such node or worker, or an invalid node
 * name) or TPF_ERROR (no local root); *out is then NULL. No diagnostics:
 * callers say which node and worker they asked for.
 */
int tpf_local_worker_home(const struct tpf_fleet *f, const char *node, int worker, char **out);

#endif
