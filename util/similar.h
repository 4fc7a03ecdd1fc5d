/*
 * "Did you mean": the closest of a list of names to a mistyped one, as
 * Terraform's didyoumean.NameSuggestion ("Terraform has no command named
 * \"aply\". Did you mean \"apply\"?") and git's help.c do.
 */
#ifndef TPF_SIMILAR_H
#define TPF_SIMILAR_H

#include <stddef.h>

/* The optimal-string-alignment distance of a and b (the Damerau-Levenshtein
 * distance without edits of a transposed pair): insertions, deletions,
 * substitutions and transpositions of neighbours, each 1. Strings longer
 * than 64 bytes count from their first 64. */
size_t tpf_edit_distance(const char *a, const char *b);

/* The name of names (n of them; NULL entries skipped) closest to given, when
 * it is close enough to be a typo: at most 2 edits, and at most a third of
 * the name's length ("aply" suggests "apply", "lst" "list"; "ls" suggests
 * neither "cp" nor "logs"). The first
 * of equally close names wins. NULL when none is close; borrowed from
 * names otherwise. */
const char *tpf_similar_name(const char *given, const char *const *names, size_t n);

#endif
