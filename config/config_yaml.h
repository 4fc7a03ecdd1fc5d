/*
 * Private to config/config*.c: the libyaml document of a fleet file and the
 * positioned errors found while walking it.
 *
 * Errors are kept here (not appended to the caller's tpf_diags at once) so
 * that they can be handed over sorted by position: people read them top to
 * bottom like the file, whatever order the walk found them in.
 */
#ifndef TPF_CONFIG_YAML_H
#define TPF_CONFIG_YAML_H

#include <stddef.h>
#include <yaml.h>

#include "util/buf.h"
#include "util/diag.h"

struct cfg_err {
	size_t line, column; /* 1-based */
	size_t seq;          /* order found: ties keep it */
	char *summary;       /* "FILE:LINE:COL: message" */
	char *detail;        /* hint or NULL */
};

struct cfg {
	const char *path; /* as given: the FILE in messages */
	const char *text;
	size_t len;
	yaml_document_t doc;
	int have_doc;
	struct cfg_err *errs;
	size_t nerrs, alloc;
};

/* Where a mapping sits, for messages: the set of keys it knows, the phrase
 * for unknown keys ("in group 'sweep'") and for missing ones ("group
 * 'sweep'"). keys is NULL for free-form maps (env, labels, secrets). */
struct cfg_map {
	struct cfg *c;
	yaml_node_t *node;        /* a mapping, or NULL (absent, null or wrong type) */
	yaml_node_t *at;          /* where it is (a null counts), NULL if absent
				   * or of the wrong type: missing keys go here */
	const char *const *keys;  /* NULL-terminated */
	const char *where;        /* "at top level", "in group 'sweep'" */
	const char *owner;        /* "the fleet file", "group 'sweep'" */
	int unknown;              /* unknown keys found */
};

void cfg_init(struct cfg *c, const char *path, const char *text, size_t len);
void cfg_release(struct cfg *c);

/*
 * Parse c->text. Returns the root node (NULL for an empty document) with
 * *ok = 1, or NULL with *ok = 0 after recording the error: YAML syntax
 * errors, anchors, aliases, tags and a second document are all refused
 * before the tree is walked.
 */
yaml_node_t *cfg_load(struct cfg *c, int *ok);

/* Record an error at a node (its start) or a mark. detail may be NULL. */
void cfg_error(struct cfg *c, const yaml_node_t *at, const char *detail, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void cfg_error_mark(struct cfg *c, const yaml_mark_t *m, const char *detail, const char *fmt,
		    ...) __attribute__((format(printf, 4, 5)));

/* Move the recorded errors, sorted by position, to d. Returns how many. */
size_t cfg_flush(struct cfg *c, struct tpf_diags *d);

yaml_node_t *cfg_node(struct cfg *c, int index);
/* Text of a scalar node; NULL for other kinds. */
const char *cfg_text(const yaml_node_t *n);
/* A plain scalar spelling null: empty, "~", "null", "Null", "NULL". */
int cfg_is_null(const yaml_node_t *n);

/*
 * What was found, for "got ..." in messages: "a list", "a mapping",
 * "an empty value", or the scalar quoted ('many', shortened when long).
 * With hide set, a scalar is only "a value" (secrets).
 */
void cfg_describe(struct tpf_buf *b, const yaml_node_t *n, int hide);

/*
 * Open a mapping for reading. node NULL means absent. A null node reads as
 * an empty mapping; any other non-mapping records "<subject> must be
 * <expect>, got ..." (subject is quoted by the caller: "'provider'", "each
 * group") and leaves m->node NULL, so lookups find nothing and no missing
 * key is reported on top of it. Then every key is checked:
 * keys must be scalars, must be unique, and (when keys is not NULL) known,
 * else "unknown key 'x' <where>; did you mean 'y'?".
 * Returns 0, or -1 when the node was not a mapping.
 */
int cfg_map_open(struct cfg_map *m, struct cfg *c, yaml_node_t *node, const char *subject,
		 const char *expect, const char *const *keys, const char *where,
		 const char *owner);

/* Value of key (first occurrence), or NULL. */
yaml_node_t *cfg_map_get(const struct cfg_map *m, const char *key);
/* Value of key, or NULL after "<owner> is missing required key 'key'" at
 * the mapping's start (not repeated when an unknown key there was a
 * misspelling of it, which was already reported with a hint). */
yaml_node_t *cfg_map_require(struct cfg_map *m, const char *key, const char *detail);

/* The known word closest to word: edit distance <= 2, or one a prefix of
 * the other. NULL if none. */
const char *cfg_suggest(const char *word, const char *const *known);

#endif
