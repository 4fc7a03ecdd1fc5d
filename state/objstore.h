/*
 * The object store seam: the one place that knows whether tpuform's own
 * objects beside a state (the state and its lock on Cloud Storage, the run
 * ledger's segments, kept logs, watch's leader lease and round summary)
 * live in local files or in a Cloud Storage bucket. Its clients name
 * objects and generations only; nothing outside this seam asks which row
 * it is.
 *
 * A store is a name prefix in one place: local, the prefix of a path
 * ("<state path>.logs/": objects are the files <prefix><name>, parent
 * directories made 0700 on the first put); Cloud Storage, a bucket and an
 * object name prefix (google/gcs.h: objects <prefix><name>).
 *
 * Generations are Cloud Storage's (https://cloud.google.com/storage/docs/
 * request-preconditions, ifGenerationMatch): every write of an object gives
 * it a new generation >= 1; 0 means "no object". The local row emulates
 * them: a file's generation is derived from its inode and modification
 * time, and every write replaces the file atomically (a temporary file
 * beside it, fsync, rename, fsync of the directory), so a rewrite always
 * has a new inode while the old one is still linked, hence a new
 * generation. A conditional put or delete takes flock(2) on the parent
 * directory around its check and write, so two processes cannot both pass
 * the same check. The local row never renames over anything but a regular
 * file or a missing path (util/fs.h tpf_write_file_atomic, util/outfile.h's
 * rule): a directory or device at the name is refused.
 *
 * Not thread-safe for one store; the Cloud Storage row's client is.
 */
#ifndef TPF_STATE_OBJSTORE_H
#define TPF_STATE_OBJSTORE_H

#include <stddef.h>
#include "google/gcs.h"
#include "util/buf.h"
#include "util/diag.h"

struct tpf_objstore;

/* No precondition (if_generation of put and delete). */
#define TPF_OBJ_ANY (-1LL)
/* No precondition, and writing the same bytes twice is harmless: a
 * transient failure may be retried (google/gcs.h TPF_GCS_REPEATABLE). */
#define TPF_OBJ_REPEATABLE TPF_GCS_REPEATABLE

/* Local files "<prefix><name>" (prefix copied; "" ok). Never fails. */
struct tpf_objstore *tpf_objstore_open_local(const char *prefix);
/* Cloud Storage objects "<prefix><name>" of bucket (both copied; prefix
 * NULL or ""), with the client settings of c (google/gcs.h; no request
 * yet). TPF_ERROR with a diagnostic for a bad endpoint or credentials. */
int tpf_objstore_open_gcs(struct tpf_objstore **out, const char *bucket, const char *prefix,
			  const struct tpf_gcs_config *c, struct tpf_diags *d);
/* NULL ok. */
void tpf_objstore_free(struct tpf_objstore *s);

/* For people: "<prefix><name>" (a path) or "gs://BUCKET/<prefix><name>".
 * Caller frees. */
char *tpf_objstore_where(const struct tpf_objstore *s, const char *name);
/* 1 when other hosts may share the store (Cloud Storage: a lease decides
 * who writes), 0 when it is this host's (the local lock decides). */
int tpf_objstore_shared(const struct tpf_objstore *s);

/*
 * The object's bytes appended to `out` (at most max, else TPF_ERROR; what
 * names the object in messages: "kept log", "run ledger") and the
 * generation they belong to (*generation may be NULL). TPF_ENOTFOUND, no
 * diagnostic, *generation 0, when there is no object.
 */
int tpf_objstore_get(struct tpf_objstore *s, const char *name, size_t max, const char *what,
		     struct tpf_buf *out, long long *generation, struct tpf_diags *d);

/* The object's generation only (0 and TPF_ENOTFOUND, no diagnostic, when
 * there is none). */
int tpf_objstore_stat(struct tpf_objstore *s, const char *name, long long *generation,
		      struct tpf_diags *d);

/*
 * Write the object (content_type for Cloud Storage) only if its generation
 * is if_generation (0: only if absent; TPF_OBJ_ANY or TPF_OBJ_REPEATABLE:
 * unconditionally). A failed precondition is TPF_ESTALE with no diagnostic.
 * *generation (may be NULL): the new one.
 */
int tpf_objstore_put(struct tpf_objstore *s, const char *name, const char *data, size_t len,
		     const char *content_type, long long if_generation, long long *generation,
		     struct tpf_diags *d);

/* Delete the object, only if its generation is if_generation when >= 1.
 * TPF_ENOTFOUND (no diagnostic) when there is none, TPF_ESTALE (no
 * diagnostic) when its generation differs. */
int tpf_objstore_delete(struct tpf_objstore *s, const char *name, long long if_generation,
			struct tpf_diags *d);

/*
 * The names of the objects whose names start with name_prefix, that
 * prefix (and the store's) taken off, in no particular order. Local: name_prefix must end in
 * "/" or be "" (the files of one directory; names starting with "." and
 * subdirectories are left out); a missing directory is an empty list.
 * *names is NULL-terminated; free with tpf_objstore_names_free.
 */
int tpf_objstore_list(struct tpf_objstore *s, const char *name_prefix, char ***names, size_t *n,
		      struct tpf_diags *d);
void tpf_objstore_names_free(char **names);
/* The same, with each object's generation in (*generations)[i] (a new
 * array, caller frees), as the listing gives it: one request for the
 * whole list on Cloud Storage, a stat(2) per file locally. */
int tpf_objstore_list_gen(struct tpf_objstore *s, const char *name_prefix, char ***names,
			  long long **generations, size_t *n, struct tpf_diags *d);

#endif
