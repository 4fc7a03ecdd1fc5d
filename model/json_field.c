/*
 * Optional string fields of tpuform's JSON documents (model/json_field.h).
 */
#include "model/json_field.h"
#include "util/xalloc.h"

void tpf_json_set_str(json_t *o, const char *k, const char *v)
{
	if (v)
		json_object_set_new(o, k, json_string(v));
}

void tpf_json_set_str_kept(json_t *o, const char *k, const char *v)
{
	if (!v)
		return;
	json_t *s = json_string(v);
	json_object_set_new(o, k, s ? s : json_string_nocheck(v));
}

int tpf_json_get_str(json_t *o, const char *k, char **out, const char *what,
		     struct tpf_diags *d)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return tpf_error(d, "%s: '%s' must be a string", what, k);
	xstrset(out, json_string_value(v));
	return 0;
}
