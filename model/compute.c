/*
 * The Compute Engine part of a recipe: copy, release, JSON (model/compute.h).
 */
#include "model/compute.h"
#include "model/json_field.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

void tpf_compute_copy(struct tpf_compute *dst, const struct tpf_compute *src)
{
	struct tpf_compute t = *src;
	t.machine_type = xstrdup(src->machine_type);
	t.image = xstrdup(src->image);
	t.termination_action = xstrdup(src->termination_action);
	t.disk_type = xstrdup(src->disk_type);
	tpf_compute_release(dst);
	*dst = t;
}

void tpf_compute_release(struct tpf_compute *c)
{
	free(c->machine_type);
	free(c->image);
	free(c->termination_action);
	free(c->disk_type);
	memset(c, 0, sizeof(*c));
}

void tpf_compute_to_json(const struct tpf_compute *c, json_t *o)
{
	if (c->api != TPF_API_COMPUTE)
		return;
	json_object_set_new(o, "api", json_string("compute"));
	tpf_json_set_str(o, "machine_type", c->machine_type);
	tpf_json_set_str(o, "image", c->image);
	if (c->flex_start)
		json_object_set_new(o, "flex_start", json_true());
	tpf_json_set_str(o, "termination_action", c->termination_action);
	if (c->max_run_duration > 0)
		json_object_set_new(o, "max_run_duration", json_integer(c->max_run_duration));
	if (c->flex_wait > 0)
		json_object_set_new(o, "flex_wait", json_integer(c->flex_wait));
	if (c->disk_size_gb > 0 || c->disk_type) {
		json_t *b = json_object();
		if (c->disk_size_gb > 0)
			json_object_set_new(b, "size_gb", json_integer(c->disk_size_gb));
		tpf_json_set_str(b, "type", c->disk_type);
		json_object_set_new(o, "boot_disk", b);
	}
}

/* A whole number from 0 to max, or absent (then 0). */
static int get_uint(json_t *o, const char *k, long max, long *out, const char *what,
		    struct tpf_diags *d)
{
	json_t *v = json_object_get(o, k);
	*out = 0;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
		return tpf_error(d, "%s: '%s' must be a whole number from 0 to %ld", what, k, max);
	*out = (long)json_integer_value(v);
	return 0;
}

int tpf_compute_from_json(struct tpf_compute *c, json_t *o, const char *what,
			  struct tpf_diags *d)
{
	json_t *api = json_object_get(o, "api");
	if (!api)
		return 0;
	if (!json_is_string(api) || (strcmp(json_string_value(api), "compute") &&
				      strcmp(json_string_value(api), "tpu")))
		return tpf_error(d, "%s: 'api' must be \"compute\" or \"tpu\"", what);
	if (!strcmp(json_string_value(api), "tpu"))
		return 0;
	c->api = TPF_API_COMPUTE;
	json_t *flex = json_object_get(o, "flex_start"), *disk = json_object_get(o, "boot_disk");
	long size = 0;
	if (flex && !json_is_boolean(flex))
		return tpf_error(d, "%s: 'flex_start' must be true or false", what);
	c->flex_start = json_is_true(flex);
	if (disk && !json_is_object(disk))
		return tpf_error(d, "%s: 'boot_disk' must be an object", what);
	if (tpf_json_get_str(o, "machine_type", &c->machine_type, what, d) ||
	    tpf_json_get_str(o, "image", &c->image, what, d) ||
	    tpf_json_get_str(o, "termination_action", &c->termination_action, what, d) ||
	    get_uint(o, "max_run_duration", 100L * 365 * 86400, &c->max_run_duration, what, d) ||
	    get_uint(o, "flex_wait", 100L * 365 * 86400, &c->flex_wait, what, d) ||
	    (disk && (get_uint(disk, "size_gb", 65536, &size, what, d) ||
		      tpf_json_get_str(disk, "type", &c->disk_type, what, d))))
		return TPF_ERROR;
	c->disk_size_gb = (int)size;
	return 0;
}
