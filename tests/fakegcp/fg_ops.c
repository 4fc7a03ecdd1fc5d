/*
 * Long-running operations (docs/cloud-tpu-api.md section 3).
 * An operation finishes --op-seconds after it starts; nothing runs in the
 * background: fg_ops_tick() finishes every operation whose time has come and
 * is called before any answer that could show the difference.
 *
 * While running, "done" is absent (proto3 JSON omits false); once done it is
 * true with exactly one of "error" (a bare google.rpc.Status, no "status"
 * string) or "response".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

#define META_TYPE "type.googleapis.com/google.cloud.tpu.v2.OperationMetadata"

static struct fg_op **ops;
static size_t n_ops, a_ops;

struct fg_op *fg_op_start(const char *zone, const char *node_id, const char *verb)
{
	struct fg_op *op = xcalloc(1, sizeof(*op));
	struct timespec ts;
	char when[40];

	clock_gettime(CLOCK_REALTIME, &ts);
	/* Shaped like operation-1669841256413-5eeb636eb799d-6070f791-4abbb44a. */
	uint64_t a = fg_rand_id(), b = fg_rand_id();
	op->name = xasprintf("projects/%s/locations/%s/operations/operation-%lld-%013llx-%08x-%08x",
			     fg_opt.project, zone,
			     (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
			     (unsigned long long)(a & 0xfffffffffffffULL), (unsigned)(b >> 32),
			     (unsigned)b);
	op->zone = xstrdup(zone);
	op->node_id = xstrdup(node_id);
	op->verb = xstrdup(verb);
	fg_timestamp(when);
	char *target = fg_node_name(zone, node_id);
	op->metadata = json_pack("{s:s, s:s, s:s, s:s, s:b, s:s}", "@type", META_TYPE,
				 "createTime", when, "target", target, "verb", verb,
				 "cancelRequested", 0, "apiVersion", "v2");
	free(target);
	/* --delete-seconds: a delete may take longer than the rest. */
	op->done_at = fg_mono() + (!strcmp(verb, "delete") && fg_opt.delete_s >= 0 ? fg_opt.delete_s
										 : fg_opt.op_seconds);
	XGROW(ops, n_ops + 1, a_ops);
	ops[n_ops++] = op;
	return op;
}

json_t *fg_op_json(const struct fg_op *op)
{
	json_t *o = json_pack("{s:s, s:O}", "name", op->name, "metadata", op->metadata);

	if (op->done) {
		json_object_set_new(o, "done", json_true());
		if (op->error)
			json_object_set(o, "error", op->error);
		else
			json_object_set(o, "response", op->response);
	}
	return o;
}

void fg_ops_tick(void)
{
	double now = fg_mono();
	char when[40];

	for (size_t i = 0; i < n_ops; i++) {
		struct fg_op *op = ops[i];
		if (op->done || op->done_at > now)
			continue;
		if (op->qr)
			fg_qr_op_finish(op);
		else
			fg_node_op_finish(op);
		op->done = 1;
		fg_timestamp(when);
		json_object_set_new(op->metadata, "endTime", json_string(when));
	}
	fg_qrs_tick();
}

void fg_ops_finish_all(void)
{
	for (size_t i = 0; i < n_ops; i++)
		if (!ops[i]->done)
			ops[i]->done_at = 0;
	/* Twice: a queued resource that gets capacity in the first pass is
	 * provisioning, and finishes, in the second. */
	fg_qrs_hurry();
	fg_ops_tick();
	fg_qrs_hurry();
	fg_ops_tick();
}

static void op_free(struct fg_op *op)
{
	free(op->name);
	free(op->zone);
	free(op->node_id);
	free(op->verb);
	json_decref(op->metadata);
	json_decref(op->error);
	json_decref(op->response);
	json_decref(op->patch);
	json_decref(op->mask);
	free(op);
}

void fg_ops_free(void)
{
	for (size_t i = 0; i < n_ops; i++)
		op_free(ops[i]);
	free(ops);
	ops = NULL;
	n_ops = a_ops = 0;
}

json_t *fg_ops_all_json(void)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < n_ops; i++)
		json_array_append_new(arr, fg_op_json(ops[i]));
	return arr;
}

static char *op_name(struct fg_match *mt)
{
	return xasprintf("projects/%s/locations/%s/operations/%s", fg_opt.project,
			 fg_match_var(mt, "locationsId"), fg_match_var(mt, "operationsId"));
}

/* Index of the named operation, or -1 after answering 404. Lock held. */
static long find(struct fg_req *r, struct fg_match *mt)
{
	char *name = op_name(mt);

	for (size_t i = 0; i < n_ops; i++) {
		if (!strcmp(ops[i]->name, name)) {
			free(name);
			return (long)i;
		}
	}
	fg_reply_error(r, 404, "NOT_FOUND", json_pack("[o]", fg_resource_info(name)),
		       "Resource '%s' was not found", name);
	free(name);
	return -1;
}

void fg_operations_get(struct fg_req *r, struct fg_match *mt)
{
	fg_lock();
	fg_ops_tick();
	long i = find(r, mt);
	if (i >= 0)
		fg_reply_json(r, 200, fg_op_json(ops[i]));
	fg_unlock();
}

void fg_operations_list(struct fg_req *r, struct fg_match *mt)
{
	const char *zone = fg_match_var(mt, "locationsId");
	int size;
	char *after = NULL;
	json_t *out = json_object(), *arr = json_array();
	size_t i = 0;
	const char *last = NULL;
	int more = 0;

	if (fg_page_params(r, &size, &after) < 0) {
		json_decref(out);
		json_decref(arr);
		return;
	}
	fg_lock();
	fg_ops_tick();
	/* Oldest first; names are unique, so the last name shown marks the page. */
	if (after) {
		while (i < n_ops && strcmp(ops[i]->name, after))
			i++;
		i++;
	}
	for (; i < n_ops; i++) {
		if (strcmp(ops[i]->zone, zone))
			continue;
		if (json_array_size(arr) == (size_t)size) {
			more = 1;
			break;
		}
		json_array_append_new(arr, fg_op_json(ops[i]));
		last = ops[i]->name;
	}
	if (json_array_size(arr))
		json_object_set(out, "operations", arr);
	if (more && last) {
		char *tok = fg_page_token(last);
		json_object_set_new(out, "nextPageToken", json_string(tok));
		free(tok);
	}
	fg_unlock();
	json_decref(arr);
	free(after);
	fg_reply_json(r, 200, out);
}

void fg_operations_cancel(struct fg_req *r, struct fg_match *mt)
{
	fg_lock();
	long i = find(r, mt);
	if (i >= 0) {
		/* Recorded only: the emulator lets the operation run to its end. */
		json_object_set_new(ops[i]->metadata, "cancelRequested", json_true());
		fg_reply_json(r, 200, json_object());
	}
	fg_unlock();
}

void fg_operations_delete(struct fg_req *r, struct fg_match *mt)
{
	fg_lock();
	fg_ops_tick();
	long i = find(r, mt);
	if (i >= 0 && !ops[i]->done) {
		/* Our rule: a running operation still has work to do on its node. */
		fg_reply_error(r, 400, "FAILED_PRECONDITION", NULL,
			       "The operation is still running; delete it once it is done.");
	} else if (i >= 0) {
		op_free(ops[i]);
		memmove(ops + i, ops + i + 1, (n_ops - (size_t)i - 1) * sizeof(*ops));
		n_ops--;
		fg_reply_json(r, 200, json_object());
	}
	fg_unlock();
}
