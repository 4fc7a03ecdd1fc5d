/*
 * The state's text, canonical and as saved, built from per-node dumps that
 * are kept between saves (state_priv.h, tpf_state_serialize).
 *
 * Why: apply saves the whole state after every node and worker transition
 * (docs/design.md section 8), so N transitions each dumping N nodes cost
 * O(N^2): with 64 nodes and 256 workers, dumping the state was two thirds
 * of tpuform's CPU (callgrind, tests/bench/ssh_bench.sh). Now a node whose
 * JSON form is unchanged since the last save reuses its dumps, and only
 * the nodes that changed are dumped again. Whether a node changed is
 * decided by comparing its freshly built JSON value with the cached one
 * (json_equal), never by a flag a caller might forget to set: the cache
 * can only save work, not change what is written. Every piece of text is
 * jansson's own dump; tests/unit/test_state.c checks that the assembled
 * document is byte for byte json_dumps of the whole state.
 */
#include "state/state_priv.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* One node's dumps, valid while its JSON value equals `json`. */
struct node_doc {
	json_t *json;  /* the node's JSON value when dumped */
	char *compact; /* JSON_COMPACT | JSON_SORT_KEYS */
	char *pretty;  /* JSON_INDENT(2) | JSON_SORT_KEYS, re-indented to depth 2 */
};

struct tpf_state_doc {
	struct node_doc *nodes; /* in the order of the last serialisation */
	size_t n;
};

static void node_doc_release(struct node_doc *nd)
{
	json_decref(nd->json);
	free(nd->compact);
	free(nd->pretty);
	memset(nd, 0, sizeof(*nd));
}

void tpf_state_doc_free(struct tpf_state_doc *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		node_doc_release(&c->nodes[i]);
	free(c->nodes);
	free(c);
}

/*
 * text dumped at depth 0, as it appears at depth 2 (an element of the
 * top-level "nodes" array) in a JSON_INDENT(2) dump: 4 more spaces after
 * every newline. JSON strings never hold a raw newline (jansson escapes
 * it), so every newline is one jansson put between members.
 */
static char *indent_depth2(const char *text)
{
	struct tpf_buf b = TPF_BUF_INIT;
	const char *p = text, *nl;
	while ((nl = strchr(p, '\n'))) {
		tpf_buf_add(&b, p, (size_t)(nl - p + 1));
		tpf_buf_adds(&b, "    ");
		p = nl + 1;
	}
	tpf_buf_adds(&b, p);
	tpf_buf_addch(&b, '\0');
	return b.buf;
}

/* Dump node value j into nd (taking j). -1 if it cannot be dumped (a
 * string that is not UTF-8). */
static int node_doc_dump(struct node_doc *nd, json_t *j)
{
	nd->json = j;
	nd->compact = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	char *pretty = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
	nd->pretty = pretty ? indent_depth2(pretty) : NULL;
	free(pretty);
	return nd->compact && nd->pretty ? 0 : -1;
}

/* The cached dumps of a node named name whose value is j, moved out of
 * old (sorted by name, *pos advancing), or 0 when there are none. */
static int reuse(struct tpf_state_doc *old, size_t *pos, const char *name, json_t *j,
		 struct node_doc *out)
{
	while (*pos < old->n) {
		struct node_doc *o = &old->nodes[*pos];
		const char *oname = json_string_value(json_object_get(o->json, "name"));
		int c = strcmp(oname ? oname : "", name ? name : "");
		if (c > 0)
			return 0;
		(*pos)++;
		if (c == 0 && o->compact && o->pretty && json_equal(o->json, j)) {
			*out = *o;
			memset(o, 0, sizeof(*o));
			return 1;
		}
	}
	return 0;
}

/* Refresh st's per-node dumps: reuse the unchanged, dump the others. -1
 * when a node cannot be dumped. */
static int refresh_nodes(struct tpf_state *st)
{
	struct tpf_state_doc *old = st->doc;
	struct tpf_state_doc *c = xcalloc(1, sizeof(*c));
	c->nodes = xcalloc(st->nnodes ? st->nnodes : 1, sizeof(*c->nodes));
	const struct tpf_state_node **order = tpf_state_nodes_by_name(st);
	int rc = 0;
	size_t pos = 0;
	for (size_t i = 0; i < st->nnodes; i++) {
		json_t *j = tpf_state_node_to_json(order[i]);
		if (old && reuse(old, &pos, order[i]->name, j, &c->nodes[i]))
			json_decref(j);
		else if (node_doc_dump(&c->nodes[i], j))
			rc = -1;
		c->n = i + 1;
	}
	free(order);
	tpf_state_doc_free(old);
	st->doc = c;
	return rc;
}

/* The canonical form: the header (without serial and version) and then
 * each node, compact, one per line. A JSON dump holds no raw newline, so
 * two different states never give the same text. */
static char *canonical_text(const struct tpf_state *st, const char *head)
{
	struct tpf_buf b = TPF_BUF_INIT;
	tpf_buf_adds(&b, head);
	for (size_t i = 0; i < st->doc->n; i++) {
		tpf_buf_addch(&b, '\n');
		tpf_buf_adds(&b, st->doc->nodes[i].compact);
	}
	tpf_buf_addch(&b, '\0');
	return b.buf;
}

/* The saved document: the header dumped with an empty "nodes" array, the
 * nodes' pretty dumps put in its place as jansson would have. */
static int document_text(const struct tpf_state *st, json_t *head, long serial,
			 struct tpf_buf *out)
{
	static const char slot[] = "\n  \"nodes\": []";
	json_object_set_new(head, "serial", json_integer(serial));
	json_object_set_new(head, "tpuform_version", json_string(TPF_VERSION));
	json_object_set_new(head, "nodes", json_array());
	char *text = json_dumps(head, JSON_INDENT(2) | JSON_SORT_KEYS);
	char *at = text ? strstr(text, slot) : NULL;
	if (!at) {
		free(text);
		return -1;
	}
	at += sizeof(slot) - 3; /* at "[]" */
	tpf_buf_add(out, text, (size_t)(at - text));
	if (!st->doc->n) {
		tpf_buf_adds(out, "[]");
	} else {
		tpf_buf_adds(out, "[");
		for (size_t i = 0; i < st->doc->n; i++) {
			tpf_buf_adds(out, i ? ",\n    " : "\n    ");
			tpf_buf_adds(out, st->doc->nodes[i].pretty);
		}
		tpf_buf_adds(out, "\n  ]");
	}
	tpf_buf_adds(out, at + 2);
	tpf_buf_addch(out, '\n');
	free(text);
	return 0;
}

char *tpf_state_serialize(struct tpf_state *st, long serial, struct tpf_buf *doc)
{
	if (refresh_nodes(st))
		return NULL;
	json_t *head = tpf_state_head_to_json(st);
	char *h = json_dumps(head, JSON_COMPACT | JSON_SORT_KEYS);
	char *canon = h ? canonical_text(st, h) : NULL;
	free(h);
	if (canon && doc && document_text(st, head, serial, doc)) {
		free(canon);
		canon = NULL;
	}
	json_decref(head);
	return canon;
}

char *tpf_state_canonical(struct tpf_state *st)
{
	return tpf_state_serialize(st, 0, NULL);
}

void tpf_state_mark_saved(struct tpf_state *st, char *canon)
{
	st->serial++;
	xstrset(&st->tpuform_version, TPF_VERSION);
	free(st->last_json);
	st->last_json = canon;
}
