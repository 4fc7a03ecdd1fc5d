/*
 * The Compute Engine part of the diff (model/compute.h; issue 18;
 * docs/compute-engine.md "Plan and replacement").
 *
 * Rule: the API a node lives on, its machine type, boot image,
 * provisioning (flex-start, spot's termination action), maxRunDuration and
 * boot disk force replacement: Compute Engine changes none of them on a
 * running TPU VM (instances.setScheduling refuses TPU machine types'
 * provisioning changes, and a slice's MIG template is OPPORTUNISTIC, so a
 * new template would reach no VM). Topology and reservation are compared
 * by plan/diff_node.c, scheduling (spot, flex-start) by plan/diff.c.
 *
 * api and machine_type are compared with the live node (what the provider
 * reports); image and boot disk type with the state's record of how the
 * node was created when there is one (an instance does not report its
 * source image, and the attached disk does not carry its type), else with
 * the live node when it reports them.
 */
#include "plan/plan_internal.h"
#include "util/str.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *quoted(const char *s)
{
	if (!s)
		return xstrdup("null");
	json_t *j = json_string(s);
	char *r = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	return r ? r : xstrdup("null");
}

static void str_change(struct tpf_action *a, const char *field, const char *before,
		       const char *after, int forces)
{
	char *b = before || forces ? quoted(before) : NULL, *v = quoted(after);
	tpf_action_change_take(a, field, b, v, forces);
}

static void num_change(struct tpf_action *a, const char *field, long before, long after,
		       int forces, const char *unit)
{
	char b[48], v[48];
	snprintf(b, sizeof(b), "%ld%s", before, unit);
	snprintf(v, sizeof(v), "%ld%s", after, unit);
	tpf_action_change(a, field, forces ? b : NULL, v, forces, 0);
}

void tpf_diff_compute_new(struct tpf_action *a, const struct tpf_recipe *r)
{
	const struct tpf_compute *c = &r->compute;
	if (c->api != TPF_API_COMPUTE)
		return;
	str_change(a, "api", NULL, "compute", 0);
	if (c->disk_size_gb > 0)
		num_change(a, "boot_disk_size_gb", 0, c->disk_size_gb, 0, "");
	if (c->disk_type)
		str_change(a, "boot_disk_type", NULL, c->disk_type, 0);
	if (c->flex_start && c->flex_wait > 0)
		num_change(a, "flex_wait", 0, c->flex_wait, 0, "s");
	str_change(a, "image", NULL, c->image, 0);
	str_change(a, "machine_type", NULL, c->machine_type, 0);
	if (c->max_run_duration > 0)
		num_change(a, "max_run_duration", 0, c->max_run_duration, 0, "s");
	if (c->termination_action)
		str_change(a, "termination_action", NULL, c->termination_action, 0);
}

int tpf_diff_compute_replace(struct tpf_action *a, const struct tpf_recipe *want,
			     const struct tpf_recipe *live, const struct tpf_recipe *recorded)
{
	const struct tpf_compute *w = &want->compute, *l = &live->compute;
	const struct tpf_compute *asked = recorded && recorded->compute.api == l->api
						  ? &recorded->compute : l;
	if (w->api != l->api) {
		str_change(a, "api", tpf_api_name(l->api), tpf_api_name(w->api), 1);
		return 1; /* another API: every other field is another resource's */
	}
	if (w->api != TPF_API_COMPUTE)
		return 0;
	if (l->machine_type && !tpf_streq(w->machine_type, l->machine_type))
		str_change(a, "machine_type", l->machine_type, w->machine_type, 1);
	if (asked->image && !tpf_streq(w->image, asked->image))
		str_change(a, "image", asked->image, w->image, 1);
	if (asked->disk_type && !tpf_streq(w->disk_type, asked->disk_type))
		str_change(a, "boot_disk_type", asked->disk_type, w->disk_type, 1);
	if (asked->disk_size_gb > 0 && w->disk_size_gb != asked->disk_size_gb)
		num_change(a, "boot_disk_size_gb", asked->disk_size_gb, w->disk_size_gb, 1, "");
	if (want->spot && l->termination_action &&
	    !tpf_streq(w->termination_action, l->termination_action))
		str_change(a, "termination_action", l->termination_action, w->termination_action, 1);
	if (w->max_run_duration != l->max_run_duration)
		num_change(a, "max_run_duration", l->max_run_duration, w->max_run_duration, 1, "s");
	return 0;
}
