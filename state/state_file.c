/*
 * The state on disk (state.h, tpf_state_load; state_priv.h,
 * tpf_state_save_file): read and refuse what is not a state, save with
 * serial, the backup once, and an atomic replace. The local backend
 * (backend.c) is its only caller besides tests.
 */
#include "state/state_priv.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

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
	err = tpf_state_parse_memo(st, b.buf, b.len, root, path, 1, d);
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
	tpf_state_mark_saved(st, canon);
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
