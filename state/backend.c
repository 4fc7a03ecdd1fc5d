/*
 * The backend seam (state/backend.h): dispatch, the local file backend, and
 * Terraform's state push rules.
 */
#include "state/backend_priv.h"
#include "state/state_priv.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct local_backend {
	struct tpf_backend base;
	char *path;
};

static int local_load(struct tpf_backend *b, struct tpf_state *st, struct tpf_diags *d)
{
	return tpf_state_load(st, ((struct local_backend *)b)->path, d);
}

static int local_save(struct tpf_backend *b, struct tpf_state *st, struct tpf_diags *d)
{
	return tpf_state_save_file(st, ((struct local_backend *)b)->path, d);
}

static int local_lock(struct tpf_backend *b, struct tpf_lock *l, const char *operation,
		      double timeout, struct tpf_diags *d)
{
	return tpf_lock_acquire(l, ((struct local_backend *)b)->path, operation, timeout, d);
}

static void local_unlock(struct tpf_backend *b, struct tpf_lock *l)
{
	(void)b, (void)l; /* never called: a local lock has no backend */
}

static int local_force_unlock(struct tpf_backend *b, const char *id, struct tpf_diags *d)
{
	return tpf_lock_force_unlock_file(((struct local_backend *)b)->path, id, d);
}

static void local_free(struct tpf_backend *b)
{
	free(((struct local_backend *)b)->path);
}

static const struct tpf_backend_ops local_ops = {
	.local = 1,
	.load = local_load,
	.save = local_save,
	.lock = local_lock,
	.unlock = local_unlock,
	.force_unlock = local_force_unlock,
	.free = local_free,
};

struct tpf_backend *tpf_backend_open_local(const char *path)
{
	struct local_backend *l = xcalloc(1, sizeof(*l));
	l->base.ops = &local_ops;
	l->base.where = xstrdup(path);
	l->path = xstrdup(path);
	return &l->base;
}

void tpf_backend_free(struct tpf_backend *b)
{
	if (!b)
		return;
	b->ops->free(b);
	free(b->where);
	free(b);
}

const char *tpf_backend_where(const struct tpf_backend *b)
{
	return b->where;
}

int tpf_backend_is_local(const struct tpf_backend *b)
{
	return b->ops->local;
}

int tpf_backend_load(struct tpf_backend *b, struct tpf_state *st, struct tpf_diags *d)
{
	int rc = b->ops->load(b, st, d);
	st->backend = b;
	return rc;
}

void tpf_backend_set_fence(struct tpf_backend *b, tpf_backend_fence_fn fn, void *ctx)
{
	b->fence = fn;
	b->fence_ctx = ctx;
}

/* Would saving st write anything? (The saves skip unchanged content.) */
static int save_would_write(struct tpf_state *st)
{
	char *canon = tpf_state_canonical(st);
	int changed = !canon || !st->last_json || strcmp(canon, st->last_json);
	free(canon);
	return changed;
}

int tpf_backend_save(struct tpf_backend *b, struct tpf_state *st, struct tpf_diags *d)
{
	if (b->fence && save_would_write(st)) {
		int rc = b->fence(b->fence_ctx, d);
		if (rc)
			return rc;
	}
	return b->ops->save(b, st, d);
}

int tpf_backend_lock(struct tpf_backend *b, struct tpf_lock *l, const char *operation,
		     double timeout, struct tpf_diags *d)
{
	return b->ops->lock(b, l, operation, timeout, d);
}

int tpf_backend_force_unlock(struct tpf_backend *b, const char *id, struct tpf_diags *d)
{
	return b->ops->force_unlock(b, id, d);
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

int tpf_state_push_check(const struct tpf_state *cur, const struct tpf_state *in, int force,
			 struct tpf_diags *d)
{
	/* Terraform: "It's always okay to overwrite an empty state". */
	if (force || !cur->last_json || cur->nnodes == 0)
		return 0;
	if (strcmp(cur->lineage, in->lineage))
		return tpf_errorx(d, NULL,
				  "The file is another state (another fleet, or a state started "
				  "afresh). If it really should replace this one, add -force.",
				  "Failed to write state: cannot import state with lineage \"%s\" over "
				  "unrelated state with lineage \"%s\"",
				  in->lineage, cur->lineage);
	if (in->serial < cur->serial)
		return tpf_errorx(d, NULL,
				  "The state was written after this file was taken from it. "
				  "'tpuform state pull' shows the current one; -force overwrites it.",
				  "Failed to write state: cannot import state with serial %ld over "
				  "newer state with serial %ld",
				  in->serial, cur->serial);
	return 0;
}

int tpf_state_push(struct tpf_state *cur, struct tpf_state *in, int force, struct tpf_diags *d)
{
	int rc = tpf_state_push_check(cur, in, force, d);
	if (rc) {
		tpf_state_release(in);
		return rc;
	}
	if (!cur->backend) {
		tpf_state_release(in);
		return tpf_error(d, "internal error: state push needs a state loaded from a backend");
	}
	long old_serial = cur->serial;
	long serial = in->serial > cur->serial ? in->serial : cur->serial + 1;
	/* cur keeps its backend and what it last read (so the backup and the
	 * generation check still apply); its content becomes in's. */
	struct tpf_backend *backend = cur->backend;
	void (*before_save)(struct tpf_state *, void *) = cur->before_save;
	void *before_save_ctx = cur->before_save_ctx;
	char *last_json = cur->last_json;
	int backup_written = cur->backup_written;
	cur->last_json = NULL;
	tpf_state_release(cur);
	*cur = *in;
	memset(in, 0, sizeof(*in));
	free(cur->last_json);
	cur->last_json = last_json;
	cur->backup_written = backup_written;
	cur->backend = backend;
	tpf_state_set_before_save(cur, before_save, before_save_ctx);
	cur->serial = serial - 1; /* the save adds one */
	rc = tpf_state_save(cur, d);
	if (cur->serial != serial)
		cur->serial = old_serial; /* the same content: nothing was written */
	return rc;
}
