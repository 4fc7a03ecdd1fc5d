/*
 * Multi-host TPU slices on Compute Engine as managed instance groups
 * (providers/gcp/compute/compute_engine.h; docs/compute-engine.md "Multi-host slices";
 * reference section 4.1): an instance template (global) -> a regional
 * workload policy {type HIGH_THROUGHPUT, acceleratorTopology} -> a zonal
 * MIG {targetSize = VMs, resourcePolicies.workloadPolicy, targetSizePolicy
 * BULK, instanceLifecyclePolicy.defaultActionOnFailure DO_NOTHING,
 * updatePolicy OPPORTUNISTIC}.
 *
 * Names, for node N: MIG N, template N-t, workload policy N-wp, members
 * N-001, N-002, ... (baseInstanceName "N-###": the API numbers members when
 * the base ends in -###, InstanceGroupManager.baseInstanceName). A MIG has
 * no labels: its description is a JSON object of the node's labels plus
 * "topology" and "machine_type", which refresh matches on the client; the
 * members carry the node's labels and tpuform-slice=N.
 */
#include "providers/gcp/compute/compute_engine.h"
#include "providers/gcp/compute/compute_internal.h"
#include "providers/gcp/gcp_client_internal.h"
#include "providers/gcp/gcp_fields.h"
#include "model/node_state.h"
#include "util/str.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

char *tpf_compute_slice_part(const char *node, const char *suffix)
{
	return xasprintf("%s-%s", node, suffix);
}

char *tpf_compute_mig_description(const char *name, const struct tpf_recipe *r)
{
	json_t *o = json_object();
	for (size_t i = 0; i < r->labels.n; i++)
		json_object_set_new(o, r->labels.items[i].key, json_string(r->labels.items[i].value));
	json_object_set_new(o, "tpuform-slice", json_string(name));
	json_object_set_new(o, "topology", json_string(r->node.topology ? r->node.topology : ""));
	json_object_set_new(o, "machine_type", json_string(r->compute.machine_type));
	/* What a slice with no member yet (BULK waits for all) must still
	 * report, so that its plan does not see a change: the provisioning */
	if (r->compute.flex_start)
		json_object_set_new(o, "flex_start", json_true());
	if (r->spot)
		json_object_set_new(o, "spot", json_true());
	if (r->compute.max_run_duration > 0)
		json_object_set_new(o, "max_run_duration", json_integer(r->compute.max_run_duration));
	/* A slice of a multislice node NODE is MIG NODE-k
	 * (compute_multislice.c): its unit, its index and how many. */
	const char *dash = strrchr(name, '-');
	if (tpf_recipe_slices(r) > 1 && dash && dash[1] &&
	    strspn(dash + 1, "0123456789") == strlen(dash + 1)) {
		json_object_set_new(o, "unit", json_stringn(name, (size_t)(dash - name)));
		json_object_set_new(o, "slice_index", json_integer(atol(dash + 1)));
		json_object_set_new(o, "slices", json_integer(tpf_recipe_slices(r)));
	}
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

json_t *tpf_compute_template_body(const char *name, const struct tpf_recipe *r, json_t *metadata,
				  int external_ips)
{
	json_t *props = tpf_compute_instance_body(name, r, metadata, external_ips);
	json_object_del(props, "name");
	/* Templates take the bare machine type and disk type (reference 2.2). */
	json_object_set_new(props, "machineType", json_string(r->compute.machine_type));
	json_t *init = json_object_get(json_array_get(json_object_get(props, "disks"), 0),
				       "initializeParams");
	if (r->compute.disk_type)
		json_object_set_new(init, "diskType", json_string(r->compute.disk_type));
	json_object_set_new(json_object_get(props, "labels"), TPF_COMPUTE_SLICE_LABEL,
			    json_string(name));
	char *tname = tpf_compute_slice_part(name, "t");
	json_t *b = json_pack("{s:s, s:o}", "name", tname, "properties", props);
	free(tname);
	return b;
}

json_t *tpf_compute_mig_body(const char *name, const struct tpf_recipe *r, const char *project)
{
	char *region = tpf_compute_region(r->zone);
	char *tmpl = xasprintf("projects/%s/global/instanceTemplates/%s-t", project, name);
	char *wp = xasprintf("projects/%s/regions/%s/resourcePolicies/%s-wp", project, region, name);
	char *base = xasprintf("%s-###", name);
	char *desc = tpf_compute_mig_description(name, r);
	json_t *b = json_pack("{s:s, s:s, s:s, s:s, s:i, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}",
			      "name", name, "description", desc, "baseInstanceName", base,
			      "instanceTemplate", tmpl, "targetSize", tpf_recipe_slice_workers(r),
			      "resourcePolicies", "workloadPolicy", wp,
			      "targetSizePolicy", "mode", "BULK",
			      "instanceLifecyclePolicy", "defaultActionOnFailure", "DO_NOTHING",
			      "updatePolicy", "type", "OPPORTUNISTIC");
	free(desc);
	free(base);
	free(wp);
	free(tmpl);
	free(region);
	return b;
}

void tpf_compute_seen_slice(struct tpf_compute_client *cc, const char *zone, const char *name,
			    const char *id, const struct tpf_live_node *members, size_t nmembers)
{
	const char **names = xcalloc(nmembers ? nmembers : 1, sizeof(*names));
	size_t n = 0;
	for (size_t i = 0; i < nmembers; i++)
		if (members[i].nendpoints && members[i].name)
			names[n++] = members[i].name;
	json_t *md = json_object(); /* the members got the key from the template */
	struct tpf_gcp_seen s = { .name = name, .id = id, .metadata = md, .nendpoints = 1,
				  .shape = TPF_GCP_SHAPE_SLICE, .members = names, .nmembers = n };
	tpf_gcp_client_seen(cc->c, zone, &s);
	json_decref(md);
	free(names);
}

/* ---- refresh: MIGs and their members as slice nodes ------------------------ */

static int cmp_member(const void *a, const void *b)
{
	const struct tpf_live_node *x = a, *y = b;
	return strcmp(x->name, y->name);
}

/* The slice's state from its MIG status and its members (sorted). */
static const char *slice_state(json_t *mig, const struct tpf_live_node *m, size_t n, int target)
{
	json_t *st = json_object_get(mig, "status");
	int stable = json_is_true(json_object_get(st, "isStable"));
	int bulk = json_is_true(json_object_get(json_object_get(st, "bulkInstanceOperation"),
						 "inProgress"));
	json_t *topo = json_array_get(json_object_get(st, "appliedAcceleratorTopologies"), 0);
	/* AcceleratorTopologyState: only ACTIVE says the slice's ICI is up;
	 * an absent state (older API) does not hold the slice back. */
	const char *ts = json_string_value(json_object_get(topo, "state"));
	int topology_up = !ts || tpf_streq(ts, "ACTIVE");
	json_int_t deleting = json_integer_value(json_object_get(json_object_get(mig,
		"currentActions"), "deleting"));
	if (target > 0 && deleting >= target)
		return "DELETING"; /* every VM is being deleted: the MIG's delete runs */
	size_t ready = 0;
	for (size_t i = 0; i < n; i++) {
		enum tpf_node_class c = tpf_node_class(m[i].state);
		if (c == TPF_NODE_DEAD) /* a lost member is a lost slice; preempted if it was */
			return tpf_node_state_of(m[i].state) == TPF_NODE_STATE_PREEMPTED ? "PREEMPTED"
										  : "TERMINATED";
		ready += c == TPF_NODE_READY;
	}
	if (n == 0 || bulk)
		return "CREATING";
	if ((int)n < target) /* members were made, and one is missing */
		return stable ? "TERMINATED" : "CREATING"; /* the caller tells a preemption */
	if ((int)ready == target && stable && topology_up)
		return "READY";
	return "CREATING";
}

/*
 * A member's upcoming maintenance disrupts the whole slice: "Multi-host TPU
 * slices require all instances in the slice to be recovered or rescheduled
 * together" (https://cloud.google.com/tpu/docs/failure-recovery). So the
 * slice node carries the member window that starts first (a window with
 * no start counts after those with one), prefixed with the member's name;
 * watch then tells every worker's job (engine/watch/watch_maint.c).
 */
static void slice_maintenance(struct tpf_live_node *out, const struct tpf_live_node *members,
			      size_t nmembers)
{
	const struct tpf_live_node *first = NULL;
	double first_at = 0;
	for (size_t i = 0; i < nmembers; i++) {
		if (!members[i].maintenance)
			continue;
		double at = members[i].maintenance_start
				    ? tpf_parse_rfc3339(members[i].maintenance_start)
				    : -1;
		if (at < 0)
			at = 1e18;
		if (!first || at < first_at) {
			first = &members[i];
			first_at = at;
		}
	}
	if (!first)
		return;
	out->maintenance = xasprintf("%s: %s", first->name ? first->name : "a member",
				     first->maintenance);
	out->maintenance_start = first->maintenance_start ? xstrdup(first->maintenance_start)
							  : NULL;
}

json_t *tpf_compute_mig_desc(json_t *mig)
{
	json_t *kept = json_object_get(mig, TPF_COMPUTE_DESC_KEY);
	if (kept)
		return json_incref(kept);
	return json_loads(json_string_value(json_object_get(mig, "description")) ?: "", 0, NULL);
}

int tpf_compute_slice_parse(json_t *mig, const char *zone, struct tpf_live_node *members,
			    size_t nmembers, struct tpf_live_node *out)
{
	tpf_live_node_release(out);
	const char *name = json_string_value(json_object_get(mig, "name"));
	json_t *desc = tpf_compute_mig_desc(mig);
	if (!name || !json_is_object(desc)) {
		json_decref(desc);
		return -1;
	}
	struct tpf_recipe *r = &out->recipe;
	const char *k;
	json_t *v;
	json_object_foreach(desc, k, v)
		if (!strncmp(k, "tpuform-", 8) && strcmp(k, TPF_COMPUTE_SLICE_LABEL) &&
		    json_is_string(v))
			tpf_kvlist_set(&r->labels, k, json_string_value(v));
	out->name = xstrdup(name);
	json_t *id = json_object_get(mig, "id");
	out->id = json_is_string(id) ? xstrdup(json_string_value(id)) : NULL;
	out->create_time = xstrdup(json_string_value(json_object_get(mig, "creationTimestamp")));
	r->zone = xstrdup(zone);
	r->compute.api = TPF_API_COMPUTE;
	const char *topo = json_string_value(json_object_get(desc, "topology"));
	r->node.topology = topo && *topo ? xstrdup(topo) : NULL;
	int target = (int)json_integer_value(json_object_get(mig, "targetSize"));
	r->workers = target > 0 ? target : 1;
	if (nmembers > 1) /* qsort wants an array, even of none */
		qsort(members, nmembers, sizeof(*members), cmp_member);
	if (nmembers) { /* what the members report: machine type, scheduling */
		const struct tpf_recipe *m0 = &members[0].recipe;
		r->spot = m0->spot;
		tpf_compute_copy(&r->compute, &m0->compute);
		tpf_node_fields_copy(&r->node, &m0->node);
		xstrset(&r->node.topology, topo && *topo ? topo : NULL);
	} else { /* no member yet: what the description recorded */
		const char *mt = json_string_value(json_object_get(desc, "machine_type"));
		r->compute.machine_type = mt && *mt ? xstrdup(mt) : NULL;
		r->spot = json_is_true(json_object_get(desc, "spot"));
		r->compute.flex_start = json_is_true(json_object_get(desc, "flex_start"));
		json_t *mrd = json_object_get(desc, "max_run_duration");
		r->compute.max_run_duration = json_is_integer(mrd) ? (long)json_integer_value(mrd) : 0;
	}
	out->state = xstrdup(slice_state(mig, members, nmembers, target));
	/* A flex-start slice waits for capacity: BULK makes no member until
	 * all fit (docs/compute-engine.md section 4), or its members wait
	 * PENDING. */
	int waiting = r->compute.flex_start && tpf_node_state_of(out->state) == TPF_NODE_STATE_CREATING;
	for (size_t i = 0; waiting && i < nmembers; i++)
		waiting = members[i].capacity_wait;
	out->capacity_wait = waiting;
	out->endpoints = nmembers ? xcalloc(nmembers, sizeof(*out->endpoints)) : NULL;
	for (size_t i = 0; i < nmembers; i++) { /* workers in member-name order */
		if (!members[i].nendpoints)
			continue;
		struct tpf_endpoint *e = &out->endpoints[out->nendpoints++];
		e->ip = xstrdup(members[i].endpoints[0].ip);
		e->external_ip = xstrdup(members[i].endpoints[0].external_ip);
		e->port = members[i].endpoints[0].port;
	}
	slice_maintenance(out, members, nmembers);
	json_decref(desc);
	return 0;
}

/* Does MIG mig belong to fleet (its description's tpuform-fleet)? If so,
 * the parsed description is kept in it (TPF_COMPUTE_DESC_KEY). */
static int mig_in_fleet(json_t *mig, const char *fleet)
{
	json_t *desc = tpf_compute_mig_desc(mig);
	const char *f = json_string_value(json_object_get(desc, TPF_LABEL_FLEET));
	int in = f && fleet && !strcmp(f, fleet);
	if (in)
		json_object_set(mig, TPF_COMPUTE_DESC_KEY, desc);
	json_decref(desc);
	return in;
}

struct agg_ctx {
	const char *fleet;
	json_t *out; /* zone -> [MIG] */
};

static int agg_page(json_t *page, void *arg, struct tpf_diags *d)
{
	struct agg_ctx *x = arg;
	const char *scope;
	json_t *sl, *mig;
	size_t i;
	(void)d;
	json_object_foreach(json_object_get(page, "items"), scope, sl) {
		if (strncmp(scope, "zones/", 6))
			continue; /* regional MIGs are not tpuform's */
		json_array_foreach(json_object_get(sl, "instanceGroupManagers"), i, mig) {
			if (!mig_in_fleet(mig, x->fleet))
				continue;
			json_t *a = json_object_get(x->out, scope + 6);
			if (!a)
				json_object_set_new(x->out, scope + 6, a = json_array());
			json_array_append(a, mig);
		}
	}
	json_t *unr = json_object_get(page, "unreachables");
	if (json_array_size(unr))
		return tpf_errorx(d, NULL, "retry later; tpuform does not act on a partial list",
				  "list the managed instance groups: the API could not reach '%s'",
				  json_string_value(json_array_get(unr, 0)) ?: "?");
	return 0;
}

int tpf_compute_list_migs(struct tpf_compute_client *cc, const char *fleet, json_t **out,
			  struct tpf_diags *d)
{
	/* agg_page reads these */
	char *q = tpf_gcp_fields_query('&', "nextPageToken,unreachables,items/*/"
					    "instanceGroupManagers(" TPF_COMPUTE_MIG_FIELDS ")");
	char *url = xasprintf("%s/aggregated/instanceGroupManagers?maxResults=500&"
			      "returnPartialSuccess=true%s", cc->base, q);
	free(q);
	struct agg_ctx x = { fleet, json_object() };
	int rc = tpf_gapi_pages(tpf_gcp_client_api(cc->c), url, "list the managed instance groups",
				NULL, 0, agg_page, &x, d);
	free(url);
	if (rc < 0) {
		json_decref(x.out);
		x.out = NULL;
	}
	*out = x.out;
	return rc;
}

/* The error of a BULK MIG's last capacity check, as an operation's error
 * (google/gcp_errors.h), classified: 0 when there is none. */
static int bulk_error(json_t *mig, const char *what, const char *address, struct tpf_diags *d)
{
	json_t *err = json_object_get(json_object_get(json_object_get(json_object_get(
		mig, "status"), "bulkInstanceOperation"), "lastProgressCheck"), "error");
	if (!json_array_size(json_object_get(err, "errors")))
		return 0;
	json_t *op = json_pack("{s:O}", "error", err);
	struct tpf_gcp_error e = TPF_GCP_ERROR_INIT;
	tpf_gcp_error_parse_compute(&e, op);
	int rc = tpf_gcp_class_rc(tpf_gcp_error_classify(&e));
	tpf_errorx(d, address,
		   "the slice's resources were deleted; if the group has another zone, tpuform "
		   "tries the group's next zone",
		   "%s: %s", what, e.message ? e.message : "no message");
	tpf_gcp_error_release(&e);
	json_decref(op);
	return rc == TPF_ENOTFOUND || rc == 0 ? TPF_ERROR : rc;
}

/* instanceGroupManagers.get of the MIG, asking for what is read of it. */
static char *mig_url(struct tpf_compute_client *cc, const char *zone, const char *name)
{
	char *q = tpf_gcp_fields_query('?', TPF_COMPUTE_MIG_FIELDS);
	char *url = xasprintf("%s/zones/%s/instanceGroupManagers/%s%s", cc->base, zone, name, q);
	free(q);
	return url;
}

/* The slice as it is now: its MIG and its members of the zone's list. */
static int read_mig_slice(struct tpf_compute_client *cc, json_t *mig, const char *name,
		      const struct tpf_recipe *r, struct tpf_live_node *out, struct tpf_diags *d)
{
	struct tpf_live_set nodes = { 0 }, members = { 0 }, mine = { 0 };
	const char *fleet = tpf_kvlist_get(&r->labels, TPF_LABEL_FLEET);
	int rc = tpf_compute_list(cc, r->zone, fleet ? fleet : "", NULL, &nodes, &members, d);
	for (size_t i = 0; rc == 0 && i < members.n; i++) {
		const char *s = tpf_kvlist_get(&members.nodes[i].recipe.labels, TPF_COMPUTE_SLICE_LABEL);
		if (s && !strcmp(s, name))
			tpf_live_node_copy(tpf_live_set_add(&mine), &members.nodes[i]);
	}
	if (rc == 0 && tpf_compute_slice_parse(mig, r->zone, mine.nodes, mine.n, out) < 0)
		rc = tpf_errorx(d, name, NULL, "slice '%s': its group is not tpuform's", name);
	if (rc == 0) /* members sorted by the parse */
		tpf_compute_seen_slice(cc, r->zone, name, out->id, mine.nodes, mine.n);
	tpf_live_set_release(&nodes);
	tpf_live_set_release(&members);
	tpf_live_set_release(&mine);
	return rc;
}

int tpf_compute_read_slice(struct tpf_compute_client *cc, const char *name,
			   const struct tpf_recipe *r, struct tpf_live_node *out,
			   struct tpf_diags *d)
{
	char *url = mig_url(cc, r->zone, name);
	char *what = xasprintf("read slice '%s' in zone '%s'", name, r->zone);
	json_t *mig = NULL;
	int rc = tpf_gcp_call(cc->c, "GET", url, NULL, what, name, TPF_GCP_QUIET(TPF_GCP_NOTFOUND),
			      &mig, NULL, d);
	if (rc == 0)
		rc = read_mig_slice(cc, mig, name, r, out, d);
	json_decref(mig);
	free(what);
	free(url);
	return rc;
}

int tpf_compute_wait_slice(struct tpf_compute_client *cc, const char *name,
			   const struct tpf_recipe *r, struct tpf_live_node *out,
			   struct tpf_diags *d)
{
	const struct tpf_gcp_settings *s = tpf_gcp_client_settings(cc->c);
	double deadline = tpf_now_mono() + s->op_timeout, nap = s->poll_min;
	char *url = mig_url(cc, r->zone, name);
	char *what = xasprintf("slice '%s' in zone '%s'", name, r->zone);
	int rc;
	for (;;) {
		json_t *mig = NULL;
		rc = tpf_gcp_call(cc->c, "GET", url, NULL, what, name, 0, &mig, NULL, d);
		if (rc == 0 && !r->compute.flex_start)
			rc = bulk_error(mig, what, name, d);
		if (rc == 0)
			rc = read_mig_slice(cc, mig, name, r, out, d);
		json_decref(mig);
		/* READY, or flex-start waiting for capacity (never blocks) */
		if (rc < 0 || tpf_node_state_of(out->state) == TPF_NODE_STATE_READY || r->compute.flex_start)
			break;
		if (tpf_node_class(out->state) == TPF_NODE_DEAD) {
			rc = tpf_errorx(d, name, NULL, "%s: a member was lost while it was created", what);
			break;
		}
		if (tpf_now_mono() > deadline)
			break; /* the node as it is: a later apply provisions it */
		if ((rc = tpf_gcp_poll_sleep(cc->c, nap)) < 0)
			break;
		nap = nap * 2 < s->poll_max ? nap * 2 : s->poll_max;
	}
	free(what);
	free(url);
	return rc;
}
