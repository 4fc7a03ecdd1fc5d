/*
 * Multislice queued resources (docs/cloud-tpu-api.md section 5; discovery
 * document schemas NodeSpec and MultisliceParams): one node spec with
 * multisliceParams {nodeCount, nodeIdPrefix} instead of a nodeId asks for
 * nodeCount nodes named "<prefix>-0" .. "<prefix>-(nodeCount-1)"; without
 * a prefix the queued resource's id is the prefix. fg_qr.c runs their
 * life: all created together, ACTIVE when all are READY, SUSPENDED (all
 * gone) when one is preempted or terminated, all deleted with force.
 * Wording marked "ours" is not on record for the real API.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

#define MS_AT "queued_resource.tpu.node_spec[0].multislice_params"

/* The discovery document's pattern for nodeIdPrefix: ^[A-Za-z0-9_.~+%-]+$ */
static int prefix_ok(const char *p)
{
	if (!*p)
		return 0;
	for (; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_.~+%-", *p))
			return 0;
	return 1;
}

char *fg_ms_node_id(const char *prefix, int k)
{
	return xasprintf("%s-%d", prefix, k);
}

int fg_ms_params(struct fg_req *r, json_t *spec, const char *qr_id, int *count, char **prefix)
{
	json_t *mp = json_object_get(spec, "multisliceParams");
	json_t *n = json_object_get(mp, "nodeCount");
	const char *p = json_string_value(json_object_get(mp, "nodeIdPrefix"));

	*count = 0;
	*prefix = NULL;
	if (!json_is_object(mp)) {
		fg_bad_request(r, MS_AT, "Cloud TPU received a bad request. multislice_params must "
			       "be an object."); /* ours */
		return -1;
	}
	if (json_object_get(spec, "nodeId")) {
		/* "This message must be populated in case of multislice requests
		 * instead of node_id." */
		fg_bad_request(r, "queued_resource.tpu.node_spec[0].node_id", "Cloud TPU received a "
			       "bad request. node_id must not be set with multislice_params."); /* ours */
		return -1;
	}
	/* "Required. ... This needs to be > 1." */
	if (!json_is_integer(n) || json_integer_value(n) <= 1 || json_integer_value(n) > 1024) {
		fg_bad_request(r, MS_AT ".node_count", "Cloud TPU received a bad request. "
			       "node_count is required and must be greater than 1."); /* ours */
		return -1;
	}
	if (p && !prefix_ok(p)) {
		fg_bad_request(r, MS_AT ".node_id_prefix", "Cloud TPU received a bad request. "
			       "node_id_prefix must match regex ^[A-Za-z0-9_.~+%-]+$.");
		return -1;
	}
	p = p ? p : qr_id;
	for (int k = 0; k < (int)json_integer_value(n); k++) {
		char *id = fg_ms_node_id(p, k);
		int ok = fg_node_id_ok(id);
		if (!ok) {
			char *msg = xasprintf("Cloud TPU received a bad request. Node ID '%s' must "
					      "match regex ^[a-z]([-a-z0-9]*[a-z0-9])?$ and be at most "
					      "63 characters.", id);
			fg_bad_request(r, MS_AT ".node_id_prefix", msg);
			free(msg);
		}
		free(id);
		if (!ok)
			return -1;
	}
	*count = (int)json_integer_value(n);
	*prefix = xstrdup(p);
	return 0;
}
