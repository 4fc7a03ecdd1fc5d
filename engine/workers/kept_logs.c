/*
 * Logs that outlive nodes (engine/workers/kept_logs.h): the store (a directory
 * beside a state file, or objects beside a state in Cloud Storage), the
 * fetch before a delete, and the reads of `logs -previous`.
 */
#include "engine/workers/kept_logs.h"
#include "engine/workers/provision.h"
#include "engine/state_store.h"
#include "state/objstore.h"
#include "util/pool.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tpf_kept_store {
	struct tpf_objstore *store; /* beside the state: "<state>.logs/" or "[PREFIX/]FLEET.logs/" */
};

int tpf_kept_open(struct tpf_kept_store **out, const struct tpf_fleet *f, struct tpf_diags *d)
{
	struct tpf_kept_store *ks = xcalloc(1, sizeof(*ks));
	*out = NULL;
	if (tpf_fleet_objstore_open(&ks->store, f, ".logs/", d)) {
		free(ks);
		return TPF_ERROR;
	}
	*out = ks;
	return 0;
}

void tpf_kept_close(struct tpf_kept_store *ks)
{
	if (!ks)
		return;
	tpf_objstore_free(ks->store);
	free(ks);
}

char *tpf_kept_where(const struct tpf_kept_store *ks, const char *node)
{
	char *dir = xasprintf("%s/", node);
	char *where = tpf_objstore_where(ks->store, dir);
	free(dir);
	return where;
}

/* ---- the store's operations ------------------------------------------------- */

static int store_put(struct tpf_kept_store *ks, const char *node, const char *name,
		     const char *data, size_t len, struct tpf_diags *d)
{
	char *obj = xasprintf("%s/%s", node, name);
	/* Only tpuform writes it, under the state lock: the same bytes
	 * twice are harmless, so a transient failure may be retried. */
	int rc = tpf_objstore_put(ks->store, obj, data, len, "text/plain", TPF_OBJ_REPEATABLE, NULL,
				  d);
	free(obj);
	return rc;
}

static int parse_name(const char *name, struct tpf_kept_log *k)
{
	int used = 0;
	if (sscanf(name, "g%d-w%d.log%n", &k->generation, &k->worker, &used) != 2 ||
	    name[used] || k->generation < 0 || k->worker < 0)
		return -1;
	k->name = xstrdup(name);
	return 0;
}

static int newest_first(const void *pa, const void *pb)
{
	const struct tpf_kept_log *a = pa, *b = pb;
	if (a->generation != b->generation)
		return a->generation > b->generation ? -1 : 1;
	return (a->worker > b->worker) - (a->worker < b->worker);
}

/* The names under node (files or objects), in no order. */
static int store_names(struct tpf_kept_store *ks, const char *node, char ***names, size_t *n,
		       struct tpf_diags *d)
{
	char *dir = xasprintf("%s/", node);
	int rc = tpf_objstore_list(ks->store, dir, names, n, d);
	free(dir);
	return rc;
}

static int store_delete(struct tpf_kept_store *ks, const char *node, const char *name,
			struct tpf_diags *d)
{
	char *obj = xasprintf("%s/%s", node, name);
	int rc = tpf_objstore_delete(ks->store, obj, TPF_OBJ_ANY, d);
	free(obj);
	return rc == TPF_ENOTFOUND ? 0 : rc;
}

int tpf_kept_list(struct tpf_kept_store *ks, const char *node, struct tpf_kept_log **out,
		  size_t *n, struct tpf_diags *d)
{
	char **names;
	size_t nn;
	*out = NULL;
	*n = 0;
	if (store_names(ks, node, &names, &nn, d))
		return TPF_ERROR;
	*out = xcalloc(nn + 1, sizeof(**out));
	for (size_t i = 0; i < nn; i++)
		if (!parse_name(names[i], &(*out)[*n]))
			(*n)++;
	tpf_objstore_names_free(names);
	qsort(*out, *n, sizeof(**out), newest_first);
	return 0;
}

void tpf_kept_free(struct tpf_kept_log *k, size_t n)
{
	for (size_t i = 0; k && i < n; i++)
		free(k[i].name);
	free(k);
}

int tpf_kept_read(struct tpf_kept_store *ks, const char *node, const struct tpf_kept_log *k,
		  struct tpf_buf *out, struct tpf_diags *d)
{
	char *obj = xasprintf("%s/%s", node, k->name);
	/* Twice the bound: a file written by hand may be larger. */
	int rc = tpf_objstore_get(ks->store, obj, 2 * TPF_KEPT_BYTES, "kept log", out, NULL, d);
	if (rc == TPF_ENOTFOUND) {
		char *where = tpf_objstore_where(ks->store, obj);
		rc = tpf_error(d, "kept log '%s' is gone", where);
		free(where);
	}
	free(obj);
	return rc;
}

/* ---- keeping ---------------------------------------------------------------- */

/* The last TPF_KEPT_BYTES of text, from a line start. */
static const char *tail_of(const char *text, size_t len, size_t *out_len)
{
	const char *p = text;
	if (len > TPF_KEPT_BYTES) {
		p = text + len - TPF_KEPT_BYTES;
		const char *nl = memchr(p, '\n', (size_t)(text + len - p));
		if (nl && nl + 1 < text + len)
			p = nl + 1;
	}
	*out_len = (size_t)(text + len - p);
	return p;
}

/* Drop the generations of node past the newest TPF_KEPT_GENERATIONS. */
static void prune(struct tpf_kept_store *ks, const char *node, struct tpf_diags *d)
{
	struct tpf_kept_log *k;
	size_t n;
	if (tpf_kept_list(ks, node, &k, &n, d))
		return;
	int seen = 0, last = -1;
	for (size_t i = 0; i < n; i++) {
		if (k[i].generation != last) {
			seen++;
			last = k[i].generation;
		}
		if (seen > TPF_KEPT_GENERATIONS)
			store_delete(ks, node, k[i].name, d);
	}
	tpf_kept_free(k, n);
}

/* The workers' fetches, run in parallel: an unreachable worker costs a
 * connect timeout, and the delete (and its bill) waits for the slowest. */
struct fetch {
	struct tpf_transport *t;
	const struct tpf_state_node *sn;
	const struct tpf_live_node *ln;
	struct tpf_buf *logs;
	struct tpf_diags *diags;
	int *rc;
};

static void fetch_one(size_t w, void *arg)
{
	struct fetch *f = arg;
	f->rc[w] = f->sn->workers[w].script_hash
			   ? tpf_provision_logs(f->t, f->sn, f->ln, (int)w, TPF_KEPT_LINES, &f->logs[w],
						&f->diags[w])
			   : 1; /* never provisioned: no job, no log */
}

int tpf_kept_keep(struct tpf_kept_store *ks, struct tpf_transport *t,
		  const struct tpf_state_node *sn, const struct tpf_live_node *ln,
		  struct tpf_diags *d)
{
	size_t n = sn->nworkers;
	struct fetch f = { t, sn, ln, xcalloc(n + 1, sizeof(struct tpf_buf)),
			   xcalloc(n + 1, sizeof(struct tpf_diags)), xcalloc(n + 1, sizeof(int)) };
	for (size_t w = 0; w < n; w++)
		tpf_diags_init(&f.diags[w]);
	tpf_pool_run(n, 16, fetch_one, &f, NULL);
	int kept = 0;
	/* Written one at a time: one store client, one thread. */
	for (size_t w = 0; w < n; w++) {
		if (f.rc[w] == 1)
			continue;
		char *name = xasprintf("g%d-w%zu.log", sn->generation, w);
		int rc = f.rc[w];
		if (!rc) {
			size_t len;
			const char *tail = tail_of(f.logs[w].buf ? f.logs[w].buf : "", f.logs[w].len, &len);
			rc = store_put(ks, sn->name, name, tail, len, &f.diags[w]);
		}
		if (rc) {
			char *where = tpf_kept_where(ks, sn->name);
			tpf_warn(d, sn->name, "the log of worker '%s/w%zu' was not kept in %s: %s",
				 sn->name, w, where,
				 f.diags[w].n ? f.diags[w].items[0].summary : "unknown error");
			free(where);
		} else
			kept++;
		free(name);
	}
	for (size_t w = 0; w < n; w++) {
		tpf_buf_release(&f.logs[w]);
		tpf_diags_release(&f.diags[w]);
	}
	free(f.logs);
	free(f.diags);
	free(f.rc);
	struct tpf_diags pd = TPF_DIAGS_INIT;
	prune(ks, sn->name, &pd);
	if (pd.n)
		tpf_warn(d, sn->name, "older kept logs of '%s' were not all removed: %s", sn->name,
			 pd.items[0].summary);
	tpf_diags_release(&pd);
	return kept;
}
