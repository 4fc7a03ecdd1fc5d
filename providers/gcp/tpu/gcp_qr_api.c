/*
 * queuedResources.list / get / create / delete (gcp_qr.h), calls of the
 * Google REST client as gcp_client.c makes them.
 */
#include "model/node_state.h"
#include "providers/gcp/gcp_client_internal.h"
#include "providers/gcp/tpu/gcp_multislice.h"
#include "providers/gcp/tpu/gcp_node.h"
#include "providers/gcp/tpu/gcp_qr.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static char *qr_url(struct tpf_gcp_client *c, const char *zone, const char *id, const char *query)
{
	char *e = tpf_gcp_escape(id);
	char *suffix = xasprintf("/queuedResources/%s%s", e, query ? query : "");
	char *u = tpf_gcp_zone_url(c, zone, suffix);
	free(suffix);
	free(e);
	return u;
}

struct list_ctx {
	const char *zone, *fleet;
	struct tpf_gcp_qr *v;
	size_t n, alloc;
};

static int each_qr(json_t *qr, void *arg)
{
	struct list_ctx *x = arg;
	if (!tpf_gcp_qr_in_fleet(qr, x->fleet))
		return 0;
	XGROW(x->v, x->n + 1, x->alloc);
	memset(&x->v[x->n], 0, sizeof(x->v[x->n]));
	if (tpf_gcp_qr_parse(qr, x->zone, &x->v[x->n]) == 0)
		x->n++;
	else
		tpf_gcp_qr_release(&x->v[x->n]);
	return 0;
}

int tpf_gcp_list_qrs(struct tpf_gcp_client *c, const char *zone, const char *fleet,
		     struct tpf_gcp_qr **out, size_t *n, struct tpf_diags *d)
{
	char *base = tpf_gcp_zone_url(c, zone, "/queuedResources");
	char *what = xasprintf("list queued resources in zone '%s'", zone);
	struct list_ctx x = { .zone = zone, .fleet = fleet };
	int rc = tpf_gcp_list_pages(c, base, "queuedResources",
				    "nextPageToken,unreachable,queuedResources(" TPF_GCP_QR_FIELDS ")",
				    TPF_GCP_PAGE_SIZE, what, each_qr, &x, d);
	if (rc < 0) {
		for (size_t i = 0; i < x.n; i++)
			tpf_gcp_qr_release(&x.v[i]);
		free(x.v);
		x.v = NULL;
		x.n = 0;
	}
	*out = x.v;
	*n = x.n;
	free(what);
	free(base);
	return rc;
}

int tpf_gcp_get_qr(struct tpf_gcp_client *c, const char *zone, const char *id,
		   struct tpf_gcp_qr *out, struct tpf_diags *d)
{
	char *q = tpf_gcp_fields_query('?', TPF_GCP_QR_FIELDS);
	char *url = qr_url(c, zone, id, q);
	char *what = xasprintf("get queued resource '%s' in zone '%s'", id, zone);
	free(q);
	json_t *qr = NULL;
	int rc = tpf_gcp_call(c, "GET", url, NULL, what, id, TPF_GCP_QUIET(TPF_GCP_NOTFOUND), &qr,
			      NULL, d);
	if (rc == 0 && tpf_gcp_qr_parse(qr, zone, out) < 0)
		rc = tpf_errorx(d, id, NULL, "%s: the answer is not a queued resource of tpuform's",
				what);
	json_decref(qr);
	free(what);
	free(url);
	return rc;
}

static int qr_there(struct tpf_gcp_client *c, const char *zone, const char *id,
		    struct tpf_diags *d)
{
	struct tpf_gcp_qr q = { 0 };
	int rc = tpf_gcp_get_qr(c, zone, id, &q, d);
	tpf_gcp_qr_release(&q);
	return rc;
}

int tpf_gcp_delete_qr(struct tpf_gcp_client *c, const char *zone, const char *id,
		      const char *node, const char *lineage, struct tpf_diags *d)
{
	/* force=true: the discovery document says its nodes are deleted first. */
	char *url = qr_url(c, zone, id, "?force=true");
	char *what = xasprintf("delete queued resource '%s' in zone '%s'", id, zone);
	json_t *op = NULL;
	int failed = 0;
	int rc = tpf_gcp_call(c, "DELETE", url, NULL, what, id, TPF_GCP_QUIET(TPF_GCP_NOTFOUND),
			      &op, NULL, d);
	if (rc == 0)
		rc = tpf_gcp_wait_op(c, op, what, id, &failed, d);
	if (rc == 0)
		rc = tpf_gcp_wait_gone(c, zone, id, "queued resource", what, qr_there, d);
	else if (rc == TPF_ENOTFOUND)
		rc = 0; /* already gone */
	if (rc == 0 && node) {
		/* Its node should have gone with it; make sure nothing is left. */
		struct tpf_live_node n = { 0 };
		rc = tpf_gcp_get_node(c, zone, node, &n, d);
		/* A node left under that name is deleted only when it is this
		 * state's (the delete-time rule, providers/provider.h): another
		 * state may have made one since the queued resource went. */
		struct tpf_delete_guard g = { lineage, NULL, NULL, NULL, NULL };
		if (rc == 0 && lineage)
			rc = tpf_delete_check_live(&g, "node", node, zone, &n, d);
		tpf_live_node_release(&n);
		rc = rc == TPF_ENOTFOUND ? 0 : rc == 0 ? tpf_gcp_delete_node(c, zone, node, d) : rc;
	}
	json_decref(op);
	free(what);
	free(url);
	return rc;
}

/* The return code for a queued resource that FAILED or was SUSPENDED. */
static int failure_rc(const struct tpf_gcp_qr *q)
{
	/* 4: not provisioned before its valid-until time: no capacity in time */
	if (q->error_code == 4)
		return TPF_ECAPACITY;
	if (!q->error_code)
		return TPF_ERROR;
	struct tpf_gcp_error e = { .code = q->error_code, .message = q->error, .retry_delay = -1 };
	int rc = tpf_gcp_class_rc(tpf_gcp_error_classify(&e));
	/* The queued resource is over whatever the code: queuing again is a new request. */
	return rc == TPF_ETRANSIENT || rc == TPF_ENOTFOUND ? TPF_ERROR : rc;
}

/* 1 while a queued resource is on its way to ACTIVE without waiting in the queue. */
static int moving(const char *state)
{
	enum tpf_queued_state q = tpf_queued_state_of(state);
	return q == TPF_QUEUED_CREATING || q == TPF_QUEUED_PROVISIONING;
}

/* Follow the queued resource after its create operation (gcp_qr.h). */
static int follow(struct tpf_gcp_client *c, const char *zone, const char *name, const char *what,
		  struct tpf_live_node *out, struct tpf_diags *d)
{
	const struct tpf_gcp_settings *s = tpf_gcp_client_settings(c);
	double start = tpf_now_mono(), interval = s->poll_min;
	struct tpf_gcp_qr q = { 0 };
	int rc;
	for (;;) {
		rc = tpf_gcp_get_qr(c, zone, name, &q, d);
		if (rc == TPF_ENOTFOUND) {
			rc = tpf_errorx(d, name, NULL, "%s: the queued resource disappeared", what);
			break;
		}
		if (rc < 0)
			break;
		int timed_out = tpf_now_mono() - start > s->op_timeout;
		if (tpf_queued_state_of(q.state) == TPF_QUEUED_ACTIVE) {
			rc = q.recipe.slices > 1
				     ? tpf_gcp_multislice_settled(c, zone, &q, what, out, d)
				     : tpf_gcp_wait_node_settled(c, zone, q.node_id, what, out, d);
			if (rc == 0) {
				xstrset(&out->queued_state, q.state);
				out->recipe.queued = 1;
				break;
			}
			if (rc != TPF_ENOTFOUND || timed_out)
				break;
			/* ACTIVE without its node: it is being suspended; look again */
		} else if (tpf_queued_state_dead(q.state)) {
			rc = failure_rc(&q);
			tpf_errorx(d, name,
				   rc == TPF_ECAPACITY ? "if the group has another zone, tpuform "
							 "tries the group's next zone"
							 : NULL,
				   "%s: the queued resource is %s%s%s", what, q.state,
				   q.error ? ": " : "", q.error ? q.error : "");
			break;
		} else if (!moving(q.state) || timed_out) {
			/* Queued (ACCEPTED, WAITING_FOR_RESOURCES) or slow: a later
			 * refresh sees it go on; nothing waits hours here. */
			if (strcmp(q.state, "ACCEPTED") && strcmp(q.state, "WAITING_FOR_RESOURCES") &&
			    !moving(q.state)) {
				rc = tpf_errorx(d, name, NULL, "%s: the queued resource went %s", what,
						q.state);
				break;
			}
			tpf_gcp_qr_live(&q, out);
			rc = 0;
			break;
		}
		if ((rc = tpf_gcp_poll_sleep(c, interval)) < 0)
			break;
		interval = tpf_gcp_next_poll(s, interval);
	}
	tpf_gcp_qr_release(&q);
	return rc;
}

int tpf_gcp_create_qr(struct tpf_gcp_client *c, const char *name, const struct tpf_recipe *r,
		      json_t *metadata, struct tpf_live_node *out, struct tpf_diags *d)
{
	const char *zone = r->zone;
	char *what = xasprintf("queue node '%s' in zone '%s'", name, zone ? zone : "");
	char *esc = tpf_gcp_escape(name);
	char *q = xasprintf("/queuedResources?queuedResourceId=%s", esc);
	char *url = NULL;
	json_t *body = NULL, *op = NULL;
	struct tpf_gcp_outcome res = { .err = TPF_GCP_ERROR_INIT };
	int failed = 0, queued = 0, rc;

	if (!zone || !*zone) {
		rc = tpf_errorx(d, name, NULL, "%s: the recipe has no zone", what);
		goto done;
	}
	url = tpf_gcp_zone_url(c, zone, q);
	body = tpf_gcp_qr_body(tpf_gcp_client_project(c), name, r, tpf_gcp_client_external_ips(c),
			       metadata, d);
	if (!body) {
		rc = TPF_ERROR;
		goto done;
	}
	/* requestId: the API answers a repeat with the first request's
	 * operation; queuedResourceId makes any other repeat a 409, below. */
	rc = tpf_gcp_call(c, "POST", url, body, what, name,
			  TPF_GCP_QUIET(TPF_GCP_CONFLICT) | TPF_GCP_REQUEST_ID, &op, &res, d);
	if (rc < 0 && res.api_error && res.cls == TPF_GCP_CONFLICT && res.attempts > 1) {
		/* An earlier POST went through but its answer was lost: follow it. */
		queued = 1;
		rc = follow(c, zone, name, what, out, d);
	} else if (rc < 0 && res.api_error && res.cls == TPF_GCP_CONFLICT) {
		struct tpf_buf m = TPF_BUF_INIT;
		tpf_gcp_error_format(&res.err, &m);
		rc = tpf_errorx(d, name, "a queued resource or node of that name already exists in "
				"the zone; delete it, or pick another fleet or group name",
				"%s: %s", what, m.buf);
		tpf_buf_release(&m);
	} else if (rc == 0) {
		/* (Refused outright -- quota, a bad request -- nothing was queued.) */
		queued = 1;
		rc = tpf_gcp_wait_op(c, op, what, name, &failed, d);
		if (rc == 0)
			rc = follow(c, zone, name, what, out, d);
	}
	if (rc < 0 && rc != TPF_EINTERRUPTED && queued) {
		/* Leave nothing behind: a queued resource that will not give a
		 * node is deleted (the caller moves on or reports). An
		 * interrupted wait leaves it: it may yet give the node, and
		 * the next plan finds it by its labels. */
		struct tpf_diags tmp = TPF_DIAGS_INIT;
		if (tpf_gcp_delete_qr(c, zone, name, name,
				      tpf_kvlist_get(&r->labels, TPF_LABEL_LINEAGE), &tmp) < 0)
			for (size_t i = 0; i < tmp.n; i++)
				tpf_warn(d, name, "cleanup after the failed queue request: %s",
					 tmp.items[i].summary);
		tpf_diags_release(&tmp);
	}
done:
	tpf_gcp_error_release(&res.err);
	json_decref(body);
	json_decref(op);
	free(url);
	free(q);
	free(esc);
	free(what);
	return rc;
}

/* Read just before a delete: gcp_qr.h. */
int tpf_gcp_owned_now(struct tpf_gcp_client *c, const char *zone, const char *name,
		      const char *qr, const struct tpf_delete_guard *guard, int *deleting,
		      struct tpf_diags *d)
{
	struct tpf_live_node n = { 0 };
	int rc = tpf_gcp_get_node(c, zone, name, &n, d);
	if (rc == 0)
		rc = tpf_delete_check_live(guard, "node", name, zone, &n, d);
	*deleting = rc == 0 && tpf_node_state_of(n.state) == TPF_NODE_STATE_DELETING;
	tpf_live_node_release(&n);
	if (rc != TPF_ENOTFOUND || !qr)
		return rc;
	struct tpf_gcp_qr q = { 0 };
	rc = tpf_gcp_get_qr(c, zone, qr, &q, d);
	if (rc == 0)
		rc = tpf_delete_check(guard, "queued resource", qr, zone,
				      tpf_kvlist_get(&q.recipe.labels, TPF_LABEL_LINEAGE), NULL, d);
	tpf_gcp_qr_release(&q);
	return rc;
}
