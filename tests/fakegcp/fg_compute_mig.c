/*
 * Zonal managed instance groups: insert (requestId), get, list,
 * aggregatedList, delete (with its instances), resize, listManagedInstances
 * (a POST), and the members' life. Sources in docs/compute-engine.md
 * section 4.
 *   - instanceTemplate must exist (global, or regional in the MIG's
 *     region) and its machine type be offered in the zone;
 *     resourcePolicies.workloadPolicy, a full or partial URL, must exist in
 *     the MIG's region; its acceleratorTopology must be one of the
 *     template's generation, and targetSize 0 or the topology's VMs.
 *   - targetSizePolicy.mode BULK: all members are created together once
 *     capacity (stockout, quota, flex-start grant) allows, none before;
 *     with a FLEX_START template defaultActionOnFailure must be DO_NOTHING;
 *     the target size can be raised only from 0, and lowered to a non-zero
 *     size only when no bulk operation is in progress.
 *   - Members are named baseInstanceName + "-" + 4 random characters, or
 *     numbered when the base ends in "-#...#" (base_instance_name's
 *     documentation); they carry the template's labels.
 *   - A member lost (deleted or TERMINATED) is recreated with the same
 *     name under defaultActionOnFailure REPAIR (the default), left alone
 *     under DO_NOTHING.
 *   - delete: its members go at once (STOPPING), and the MIG with them
 *     --delete-seconds later; meanwhile it is still got and
 *     listed, every member's current action DELETING, and a second delete
 *     (or resize) is 400 resourceNotReady; its template and workload
 *     policy stay in use until it is gone.
 *   - status: isStable (no member has a current action),
 *     currentInstanceStatuses, bulkInstanceOperation {inProgress,
 *     lastProgressCheck}, appliedAcceleratorTopologies [{acceleratorTopology,
 *     state: ACTIVATING | ACTIVE | INCOMPLETE}], versionTarget.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fg_compute.h"
#include "util/xalloc.h"

static const char *sget(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void set_str(json_t *o, const char *k, char *fresh)
{
	json_object_set_new(o, k, json_string(fresh));
	free(fresh);
}

/* --------------------------------------------------------- topologies */

static int dims(const char *t, int d[3])
{
	int n = 0;
	const char *p = t;

	while (n < 3) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p || v <= 0)
			return 0;
		d[n++] = (int)v;
		if (!*end)
			return n;
		if (*end != 'x')
			return 0;
		p = end + 1;
	}
	return 0;
}

/* docs/compute-engine.md section 1.3: v6e 2-D (4x4 .. 16x16 multi-host);
 * v5p and TPU7x 3-D (2x2x2, 2x2x4, 2x4x4, then multiples of 4 up to 140
 * (v5p) or 144 (TPU7x) cubes of 64 chips), dimensions ascending as xpk
 * generates them. */
int ce_topology_vms(const struct ce_mtype *mt, const char *t)
{
	int d[3], n = dims(t, d);
	int three = strcmp(mt->accel, "ct6e") != 0;

	if (!strcmp(t, mt->topology))
		return 1;
	if (mt->chips != 4 || n != (three ? 3 : 2))
		return 0;
	if (!three) {
		static const char *const ok[] = { "4x4", "4x8", "8x8", "8x16", "16x16", NULL };
		for (int i = 0; ok[i]; i++)
			if (!strcmp(t, ok[i]))
				return d[0] * d[1] / 4;
		return 0;
	}
	if (d[0] > d[1] || d[1] > d[2])
		return 0;
	if (!strcmp(t, "2x2x2") || !strcmp(t, "2x2x4") || !strcmp(t, "2x4x4"))
		return d[0] * d[1] * d[2] / 4;
	int cubes = (d[0] / 4) * (d[1] / 4) * (d[2] / 4);
	if (d[0] % 4 || d[1] % 4 || d[2] % 4 || cubes > (!strcmp(mt->accel, "tpu7x") ? 144 : 140))
		return 0;
	return d[0] * d[1] * d[2] / 4;
}

/* ------------------------------------------------------------ helpers */

/* "global/NAME" or "regions/R/NAME" of an instance template URL, or NULL. */
static char *template_key(const char *url)
{
	const char *p = strstr(url, "instanceTemplates/");
	const char *g = strstr(url, "global/instanceTemplates/");
	const char *rg = strstr(url, "regions/");

	if (!p)
		return NULL;
	if (g && (g == url || g[-1] == '/'))
		return xasprintf("global/%s", p + 18);
	if (rg && rg < p && (rg == url || rg[-1] == '/'))
		return xasprintf("%.*s/%s", (int)(p - rg - 1), rg, p + 18);
	return NULL;
}

static json_t *template_of(const char *key)
{
	const char *slash = strrchr(key, '/');
	char *scope = xstrndup(key, (size_t)(slash - key));
	json_t *t = ce_map2(ce.tmpl, scope, slash + 1);
	free(scope);
	return t;
}

/* "REGION/NAME" of a workload policy URL (full or partial), or NULL. */
static char *policy_key(const char *url)
{
	const char *rg = strstr(url, "regions/"), *p = strstr(url, "/resourcePolicies/");

	if (!rg || !p || rg > p || (rg != url && rg[-1] != '/'))
		return NULL;
	return xasprintf("%.*s/%s", (int)(p - rg - 8), rg + 8, p + 18);
}

static json_t *policy_of(const char *key)
{
	const char *slash = strchr(key, '/');
	char *region = xstrndup(key, (size_t)(slash - key));
	json_t *p = ce_map2(ce.rp, region, slash + 1);
	free(region);
	return p;
}

static const char *lifecycle_action(json_t *mig)
{
	const char *a = sget(json_object_get(mig, "instanceLifecyclePolicy"),
			     "defaultActionOnFailure");
	return a ? a : "REPAIR";
}

/* A new member name: base-xxxx, or base-001 style for a "-###" base. */
static char *member_name(json_t *mig, const char *zone)
{
	const char *base = sget(mig, "baseInstanceName");
	size_t n = strlen(base), hashes = 0;

	while (hashes < n && base[n - 1 - hashes] == '#')
		hashes++;
	if (hashes) {
		json_t *members = json_object_get(mig, "__members");
		for (int k = 1;; k++) {
			char *name = xasprintf("%.*s%0*d", (int)(n - hashes), base, (int)hashes, k);
			int taken = ce_map2(ce.inst, zone, name) != NULL;
			size_t i;
			json_t *m;
			json_array_foreach(members, i, m)
				taken |= !strcmp(json_string_value(m), name);
			if (!taken)
				return name;
			free(name);
		}
	}
	for (;;) {
		static const char abc[] = "abcdefghijklmnopqrstuvwxyz0123456789";
		uint64_t v = fg_rand_id();
		char suf[5];
		for (int i = 0; i < 4; i++, v /= 36)
			suf[i] = abc[v % 36];
		suf[4] = '\0';
		char *name = xasprintf("%s-%s", base, suf);
		if (!ce_map2(ce.inst, zone, name))
			return name;
		free(name);
	}
}

static void plan_members(json_t *mig, const char *zone, long target)
{
	json_t *members = json_object_get(mig, "__members");

	ce_changed();
	while ((long)json_array_size(members) < target) {
		char *n = member_name(mig, zone);
		json_array_append_new(members, json_string(n));
		free(n);
	}
	while ((long)json_array_size(members) > target) {
		size_t last = json_array_size(members) - 1;
		json_t *inst = ce_map2(ce.inst, zone, json_string_value(json_array_get(members, last)));
		if (inst && !json_object_get(inst, "__gone"))
			ce_instance_delete(inst);
		json_array_remove(members, last);
	}
}

/* ------------------------------------------------------------ members */

/* Create the members that need an instance, as capacity allows. */
static void mig_create(json_t *mig, const char *zone)
{
	json_t *t = template_of(sget(mig, "__tmpl"));
	json_t *props = json_object_get(t, "properties"), *made = json_object_get(mig, "__made");
	const struct ce_mtype *mt = ce_mtype(sget(props, "machineType") ? sget(props, "machineType")
									 : "");
	int repair = !strcmp(lifecycle_action(mig), "REPAIR"), http, sync, flex;
	json_t *missing = json_array(), *m;
	size_t i;

	json_array_foreach(json_object_get(mig, "__members"), i, m) {
		const char *name = json_string_value(m);
		json_t *inst = ce_map2(ce.inst, zone, name);
		if (inst && repair && !strcmp(sget(inst, "status"), "TERMINATED"))
			ce_instance_delete(inst);
		if (!inst && (!json_object_get(made, name) || repair))
			json_array_append(missing, m);
	}
	flex = ce_is_flex(props);
	if (!mt || !json_array_size(missing) ||
	    (flex && !json_is_true(json_object_get(ce.flex_ok, zone)))) {
		json_decref(missing);
		return;
	}
	int bulk = json_is_true(json_object_get(mig, "__bulk"));
	json_array_foreach(missing, i, m) {
		int n = bulk ? (int)json_array_size(missing) : 1;
		json_t *err = ce_capacity_error(zone, mt, n, flex, &http, &sync);
		if (err) {
			json_object_set_new(mig, "__err", err);
			break;
		}
		json_object_del(mig, "__err");
		for (size_t k = i; k < (bulk ? json_array_size(missing) : i + 1); k++) {
			const char *name = json_string_value(json_array_get(missing, k));
			ce_instance_create(zone, name, props, sget(mig, "name"));
			json_object_set_new(made, name, json_true());
		}
		if (bulk)
			break;
	}
	char ts[40];
	ce_timestamp(ts);
	json_object_set_new(mig, "__check_ts", json_string(ts));
	json_decref(missing);
}

static const char *member_action(json_t *mig, const char *zone, const char *name, json_t **inst)
{
	int repair = !strcmp(lifecycle_action(mig), "REPAIR");
	int made = json_is_true(json_object_get(json_object_get(mig, "__made"), name));

	*inst = ce_map2(ce.inst, zone, name);
	if (!*inst)
		return !made ? "CREATING" : repair ? "RECREATING" : "NONE";
	const char *st = sget(*inst, "status");
	if (json_object_get(*inst, "__gone"))
		return "DELETING";
	if (!strcmp(st, "TERMINATED"))
		return repair ? "RECREATING" : "NONE";
	if (!strcmp(st, "RUNNING") || !strcmp(st, "STOPPING"))
		return "NONE";
	return "CREATING";
}

static void count(json_t *o, const char *k)
{
	json_object_set_new(o, k, json_integer(json_integer_value(json_object_get(o, k)) + 1));
}

/* "RECREATING" -> "recreating", "PENDING_STOP" -> "pendingStop". */
static char *lower_camel(const char *s)
{
	char *out = xstrdup(s), *o = out;
	for (const char *p = s; *p; p++) {
		if (*p == '_' && p[1])
			*o++ = *++p;
		else
			*o++ = (char)tolower((unsigned char)*p);
	}
	*o = '\0';
	return out;
}

static void mig_status(json_t *mig, const char *zone)
{
	json_t *actions = json_object(), *statuses = json_object(), *m, *inst;
	int running = 0, lost = 0, stable = 1;
	size_t i;

	int dying = json_object_get(mig, "__gone") != NULL; /* its delete runs */
	json_array_foreach(json_object_get(mig, "__members"), i, m) {
		const char *a = member_action(mig, zone, json_string_value(m), &inst);
		a = dying ? "DELETING" : a;
		char *ak = lower_camel(a), *sk = lower_camel(inst ? sget(inst, "status")
								  : "NON_EXISTENT");
		count(actions, ak);
		count(statuses, sk);
		stable &= !strcmp(a, "NONE");
		running += inst && !strcmp(sget(inst, "status"), "RUNNING");
		lost += json_is_true(json_object_get(json_object_get(mig, "__made"),
						     json_string_value(m))) &&
			(!inst || !strcmp(sget(inst, "status"), "TERMINATED") ||
			 !strcmp(sget(inst, "status"), "STOPPING"));
		free(ak);
		free(sk);
	}
	json_object_set_new(mig, "currentActions", actions);
	long target = (long)json_integer_value(json_object_get(mig, "targetSize"));
	json_t *st = json_pack("{s:b, s:{s:b}, s:{s:b, s:{s:b}}, s:{s:b}, s:o}", "isStable", stable,
			       "versionTarget", "isReached", 1, "stateful", "hasStatefulConfig", 0,
			       "perInstanceConfigs", "allEffective", 1, "allInstancesConfig",
			       "effective", 1, "currentInstanceStatuses", statuses);
	if (json_is_true(json_object_get(mig, "__bulk"))) {
		json_t *check = json_object();
		if (sget(mig, "__check_ts"))
			json_object_set(check, "timestamp", json_object_get(mig, "__check_ts"));
		if (json_object_get(mig, "__err"))
			json_object_set(check, "error", json_object_get(mig, "__err"));
		int made = (int)json_object_size(json_object_get(mig, "__made"));
		json_object_set_new(st, "bulkInstanceOperation", json_pack(
			"{s:b, s:o}", "inProgress", made < (int)json_array_size(
							json_object_get(mig, "__members")),
			"lastProgressCheck", check));
	}
	json_t *wp = sget(mig, "__wp") ? policy_of(sget(mig, "__wp")) : NULL;
	const char *topo = sget(json_object_get(wp, "workloadPolicy"), "acceleratorTopology");
	if (topo)
		json_object_set_new(st, "appliedAcceleratorTopologies", json_pack(
			"[{s:s, s:s}]", "acceleratorTopology", topo, "state",
			running == target && target > 0 ? "ACTIVE" : lost ? "INCOMPLETE"
								: "ACTIVATING"));
	json_object_set_new(mig, "status", st);
}

void ce_migs_tick(double now)
{
	const char *z, *n;
	json_t *zone, *mig;
	void *tmp;

	json_object_foreach(ce.migs, z, zone) {
		json_object_foreach_safe(zone, tmp, n, mig) {
			json_t *gone = json_object_get(mig, "__gone");
			if (gone && now >= json_real_value(gone)) {
				json_object_del(zone, n);
				continue;
			}
			/* A MIG sees only instances, capacity and itself: when nothing
			 * changed since its last look, it has nothing to do. */
			if (!gone && json_integer_value(json_object_get(mig, "__gen")) ==
					     (json_int_t)ce.gen)
				continue;
			if (!gone)
				mig_create(mig, z);
			mig_status(mig, z);
			json_object_set_new(mig, "__gen", json_integer((json_int_t)ce.gen));
		}
	}
}

/* ------------------------------------------------------------- methods */

struct mig_refs {
	char *tkey, *wkey;
	json_t *tmpl, *wp;
	const struct ce_mtype *mt;
};

static void refs_free(struct mig_refs *x)
{
	free(x->tkey);
	free(x->wkey);
}

/* The template and workload policy of a MIG body, checked; -1 after
 * answering 400. */
static int mig_refs(struct fg_req *r, json_t *b, const char *zone, struct mig_refs *x)
{
	const char *t = sget(b, "instanceTemplate");
	const char *w = sget(json_object_get(b, "resourcePolicies"), "workloadPolicy");
	char *region = ce_region_of(zone);
	int rc = -1;

	if (!t)
		t = sget(json_array_get(json_object_get(b, "versions"), 0), "instanceTemplate");
	if (!t) {
		ce_error(r, 400, "required", "Required field 'resource.instanceTemplate' not specified");
		goto out;
	}
	x->tkey = template_key(t);
	x->tmpl = x->tkey ? template_of(x->tkey) : NULL;
	if (!x->tmpl || (strncmp(x->tkey, "global/", 7) &&
			 strncmp(x->tkey + 8, region, strlen(region)))) {
		ce_invalid(r, "resource.instanceTemplate", t, "The referenced instance template does "
			   "not exist in the project or the group's region.");
		goto out;
	}
	const char *mtn = sget(json_object_get(x->tmpl, "properties"), "machineType");
	x->mt = ce_mtype(mtn);
	if (!x->mt || !ce_mtype_in_zone(x->mt, zone)) {
		char *why = xasprintf("Machine type with name '%s' does not exist in zone '%s'.", mtn,
				      zone);
		ce_invalid(r, "resource.instanceTemplate", t, why);
		free(why);
		goto out;
	}
	if (w) {
		x->wkey = policy_key(w);
		x->wp = x->wkey ? policy_of(x->wkey) : NULL;
		if (!x->wp || strncmp(x->wkey, region, strlen(region)) ||
		    x->wkey[strlen(region)] != '/') {
			ce_invalid(r, "resource.resourcePolicies.workloadPolicy", w, "The referenced "
				   "workload policy does not exist in the group's region.");
			goto out;
		}
	}
	rc = 0;
out:
	free(region);
	return rc;
}

/* TPU slice rules between the template, the policy and the sizes. */
static int mig_rules(struct fg_req *r, json_t *b, struct mig_refs *x, int bulk)
{
	json_t *wpol = json_object_get(x->wp, "workloadPolicy");
	const char *topo = sget(wpol, "acceleratorTopology");
	long target = (long)json_integer_value(json_object_get(b, "targetSize"));
	const char *action = sget(json_object_get(b, "instanceLifecyclePolicy"),
				  "defaultActionOnFailure");
	char tbuf[24];

	snprintf(tbuf, sizeof(tbuf), "%ld", target);
	if (x->wp && !topo) {
		ce_invalid(r, "resource.resourcePolicies.workloadPolicy", sget(x->wp, "name"),
			   "TPU machine types need a workload policy with an acceleratorTopology.");
		return -1;
	}
	int vms = topo ? ce_topology_vms(x->mt, topo) : 0;
	if (topo && !vms) {
		char *why = xasprintf("Accelerator topology %s is not valid for machine type %s.", topo,
				      x->mt->name);
		ce_invalid(r, "resource.resourcePolicies.workloadPolicy", topo, why);
		free(why);
		return -1;
	}
	if (topo && target && target != vms) {
		char *why = xasprintf("The accelerator topology %s needs %d VMs of %s: the target "
				      "size must be 0 or %d.", topo, vms, x->mt->name, vms);
		ce_invalid(r, "resource.targetSize", tbuf, why);
		free(why);
		return -1;
	}
	if (bulk && ce_is_flex(json_object_get(x->tmpl, "properties")) &&
	    (!action || strcmp(action, "DO_NOTHING"))) {
		ce_invalid(r, "resource.instanceLifecyclePolicy.defaultActionOnFailure",
			   action ? action : "REPAIR", "In bulk mode with flex-start VMs, repairs "
			   "must be disabled: defaultActionOnFailure must be DO_NOTHING.");
		return -1;
	}
	if (bulk && json_object_get(b, "standbyPolicy")) {
		ce_invalid(r, "resource.standbyPolicy", "", "Standby pools are not supported in "
			   "bulk mode.");
		return -1;
	}
	return 0;
}

static int base_ok(const char *b)
{
	size_t n = strlen(b), h = 0;
	while (h < n && b[n - 1 - h] == '#')
		h++;
	if (h > 10 || n > 58 || (h && (n == h || b[n - h - 1] != '-')))
		return 0;
	char *core = xstrndup(b, n - h - (h ? 1 : 0));
	int ok = ce_name_ok(core);
	free(core);
	return ok;
}

static json_t *mig_new(json_t *b, const char *zone, struct mig_refs *x, int bulk)
{
	const char *name = sget(b, "name");
	char ts[40], *rel = xasprintf("zones/%s/instanceGroupManagers/%s", zone, name);
	char *grel = xasprintf("zones/%s/instanceGroups/%s", zone, name);
	json_t *mig = json_deep_copy(b);

	ce_timestamp(ts);
	json_object_set_new(mig, "kind", json_string("compute#instanceGroupManager"));
	set_str(mig, "id", ce_new_id());
	json_object_set_new(mig, "creationTimestamp", json_string(ts));
	if (!sget(mig, "baseInstanceName"))
		json_object_set_new(mig, "baseInstanceName", json_string(name));
	char *zrel = xasprintf("zones/%s", zone);
	set_str(mig, "zone", ce_url(zrel));
	free(zrel);
	set_str(mig, "selfLink", ce_url(rel));
	set_str(mig, "instanceGroup", ce_url(grel));
	const char *tslash = strrchr(x->tkey, '/');
	char *trel = xasprintf("%.*s/instanceTemplates/%s", (int)(tslash - x->tkey), x->tkey,
			       tslash + 1);
	char *turl = ce_url(trel);
	free(trel);
	json_object_set_new(mig, "instanceTemplate", json_string(turl));
	json_object_set_new(mig, "versions", json_pack("[{s:s}]", "instanceTemplate", turl));
	free(turl);
	if (x->wkey) {
		const char *slash = strchr(x->wkey, '/');
		char *prel = xasprintf("regions/%.*s/resourcePolicies/%s", (int)(slash - x->wkey),
				       x->wkey, slash + 1);
		set_str(json_object_get(mig, "resourcePolicies"), "workloadPolicy", ce_url(prel));
		free(prel);
		json_object_set_new(mig, "__wp", json_string(x->wkey));
	}
	if (!json_object_get(mig, "instanceLifecyclePolicy"))
		json_object_set_new(mig, "instanceLifecyclePolicy", json_object());
	json_t *lp = json_object_get(mig, "instanceLifecyclePolicy");
	if (!sget(lp, "defaultActionOnFailure"))
		json_object_set_new(lp, "defaultActionOnFailure", json_string("REPAIR"));
	if (!sget(lp, "forceUpdateOnRepair"))
		json_object_set_new(lp, "forceUpdateOnRepair", json_string("NO"));
	if (!json_object_get(mig, "updatePolicy"))
		json_object_set_new(mig, "updatePolicy", json_pack("{s:s}", "type", "PROACTIVE"));
	set_str(mig, "fingerprint", ce_fingerprint());
	json_object_set_new(mig, "__tmpl", json_string(x->tkey));
	json_object_set_new(mig, "__bulk", json_boolean(bulk));
	json_object_set_new(mig, "__members", json_array());
	json_object_set_new(mig, "__made", json_object());
	json_object_set_new(ce_scope(ce.migs, zone, 1), name, mig);
	plan_members(mig, zone, (long)json_integer_value(json_object_get(mig, "targetSize")));
	mig_status(mig, zone);
	free(rel);
	free(grel);
	return mig;
}

static void mig_insert(struct ce_req *q, const char *zone)
{
	static const char *const ok[] = { "requestId", NULL };
	struct fg_req *r = q->r;
	struct mig_refs x = { 0 };
	json_t *op, *b = q->body;

	if (ce_check_query(r, ok) < 0 || ce_request_id(r, &op) < 0)
		return;
	if (op) {
		ce_reply_op(r, op);
		return;
	}
	if (ce_validate(r, "InstanceGroupManager", b, "resource") < 0)
		return;
	const char *name = sget(b, "name"), *base = sget(b, "baseInstanceName");
	const char *mode = sget(json_object_get(b, "targetSizePolicy"), "mode");
	int bulk = mode && !strcmp(mode, "BULK");
	if (!name || !json_object_get(b, "targetSize")) {
		ce_error(r, 400, "required", "Required field 'resource.%s' not specified",
			 name ? "targetSize" : "name");
		return;
	}
	if (!ce_name_ok(name)) {
		ce_invalid(r, "resource.name", name,
			   "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'");
		return;
	}
	if (base && !base_ok(base)) {
		ce_invalid(r, "resource.baseInstanceName", base, "Must be a match of regex "
			   "'[a-z](([-a-z0-9]{0,57})|([-a-z0-9]{0,51}-#{1,10}(\\[[0-9]{1,10}\\])?))'");
		return;
	}
	if (json_integer_value(json_object_get(b, "targetSize")) < 0) {
		ce_invalid(r, "resource.targetSize", "-1", "Must be greater than or equal to 0");
		return;
	}
	if (mig_refs(r, b, zone, &x) == 0 && mig_rules(r, b, &x, bulk) == 0) {
		char *rel = xasprintf("zones/%s/instanceGroupManagers/%s", zone, name);
		char *scope = xasprintf("zones/%s", zone);
		if (ce_map2(ce.migs, zone, name)) {
			ce_error(r, 409, "alreadyExists", "The resource 'projects/%s/%s' already exists",
				 fg_opt.project, rel);
		} else {
			json_t *mig = mig_new(b, zone, &x, bulk);
			op = ce_op_new(scope, "insert", rel, sget(mig, "id"), fg_opt.op_seconds);
			ce_request_id_keep(r, op);
			ce_reply_op(r, op);
		}
		free(rel);
		free(scope);
	}
	refs_free(&x);
}

static json_t *managed(json_t *mig, const char *zone, const char *name)
{
	json_t *inst;
	const char *a = member_action(mig, zone, name, &inst);
	char *rel = xasprintf("zones/%s/instances/%s", zone, name), *url = ce_url(rel);
	json_t *m = json_pack("{s:s, s:s, s:s, s:{s:O}}", "instance", url, "name", name,
			      "currentAction", a, "version", "instanceTemplate",
			      json_object_get(mig, "instanceTemplate"));

	if (inst) {
		json_object_set(m, "id", json_object_get(inst, "id"));
		json_object_set(m, "instanceStatus", json_object_get(inst, "status"));
	} else if (json_object_get(mig, "__err")) {
		json_object_set_new(m, "lastAttempt", json_pack("{s:O}", "errors",
								json_object_get(mig, "__err")));
	}
	json_object_set_new(m, "__key", json_string(name));
	free(rel);
	free(url);
	return m;
}

static void list_managed(struct ce_req *q, json_t *mig, const char *zone)
{
	static const char *const ok[] = { "filter", "maxResults", "pageToken", "orderBy",
					  "returnPartialSuccess", NULL };
	json_t *items = json_array(), *m, *page;
	size_t i;
	char *next;

	if (ce_check_query(q->r, ok) < 0) {
		json_decref(items);
		return;
	}
	json_array_foreach(json_object_get(mig, "__members"), i, m)
		json_array_append_new(items, managed(mig, zone, json_string_value(m)));
	ce_sort(items);
	if (ce_page(q->r, items, &page, &next) < 0)
		return;
	json_t *out = json_object();
	json_array_foreach(page, i, m)
		json_array_set_new(page, i, ce_public(m));
	if (json_array_size(page))
		json_object_set(out, "managedInstances", page);
	json_decref(page);
	if (next)
		json_object_set_new(out, "nextPageToken", json_string(next));
	free(next);
	fg_reply_json(q->r, 200, out);
}

static void resize(struct ce_req *q, json_t *mig, const char *zone)
{
	const char *sz = ce_arg(q->r, "size");
	long cur = (long)json_integer_value(json_object_get(mig, "targetSize"));
	char *end = NULL;
	long n = sz ? strtol(sz, &end, 10) : -1;
	int bulk = json_is_true(json_object_get(mig, "__bulk"));
	json_t *bop = json_object_get(json_object_get(mig, "status"), "bulkInstanceOperation");

	if (!sz || !*sz || *end || n < 0) {
		ce_invalid(q->r, "size", sz ? sz : "", "Must be an integer greater than or equal to 0.");
		return;
	}
	if (bulk && n > cur && cur > 0) {
		ce_invalid(q->r, "size", sz, "In bulk mode, the target size can be increased only "
			   "from 0.");
		return;
	}
	if (bulk && n > 0 && n < cur && json_is_true(json_object_get(bop, "inProgress"))) {
		ce_invalid(q->r, "size", sz, "In bulk mode, the target size can be lowered to a "
			   "non-zero size only when no bulk operation is in progress.");
		return;
	}
	json_object_set_new(mig, "targetSize", json_integer(n));
	plan_members(mig, zone, n);
	char *scope = xasprintf("zones/%s", zone);
	json_t *op = ce_op_new(scope, "compute.instanceGroupManagers.resize",
			       strstr(sget(mig, "selfLink"), "zones/"), sget(mig, "id"),
			       fg_opt.op_seconds);
	ce_request_id_keep(q->r, op);
	ce_reply_op(q->r, op);
	free(scope);
}

static void mig_one(struct ce_req *q, const char *zone, const char *name, const char *verb)
{
	struct fg_req *r = q->r;
	json_t *mig = ce_map2(ce.migs, zone, name), *op = NULL;
	static const char *const rid[] = { "requestId", NULL };
	static const char *const rsz[] = { "requestId", "size", NULL };
	static const char *const none[] = { NULL };
	int get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST");
	int lmi = verb && !strcmp(verb, "listManagedInstances");

	if (!get && !lmi) {
		if (ce_check_query(r, verb && !strcmp(verb, "resize") ? rsz : rid) < 0 ||
		    ce_request_id(r, &op) < 0)
			return;
		if (op) {
			ce_reply_op(r, op);
			return;
		}
	} else if (get && ce_check_query(r, none) < 0) {
		return;
	}
	if (!mig) {
		char *rel = xasprintf("zones/%s/instanceGroupManagers/%s", zone, name);
		ce_not_found(r, rel);
		free(rel);
	} else if (!verb && get) {
		fg_reply_json(r, 200, ce_public(mig)); /* a MIG being deleted too, till it is gone */
	} else if (json_object_get(mig, "__gone") && !lmi) {
		ce_not_ready(r, "instanceGroupManagers", zone, name);
	} else if (!verb && !strcmp(r->method, "DELETE")) {
		/* Its members go at once, and it goes with them; they stay
		 * listed as its members, each one's action DELETING. */
		size_t k;
		json_t *m;
		json_array_foreach(json_object_get(mig, "__members"), k, m) {
			json_t *inst = ce_map2(ce.inst, zone, json_string_value(m));
			if (inst && !json_object_get(inst, "__gone"))
				ce_instance_delete(inst);
		}
		ce_changed();
		json_object_set_new(mig, "__gone", json_real(fg_mono() + ce.delete_s));
		char *scope = xasprintf("zones/%s", zone);
		op = ce_op_new(scope, "delete", strstr(sget(mig, "selfLink"), "zones/"),
			       sget(mig, "id"), ce.delete_s);
		ce_request_id_keep(r, op);
		ce_reply_op(r, op);
		free(scope);
	} else if (lmi && post) {
		list_managed(q, mig, zone);
	} else if (verb && post && !strcmp(verb, "resize")) {
		resize(q, mig, zone);
	} else {
		ce_error(r, 404, "notFound", "The requested URL was not found on this server.");
	}
}

/* MIGs of a zone passing the filter f into it (keyed "ZONE/NAME" when
 * keyed). An unreachable zone has none to show. */
static void migs_in(struct ce_filter *f, const char *zone, struct ce_items *it, int keyed)
{
	const char *n;
	json_t *mig;

	json_object_foreach(json_is_true(json_object_get(ce.unreach, zone)) ? NULL
			    : json_object_get(ce.migs, zone), n, mig)
		if (ce_filter_match(f, mig)) /* one being deleted too, as the API lists it */
			ce_items_add(it, mig, zone, keyed ? xasprintf("%s/%s", zone, n) : NULL);
}

static const char *const list_ok[] = { "filter", "maxResults", "pageToken", "orderBy",
				       "returnPartialSuccess", "includeAllScopes",
				       "serviceProjectNumber", NULL };

void ce_migs_aggregated(struct ce_req *q)
{
	struct ce_items it = { 0 };
	struct ce_filter *f;
	json_t *page;
	const char *z;
	char *next;

	if (ce_check_query(q->r, list_ok) < 0 ||
	    ce_filter_parse(q->r, ce_arg(q->r, "filter"), &f) < 0)
		return;
	for (size_t i = 0; (z = ce_zone_at(i)); i++)
		migs_in(f, z, &it, 1);
	ce_filter_free(f);
	if (ce_items_page(q->r, &it, &page, &next) == 0)
		fg_reply_json(q->r, 200, ce_aggregated_json(
			q->r, "compute#instanceGroupManagerAggregatedList",
			"aggregated/instanceGroupManagers",
			ce_aggregate(page, "instanceGroupManagers"), next));
	ce_items_free(&it);
}

void ce_migs(struct ce_req *q)
{
	const char *zone = q->seg[1];

	if (q->nseg == 3 && !strcmp(q->r->method, "GET")) {
		struct ce_items it = { 0 };
		struct ce_filter *f;
		json_t *page;
		char *next, *rel = xasprintf("zones/%s/instanceGroupManagers", zone);
		if (ce_check_query(q->r, list_ok) == 0 &&
		    ce_filter_parse(q->r, ce_arg(q->r, "filter"), &f) == 0) {
			migs_in(f, zone, &it, 0);
			ce_filter_free(f);
			if (ce_items_page(q->r, &it, &page, &next) == 0)
				fg_reply_json(q->r, 200, ce_list_json(
					"compute#instanceGroupManagerList", rel, page, next));
		}
		ce_items_free(&it);
		free(rel);
	} else if (q->nseg == 3 && !strcmp(q->r->method, "POST")) {
		mig_insert(q, zone);
	} else if (q->nseg == 4 || q->nseg == 5) {
		mig_one(q, zone, q->seg[3], q->nseg == 5 ? q->seg[4] : NULL);
	} else {
		ce_error(q->r, 404, "notFound", "The requested URL was not found on this server.");
	}
}

/* ---------------------------------------------------------------- seed */

static json_t *running_now(const char *zone, const char *name, json_t *props, const char *mig)
{
	json_t *inst = ce_instance_create(zone, name, props, mig);
	char ts[40];

	ce_timestamp(ts);
	json_object_set_new(inst, "status", json_string("RUNNING"));
	json_object_set_new(inst, "lastStartTimestamp", json_string(ts));
	json_object_del(inst, "__next");
	json_object_del(inst, "__wait");
	return inst;
}

/* Label `key` (when given) of inst set to value. */
static void seed_label(json_t *inst, const char *key, const char *value)
{
	if (!key || !*key)
		return;
	json_t *l = json_object_get(inst, "labels");
	if (!json_is_object(l))
		json_object_set_new(inst, "labels", l = json_object());
	json_object_set_new(l, key, json_string(value));
}

/* d with every "{name}" replaced by name and "{index}" by i (caller frees). */
static char *seed_description(const char *d, const char *name, long i)
{
	struct { char *s; size_t n, a; } b = { 0 };
	char idx[24];
	snprintf(idx, sizeof(idx), "%ld", i);
	for (const char *p = d; *p;) {
		const char *v = !strncmp(p, "{name}", 6) ? name : !strncmp(p, "{index}", 7) ? idx : NULL;
		size_t take = v ? strlen(v) : 1, skip = v ? (v == name ? 6 : 7) : 1;
		XGROW(b.s, b.n + take + 1, b.a);
		memcpy(b.s + b.n, v ? v : p, take);
		b.n += take;
		p += skip;
	}
	XGROW(b.s, b.n + 1, b.a);
	b.s[b.n] = '\0';
	return b.s;
}

/*
 * POST /__admin/compute/instanceGroupManagers:seed?zone=Z&prefix=P&count=N&template=T
 *      [&policy=REGION/NAME][&size=K][&start=S][&description=D][&mig_label=KEY]
 *      [&index_label=KEY]
 * POST /__admin/compute/instances:seed?zone=Z&prefix=P&count=N&template=T[&start=S]
 *      [&index_label=KEY]
 * Many RUNNING resources at once, without operations or capacity checks,
 * for scale benchmarks: MIGs P-S .. P-(S+N-1) of the global template T (BULK,
 * DO_NOTHING, the workload policy, K members: the policy's VMs or 1), or
 * instances P-S.. with T's properties. The checks of an insert apply to
 * the references (the template must exist, the policy fit). A MIG's
 * description is D with "{name}" and "{index}" replaced by its name and
 * number; its members' label KEY (mig_label) is the MIG's name; label KEY
 * (index_label) of a seeded instance, or of a MIG's members, is its
 * number (as nodes:seed's index_label), so that a client's own naming and
 * labels can be seeded. Answers r.
 */
void ce_seed(struct fg_req *r, int migs)
{
	const char *zone = ce_arg(r, "zone"), *prefix = ce_arg(r, "prefix");
	const char *t = ce_arg(r, "template"), *pol = ce_arg(r, "policy");
	long count = ce_arg(r, "count") ? atol(ce_arg(r, "count")) : -1;
	long start = ce_arg(r, "start") ? atol(ce_arg(r, "start")) : 0;
	long size = ce_arg(r, "size") ? atol(ce_arg(r, "size")) : 0;
	const char *desc = ce_arg(r, "description"), *mig_label = ce_arg(r, "mig_label");
	const char *index_label = ce_arg(r, "index_label");
	struct mig_refs x = { 0 };

	if (!zone || !ce_zone_ok(zone) || !prefix || !t || count < 0 || count > 100000) {
		fg_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "expected ?zone=Z&prefix=P&count=N"
			       "&template=T[&policy=REGION/NAME][&size=K][&start=S]");
		return;
	}
	char *turl = xasprintf("global/instanceTemplates/%s", t);
	json_t *b = json_pack("{s:s, s:i, s:{s:s}, s:{s:s}}", "instanceTemplate", turl, "targetSize",
			      0, "targetSizePolicy", "mode", "BULK", "instanceLifecyclePolicy",
			      "defaultActionOnFailure", "DO_NOTHING");
	if (pol) {
		const char *slash = strchr(pol, '/');
		char *purl = slash ? xasprintf("regions/%.*s/resourcePolicies/%s", (int)(slash - pol),
					       pol, slash + 1) : xstrdup(pol);
		json_object_set_new(b, "resourcePolicies", json_pack("{s:s}", "workloadPolicy", purl));
		free(purl);
	}
	if (mig_refs(r, b, zone, &x) == 0 && mig_rules(r, b, &x, 1) == 0) {
		const char *topo = sget(json_object_get(x.wp, "workloadPolicy"), "acceleratorTopology");
		long k = size ? size : topo ? ce_topology_vms(x.mt, topo) : 1;
		json_t *props = json_object_get(x.tmpl, "properties");
		for (long i = start; i < start + count; i++) {
			char *name = xasprintf("%s-%ld", prefix, i), idx[24];
			snprintf(idx, sizeof(idx), "%ld", i);
			if (!migs) {
				seed_label(running_now(zone, name, props, NULL), index_label, idx);
			} else {
				json_object_set_new(b, "name", json_string(name));
				json_object_set_new(b, "targetSize", json_integer(k));
				if (desc) {
					char *dd = seed_description(desc, name, i);
					json_object_set_new(b, "description", json_string(dd));
					free(dd);
				}
				json_t *mig = mig_new(b, zone, &x, 1);
				json_t *m;
				size_t j;
				json_array_foreach(json_object_get(mig, "__members"), j, m) {
					json_t *inst = running_now(zone, json_string_value(m), props, name);
					seed_label(inst, mig_label, name);
					seed_label(inst, index_label, idx);
					json_object_set_new(json_object_get(mig, "__made"),
							    json_string_value(m), json_true());
				}
				mig_status(mig, zone);
			}
			free(name);
		}
		fg_reply_json(r, 200, json_pack("{s:b, s:i}", "ok", 1, "count", (int)count));
	}
	refs_free(&x);
	json_decref(b);
	free(turl);
}

/* GET zones/Z/instanceGroups: the instance group of each MIG (gcloud's
 * `instance-groups managed list` reads their size): {kind, id, name,
 * zone, size (members that exist), selfLink, creationTimestamp}. */
void ce_instance_groups(struct ce_req *q)
{
	static const char *const ok[] = { "filter", "maxResults", "pageToken", "orderBy",
					  "returnPartialSuccess", NULL };
	const char *zone = q->seg[1], *n;
	json_t *items = json_array(), *mig, *page, *m;
	char *next, *rel = xasprintf("zones/%s/instanceGroups", zone);
	size_t i;

	if (ce_check_query(q->r, ok) < 0) {
		json_decref(items);
		free(rel);
		return;
	}
	json_object_foreach(json_object_get(ce.migs, zone), n, mig) {
		int size = 0;
		if (json_object_get(mig, "__gone"))
			continue;
		json_array_foreach(json_object_get(mig, "__members"), i, m)
			size += ce_map2(ce.inst, zone, json_string_value(m)) != NULL;
		json_t *g = json_pack("{s:s, s:O, s:s, s:O, s:O, s:i, s:O}", "kind",
				      "compute#instanceGroup", "id", json_object_get(mig, "id"), "name",
				      n, "creationTimestamp", json_object_get(mig, "creationTimestamp"),
				      "zone", json_object_get(mig, "zone"), "size", size, "selfLink",
				      json_object_get(mig, "instanceGroup"));
		json_array_append_new(items, g);
	}
	ce_sort(items);
	if (ce_page(q->r, items, &page, &next) == 0)
		fg_reply_json(q->r, 200, ce_list_json("compute#instanceGroupList", rel, page, next));
	free(rel);
}
