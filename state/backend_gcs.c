/*
 * The Cloud Storage backend (state/backend.h): the state object written
 * compare-and-swap on its generation, a backup object, and a lock object
 * created only if absent, after Terraform's gcs backend
 * (internal/backend/remote-state/gcs: <prefix>/<name>.tfstate and .tflock).
 */
#include "state/backend_priv.h"
#include "state/objstore.h"
#include "state/state_priv.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct gcs_backend {
	struct tpf_backend base;
	struct tpf_objstore *store; /* objects <prefix>/<fleet><suffix> */
	char *lock_where;        /* gs://BUCKET/LOCK */
	long long generation;    /* of the state object as last read or written; 0: none */
	struct tpf_buf raw;      /* the state object as read, for the backup */
	int have_raw;
	int refused;             /* a write met 412: later saves go to the errored copy only */
};

#define GB(b) ((struct gcs_backend *)(b))
#define STATE_OBJ ".tfstate"
#define BACKUP_OBJ ".tfstate.backup"
#define LOCK_OBJ ".tflock"

static int gcs_load(struct tpf_backend *b, struct tpf_state *st, struct tpf_diags *d)
{
	struct gcs_backend *g = GB(b);
	json_error_t je;
	tpf_buf_reset(&g->raw);
	g->have_raw = 0;
	int rc = tpf_objstore_get(g->store, STATE_OBJ, TPF_STATE_FILE_MAX, "state", &g->raw,
				  &g->generation, d);
	if (rc == TPF_ENOTFOUND) {
		tpf_state_init(st); /* the first save creates it (ifGenerationMatch=0) */
		g->generation = 0;
		return 0;
	}
	if (rc) {
		tpf_state_init(st);
		return rc;
	}
	g->have_raw = 1;
	json_t *root = json_loadb(g->raw.buf, g->raw.len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		tpf_state_init(st);
		return tpf_errorx(d, NULL,
				  "The object may have been damaged or edited by hand. Fix it, or "
				  "restore the previous state with 'tpuform state push -force' of a "
				  "copy of the .backup object.",
				  "state '%s' is not valid JSON (line %d, column %d: %s); it was left "
				  "untouched",
				  b->where, je.line, je.column, je.text);
	}
	rc = tpf_state_parse_memo(st, g->raw.buf, g->raw.len, root, b->where, 0, d);
	json_decref(root);
	return rc;
}

/* Leave the state that could not be written where Terraform does, and say so. */
static void write_errored(struct gcs_backend *g, const char *text, size_t len, int first,
			  const char *why, struct tpf_diags *d)
{
	struct tpf_diags io = TPF_DIAGS_INIT;
	int ok = tpf_write_file_atomic(TPF_ERRORED_STATE, text, len, 0600, &io) == 0;
	if (first) {
		char *hint = ok ? xasprintf(
			"To allow for recovery, the state has been written to the file \"%s\" in "
			"the current working directory. Running \"tpuform apply\" again now would "
			"plan from the state in the bucket, without these changes. Look at what "
			"happened, then push this copy with: tpuform state push %s",
			TPF_ERRORED_STATE, TPF_ERRORED_STATE)
				: xasprintf("Writing the copy \"%s\" failed too: %s", TPF_ERRORED_STATE,
					    io.n ? io.items[0].summary : "unknown error");
		tpf_errorx(d, NULL, hint, "Failed to persist state to '%s': %s", g->base.where, why);
		free(hint);
	}
	tpf_diags_release(&io);
}

/* Upload the new document with the generation check; the backup first. */
static int upload(struct gcs_backend *g, struct tpf_state *st, const struct tpf_buf *out,
		  struct tpf_diags *io)
{
	if (!st->backup_written && g->have_raw) {
		/* The state as read, before this process first replaces it; a
		 * plain write: the state object, not this, is the one guarded.
		 * Written under the state lock with the same bytes each try, so
		 * a transient failure is retried. */
		int rc = tpf_objstore_put(g->store, BACKUP_OBJ, g->raw.buf, g->raw.len,
					  "application/json", TPF_OBJ_REPEATABLE, NULL, io);
		if (rc)
			return rc;
	}
	st->backup_written = 1;
	long long gen = 0;
	int rc = tpf_objstore_put(g->store, STATE_OBJ, out->buf, out->len, "application/json",
				  g->generation, &gen, io);
	if (!rc)
		g->generation = gen;
	return rc;
}

static int gcs_save(struct tpf_backend *b, struct tpf_state *st, struct tpf_diags *d)
{
	struct gcs_backend *g = GB(b);
	struct tpf_diags io = TPF_DIAGS_INIT;
	struct tpf_buf out = TPF_BUF_INIT;
	char *canon = tpf_state_serialize(st, st->serial + 1, &out);
	int rc = 0;
	if (!canon) {
		rc = tpf_errorx(d, NULL, "Every name, command and label must be UTF-8 text.",
				"cannot write state '%s': a value is not valid UTF-8", b->where);
		goto done;
	}
	if (st->last_json && !strcmp(canon, st->last_json))
		goto done;
	if (g->refused) {
		/* Already refused once: keep the copy current, say nothing more. */
		write_errored(g, out.buf, out.len, 0, NULL, d);
		rc = TPF_ESTALE;
		goto done;
	}
	rc = upload(g, st, &out, &io);
	if (rc == TPF_ESTALE) {
		g->refused = 1;
		char *why = xasprintf(
			"the state was changed by another writer since tpuform read it (generation "
			"%lld; HTTP 412 on ifGenerationMatch). Someone wrote it without holding the "
			"lock (-lock=false, an older tpuform or another tool); tpuform refused to "
			"overwrite it",
			g->generation);
		write_errored(g, out.buf, out.len, 1, why, d);
		free(why);
	} else if (rc) {
		write_errored(g, out.buf, out.len, 1, io.n ? io.items[0].summary : "unknown error",
			      d);
	} else {
		tpf_state_mark_saved(st, canon);
		canon = NULL;
	}
done:
	tpf_diags_release(&io);
	tpf_buf_release(&out);
	free(canon);
	return rc;
}

/* The holder's lock info, or NULL (released meanwhile: *gone set). */
static json_t *read_lock_info(struct gcs_backend *g, long long *gen, int *gone,
			      struct tpf_diags *d)
{
	struct tpf_buf raw = TPF_BUF_INIT;
	json_t *info = NULL;
	int rc = tpf_objstore_get(g->store, LOCK_OBJ, 1 << 20, "lock", &raw, gen, d);
	*gone = rc == TPF_ENOTFOUND;
	if (!rc)
		info = json_loadb(raw.buf, raw.len, 0, NULL);
	tpf_buf_release(&raw);
	return info;
}

static int gcs_lock(struct tpf_backend *b, struct tpf_lock *l, const char *operation,
		    double timeout, struct tpf_diags *d)
{
	struct gcs_backend *g = GB(b);
	double deadline = tpf_now_mono() + (timeout > 0 ? timeout : 0), delay = 1;
	struct tpf_lock none = TPF_LOCK_INIT;
	*l = none;
	tpf_uuid4(l->id);
	json_t *mine = tpf_lock_info_new(l->id, operation, b->where);
	char *text = json_dumps(mine, JSON_PRESERVE_ORDER | JSON_INDENT(2));
	int rc;
	for (;;) {
		long long gen = 0;
		rc = tpf_objstore_put(g->store, LOCK_OBJ, text, strlen(text), "application/json", 0,
				      &gen, d);
		if (!rc) {
			l->backend = b;
			l->generation = gen;
			break;
		}
		if (rc != TPF_ESTALE)
			break;
		int gone = 0;
		long long held_gen = 0;
		json_t *info = read_lock_info(g, &held_gen, &gone, d);
		double wait = gone ? 0 : tpf_lock_next_wait(&delay, deadline);
		if (wait < 0) {
			char *msg = xasprintf("writing \"%s\" failed: HTTP 412 Precondition Failed "
					      "(ifGenerationMatch=0): the lock object exists",
					      g->lock_where);
			rc = tpf_lock_conflict(d, msg, info, "the lock object could not be read", 1);
			free(msg);
			json_decref(info);
			break;
		}
		json_decref(info);
		tpf_sleep(wait);
	}
	if (rc)
		memset(l->id, 0, sizeof(l->id));
	free(text);
	json_decref(mine);
	return rc;
}

static void gcs_unlock(struct tpf_backend *b, struct tpf_lock *l)
{
	struct tpf_diags ignore = TPF_DIAGS_INIT;
	tpf_objstore_delete(GB(b)->store, LOCK_OBJ, l->generation, &ignore);
	tpf_diags_release(&ignore);
}

static int gcs_force_unlock(struct tpf_backend *b, const char *id, struct tpf_diags *d)
{
	struct gcs_backend *g = GB(b);
	long long gen = 0;
	int gone = 0, rc;
	json_t *info = read_lock_info(g, &gen, &gone, d);
	const char *held = json_string_value(json_object_get(info, "ID"));
	if (gone)
		rc = tpf_errorx(d, NULL, "Nothing to do: no lock object exists.",
				"Failed to unlock state: '%s' is not locked (no %s)", b->where,
				g->lock_where);
	else if (!info)
		rc = d->n ? TPF_ERROR
			  : tpf_error(d, "Failed to unlock state: %s is not a lock", g->lock_where);
	else if (!held || strcmp(held, id))
		rc = tpf_errorx(d, NULL, "Check the ID in the \"Lock Info:\" block of the lock error.",
				"Failed to unlock state: lock ID \"%s\" does not match existing lock ID "
				"\"%s\"",
				id, held ? held : "");
	else if ((rc = tpf_objstore_delete(g->store, LOCK_OBJ, gen, d)) == TPF_ESTALE ||
		 rc == TPF_ENOTFOUND)
		rc = tpf_error(d, "Failed to unlock state: the lock %s changed while it was being "
				  "removed; run the command again", g->lock_where);
	json_decref(info);
	return rc;
}

static void gcs_free(struct tpf_backend *b)
{
	struct gcs_backend *g = GB(b);
	tpf_objstore_free(g->store);
	free(g->lock_where);
	tpf_buf_release(&g->raw);
}

static const struct tpf_backend_ops gcs_ops = {
	.local = 0,
	.load = gcs_load,
	.save = gcs_save,
	.lock = gcs_lock,
	.unlock = gcs_unlock,
	.force_unlock = gcs_force_unlock,
	.free = gcs_free,
};

int tpf_backend_open_gcs(struct tpf_backend **out, const struct tpf_backend_gcs_config *c,
			 struct tpf_diags *d)
{
	struct gcs_backend *g = xcalloc(1, sizeof(*g));
	g->base.ops = &gcs_ops;
	tpf_buf_init(&g->raw);
	*out = NULL;
	if (tpf_objstore_open_beside(&g->store, NULL, c, "", d)) {
		tpf_backend_free(&g->base);
		return TPF_ERROR;
	}
	g->lock_where = tpf_objstore_where(g->store, LOCK_OBJ);
	g->base.where = tpf_objstore_where(g->store, STATE_OBJ);
	*out = &g->base;
	return 0;
}
