/*
 * Private to state/: what state.c (load, save) and state_json.c (the JSON
 * mapping) share. Nothing outside state/ includes this.
 */
#ifndef TPF_STATE_PRIV_H
#define TPF_STATE_PRIV_H

#include "state/state.h"
#include "util/buf.h"

#ifndef TPF_VERSION
#define TPF_VERSION "dev" /* the Makefile defines the release version */
#endif

/*
 * The content of st that decides "did the state change": the JSON form
 * without "serial" and "tpuform_version" (Terraform compares states, not
 * the version stamp, before bumping the serial): the rest of the top level
 * and then each node, compact with sorted keys, one per line. Only ever
 * compared with another canonical text. Caller frees. NULL if a string is
 * not valid UTF-8 (JSON cannot hold it). Refreshes st's per-node dumps, as
 * tpf_state_serialize does.
 */
char *tpf_state_canonical(struct tpf_state *st);

/*
 * tpf_state_canonical, and when doc is not NULL, the document a save
 * writes appended to it: json_dumps of tpf_state_to_json with "serial" set
 * to serial and "tpuform_version" to this version, JSON_INDENT(2) |
 * JSON_SORT_KEYS, and a newline. Nodes whose JSON form did not change since
 * the last call reuse that call's dumps (state_doc.c), so saving after a
 * change of one node costs little more than dumping that node. NULL (doc
 * possibly half-filled) if a string is not valid UTF-8. Not thread-safe:
 * callers serialise saves (state/backend.h).
 */
char *tpf_state_serialize(struct tpf_state *st, long serial, struct tpf_buf *doc);

/* A save of st has landed: serial + 1, this version's stamp, and canon
 * (tpf_state_serialize's text; consumed) as what was last written. */
void tpf_state_mark_saved(struct tpf_state *st, char *canon);
/* Free the per-node dumps (NULL: nothing). */
void tpf_state_doc_free(struct tpf_state_doc *c);

/* One node's JSON form, as it appears in "nodes" (new reference). */
json_t *tpf_state_node_to_json(const struct tpf_state_node *n);
/* The top level without "nodes", "serial" and "tpuform_version" (new
 * reference). */
json_t *tpf_state_head_to_json(const struct tpf_state *st);
/* st's nodes in the file's order, by name (caller frees the array only). */
const struct tpf_state_node **tpf_state_nodes_by_name(const struct tpf_state *st);

/*
 * tpf_state_from_json with the wording of a state file on disk: refusals
 * add a hint to restore from "<what>.backup". *st is overwritten (not
 * freed); on failure it is a blank state.
 */
int tpf_state_parse(struct tpf_state *st, json_t *root, const char *what, int is_file,
		    struct tpf_diags *d);
/* tpf_state_parse, with st's canonical text (last_json) taken from canon
 * instead of made from st, when canon is not NULL: the caller knows it
 * (state_canon_memo.c). canon is taken (freed on failure). NULL: made, as
 * tpf_state_parse does. */
int tpf_state_parse_canon(struct tpf_state *st, json_t *root, const char *what, int is_file,
			  char *canon, struct tpf_diags *d);
/*
 * tpf_state_parse of root, parsed from the bytes text[0..len), with a memo
 * of the last such parse's canonical text keyed by those exact bytes (and
 * is_file): `watch` loads the same state every round, and making its
 * canonical text (every node built as JSON and dumped) was most of the
 * load (issue 28). The canonical text is a function of the parsed state,
 * which is a function of the bytes, so the memo changes no answer; what it
 * skips is the per-node dump cache (st->doc), which the next save then
 * builds. One text is kept (up to TPF_STATE_FILE_MAX), under a mutex.
 * Same ownership and errors as tpf_state_parse.
 */
int tpf_state_parse_memo(struct tpf_state *st, const char *text, size_t len, json_t *root,
			 const char *what, int is_file, struct tpf_diags *d);

/*
 * The hint for a state file that cannot be read: restore "<path>.backup"
 * when that file exists, else fix or remove the file (then the next plan
 * adopts the fleet's labelled nodes). Caller frees.
 */
char *tpf_state_damaged_hint(const char *path);

/* Keep nodes sorted by name (they are looked up by binary search). */
void tpf_state_sort_nodes(struct tpf_state *st);

#endif
