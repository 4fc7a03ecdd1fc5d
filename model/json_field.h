/*
 * Optional string fields of tpuform's own JSON documents (state, saved
 * plans, ledger lines, recipes), over jansson: one rule for "absent when
 * NULL" and "wrong type is an error" instead of a copy per writer.
 */
#ifndef TPF_JSON_FIELD_H
#define TPF_JSON_FIELD_H

#include "util/diag.h"

#include <jansson.h>

/* Set o[k] to the string v when v is not NULL; a v that is not UTF-8 is
 * left out (jansson's json_string refuses it). */
void tpf_json_set_str(json_t *o, const char *k, const char *v);

/* As tpf_json_set_str, but a v that is not UTF-8 is kept
 * (json_string_nocheck): the writer that dumps the document then refuses
 * it and says so, where a field that vanished silently would lose state. */
void tpf_json_set_str_kept(json_t *o, const char *k, const char *v);

/* Copy the optional string o[k] into *out (xstrset: the old value is
 * freed; the caller owns the new one). Absent or null: 0, *out unchanged.
 * Not a string: TPF_ERROR with "WHAT: 'K' must be a string" in d. */
int tpf_json_get_str(json_t *o, const char *k, char **out, const char *what,
		     struct tpf_diags *d);

#endif
