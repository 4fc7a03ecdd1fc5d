/*
 * The state's JSON form, reading side: jansson -> struct tpf_state, with the
 * checks that make a damaged or foreign file a clear refusal instead of a
 * half-read state that a later save would write over the original. The
 * writing side is state_tojson.c.
 */
#include "state/state_priv.h"
#include "util/version.h"
#include "util/xalloc.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- from JSON -------------------------------------------------------- */

char *tpf_state_damaged_hint(const char *path)
{
	char *backup = xasprintf("%s.backup", path);
	int have = access(backup, F_OK) == 0;
	free(backup);
	if (have)
		return xasprintf("The file may have been damaged or edited by hand. Fix it, or restore "
				 "the previous state by copying '%s.backup' over '%s'.",
				 path, path);
	return xasprintf("The file may have been damaged or edited by hand, and there is no '%s.backup' "
			 "to restore. Fix it, or move it away: the next plan then finds the fleet's "
			 "nodes by their labels and offers to adopt them.",
			 path);
}


struct reader {
	const char *what;
	int is_file;
	struct tpf_diags *d;
};

static const char *kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return json_string_length(v) ? "a string" : "an empty string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number with a fraction";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "a value";
}

static char *hint(const struct reader *r)
{
	if (r->is_file)
		return tpf_state_damaged_hint(r->what);
	return xasprintf("The state embedded in '%s' is damaged; create it again.", r->what);
}

/* prefix is the field's parent path ("" or "nodes[2].recipe"). */
static int field_error(const struct reader *r, const char *prefix, const char *key,
		       const char *expected, const json_t *got)
{
	char *h = hint(r);
	const char *dot = *prefix ? "." : "";
	if (!got)
		tpf_errorx(r->d, NULL, h,
			   "state file '%s' is missing the field '%s%s%s' (expected %s); "
			   "it was left untouched",
			   r->what, prefix, dot, key, expected);
	else
		tpf_errorx(r->d, NULL, h,
			   "state file '%s' has an invalid field '%s%s%s': expected %s, found %s; "
			   "it was left untouched",
			   r->what, prefix, dot, key, expected, kind(got));
	free(h);
	return TPF_ERROR;
}

/* An optional string: absent or null gives NULL. */
static int get_str(const struct reader *r, json_t *o, const char *prefix, const char *key,
		   int required, char **out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		if (required)
			return field_error(r, prefix, key, "a non-empty string", NULL);
		return 0;
	}
	if (!json_is_string(v) || (required && !json_string_length(v)))
		return field_error(r, prefix, key, required ? "a non-empty string" : "a string", v);
	*out = xstrdup(json_string_value(v));
	return 0;
}

/* An optional string of at most max bytes (tpuform never writes a longer
 * one: a longer one was edited in by hand). */
static int get_bounded_str(const struct reader *r, json_t *o, const char *prefix,
			   const char *key, size_t max, char **out)
{
	json_t *v = json_object_get(o, key);
	if (v && json_is_string(v) && json_string_length(v) > max) {
		char what[64];
		snprintf(what, sizeof(what), "a string of at most %zu bytes", max);
		return field_error(r, prefix, key, what, v);
	}
	return get_str(r, o, prefix, key, 0, out);
}

/* A worker's "status": a job state's recorded word (model/job_state.h);
 * absent or null: TPF_JOB_STATE_UNKNOWN. */
static int get_job_state(const struct reader *r, json_t *o, const char *prefix,
			 enum tpf_job_state *out)
{
	char *word = NULL;
	*out = TPF_JOB_STATE_UNKNOWN;
	if (get_str(r, o, prefix, "status", 0, &word) < 0)
		return TPF_ERROR;
	int err = word && tpf_job_state_from_recorded(word, out) < 0;
	if (err) {
		char *h = hint(r);
		struct tpf_buf words = TPF_BUF_INIT;
		tpf_job_state_recorded_words(&words);
		tpf_errorx(r->d, NULL, h,
			   "state file '%s' has an invalid field '%s.status': expected %s, found '%s'; "
			   "it was left untouched",
			   r->what, prefix, words.buf, word);
		tpf_buf_release(&words);
		free(h);
	}
	free(word);
	return err ? TPF_ERROR : 0;
}

/* The node's status, parsed here once (state/node_status.c): absent gives
 * TPF_NODE_STATUS_NONE; a name tpuform never writes is refused. */
static int get_node_status(const struct reader *r, json_t *o, const char *prefix,
			   enum tpf_node_status *out)
{
	char *name = NULL;
	if (get_str(r, o, prefix, "status", 0, &name) < 0)
		return TPF_ERROR;
	int s = tpf_node_status_from_name(name);
	free(name);
	if (s < 0)
		return field_error(r, prefix, "status",
				   "one of pending, created, tainted, bad_host, completed",
				   json_object_get(o, "status"));
	*out = (enum tpf_node_status)s;
	return 0;
}

static int get_int(const struct reader *r, json_t *o, const char *prefix, const char *key,
		   int required, long long min, long long max, long long *out)
{
	json_t *v = json_object_get(o, key);
	const char *expected = min >= 0 ? "a non-negative integer" : "an integer";
	if (!v || json_is_null(v)) {
		if (required)
			return field_error(r, prefix, key, expected, NULL);
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return field_error(r, prefix, key, expected, v);
	*out = json_integer_value(v);
	return 0;
}

static int get_int32(const struct reader *r, json_t *o, const char *prefix, const char *key,
		     long long min, int *out)
{
	long long v = *out;
	if (get_int(r, o, prefix, key, 0, min, INT_MAX, &v) < 0)
		return TPF_ERROR;
	*out = (int)v;
	return 0;
}

static int get_bool(const struct reader *r, json_t *o, const char *prefix, const char *key,
		    int *out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return field_error(r, prefix, key, "true or false", v);
	*out = json_is_true(v);
	return 0;
}

static int get_map(const struct reader *r, json_t *o, const char *prefix, const char *key,
		   struct tpf_kvlist *out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return field_error(r, prefix, key, "an object of strings", v);
	const char *k;
	json_t *val;
	json_object_foreach(v, k, val) {
		if (!json_is_string(val)) {
			char *p = xasprintf("%s%s%s", prefix, *prefix ? "." : "", key);
			field_error(r, p, k, "a string", val);
			free(p);
			return TPF_ERROR;
		}
		tpf_kvlist_set(out, k, json_string_value(val));
	}
	/* jansson iterates in hash order: sort so that memory is stable too. */
	tpf_kvlist_sort(out);
	return 0;
}

/* An optional object member: absent or null gives NULL, anything but an
 * object is refused. */
static int get_obj(const struct reader *r, json_t *o, const char *prefix, const char *key,
		   json_t **out)
{
	json_t *v = json_object_get(o, key);
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return field_error(r, prefix, key, "an object", v);
	*out = v;
	return 0;
}

static int parse_recipe(const struct reader *r, json_t *o, const char *prefix,
			struct tpf_recipe *rc)
{
	if (get_str(r, o, prefix, "accelerator_type", 0, &rc->accelerator_type) < 0 ||
	    get_str(r, o, prefix, "runtime_version", 0, &rc->runtime_version) < 0 ||
	    get_str(r, o, prefix, "zone", 0, &rc->zone) < 0 ||
	    get_bool(r, o, prefix, "preemptible", &rc->preemptible) < 0 ||
	    get_bool(r, o, prefix, "spot", &rc->spot) < 0 ||
	    get_int32(r, o, prefix, "workers", 0, &rc->workers) < 0 ||
	    get_map(r, o, prefix, "labels", &rc->labels) < 0 ||
	    get_bool(r, o, prefix, "queued", &rc->queued) < 0 ||
	    get_str(r, o, prefix, "valid_until", 0, &rc->valid_until) < 0)
		return TPF_ERROR;
	if (get_int32(r, o, prefix, "slices", 0, &rc->slices) < 0)
		return TPF_ERROR;
	/* The node fields, present only when set (model/node_fields.h), and
	 * the Compute Engine part (model/compute.h): without it a Compute
	 * Engine node would load as a Cloud TPU one, and the provider would
	 * stop listing the instances of a group moved back to the Cloud TPU
	 * API (the provider learns it from the state: providers/provider.h
	 * recorded). */
	char *what = xasprintf("%s: %s", r->what, prefix);
	int rc_nf = tpf_node_fields_from_json(&rc->node, o, what, r->d);
	if (rc_nf == 0)
		rc_nf = tpf_compute_from_json(&rc->compute, o, what, r->d);
	free(what);
	return rc_nf < 0 ? TPF_ERROR : 0;
}

static int parse_job(const struct reader *r, json_t *o, const char *prefix, struct tpf_job *j)
{
	if (get_str(r, o, prefix, "commit", 0, &j->commit) < 0 ||
	    get_str(r, o, prefix, "repo", 0, &j->repo) < 0 ||
	    get_str(r, o, prefix, "setup", 0, &j->setup) < 0 ||
	    get_str(r, o, prefix, "run", 0, &j->run) < 0 ||
	    get_map(r, o, prefix, "env", &j->env) < 0 ||
	    get_str(r, o, prefix, "secrets_hash", 0, &j->secrets_hash) < 0)
		return TPF_ERROR;
	return 0;
}

static int parse_worker(const struct reader *r, json_t *o, const char *prefix, size_t pos,
			struct tpf_state_worker *w)
{
	long long index = -1;
	/* Workers are addressed by position (set_workers keeps indices
	 * 0..n-1), so a file whose list has gaps or is out of order is not
	 * something to guess about. */
	if (get_int(r, o, prefix, "index", 1, 0, INT_MAX, &index) < 0)
		return TPF_ERROR;
	if ((size_t)index != pos) {
		char *expected = xasprintf("%zu (workers are listed by index from 0)", pos);
		field_error(r, prefix, "index", expected, json_object_get(o, "index"));
		free(expected);
		return TPF_ERROR;
	}
	w->index = (int)index;
	if (get_str(r, o, prefix, "script_hash", 0, &w->script_hash) < 0 ||
	    get_str(r, o, prefix, "session", 0, &w->session) < 0 ||
	    get_job_state(r, o, prefix, &w->job_state) < 0 ||
	    get_int32(r, o, prefix, "exit_code", INT_MIN, &w->exit_code) < 0 ||
	    get_int32(r, o, prefix, "restarts", 0, &w->restarts) < 0 ||
	    get_str(r, o, prefix, "address", 0, &w->address) < 0 ||
	    get_str(r, o, prefix, "host_key", 0, &w->host_key) < 0 ||
	    get_str(r, o, prefix, "provisioned_at", 0, &w->provisioned_at) < 0 ||
	    get_str(r, o, prefix, "restarted_at", 0, &w->restarted_at) < 0 ||
	    get_int32(r, o, prefix, "preflight_failures", 0, &w->preflight_failures) < 0 ||
	    get_str(r, o, prefix, "preflight_error", 0, &w->preflight_error) < 0)
		return TPF_ERROR;
	return 0;
}

static int parse_node(const struct reader *r, json_t *o, const char *prefix,
		      struct tpf_state_node *n)
{
	json_t *recipe, *job, *workers;
	n->exit_code = -1; /* absent: version 1, or not completed */
	if (get_str(r, o, prefix, "name", 1, &n->name) < 0 ||
	    get_str(r, o, prefix, "group", 0, &n->group) < 0 ||
	    get_int32(r, o, prefix, "index", 0, &n->index) < 0 ||
	    get_str(r, o, prefix, "id", 0, &n->id) < 0 ||
	    get_node_status(r, o, prefix, &n->status) < 0 ||
	    get_int32(r, o, prefix, "generation", 0, &n->generation) < 0 ||
	    get_str(r, o, prefix, "created_at", 0, &n->created_at) < 0 ||
	    get_bounded_str(r, o, prefix, "last_checkpoint", TPF_STATE_CHECKPOINT_MAX,
			    &n->last_checkpoint) < 0 ||
	    get_str(r, o, prefix, "checkpoint_at", 0, &n->checkpoint_at) < 0 ||
	    get_str(r, o, prefix, "completed_at", 0, &n->completed_at) < 0 ||
	    get_int32(r, o, prefix, "exit_code", INT_MIN, &n->exit_code) < 0 ||
	    get_str(r, o, prefix, "bad_host", 0, &n->bad_host) < 0 ||
	    get_int32(r, o, prefix, "preemptions", 0, &n->preemptions) < 0 ||
	    get_str(r, o, prefix, "refused", 0, &n->refused) < 0 ||
	    get_str(r, o, prefix, "retry_after", 0, &n->retry_after) < 0 ||
	    get_str(r, o, prefix, "delete_sent_at", 0, &n->delete_sent_at) < 0 ||
	    get_str(r, o, prefix, "elastic_slices", 0, &n->elastic_slices) < 0 ||
	    get_obj(r, o, prefix, "recipe", &recipe) < 0 ||
	    get_obj(r, o, prefix, "job", &job) < 0)
		return TPF_ERROR;

	int err;
	char *sub = NULL;
	if (recipe) {
		sub = xasprintf("%s.recipe", prefix);
		err = parse_recipe(r, recipe, sub, &n->recipe);
		free(sub);
		if (err)
			return err;
	}
	if (job) {
		sub = xasprintf("%s.job", prefix);
		err = parse_job(r, job, sub, &n->job);
		free(sub);
		if (err)
			return err;
	}

	workers = json_object_get(o, "workers");
	if (!workers || json_is_null(workers))
		return 0;
	if (!json_is_array(workers))
		return field_error(r, prefix, "workers", "an array", workers);
	size_t count = json_array_size(workers);
	n->workers = xcalloc(count, sizeof(*n->workers));
	for (size_t i = 0; i < count; i++) {
		json_t *w = json_array_get(workers, i);
		struct tpf_state_worker *sw = &n->workers[i];
		sw->exit_code = -1;
		n->nworkers = i + 1; /* so that release frees what was parsed */
		sub = xasprintf("%s.workers[%zu]", prefix, i);
		if (!json_is_object(w))
			err = field_error(r, prefix, strrchr(sub, '.') + 1, "an object", w);
		else
			err = parse_worker(r, w, sub, i, sw);
		free(sub);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Bring an older document up to TPF_STATE_VERSION, one version at a time,
 * each step taking and returning a reference. A step for version N goes in
 * the switch as `case N:` and must not modify a document it did not copy
 * (the caller owns root).
 */
static json_t *migrate(const struct reader *r, json_t *root, long long version)
{
	json_t *doc = json_incref(root);
	while (version < TPF_STATE_VERSION) {
		switch (version) {
		case 1:
			/* 1 -> 2 added optional fields only (completed nodes,
			 * restarted_at): a version 1 document reads as it is. */
			break;
		default: {
			char *h = hint(r);
			tpf_errorx(r->d, NULL, h,
				   "state file '%s' has version %lld, older than any tpuform state "
				   "format (the first is 1); it was left untouched",
				   r->what, version);
			free(h);
			json_decref(doc);
			return NULL;
		}
		}
		version++;
	}
	return doc;
}

static int cmp_node(const void *a, const void *b)
{
	const struct tpf_state_node *x = a, *y = b;
	return strcmp(x->name, y->name);
}

void tpf_state_sort_nodes(struct tpf_state *st)
{
	if (st->nnodes > 1)
		qsort(st->nodes, st->nnodes, sizeof(st->nodes[0]), cmp_node);
}

static int parse_body(const struct reader *r, json_t *root, struct tpf_state *st)
{
	long long v = 0;
	/* Lineage first: without it serials mean nothing (docs/terraform-behaviour.md section 4). */
	if (get_str(r, root, "", "lineage", 1, &st->lineage) < 0 ||
	    get_int(r, root, "", "serial", 1, 0, LONG_MAX, &v) < 0)
		return TPF_ERROR;
	st->serial = (long)v;
	if (get_str(r, root, "", "tpuform_version", 0, &st->tpuform_version) < 0 ||
	    get_str(r, root, "", "fleet", 0, &st->fleet) < 0 ||
	    get_str(r, root, "", "proxy_jump_host", 0, &st->proxy_jump_host) < 0 ||
	    get_str(r, root, "", "proxy_jump_host_key", 0, &st->proxy_jump_host_key) < 0)
		return TPF_ERROR;

	json_t *nodes = json_object_get(root, "nodes");
	if (!nodes || json_is_null(nodes))
		return 0;
	if (!json_is_array(nodes))
		return field_error(r, "", "nodes", "an array", nodes);
	size_t count = json_array_size(nodes);
	st->nodes = xcalloc(count, sizeof(*st->nodes));
	st->alloc = count;
	for (size_t i = 0; i < count; i++) {
		json_t *n = json_array_get(nodes, i);
		char *prefix = xasprintf("nodes[%zu]", i);
		int err;
		st->nnodes = i + 1;
		if (!json_is_object(n))
			err = field_error(r, "", prefix, "an object", n);
		else
			err = parse_node(r, n, prefix, &st->nodes[i]);
		free(prefix);
		if (err)
			return err;
	}
	tpf_state_sort_nodes(st);
	for (size_t i = 1; i < st->nnodes; i++) {
		if (!strcmp(st->nodes[i - 1].name, st->nodes[i].name)) {
			char *h = hint(r);
			tpf_errorx(r->d, NULL, h,
				   "state file '%s' lists node '%s' twice; it was left untouched",
				   r->what, st->nodes[i].name);
			free(h);
			return TPF_ERROR;
		}
	}
	return 0;
}

int tpf_state_parse(struct tpf_state *st, json_t *root, const char *what, int is_file,
		    struct tpf_diags *d)
{
	return tpf_state_parse_canon(st, root, what, is_file, NULL, d);
}

int tpf_state_parse_canon(struct tpf_state *st, json_t *root, const char *what, int is_file,
			  char *canon, struct tpf_diags *d)
{
	struct reader r = { what, is_file, d };
	struct tpf_state tmp = { 0 };
	json_t *doc = NULL;
	long long version = 0;
	int err = 0;

	if (!json_is_object(root)) {
		char *h = hint(&r);
		err = tpf_errorx(d, NULL, h,
				 "state file '%s' is not a tpuform state: expected a JSON object at the "
				 "top level, found %s; it was left untouched",
				 what, root ? kind(root) : "nothing");
		free(h);
		goto done;
	}
	/* The version decides how to read everything else, so it is checked
	 * before any other field: a newer format may have changed them. */
	err = get_int(&r, root, "", "version", 1, LLONG_MIN, LLONG_MAX, &version);
	if (err)
		goto done;
	if (version > TPF_STATE_VERSION) {
		const char *by = json_string_value(json_object_get(root, "tpuform_version"));
		/* Name a version to upgrade to only when it is newer than this
		 * one; a stamp that is not newer means the file was edited. */
		char *h = by && tpf_version_cmp(by, TPF_VERSION) > 0
				  ? xasprintf("It was written by tpuform %s; this is tpuform %s. Upgrade "
					      "tpuform to at least %s to use this state.",
					      by, TPF_VERSION, by)
				  : xasprintf("This is tpuform %s, and the file claims %s%s. Use the tpuform "
					      "that wrote it, or restore a backup if the file was edited.",
					      TPF_VERSION, by ? "tpuform " : "no tpuform_version",
					      by ? by : "");
		err = tpf_errorx(d, NULL, h,
				 "state file '%s' has version %lld, newer than this tpuform supports "
				 "(%d); it was left untouched",
				 what, version, TPF_STATE_VERSION);
		free(h);
		goto done;
	}
	doc = migrate(&r, root, version);
	if (!doc) {
		err = TPF_ERROR;
		goto done;
	}
	tmp.version = TPF_STATE_VERSION;
	err = parse_body(&r, doc, &tmp);
	if (err)
		goto done;
	tmp.last_json = canon ? canon : tpf_state_canonical(&tmp);
	canon = NULL;
done:
	free(canon); /* not taken: a refusal */
	json_decref(doc);
	if (err) {
		tpf_state_release(&tmp);
		tpf_state_init(st);
		return err;
	}
	*st = tmp;
	return 0;
}

int tpf_state_from_json(struct tpf_state *st, json_t *root, const char *what,
			struct tpf_diags *d)
{
	return tpf_state_parse(st, root, what, 0, d);
}
