/*
 * The run ledger's store: an append-only record of what a fleet did, one
 * JSON object per line (JSON Lines), kept beside the state. This file only
 * stores and reads lines; what a line says is engine/ledger/ledger_writer.h's (the
 * format is docs/ledger.md).
 *
 * Where:
 *  - local state at PATH: the file PATH.ledger.jsonl (mode 0600). Every
 *    append is one write(2) with O_APPEND under flock(2), then fsync(2):
 *    a crash loses at most the line being written, and a torn last line
 *    is skipped by the reader (and ended with a newline by the next
 *    writer, never rewritten). Rotation: once a segment would pass
 *    TPF_LEDGER_SEGMENT_MAX bytes it is renamed PATH.ledger.jsonl.1 (the
 *    older ones shift to .2 ... .TPF_LEDGER_SEGMENTS-1, the oldest is
 *    deleted) and a new one starts. Lines are never edited in place.
 *  - state in Cloud Storage (state/backend.h): objects
 *    <prefix>/<fleet>.ledger/<writer>.<seq>.jsonl, where <writer> is a
 *    random id of this process (so a watch leader and a standby never
 *    write the same object) and <seq> counts its segments from 000001.
 *    Each append uploads the writer's segment with ifGenerationMatch on
 *    the generation it last wrote (0 for a new one): a lost or duplicated
 *    upload is detected (HTTP 412), never silently merged. A short-lived
 *    writer (where.daily) appends to its host's object of the day
 *    instead, so a pipeline planning every 5 minutes leaves one object a
 *    day, not 288. A segment
 *    holds at most TPF_LEDGER_GCS_SEGMENT_MAX bytes; a writer keeps its
 *    last TPF_LEDGER_SEGMENTS segments and deletes older ones of its own.
 *
 * Bound: a reader reads at most TPF_LEDGER_READ_MAX bytes (newest segments
 * first) and says how much it left out; a line longer than
 * TPF_LEDGER_LINE_MAX is refused by the writer and skipped by the reader.
 */
#ifndef TPF_STATE_LEDGER_H
#define TPF_STATE_LEDGER_H

#include <stddef.h>
#include <jansson.h>
#include "state/backend.h"
#include "util/diag.h"

#define TPF_LEDGER_LINE_MAX ((size_t)8192)
/* Default bytes of one local segment; $TPUFORM_LEDGER_SEGMENT_BYTES (at
 * least 4096) overrides it, for tests of the rotation. */
#define TPF_LEDGER_SEGMENT_MAX ((size_t)16 << 20)
#define TPF_LEDGER_GCS_SEGMENT_MAX ((size_t)1 << 20)
/* Segments kept per file (local) or per writer (Cloud Storage). */
#define TPF_LEDGER_SEGMENTS 8
#define TPF_LEDGER_READ_MAX ((size_t)128 << 20)

/* Where a fleet's ledger lives: exactly one of the two is set. */
struct tpf_ledger_where {
	const char *state_path;                    /* local state file */
	const struct tpf_backend_gcs_config *gcs;  /* state in Cloud Storage */
	/* A shared store only: a short-lived writer (plan, apply, destroy)
	 * appends to this host's object of the day,
	 * <host>.<YYYYMMDD>.<k>.jsonl (<host> 12 hex digits of the SHA-256
	 * of the host name, the day UTC, k from 1 when one is full), by
	 * rewriting it with ifGenerationMatch (Cloud Storage has no append;
	 * a 412 from another process of the host rereads and tries again),
	 * instead of an object per process. */
	int daily;
};

struct tpf_ledger;

/*
 * Open the ledger for appending (nothing is written yet; a local file is
 * created at the first append). *w is copied. gcs: opens a client of its
 * own with the state's endpoint and credentials (google/gcs.h), so the
 * ledger outlives any one session. TPF_ERROR with a diagnostic for a bad
 * endpoint or credentials.
 */
int tpf_ledger_open(struct tpf_ledger **out, const struct tpf_ledger_where *w, struct tpf_diags *d);

/*
 * Append one line (a JSON object, without its newline). Thread-safe.
 * 0, or TPF_ERROR with a diagnostic naming the file or object (a line
 * over TPF_LEDGER_LINE_MAX, a full disk, a 412): the line is lost, the
 * ledger stays usable.
 */
int tpf_ledger_append(struct tpf_ledger *l, const char *line, size_t len, struct tpf_diags *d);

/* For messages: the file, or gs://BUCKET/PREFIX/FLEET.ledger/. Borrowed. */
const char *tpf_ledger_where(const struct tpf_ledger *l);

/* NULL ok. */
void tpf_ledger_close(struct tpf_ledger *l);

/*
 * Read every line of the ledger at *w into *records (a new JSON array of
 * objects, in the order read: segments oldest first; callers sort by
 * time). Lines that are not JSON objects (a torn last line after a crash)
 * are skipped and counted in *skipped; bytes left out by the read bound
 * in *dropped (both may be NULL). A ledger that does not exist is empty.
 * 0, or TPF_ERROR with a diagnostic.
 */
int tpf_ledger_read(const struct tpf_ledger_where *w, json_t **records, size_t *skipped,
		    size_t *dropped, struct tpf_diags *d);

/*
 * A reader that reads only what was appended since its last read
 * (state/ledger_read.c): locally, the file it read last and where it
 * stopped (the file's inode, so a rotation is followed into PATH.1); in a
 * shared store, each object's generation and the bytes read of it (an
 * object whose generation did not change is not read again; one that
 * grew is read past what was read). Only whole lines are taken: a line
 * being written is read next time.
 */
struct tpf_ledger_cursor;
/* Opens the store of *w (not kept). TPF_ERROR with a diagnostic. Free
 * with tpf_ledger_cursor_free (NULL ok). */
int tpf_ledger_cursor_open(struct tpf_ledger_cursor **out, const struct tpf_ledger_where *w,
			   struct tpf_diags *d);
void tpf_ledger_cursor_free(struct tpf_ledger_cursor *c);
/* The next read starts over from the whole ledger. */
void tpf_ledger_cursor_rewind(struct tpf_ledger_cursor *c);
/*
 * The lines appended since the last read, as tpf_ledger_read gives them
 * (*records a new array; *skipped, *dropped may be NULL). *from_start is 1
 * when they are the whole ledger: the first read, or the cursor lost its
 * place (a file rotated out of the segments, an object shorter than what
 * was read of it): what the caller computed from earlier reads must be
 * dropped. TPF_ERROR with a diagnostic: the next read starts over.
 */
int tpf_ledger_cursor_read(struct tpf_ledger_cursor *c, json_t **records, int *from_start,
			   size_t *skipped, size_t *dropped, struct tpf_diags *d);

#endif
