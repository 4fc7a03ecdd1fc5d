/*
 * Partial responses (the `fields` system parameter): the mask's parser,
 * filter and schema check (fg_fields.c). Needs only jansson, so that unit
 * tests can run tpuform's field lists through the emulator's filter.
 */
#ifndef FG_FIELDS_H
#define FG_FIELDS_H

#include <jansson.h>
#include <stddef.h>

/* The type of field `name` of `type`: fresh (NULL or "": not checked below),
 * *ok 0 when `type` has no such field. */
typedef char *(*fg_field_type_fn)(const char *type, const char *name, int *ok);
/* Parse a fields value into a mask (new reference), or NULL with err. */
json_t *fg_fields_parse(const char *s, char *err, size_t errlen);
/* What of v (borrowed) mask m selects: a new tree that shares only scalars
 * with v (objects and arrays are copies). */
json_t *fg_fields_apply(json_t *m, json_t *v);
/* 0, or -1 with the first unknown path in bad ("nodes/bogus"). type NULL
 * or "": unchecked; "map:T": a map whose values are of type T. */
int fg_fields_check(json_t *m, const char *type, fg_field_type_fn fn, char *bad, size_t badlen);

#endif
