/*
 * JSON forms of recipes, jobs and string maps (jansson), shared by the
 * state file and saved plans so both spell fields the same way.
 */
#include "model/recipe.h"
#include "model/json_field.h"
#include "util/xalloc.h"

#include <string.h>

/* A string that is not valid UTF-8 is kept as it is (json_string would
 * return NULL and the field would vanish silently): the writer that dumps
 * the document then refuses it, and says so. */
static json_t *str(const char *v)
{
	json_t *s = json_string(v);
	return s ? s : json_string_nocheck(v);
}

json_t *tpf_kvlist_to_json(const struct tpf_kvlist *l)
{
	json_t *o = json_object();
	for (size_t i = 0; i < l->n; i++)
		json_object_set_new(o, l->items[i].key, str(l->items[i].value));
	return o;
}

int tpf_kvlist_from_json(struct tpf_kvlist *l, json_t *j, const char *what, struct tpf_diags *d)
{
	if (!j)
		return 0;
	if (!json_is_object(j))
		return tpf_error(d, "%s: expected an object of strings", what);
	const char *k;
	json_t *v;
	json_object_foreach(j, k, v) {
		if (!json_is_string(v))
			return tpf_error(d, "%s: value of '%s' must be a string", what, k);
		tpf_kvlist_set(l, k, json_string_value(v));
	}
	return 0;
}

json_t *tpf_recipe_to_json(const struct tpf_recipe *r)
{
	json_t *o = json_object();
	tpf_json_set_str_kept(o, "accelerator_type", r->accelerator_type);
	tpf_json_set_str_kept(o, "runtime_version", r->runtime_version);
	tpf_json_set_str_kept(o, "zone", r->zone);
	json_object_set_new(o, "preemptible", json_boolean(r->preemptible));
	json_object_set_new(o, "spot", json_boolean(r->spot));
	json_object_set_new(o, "workers", json_integer(r->workers));
	json_object_set_new(o, "labels", tpf_kvlist_to_json(&r->labels));
	if (r->queued)
		json_object_set_new(o, "queued", json_true());
	tpf_json_set_str_kept(o, "valid_until", r->valid_until);
	if (r->slices > 1)
		json_object_set_new(o, "slices", json_integer(r->slices));
	tpf_node_fields_to_json(&r->node, o); /* only the fields set */
	tpf_compute_to_json(&r->compute, o);  /* nothing for a Cloud TPU API node */
	return o;
}

int tpf_recipe_from_json(struct tpf_recipe *r, json_t *j, const char *what, struct tpf_diags *d)
{
	if (!json_is_object(j))
		return tpf_error(d, "%s: 'recipe' must be an object", what);
	if (tpf_json_get_str(j, "accelerator_type", &r->accelerator_type, what, d) ||
	    tpf_json_get_str(j, "runtime_version", &r->runtime_version, what, d) ||
	    tpf_json_get_str(j, "zone", &r->zone, what, d) ||
	    tpf_json_get_str(j, "valid_until", &r->valid_until, what, d))
		return TPF_ERROR;
	json_t *qd = json_object_get(j, "queued");
	if (qd && !json_is_boolean(qd))
		return tpf_error(d, "%s: 'queued' must be true or false", what);
	r->queued = json_is_true(qd);
	json_t *w = json_object_get(j, "workers");
	if (w && !json_is_integer(w))
		return tpf_error(d, "%s: 'workers' must be a whole number", what);
	r->workers = w ? (int)json_integer_value(w) : 1;
	json_t *sl = json_object_get(j, "slices");
	if (sl && (!json_is_integer(sl) || json_integer_value(sl) < 1 ||
		   json_integer_value(sl) > 1024))
		return tpf_error(d, "%s: 'slices' must be a whole number from 1 to 1024", what);
	r->slices = sl ? (int)json_integer_value(sl) : 0;
	r->preemptible = json_is_true(json_object_get(j, "preemptible"));
	r->spot = json_is_true(json_object_get(j, "spot"));
	if (tpf_node_fields_from_json(&r->node, j, what, d) ||
	    tpf_compute_from_json(&r->compute, j, what, d))
		return TPF_ERROR;
	return tpf_kvlist_from_json(&r->labels, json_object_get(j, "labels"), what, d);
}

json_t *tpf_job_to_json(const struct tpf_job *job)
{
	json_t *o = json_object();
	tpf_json_set_str_kept(o, "commit", job->commit);
	tpf_json_set_str_kept(o, "repo", job->repo);
	tpf_json_set_str_kept(o, "setup", job->setup);
	tpf_json_set_str_kept(o, "run", job->run);
	json_object_set_new(o, "env", tpf_kvlist_to_json(&job->env));
	tpf_json_set_str_kept(o, "secrets_hash", job->secrets_hash);
	return o;
}

int tpf_job_from_json(struct tpf_job *job, json_t *j, const char *what, struct tpf_diags *d)
{
	if (!j)
		return 0;
	if (!json_is_object(j))
		return tpf_error(d, "%s: 'job' must be an object", what);
	if (tpf_json_get_str(j, "commit", &job->commit, what, d) || tpf_json_get_str(j, "repo", &job->repo, what, d) ||
	    tpf_json_get_str(j, "setup", &job->setup, what, d) || tpf_json_get_str(j, "run", &job->run, what, d) ||
	    tpf_json_get_str(j, "secrets_hash", &job->secrets_hash, what, d))
		return TPF_ERROR;
	return tpf_kvlist_from_json(&job->env, json_object_get(j, "env"), what, d);
}
