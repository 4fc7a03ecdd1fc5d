/*
 * The `filter` parameter of Compute list calls, in the two syntaxes the
 * API documents (ListInstancesRequest.filter in compute.proto; reference
 * section 8), which cannot be mixed:
 *   - regex: `field eq|ne VALUE`, terms juxtaposed, each optionally in
 *     parentheses; VALUE an RE2 pattern that must match the whole field
 *     (quoted or not). gcloud 528 sends only this form, e.g.
 *     `(operationType eq ".*\bcompute\.instances\.preempted\b.*")` and
 *     `status eq TERMINATED` (captures C41, C44);
 *   - AIP-160, the subset: `field = VALUE`, `field != VALUE`, `field:*`
 *     (present), `field:VALUE`, joined by AND or juxtaposed.
 * Nested fields use dots (labels.team, scheduling.provisioningModel).
 * Anything else (OR, NOT, comparisons, a mix of both syntaxes) is refused
 * with 400 "Invalid list filter expression." rather than guessed at.
 * Patterns are compiled with POSIX regcomp (GNU extensions give \b).
 */
#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fg_compute.h"
#include "util/xalloc.h"

enum op { OP_EQ, OP_NE, OP_IS, OP_ISNT, OP_HAS };

struct term {
	char *field, *value;
	enum op op;
	regex_t re;
	int compiled;
};

struct ce_filter {
	struct term *t;
	size_t n, a;
};

static void skip_ws(const char **p)
{
	while (isspace((unsigned char)**p))
		(*p)++;
}

/* A quoted string (\" and \\ kept as the pattern's own escapes except the
 * quote) or a bare word up to a space or ')'. Fresh, NULL if malformed. */
static char *read_value(const char **p)
{
	struct tpf_buf b = TPF_BUF_INIT;
	const char *s = *p;

	if (*s == '"') {
		for (s++; *s && *s != '"'; s++) {
			if (*s == '\\' && s[1] == '"')
				s++;
			tpf_buf_addch(&b, *s);
		}
		if (*s != '"') {
			tpf_buf_release(&b);
			return NULL;
		}
		s++;
	} else {
		for (; *s && !isspace((unsigned char)*s) && *s != ')'; s++)
			tpf_buf_addch(&b, *s);
	}
	*p = s;
	char *out = tpf_buf_detach(&b, NULL);
	return out ? out : xstrdup("");
}

static int read_op(const char **p, enum op *op)
{
	static const struct { const char *s; enum op op; } ops[] = {
		{ "eq ", OP_EQ }, { "ne ", OP_NE }, { "!=", OP_ISNT }, { "=", OP_IS }, { ":", OP_HAS },
	};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t n = strlen(ops[i].s);
		if (!strncmp(*p, ops[i].s, n)) {
			*op = ops[i].op;
			*p += n;
			return 0;
		}
	}
	return -1;
}

static int parse_term(struct ce_filter *f, const char **p)
{
	int paren = 0;
	struct term t = { 0 };

	if (**p == '(') {
		paren = 1;
		(*p)++;
		skip_ws(p);
	}
	const char *s = *p;
	while (isalnum((unsigned char)**p) || **p == '_' || **p == '.' || **p == '-')
		(*p)++;
	if (*p == s)
		return -1;
	t.field = xstrndup(s, (size_t)(*p - s));
	skip_ws(p);
	if (read_op(p, &t.op) < 0 || (skip_ws(p), !(t.value = read_value(p)))) {
		free(t.field);
		return -1;
	}
	skip_ws(p);
	if (paren && *(*p)++ != ')') {
		free(t.field);
		free(t.value);
		return -1;
	}
	if (t.op == OP_EQ || t.op == OP_NE) {
		char *pat = xasprintf("^(%s)$", t.value);
		t.compiled = regcomp(&t.re, pat, REG_EXTENDED | REG_NOSUB) == 0;
		free(pat);
		if (!t.compiled) {
			free(t.field);
			free(t.value);
			return -1;
		}
	}
	XGROW(f->t, f->n + 1, f->a);
	f->t[f->n++] = t;
	return 0;
}

void ce_filter_free(struct ce_filter *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++) {
		free(f->t[i].field);
		free(f->t[i].value);
		if (f->t[i].compiled)
			regfree(&f->t[i].re);
	}
	free(f->t);
	free(f);
}

int ce_filter_parse(struct fg_req *r, const char *filter, struct ce_filter **out)
{
	struct ce_filter *f = xcalloc(1, sizeof(*f));
	const char *p = filter ? filter : "";
	int rc = 0, regex = 0, aip = 0;

	skip_ws(&p);
	while (*p && rc == 0) {
		if (!strncmp(p, "AND ", 4)) {
			p += 4;
			aip = 1;
			skip_ws(&p);
		}
		rc = parse_term(f, &p);
		if (rc == 0) {
			enum op op = f->t[f->n - 1].op;
			if (op == OP_EQ || op == OP_NE)
				regex = 1;
			else
				aip = 1;
		}
		skip_ws(&p);
	}
	if (rc < 0 || (regex && aip)) {
		ce_invalid(r, "filter", filter, "Invalid list filter expression.");
		ce_filter_free(f);
		*out = NULL;
		return -1;
	}
	*out = f;
	return 0;
}

/* The field's value as text (fresh), or NULL when absent. */
static char *field_text(json_t *res, const char *path)
{
	char *copy = xstrdup(path), *save = NULL;
	json_t *v = res;

	for (char *seg = strtok_r(copy, ".", &save); seg && v; seg = strtok_r(NULL, ".", &save))
		v = json_is_object(v) ? json_object_get(v, seg) : NULL;
	free(copy);
	if (!v || json_is_null(v))
		return NULL;
	if (json_is_string(v))
		return xstrdup(json_string_value(v));
	if (json_is_boolean(v))
		return xstrdup(json_is_true(v) ? "true" : "false");
	if (json_is_integer(v))
		return xasprintf("%lld", (long long)json_integer_value(v));
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

static int term_match(const struct term *t, json_t *res)
{
	char *v = field_text(res, t->field);
	int m;

	switch (t->op) {
	case OP_EQ: m = regexec(&t->re, v ? v : "", 0, NULL, 0) == 0; break;
	case OP_NE: m = regexec(&t->re, v ? v : "", 0, NULL, 0) != 0; break;
	case OP_IS: m = v && !strcmp(v, t->value); break;
	case OP_ISNT: m = !v || strcmp(v, t->value); break;
	default: m = v && (!strcmp(t->value, "*") || strstr(v, t->value)); break;
	}
	free(v);
	return m;
}

int ce_filter_match(const struct ce_filter *f, json_t *res)
{
	for (size_t i = 0; f && i < f->n; i++)
		if (!term_match(&f->t[i], res))
			return 0;
	return 1;
}
