/*
 * Admin endpoints under /__admin/ (tests/fakegcp/README.md): what Google
 * does to nodes on its own (preemption, maintenance), knobs for quota,
 * capacity and faults, the request log, and shutdown. No auth, no faults,
 * not logged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

static const char *arg(struct fg_req *r, const char *key)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

static void ok(struct fg_req *r)
{
	fg_reply_json(r, 200, json_pack("{s:b}", "ok", 1));
}

static void bad(struct fg_req *r, const char *msg)
{
	fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "%s", msg);
}

/* "N", or "none"/"unlimited"/negative for no limit (-1). */
static int limit_value(const char *v, long *out)
{
	char *end;

	if (!v || !*v)
		return -1;
	if (!strcmp(v, "none") || !strcmp(v, "unlimited")) {
		*out = -1;
		return 0;
	}
	*out = strtol(v, &end, 10);
	return *end ? -1 : 0;
}

static int state_known(const char *s)
{
	json_t *en = json_object_get(
		json_object_get(json_object_get(fg_schema("Node"), "properties"), "state"), "enum");
	size_t i;
	json_t *e;

	json_array_foreach(en, i, e)
		if (!strcmp(json_string_value(e), s))
			return 1;
	return 0;
}

/* POST /__admin/nodes/{zone}/{node}:{preempt|terminate|delete|state|health}, and the
 * condition actions of fg_condition.c */
static void node_action(struct fg_req *r, const char *rest)
{
	const char *slash = strchr(rest, '/');
	const char *colon = slash ? strrchr(slash, ':') : NULL;
	const char *value = arg(r, "value");

	if (!slash || !colon || colon == slash + 1) {
		bad(r, "expected /__admin/nodes/ZONE/NODE:ACTION");
		return;
	}
	char *zone = xstrndup(rest, (size_t)(slash - rest));
	char *id = xstrndup(slash + 1, (size_t)(colon - slash - 1));
	const char *action = colon + 1;

	fg_lock();
	fg_ops_tick();
	struct fg_node *n = fg_node_find(zone, id);
	if (!n) {
		fg_reply_error(r, 404, "NOT_FOUND", NULL, "no node '%s' in zone '%s'", id, zone);
	} else if (!strcmp(action, "preempt")) {
		fg_node_set_state(n, "PREEMPTED");
		ok(r);
	} else if (!strcmp(action, "terminate")) {
		fg_node_set_state(n, "TERMINATED");
		ok(r);
	} else if (!strcmp(action, "delete")) {
		fg_node_remove(n);
		ok(r);
	} else if (!strcmp(action, "state")) {
		if (!value || !state_known(value)) {
			bad(r, "expected ?value= one of the Node states in the discovery document, "
			       "e.g. REPAIRING");
		} else {
			fg_node_set_state(n, value);
			ok(r);
		}
	} else if (!strcmp(action, "health")) {
		if (!value || !*value) {
			bad(r, "expected ?value=, e.g. UNHEALTHY_MAINTENANCE");
		} else {
			json_object_set_new(n->res, "health", json_string(value));
			ok(r);
		}
	} else {
		const char *why = fg_node_condition(r, n, action);
		if (why)
			bad(r, why);
		else
			ok(r);
	}
	fg_unlock();
	free(zone);
	free(id);
}

static void set_capacity(struct fg_req *r)
{
	const char *zone = arg(r, "zone");
	long v;

	if (!zone || !*zone || limit_value(arg(r, "value"), &v) < 0) {
		bad(r, "expected ?zone=Z&value=N (N < 0 or 'none' removes the limit)");
		return;
	}
	fg_lock();
	fg_capacity_set(zone, v);
	fg_unlock();
	ok(r);
}

static void set_quota(struct fg_req *r)
{
	const char *zone = arg(r, "zone"), *type = arg(r, "type"), *sched = arg(r, "sched");
	long v;
	int rc = -1;

	if (zone && sched && limit_value(arg(r, "value"), &v) == 0) {
		fg_lock();
		rc = fg_quota_set(zone, type ? type : "*", sched, v);
		fg_unlock();
	}
	if (rc < 0)
		bad(r, "expected ?zone=Z&type=T&sched=preemptible|spot|on-demand&value=N");
	else
		ok(r);
}

static void set_faults(struct fg_req *r)
{
	const char *rate = arg(r, "rate"), *kinds = arg(r, "kinds"), *seed = arg(r, "seed");
	char *end = NULL;
	double v = rate ? strtod(rate, &end) : 0;

	if (!rate || *end || fg_faults_set(v, kinds ? kinds : "429,500,503") < 0) {
		bad(r, "expected ?rate=0..1&kinds=429,500,502,503,504,drop,slow");
		return;
	}
	if (seed) {
		fg_lock();
		fg_faults_seed(strtoull(seed, NULL, 10));
		fg_unlock();
	}
	ok(r);
}

static json_t *all_nodes(void)
{
	size_t count;
	json_t *arr = json_array();

	fg_lock();
	fg_ops_tick();
	struct fg_node **v = fg_nodes_in(NULL, &count);
	for (size_t i = 0; i < count; i++)
		json_array_append_new(arr, json_deep_copy(v[i]->res));
	free(v);
	fg_unlock();
	return arr;
}

void fg_admin_serve(struct fg_req *r)
{
	const char *p = r->path + strlen("/__admin/");
	int get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST");

	r->no_log = 1;
	if (post && !strcmp(p, "nodes:seed")) {
		fg_admin_seed(r);
	} else if (post && !strncmp(p, "nodes/", 6)) {
		node_action(r, p + 6);
	} else if (post && !strncmp(p, "queuedResources/", 16)) {
		fg_qr_admin(r, p + 16);
	} else if (get && !strcmp(p, "queuedResources")) {
		fg_lock();
		fg_ops_tick();
		json_t *qrs = fg_qrs_all_json();
		fg_unlock();
		fg_reply_json(r, 200, qrs);
	} else if (get && !strcmp(p, "nodes")) {
		fg_reply_json(r, 200, all_nodes());
	} else if (get && !strcmp(p, "operations")) {
		fg_lock();
		fg_ops_tick();
		json_t *ops = fg_ops_all_json();
		fg_unlock();
		fg_reply_json(r, 200, ops);
	} else if (post && !strcmp(p, "operations:finish")) {
		/* Lets a test see an operation end without waiting --op-seconds. */
		fg_lock();
		fg_ops_finish_all();
		fg_unlock();
		ok(r);
	} else if (post && !strcmp(p, "capacity")) {
		set_capacity(r);
	} else if (post && !strcmp(p, "quota")) {
		set_quota(r);
	} else if (get && !strcmp(p, "limits")) {
		fg_lock();
		json_t *l = fg_limits_json();
		fg_unlock();
		fg_reply_json(r, 200, l);
	} else if (post && !strcmp(p, "faults")) {
		set_faults(r);
	} else if (get && !strcmp(p, "faults")) {
		fg_reply_json(r, 200, fg_faults_json());
	} else if (get && !strcmp(p, "requests")) {
		fg_reply_json(r, 200, fg_reqlog_json());
	} else if (post && !strcmp(p, "requests:clear")) {
		fg_reqlog_clear();
		ok(r);
	} else if (post && !strcmp(p, "tokens:revoke")) {
		fg_lock();
		fg_token_revoke_all();
		fg_unlock();
		ok(r);
	} else if (!strncmp(p, "storage", 7)) {
		fg_gcs_admin(r, p);
	} else if (!strncmp(p, "compute", 7) && (!p[7] || p[7] == '/' || p[7] == ':')) {
		fg_compute_admin(r, p);
	} else if (!strcmp(p, "oslogin")) {
		fg_oslogin_admin(r);
	} else if (post && !strcmp(p, "guest-metadata")) {
		fg_guest_md_admin(r);
	} else if (get && !strcmp(p, "health")) {
		ok(r);
	} else if (post && !strcmp(p, "shutdown")) {
		r->shutdown_after = 1;
		ok(r);
	} else {
		fg_reply_error(r, 404, "NOT_FOUND", NULL, "no admin endpoint %s %s", r->method,
			       r->path);
	}
}
