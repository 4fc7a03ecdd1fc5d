/*
 * libyaml plumbing for the fleet file: load, positioned errors, mappings
 * with key checks, "did you mean" hints.
 */
#include "config/config_yaml.h"
#include "config/config.h"
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void cfg_init(struct cfg *c, const char *path, const char *text, size_t len)
{
	memset(c, 0, sizeof(*c));
	c->path = path;
	c->text = text;
	c->len = len;
}

void cfg_release(struct cfg *c)
{
	if (c->have_doc)
		yaml_document_delete(&c->doc);
	c->have_doc = 0;
	for (size_t i = 0; i < c->nerrs; i++) {
		free(c->errs[i].summary);
		free(c->errs[i].detail);
	}
	free(c->errs);
	c->errs = NULL;
	c->nerrs = c->alloc = 0;
}

__attribute__((format(printf, 5, 0)))
static void add_error(struct cfg *c, size_t line, size_t column, const char *detail,
		      const char *fmt, va_list ap)
{
	char *msg = xvasprintf(fmt, ap);
	XGROW(c->errs, c->nerrs + 1, c->alloc);
	struct cfg_err *e = &c->errs[c->nerrs];
	e->line = line;
	e->column = column;
	e->seq = c->nerrs;
	e->summary = xasprintf("%s:%zu:%zu: %s", c->path, line, column, msg);
	e->detail = xstrdup(detail);
	c->nerrs++;
	free(msg);
}

void cfg_error_mark(struct cfg *c, const yaml_mark_t *m, const char *detail, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add_error(c, m->line + 1, m->column + 1, detail, fmt, ap);
	va_end(ap);
}

void cfg_error(struct cfg *c, const yaml_node_t *at, const char *detail, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add_error(c, at->start_mark.line + 1, at->start_mark.column + 1, detail, fmt, ap);
	va_end(ap);
}

static int cmp_err(const void *a, const void *b)
{
	const struct cfg_err *x = a, *y = b;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->column != y->column)
		return x->column < y->column ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

size_t cfg_flush(struct cfg *c, struct tpf_diags *d)
{
	size_t n = c->nerrs;
	if (n > 1)
		qsort(c->errs, n, sizeof(c->errs[0]), cmp_err);
	for (size_t i = 0; i < n; i++)
		tpf_diags_add(d, TPF_SEV_ERROR, NULL, c->errs[i].summary, c->errs[i].detail);
	for (size_t i = 0; i < n; i++) {
		free(c->errs[i].summary);
		free(c->errs[i].detail);
	}
	c->nerrs = 0;
	return n;
}

/* 1-based line and column of a byte offset (reader errors carry only the
 * offset). Columns count characters, as libyaml's marks do. */
static yaml_mark_t mark_at_offset(const struct cfg *c, size_t off)
{
	yaml_mark_t m = { 0, 0, 0 };
	for (size_t i = 0; i < off && i < c->len; i++) {
		unsigned char ch = (unsigned char)c->text[i];
		if (ch == '\n') {
			m.line++;
			m.column = 0;
		} else if ((ch & 0xc0) != 0x80) {
			m.column++;
		}
	}
	m.index = off;
	return m;
}

/* Whether the indentation of 0-based line `line` contains a tab: libyaml
 * then says "found character that cannot start any token", which does not
 * tell people what to change. */
static int line_indented_with_tab(const struct cfg *c, size_t line)
{
	size_t i = 0;
	for (size_t l = 0; l < line && i < c->len; i++)
		if (c->text[i] == '\n')
			l++;
	for (; i < c->len && (c->text[i] == ' ' || c->text[i] == '\t'); i++)
		if (c->text[i] == '\t')
			return 1;
	return 0;
}

static void syntax_error(struct cfg *c, const yaml_parser_t *p)
{
	const char *problem = p->problem ? p->problem : "unknown error";
	yaml_mark_t m = p->problem_mark;
	const char *detail = NULL;

	if (p->error == YAML_MEMORY_ERROR) {
		m = mark_at_offset(c, 0);
		problem = "out of memory";
	} else if (p->error == YAML_READER_ERROR) {
		/* Encoding problems: libyaml reports a byte offset, not a mark. */
		m = mark_at_offset(c, p->problem_offset);
		detail = "the fleet file must be UTF-8 text";
	}
	if (line_indented_with_tab(c, m.line))
		detail = "YAML does not allow tabs for indentation; indent with spaces";
	if (p->context && (p->context_mark.line != m.line || p->context_mark.column != m.column))
		cfg_error_mark(c, &m, detail, "invalid YAML: %s (%s at %zu:%zu)", problem, p->context,
			       p->context_mark.line + 1, p->context_mark.column + 1);
	else if (p->context)
		cfg_error_mark(c, &m, detail, "invalid YAML: %s (%s)", problem, p->context);
	else
		cfg_error_mark(c, &m, detail, "invalid YAML: %s", problem);
}

static void refuse_tag(struct cfg *c, const yaml_mark_t *m, const yaml_char_t *tag)
{
	const char *t = (const char *)tag;
	const char *std = "tag:yaml.org,2002:";
	if (!strncmp(t, std, strlen(std)))
		cfg_error_mark(c, m, "write the value plainly, quoted if it must stay text",
			       "YAML tag '!!%s' is not supported in a fleet file", t + strlen(std));
	else
		cfg_error_mark(c, m, "write the value plainly, quoted if it must stay text",
			       "YAML tag '%s' is not supported in a fleet file", t);
}

/*
 * First pass over the events: refuse what the node tree would hide.
 * yaml_parser_load resolves aliases into shared nodes and drops anchors and
 * tags' spelling, so they are caught here, with their positions. Returns
 * -1 after a syntax error, else the number of refusals recorded.
 */
static int scan_events(struct cfg *c)
{
	yaml_parser_t p;
	yaml_event_t e;
	int refused = 0, docs = 0, done = 0, depth = 0;
	static const char anchor_hint[] =
		"repeat the values instead; anchors, aliases and merge keys ('<<') are not supported";

	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, (const unsigned char *)c->text, c->len);
	while (!done) {
		if (!yaml_parser_parse(&p, &e)) {
			syntax_error(c, &p);
			refused = -1;
			break;
		}
		const yaml_char_t *anchor = NULL, *tag = NULL;
		switch (e.type) {
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs == 2) {
				cfg_error_mark(c, &e.start_mark,
					       "keep one fleet per file, or remove the '---' line",
					       "a fleet file holds one YAML document, found a second one");
				refused++;
			}
			break;
		case YAML_ALIAS_EVENT:
			cfg_error_mark(c, &e.start_mark, anchor_hint,
				       "YAML alias '*%s' is not supported in a fleet file",
				       (const char *)e.data.alias.anchor);
			refused++;
			break;
		case YAML_SCALAR_EVENT:
			anchor = e.data.scalar.anchor;
			tag = e.data.scalar.tag;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_SEQUENCE_START_EVENT:
			anchor = e.data.sequence_start.anchor;
			tag = e.data.sequence_start.tag;
			break;
		case YAML_MAPPING_START_EVENT:
			anchor = e.data.mapping_start.anchor;
			tag = e.data.mapping_start.tag;
			break;
		default:
			break;
		}
		if ((e.type == YAML_SEQUENCE_START_EVENT || e.type == YAML_MAPPING_START_EVENT) &&
		    ++depth > TPF_FLEET_MAX_DEPTH) {
			/* Stop here: libyaml's cost grows faster than linearly with
			 * depth, and no fleet file nests this deep. */
			cfg_error_mark(c, &e.start_mark, "a fleet file nests a few levels deep; flatten this value",
				       "nesting deeper than %d levels", TPF_FLEET_MAX_DEPTH);
			yaml_event_delete(&e);
			refused = -1;
			break;
		}
		if (anchor) {
			cfg_error_mark(c, &e.start_mark, anchor_hint,
				       "YAML anchor '&%s' is not supported in a fleet file",
				       (const char *)anchor);
			refused++;
		}
		if (tag) {
			refuse_tag(c, &e.start_mark, tag);
			refused++;
		}
		yaml_event_delete(&e);
	}
	yaml_parser_delete(&p);
	return refused;
}

yaml_node_t *cfg_load(struct cfg *c, int *ok)
{
	yaml_parser_t p;
	yaml_node_t *root = NULL;

	*ok = 0;
	if (scan_events(c) != 0)
		return NULL;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, (const unsigned char *)c->text, c->len);
	if (!yaml_parser_load(&p, &c->doc)) {
		/* The event pass accepted the same text; only memory can fail. */
		syntax_error(c, &p);
		goto done;
	}
	c->have_doc = 1;
	root = yaml_document_get_root_node(&c->doc);
	*ok = 1;
done:
	yaml_parser_delete(&p);
	return root;
}

yaml_node_t *cfg_node(struct cfg *c, int index)
{
	return yaml_document_get_node(&c->doc, index);
}

const char *cfg_text(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

int cfg_is_null(const yaml_node_t *n)
{
	if (!n || n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	const char *s = (const char *)n->data.scalar.value;
	/* libyaml gives every scalar a value; no value reads as empty too. */
	return !s || !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
	       !strcmp(s, "NULL");
}

void cfg_describe(struct tpf_buf *b, const yaml_node_t *n, int hide)
{
	enum { MAX_SHOWN = 60 };
	if (!n || cfg_is_null(n)) {
		tpf_buf_adds(b, "an empty value");
		return;
	}
	if (n->type == YAML_SEQUENCE_NODE) {
		tpf_buf_adds(b, "a list");
		return;
	}
	if (n->type == YAML_MAPPING_NODE) {
		tpf_buf_adds(b, "a mapping");
		return;
	}
	if (hide) {
		tpf_buf_adds(b, "a value");
		return;
	}
	const char *s = cfg_text(n);
	size_t len = strcspn(s, "\n");
	int cut = len < strlen(s) || len > MAX_SHOWN;
	if (len > MAX_SHOWN)
		len = MAX_SHOWN;
	tpf_buf_addch(b, '\'');
	tpf_buf_add(b, s, len);
	tpf_buf_adds(b, cut ? "...'" : "'");
}

static size_t levenshtein(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t *row = xcalloc(lb + 1, sizeof(*row));
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	size_t dist = row[lb];
	free(row);
	return dist;
}

const char *cfg_suggest(const char *word, const char *const *known)
{
	const char *best = NULL;
	size_t best_score = (size_t)-1;
	if (!known || !*word)
		return NULL;
	for (size_t i = 0; known[i]; i++) {
		size_t wl = strlen(word), kl = strlen(known[i]);
		size_t score = levenshtein(word, known[i]);
		if (score > 2) {
			/* "acc" -> "accelerator_type", "zone" -> "zones": a
			 * prefix is a likely slip even when far in edits. */
			if ((wl < kl && !strncmp(word, known[i], wl)) ||
			    (kl < wl && !strncmp(word, known[i], kl)))
				score = 3;
			else
				continue;
		}
		if (score < best_score) {
			best = known[i];
			best_score = score;
		}
	}
	return best;
}

static int is_known(const char *key, const char *const *known)
{
	for (size_t i = 0; known[i]; i++)
		if (!strcmp(key, known[i]))
			return 1;
	return 0;
}

int cfg_map_open(struct cfg_map *m, struct cfg *c, yaml_node_t *node, const char *subject,
		 const char *expect, const char *const *keys, const char *where,
		 const char *owner)
{
	m->c = c;
	m->node = NULL;
	m->at = NULL;
	m->keys = keys;
	m->where = where;
	m->owner = owner;
	m->unknown = 0;
	if (!node)
		return 0;
	if (cfg_is_null(node)) {
		m->at = node;
		return 0;
	}
	if (node->type != YAML_MAPPING_NODE) {
		struct tpf_buf got = TPF_BUF_INIT;
		/* Never echo a scalar given where secrets were expected. */
		cfg_describe(&got, node, !strcmp(subject, "'secrets'"));
		cfg_error(c, node, NULL, "%s must be %s, got %s", subject, expect, got.buf);
		tpf_buf_release(&got);
		return -1;
	}
	m->node = m->at = node;
	yaml_node_pair_t *pairs = node->data.mapping.pairs.start;
	size_t n = (size_t)(node->data.mapping.pairs.top - pairs);
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *k = cfg_node(c, pairs[i].key);
		const char *key = cfg_text(k);
		if (!key) {
			struct tpf_buf got = TPF_BUF_INIT;
			cfg_describe(&got, k, 0);
			cfg_error(c, k, NULL, "keys %s must be names, got %s", where, got.buf);
			tpf_buf_release(&got);
			continue;
		}
		int dup = 0;
		for (size_t j = 0; j < i && !dup; j++) {
			yaml_node_t *prev = cfg_node(c, pairs[j].key);
			if (cfg_text(prev) && !strcmp(cfg_text(prev), key)) {
				cfg_error(c, k, "remove one of the two", "duplicate key '%s' %s (first at line %zu)",
					  key, where, prev->start_mark.line + 1);
				dup = 1;
			}
		}
		if (dup || !keys || is_known(key, keys))
			continue;
		m->unknown++;
		const char *hint = cfg_suggest(key, keys);
		if (hint)
			cfg_error(c, k, NULL, "unknown key '%s' %s; did you mean '%s'?", key, where, hint);
		else
			cfg_error(c, k, NULL, "unknown key '%s' %s", key, where);
	}
	return 0;
}

yaml_node_t *cfg_map_get(const struct cfg_map *m, const char *key)
{
	if (!m->node)
		return NULL;
	yaml_node_pair_t *pairs = m->node->data.mapping.pairs.start;
	size_t n = (size_t)(m->node->data.mapping.pairs.top - pairs);
	for (size_t i = 0; i < n; i++) {
		const char *k = cfg_text(cfg_node(m->c, pairs[i].key));
		if (k && !strcmp(k, key))
			return cfg_node(m->c, pairs[i].value);
	}
	return NULL;
}

yaml_node_t *cfg_map_require(struct cfg_map *m, const char *key, const char *detail)
{
	yaml_node_t *v = cfg_map_get(m, key);
	if (v || !m->at)
		return v;
	/* "acelerator_type: v2-8" already got "did you mean"; saying the
	 * real key is missing too would only repeat it. */
	yaml_node_pair_t *pairs = m->node ? m->node->data.mapping.pairs.start : NULL;
	size_t n = m->node ? (size_t)(m->node->data.mapping.pairs.top - pairs) : 0;
	for (size_t i = 0; i < n && m->keys && m->unknown; i++) {
		const char *k = cfg_text(cfg_node(m->c, pairs[i].key));
		if (k && !is_known(k, m->keys)) {
			const char *hint = cfg_suggest(k, m->keys);
			if (hint && !strcmp(hint, key))
				return NULL;
		}
	}
	cfg_error(m->c, m->at, detail, "%s is missing required key '%s'", m->owner, key);
	return NULL;
}
