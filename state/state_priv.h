/*
 * Private to state/: what state.c (load, save) and state_json.c (the JSON
 * mapping) share. Nothing outside state/ includes this.
 */
#ifndef TPF_STATE_PRIV_H
#define TPF_STATE_PRIV_H

#include "state/state.h"

#ifndef TPF_VERSION
#define TPF_VERSION "dev" /* the Makefile defines the release version */
#endif

/*
 * The content of st that decides "did the state change": the JSON form
 * without "serial" and "tpuform_version" (Terraform compares states, not
 * the version stamp, before bumping the serial), compact with sorted keys.
 * Caller frees. NULL if a string is not valid UTF-8 (JSON cannot hold it).
 */
char *tpf_state_canonical(const struct tpf_state *st);

/*
 * tpf_state_from_json with the wording of a state file on disk: refusals
 * add a hint to restore from "<what>.backup". *st is overwritten (not
 * freed); on failure it is a blank state.
 */
int tpf_state_parse(struct tpf_state *st, json_t *root, const char *what, int is_file,
		    struct tpf_diags *d);

/*
 * The hint for a state file that cannot be read: restore "<path>.backup"
 * when that file exists, else fix or remove the file (then the next plan
 * adopts the fleet's labelled nodes). Caller frees.
 */
char *tpf_state_damaged_hint(const char *path);

/* Keep nodes sorted by name (they are looked up by binary search). */
void tpf_state_sort_nodes(struct tpf_state *st);

#endif
