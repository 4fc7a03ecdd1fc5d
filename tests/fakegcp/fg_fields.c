/*
 * Partial responses: the `fields` system parameter
 * (https://cloud.google.com/apis/docs/system-parameters), honoured as
 * Google's front end does for every API served here (Cloud TPU, Compute
 * Engine). Syntax (https://developers.google.com/discovery/v1/performance#partial-response):
 *   fields=nextPageToken,nodes(name,labels,networkConfig/network)
 * a comma-separated list of paths; `/` selects a sub-field, `(...)` a
 * list of sub-fields of the field before it, `*` every key of a map
 * (Compute's aggregated lists: items/STAR/instances(name), STAR being *).
 * Selecting a field of a repeated field selects it in every element.
 *
 * The mask is a tree of JSON objects: key -> sub-mask; a sub-mask holding
 * the key "" selects its field whole. Before an answer is filtered, every
 * name is checked against the schema of the answer (a lookup the API's
 * side gives: the discovery document for Cloud TPU, compute.v1.schema.json
 * for Compute Engine); a name the resource does not have is a 400
 * INVALID_ARGUMENT, answered instead of the resource (fg_reply.c
 * fg_fields_filter). Error bodies are never filtered.
 *
 * This file needs only jansson: tests/unit/test_gcp_fields.c runs
 * tpuform's own field lists through it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fg_fields.h"
#include "util/xalloc.h"

#define WHOLE ""

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '*' || c == '$' || c == '.' || c == '-' || c == '@';
}

static json_t *child(json_t *m, const char *name, size_t len)
{
	json_t *c = json_object_getn(m, name, len);
	if (!c) {
		c = json_object();
		json_object_setn_new(m, name, len, c);
	}
	return c;
}

static int parse_list(const char **pp, json_t *m, int depth, char *err, size_t errlen);

/* One item: path ['(' list ')']. */
static int parse_item(const char **pp, json_t *m, int depth, char *err, size_t errlen)
{
	const char *p = *pp;
	json_t *cur = m;
	for (;;) {
		const char *s = p;
		while (name_char(*p))
			p++;
		if (p == s) {
			snprintf(err, errlen, "Invalid field selection: a name is missing at "
				 "character %d", (int)(s - *pp) + 1);
			return -1;
		}
		cur = child(cur, s, (size_t)(p - s));
		if (*p != '/')
			break;
		p++;
	}
	if (*p == '(') {
		p++;
		if (depth > 32 || parse_list(&p, cur, depth + 1, err, errlen) < 0)
			return -1;
		if (*p != ')') {
			snprintf(err, errlen, "Invalid field selection: ')' expected");
			return -1;
		}
		p++;
	} else {
		json_object_set_new(cur, WHOLE, json_true());
	}
	*pp = p;
	return 0;
}

static int parse_list(const char **pp, json_t *m, int depth, char *err, size_t errlen)
{
	for (;;) {
		while (**pp == ' ')
			(*pp)++;
		if (parse_item(pp, m, depth, err, errlen) < 0)
			return -1;
		while (**pp == ' ')
			(*pp)++;
		if (**pp != ',')
			return 0;
		(*pp)++;
	}
}

json_t *fg_fields_parse(const char *s, char *err, size_t errlen)
{
	json_t *m = json_object();
	const char *p = s;
	if (parse_list(&p, m, 0, err, errlen) < 0 || (*p && (snprintf(err, errlen,
		"Invalid field selection: unexpected '%c'", *p), 1))) {
		json_decref(m);
		return NULL;
	}
	return m;
}

static int selects_whole(json_t *m)
{
	return !m || json_object_get(m, WHOLE) != NULL;
}

json_t *fg_fields_apply(json_t *m, json_t *v)
{
	if (!(json_is_object(v) || json_is_array(v)))
		return json_incref(v); /* scalars are never changed in place here */
	if (selects_whole(m))
		return json_deep_copy(v); /* nothing shared with the emulator's state */
	if (json_is_array(v)) {
		json_t *a = json_array();
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e)
			json_array_append_new(a, fg_fields_apply(m, e));
		return a;
	}
	json_t *o = json_object(), *sv, *sub, *star = json_object_get(m, "*");
	const char *k;
	if (!star) { /* the mask's few names, not every field of the resource */
		json_object_foreach(m, k, sub)
			if (*k && (sv = json_object_get(v, k)))
				json_object_set_new(o, k, fg_fields_apply(sub, sv));
		return o;
	}
	json_object_foreach(v, k, sv) {
		sub = json_object_get(m, k);
		if (!sub)
			sub = star;
		json_object_set_new(o, k, fg_fields_apply(sub, sv));
	}
	return o;
}

/* Check every name of m under `type` (fresh or NULL: unchecked). */
static int check(json_t *m, const char *type, fg_field_type_fn fn, const char *at, char *bad,
		 size_t badlen)
{
	const char *k;
	json_t *sub;
	if (!type || !*type)
		return 0;
	json_object_foreach(m, k, sub) {
		if (!*k)
			continue;
		char *path = *at ? xasprintf("%s/%s", at, k) : xstrdup(k);
		int ok = 0;
		char *ct = !strncmp(type, "map:", 4) ? (ok = 1, xstrdup(type + 4))
						     : fn(type, k, &ok);
		int rc = 0;
		if (!ok) {
			snprintf(bad, badlen, "%s", path);
			rc = -1;
		} else if (json_object_size(sub) > (json_object_get(sub, WHOLE) ? 1u : 0u)) {
			rc = check(sub, ct, fn, path, bad, badlen);
		}
		free(ct);
		free(path);
		if (rc < 0)
			return -1;
	}
	return 0;
}

int fg_fields_check(json_t *m, const char *type, fg_field_type_fn fn, char *bad, size_t badlen)
{
	return check(m, type, fn, "", bad, badlen);
}
