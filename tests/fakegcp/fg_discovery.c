/*
 * The discovery document drives routing: every method's flatPath and HTTP
 * method is indexed at start-up, so the emulator serves exactly the paths
 * the real API has, and query parameters are checked against the method's
 * own parameters plus the document's global ones ("fields", "prettyPrint",
 * "$.xgafv", ...).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

struct fg_method {
	const char *id;
	const char *http;
	const char *request; /* schema id of the body, or NULL */
	const char *response; /* schema id of the answer, or NULL */
	char **segs;
	size_t nseg;
	json_t *params;      /* borrowed from doc */
};

static json_t *doc;
static struct fg_method *methods;
static size_t n_methods, a_methods;

static char **split_path(const char *path, size_t *n)
{
	char **v = NULL;
	size_t k = 0, alloc = 0;
	const char *p = path;

	for (;;) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);

		XGROW(v, k + 1, alloc);
		v[k++] = xstrndup(p, len);
		if (!slash)
			break;
		p = slash + 1;
	}
	*n = k;
	return v;
}

static void free_segs(char **segs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(segs[i]);
	free(segs);
}

static void index_resources(json_t *resources)
{
	const char *rname;
	json_t *res;

	json_object_foreach(resources, rname, res) {
		const char *mname;
		json_t *m;

		json_object_foreach(json_object_get(res, "methods"), mname, m) {
			const char *flat = json_string_value(json_object_get(m, "flatPath"));
			const char *http = json_string_value(json_object_get(m, "httpMethod"));
			const char *id = json_string_value(json_object_get(m, "id"));
			json_t *req = json_object_get(m, "request");

			if (!flat || !http || !id)
				continue;
			XGROW(methods, n_methods + 1, a_methods);
			struct fg_method *fm = &methods[n_methods++];
			fm->id = id;
			fm->http = http;
			fm->request = json_string_value(json_object_get(req, "$ref"));
			fm->response = json_string_value(
				json_object_get(json_object_get(m, "response"), "$ref"));
			fm->segs = split_path(flat, &fm->nseg);
			fm->params = json_object_get(m, "parameters");
		}
		index_resources(json_object_get(res, "resources"));
	}
}

int fg_discovery_load(const char *path, char *err, size_t errlen)
{
	json_error_t je;

	doc = json_load_file(path, 0, &je);
	if (!doc) {
		if (je.line > 0)
			snprintf(err, errlen, "discovery document '%s' line %d: %s", path, je.line,
				 je.text);
		else
			snprintf(err, errlen, "cannot read discovery document '%s': %s; name it with "
					      "--discovery FILE", path, je.text);
		return -1;
	}
	index_resources(json_object_get(doc, "resources"));
	if (!n_methods || !json_is_object(json_object_get(doc, "schemas"))) {
		snprintf(err, errlen, "'%s' is not a discovery document: no methods or schemas",
			 path);
		return -1;
	}
	return 0;
}

void fg_discovery_free(void)
{
	for (size_t i = 0; i < n_methods; i++)
		free_segs(methods[i].segs, methods[i].nseg);
	free(methods);
	methods = NULL;
	n_methods = a_methods = 0;
	json_decref(doc);
	doc = NULL;
}

json_t *fg_schema(const char *name)
{
	return name ? json_object_get(json_object_get(doc, "schemas"), name) : NULL;
}

const char *fg_method_request(const struct fg_method *m)
{
	return m->request;
}

const char *fg_method_response(const struct fg_method *m)
{
	return m->response;
}

/* A property's type: its $ref, an array's items' type, "map:" + an
 * object's additionalProperties' type; "" for a scalar. Fresh. */
static char *prop_type(json_t *p)
{
	const char *ref = json_string_value(json_object_get(p, "$ref"));
	const char *t = json_string_value(json_object_get(p, "type"));
	json_t *ap = json_object_get(p, "additionalProperties");
	if (ref)
		return xstrdup(ref);
	if (t && !strcmp(t, "array"))
		return prop_type(json_object_get(p, "items"));
	if (t && !strcmp(t, "object") && ap) {
		char *v = prop_type(ap);
		char *m = xasprintf("map:%s", v);
		free(v);
		return m;
	}
	return xstrdup("");
}

char *fg_schema_field_type(const char *type, const char *name, int *ok)
{
	json_t *p = json_object_get(json_object_get(fg_schema(type), "properties"), name);
	*ok = p != NULL;
	return p ? prop_type(p) : NULL;
}

void fg_match_release(struct fg_match *mt)
{
	for (size_t i = 0; i < mt->nvars; i++) {
		free(mt->var_name[i]);
		free(mt->var_value[i]);
	}
	mt->nvars = 0;
}

const char *fg_match_var(const struct fg_match *mt, const char *name)
{
	for (size_t i = 0; i < mt->nvars; i++)
		if (!strcmp(mt->var_name[i], name))
			return mt->var_value[i];
	return NULL;
}

/*
 * One template segment against one path segment. "{x}" takes any non-empty
 * value without ':' (so "n:stop" is left to the "{x}:stop" template);
 * "{x}:verb" takes "value:verb".
 */
static int seg_match(const char *tpl, const char *seg, struct fg_match *mt)
{
	if (tpl[0] != '{')
		return !strcmp(tpl, seg);
	const char *close = strchr(tpl, '}');
	if (!close)
		return 0;
	const char *verb = close[1] == ':' ? close + 1 : NULL;
	size_t vlen = strlen(seg);
	if (verb) {
		size_t n = strlen(verb);
		if (vlen <= n || strcmp(seg + vlen - n, verb))
			return 0;
		vlen -= n;
	}
	if (!vlen || memchr(seg, ':', vlen))
		return 0;
	if (mt->nvars < 4) {
		mt->var_name[mt->nvars] = xstrndup(tpl + 1, (size_t)(close - tpl - 1));
		mt->var_value[mt->nvars] = xstrndup(seg, vlen);
		mt->nvars++;
	}
	return 1;
}

int fg_discovery_match(const char *http_method, const char *path, struct fg_match *out)
{
	size_t nseg;
	char **segs;
	int found_path = 0;

	memset(out, 0, sizeof(*out));
	while (*path == '/')
		path++;
	segs = split_path(path, &nseg);
	for (size_t i = 0; i < n_methods; i++) {
		const struct fg_method *m = &methods[i];
		size_t k;

		if (m->nseg != nseg)
			continue;
		for (k = 0; k < nseg; k++)
			if (!seg_match(m->segs[k], segs[k], out))
				break;
		if (k == nseg && !strcmp(m->http, http_method)) {
			out->m = m;
			out->id = m->id;
			free_segs(segs, nseg);
			return 0;
		}
		if (k == nseg)
			found_path = 1;
		fg_match_release(out);
	}
	free_segs(segs, nseg);
	return found_path ? -2 : -1;
}

struct query_check {
	const struct fg_method *m;
	struct tpf_buf msg;
	json_t *violations;
};

static json_t *query_param(const struct fg_method *m, const char *key)
{
	json_t *p = json_object_get(m->params, key);
	const char *loc = json_string_value(json_object_get(p, "location"));

	if (loc && !strcmp(loc, "query"))
		return p;
	return json_object_get(json_object_get(doc, "parameters"), key);
}

static void add_violation(struct query_check *qc, const char *field, const char *desc)
{
	if (qc->msg.len)
		tpf_buf_addch(&qc->msg, '\n');
	tpf_buf_adds(&qc->msg, desc);
	json_t *v = json_object();
	if (field)
		json_object_set_new(v, "field", json_string(field));
	json_object_set_new(v, "description", json_string(desc));
	json_array_append_new(qc->violations, v);
}

static int int_ok(const char *v, long min, long max)
{
	char *end;

	errno = 0;
	long x = strtol(v, &end, 10);
	return *v && !*end && !errno && x >= min && x <= max;
}

static enum MHD_Result check_one(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	struct query_check *qc = cls;
	json_t *p = query_param(qc->m, key);
	const char *type = json_string_value(json_object_get(p, "type"));
	char *desc = NULL;

	if (!p) {
		/* The real API's wording (ESF request binding). */
		desc = xasprintf("Invalid JSON payload received. Unknown name \"%s\": Cannot bind "
				 "query parameter. Field '%s' could not be found in request "
				 "message.", key, key);
		add_violation(qc, NULL, desc);
		free(desc);
		return MHD_YES;
	}
	const char *v = value ? value : "";
	int ok = 1;
	const char *tname = NULL;
	if (type && !strcmp(type, "integer")) {
		ok = int_ok(v, INT_MIN, INT_MAX);
		tname = "TYPE_INT32";
	} else if (type && !strcmp(type, "boolean")) {
		/* Any case: gcloud sends Python's spelling (force=True) and the
		 * real front end takes it (tests/e2e/t360-gcloud-conformance.sh). */
		ok = !strcasecmp(v, "true") || !strcasecmp(v, "false");
		tname = "TYPE_BOOL";
	}
	if (!ok) {
		char *field = fg_snake(key);
		json_t *js = json_string(v);
		char *quoted = json_dumps(js, JSON_ENCODE_ANY);
		desc = xasprintf("Invalid value at '%s' (%s), %s", field, tname, quoted);
		add_violation(qc, field, desc);
		free(quoted);
		json_decref(js);
		free(field);
		free(desc);
	}
	return MHD_YES;
}

int fg_check_query(struct fg_req *r, const struct fg_method *m)
{
	struct query_check qc = { m, TPF_BUF_INIT, json_array() };
	int rc = 0;

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, check_one, &qc);
	if (qc.msg.len) {
		json_t *details = json_pack("[{s:s, s:O}]", "@type",
					    "type.googleapis.com/google.rpc.BadRequest",
					    "fieldViolations", qc.violations);
		fg_reply_error(r, 400, "INVALID_ARGUMENT", details, "%s", qc.msg.buf);
		rc = -1;
	}
	json_decref(qc.violations);
	tpf_buf_release(&qc.msg);
	return rc;
}
