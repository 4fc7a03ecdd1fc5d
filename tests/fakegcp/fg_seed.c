/*
 * POST /__admin/nodes:seed?zone=Z&prefix=P&count=N[&start=K][&index_label=L]
 * with a Node create body: N READY nodes P-K .. P-(K+N-1) in zone Z at once,
 * without operations or quota checks, so a benchmark can stand up 10,000
 * nodes in well under a second (tests/bench/gcp_bench.sh). The body is
 * checked as nodes.create checks it; index_label L sets that label of each
 * node to its number (tpuform's own tpuform-index label, for instance).
 * Not an API of the real service: an emulator knob, like the other
 * /__admin/ endpoints (tests/fakegcp/README.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

#define SEED_MAX 100000

static const char *arg(struct fg_req *r, const char *key)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

static long number(const char *v, long dflt)
{
	char *end;
	long n;

	if (!v)
		return dflt;
	n = strtol(v, &end, 10);
	return *v && !*end ? n : -1;
}

/* Node i: the template with index_label set, READY with its endpoints. */
static void seed_one(const char *zone, const char *id, json_t *tmpl, const char *type,
		     const char *index_label, long i)
{
	json_t *body = json_deep_copy(tmpl);

	if (index_label) {
		char num[24];
		snprintf(num, sizeof(num), "%ld", i);
		json_t *labels = json_object_get(body, "labels");
		if (!labels) {
			labels = json_object();
			json_object_set_new(body, "labels", labels);
		}
		json_object_set_new(labels, index_label, json_string(num));
	}
	struct fg_node *n = fg_node_new(zone, id, body, type);
	json_decref(body);
	fg_node_add(n);
	fg_node_set_state(n, "READY");
}

void fg_admin_seed(struct fg_req *r)
{
	const char *zone = arg(r, "zone"), *prefix = arg(r, "prefix");
	long count = number(arg(r, "count"), -1), start = number(arg(r, "start"), 0);
	json_t *body = r->body.len ? json_loadb(r->body.buf, r->body.len, 0, NULL) : json_object();
	char *type = NULL;

	if (!zone || !*zone || !prefix || !fg_node_id_ok(prefix) || count < 1 || count > SEED_MAX ||
	    start < 0 || !json_is_object(body)) {
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
			       "expected ?zone=Z&prefix=P&count=1..%d[&start=K][&index_label=L] "
			       "and a Node JSON body", SEED_MAX);
		json_decref(body);
		return;
	}
	if (fg_node_body_check(r, zone, body, "node", &type) < 0) {
		json_decref(body);
		return;
	}
	fg_lock();
	fg_ops_tick();
	for (long i = start; i < start + count; i++) {
		char *id = xasprintf("%s-%ld", prefix, i);
		if (!fg_node_find(zone, id))
			seed_one(zone, id, body, type, arg(r, "index_label"), i);
		free(id);
	}
	fg_unlock();
	fg_reply_json(r, 200, json_pack("{s:b, s:i}", "ok", 1, "count", (json_int_t)count));
	json_decref(body);
	free(type);
}
