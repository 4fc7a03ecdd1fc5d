/*
 * The state in memory (nodes kept sorted by name) and on disk (load,
 * save with serial, backup and atomic replace). The JSON mapping is in
 * state_json.c.
 */
#include "state/state_priv.h"
#include "state/backend_priv.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void tpf_state_init(struct tpf_state *st)
{
	char id[37];
	memset(st, 0, sizeof(*st));
	st->version = TPF_STATE_VERSION;
	tpf_uuid4(id);
	st->lineage = xstrdup(id);
	st->tpuform_version = xstrdup(TPF_VERSION);
}

void tpf_state_release(struct tpf_state *st)
{
	for (size_t i = 0; i < st->nnodes; i++)
		tpf_state_node_release(&st->nodes[i]);
	free(st->nodes);
	free(st->lineage);
	free(st->tpuform_version);
	free(st->fleet);
	free(st->proxy_jump_host);
	free(st->proxy_jump_host_key);
	free(st->last_json);
	tpf_state_doc_free(st->doc);
	memset(st, 0, sizeof(*st));
}

static void worker_release(struct tpf_state_worker *w)
{
	free(w->script_hash);
	free(w->session);
	free(w->status);
	free(w->address);
	free(w->host_key);
	free(w->provisioned_at);
	free(w->restarted_at);
	free(w->preflight_error);
	memset(w, 0, sizeof(*w));
}

void tpf_state_node_release(struct tpf_state_node *n)
{
	free(n->name);
	free(n->group);
	free(n->id);
	free(n->created_at);
	free(n->completed_at);
	free(n->bad_host);
	free(n->refused);
	free(n->retry_after);
	free(n->delete_sent_at);
	free(n->last_checkpoint);
	free(n->checkpoint_at);
	tpf_recipe_release(&n->recipe);
	tpf_job_release(&n->job);
	for (size_t i = 0; i < n->nworkers; i++)
		worker_release(&n->workers[i]);
	free(n->workers);
	memset(n, 0, sizeof(*n));
}

void tpf_state_node_set_workers(struct tpf_state_node *n, size_t nworkers)
{
	for (size_t i = nworkers; i < n->nworkers; i++)
		worker_release(&n->workers[i]);
	if (nworkers != n->nworkers)
		n->workers = nworkers ? xrealloc(n->workers, nworkers * sizeof(*n->workers))
				      : (free(n->workers), NULL);
	for (size_t i = n->nworkers; i < nworkers; i++) {
		memset(&n->workers[i], 0, sizeof(n->workers[i]));
		n->workers[i].index = (int)i;
		n->workers[i].exit_code = -1;
	}
	n->nworkers = nworkers;
}

/* Position of name, or where it would be inserted (*found tells which). */
static size_t node_pos(const struct tpf_state *st, const char *name, int *found)
{
	size_t lo = 0, hi = st->nnodes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(st->nodes[mid].name, name);
		if (!c) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

struct tpf_state_node *tpf_state_find(struct tpf_state *st, const char *name)
{
	int found;
	size_t i = node_pos(st, name, &found);
	return found ? &st->nodes[i] : NULL;
}

struct tpf_state_node *tpf_state_add(struct tpf_state *st, const char *name)
{
	int found;
	size_t i = node_pos(st, name, &found);
	if (found)
		return &st->nodes[i];
	XGROW(st->nodes, st->nnodes + 1, st->alloc);
	memmove(&st->nodes[i + 1], &st->nodes[i], (st->nnodes - i) * sizeof(st->nodes[0]));
	st->nnodes++;
	struct tpf_state_node *n = &st->nodes[i];
	memset(n, 0, sizeof(*n));
	n->name = xstrdup(name);
	n->status = TPF_NODE_PENDING;
	n->exit_code = -1;
	return n;
}

int tpf_state_remove(struct tpf_state *st, const char *name)
{
	int found;
	size_t i = node_pos(st, name, &found);
	if (!found)
		return 0;
	tpf_state_node_release(&st->nodes[i]);
	memmove(&st->nodes[i], &st->nodes[i + 1], (st->nnodes - i - 1) * sizeof(st->nodes[0]));
	st->nnodes--;
	return 1;
}

char *tpf_state_damaged_hint(const char *path)
{
	char *backup = xasprintf("%s.backup", path);
	int have = access(backup, F_OK) == 0;
	free(backup);
	if (have)
		return xasprintf("The file may have been damaged or edited by hand. Fix it, or restore "
				 "the previous state by copying '%s.backup' over '%s'.",
				 path, path);
	return xasprintf("The file may have been damaged or edited by hand, and there is no '%s.backup' "
			 "to restore. Fix it, or move it away: the next plan then finds the fleet's "
			 "nodes by their labels and offers to adopt them.",
			 path);
}

int tpf_state_load(struct tpf_state *st, const char *path, struct tpf_diags *d)
{
	struct tpf_buf b = TPF_BUF_INIT;
	json_t *root = NULL;
	json_error_t je;
	int err = tpf_read_file_max(path, TPF_STATE_FILE_MAX, "state file", &b, d);

	if (err == TPF_ENOTFOUND) {
		/* No file yet: a blank state; last_json stays NULL so that the
		 * first save writes the file even if nothing was added. */
		tpf_state_init(st);
		err = 0;
		goto done;
	}
	if (err) {
		tpf_state_init(st);
		goto done;
	}
	/* Duplicate keys would make "which value wins" depend on jansson. */
	root = json_loadb(b.buf, b.len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		char *h = tpf_state_damaged_hint(path);
		err = tpf_errorx(d, NULL, h,
				 "state file '%s' is not valid JSON (line %d, column %d: %s); it was "
				 "left untouched",
				 path, je.line, je.column, je.text);
		free(h);
		tpf_state_init(st);
		goto done;
	}
	err = tpf_state_parse(st, root, path, 1, d);
done:
	json_decref(root);
	tpf_buf_release(&b);
	return err;
}

/*
 * The backup is the file as it was before this process first replaced it
 * (Terraform's local backend: written once, before the first overwrite).
 * A state that started without a file has no backup to make.
 */
static int write_backup(const char *path, struct tpf_diags *d)
{
	struct tpf_buf old = TPF_BUF_INIT;
	char *bpath = NULL;
	int err = tpf_read_file(path, &old, d);
	if (err == TPF_ENOTFOUND) {
		err = 0;
		goto done;
	}
	if (err)
		goto done;
	bpath = xasprintf("%s.backup", path);
	err = tpf_write_file_atomic(bpath, old.buf, old.len, 0600, d);
done:
	free(bpath);
	tpf_buf_release(&old);
	return err;
}

int tpf_state_save(struct tpf_state *st, struct tpf_diags *d)
{
	if (!st->backend)
		return tpf_error(d, "cannot save a state that was not loaded through a backend "
				    "(state/backend.h)");
	if (st->before_save)
		st->before_save(st, st->before_save_ctx);
	return tpf_backend_save(st->backend, st, d);
}

void tpf_state_set_before_save(struct tpf_state *st, void (*fn)(struct tpf_state *st, void *ctx),
			       void *ctx)
{
	st->before_save = fn;
	st->before_save_ctx = ctx;
}

int tpf_state_save_file(struct tpf_state *st, const char *path, struct tpf_diags *d)
{
	struct tpf_diags io = TPF_DIAGS_INIT;
	struct tpf_buf out = TPF_BUF_INIT;
	/* Serial and version go into the document only; st changes once the
	 * file is in place, so a failed write can be retried as is. */
	char *canon = tpf_state_serialize(st, st->serial + 1, &out);
	int err = 0;

	if (!canon) {
		err = tpf_errorx(d, NULL,
				 "Every name, command and label must be UTF-8 text. The previous "
				 "state file was left as it was.",
				 "cannot write state file '%s': a value is not valid UTF-8", path);
		goto done;
	}
	if (st->last_json && !strcmp(canon, st->last_json))
		goto done;

	if (!st->backup_written) {
		err = write_backup(path, &io);
		if (err)
			goto done;
		st->backup_written = 1;
	}
	err = tpf_write_file_atomic(path, out.buf, out.len, 0600, &io);
	if (err)
		goto done;
	st->serial++;
	xstrset(&st->tpuform_version, TPF_VERSION);
	free(st->last_json);
	st->last_json = canon;
	canon = NULL;
done:
	if (err && io.n) {
		char *h = xasprintf("The state file '%s' was left as it was (serial %ld). Check that "
				    "its directory is writable and the disk is not full, then run "
				    "the command again.",
				    path, st->serial);
		tpf_errorx(d, NULL, h, "cannot write state file '%s': %s", path,
			   io.items[0].summary);
		free(h);
	}
	tpf_diags_release(&io);
	tpf_buf_release(&out);
	free(canon);
	return err;
}

int tpf_state_node_check_worker(const struct tpf_state_node *n, int worker, struct tpf_diags *d)
{
	if (worker == -1 || tpf_worker_in_range(worker, n->nworkers))
		return 0;
	if (n->nworkers == 0)
		return tpf_errorx(d, n->name, "'tpuform plan' shows what apply would do about it.",
				  "node '%s' has no worker %d: it has no workers in the state", n->name,
				  worker);
	if (n->nworkers == 1)
		return tpf_errorx(d, n->name, "Leave -worker out, or use -worker 0.",
				  "node '%s' has no worker %d: it has 1 worker (0)", n->name, worker);
	return tpf_errorx(d, n->name, "'tpuform show' lists the workers of each node.",
			  "node '%s' has no worker %d: it has %zu workers (0 to %zu)", n->name, worker,
			  n->nworkers, n->nworkers - 1);
}

struct tpf_state_worker *tpf_state_node_worker(const struct tpf_state_node *n, int w)
{
	return n && tpf_worker_in_range(w, n->nworkers) ? &n->workers[w] : NULL;
}
