/*
 * queuedResources.create / get / list / delete / reset
 * (docs/cloud-tpu-api.md sections 2 and 5).
 *
 * A queued resource asks for one node (tpu.nodeSpec[0]: parent, nodeId,
 * node). Its state is an object, {"state": ..., "stateInitiator": ...,
 * "failedData": {"error": Status}}. Its life here:
 *
 *   ACCEPTED               while its create (or reset) operation runs
 *   WAITING_FOR_RESOURCES  until the zone has capacity (--capacity, admin);
 *                          FAILED once queueingPolicy's valid-until passes
 *   PROVISIONING           the node exists, CREATING, for --op-seconds
 *   ACTIVE                 the node is READY
 *   SUSPENDED              the node was preempted, terminated or deleted:
 *                          it is gone (stateInitiator SERVICE)
 *   DELETING               while a delete operation runs; force=true takes
 *                          the node with it, without force a queued
 *                          resource with a node is refused unless ACCEPTED,
 *                          FAILED or SUSPENDED (the discovery document)
 *
 * A multislice queued resource (fg_multislice.c) asks for nodeCount nodes
 * named from nodeIdPrefix: they are made together, it is ACTIVE when all
 * are READY, and one preempted, terminated or gone suspends it (all go).
 *
 * Where a nodes.create fails for capacity (operation code 8), a queued
 * resource waits. Quota is checked at create time (HTTP 429) as for nodes.
 * Nothing runs in the background: fg_qrs_tick() moves queued resources on
 * whenever fg_ops_tick() runs, i.e. before any answer that could show it.
 * Wording marked "ours" below is not on record for the real API.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

#define QR_TYPE "type.googleapis.com/google.cloud.tpu.v2.QueuedResource"
#define NODE_AT "queued_resource.tpu.node_spec[0].node"

struct fg_qr {
	char *zone;
	char *id;           /* queuedResourceId, the last segment of the name */
	json_t *res;        /* the QueuedResource as served */
	char *node_id;      /* tpu.nodeSpec[0].nodeId; multislice: the node id prefix */
	int count;          /* multislice: multisliceParams.nodeCount (> 1); else 0 */
	json_t *node;       /* tpu.nodeSpec[0].node as asked for (checked) */
	char *type;         /* its accelerator type */
	int spot;           /* the spot tier: the node is a spot node */
	double valid_until; /* monotonic deadline to leave WAITING_FOR_RESOURCES, 0: none */
	double ready_at;    /* PROVISIONING: when the node becomes READY */
	char *create_op;    /* create or reset operation still running */
	int deleting;       /* a delete operation runs */
};

static struct fg_qr **qrs;
static size_t n_qrs, a_qrs;

static char *qr_name(const char *zone, const char *id)
{
	return xasprintf("projects/%s/locations/%s/queuedResources/%s", fg_opt.project, zone, id);
}

static struct fg_qr *qr_find(const char *zone, const char *id)
{
	for (size_t i = 0; i < n_qrs; i++)
		if (!strcmp(qrs[i]->zone, zone) && !strcmp(qrs[i]->id, id))
			return qrs[i];
	return NULL;
}

static void qr_free(struct fg_qr *q)
{
	free(q->zone);
	free(q->id);
	json_decref(q->res);
	free(q->node_id);
	json_decref(q->node);
	free(q->type);
	free(q->create_op);
	free(q);
}

static void qr_remove(struct fg_qr *q)
{
	for (size_t i = 0; i < n_qrs; i++) {
		if (qrs[i] != q)
			continue;
		memmove(qrs + i, qrs + i + 1, (n_qrs - i - 1) * sizeof(*qrs));
		n_qrs--;
		qr_free(q);
		return;
	}
}

void fg_qrs_free(void)
{
	for (size_t i = 0; i < n_qrs; i++)
		qr_free(qrs[i]);
	free(qrs);
	qrs = NULL;
	n_qrs = a_qrs = 0;
}

static const char *state_of(const struct fg_qr *q)
{
	const char *s = json_string_value(json_object_get(json_object_get(q->res, "state"), "state"));

	return s ? s : "STATE_UNSPECIFIED";
}

/* state.state = state; initiator and error (stolen) may be NULL. */
static void set_state(struct fg_qr *q, const char *state, const char *initiator, json_t *error)
{
	json_t *st = json_pack("{s:s}", "state", state);

	if (initiator)
		json_object_set_new(st, "stateInitiator", json_string(initiator));
	if (error)
		json_object_set_new(st, "failedData", json_pack("{s:o}", "error", error));
	json_object_set_new(q->res, "state", st);
}

/* How many nodes q asks for, and the id of its k-th (fresh). */
static int qr_count(const struct fg_qr *q)
{
	return q->count > 1 ? q->count : 1;
}

static char *qr_node_id(const struct fg_qr *q, int k)
{
	return q->count > 1 ? fg_ms_node_id(q->node_id, k) : xstrdup(q->node_id);
}

/* Node k this queued resource made, or NULL (a node of the same id made
 * otherwise is not its). */
static struct fg_node *node_k(const struct fg_qr *q, int k)
{
	char *id = qr_node_id(q, k);
	struct fg_node *n = fg_node_find(q->zone, id);
	char *name = qr_name(q->zone, q->id);
	const char *owner = n ? json_string_value(json_object_get(n->res, "queuedResource")) : NULL;
	int mine = owner && !strcmp(owner, name);

	free(name);
	free(id);
	return mine ? n : NULL;
}

/* Its first node when every one of its nodes exists, else NULL. */
static struct fg_node *node_of(const struct fg_qr *q)
{
	for (int k = 0; k < qr_count(q); k++)
		if (!node_k(q, k))
			return NULL;
	return node_k(q, 0);
}

/* 1 if any of its nodes exists. */
static int any_node(const struct fg_qr *q)
{
	for (int k = 0; k < qr_count(q); k++)
		if (node_k(q, k))
			return 1;
	return 0;
}

/* 1 if any of its nodes is in state s. */
static int any_state(const struct fg_qr *q, const char *s)
{
	for (int k = 0; k < qr_count(q); k++) {
		struct fg_node *n = node_k(q, k);
		if (n && !strcmp(json_string_value(json_object_get(n->res, "state")), s))
			return 1;
	}
	return 0;
}

/* Nodes in state `from` (NULL: any) go to `to`. */
static void set_nodes(const struct fg_qr *q, const char *from, const char *to)
{
	for (int k = 0; k < qr_count(q); k++) {
		struct fg_node *n = node_k(q, k);
		if (n && (!from || !strcmp(json_string_value(json_object_get(n->res, "state")), from)))
			fg_node_set_state(n, to);
	}
}

/* The id of a node (not its) already holding one of its names, fresh, or NULL. */
static char *taken_id(const struct fg_qr *q)
{
	for (int k = 0; k < qr_count(q); k++) {
		char *id = qr_node_id(q, k);
		if (fg_node_find(q->zone, id))
			return id;
		free(id);
	}
	return NULL;
}

static void drop_node(struct fg_qr *q)
{
	for (int k = 0; k < qr_count(q); k++) {
		struct fg_node *n = node_k(q, k);
		if (n)
			fg_node_remove(n);
	}
}

static json_t *typed(const struct fg_qr *q)
{
	json_t *out = json_pack("{s:s}", "@type", QR_TYPE);

	json_object_update(out, q->res);
	return out;
}

/* Seconds of a google-duration ("21600s", "1.5s"); -1 if malformed. */
static double duration_seconds(const char *s)
{
	char *end;
	double v = s ? strtod(s, &end) : -1;

	return s && end != s && end[0] == 's' && !end[1] && v >= 0 ? v : -1;
}

/* Wall-clock seconds of an RFC 3339 timestamp; -1 if malformed. */
static double timestamp_seconds(const char *s)
{
	struct tm tm;
	const char *p;
	double frac = 0;
	long off = 0;

	memset(&tm, 0, sizeof(tm));
	p = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	if (!p)
		return -1;
	if (*p == '.') {
		char *end;
		frac = strtod(p, &end);
		p = end;
	}
	if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':')
		off = (*p == '-' ? -1 : 1) * (atol(p + 1) * 3600 + atol(p + 4) * 60);
	else if (strcmp(p, "Z") && strcmp(p, "z"))
		return -1;
	return (double)timegm(&tm) - (double)off + frac;
}

/* The monotonic time after which the queued resource may no longer be
 * provisioned (queueingPolicy validUntilDuration / validUntilTime /
 * validInterval.endTime, the earliest), or 0 for none. */
static double deadline(json_t *policy, double now)
{
	struct timespec ts;
	double best = 0, wall;
	double d = duration_seconds(json_string_value(json_object_get(policy, "validUntilDuration")));

	clock_gettime(CLOCK_REALTIME, &ts);
	wall = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	if (d >= 0)
		best = now + d;
	const char *times[2] = {
		json_string_value(json_object_get(policy, "validUntilTime")),
		json_string_value(json_object_get(json_object_get(policy, "validInterval"), "endTime")),
	};
	for (int i = 0; i < 2; i++) {
		double t = timestamp_seconds(times[i]);
		if (t >= 0 && (best == 0 || now + (t - wall) < best))
			best = now + (t - wall);
	}
	return best;
}

/* Create the queued resource's node(s) (CREATING), move to PROVISIONING. */
static void provision(struct fg_qr *q, double now)
{
	json_t *body = json_deep_copy(q->node);
	char *name = qr_name(q->zone, q->id);

	if (q->count > 1) /* Node.multisliceNode, output only */
		json_object_set_new(body, "multisliceNode", json_true());
	/* The spot tier gives a spot node. */
	if (q->spot) {
		json_t *sc = json_object_get(body, "schedulingConfig");
		if (!json_is_object(sc)) {
			sc = json_object();
			json_object_set_new(body, "schedulingConfig", sc);
		}
		json_object_set_new(sc, "spot", json_true());
	}
	for (int k = 0; k < qr_count(q); k++) {
		char *id = qr_node_id(q, k);
		struct fg_node *n = fg_node_new(q->zone, id, body, q->type);
		json_object_set_new(n->res, "queuedResource", json_string(name));
		fg_node_add(n);
		free(id);
	}
	set_state(q, "PROVISIONING", NULL, NULL);
	q->ready_at = now + fg_opt.op_seconds;
	json_decref(body);
	free(name);
}

/* One queued resource's automatic transitions, as far as they go now. */
static void advance(struct fg_qr *q, double now)
{
	const char *s = state_of(q);
	struct fg_node *n = node_of(q);

	if (q->deleting)
		return; /* its delete operation finishes it */
	if (!strcmp(s, "ACCEPTED")) {
		if (q->create_op)
			return;
		set_state(q, "WAITING_FOR_RESOURCES", NULL, NULL);
		s = state_of(q);
	}
	if (!strcmp(s, "WAITING_FOR_RESOURCES")) {
		char *taken = NULL;
		if (any_node(q)) {
			/* resources came back (an admin set this state): go on */
			set_state(q, "PROVISIONING", NULL, NULL);
			q->ready_at = now;
		} else if (q->valid_until > 0 && now >= q->valid_until) {
			/* Ours: the real wording is not on record. */
			char *msg = xasprintf("The queued resource could not be provisioned in zone "
					      "\"%s\" before its valid-until time.", q->zone);
			set_state(q, "FAILED", "SERVICE", fg_status_new(4, msg));
			free(msg);
			return;
		} else if ((taken = taken_id(q))) {
			char *node = fg_node_name(q->zone, taken);
			char *msg = xasprintf("Resource '%s' already exists", node);
			set_state(q, "FAILED", "SERVICE", fg_status_new(6, msg));
			free(msg);
			free(node);
			free(taken);
			return;
		} else if (fg_capacity_full(q->zone)) {
			return;
		} else {
			provision(q, now);
			n = node_of(q);
		}
		s = state_of(q);
	}
	if (!strcmp(s, "PROVISIONING")) {
		if (!n) {
			drop_node(q);
			set_state(q, "SUSPENDED", "SERVICE", NULL);
			return;
		}
		if (now < q->ready_at)
			return;
		set_nodes(q, "CREATING", "READY");
		set_state(q, "ACTIVE", NULL, NULL);
		s = state_of(q);
	}
	if (!strcmp(s, "ACTIVE")) {
		/* A preempted or lost node (of a multislice one: any slice) ends
		 * the queued resource's lease: all its nodes go. */
		if (!n || any_state(q, "PREEMPTED") || any_state(q, "TERMINATED")) {
			drop_node(q);
			set_state(q, "SUSPENDED", "SERVICE", NULL);
		}
	} else if (!strcmp(s, "SUSPENDING")) {
		drop_node(q);
		set_state(q, "SUSPENDED", "SERVICE", NULL);
	}
}

void fg_qrs_hurry(void)
{
	for (size_t i = 0; i < n_qrs; i++)
		qrs[i]->ready_at = 0;
}

void fg_qrs_tick(void)
{
	double now = fg_mono();

	for (size_t i = 0; i < n_qrs; i++)
		advance(qrs[i], now);
}

void fg_qr_op_finish(struct fg_op *op)
{
	struct fg_qr *q = qr_find(op->zone, op->node_id);

	if (!strcmp(op->verb, "delete")) {
		if (q && q->deleting) {
			drop_node(q);
			qr_remove(q);
		}
		op->response = json_pack("{s:s}", "@type", "type.googleapis.com/google.protobuf.Empty");
		return;
	}
	/* create, reset */
	if (!q || !q->create_op || strcmp(q->create_op, op->name)) {
		op->error = fg_status_new(10, "The queued resource was deleted before the operation "
					      "finished.");
		return;
	}
	free(q->create_op);
	q->create_op = NULL;
	advance(q, fg_mono());
	op->response = typed(q);
}

static struct fg_op *qr_op(const struct fg_qr *q, const char *verb)
{
	struct fg_op *op = fg_op_start(q->zone, q->id, verb);
	char *name = qr_name(q->zone, q->id);

	op->qr = 1;
	json_object_set_new(op->metadata, "target", json_string(name));
	free(name);
	return op;
}

static void not_found(struct fg_req *r, const char *zone, const char *id)
{
	char *name = qr_name(zone, id);

	fg_reply_error(r, 404, "NOT_FOUND", json_pack("[o]", fg_resource_info(name)),
		       "Resource '%s' was not found", name);
	free(name);
}

/* The discovery document: ^[A-Za-z0-9_.~+%-]+$ */
static int qr_id_ok(const char *id)
{
	if (!*id)
		return 0;
	for (const char *p = id; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_.~+%-", *p))
			return 0;
	return 1;
}

/* parent is projects/{project id or number}/locations/{zone}. */
static int parent_ok(const char *parent, const char *zone)
{
	char *a = xasprintf("projects/%s/locations/%s", fg_opt.project, zone);
	char *b = xasprintf("projects/%s/locations/%s", fg_opt.project_number, zone);
	int ok = parent && (!strcmp(parent, a) || !strcmp(parent, b));

	free(a);
	free(b);
	return ok;
}

/* The checks of create that need no lock; the node spec on success, with
 * *count and *prefix (fresh) for a multislice one (fg_multislice.c). */
static json_t *check_create(struct fg_req *r, const char *zone, const char *id, json_t *body,
			    char **type, int *count, char **prefix)
{
	json_t *specs = json_object_get(json_object_get(body, "tpu"), "nodeSpec");
	json_t *spec = json_array_get(specs, 0);
	const char *node_id = json_string_value(json_object_get(spec, "nodeId"));

	*type = NULL;
	if (json_object_get(body, "spot") && json_object_get(body, "guaranteed")) {
		fg_bad_request(r, "queued_resource", "Cloud TPU received a bad request. Only one "
			       "tier (spot or guaranteed) may be set."); /* ours */
		return NULL;
	}
	if (json_array_size(specs) != 1) {
		fg_bad_request(r, "queued_resource.tpu.node_spec", "Cloud TPU received a bad "
			       "request. fakegcp serves queued resources of exactly one node spec.");
		return NULL;
	}
	*count = 0;
	*prefix = NULL;
	if (json_object_get(spec, "multisliceParams")) {
		if (fg_ms_params(r, spec, id, count, prefix) < 0)
			return NULL;
	} else if (!node_id || !*node_id) {
		fg_bad_request(r, "queued_resource.tpu.node_spec[0].node_id", "Cloud TPU received a "
			       "bad request. node_id is required without multislice_params."); /* ours */
		return NULL;
	} else if (!fg_node_id_ok(node_id)) {
		fg_bad_request(r, "queued_resource.tpu.node_spec[0].node_id", "Cloud TPU received a "
			       "bad request. Node ID must match regex ^[a-z]([-a-z0-9]*[a-z0-9])?$ "
			       "and be at most 63 characters.");
		return NULL;
	}
	if (!parent_ok(json_string_value(json_object_get(spec, "parent")), zone)) {
		char *msg = xasprintf("Cloud TPU received a bad request. node_spec.parent must be "
				      "\"projects/%s/locations/%s\".", fg_opt.project, zone); /* ours */
		fg_bad_request(r, "queued_resource.tpu.node_spec[0].parent", msg);
		free(msg);
		return NULL;
	}
	if (fg_node_body_check(r, zone, json_object_get(spec, "node"), NODE_AT, type) < 0) {
		free(*prefix);
		*prefix = NULL;
		return NULL;
	}
	return spec;
}

void fg_qr_create(struct fg_req *r, struct fg_match *mt)
{
	const char *zone = fg_match_var(mt, "locationsId");
	const char *id = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND,
						     "queuedResourceId");
	json_t *body = mt->body, *spec;
	char *type = NULL, *name = NULL, *quota = NULL, *prefix = NULL, *taken = NULL;
	int count = 0;
	char ts[40];

	if (!id || !*id) {
		fg_bad_request(r, "queued_resource_id", "Cloud TPU received a bad request. The "
			       "queued_resource_id query parameter is required by this emulator.");
		return;
	}
	if (!qr_id_ok(id)) {
		fg_bad_request(r, "queued_resource_id", "Cloud TPU received a bad request. The "
			       "queued resource id must match regex ^[A-Za-z0-9_.~+%-]+$.");
		return;
	}
	if (!(spec = check_create(r, zone, id, body, &type, &count, &prefix)))
		return;
	const char *node_id = prefix ? prefix : json_string_value(json_object_get(spec, "nodeId"));
	json_t *node = json_object_get(spec, "node");
	int spot = json_object_get(body, "spot") != NULL;

	fg_lock();
	fg_ops_tick();
	name = qr_name(zone, id);
	if (qr_find(zone, id)) {
		fg_reply_error(r, 409, "ALREADY_EXISTS", json_pack("[o]", fg_resource_info(name)),
			       "Resource '%s' already exists", name);
		goto done;
	}
	struct fg_qr want = { .zone = (char *)zone, .node_id = (char *)node_id, .count = count };
	taken = taken_id(&want);
	for (size_t i = 0; i < n_qrs && !taken; i++)
		for (int k = 0; k < qr_count(qrs[i]) && !taken && !strcmp(qrs[i]->zone, zone); k++)
			for (int j = 0; j < qr_count(&want) && !taken; j++) {
				char *a = qr_node_id(qrs[i], k), *b = qr_node_id(&want, j);
				if (!strcmp(a, b))
					taken = xstrdup(b);
				free(a);
				free(b);
			}
	if (taken) {
		char *node_name = fg_node_name(zone, taken);
		fg_reply_error(r, 409, "ALREADY_EXISTS", json_pack("[o]", fg_resource_info(node_name)),
			       "Resource '%s' already exists", node_name);
		free(node_name);
		goto done;
	}
	quota = fg_quota_refusal(r, zone, type, spot ? FG_SPOT : fg_sched_of(node),
				 fg_type_workers(type) * qr_count(&want));
	if (quota)
		goto done;

	struct fg_qr *q = xcalloc(1, sizeof(*q));
	q->zone = xstrdup(zone);
	q->id = xstrdup(id);
	q->node_id = xstrdup(node_id);
	q->count = count;
	q->node = json_deep_copy(node);
	q->type = type;
	type = NULL;
	q->spot = spot;
	q->valid_until = deadline(json_object_get(body, "queueingPolicy"), fg_mono());
	q->res = json_pack("{s:s}", "name", name);
	json_object_update(q->res, body);
	fg_timestamp(ts);
	json_object_set_new(q->res, "createTime", json_string(ts));
	set_state(q, "ACCEPTED", NULL, NULL);
	fg_proto3_prune("QueuedResource", q->res);
	XGROW(qrs, n_qrs + 1, a_qrs);
	qrs[n_qrs++] = q;
	struct fg_op *op = qr_op(q, "create");
	q->create_op = xstrdup(op->name);
	fg_reply_json(r, 200, fg_op_json(op));
done:
	fg_unlock();
	free(type);
	free(name);
	free(quota);
	free(prefix);
	free(taken);
}

void fg_qr_get(struct fg_req *r, struct fg_match *mt)
{
	const char *zone = fg_match_var(mt, "locationsId");
	const char *id = fg_match_var(mt, "queuedResourcesId");

	fg_lock();
	fg_ops_tick();
	struct fg_qr *q = qr_find(zone, id);
	if (q)
		fg_reply_json(r, 200, json_deep_copy(q->res));
	else
		not_found(r, zone, id);
	fg_unlock();
}

static int by_id(const void *a, const void *b)
{
	const struct fg_qr *x = *(struct fg_qr *const *)a, *y = *(struct fg_qr *const *)b;

	return strcmp(x->id, y->id);
}

void fg_qr_list(struct fg_req *r, struct fg_match *mt)
{
	const char *zone = fg_match_var(mt, "locationsId");
	int size;
	char *after = NULL;
	size_t count = 0, i = 0;

	if (fg_page_params(r, &size, &after) < 0)
		return;
	fg_lock();
	fg_ops_tick();
	struct fg_qr **v = xcalloc(n_qrs + 1, sizeof(*v));
	for (size_t k = 0; k < n_qrs; k++)
		if (!strcmp(qrs[k]->zone, zone))
			v[count++] = qrs[k];
	qsort(v, count, sizeof(*v), by_id);
	json_t *out = json_object(), *arr = json_array();
	if (after)
		while (i < count && strcmp(v[i]->id, after) <= 0)
			i++;
	for (; i < count && json_array_size(arr) < (size_t)size; i++)
		json_array_append_new(arr, json_deep_copy(v[i]->res));
	/* proto3 JSON: an empty list is absent, so the answer may be {}. */
	if (json_array_size(arr))
		json_object_set(out, "queuedResources", arr);
	if (i < count) {
		char *tok = fg_page_token(v[i - 1]->id);
		json_object_set_new(out, "nextPageToken", json_string(tok));
		free(tok);
	}
	json_decref(arr);
	free(v);
	fg_unlock();
	free(after);
	fg_reply_json(r, 200, out);
}

void fg_qr_delete(struct fg_req *r, struct fg_match *mt)
{
	const char *zone = fg_match_var(mt, "locationsId");
	const char *id = fg_match_var(mt, "queuedResourcesId");
	const char *fv = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "force");
	int force = fv && !strcasecmp(fv, "true"); /* gcloud: force=True */

	fg_lock();
	fg_ops_tick();
	struct fg_qr *q = qr_find(zone, id);
	const char *s = q ? state_of(q) : "";
	int n = q && any_node(q);
	if (!q) {
		not_found(r, zone, id);
	} else if (!force && n && !q->deleting && strcmp(s, "ACCEPTED") && strcmp(s, "FAILED") &&
		   strcmp(s, "SUSPENDED")) {
		/* The rule is the discovery document's; the wording is ours. */
		fg_reply_error(r, 400, "FAILED_PRECONDITION", NULL,
			       "Cloud TPU received a bad request. The queued resource still has "
			       "nodes in state %s; delete them first or set force=true.", s);
	} else {
		/* A repeated delete starts another operation that ends the same way. */
		if (!q->deleting)
			set_state(q, "DELETING", "USER", NULL);
		q->deleting = 1;
		set_nodes(q, NULL, "DELETING");
		fg_reply_json(r, 200, fg_op_json(qr_op(q, "delete")));
	}
	fg_unlock();
}

void fg_qr_reset(struct fg_req *r, struct fg_match *mt)
{
	const char *zone = fg_match_var(mt, "locationsId");
	const char *id = fg_match_var(mt, "queuedResourcesId");

	fg_lock();
	fg_ops_tick();
	struct fg_qr *q = qr_find(zone, id);
	const char *s = q ? state_of(q) : "";
	if (!q) {
		not_found(r, zone, id);
	} else if (q->deleting || (strcmp(s, "FAILED") && strcmp(s, "SUSPENDED"))) {
		fg_reply_error(r, 400, "FAILED_PRECONDITION", NULL,
			       "Cloud TPU received a bad request. reset is supported only in state "
			       "FAILED or SUSPENDED, not %s.", s); /* ours */
	} else {
		drop_node(q);
		set_state(q, "ACCEPTED", NULL, NULL);
		q->valid_until = deadline(json_object_get(q->res, "queueingPolicy"), fg_mono());
		struct fg_op *op = qr_op(q, "reset");
		xstrset(&q->create_op, op->name);
		fg_reply_json(r, 200, fg_op_json(op));
	}
	fg_unlock();
}

json_t *fg_qrs_all_json(void)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < n_qrs; i++)
		json_array_append_new(arr, json_deep_copy(qrs[i]->res));
	return arr;
}

static int qr_state_known(const char *s)
{
	json_t *en = json_object_get(json_object_get(json_object_get(
		fg_schema("QueuedResourceState"), "properties"), "state"), "enum");
	size_t i;
	json_t *e;

	json_array_foreach(en, i, e)
		if (!strcmp(json_string_value(e), s))
			return 1;
	return 0;
}

/* POST /__admin/queuedResources/{zone}/{id}:state?value=X[&code=N&message=M]
 * and :delete (gone at once, with its node). */
void fg_qr_admin(struct fg_req *r, const char *rest)
{
	const char *slash = strchr(rest, '/');
	const char *colon = slash ? strrchr(slash, ':') : NULL;
	const char *value = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "value");
	const char *code = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "code");
	const char *message = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "message");

	if (!slash || !colon || colon == slash + 1) {
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
			       "expected /__admin/queuedResources/ZONE/ID:ACTION");
		return;
	}
	char *zone = xstrndup(rest, (size_t)(slash - rest));
	char *id = xstrndup(slash + 1, (size_t)(colon - slash - 1));
	const char *action = colon + 1;

	fg_lock();
	fg_ops_tick();
	struct fg_qr *q = qr_find(zone, id);
	if (!q) {
		fg_reply_error(r, 404, "NOT_FOUND", NULL, "no queued resource '%s' in zone '%s'", id,
			       zone);
	} else if (!strcmp(action, "delete")) {
		drop_node(q);
		qr_remove(q);
		fg_reply_json(r, 200, json_pack("{s:b}", "ok", 1));
	} else if (strcmp(action, "state")) {
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
			       "unknown queued resource action; expected state or delete");
	} else if (!value || !qr_state_known(value)) {
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
			       "expected ?value= one of the QueuedResourceState states in the "
			       "discovery document, e.g. FAILED or SUSPENDED");
	} else {
		json_t *err = NULL;
		if (!strcmp(value, "FAILED"))
			err = fg_status_new(code ? atoi(code) : 13,
					    message ? message : "The queued resource failed "
								"(set by the fakegcp admin endpoint).");
		if (!strcmp(value, "FAILED") || !strcmp(value, "SUSPENDED"))
			drop_node(q); /* its resources are gone */
		char *taken = taken_id(q);
		if (!strcmp(value, "PROVISIONING") && !any_node(q) && !taken)
			provision(q, fg_mono()); /* capacity found: the node comes */
		else
			set_state(q, value, err || !strncmp(value, "SUSPEND", 7) ? "SERVICE" : NULL,
				  err);
		if (!strcmp(value, "PROVISIONING"))
			q->ready_at = fg_mono() + fg_opt.op_seconds;
		free(taken);
		fg_reply_json(r, 200, json_pack("{s:b}", "ok", 1));
	}
	fg_unlock();
	free(zone);
	free(id);
}
