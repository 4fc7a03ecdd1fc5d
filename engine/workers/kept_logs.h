/*
 * Logs that outlive nodes (issue 19 item 8; docs/commands.md "logs"):
 * before tpuform deletes a node it keeps the tail of each worker's job
 * log, and `tpuform logs NODE -previous` reads them back.
 *
 * Where: beside the state. A state file at PATH keeps them in the
 * directory PATH.logs/NODE/gGEN-wN.log (mode 0600, directories 0700); a
 * state in Cloud Storage (state.gcs) keeps them as the objects
 * PREFIX/FLEET.logs/NODE/gGEN-wN.log of the state's bucket, with the
 * state's credentials (google/gcs.h). GEN is the node's generation
 * (TPUFORM_RETRY's base), N the worker.
 *
 * Bounds: the last TPF_KEPT_LINES lines of each worker's log, then at most
 * the last TPF_KEPT_BYTES of those (cut at a line start); the newest
 * TPF_KEPT_GENERATIONS generations of each node (older ones are deleted
 * when a new one is kept). So a node's kept logs take at most
 * 5 x 64 KiB per worker.
 */
#ifndef TPF_ENGINE_KEPT_LOGS_H
#define TPF_ENGINE_KEPT_LOGS_H

#include "config/config.h"
#include "model/live.h"
#include "providers/transport.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/diag.h"

#define TPF_KEPT_LINES 1000
#define TPF_KEPT_BYTES ((size_t)64 << 10)
#define TPF_KEPT_GENERATIONS 5

struct tpf_kept_store;

/* One kept log: a worker of a generation of a node. */
struct tpf_kept_log {
	int generation;
	int worker;
	char *name; /* "gGEN-wN.log" */
};

/*
 * Open the store of fleet f's kept logs (no request, no file touched
 * yet). TPF_ERROR with a diagnostic when the Cloud Storage client cannot
 * be made (a bad endpoint or credentials). Free with tpf_kept_close
 * (NULL ok).
 */
int tpf_kept_open(struct tpf_kept_store **out, const struct tpf_fleet *f, struct tpf_diags *d);
void tpf_kept_close(struct tpf_kept_store *ks);

/* Where node's kept logs are, for people: "PATH.logs/NODE/" or
 * "gs://BUCKET/PREFIX/FLEET.logs/NODE/". Caller frees. */
char *tpf_kept_where(const struct tpf_kept_store *ks, const char *node);

/*
 * Keep the tail of the job log of every provisioned worker of sn (a node
 * about to be deleted; ln its live node, READY) over transport t, the
 * transport `tpuform logs` uses, then drop generations past
 * TPF_KEPT_GENERATIONS. Never fails: what could not be fetched or
 * written is a warning in d (the delete goes ahead; the state is not
 * touched). Returns the number of workers whose log was kept.
 */
int tpf_kept_keep(struct tpf_kept_store *ks, struct tpf_transport *t,
		  const struct tpf_state_node *sn, const struct tpf_live_node *ln,
		  struct tpf_diags *d);

/*
 * The kept logs of node, newest generation first, then by worker. *out
 * (free with tpf_kept_free) may be empty (n = 0): none kept. TPF_ERROR
 * with a diagnostic when the store cannot be read.
 */
int tpf_kept_list(struct tpf_kept_store *ks, const char *node, struct tpf_kept_log **out,
		  size_t *n, struct tpf_diags *d);
void tpf_kept_free(struct tpf_kept_log *k, size_t n);

/* The text of one kept log, appended to out. TPF_ERROR with a diagnostic. */
int tpf_kept_read(struct tpf_kept_store *ks, const char *node, const struct tpf_kept_log *k,
		  struct tpf_buf *out, struct tpf_diags *d);

#endif
